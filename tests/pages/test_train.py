"""The Train page as a learner meets it: which model a run keeps and how sure its accuracy is,
how a stopped training reads, the model picker after training, and the runs list (upload,
rename, delete through attention_core.run_folders, with errors shown and nothing lost)."""

from __future__ import annotations

import io
import json
import shutil
import threading
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from streamlit.testing.v1 import AppTest

from attention_core import ModelConfig, Run, TrainConfig, Trainer, dataset_from_lists, load_embeddings, save_run
from attention_core.metrics import run_verdict
from attention_core.run_folders import list_runs, run_to_zip
from attention_core.training import TrainerSpec
from runner.jobs import TrainingJob
from tests.helpers.apptest import ending_banners, fill_small_training, page_job, start_small_training
from tests.helpers.broker import wait_for
from tests.helpers.tiny_data import labels_without_meaning
from ui.train_views import wilson_interval

TIMEOUT = 90
ROOT = Path(__file__).resolve().parents[2]
# The default preset: stopped by its patience after 12 of 40 planned epochs; the lowest validation loss at epoch 8
# (88.3 %), the last 87.8 %.
BUNDLED = ROOT / "data" / "default_run"


@pytest.fixture(autouse=True)
def _runs_dir_made(runs_dir):
    """Every test on a runs root of its own (conftest), made already."""
    runs_dir.mkdir()


def train_page() -> AppTest:
    return AppTest.from_file(str(ROOT / "pages" / "1_Train.py"), default_timeout=TIMEOUT).run()


def runs_list(at: AppTest) -> dict[str, dict]:
    table = next(d.value for d in at.dataframe if "run" in d.value.columns)
    return {row["run"]: row for row in table.to_dict("records")}


def results_of(path: Path) -> AppTest:
    """The Train page's results section for the saved run at ``path``, drawn alone."""

    def script(path: str) -> None:
        from attention_core import load_run
        from ui import train_views

        train_views.results(load_run(path), None)

    return AppTest.from_function(script, args=(str(path),), default_timeout=TIMEOUT).run()


# -- which model a run keeps, and one figure per meaning ---------------------------------------------
def test_results_and_runs_list_give_the_kept_models_accuracy_and_say_which_epoch(runs_dir):
    at = results_of(BUNDLED)
    assert not at.exception
    assert {m.label: m.value for m in at.metric}["Validation accuracy"] == "88.3%"
    assert "Majority class" in {m.label for m in at.metric} and not at.warning  # it learned: no warning
    caption = next(c.value for c in at.caption if "Kept model" in c.value)
    assert "**Kept model: epoch 8 (stopped by patience 4 after 12 of 40 planned epochs)**" in caption
    assert "lowest validation loss" in caption

    shutil.copytree(BUNDLED, runs_dir / "bundled-copy")
    row = runs_list(train_page())["bundled-copy"]
    assert row["val accuracy"] == "88.3%"  # the results' figure, not the last epoch's 87.8 %
    assert row["kept model"] == "epoch 8" and row["epochs"] == "12 of 40"
    assert row["majority"] == "50.0%" and row["learned?"] == "yes"

    old = runs_dir / "saved-before-confusions"  # a run saved before the validation confusion was recorded
    shutil.copytree(BUNDLED, old)
    history = json.loads((old / "history.json").read_text())
    for record in history["epochs"]:
        record.pop("val_confusion", None)
    (old / "history.json").write_text(json.dumps(history))
    row = runs_list(train_page())["saved-before-confusions"]
    assert row["val accuracy"] == "88.3%" and row["majority"] == row["learned?"] == "–"  # nothing guessed


# -- a run that learned nothing says so -----------------------------------------------------------------
MEANINGLESS = (ModelConfig(n_layers=1, n_heads=2, d_model=16, d_ff=32),
               TrainConfig(epochs=2, batch_size=8, val_fraction=0.4, snapshots=0))


def test_a_run_that_learned_nothing_says_so_in_its_results_and_the_runs_list(runs_dir):
    texts, labels = labels_without_meaning()  # 60 % "yes" at random
    run = Trainer(*MEANINGLESS, dataset_from_lists(texts, labels), load_embeddings()).run(name="meaningless")
    save_run(run, runs_dir / "meaningless")
    verdict = run_verdict(run.history, run.label_names)
    assert verdict.majority_share == 0.6 and verdict.warn  # the precondition: it learned nothing
    at = results_of(runs_dir / "meaningless")
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Majority class"] == "60.0%" and metrics["Validation accuracy"] == f"{verdict.accuracy:.1%}"
    assert [w.value for w in at.warning] == [verdict.message]  # the predictions made again say what was recorded
    assert "beyond always answering “yes”" in verdict.message and verdict.message.endswith("or another preset.")
    row = runs_list(train_page())["meaningless"]
    assert row["majority"] == "60.0%" and row["learned?"] == verdict.word
    assert row["learned?"].startswith(("no", "unclear"))


def test_a_finished_training_that_learned_nothing_is_a_warning_not_a_success(runs_dir):
    texts, labels = labels_without_meaning()
    job = TrainingJob(TrainerSpec(*MEANINGLESS, dataset_from_lists(texts, labels), load_embeddings()), runs_dir,
                      "meaningless")
    job.start()
    job.join(120)
    assert job.done and job.state == "finished", job.message
    verdict = run_verdict(job.run.history, job.run.label_names)

    def script(job) -> None:
        from ui import train_views

        train_views.finished(job)

    at = AppTest.from_function(script, args=(job,), default_timeout=TIMEOUT).run()
    assert not at.exception
    assert not at.success  # was: "Training finished: all 2 epochs. …" in green
    assert [w.value for w in at.warning] == [  # once: the results below do not repeat it
        f"Training finished: all 2 epochs. Saved as run `meaningless`.\n\n{verdict.message}"]
    assert {m.label: m.value for m in at.metric}["Majority class"] == "60.0%"


def tiny_run(path: Path, *, val_fraction: float, epochs: int = 3, planned: int | None = None) -> Run:
    """A run of the tiny set saved at ``path``; ``planned``: the epochs its config asked for (a stopped run)."""
    texts = ["a great movie", "i love it", "wonderful fun", "a terrible movie", "i hate it", "awful boring"] * 4
    labels = ["pos", "pos", "pos", "neg", "neg", "neg"] * 4
    result = Trainer(ModelConfig(n_layers=1, n_heads=2, d_model=16, d_ff=32), TrainConfig(
        epochs=epochs, batch_size=4, val_fraction=val_fraction), dataset_from_lists(texts, labels), load_embeddings()).run(name=path.name)
    run = result
    save_run(run, path)
    if planned:
        cfg = json.loads((path / "config.json").read_text())
        cfg["train"]["epochs"] = planned
        (path / "config.json").write_text(json.dumps(cfg))
    return run


def test_a_run_without_validation_says_so_and_keeps_its_last_epoch(runs_dir):
    run = tiny_run(runs_dir / "no-val", val_fraction=0.0, epochs=3, planned=300)
    assert run.history.kept_epoch == 3  # no validation: the trainer keeps the last weights
    row = runs_list(train_page())["no-val"]
    assert row["val accuracy"] == "no validation"  # was None
    assert row["epochs"] == "3 of 300" and row["kept model"] == "epoch 3"
    at = results_of(runs_dir / "no-val")
    assert not at.exception
    assert "no validation share" in at.info[0].value and "Kept model: epoch 3 of 3 (300 planned)" in at.info[0].value


def test_a_run_too_small_to_hold_rows_out_says_why_it_has_no_validation(runs_dir):
    """A two-row CSV with a validation share of 20 %: each class's one row stays for training. It said "no
    validation share", as if none had been set."""
    run = Trainer(ModelConfig(n_layers=1, n_heads=2, d_model=16, d_ff=32), TrainConfig(epochs=2, batch_size=2, val_fraction=0.2),
                  dataset_from_lists(["a great movie", "a terrible movie"], ["pos", "neg"]), load_embeddings()).run()
    assert run.validation == ((), ())
    save_run(run, runs_dir / "two-rows")
    info = results_of(runs_dir / "two-rows").info[0].value
    assert "no validation share" not in info
    assert "though its validation share was 20%: too few rows to hold any out" in info
    assert "Kept model: epoch 2 of 2" in info


# -- how sure the accuracy is ----------------------------------------------------------------------
# Wilson intervals published in Newcombe (1998), "Two-sided confidence intervals for the single
# proportion", Statistics in Medicine 17:857-872, table I (method 3).
NEWCOMBE = [((81, 263), (0.2553, 0.3662)), ((15, 148), (0.0624, 0.1605)), ((0, 20), (0.0, 0.1611)),
            ((1, 29), (0.0061, 0.1718))]


@pytest.mark.parametrize(("counts", "expected"), NEWCOMBE)
def test_wilson_interval_matches_the_published_values(counts, expected):
    assert wilson_interval(*counts) == pytest.approx(expected, abs=6e-5)


def test_wilson_interval_agrees_with_scipy_and_stays_in_range():
    stats = pytest.importorskip("scipy.stats")
    for correct, n in [(10, 12), (12, 12), (0, 12), (513, 600), (1, 1), (7, 39)]:
        ci = stats.binomtest(correct, n).proportion_ci(confidence_level=0.95, method="wilson")
        low, high = wilson_interval(correct, n)
        assert (low, high) == pytest.approx((ci.low, ci.high), abs=1e-12)
        assert 0 <= low <= correct / n <= high <= 1
    assert wilson_interval(12, 12)[0] < 1  # the textbook interval would be [1, 1]: all right, no doubt at all
    with pytest.raises(ValueError, match="n = 0"):
        wilson_interval(0, 0)


def test_a_small_validation_set_shows_how_noisy_its_accuracy_is(runs_dir):
    run = tiny_run(runs_dir / "small-val", val_fraction=0.5, epochs=2)  # 12 validation rows
    n = len(run.validation[0])
    at = results_of(runs_dir / "small-val")
    assert not at.exception
    accuracy = float({m.label: m.value for m in at.metric}["Validation accuracy"].rstrip("%")) / 100
    low, high = wilson_interval(round(accuracy * n), n)
    caption = next(c.value for c in at.caption if "Kept model" in c.value)
    assert f"95% interval for this accuracy: {low:.0%}–{high:.0%} over {n} validation rows" in caption
    assert f"moves it by {100 / n:.1f} points" in caption
    big = next(c.value for c in results_of(BUNDLED).caption if "Kept model" in c.value)
    assert "over 600 validation rows" in big and "Few rows" not in big


# -- the form: the presets' advanced settings are shown, not changed ---------------------------------
def advanced_settings(at: AppTest) -> dict[str, bool]:
    """The widgets in the form's advanced rows (key ``train_advanced``), by key without the preset's prefix, and
    whether each is disabled."""

    def find(node):
        if getattr(node, "key", None) == "train_advanced":
            return node
        return next((f for c in getattr(node, "children", {}).values() if (f := find(c)) is not None), None)

    def widgets(node):
        for c in getattr(node, "children", {}).values():
            if getattr(c, "key", None) and hasattr(c, "disabled"):
                yield c
            yield from widgets(c)

    return {w.key.split("_", 3)[3]: w.disabled for w in widgets(find(at._tree))}


def test_under_a_preset_every_advanced_setting_but_the_validation_share_shows_the_presets_value_disabled(runs_dir):
    at = train_page()
    for choice in ("Default", "Seed (the Julia post)"):
        at.radio(key="train_preset").set_value(choice).run()
        settings = advanced_settings(at)
        assert len(settings) == 23 and "cw" in settings and "casing" in settings and "keys" in settings
        assert [k for k, disabled in settings.items() if not disabled] == ["val"], choice
    at.radio(key="train_preset").set_value("Custom").run()
    assert not any(advanced_settings(at).values())


def test_the_probe_sentences_label_says_when_its_attention_is_recorded_as_the_trainer_does():
    """It said "recorded every epoch", while a training of 5,000 epochs records it every 50th (the live map then
    stays "after epoch 0" for 50 epochs): the help says the rule the Trainer follows."""
    from attention_core import Trainer as T
    from attention_core.configs import MAX_PROBE_RECORDS

    at = train_page()
    probe = next(w for w in at.text_input if w.label.startswith("Probe sentence"))
    assert "every epoch" not in probe.label
    assert f"for a training of over {MAX_PROBE_RECORDS} epochs after every n-th" in probe.help
    # the Trainer's own rule, for a 5,000-epoch training that runs on
    trainer = SimpleNamespace(train_config=TrainConfig(epochs=5000), _stop=threading.Event(),
                              history=SimpleNamespace(status="running"))
    recorded = [e for e in range(1, 5001) if T._probes_due(trainer, e)]
    assert len(recorded) == MAX_PROBE_RECORDS and recorded[:2] == [50, 100] and recorded[-1] == 5000


# -- a training stopped midway, and the model picker after it ------------------------------------------


def test_a_training_stopped_midway_reads_well_and_its_bar_stays_where_it_stopped(runs_dir):
    at = train_page()
    start_small_training(at, 5000, "stopped midway")
    job = page_job(at)
    while job.status().epochs_recorded < 3:
        job.join(0.05)
    at.button(key="train_stop").click().run()
    job.join(120)
    at.run()
    assert not at.exception
    trained = job.status().epochs_recorded
    assert ending_banners(at) == [f"Training stopped after {trained} of 5000 epochs. Saved as run "
                                  "`stopped-midway`."]  # was: "Training stopped. stopped by the user …"
    bar = at.get("progress")[0].proto
    assert bar.value < 100 and bar.text.startswith(f"stopped · epoch {trained}/5000")  # was a full bar

    # Renamed from the runs list: the results say where the run is now, and download it from there.
    at.text_input(key="train_rename_to").input("renamed").run()
    at.button(key="train_rename").click().run()
    assert not at.exception
    assert ending_banners(at)[0].endswith("Saved as run `renamed`.")
    assert at.get("download_button")[0].proto.label.startswith("⬇ Download run")
    at.selectbox(key="train_manage_pick").set_value("renamed").run()
    at.button(key="train_delete").click().run()
    at.button(key="train_delete_yes").click().run()
    assert not at.exception
    assert ending_banners(at)[0].endswith("Saved as run `renamed` (deleted since).") and not at.get("download_button")


def test_after_training_the_model_picker_opens_the_new_run_once(runs_dir):
    shutil.copytree(BUNDLED, runs_dir / "older")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.session_state["active_run"] = "older"  # the model the learner had picked before
    at.run()
    assert at.selectbox(key="home_run").value == "older"
    at.switch_page("pages/1_Train.py").run()
    start_small_training(at, 2, "fresh")
    page_job(at).join(120)
    at.run()
    at.switch_page("app.py").run()
    assert not at.exception
    assert at.selectbox(key="home_run").value == "fresh"  # was: still "older"
    at.selectbox(key="home_run").set_value("older").run()  # the learner's own choice afterwards stands
    at.switch_page("pages/1_Train.py").run()
    at.switch_page("app.py").run()
    assert at.selectbox(key="home_run").value == "older"


# -- the runs list: every change through attention_core.run_folders, errors shown, nothing lost ---------------
def folder_state(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_comparing_runs_of_different_labels_says_their_curves_are_not_on_one_scale(runs_dir):
    """Two labels against four: a guess's loss is ln 2 against ln 4, so the lower curve says nothing of which
    learned more; the page says so (the chart alone invited the comparison). Runs of the same labels: no note."""
    small = ModelConfig(n_layers=1, n_heads=2, d_model=16, d_ff=32)
    texts = ["a great movie", "a terrible movie", "a fine film", "an awful film"] * 2
    for name, labels in (("two", ["pos", "neg"] * 4), ("four", ["a", "b", "c", "d"] * 2), ("two-again", ["pos", "neg"] * 4)):
        run = Trainer(small, TrainConfig(epochs=2, batch_size=4, val_fraction=0.0), dataset_from_lists(texts, labels),
                      load_embeddings()).run(name=name)
        save_run(run, runs_dir / name)
    at = train_page()
    at.multiselect(key="train_compare").set_value(["two", "four"]).run()
    assert not at.exception
    notes = [w.value for w in at.warning if "not on one scale" in w.value]
    assert len(notes) == 1 and "ln 2 ≈ 0.69" in notes[0] and "ln 4 ≈ 1.39" in notes[0]
    assert at.get("plotly_chart")  # the curves are still drawn, under the note
    at.multiselect(key="train_compare").set_value(["two", "two-again"]).run()
    assert not at.exception and not [w for w in at.warning if "not on one scale" in w.value]


def test_rename_refuses_unsafe_and_taken_names_and_loses_nothing(runs_dir, tmp_path):
    for name in ("first", "second"):
        shutil.copytree(BUNDLED, runs_dir / name)
    (tmp_path / "x").mkdir()
    before = folder_state(tmp_path)
    at = train_page()
    at.selectbox(key="train_manage_pick").set_value("first").run()
    for bad, message in [("../x", "cannot name a run"), ("a/b", "cannot name a run"), ("second", "exists already"),
                         ("", "needs a name"), ("x" * 81, "at most 80")]:
        at.text_input(key="train_rename_to").input(bad).run()
        at.button(key="train_rename").click().run()
        assert not at.exception
        assert at.error and at.error[0].value.startswith("Cannot rename 'first': ") and message in at.error[0].value, \
            (bad, [e.value for e in at.error])
        assert folder_state(tmp_path) == before  # nothing moved, inside the runs folder or beside it
    at.text_input(key="train_rename_to").input("better-name").run()
    at.button(key="train_rename").click().run()
    assert not at.exception and not at.error
    assert set(runs_list(at)) == {"better-name", "second"}
    assert at.selectbox(key="train_manage_pick").value == "better-name"
    assert json.loads((runs_dir / "better-name" / "config.json").read_text())["name"] == "better-name"
    assert any("Renamed 'first' to 'better-name'" in s.value for s in at.success)


def test_delete_removes_a_run_but_refuses_a_folder_holding_a_users_file(runs_dir):
    for name in ("plain", "with-notes"):
        shutil.copytree(BUNDLED, runs_dir / name)
    (runs_dir / "with-notes" / "my notes.txt").write_text("keep me")
    at = train_page()
    at.selectbox(key="train_manage_pick").set_value("with-notes").run()
    at.button(key="train_delete").click().run()
    at.button(key="train_delete_yes").click().run()
    assert not at.exception
    assert at.error[0].value.startswith("Cannot delete 'with-notes': ") and "my notes.txt" in at.error[0].value
    assert (runs_dir / "with-notes" / "my notes.txt").read_text() == "keep me"
    assert (runs_dir / "with-notes" / "model.safetensors").is_file()
    at.selectbox(key="train_manage_pick").set_value("plain").run()
    at.button(key="train_delete").click().run()
    assert (runs_dir / "plain").is_dir()  # not before it is confirmed
    at.button(key="train_delete_yes").click().run()
    assert not at.exception and not (runs_dir / "plain").exists()
    assert set(runs_list(at)) == {"with-notes"}


def test_an_uploaded_run_whose_name_exists_gets_a_new_one_and_a_bad_zip_is_refused(runs_dir, tmp_path):
    shutil.copytree(BUNDLED, runs_dir / "mine")
    before = folder_state(runs_dir)
    at = train_page()
    at.file_uploader(key="train_run_upload").upload("mine.zip", run_to_zip(BUNDLED), "application/zip").run()
    assert not at.exception and not at.error  # was: "a run named 'mine' already exists"
    assert "Uploaded run 'mine-2' (a run named 'mine' exists already)." in [s.value for s in at.success]
    assert set(runs_list(at)) == {"mine", "mine-2"} and at.selectbox(key="train_manage_pick").value == "mine-2"
    assert {k: v for k, v in folder_state(runs_dir).items() if k.startswith("mine/")} == before  # the first untouched

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        with zipfile.ZipFile(io.BytesIO(run_to_zip(BUNDLED))) as good:
            for name in good.namelist():
                zf.writestr(name, good.read(name))
        zf.writestr("../outside.txt", b"escaped")
    at.file_uploader(key="train_run_upload").upload("evil.zip", buf.getvalue(), "application/zip").run()
    assert not at.exception
    assert at.error[0].value.startswith("Cannot upload evil.zip: the archive has an entry outside its own folder")
    assert not (runs_dir.parent / "outside.txt").exists() and set(runs_list(at)) == {"mine", "mine-2"}
    at.button(key="train_rename").run()  # any other click: the refusal stays in view while the file is in the box
    assert at.error[0].value.startswith("Cannot upload evil.zip:")
    assert set(runs_list(at)) == {"mine", "mine-2"}  # and it was not tried again


# -- the server's training queue (runner.queue), one learner per session ---------------------------------
@pytest.fixture
def one_slot_per_owner(monkeypatch):
    """A server queue with one slot, and each session's owner read from its own state ("local" if unset)."""
    import streamlit as st

    from runner import queue
    from ui import common

    q = queue.TrainingQueue(slots=1)
    monkeypatch.setattr(queue, "_server_queue", q)
    monkeypatch.setattr(common, "workspace_key", lambda: st.session_state.get("test_owner", "local"))
    return q


def learner(owner: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / "1_Train.py"), default_timeout=TIMEOUT)
    at.session_state["test_owner"] = owner
    return at.run()


def test_with_one_slot_a_second_start_waits_in_line_then_trains_and_a_third_can_cancel(runs_dir, one_slot_per_owner):
    first = learner("a")
    start_small_training(first, 5000, "first")
    running = page_job(first)
    second, third = learner("b"), learner("c")
    start_small_training(second, 2, "second")
    start_small_training(third, 2, "third")
    waiting = page_job(second)
    assert waiting.state == "waiting" and running.state in ("starting", "running")
    assert second.info[0].value.startswith("Waiting for a free slot: 1st in line")
    assert third.info[0].value.startswith("Waiting for a free slot: 2nd in line")
    assert third.button(key="train_stop").label == "Cancel" and third.button(key="train_pause").disabled
    third.button(key="train_stop").click().run()  # cancel: it never starts, nothing is saved
    assert not third.exception and page_job(third).state == "cancelled"
    assert third.info[0].value == "Training cancelled before it started — nothing was trained or saved."
    second.run()
    assert second.info[0].value.startswith("Waiting for a free slot: 1st in line")
    while not running.status().epochs_recorded:  # (a run stopped before its first epoch has nothing to save)
        running.join(0.05)
    first.button(key="train_stop").click().run()  # the running one stops: the slot goes to the next in line
    waiting.join(120)
    second.run()
    assert not second.exception
    assert ending_banners(second) == ["Training finished: all 2 epochs. Saved as run `second`."]
    assert sorted(p.name for p in list_runs(runs_dir)) == ["first", "second"]


def test_a_training_started_again_after_its_worker_died_says_so_while_it_trains(runs_dir):
    """On a shared queue a training whose worker died starts again from epoch 1 on another: the page says why its
    curves began again (the report a worker sends then, given to a local job here)."""
    from runner.protocol import Restarted, Started

    tab = train_page()
    start_small_training(tab, 5000, "again")
    job = page_job(tab)
    said = "its worker stopped mid-training, so it was started again from the beginning on b2 (attempt 2 of 2)"
    job._take(Restarted(said))
    job._take(Started(12345, 4))
    tab.run()
    assert not tab.exception and job.status().state == "running"
    assert f"{said[0].upper()}{said[1:]}." in [i.value for i in tab.info]
    job.stop()
    job.join(60)
    tab.run()
    assert said[1:] not in " ".join(i.value for i in tab.info)  # ended: the results say how, not this


def test_after_a_reload_the_page_says_what_its_training_runs_with_not_the_forms_defaults(runs_dir):
    """A reload during a training shows that training, and the form its defaults (the next training's): the page
    says what the training runs with, from its own settings, so the form is not read as its settings."""
    first = learner("me")
    start_small_training(first, 5000, "long")
    job = page_job(first)
    again = learner("me")  # the same learner's page reloaded: a new session
    assert not again.exception and page_job(again) is job
    said = [c.value for c in again.caption if "trains" in c.value]
    assert len(said) == 1, said
    assert said[0].startswith("“long” trains on small.csv: the small model (1 layer × ")
    assert " · 5000 epochs · " in said[0] and "The form holds your next training's settings." in said[0]
    assert again.number_input(key="train_default_p_epochs").value != 5000  # the form: the default preset's, not its
    job.stop()
    job.join(60)
    again.run()
    assert not [c.value for c in again.caption if "trains" in c.value and "next training" in c.value]  # ended


def test_a_training_whose_worker_went_silent_says_so_instead_of_simply_running(runs_dir):
    """On a shared queue a worker that died leaves its training "running" until the queue finds out (up to ~40 s):
    once the watcher says it has not been heard from (the report it gives then, given to a local job here), the page
    says so and what happens next; the next report from the training clears it."""
    from runner.protocol import Stepped, Unheard

    tab = train_page()
    start_small_training(tab, 5000, "quiet")
    job = page_job(tab)
    wait_for(lambda: job.status().state == "running" and job.status().step is not None, 60, "the job to train")
    job.pause()  # (its reports stop: none comes to clear what the test gives it)
    assert job.wait_until_paused(60)
    job._take(Unheard(17.0))
    tab.run()
    said = [w.value for w in tab.warning if w.value.startswith("No word from its worker for ")]
    assert len(said) == 1 and "starts the training again from the beginning on another worker" in said[0]
    job._take(Stepped(job.status().step, []))  # heard from again
    tab.run()
    assert not [w for w in tab.warning if w.value.startswith("No word from its worker")]
    job.stop()
    job.join(60)


def test_pause_does_what_its_label_said_when_another_tab_paused_the_job_meanwhile(runs_dir):
    tab = train_page()
    start_small_training(tab, 5000, "long")
    job = page_job(tab)
    assert tab.button(key="train_pause").label == "Pause"
    job.pause()  # from another tab of the same learner, after this one was drawn
    tab.button(key="train_pause").click().run()  # a toggle resumed it here: the opposite of what the button said
    assert not tab.exception and job.paused
    assert tab.button(key="train_pause").label == "Resume"
    job.resume()  # and the other way round
    tab.button(key="train_pause").click().run()
    assert not job.paused and tab.button(key="train_pause").label == "Pause"
    job.stop()
    job.join(60)


def test_a_learner_with_a_training_running_and_one_waiting_cannot_start_a_third(runs_dir, one_slot_per_owner):
    other = learner("other")
    start_small_training(other, 5000, "other")
    tabs = [learner("me") for _ in range(3)]  # one learner, three tabs, all drawn before any Start
    for at, name in zip(tabs, ("one", "two", "three"), strict=True):
        fill_small_training(at, 2, name)
    for at in tabs:  # (a tab drawn after a Start would show that training instead: ui.training_page)
        at.button[0].click().run()
        assert not at.exception
    one, two = (page_job(at) for at in tabs[:2])
    assert one is not two and [one.state, two.state] == ["waiting", "waiting"]
    assert tabs[2].error[0].value.startswith("Cannot start: you already have 2 waiting")
    assert page_job(tabs[2]) is two  # refused, it shows the workspace's latest training
    for at in (other, *tabs[:2]):
        at.button(key="train_stop").click().run()
    for at in (other, *tabs[:2]):  # "other" may end before "two" is cancelled: "two" then starts, and stops
        page_job(at).join(60)
    assert one_slot_per_owner.running == [] and one_slot_per_owner.waiting == []


def test_caps_of_a_shared_server_are_said_before_the_training_starts(runs_dir, monkeypatch):
    monkeypatch.setenv("ATTENTION_PLAYGROUND_MAX_WORK", "1000")
    at = train_page()
    start_small_training(at, 100, "too big")
    assert page_job(at) is None
    assert at.error[0].value.startswith("Cannot start: 39 rows × 100 epochs = 3,900 is more work than this server "
                                        "allows for one training (1,000) — train at most 25 epochs on these rows")
    monkeypatch.setenv("ATTENTION_PLAYGROUND_MAX_SECONDS", "600")
    start_small_training(at, 2, "budget")
    job = page_job(at)
    assert job.train_config.time_budget == 600
    assert any("stops a training after 600 s" in i.value for i in at.info)
    job.join(120)
    assert job.state == "finished"


def test_custom_reads_capitals_as_the_default_does_unless_unchecked(runs_dir):
    at = train_page()
    fill_small_training(at, 1, "lower case only")
    assert at.checkbox(key="train_default_c_casing").value  # Custom starts from the default, which reads capitals
    at.checkbox(key="train_default_c_casing").uncheck()
    assert at.selectbox(key="train_default_c_keys").value == "input"  # as the default's pooling compares
    at.selectbox(key="train_default_c_keys").set_value("output")
    at.button[0].click().run()
    assert not at.exception
    job = page_job(at)
    job.join(120)
    assert job.model_config.casing is False and job.model_config.pooling_keys == "output"


def test_custom_mean_pooling_has_no_pooling_keys_to_compare(runs_dir):
    at = train_page()
    fill_small_training(at, 1, "mean pooled")
    at.selectbox(key="train_default_c_pool").set_value("mean")
    at.button[0].click().run()
    assert not at.exception and not at.error  # "input" keys belong to attention pooling: not passed on
    job = page_job(at)
    job.join(120)
    assert (job.model_config.pooling, job.model_config.pooling_keys) == ("mean", "output")
