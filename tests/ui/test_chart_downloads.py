"""The router (app.py) mounts the SVG download buttons (ui/chart_downloads.py) once, before the page runs; every
chart on every page names its downloads after what it shows (its config's ``toImageButtonOptions``): the run or
model, the sentence, the layer and the head where it has them.

Each page runs alone here (AppTest runs only Home through the router); what the buttons do with those names is
tested in Chromium: tests/browser/test_chart_downloads.py.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

from streamlit.testing.v1 import AppTest

from attention_core.examples import one_hot_cross_attention
from attention_core.text import file_stem
from tests.helpers.apptest import download_options, page_job, start_small_training
from ui import chart_downloads

ROOT = Path(__file__).resolve().parents[2]
MODEL = "default model on UCI sentences"  # the bundled run's name
PLOTLY_DEFAULTS = {"newplot", "plot-image"}  # plotly.js's own file names, without a config's


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


def assert_named(options: dict[str, dict], sentence: str | None = None, model: str | None = MODEL) -> None:
    """Every chart's file is named, not plotly's default, and has a title; with the model's name and the sentence
    in both, where given."""
    assert options
    for key, named in options.items():
        assert named.get("filename") and named["filename"] not in PLOTLY_DEFAULTS, key
        assert named.get("title"), key
        if model is not None:
            assert model in named["title"] and file_stem(model, 30).strip("-") in named["filename"], key
        if sentence is not None:
            assert f"“{sentence}”" in named["title"] and file_stem(sentence, 40)[:8] in named["filename"], key


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


# -- every other page --------------------------------------------------------------------------------------------
def run_page(file: str, **query: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / file), default_timeout=120)
    at.query_params.update(query)
    at.run()
    assert not at.exception, at.exception
    return at


def test_every_chart_call_passes_a_config_naming_its_downloads():
    """Read from the source, so that a chart shown only after a click (a misclassified row, a finished training)
    is held to it too: every st.plotly_chart and live chart of the pages and their views passes ``config=``."""
    calls = []
    for path in sorted([*(ROOT / "pages").glob("*.py"), *(ROOT / "ui").glob("*.py"), ROOT / "app.py"]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) in (
                    "plotly_chart", "live_plotly_chart"):
                calls.append((f"{path.relative_to(ROOT)}:{node.lineno}", {k.arg for k in node.keywords}))
    assert len(calls) > 50
    assert [where for where, keywords in calls if "config" not in keywords] == []


def test_train_names_its_data_charts_after_the_data_set(runs_dir):
    options = download_options(run_page("1_Train.py"))
    assert set(options) == {"train_balance", "train_lengths"}
    assert_named(options, model="uci_sentiment_sentences.csv")


def test_train_names_a_runs_charts_after_the_run_and_a_comparison_after_both(runs_dir):
    at = run_page("1_Train.py")
    start_small_training(at, 2, "slides")
    job = page_job(at)
    job.join(120)
    assert job.done and job.state == "finished"
    shutil.copytree(ROOT / "data" / "default_run", runs_dir / "other")
    at.run()
    at.multiselect(key="train_compare").set_value(["slides", "other"]).run()
    assert not at.exception, at.exception
    options = download_options(at)
    ran = {"train_live_curves_chart", "train_live_probe_chart", "train_confusion"}
    assert ran | {"train_compare_chart"} <= set(options)
    assert_named({k: options[k] for k in ran}, model="slides")
    assert options["train_live_probe_chart"]["title"].endswith(" · average of heads · after epoch 2")
    assert_named({"train_compare_chart": options["train_compare_chart"]}, model="slides vs other")


def test_self_attention_names_its_charts_after_the_posts_sentence_and_the_query():
    options = download_options(run_page("3_Self_attention.py", query="starts"))
    assert len(options) >= 15
    random = {"selfattn_sqrt_dk", "selfattn_one_query"}  # random queries and keys: no sentence
    assert_named({k: v for k, v in options.items() if k not in random}, "Your journey starts with one step", model=None)
    assert_named({k: options[k] for k in random}, model=None)
    assert options["selfattn_weights"]["title"].startswith("Attention weights · “Your journey starts with one step” · "
                                                           "query “starts”")
    assert options["selfattn_weights"]["filename"].startswith("attention-weights_your-journey-starts-with-one-step_query-starts")


def test_cross_attention_names_its_charts_after_its_sentences_and_mask():
    options = download_options(run_page("4_Cross_attention_and_masks.py"))
    assert {"cross_seed_scores", "cross_shape_weights", "cross_glove", "cross_masked"} <= set(options)
    assert_named(options, model=None)
    for key in ("cross_glove", "cross_masked"):  # sentence A → sentence B (the text boxes' defaults)
        assert "“the apple was sweet and fresh → we are eating" in options[key]["title"], key
    assert options["cross_masked"]["title"].endswith("· mask: padding, 2 pads")
    first = one_hot_cross_attention().output_word_indices[0]  # the output word followed at first
    assert options["cross_seed_scores"]["title"].endswith(f"· output word 0: w{first}")


def test_backpropagation_names_its_charts_after_the_seed_model_and_the_sentence():
    options = download_options(run_page("5_Backpropagation.py"))
    assert {"backprop_probs", "backprop_hand", "backprop_autograd", "backprop_jac", "backprop_alpha_post"} <= set(options)
    assert_named(options, "very sad as they both fail", model="seed preset, after 1000 epochs (as in the post)")
    assert options["backprop_jac"]["title"].endswith("· row 1 “very”")


def test_seed_experiment_and_check_yourself_show_no_chart_before_there_is_something_to_show():
    """(The seed experiment's charts, after training: tests/pages/test_seed_experiment.py.)"""
    assert download_options(run_page("6_Seed_experiment.py")) == {}
    assert download_options(run_page("8_Check_yourself.py")) == {}


def test_faithfulness_names_the_sentences_charts_and_the_whole_run_report_after_the_run(runs_dir):
    at = run_page("7_Faithfulness.py", off="1.2")
    lab = download_options(at)
    assert {"faith_scores", "faith_kendall", "faith_curves", "faith_plain_probs", "faith_ko_probs", "faith_ko_grid"} == set(lab)
    assert_named(lab, "the food was not good at all")
    assert lab["faith_ko_grid"]["title"].endswith("· 1.2 off, output removed")
    at.number_input(key="faith_report_n").set_value(4)
    at.button(key="faith_report_run").click().run()
    assert not at.exception, at.exception
    report = {k: v for k, v in download_options(at).items() if k.startswith("faith_report_")}
    assert len(report) == 5
    assert_named(report)
    assert report["faith_report_heads"]["title"] == f"Accuracy with each head off · {MODEL} · 4 sentences, output removed"
