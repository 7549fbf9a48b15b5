"""A model that pools by attention: its last map is named "Pooling" everywhere and drawn as one row, the label's query."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from attention_core import Run, save_run
from attention_core.model import AttentionClassifier, ModelConfig
from tests.helpers.apptest import array, chart, live_chart, page_job
from ui import figures, preview

ROOT = Path(__file__).resolve().parents[2]
TOKENS = ["the", "food", "was", "not", "good"]


def pooled_run(bundled: Run) -> Run:
    """The bundled run as a model that pools by attention, named "pooled": the default preset's model
    already does (its trained query is kept); one made without it would get a new pooling query."""
    import torch

    torch.manual_seed(0)
    cfg = replace(bundled.model_config, pooling="attention")
    model = AttentionClassifier(cfg).eval()
    model.load_state_dict(bundled.model.state_dict(), strict=False)
    return replace(bundled, model=model, model_config=cfg, name="pooled")


def mean_run(bundled: Run) -> Run:
    """The bundled run's layers with mean pooling instead of its pooling query, named "mean"."""
    cfg = replace(bundled.model_config, pooling="mean")
    model = AttentionClassifier(cfg).eval()
    def without_query(state: dict) -> dict:
        return {k: v for k, v in state.items() if not k.startswith("pooling.")}

    model.load_state_dict(without_query(bundled.model.state_dict()))  # strict: every other weight is the bundled model's
    snapshots = {epoch: without_query(state) for epoch, state in bundled.snapshots.items()}
    return replace(bundled, model=model, model_config=cfg, name="mean", snapshots=snapshots)


@pytest.fixture()
def pooled(bundled, runs_dir) -> Run:
    """:func:`pooled_run`, saved in the app's runs folder as "pooled" and chosen in the session."""
    run = pooled_run(bundled)
    save_run(run, runs_dir / "pooled")
    return run


def one_row(attention: np.ndarray) -> np.ndarray:
    """A pooling map's (T, T) of identical rows, as the one row it is."""
    assert np.allclose(attention, attention[:1])
    return attention[:1]


# --- the names --------------------------------------------------------------------------------------


def test_a_model_names_its_maps_layers_then_the_pooling_attention():
    mean = ModelConfig(n_layers=2)
    assert mean.map_names() == ["Layer 1", "Layer 2"]
    pooled = ModelConfig(n_layers=2, pooling="attention")
    assert pooled.map_names() == ["Layer 1", "Layer 2", "Pooling"]
    for cfg in (mean, pooled, ModelConfig(n_layers=1, pooling="max")):
        assert len(cfg.map_names()) == cfg.n_attention_maps


def test_the_cli_summary_names_the_map_it_reads(bundled, tmp_path, capsys):
    from attention_core import cli

    save_run(mean_run(bundled), tmp_path / "mean")
    assert cli.main(["predict", str(tmp_path / "mean"), "a fine phone"]) == 0
    err = capsys.readouterr().err
    assert "Layer 2, the word each head attends to most:" in err and "Pooling" not in err
    save_run(pooled_run(bundled), tmp_path / "pooled")
    assert cli.main(["predict", str(tmp_path / "pooled"), "a fine phone", "--knock-out", "3.2"]) == 0
    err = capsys.readouterr().err
    assert "Pooling, the word each head attends to most:" in err and "  head 2: knocked out" in err
    assert "last layer" not in err


def test_quiz_and_knock_out_messages_name_the_pooling_attention(bundled):
    from attention_core.errors import ConfigError
    from attention_core.map_names import parse_heads
    from attention_core.quiz import questions

    run = pooled_run(bundled)
    with pytest.raises(ConfigError, match=r"in layers 1–2 and in the pooling attention: .* \(pooling\.1 is also 3\.1\)"):
        parse_heads("4.1", run.model_config)
    qs = questions(run, "the food was not good at all", np.random.default_rng(0))
    knock = [q for q in qs if q.kind == "knock_out"]
    assert knock and all("(pooling.h: the pooling attention's heads)" in q.text for q in knock)
    assert all(q.text.startswith(("In layer 1,", "In layer 2,")) for q in qs if q.kind == "attends_most")


# --- the figures ------------------------------------------------------------------------------------


def pooling_map(t: int = len(TOKENS)) -> np.ndarray:
    row = np.random.default_rng(0).dirichlet(np.ones(t))
    return np.tile(row, (t, 1))  # (T, T): the model returns the one row T times


def test_a_pooling_map_is_one_row_the_labels_query_with_its_caption():
    w = pooling_map()
    fig = figures.attention_heatmap(w, TOKENS, title="Pooling · Head 1", pooling=True)
    (trace,) = fig.data
    assert np.asarray(trace.z).shape == (1, len(TOKENS))
    np.testing.assert_allclose(trace.z, w[:1])
    assert list(trace.y) == [figures.POOLING_QUERY] and list(trace.x) == TOKENS
    assert figures.POOLING_CAPTION in fig.layout.title.text and "rows: query" not in fig.layout.title.text
    untitled = figures.attention_heatmap(w, TOKENS, pooling=True)  # (Inspect's zoom: its title is above it)
    assert figures.POOLING_CAPTION in untitled.layout.title.text
    layer = figures.attention_heatmap(w, TOKENS, title="Layer 1 · Head 1")
    assert np.asarray(layer.data[0].z).shape == (len(TOKENS), len(TOKENS)) and list(layer.data[0].y) == TOKENS
    assert trace.texttemplate  # a short sentence's one row has its values written
    long = [f"w{i}" for i in range(figures.POOLING_VALUES + 1)]
    assert not figures.attention_heatmap(pooling_map(len(long)), long, pooling=True).data[0].texttemplate
    compact = figures.compact_attention_heatmap(w, TOKENS, pooling=True)
    assert np.asarray(compact.data[0].z).shape == (1, len(TOKENS)) and list(compact.data[0].y) == [figures.POOLING_QUERY]


def test_the_grid_draws_its_pooling_row_of_maps_one_row_each():
    t, heads = len(TOKENS), 2
    rng = np.random.default_rng(1)
    layers = rng.dirichlet(np.ones(t), size=(2, heads, t))  # (2, H, T, T)
    attn = np.concatenate([layers, np.stack([pooling_map(t), pooling_map(t)[::-1, ::-1]])[None]])  # (3, H, T, T)
    fig = figures.attention_grid(attn, TOKENS, pooling=True)
    maps = [tr for tr in fig.data if tr.type == "heatmap"]
    assert [np.asarray(tr.z).shape for tr in maps] == [(t, t)] * 6 + [(1, t)] * 3
    assert all(list(tr.y) == [figures.POOLING_QUERY] for tr in maps[6:])
    np.testing.assert_allclose(maps[8].z, attn[2].mean(0)[:1])  # the heads' average, one row
    titles = [a.text for a in fig.layout.annotations]
    assert titles[:3] == ["L1 · H1", "L1 · H2", "L1 · avg"] and titles[6:] == ["Pooling · H1", "Pooling · H2", "Pooling · avg"]
    assert fig.layout.height < figures.attention_grid(attn, TOKENS).layout.height  # its row is short
    # The Faithfulness knock-out grid names its maps as this grid does ("layer 1 · H2" there, "L1 · H2" here), marking
    # the heads switched off.
    from ui.faithfulness_figures import knocked_out_grid

    off = [a.text for a in knocked_out_grid(attn, TOKENS, [(0, 1), (2, 0)], pooling=True).layout.annotations]
    marked = {1: "<b>L1 · H2 · OFF</b>", 6: "<b>Pooling · H1 · OFF</b>"}
    assert off == [marked.get(i, title) for i, title in enumerate(titles)]
    plain = [tr for tr in figures.attention_grid(attn, TOKENS).data if tr.type == "heatmap"]
    assert [np.asarray(tr.z).shape for tr in plain] == [(t, t)] * 9  # without the flag: every map square

    clickable = figures.selectable_attention_grid(attn, TOKENS, pooling=True)
    markers = [tr for tr in clickable.data if tr.type == "scatter"]
    assert len(markers) == 9 and {tuple(m.customdata[0][:2]) for m in markers[6:]} == {(2, 0), (2, 1), (2, 2)}
    assert all(set(m.y) == {figures.POOLING_QUERY} and len(m.customdata) == t for m in markers[6:])
    assert all(len(m.customdata) == t * t for m in markers[:6])
    assert list(clickable.layout.yaxis7.range) == [0.5, -0.5] and list(clickable.layout.yaxis.range) == [t - 0.5, -0.5]


def test_a_time_lapse_of_the_pooling_map_plays_one_row():
    maps = [pooling_map(), pooling_map()[:, ::-1]]
    fig = figures.attention_time_lapse([0, 1], maps, [TOKENS, TOKENS], pooling=True)
    assert np.asarray(fig.data[0].z).shape == (1, len(TOKENS)) and list(fig.data[0].y) == [figures.POOLING_QUERY]
    assert all(np.asarray(f.data[0].z).shape == (1, len(TOKENS)) for f in fig.frames)
    np.testing.assert_allclose(fig.frames[1].data[0].z, maps[1][:1])


# --- the pages --------------------------------------------------------------------------------------


def app(**query: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params.update(query)
    return at


def test_home_names_the_pooling_map_and_draws_it_as_one_row(pooled):
    at = app(run="pooled").run()
    assert not at.exception and not at.error
    layer = at.radio(key="home_layer")
    assert layer.options == ["Layer 1", "Layer 2", "Pooling"]
    layer.set_value("Pooling").run()
    assert not at.exception
    heatmap = live_chart(at, "home_heatmap")
    attention = np.asarray(pooled.predict(preview.EXAMPLES[0]).attention)  # (L + 1, H, T, T)
    assert heatmap["data"][0]["y"] == [figures.POOLING_QUERY]
    np.testing.assert_allclose(array(heatmap["data"][0]["z"]), one_row(attention[2].mean(0)), atol=1e-6)
    title = heatmap["layout"]["title"]["text"]
    assert title.startswith("Pooling · average of heads") and figures.POOLING_CAPTION in title
    at.toggle(key="home_grid_on").set_value(True).run()
    grid = [d for d in chart(at, "home_grid")["data"] if d["type"] == "heatmap"]
    assert [d["y"] for d in grid[-5:]] == [[figures.POOLING_QUERY]] * 5  # 4 heads and their average
    assert "**Pooling** map" in " ".join(m.value for m in at.markdown)  # "What am I looking at?" says what it is

    at.radio(key="home_layer").set_value("Layer 2").run()  # a layer's map stays square
    assert live_chart(at, "home_heatmap")["data"][0]["y"] == pooled.predict(preview.EXAMPLES[0]).tokens


def test_home_s_address_layer_after_the_last_layer_opens_the_pooling_map(pooled):
    at = app(run="pooled", layer="3").run()
    assert not at.exception and not at.error
    assert at.radio(key="home_layer").value == "Pooling"
    assert live_chart(at, "home_heatmap")["data"][0]["y"] == [figures.POOLING_QUERY]
    at.radio(key="home_layer").set_value("Layer 1").run()
    assert "layer" not in at.query_params  # layer 1, the default
    at.radio(key="home_layer").set_value("Pooling").run()
    assert at.query_params["layer"] in ("3", ["3"])  # (a list in some Streamlit versions)


def test_home_with_a_mean_pooling_model_has_layers_only(bundled, runs_dir):
    save_run(mean_run(bundled), runs_dir / "mean")
    at = app(run="mean").run()
    assert not at.exception
    assert at.radio(key="home_layer").options == ["Layer 1", "Layer 2"]
    assert "**Pooling** map" not in " ".join(m.value for m in at.markdown)


def test_inspect_names_the_pooling_map_and_draws_it_as_one_row(pooled):
    at = AppTest.from_file(str(ROOT / "pages" / "2_Inspect.py"), default_timeout=120)
    at.session_state["active_run"] = "pooled"
    at.run()
    assert not at.exception and not at.error
    assert at.selectbox(key="inspect_layer").options == ["Layer 1", "Layer 2", "Pooling"]
    tokens = pooled.predict(preview.EXAMPLES[0]).tokens
    grid = [d for d in chart(at, "inspect_grid")["data"] if d["type"] == "heatmap"]
    assert [d["y"] for d in grid[-5:]] == [[figures.POOLING_QUERY]] * 5 and grid[0]["y"] == tokens
    markdown = [m.value for m in at.markdown]
    assert "**Pooling · average of heads**" in markdown  # the zoom opens on the last map
    assert chart(at, "inspect_zoom")["data"][0]["y"] == [figures.POOLING_QUERY]
    assert "**Raw attention** · Pooling · average of heads" in markdown
    assert chart(at, "inspect_last_layer")["data"][0]["y"] == [figures.POOLING_QUERY]
    assert "Pooling · average of heads" in markdown  # Compare: the sentence through this model
    assert chart(at, "inspect_cmp_heatmap_0")["data"][0]["y"] == [figures.POOLING_QUERY]

    lapse = chart(at, "inspect_time_lapse")  # the time-lapse opens on the last map too
    assert lapse["data"][0]["y"] == [figures.POOLING_QUERY]
    assert all(array(f["data"][0]["z"]).shape == (1, len(tokens)) for f in lapse["frames"])
    assert any(m.startswith("**Pooling · average of heads** · press ▶") and "how much each word counts" in m
               for m in markdown)

    at.selectbox(key="inspect_layer").set_value(0)
    at.selectbox(key="inspect_tl_layer").set_value(1).run()
    assert not at.exception
    assert chart(at, "inspect_zoom")["data"][0]["y"] == tokens
    assert chart(at, "inspect_time_lapse")["data"][0]["y"] == tokens
    assert "**Layer 1 · average of heads**" in [m.value for m in at.markdown]


# --- the home page's saved first picture --------------------------------------------------------------


def test_a_preview_carries_the_map_names_and_reads_a_file_written_before_them(bundled, tmp_path):
    saved = json.loads(preview.PREVIEW.read_text(encoding="utf-8"))
    assert saved["map_names"] == bundled.model_config.map_names()  # the bundled file has them
    old = {k: v for k, v in saved.items() if k != "map_names"}  # as written before they were saved
    (tmp_path / "old.json").write_text(json.dumps(old))
    back = preview.load.__wrapped__(tmp_path / "old.json")
    assert back is not None and back.map_names == ["Layer 1", "Layer 2"]  # that model pooled by the mean
    assert "map_names" not in back.prediction

    save_run(pooled_run(bundled), tmp_path / "pooled")
    written = preview.write(tmp_path / "pooled", preview.EXAMPLES[0], tmp_path / "new.json")
    assert written.map_names == ["Layer 1", "Layer 2", "Pooling"]
    assert json.loads((tmp_path / "new.json").read_text(encoding="utf-8"))["map_names"] == written.map_names
    assert preview.load.__wrapped__(tmp_path / "new.json") == written


def test_a_bundled_model_that_pools_by_attention_shows_its_pooling_map_on_a_cold_start(bundled, tmp_path, monkeypatch):
    save_run(pooled_run(bundled), tmp_path / "pooled")
    saved = preview.write(tmp_path / "pooled", preview.EXAMPLES[0], tmp_path / "preview.json")
    monkeypatch.setenv("ATTENTION_PLAYGROUND_RUNS", str(tmp_path / "no-runs"))
    monkeypatch.setattr(preview, "load", lambda: saved)
    monkeypatch.setattr(preview, "model_code_loaded", lambda: False)  # as in a server that just started
    monkeypatch.setattr(preview, "warm_up", lambda: None)
    at = app(layer="3").run()
    assert not at.exception and not at.error
    assert at.radio(key="home_layer").options == ["Layer 1", "Layer 2", "Pooling"]
    assert at.radio(key="home_layer").value == "Pooling"
    heatmap = live_chart(at, "home_heatmap")["data"][0]
    assert heatmap["y"] == [figures.POOLING_QUERY]
    np.testing.assert_allclose(array(heatmap["z"]), one_row(np.asarray(saved.attention)[2].mean(0)), atol=1e-9)


def test_train_s_live_probe_map_of_a_pooling_model_is_its_one_row(runs_dir):
    # The Train page's probe map is the model's last map: for a model that pools by attention, the
    # pooling row, named so (it drew T identical rows titled "last layer").
    from tests.helpers.apptest import fill_small_training

    at = AppTest.from_file(str(ROOT / "pages" / "1_Train.py"), default_timeout=120).run()
    fill_small_training(at, 2, "pooled probe")
    at.selectbox(key="train_default_c_pool").set_value("attention")
    at.button[0].click().run()
    job = page_job(at)
    job.join(120)
    assert job.done and job.state == "finished"
    at.run()
    assert not at.exception
    probe = live_chart(at, "train_live_probe_chart")
    assert probe["data"][0]["y"] == [figures.POOLING_QUERY]
    assert " · Pooling, head average · after epoch 2" in probe["layout"]["title"]["text"]


# --- rollout ------------------------------------------------------------------------------------------


def rollout_view(path: Path) -> AppTest:
    """Inspect's rollout section for the saved run at ``path``, drawn alone."""

    def script(path: str) -> None:
        from attention_core.explain import explain
        from attention_core.runs import load_run  # the script runs alone: this module's imports are not there
        from ui import inspect_views

        run = load_run(path)
        inspect_views.rollout_and_saliency(explain(run, "the food was not good"), run.model_config, model=run.name)

    return AppTest.from_function(script, args=(str(path),), default_timeout=120).run()


def test_the_rollout_caption_says_which_maps_it_multiplies(pooled, bundled, runs_dir):
    save_run(mean_run(bundled), runs_dir / "mean")
    for name, reads in [("pooled", "The blue bars *attention (rollout)* are the pooling attention's row times the "
                                   "rollout above (layers 1–2 and the pooling attention multiplied): how much of each "
                                   "word reaches the label;"),
                        ("mean", "The blue bars *attention (rollout)* are the rollout above, its rows averaged:")]:
        at = rollout_view(runs_dir / name)
        assert not at.exception
        caption = next(c.value for c in at.caption if "Attention rollout" in c.value)
        assert "follows attention through layers 1–2:" in caption, name  # was: "all layers"
        assert "pooling" not in caption.lower() and "bars" not in caption  # the heatmap's caption; the bars' below
        how = next(m.value for m in at.markdown if m.value.startswith("**How to read this.**"))
        assert reads in how and "averaged over all words" not in how, name
        assert "**Attention rollout** · layers 1–2" in [m.value for m in at.markdown]


def test_a_wide_knocked_out_grid_frames_the_heads_off_in_red_and_keeps_their_short_titles():
    """12 heads: "6.12 · OFF" ran into "6.11" and "6 avg" at 1024 px (seen in Chromium)."""
    from ui.faithfulness_figures import knocked_out_grid

    attn = np.random.default_rng(0).dirichlet(np.ones(4), size=(6, 12, 4))
    fig = knocked_out_grid(attn, ["[CLS]", "a", "b", "[SEP]"], [(5, 11), (0, 0)])
    titles = [a.text for a in fig.layout.annotations]
    assert titles[0] == "<b>1.1</b>" and titles[5 * 13 + 11] == "<b>6.12</b>" and titles[1] == "1.2"
    frames = {(s.xref, s.line.color) for s in fig.layout.shapes}
    assert frames == {("x domain", "#d62728"), (f"x{5 * 13 + 12} domain", "#d62728")}
