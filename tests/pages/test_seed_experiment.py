"""The Seed experiment page in AppTest: what its text says is what its runs did."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from attention_core import Run, load_dataset, load_run
from attention_core.presets import SEED
from attention_core.text import file_stem
from runner.jobs import JobSequence
from tests.helpers.apptest import chart, download_options, page_job
from ui.seed_views import VARIANTS

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "6_Seed_experiment.py")
TIMEOUT = 90


def small_csv() -> tuple[list[str], list[str]]:
    data = load_dataset((ROOT / "data" / "small.csv").read_bytes(), name="small.csv")
    return list(data.texts), [data.label_names[y] for y in data.labels]


def trained(seed_epochs: int, default_epochs: int) -> tuple[AppTest, JobSequence]:
    """The page after training its three variants (for so many epochs), and their sequence."""
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT).run()
    at.number_input(key="seedexp_epochs").set_value(seed_epochs)
    at.number_input(key="seedexp_default_epochs").set_value(default_epochs)
    at.button(key="seedexp_train").click().run()
    seq = page_job(at, "seedexp_seq")
    assert seq.join(300)
    at.run()
    assert not at.exception
    return at, seq


def test_before_training_the_page_says_how_much_work_it_is_and_how_long_it_took_here(runs_dir: Path) -> None:
    """It promised "about 4 s" (a benchmark's idle machine) where the three took 12 s: the time it gives is the
    last training's here, scaled to the epochs asked for; before any, it promises no time."""
    from ui import seed_views

    seed_views._paces().clear()  # (the server's measurement: none yet)
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT).run()
    assert not at.exception
    info = at.info[0].value
    assert "78,000 SGD steps" in info and not re.search(r"\d s\b", info)  # 2 variants × 1000 epochs × 39 reviews
    assert "each one shows its progress and the time it has left" in info
    at.number_input(key="seedexp_epochs").set_value(100).run()
    assert "7,800 SGD steps" in at.info[0].value

    _, seq = trained(20, 2)
    jobs = seq.jobs.values()
    took = max(j.ended_at for j in jobs) - min(j.started_at for j in jobs)
    again = AppTest.from_file(PAGE, default_timeout=TIMEOUT)  # another session of the server, before its training
    again.session_state["seedexp_epochs"], again.session_state["seedexp_default_epochs"] = 20, 2
    info = again.run().info[0].value
    said = int(re.search(r"about (\d+) s, scaled from the last training of all three on this server", info).group(1))
    assert abs(said - took) <= 0.5  # the same epochs: the time it took
    again.number_input(key="seedexp_epochs").set_value(200).run()  # ten times the seed variants' steps
    longer = int(re.search(r"about (\d+) s, scaled", again.info[0].value).group(1))
    seed_seconds = sum(seq.jobs[key].history.seconds for key in ("frozen", "head"))
    assert abs(longer - (took + 9 * seed_seconds)) <= 0.5


def test_the_text_states_what_the_trained_runs_do(runs_dir: Path) -> None:
    at, seq = trained(30, 3)
    texts, labels = small_csv()
    notice = next(m.value for m in at.markdown if m.value.startswith("**What to notice**"))
    assert "Seed, head frozen: 30 epochs · Seed, head trained: 30 epochs · Default: 3 epochs" in notice
    bullets = dict(re.findall(r"^- \*\*(.+?):\*\* (.*)$", notice, flags=re.MULTILINE))
    assert list(bullets)[:3] == ["Seed · head frozen (the post)", "Seed · head trained", "Default preset"]
    captions = " ".join(c.value for c in at.caption)
    for bullet, (key, job) in zip(bullets.values(), seq.jobs.items(), strict=False):
        run = job.run
        said = [run.label_names[i] for i in run.predict_proba(texts).argmax(1)]
        right = sum(p == y for p, y in zip(said, labels, strict=True))
        share = f"({right / 39:.0%})"
        claim = f"labels all 39 reviews correctly {share}" if right == 39 else f"labels {right} of the 39 reviews correctly {share}"
        assert claim in bullet, key
        assert f"the trained model labels {right} of 39 reviews correctly {share}" in captions, key  # the card says the same
        assert ("every review gets the same label" in bullet) == (max(Counter(said).values()) == 39), key
        assert f"In {len(run.history.step_losses):,} steps the loss goes from {run.history.epochs[0].train_loss:.3f} to " \
               f"{run.history.epochs[-1].train_loss:.3f}" in bullet, key
    assert "recorded as the model trained, after every epoch" in captions  # 30 epochs: every one kept
    lapse = chart(at, "seedexp_time_lapse")  # the first variant and sentence
    assert [f["name"] for f in lapse["frames"]] == [str(e) for e in range(31)]
    kept = sorted(seq.jobs["frozen"].run.snapshots)
    assert lapse["layout"]["xaxis3"]["ticktext"] == [str(e) for e in kept[:-1]] + ["30★"]


def test_every_chart_downloads_under_its_variants_name_with_its_sentence(runs_dir: Path) -> None:
    at, _ = trained(2, 1)
    options = download_options(at)
    maps = {f"seedexp_map_{i}_{key}" for i in range(len(SEED.train.probes)) for key in VARIANTS}
    assert {f"seedexp_live_curve_{key}" for key in VARIANTS} | maps | {"seedexp_time_lapse"} == set(options)
    for key, named in options.items():
        variant = VARIANTS[key.rsplit("_", 1)[-1]] if key != "seedexp_time_lapse" else VARIANTS["frozen"]
        assert f" · {variant} · " in f"{named['title']} · ", key  # what it shows, then the variant
        assert file_stem(variant, 30).strip("-") in named["filename"], key
    first = f"“{SEED.train.probes[0]}”"  # the maps' first sentence, and the time-lapse's
    assert first in options["seedexp_map_0_head"]["title"] and first in options["seedexp_time_lapse"]["title"]
    assert options["seedexp_map_0_default"]["title"].endswith(" · average of heads")


def test_saving_a_variant_takes_a_free_name_and_touches_nothing_else(runs_dir: Path) -> None:
    at, _ = trained(2, 1)
    mine = runs_dir / "seed-experiment-head"  # a folder of the user's that happens to have the name
    mine.mkdir(parents=True)
    (mine / "notes.txt").write_bytes(b"my notes\n")
    for _ in range(2):
        at.button(key="seedexp_save_head").click().run()
        assert not at.exception
    assert sorted(p.name for p in runs_dir.iterdir()) == ["seed-experiment-head", "seed-experiment-head-2",
                                                      "seed-experiment-head-3"]
    assert [p.name for p in mine.iterdir()] == ["notes.txt"] and (mine / "notes.txt").read_bytes() == b"my notes\n"
    assert "Saved as `seed-experiment-head-3`" in at.success[0].value
    assert load_run(runs_dir / "seed-experiment-head-2").name == "seed-experiment-head-2"  # its folder, not the job's key "head"


def test_saving_where_no_folder_can_be_made_is_an_error_not_a_traceback(runs_dir: Path) -> None:
    at, _ = trained(2, 1)
    runs_dir.parent.mkdir(parents=True, exist_ok=True)
    runs_dir.write_bytes(b"a file where the runs folder should be")
    at.button(key="seedexp_save_frozen").click().run()
    assert not at.exception
    assert "Could not save it" in at.error[0].value and "runs folder" in at.error[0].value
    assert runs_dir.read_bytes() == b"a file where the runs folder should be"


def test_the_maps_are_predicted_once_per_run_not_on_every_rerun(runs_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at, seq = trained(2, 1)
    first = {c.proto.id: c.proto.spec for c in at.get("plotly_chart") if "seedexp_map_" in c.proto.id}
    assert len(first) == 15  # five sentences × three variants
    calls = []
    predict = Run.predict
    monkeypatch.setattr(Run, "predict", lambda self, *a, **k: calls.append(a) or predict(self, *a, **k))
    at.selectbox(key="seedexp_tl_sentence").set_value(SEED.train.probes[1]).run()  # any click reruns the page
    assert not at.exception
    assert calls == []
    assert {c.proto.id: c.proto.spec for c in at.get("plotly_chart") if "seedexp_map_" in c.proto.id} == first
    frozen = seq.jobs["frozen"]
    frozen.run_renamed(frozen.run_path.rename(frozen.run_path.with_name("renamed")))  # its files changed: a new stamp
    at.run()
    assert not at.exception
    assert len(calls) == len(SEED.train.probes)  # the frozen variant's five, again
