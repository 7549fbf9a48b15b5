"""The router (app.py) mounts the SVG download buttons (ui/chart_downloads.py) once, before the page runs; every
chart on Home and Inspect names its downloads after what it shows (its config's ``toImageButtonOptions``).

AppTest runs only Home through the router (a page it switches to runs alone), so the other pages, and what the
buttons do, are tested in Chromium: tests/browser/test_chart_downloads.py.
"""

from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

from ui import chart_downloads

ROOT = Path(__file__).resolve().parents[2]
MODEL = "default model on UCI sentences"  # the bundled run's name


def test_the_router_mounts_the_svg_buttons_once_before_the_page():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).run()
    assert not at.exception
    components = [c.proto.component_name for c in at.get("bidi_component")]
    assert components.count("attention_playground.svg_download_buttons") == 1
    assert components.index("attention_playground.svg_download_buttons") == 0  # above Home's own (live) charts
    assert "attention_playground.live_plotly_chart" in components


def test_a_charts_file_name_and_title_say_model_sentence_layer_and_head():
    view = {"model": "my run (v2)", "sentence": "The food was NOT good, at all!", "layer": "Layer 2", "head": "head 1"}
    assert chart_downloads.filename("Attention", **view) == "attention_my-run-v2_the-food-was-not-good-at-all_layer-2_head-1"
    assert chart_downloads.title("Attention", **view) == "Attention · my run (v2) · “The food was NOT good, at all!” · Layer 2 · head 1"
    long = "a very long sentence that goes on and on, well past what a slide's title can hold"
    cut = chart_downloads.filename("Probabilities", sentence=long)
    assert cut == "probabilities_a-very-long-sentence-that-goes-on-and-on"  # 40 characters, no "-" at the cut
    assert chart_downloads.title("Probabilities", sentence=long).endswith("what a…”")
    assert chart_downloads.config("Attention", **view) == {"toImageButtonOptions": {
        "format": "png", "filename": chart_downloads.filename("Attention", **view), "title": chart_downloads.title("Attention", **view)}}


def download_options(at: AppTest) -> dict[str, dict]:
    """Each chart's ``toImageButtonOptions`` by its key: the st.plotly_charts' and the live charts'."""
    charts = {c.proto.id.rsplit("-", 1)[-1]: json.loads(c.proto.config or "{}") for c in at.get("plotly_chart")}
    for c in at.get("bidi_component"):
        data = json.loads(c.proto.json or "{}")
        if "spec" in data:
            charts[c.proto.id.rsplit("-", 1)[-1]] = data.get("config") or {}
    return {key: config.get("toImageButtonOptions", {}) for key, config in charts.items()}


def assert_named(options: dict[str, dict], sentence: str) -> None:
    for key, named in options.items():
        assert named.get("filename") and named["filename"] not in ("newplot", "plot-image"), key
        assert MODEL in named["title"] and f"“{sentence}”" in named["title"], key  # the model and the sentence
        assert "default-model-on-uci-sentences" in named["filename"] and "the-food" in named["filename"], key


def test_every_chart_on_home_names_its_download_after_the_model_sentence_layer_and_head():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.query_params.update({"sentence": "the food was not good at all", "layer": "1", "head": "2", "grid": "1"})
    at.run()
    assert not at.exception, at.exception
    options = download_options(at)
    assert set(options) == {"home_probs", "home_heatmap", "home_grid"}
    assert_named(options, "the food was not good at all")
    assert options["home_heatmap"]["title"].endswith("· Layer 1 · head 2")
    assert options["home_heatmap"]["filename"].endswith("_layer-1_head-2")


def test_every_chart_on_inspect_names_its_download(runs_dir):
    at = AppTest.from_file(str(ROOT / "pages" / "2_Inspect.py"), default_timeout=90)
    at.query_params.update({"sentence": "the food was not good at all", "layer": "1", "head": "2"})
    at.run()
    assert not at.exception, at.exception
    options = download_options(at)
    assert {"inspect_probs", "inspect_grid", "inspect_zoom", "inspect_rollout", "inspect_last_layer", "inspect_scores",
            "inspect_features", "inspect_time_lapse", "inspect_cmp_probs_0", "inspect_cmp_heatmap_1"} <= set(options)
    compared = {"inspect_cmp_probs_1", "inspect_cmp_heatmap_1"}  # the Compare tab's second sentence
    assert_named({k: v for k, v in options.items() if k not in compared}, "the food was not good at all")
    assert options["inspect_zoom"]["filename"].endswith("_layer-1_head-2")
    assert options["inspect_zoom"]["title"].endswith("“the food was not good at all” · Layer 1 · head 2")
    assert options["inspect_last_layer"]["filename"].endswith("_pooling_average-of-heads")  # the bundled run pools by attention
