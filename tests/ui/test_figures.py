"""ui.figures: the live training chart (updated in place, it must show exactly what a fresh one would), the app's
template, the length histogram and the time-lapse."""

from __future__ import annotations

import json

import numpy as np
import plotly.io as pio
import pytest

from attention_core.training import EpochRecord
from ui import figures


def epochs(n: int, val: bool = True) -> list[EpochRecord]:
    return [EpochRecord(i, 1 / i, 1 - 1 / (i + 1), 1.2 / i if val else None, 0.9 - 1 / (i + 2) if val else None, i, 100.0)
            for i in range(1, n + 1)]


def spec(fig) -> dict:
    return json.loads(pio.to_json(fig, validate=False))


def test_live_curves_match_a_fresh_figure_at_every_poll():
    live = figures.LiveTrainingCurves()
    first = live(epochs(1), [0.9, 0.8])
    for n in (1, 2, 5, 61, 62):  # 61: past 60 epochs the markers go (the figure is rebuilt)
        losses = [1 / (k + 1) for k in range(3 * n)]
        got = live(epochs(n), losses)
        assert spec(got) == spec(figures.training_curves(epochs(n), losses))
    assert got is not first  # the set of lines changed on the way


def test_live_curves_update_the_same_figure_while_its_lines_stay_the_same():
    live = figures.LiveTrainingCurves()
    a = live(epochs(2), [0.5] * 4)
    b = live(epochs(3), [0.5] * 6)
    assert a is b
    assert [t.name for t in b.data] == ["step loss", "train loss", "validation loss", "validation accuracy", "train accuracy"]
    assert list(b.data[1].x) == [1, 2, 3]


def test_live_curves_draw_a_growing_history_up_to_the_steps_taken_under_its_lock():
    live = figures.LiveTrainingCurves()
    losses = [1 / (k + 1) for k in range(9)]  # the job's list: more steps arrived after its status was read
    got = live(epochs(2), losses, steps=6)
    assert spec(got) == spec(figures.training_curves(epochs(2), losses[:6]))


def test_an_epoch_cut_short_is_drawn_at_its_share_with_its_steps():
    """A time budget ended the only epoch at step 33 of 75: its points at 0.44, the step losses spread over 0–0.44
    (they were drawn at "epoch 1" and across 0–1, as if the epoch had finished)."""
    cut = [EpochRecord(1, 0.6, 0.7, 0.65, 0.68, 60.0, 35.0, share=0.44)]
    fig = figures.training_curves(cut, [0.7] * 33)
    lines = {t.name: t for t in fig.data}
    assert list(lines["train loss"].x) == list(lines["validation accuracy"].x) == [0.44]
    assert max(lines["step loss"].x) == pytest.approx(0.44) and len(lines["step loss"].x) == 33
    whole = epochs(2) + [EpochRecord(3, 0.3, 0.9, 0.4, 0.8, 3, 100.0, share=0.5)]
    assert list(figures.training_curves(whole, [0.5] * 5).data[1].x) == [1, 2, 2.5]
    assert list(figures.compare_curves({"a": whole}).data[0].x) == [1, 2, 2.5]
    assert list(figures.loss_curve(whole).data[0].x) == [1, 2, 2.5]


def test_live_curves_rebuild_when_validation_lines_appear_or_go():
    live = figures.LiveTrainingCurves()
    with_val = live(epochs(3), [0.5] * 3)
    without = live(epochs(3, val=False), [0.5] * 3)
    assert without is not with_val
    assert [t.name for t in without.data] == ["step loss", "train loss", "train accuracy"]


def test_the_app_template_is_plotly_white_for_every_chart_kind_the_app_draws():
    """The template keeps only what the app's charts use: each kind of trace they draw, plotly_white's look."""

    w = np.full((3, 3), 1 / 3)
    drawn = [
        figures.attention_heatmap(w, ["a", "b", "c"], title="t"),
        figures.attention_grid(np.stack([np.stack([w, w])]), ["a", "b", "c"]),
        figures.probability_bars({"neg": 0.3, "pos": 0.7}, predicted="pos"),
        figures.training_curves(epochs(3), [0.9, 0.8]),
        figures.confusion_heatmap([[3, 1], [0, 4]], ["neg", "pos"]),
        figures.class_balance({"neg": 3, "pos": 4}),
        figures.length_histogram([3, 5, 8], limit=64),
        figures.token_scores(["a", "b"], {"s": [0.1, -0.2]}),
        figures.matrix_table(w, ["a", "b", "c"], ["x", "y", "z"]),
    ]
    template = pio.templates[figures.TEMPLATE]
    white = pio.templates["plotly_white"]
    for fig in drawn:
        layout = spec(fig)["layout"]
        assert layout["template"] == json.loads(json.dumps(template.to_plotly_json()))  # the app's, not plotly's default
        for trace in fig.data:
            assert trace.type in template.data.to_plotly_json()  # styled like plotly_white
            if trace.type == "heatmap":
                assert trace.colorscale is not None  # the template no longer brings one
    for key in ("paper_bgcolor", "plot_bgcolor", "font", "colorway", "xaxis", "yaxis"):
        assert template.layout[key] == white.layout[key]
    assert len(json.dumps(template.to_plotly_json())) < len(json.dumps(white.to_plotly_json())) / 2


def test_length_histogram_fits_short_sentences_and_names_the_limit_they_stay_under():
    fig = figures.length_histogram([3, 5, 8, 8], limit=64)
    low, high = fig.layout.xaxis.range
    assert low < 0 < 8 < high <= 10  # fitted to the data, not stretched to the limit at 64
    assert not fig.layout.shapes  # no line out beyond the bars
    assert "none over the limit, 64" in fig.layout.title.text
    counts = np.histogram([3, 5, 8, 8], bins=np.arange(fig.data[0].xbins.start, high + 1, fig.data[0].xbins.size))[0]
    assert counts.max() == 2 and counts.sum() == 4  # one token per bar: 8 twice


def test_length_histogram_marks_the_limit_where_rows_exceed_it():
    lengths = list(range(1, 121))  # 56 rows longer than 64 tokens
    fig = figures.length_histogram(lengths, limit=64)
    assert fig.layout.xaxis.range[1] >= 120
    (line,) = fig.layout.shapes
    assert line.x0 == line.x1 == 64.5 and line.line.dash == "dash"
    assert fig.layout.annotations[0].text == "truncated beyond 64: 56 rows"
    assert fig.data[0].xbins.size == 4  # at most ~40 bars of whole tokens


def lapse_inputs(n: int, t: int = 3) -> tuple[list[int], list[np.ndarray], list[list[str]], list[dict[str, float]]]:
    rng = np.random.default_rng(0)
    maps = [rng.dirichlet(np.ones(t), size=t) for _ in range(n)]
    probs = [{"neg": 1 - e / (n + 1), "pos": e / (n + 1)} for e in range(n)]
    return list(range(n)), maps, [["a", "b", "c"][:t]] * n, probs


def test_time_lapse_has_a_frame_per_epoch_that_changes_the_map_the_bars_the_cursor_and_the_title():
    epochs, maps, tokens, probs = lapse_inputs(5)
    fig = figures.attention_time_lapse(epochs, maps, tokens, probs, kept=[0, 2, 4], model_epoch=2)
    assert [f.name for f in fig.frames] == ["0", "1", "2", "3", "4"]
    for frame, w, p in zip(fig.frames, maps, probs, strict=True):
        heatmap, bars, cursor = frame.data
        assert np.array_equal(heatmap.z, w) and list(bars.x) == [p["neg"], p["pos"]]
        assert list(cursor.x) == [int(frame.name)] * 2
        best = max(p, key=p.get)
        assert frame.layout.title.text == f"<b>Epoch {frame.name}</b> · prediction: {best} ({p[best]:.0%})"
    moving = fig.frames[0].traces
    assert [fig.data[i].type for i in moving] == ["heatmap", "bar", "scatter"]
    assert np.array_equal(fig.data[0].z, maps[2]) and fig.layout.sliders[0].active == 2  # opens on the run's model
    assert list(fig.data[fig.frames[0].traces[2]].x) == [2, 2]  # the cursor at its epoch
    assert [list(s.args[0]) for s in fig.layout.sliders[0].steps] == [["0"], ["1"], ["2"], ["3"], ["4"]]
    # Evenly spaced epochs: the epoch strip above the slider lines up with its steps and names the kept epochs.
    assert [s.label for s in fig.layout.sliders[0].steps] == [""] * 5
    strip = fig.layout.xaxis3
    assert list(strip.tickvals) == [0, 2, 4] and list(strip.ticktext) == ["0", "2★", "4"]
    assert strip.range[0] < 0 < 4 < strip.range[1] < 4.2 and (fig.layout.sliders[0].x, fig.layout.sliders[0].len) == (0, 1)
    marks = {t.name: list(t.customdata) for t in fig.data if t.name in ("weights kept", "the run's model")}
    assert marks == {"weights kept": [0, 4], "the run's model": [2]}
    play, pause = fig.layout.updatemenus[0].buttons
    assert play.args[0] is None and play.args[1]["frame"]["redraw"] and list(pause.args[0]) == [None]
    assert 5 * play.args[1]["frame"]["duration"] <= 6000  # a whole training in a few seconds


def test_time_lapse_spaces_uneven_epochs_by_their_values_and_opens_on_the_runs_model():
    """Kept at epochs 0, 2, 5, 7, 8, 10, 12: the strip was drawn over frame numbers, the gaps hidden, and the figure
    opened on the last epoch while the page showed the run's model (epoch 8)."""
    epochs = [0, 2, 5, 7, 8, 10, 12]
    _, maps, tokens, probs = lapse_inputs(len(epochs))
    fig = figures.attention_time_lapse(epochs, maps, tokens, probs, kept=epochs, model_epoch=8)
    assert fig.layout.sliders[0].active == 4 and np.array_equal(fig.data[0].z, maps[4])
    assert fig.layout.title.text.startswith("<b>Epoch 8</b>")
    lines = [t for t in fig.data if t.type == "scatter" and t.name in ("neg", "pos")]
    assert all(list(t.x) == epochs for t in lines)  # by the epochs' values
    assert [list(f.data[2].x) for f in fig.frames] == [[e, e] for e in epochs]  # the cursor at each epoch
    strip = fig.layout.xaxis3
    assert list(strip.tickvals) == epochs and strip.range[0] < 0 and 12 < strip.range[1] < 12.2
    # The slider's steps are evenly spaced, so each names its epoch.
    assert [s.label for s in fig.layout.sliders[0].steps] == ["0", "2", "5", "7", "8★", "10", "12"]
    later = figures.attention_time_lapse(epochs, maps, tokens, probs, kept=epochs, model_epoch=8, start=2)
    assert later.layout.sliders[0].active == 1  # a link's epoch comes first
    unknown = figures.attention_time_lapse(epochs, maps, tokens, probs, model_epoch=9)
    assert unknown.layout.sliders[0].active == 6  # no frame of the run's model: the last


def test_time_lapse_without_probabilities_or_kept_weights():
    epochs, maps, tokens, _ = lapse_inputs(3)
    fig = figures.attention_time_lapse(epochs, maps, tokens)
    assert [t.type for t in fig.data] == ["heatmap"]
    assert fig.frames[1].layout.title.text == "<b>Epoch 1</b>"
    assert [s.label for s in fig.layout.sliders[0].steps] == ["0", "1", "2"]  # no strip, nothing kept: the slider names them
    marked = figures.attention_time_lapse(epochs, maps, tokens, kept=[0, 2], model_epoch=2)
    assert [s.label for s in marked.layout.sliders[0].steps] == ["0", "", "2★"]
    single = figures.attention_time_lapse(epochs[:1], maps[:1], tokens[:1])
    assert not single.layout.sliders and not single.layout.updatemenus  # one epoch: nothing to play


def test_time_lapse_frames_draw_the_map_and_the_bars_as_the_single_figures_do():
    epochs, maps, tokens, probs = lapse_inputs(4)
    tokens = [["the", "cat", "the"]] * 4  # a repeated token, made unique the same way in both
    fig = figures.attention_time_lapse(epochs, maps, tokens, probs)
    for frame, w, p in zip(fig.frames, maps, probs, strict=True):
        heatmap, bars, _ = (t.to_plotly_json() for t in frame.data)
        single = figures.attention_heatmap(w, tokens[0]).data[0].to_plotly_json()
        heatmap.pop("colorbar"), single.pop("colorbar")  # placed beside the map in the time-lapse's own layout
        assert json.dumps(heatmap, default=list, sort_keys=True) == json.dumps(single, default=list, sort_keys=True)
        best = max(p, key=p.get)
        single_bars = figures.probability_bars(p, predicted=best).data[0]
        assert (list(bars["x"]), list(bars["y"]), bars["marker"], bars["hovertemplate"]) == (
            list(single_bars.x), list(single_bars.y), single_bars.marker.to_plotly_json(), single_bars.hovertemplate)
        assert list(bars["text"]) == [f"{k} {v:.1%}" for k, v in p.items()]  # the strip's bars name their class


def test_attention_heatmap_writes_values_in_small_maps_only():
    small = figures.attention_heatmap(np.full((12, 12), 1 / 12), [f"w{i}" for i in range(12)]).data[0]
    large = figures.attention_heatmap(np.full((13, 13), 1 / 13), [f"w{i}" for i in range(13)]).data[0]
    assert small.texttemplate == "%{z:.2~f}" and small.text is None  # written by plotly from z: no copy of the map
    assert large.texttemplate is None


def test_time_lapse_refuses_lists_that_do_not_match():
    epochs, maps, tokens, probs = lapse_inputs(3)
    with pytest.raises(ValueError, match="3 epochs, 2 maps"):
        figures.attention_time_lapse(epochs, maps[:2], tokens, probs)


def test_attention_grid_labels_tokens_once_per_row_and_column_of_maps():
    """Token labels under the last row of maps and left of the first column only: elsewhere they ran
    into the titles below them and the maps to their left (Home's grid, issue 12)."""
    n_layers, n_heads = 2, 4
    fig = figures.attention_grid(np.full((n_layers, n_heads, 3, 3), 1 / 3), ["a", "b", "c"])
    cols = n_heads + 1
    for i in range(n_layers * cols):
        row, col = divmod(i, cols)
        x, y = fig.layout[f"xaxis{i + 1 if i else ''}"], fig.layout[f"yaxis{i + 1 if i else ''}"]
        assert x.showticklabels == (row == n_layers - 1), (row, col)
        assert y.showticklabels == (col == 0), (row, col)



def test_figures_take_the_app_template_whatever_the_default_was(monkeypatch):
    """Importing Streamlit makes its own template plotly's default; the app's figures still get the app's
    (each figure function makes it the default while it builds, instead of naming it per figure)."""
    import streamlit  # noqa: F401  — registers its template, as in the app

    from ui import explainer_figures, faithfulness_figures

    ours = json.loads(json.dumps(pio.templates[figures.TEMPLATE].to_plotly_json()))
    w = np.full((3, 3), 1 / 3)
    for make in (lambda: figures.attention_heatmap(w, ["a", "b", "c"]),
                 lambda: explainer_figures.blue_matrix(w, ["a", "b", "c"], ["x", "y", "z"]),
                 lambda: faithfulness_figures.pruning_curve(["none", "1.1"], [0.9, 0.8])):
        monkeypatch.setattr(pio.templates, "default", "streamlit")  # what `import streamlit` does
        assert spec(make())["layout"]["template"] == ours


def test_a_probability_axis_spans_0_to_100_percent_with_a_line_every_25():
    """Left to plotly, Home's narrow bars showed only 0 % and 50 % (its 100 % label, cut off at the edge, hidden)."""
    bars = figures.probability_bars({"neg": 0.3, "pos": 0.7}, predicted="pos")
    _, maps, tokens, probs = lapse_inputs(2)
    lapse = figures.attention_time_lapse([0, 1], maps, tokens, probs)
    for axis in (bars.layout.xaxis, lapse.layout.xaxis2):  # the time-lapse's bars beside its map
        assert list(axis.range) == [0, 1] and list(axis.tickvals) == [0, 0.25, 0.5, 0.75, 1]
        assert list(axis.ticktext) == ["0%", "", "50%", "", "100%"]
    assert bars.layout.margin.r >= 20  # room for half of the "100%" label at the right edge


def test_a_wide_grid_of_twelve_heads_has_near_square_maps_titled_layer_dot_head_and_no_words_under_them():
    """A pretrained encoder's 6 × 12 heads and their averages: "L1 · H10" titles ran into each other at 1024 px and
    each map was a narrow strip 230 px tall (seen in Chromium)."""
    attention = np.random.default_rng(0).dirichlet(np.ones(9), size=(6, 12, 9))
    tokens = ["[CLS]", "the", "food", "was", "not", "good", "at", "all", "[SEP]"]
    fig = figures.selectable_attention_grid(attention, tokens)
    titles = [a.text for a in fig.layout.annotations]
    assert len(titles) == 6 * 13 and titles[:2] == ["1.1", "1.2"] and titles[12] == "1 avg" and titles[-1] == "6 avg"
    assert fig.layout.height == 6 * figures.WIDE_CELL + 60
    assert not any(ax.get("showticklabels") for name, ax in fig.layout.to_plotly_json().items() if name.startswith("xaxis"))
    small = figures.attention_grid(attention[:2, :4], tokens)  # the small model's grid is as it was
    assert [a.text for a in small.layout.annotations][:2] == ["L1 · H1", "L1 · H2"] and small.layout.height == 2 * 230 + 60
