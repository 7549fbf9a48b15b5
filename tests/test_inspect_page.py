"""The Inspect page in Streamlit's AppTest: renders, reacts to its controls, shows input errors, offers downloads."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from attention_core import Run, TrainConfig, Trainer, dataset_from_lists, load_embeddings, save_run
from attention_core.model import SEED_MODEL
from tests.apptest_helpers import array, chart, widget

PAGE = str(Path(__file__).resolve().parents[1] / "pages" / "2_Inspect.py")
KEYS = [
    "inspect_run", "inspect_source", "inspect_text", "inspect_layer", "inspect_head", "inspect_topk", "inspect_threshold",
    "inspect_method", "inspect_show_position", "inspect_tl_source", "inspect_epoch", "inspect_compare_mode",
    "inspect_compare_text",
]


@pytest.fixture()
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ATTENTION_PLAYGROUND_RUNS", str(tmp_path))
    return tmp_path


def page() -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=60)
    return at.run()


def test_renders_with_every_section_and_control(runs: Path) -> None:
    at = page()
    assert not at.exception
    assert not at.error
    for key in KEYS:
        widget(at, key)
    titles = [t.value for t in at.title]
    assert titles == [":material/biotech: Inspect a model"]
    assert [t.label for t in at.tabs] == ["Model view", "Rollout and saliency", "Input features", "Time-lapse", "Compare",
                                          "Export"]
    grid = chart(at, "inspect_grid")
    assert grid["layout"]["clickmode"] == "event+select"
    first = json.loads(at.get("plotly_chart")[1].proto.spec)  # the first attention chart is the grid
    assert first["data"][0]["x"] == ["the", "food", "was", "not", "good", "at", "all"]
    assert len(at.metric) == 1 and at.metric[0].label.startswith("Rank agreement")
    captions = " ".join(c.value for c in at.caption)
    assert "position-index feature does not apply" in captions  # the bundled model uses sinusoidal positions
    assert "your sentence" in captions  # the time-lapse replays the typed sentence


def test_typed_sentence_changes_the_tokens_shown(runs: Path) -> None:
    at = page()
    at.text_input(key="inspect_text").input("i love this fantastic product").run()
    assert not at.exception and not at.error
    first = json.loads(at.get("plotly_chart")[1].proto.spec)
    assert first["data"][0]["x"] == ["i", "love", "this", "fantastic", "product"]
    zoom = chart(at, "inspect_zoom")
    assert zoom["data"][0]["y"] == ["i", "love", "this", "fantastic", "product"]


def test_all_unknown_sentence_shows_an_error(runs: Path) -> None:
    at = page()
    at.text_input(key="inspect_text").input("xqzzy qqqzz").run()
    assert not at.exception
    assert len(at.error) == 1 and "none of the words" in at.error[0].value
    assert not at.get("plotly_chart")


def test_sentence_from_the_validation_set(runs: Path) -> None:
    at = page()
    at.radio(key="inspect_source").set_value("Pick one from the validation set").run()
    assert not at.exception and not at.error
    pick = next(w for w in at.selectbox if w.key.startswith("inspect_val_"))
    assert "true label:" in pick.format_func(pick.value)
    assert any(m.value.startswith("True label: **") for m in at.markdown)
    assert json.loads(at.get("plotly_chart")[1].proto.spec)["data"][0]["x"] == ["the", "mic", "is", "great", "."]


def test_zoom_filter_and_saliency_method(runs: Path) -> None:
    at = page()
    at.selectbox(key="inspect_layer").set_value(0)
    at.selectbox(key="inspect_head").set_value(1)
    at.number_input(key="inspect_topk").set_value(1).run()
    assert not at.exception
    zoom = chart(at, "inspect_zoom")
    assert "**Layer 1 · head 2 · top 1 per row**" in [m.value for m in at.markdown]
    z = array(zoom["data"][0]["z"])
    assert z.shape == (7, 7) and ((z > 0).sum(axis=1) == 1).all()
    at.selectbox(key="inspect_method").set_value("grad_norm").run()
    assert not at.exception
    names = [trace["name"] for trace in chart(at, "inspect_scores")["data"]]
    assert names == ["attention (rollout)", "saliency (gradient norm)"]


def test_time_lapse_slider_changes_the_figure(runs: Path) -> None:
    at = page()
    slider = at.select_slider(key="inspect_epoch")
    assert slider.options[0] == "0" and slider.value == 10
    before = chart(at, "inspect_tl_heatmap")
    slider.set_value(0).run()
    assert not at.exception
    after = chart(at, "inspect_tl_heatmap")
    assert "**Epoch 0** · layer 2 · average of heads" in [m.value for m in at.markdown]
    assert not np.allclose(array(after["data"][0]["z"]), array(before["data"][0]["z"]))


def test_time_lapse_replays_the_typed_sentence_or_a_probe(runs: Path) -> None:
    at = page()
    at.text_input(key="inspect_text").input("the pizza was cold").run()
    assert not at.exception
    assert at.radio(key="inspect_tl_source").value == "This sentence"
    slider = at.select_slider(key="inspect_epoch")
    # The bundled run kept its weights at 6 moments of training and at epoch 3, the model it keeps.
    assert slider.options == ["0", "2", "3", "4", "6", "8", "10"]
    assert "epoch 3 on this slider is that model" in " ".join(c.value for c in at.caption)
    assert chart(at, "inspect_tl_heatmap")["data"][0]["x"] == ["the", "pizza", "was", "cold"]
    before = chart(at, "inspect_tl_heatmap")
    slider.set_value(0).run()
    assert not np.allclose(array(chart(at, "inspect_tl_heatmap")["data"][0]["z"]), array(before["data"][0]["z"]))
    at.radio(key="inspect_tl_source").set_value("A probe sentence").run()
    assert not at.exception
    probe = at.selectbox(key="inspect_probe")
    assert chart(at, "inspect_tl_heatmap")["data"][0]["x"][0] == probe.value.split()[0]
    assert at.select_slider(key="inspect_epoch").options == [str(e) for e in range(11)]  # recorded every epoch


def test_compare_two_sentences(runs: Path) -> None:
    at = page()
    at.text_input(key="inspect_compare_text").input("what a waste of money").run()
    assert not at.exception
    assert chart(at, "inspect_cmp_heatmap_1")["data"][0]["x"] == ["what", "a", "waste", "of", "money"]
    at.radio(key="inspect_compare_mode").set_value("Same sentence, two models").run()
    assert not at.exception
    assert any("only one model" in i.value for i in at.info)


def test_downloads(runs: Path) -> None:
    at = page()
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels == ["Zoomed map (HTML)", "All weights (CSV)", "All weights (JSON)"]


def test_seed_like_run_shows_the_position_index_feature(runs: Path) -> None:
    texts = ["a great movie", "i love it", "wonderful fun", "a terrible movie", "i hate it", "awful boring"] * 2
    labels = ["pos", "pos", "pos", "neg", "neg", "neg"] * 2
    cfg = replace(SEED_MODEL, n_classes=2)
    train = TrainConfig(epochs=1, batch_size=4, val_fraction=0.0, probes=("a great movie",))
    result = Trainer(cfg, train, dataset_from_lists(texts, labels), load_embeddings()).run()
    save_run(Run.from_result(result, name="seedling"), runs / "seedling")

    at = page()
    at.selectbox(key="inspect_layer").set_value(1)  # the bundled model has 2 layers, the seed 1
    at.run()
    at.selectbox(key="inspect_run").set_value("seedling").run()
    assert not at.exception and not at.error
    assert at.selectbox(key="inspect_layer").value == 0
    features = chart(at, "inspect_features")
    assert features["data"][0]["x"][-1] == "position"
    assert array(features["data"][0]["z"])[:, -1].tolist() == [0, 1, 2, 3, 4, 5, 6]
    at.toggle(key="inspect_show_position").set_value(False).run()
    assert chart(at, "inspect_features")["data"][0]["x"][-1] == "d50"
    assert at.select_slider(key="inspect_epoch").options == ["0", "1"]


@pytest.mark.e2e
@pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="needs Debian's chromium")
def test_clicking_a_map_in_the_grid_zooms_it(tmp_path: Path) -> None:
    """In a real browser: a click on layer 2, head 3 of the grid selects that map in the zoom selectboxes."""
    from tests.browser import app_server, browser_page

    with app_server(tmp_path) as url, browser_page(height=1600) as page:
        page.goto(f"{url}/Inspect")
        main = page.get_by_test_id("stMain")
        main.get_by_text("L2 · H3").first.wait_for()
        grid = main.locator(".js-plotly-plot").nth(1)  # 0: probabilities, 1: the grid (2 × 5 maps)
        # The invisible click targets: one scatter trace per map, layer by layer (4 heads + average).
        cell = grid.locator(".scatterlayer .trace").nth(1 * 5 + 2).locator("path.point").first
        cell.wait_for(state="attached")
        target = main.get_by_text("Layer 2 · head 3", exact=True)  # the zoomed map's title (the export note names it too)
        cell.click(force=True)  # force: the marker is transparent on purpose
        target.wait_for()
