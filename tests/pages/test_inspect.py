"""The Inspect page in Streamlit's AppTest: renders, reacts to its controls, shows input errors, offers downloads."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

from attention_core import Run, TrainConfig, Trainer, dataset_from_lists, load_embeddings, load_run, save_run
from attention_core.explain import explain
from attention_core.export import attention_json
from attention_core.metrics import spearman
from attention_core.presets import SEED
from tests.helpers.apptest import array, chart, widget
from ui.figures import POOLING_QUERY

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "2_Inspect.py")
KEYS = [
    "inspect_run", "inspect_source", "inspect_text", "inspect_layer", "inspect_head", "inspect_topk", "inspect_threshold",
    "inspect_method", "inspect_show_position", "inspect_tl_source", "inspect_tl_layer", "inspect_compare_mode",
    "inspect_compare_text", "neuron_layer", "neuron_head", "neuron_query",
]


def page() -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=60)
    return at.run()


def test_renders_with_every_section_and_control(runs_dir: Path) -> None:
    at = page()
    assert not at.exception
    assert not at.error
    for key in KEYS:
        widget(at, key)
    titles = [t.value for t in at.title]
    assert titles == [":material/biotech: Inspect a model"]
    assert [t.label for t in at.tabs] == ["Model view", "Rollout and saliency", "Neuron view", "Input features",
                                          "Time-lapse", "Compare", "Export"]
    grid = chart(at, "inspect_grid")
    assert grid["layout"]["clickmode"] == "event+select"
    first = json.loads(at.get("plotly_chart")[1].proto.spec)  # the first attention chart is the grid
    assert first["data"][0]["x"] == ["the", "food", "was", "not", "good", "at", "all"]
    assert len(at.metric) == 1 and at.metric[0].label.startswith("Rank agreement")
    captions = " ".join(c.value for c in at.caption)
    assert "position-index feature does not apply" in captions  # the bundled model uses sinusoidal positions
    assert "your sentence" in captions  # the time-lapse replays the typed sentence


def test_typed_sentence_changes_the_tokens_shown(runs_dir: Path) -> None:
    at = page()
    at.text_input(key="inspect_text").input("i love this fantastic product").run()
    assert not at.exception and not at.error
    first = json.loads(at.get("plotly_chart")[1].proto.spec)
    assert first["data"][0]["x"] == ["i", "love", "this", "fantastic", "product"]
    zoom = chart(at, "inspect_zoom")  # it opens on the last map, the bundled model's pooling attention: one row
    assert zoom["data"][0]["x"] == ["i", "love", "this", "fantastic", "product"]
    assert zoom["data"][0]["y"] == [POOLING_QUERY]
    at.selectbox(key="inspect_layer").set_value(1).run()  # layer 2: a row per word
    assert not at.exception
    zoom = chart(at, "inspect_zoom")
    assert zoom["data"][0]["y"] == zoom["data"][0]["x"] == ["i", "love", "this", "fantastic", "product"]


def test_words_read_with_their_capitals_are_said_as_home_says_it(runs_dir: Path) -> None:
    """Home wrote "Read with capitals", Inspect "read with capitals": one spelling, the core's (Encoded.notes)."""
    at = page()
    at.text_input(key="inspect_text").input("the food was NOT good at all").run()
    assert not at.exception
    said = [c.value for c in at.caption if "capitals" in c.value]
    assert len(said) == 1 and said[0].startswith("Read with capitals (") and said[0].endswith(": NOT")


def test_all_unknown_sentence_shows_an_error(runs_dir: Path) -> None:
    at = page()
    at.text_input(key="inspect_text").input("xqzzy qqqzz").run()
    assert not at.exception
    assert len(at.error) == 1 and "none of the words" in at.error[0].value
    assert not at.get("plotly_chart")


def test_sentence_from_the_validation_set(runs_dir: Path) -> None:
    at = page()
    at.radio(key="inspect_source").set_value("Pick one from the validation set").run()
    assert not at.exception and not at.error
    pick = next(w for w in at.selectbox if w.key.startswith("inspect_val_"))
    assert "true label:" in pick.format_func(pick.value)
    assert any(m.value.startswith("True label: **") for m in at.markdown)
    assert json.loads(at.get("plotly_chart")[1].proto.spec)["data"][0]["x"] == ["the", "mic", "is", "great", "."]


def test_zoom_filter_and_saliency_method(runs_dir: Path) -> None:
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


def frames(fig: dict) -> dict[str, np.ndarray]:
    """epoch → the attention map of that frame of the time-lapse."""
    return {f["name"]: array(f["data"][0]["z"]) for f in fig["frames"]}


def test_time_lapse_plays_in_the_browser_and_marks_the_kept_epochs(runs_dir: Path) -> None:
    at = page()
    fig = chart(at, "inspect_time_lapse")
    maps = frames(fig)
    # The bundled run's kept weights, one frame each: 6 moments spread over the 12 epochs its patience let it train
    # (of 40 planned), and the kept epoch 8.
    assert list(maps) == ["0", "2", "5", "7", "8", "10", "12"]
    assert maps["12"].shape == (1, 7)  # it opens on the pooling attention's row (the last map)
    assert not np.allclose(maps["8"], maps["12"])
    assert np.allclose(array(fig["data"][0]["z"]), maps["8"])  # it opens on the run's model, the one the page shows
    (buttons,) = fig["layout"]["updatemenus"]
    play = buttons["buttons"][0]
    assert play["label"] == "▶ Play" and play["method"] == "animate" and play["args"][0] is None
    assert play["args"][1]["frame"]["redraw"]  # heatmaps redraw on every frame
    (slider,) = fig["layout"]["sliders"]
    assert slider["active"] == 4 and len(slider["steps"]) == 7
    # Every frame is a kept epoch, named on the epoch axis right above the slider; the run's model (epoch 8,
    # lowest validation loss) has a star.
    assert fig["layout"]["xaxis3"]["ticktext"] == ["0", "2", "5", "7", "8★", "10", "12"]
    assert fig["layout"]["xaxis3"]["tickvals"] == [0, 2, 5, 7, 8, 10, 12]  # spaced by the epochs' values
    captions = " ".join(c.value for c in at.caption)
    assert "The run's model has the weights of epoch 8 (lowest validation loss): epoch 8 (★) is that model." in captions


def test_time_lapse_follows_the_layer_and_head(runs_dir: Path) -> None:
    at = page()
    before = frames(chart(at, "inspect_time_lapse"))  # the pooling attention, average of heads: one row
    at.selectbox(key="inspect_tl_layer").set_value(0)
    at.selectbox(key="inspect_tl_head").set_value(1).run()
    assert not at.exception
    assert "**Layer 1 · head 2** · press ▶ to replay the training, or drag the slider" in [m.value for m in at.markdown]
    after = frames(chart(at, "inspect_time_lapse"))
    assert list(after) == list(before) == ["0", "2", "5", "7", "8", "10", "12"]
    assert before["12"].shape == (1, 7) and after["12"].shape == (7, 7)  # a layer's map: a row per word
    at.selectbox(key="inspect_tl_head").set_value(0).run()
    assert not at.exception
    assert not np.allclose(frames(chart(at, "inspect_time_lapse"))["12"], after["12"])  # another head, another map


def test_time_lapse_replays_the_typed_sentence_or_a_probe(runs_dir: Path) -> None:
    at = page()
    at.text_input(key="inspect_text").input("the pizza was cold").run()
    assert not at.exception
    assert at.radio(key="inspect_tl_source").value == "This sentence"
    fig = chart(at, "inspect_time_lapse")
    assert fig["data"][0]["x"] == ["the", "pizza", "was", "cold"]
    assert all(f["data"][0]["x"] == ["the", "pizza", "was", "cold"] for f in fig["frames"])
    at.radio(key="inspect_tl_source").set_value("A probe sentence").run()
    assert not at.exception
    probe = at.selectbox(key="inspect_probe")
    fig = chart(at, "inspect_time_lapse")
    assert fig["data"][0]["x"][0] == probe.value.split()[0]
    assert list(frames(fig)) == [str(e) for e in range(13)]  # recorded every epoch: 12 (patience ended the run there)
    # Only the epochs whose weights the run kept are named and marked on the epoch axis above the slider.
    assert fig["layout"]["xaxis3"]["ticktext"] == ["0", "2", "5", "7", "8★", "10", "12"]
    assert fig["layout"]["xaxis3"]["tickvals"] == [0, 2, 5, 7, 8, 10, 12]  # frame numbers: one frame per epoch here
    kept = next(t for t in fig["data"] if t.get("name") == "weights kept")
    assert kept["customdata"] == [0, 2, 5, 7, 10, 12]
    assert next(t for t in fig["data"] if t.get("name") == "the run's model")["customdata"] == [8]


def test_saliency_explains_the_predicted_class_and_says_so(runs_dir: Path) -> None:
    at = page()
    scores = chart(at, "inspect_scores")["data"][1]  # attention, then saliency (raw values in customdata)
    run = load_run(Path(__file__).resolve().parents[2] / "data" / "default_run")
    ex = explain(run, "the food was not good at all")
    assert np.allclose(array(scores["customdata"]), ex.saliency.numpy(), atol=1e-6)
    how = next(m.value for m in at.markdown if m.value.startswith("**How to read this.**"))
    assert f"log-probability of **{ex.label}**" in how
    assert f"above zero pushes towards **{ex.label}**, one below zero pushes away from it" in how
    at.selectbox(key="inspect_method").set_value("grad_norm").run()
    how = next(m.value for m in at.markdown if m.value.startswith("**How to read this.**"))
    assert "has no sign" in how and "pushes towards" not in how


def test_one_explanation_of_the_attention_bars_and_it_is_what_they_show(runs_dir: Path) -> None:
    at = page()
    run = load_run(Path(__file__).resolve().parents[2] / "data" / "default_run")  # pooling="attention"
    ex = explain(run, "the food was not good at all")
    bars = chart(at, "inspect_scores")["data"][0]  # attention (raw values in customdata)
    on_top = ex.attention[-1].mean(0)[0].numpy() @ ex.rollout.numpy()  # the pooling attention's row times the rollout
    assert np.allclose(array(bars["customdata"]), on_top, atol=1e-5)
    assert not np.allclose(on_top, ex.rollout.numpy().mean(0), atol=1e-3)  # (not the rollout's rows averaged)
    said = [c.value for c in at.caption] + [m.value for m in at.markdown]
    about_bars = [t for t in said if "attention (rollout)" in t]
    assert len(about_bars) == 1  # the box under the bars; the caption under the rollout heatmap says what rollout is
    assert "The blue bars *attention (rollout)* are the pooling attention's row times the rollout above" in about_bars[0]
    assert "averaged over all words" not in about_bars[0]


def test_rank_agreement_is_spearman_of_attention_and_saliency_size(runs_dir: Path) -> None:
    at = page()
    run = load_run(Path(__file__).resolve().parents[2] / "data" / "default_run")
    ex = explain(run, "the food was not good at all")
    rho = spearman(ex.attention_to_token.numpy(), np.abs(ex.saliency.numpy()))
    assert rho is not None
    assert at.metric[0].value == f"{rho:+.2f}"


def test_compare_two_sentences(runs_dir: Path) -> None:
    at = page()
    at.text_input(key="inspect_compare_text").input("what a waste of money").run()
    assert not at.exception
    assert chart(at, "inspect_cmp_heatmap_1")["data"][0]["x"] == ["what", "a", "waste", "of", "money"]
    at.radio(key="inspect_compare_mode").set_value("Same sentence, two models").run()
    assert not at.exception
    # The second model: the pretrained encoder (issue 28), its prediction said to mean nothing yet
    assert at.selectbox(key="inspect_compare_run").options == ["Pretrained: all-MiniLM-L6-v2 (head untrained)"]
    assert chart(at, "inspect_cmp_heatmap_1")["data"][0]["x"][0] == "[CLS]"
    assert any("classifier head is untrained" in m.value for m in at.markdown)


def test_downloads(runs_dir: Path) -> None:
    at = page()
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels == ["Zoomed map (HTML)", "All weights (CSV)", "All weights (JSON)"]


def test_the_json_download_holds_the_pooling_map_once_per_head(runs_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                                               bundled: Run) -> None:
    """As the CSV does (one row per head and word): was the pooling map's one row repeated for every word, as a
    third layer under "attention"."""
    from ui import inspect_views

    made = []
    monkeypatch.setattr(inspect_views, "attention_json", lambda *a, **k: made.append(attention_json(*a, **k)) or made[-1])
    at = page()  # the bundled run: 2 layers, then its pooling attention's map
    assert not at.exception and made
    payload = made[-1]
    ex = explain(bundled, payload["text"])
    assert json.loads(json.dumps(payload)) == payload  # plain lists and numbers
    np.testing.assert_allclose(payload["attention"], ex.attention[:2].numpy(), atol=1e-6)  # [layer][head][query][key]
    np.testing.assert_allclose(payload["pooling"], ex.attention[2, :, 0].numpy(), atol=1e-6)  # [head][key]
    assert "pooling [head][key]" in at.get("download_button")[2].proto.help


def test_seed_like_run_shows_the_position_index_feature(runs_dir: Path) -> None:
    texts = ["a great movie", "i love it", "wonderful fun", "a terrible movie", "i hate it", "awful boring"] * 2
    labels = ["pos", "pos", "pos", "neg", "neg", "neg"] * 2
    cfg = replace(SEED.model, n_classes=2)
    train = TrainConfig(epochs=1, batch_size=4, val_fraction=0.0, probes=("a great movie",))
    result = Trainer(cfg, train, dataset_from_lists(texts, labels), load_embeddings()).run(name="seedling")
    save_run(result, runs_dir / "seedling")

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
    assert list(frames(chart(at, "inspect_time_lapse"))) == ["0", "1"]



def test_a_run_saved_again_under_the_same_name_is_explained_again(runs_dir: Path) -> None:
    texts = ["a great movie", "i love it", "wonderful fun", "a terrible movie", "i hate it", "awful boring"] * 2
    labels = ["pos", "pos", "pos", "neg", "neg", "neg"] * 2
    cfg, vectors = replace(SEED.model, n_classes=2), load_embeddings()

    def trained(seed: int) -> Run:
        train = TrainConfig(epochs=2, batch_size=4, val_fraction=0.0, seed=seed)
        return Trainer(cfg, train, dataset_from_lists(texts, labels), vectors).run(name="mine")

    save_run(trained(0), runs_dir / "mine")
    at = page()
    at.selectbox(key="inspect_run").set_value("mine").run()
    bars = chart(at, "inspect_probs")["data"][0]
    first = dict(zip(bars["y"], bars["x"], strict=True))
    save_run(trained(1), runs_dir / "mine", overwrite=True)  # same folder, new weights: a new run_stamp
    at.run()
    assert not at.exception
    bars = chart(at, "inspect_probs")["data"][0]
    shown = dict(zip(bars["y"], bars["x"], strict=True))
    again = explain(load_run(runs_dir / "mine"), "the food was not good at all").probabilities
    assert shown != first and shown == pytest.approx(again)

BROWSER = pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="needs Debian's chromium")


@contextlib.contextmanager
def inspect_in_browser(url: str) -> Iterator[tuple[Page, Locator]]:
    """A fresh session on the Inspect page, its grid drawn: (page, its main area)."""
    from tests.helpers.browser import browser_page

    with browser_page(height=1600) as page:
        page.goto(f"{url}/Inspect")
        main = page.get_by_test_id("stMain")
        main.get_by_text("L2 · H3").first.wait_for()
        yield page, main


@pytest.mark.e2e
@BROWSER
def test_clicking_a_map_in_the_grid_zooms_it(server: str) -> None:
    """In a real browser: a click on layer 2, head 3 of the grid selects that map in the zoom selectboxes."""
    with inspect_in_browser(server) as (_, main):
        grid = main.locator(".js-plotly-plot").nth(1)  # 0: probabilities, 1: the grid (2 × 5 maps)
        # The invisible click targets: one scatter trace per map, layer by layer (4 heads + average).
        cell = grid.locator(".scatterlayer .trace").nth(1 * 5 + 2).locator("path.point").first
        cell.wait_for(state="attached")
        target = main.get_by_text("Layer 2 · head 3", exact=True)  # the zoomed map's title (the export note names it too)
        cell.click(force=True)  # force: the marker is transparent on purpose
        target.wait_for()


@pytest.mark.e2e
@BROWSER
def test_the_time_lapse_plays_in_the_browser(server: str) -> None:
    """▶ replays the training in the browser: the figure's title goes from epoch 0 to the last epoch on its own."""
    from tests.helpers.browser import settled

    with inspect_in_browser(server) as (page, main):
        main.get_by_role("tab", name="Time-lapse").click()
        page.wait_for_url(re.compile(r"tab=time-lapse"))  # a tab switch reruns the page (its address names the tab)
        settled(page)  # before ▶: a redraw in the middle would restart the figure
        lapse = main.locator(".js-plotly-plot", has_text="▶ Play")
        title = lapse.locator(".gtitle")
        title.filter(has_text="Epoch 8").wait_for()  # opens on the run's model (epoch 8), the one the page shows
        seen = set()
        lapse.get_by_text("▶ Play").click()
        for _ in range(200):  # the frames change the title in the browser; no page run takes part
            seen.add(title.text_content().split("·")[0].strip())
            if len(seen) > 2 and "Epoch 12" in seen and title.text_content().startswith("Epoch 12"):
                break
            page.wait_for_timeout(100)
        assert {"Epoch 0", "Epoch 12"} <= seen and len(seen) >= 3, seen
        assert not main.get_by_test_id("stException").count()


def test_the_neuron_view_takes_one_heads_row_apart_with_the_models_numbers(runs_dir: Path) -> None:
    """Layer 2, head 3, the query "not": the softmax column equals that row of the map the Model view shows."""
    at = page()
    widget(at, "neuron_layer").select(1)
    widget(at, "neuron_head").select(2)
    widget(at, "neuron_query").select(3).run()
    assert not at.exception
    fig = chart(at, "inspect_neuron")
    assert fig["data"][0]["y"][0] == "q (not)" and fig["data"][0]["y"][1:] == [
        f"{i + 1} {w}" for i, w in enumerate(["the", "food", "was", "not", "good", "at", "all"])]
    highest = fig["data"][0]["colorscale"][-1][1]  # as the caption says: red above 0, blue below
    assert "red above 0, blue below" in " ".join(c.value for c in at.caption) and highest == "rgb(103,0,31)"
    softmax = array(fig["data"][2]["z"])[1:, 2]
    ex = explain(load_run(Path(PAGE).parents[1] / "data" / "default_run"), "the food was not good at all")
    assert np.allclose(softmax, ex.attention[1, 2, 3].numpy(), atol=1e-6)
    said = next(m.value for m in at.markdown if m.value.startswith("For **"))
    top = ["the", "food", "was", "not", "good", "at", "all"][int(np.argmax(softmax))]
    assert said.startswith(f"For **{top}**: q·k = ") and f"gives **{max(softmax):.3f}**" in said
    # the pooling attention: one query, the label's; the word picker has nothing to pick
    widget(at, "neuron_layer").select(2).run()
    assert widget(at, "neuron_query_pooling").disabled and not at.exception
    assert chart(at, "inspect_neuron")["data"][0]["y"][0] == "q (the label's query)"
