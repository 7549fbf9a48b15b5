"""The live training chart: updated in place, it must show exactly what a fresh one would."""

from __future__ import annotations

import json

import plotly.io as pio

from ui import figures


def epochs(n: int, val: bool = True) -> list[dict]:
    return [{"epoch": i, "train_loss": 1 / i, "train_accuracy": 1 - 1 / (i + 1),
             "val_loss": 1.2 / i if val else None, "val_accuracy": 0.9 - 1 / (i + 2) if val else None}
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


def test_live_curves_rebuild_when_validation_lines_appear_or_go():
    live = figures.LiveTrainingCurves()
    with_val = live(epochs(3), [0.5] * 3)
    without = live(epochs(3, val=False), [0.5] * 3)
    assert without is not with_val
    assert [t.name for t in without.data] == ["step loss", "train loss", "train accuracy"]


def test_the_app_template_is_plotly_white_for_every_chart_kind_the_app_draws():
    """The template keeps only what the app's charts use: each kind of trace they draw, plotly_white's look."""
    import numpy as np

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
