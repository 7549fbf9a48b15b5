"""The Faithfulness page in Streamlit's AppTest: every method on one sentence, head knock-out, the run report."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from attention_core.faithfulness import available_methods, knock_out, run_report
from tests.helpers.apptest import array, chart, live_chart

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "7_Faithfulness.py")
SENTENCE = ["the", "food", "was", "not", "good", "at", "all"]  # EXAMPLES[0], the sentence box's default

pytestmark = pytest.mark.usefixtures("runs_dir")  # a runs root of the test's own (conftest)


def page() -> AppTest:
    return AppTest.from_file(PAGE, default_timeout=120).run()


def bars(at: AppTest, key: str) -> dict[str, float]:
    """class → probability of a probability_bars chart (the knock-out's, updated in place)."""
    trace = live_chart(at, key)["data"][0]
    return dict(zip(trace["y"], array(trace["x"]).tolist(), strict=True))


POOLING = ["pooling.1", "pooling.2", "pooling.3", "pooling.4"]  # the bundled model's pooling heads, as the CLI names them
ERASER = ["comprehensiveness ↑", "sufficiency ↓"]
HEADS = ["map", "accuracy", "accuracy change", "loss", "pruned"]


def tables(at: AppTest, columns: list[str]) -> list:
    """The tables (DataFrames) shown with these columns, in the order of the tabs."""
    return [d.value for d in at.dataframe if list(d.value.columns) == columns]


def test_opens_on_the_bundled_model_with_every_method(bundled):
    at = page()
    assert not at.exception and not at.error
    assert at.title[0].value == "Is attention an explanation?"
    titles = [m.title for m in available_methods(bundled.model)]
    assert len(titles) == 8 and "Pooling attention" in titles  # the bundled model pools by attention
    scores = chart(at, "faith_scores")["data"][0]
    assert scores["y"] == titles and scores["x"] == SENTENCE
    z = array(scores["z"])
    assert z.shape == (8, 7) and np.allclose(np.abs(z).max(axis=1), 1.0)  # each row scaled to its largest
    measures = " ".join(m.value for m in at.markdown)
    assert all(f"**{t}**:" in measures for t in titles)  # each method's "what this measures"
    captions = [c.value for c in at.caption]
    assert "Shapley values of this sentence: exact: every one of the 128 subsets of its 7 words." in captions
    assert array(chart(at, "faith_kendall")["data"][0]["z"]).shape == (8, 8)
    curves = {trace["name"] for trace in chart(at, "faith_curves")["data"]}
    assert curves == {*titles, "Random order"}
    (eraser,) = tables(at, ERASER)  # the sentence's: no run report yet
    assert list(eraser.index) == [*titles, "Random order"]


def test_no_knock_out_shows_the_plain_prediction(bundled):
    at = page()
    plain = bundled.predict(" ".join(SENTENCE)).probabilities
    assert bars(at, "faith_ko_probs") == pytest.approx(plain, abs=1e-9)
    assert bars(at, "faith_plain_probs") == pytest.approx(plain, abs=1e-9)
    assert not any("OFF" in a["text"] for a in live_chart(at, "faith_ko_grid")["layout"]["annotations"])


def test_knocking_out_heads_changes_the_shown_probabilities_and_maps(bundled):
    at = page()
    plain_grid = live_chart(at, "faith_ko_grid")
    at.multiselect(key="faith_heads").set_value(["1.1", "1.2", "1.3", "1.4"]).run()
    assert not at.exception and not at.error
    text = " ".join(SENTENCE)
    heads = [(0, h) for h in range(4)]
    expected = bundled.predict(text, edit_attention=knock_out(heads, bundled.model_config, "zero")).probabilities
    shown = bars(at, "faith_ko_probs")
    assert shown == pytest.approx(expected, abs=1e-9)
    assert shown != pytest.approx(bars(at, "faith_plain_probs"), abs=1e-4)  # the change is visible
    grid = live_chart(at, "faith_ko_grid")
    off = [a["text"] for a in grid["layout"]["annotations"] if "OFF" in a["text"]]
    assert off == [f"<b>L1 · H{h} · OFF</b>" for h in range(1, 5)]  # named as every grid names its maps
    layer2 = 5  # the first map of layer 2 (4 heads and the average per row)
    assert not np.allclose(array(grid["data"][layer2]["z"]), array(plain_grid["data"][layer2]["z"]))  # later maps move
    assert np.allclose(array(grid["data"][0]["z"]), 0.0)  # a removed head's weights are 0

    at.radio(key="faith_mode").set_value("uniform").run()
    uniform = bundled.predict(text, edit_attention=knock_out(heads, bundled.model_config, "uniform")).probabilities
    assert bars(at, "faith_ko_probs") == pytest.approx(uniform, abs=1e-9)
    assert np.allclose(array(live_chart(at, "faith_ko_grid")["data"][0]["z"]), 1 / len(SENTENCE))


@pytest.mark.parametrize(("text", "says"), [("xqzzy qqqzz", "none of the words"), ("", "the sentence is empty")])
def test_a_sentence_the_model_cannot_read_is_an_error_not_an_exception(text, says):
    at = page()
    at.text_input(key="faith_text").input(text).run()
    assert not at.exception
    assert len(at.error) == 1 and says in at.error[0].value and " — " in at.error[0].value  # what, then the fix
    assert not [c for c in at.get("plotly_chart") if "faith_scores" in c.proto.id]
    assert at.button(key="faith_report_run")  # the whole-run tab is still there


def test_run_report_shows_its_tables_and_a_second_look_is_instant(bundled, monkeypatch):
    from ui import faithfulness_views

    faithfulness_views._reports.clear()
    at = page()
    assert not [c for c in at.get("plotly_chart") if "faith_report" in c.proto.id]  # not before the click
    assert "Jain & Wallace (2019)" in " ".join(m.value for m in at.markdown)  # WHAT_IT_MEANS
    at.number_input(key="faith_report_n").set_value(6)
    at.button(key="faith_report_run").click().run()
    assert not at.exception and not at.error
    texts, labels = bundled.validation
    expected = run_report(bundled.model, bundled.encoder, bundled.label_names, texts[:6], labels[:6])
    (heads,) = tables(at, HEADS)
    assert len(heads) == 12 and list(heads.index[:2]) == ["1.1", "1.2"]  # 2 layers and the pooling attention, 4 heads each
    assert list(heads.index[-4:]) == POOLING and set(heads["map"][-4:]) == {"pooling"}  # named as the CLI names them
    assert sorted(heads["pruned"]) == list(range(1, 13))  # every head found in the pruning order by its name
    pruned = chart(at, "faith_report_pruning")["data"][0]["x"]
    assert {f"+{h}" for h in POOLING} <= set(pruned) and pruned[0] == "none"
    assert heads["accuracy"].tolist() == pytest.approx(np.ravel(expected.head_accuracy), abs=1e-4)
    sentence_eraser, eraser = tables(at, ERASER)  # in the order of the tabs
    assert not eraser.equals(sentence_eraser)
    assert eraser.loc["Random order", "comprehensiveness ↑"] == pytest.approx(expected.comprehensiveness["random"], abs=1e-4)
    assert len(eraser) == 9  # 8 methods and random
    for key in ("faith_report_heads", "faith_report_pruning", "faith_report_bars", "faith_report_kendall",
                "faith_report_tvd"):
        chart(at, key)
    assert sum(array(chart(at, "faith_report_tvd")["data"][0]["y"])) == 6
    assert f"Shapley values: {expected.shapley}." in [c.value for c in at.caption]  # where exact, where sampled
    assert expected.shapley.startswith("exact (every subset of the words) in the ")

    def not_again(*args, **kwargs):
        raise AssertionError("the report was made again")

    monkeypatch.setattr(faithfulness_views, "run_report", not_again)
    again = AppTest.from_file(PAGE, default_timeout=120)
    again.session_state["faith_report_n__kept"] = 6  # another visitor asking for the same report, without a click
    again.run()
    assert not again.exception
    assert tables(again, HEADS)[0].equals(heads)


@pytest.fixture()
def mean_pooled(bundled, runs_dir):
    """The bundled run with mean pooling instead of its pooling attention (its layers trained, no pooling query),
    saved as "mean-pooled": 2 maps of heads, no layer 3."""
    from attention_core import save_run
    from attention_core.model import AttentionClassifier

    cfg = replace(bundled.model_config, pooling="mean")
    model = AttentionClassifier(cfg).eval()
    def layers(weights: dict) -> dict:
        return {k: v for k, v in weights.items() if not k.startswith("pooling.")}

    model.load_state_dict(layers(bundled.model.state_dict()))
    snapshots = {epoch: layers(weights) for epoch, weights in bundled.snapshots.items()}
    run = replace(bundled, model=model, model_config=cfg, name="mean-pooled", snapshots=snapshots)
    save_run(run, runs_dir / "mean-pooled")
    return run


def test_a_pooling_attention_is_a_method_and_its_heads_can_be_knocked_out(bundled, mean_pooled):
    pooled = bundled  # the bundled model pools by attention
    at = page()
    assert not at.exception and not at.error
    assert "Pooling attention" in chart(at, "faith_scores")["data"][0]["y"]
    assert "score every word with 8 methods" in at.caption[0].value  # the intro counts this model's methods
    heads = at.multiselect(key="faith_heads")
    assert heads.options[-4:] == POOLING and heads.options[:2] == ["1.1", "1.2"]  # the layers', then the pooling query's
    assert "pooling.1 is the pooling attention's head 1" in heads.help
    heads.set_value(POOLING).run()
    assert not at.exception
    assert any(f"{', '.join(POOLING)} off" in m.value for m in at.markdown)
    text = " ".join(SENTENCE)
    off = [(2, h) for h in range(4)]
    expected = pooled.predict(text, edit_attention=knock_out(off, pooled.model_config, "zero")).probabilities
    assert bars(at, "faith_ko_probs") == pytest.approx(expected, abs=1e-9)
    titles = [a["text"] for a in live_chart(at, "faith_ko_grid")["layout"]["annotations"]]
    assert "<b>Pooling · H1 · OFF</b>" in titles and "L2 · H1" in titles

    at.selectbox(key="faith_run").set_value("mean-pooled").run()  # 2 layers and mean pooling
    assert not at.exception and not at.error
    assert at.multiselect(key="faith_heads").options[-1] == "2.4"
    assert "score every word with 7 methods" in at.caption[0].value  # no pooling attention, one method fewer
    assert at.multiselect(key="faith_heads").value == []  # it has no pooling heads: none kept, no error
    assert bars(at, "faith_ko_probs") == pytest.approx(bars(at, "faith_plain_probs"), abs=1e-12)


def test_a_report_over_sentences_the_run_cannot_read_is_an_error_not_an_exception(bundled, runs_dir):
    from attention_core import save_run

    save_run(replace(bundled, validation=(("xqzzy qqqzz", "zzqx"), (0, 1)), name="unreadable"), runs_dir / "unreadable")
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.session_state["active_run"] = "unreadable"
    at.run()
    assert not at.exception and not at.error  # the sentence box holds a readable sentence
    at.button(key="faith_report_run").click().run()
    assert not at.exception
    assert len(at.error) == 1 and "no sentence has a word the run knows" in at.error[0].value
    assert not [c for c in at.get("plotly_chart") if "faith_report" in c.proto.id]


def test_the_report_moves_a_progress_bar_through_both_stages(monkeypatch):
    import streamlit as st

    from ui import faithfulness_views

    faithfulness_views._reports.clear()
    shown: list[tuple[float, str]] = []
    real = st.progress

    class Spy:
        def __init__(self, bar):
            self.bar = bar

        def progress(self, value, text=None):
            shown.append((value, text))
            return self.bar.progress(value, text=text)

        def empty(self):
            return self.bar.empty()

    monkeypatch.setattr(st, "progress", lambda value, text=None: Spy(real(value, text=text)))
    faithfulness_views.last_report_pace.clear()
    at = page()
    before = " ".join(c.value for c in at.caption)
    assert "shown as it runs, measured on this machine" in before and "minute" not in before  # nothing promised
    at.number_input(key="faith_report_n").set_value(3)
    at.button(key="faith_report_run").click().run()
    assert not at.exception and not at.error
    passes = 2 * 12 + 1  # every head on, each of the 12 alone (2 layers and the pooling attention), then the pruning steps
    assert shown[0][0] == 1 / passes  # the time left, measured as it runs (tests/ui/test_faithfulness_views.py)
    assert re.fullmatch(rf"1 of {passes} knock-out passes over the sentences, about \d+ s left for them, then the "
                        "sentences", shown[0][1])
    assert (1.0, f"{passes} of {passes} knock-out passes over the sentences") in shown
    assert shown[-1] == (1.0, "3 of 3 sentences scored by every method")
    assert not at.get("progress")  # gone once the report is shown
    at.number_input(key="faith_report_n").set_value(2).run()  # another size: not made yet, so the caption again
    after = " ".join(c.value for c in at.caption)
    assert re.search(r"The last report on this server took \d+ s for 3 sentences: about \d+ s for 2", after), after
