"""The Faithfulness page's charts: plotly ``go.Figure`` builders, no Streamlit (the page places them).

Every builder takes the plain lists of :class:`~attention_core.faithfulness.SentenceLab` and
:class:`~attention_core.faithfulness.RunReport` (method name → values), so a chart is drawn from
exactly what the CLI prints as JSON.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ui.figures import WIDE_GRID, _dedupe, attention_grid, themed

RANDOM = "random"
_RANDOM_LINE = {"color": "#555", "dash": "dash", "width": 2}


def method_title(name: str, titles: Mapping[str, str]) -> str:
    """A method's title for people ("Random order" for the random baseline)."""
    return "Random order" if name == RANDOM else titles.get(name, name)


@themed
def method_scores(tokens: Sequence[str], scores: Mapping[str, Sequence[float]], titles: Mapping[str, str]) -> go.Figure:
    """Methods × tokens, each row divided by its largest |score| (−1…1: red pushes towards the
    predicted class, blue against it); the raw score on hover."""
    names = list(scores)
    raw = np.array([np.asarray(scores[n], dtype=float) for n in names])  # (M, T)
    scale = np.abs(raw).max(axis=1, keepdims=True)
    z = raw / np.where(scale > 0, scale, 1.0)
    rows = [method_title(n, titles) for n in names]
    fig = go.Figure(go.Heatmap(
        z=z, x=_dedupe(tokens), y=rows, customdata=raw, zmin=-1, zmax=1, zmid=0, colorscale="RdBu_r",
        texttemplate="%{z:.2f}" if z.size <= 240 else None,
        colorbar={"title": {"text": "share of the<br>row's largest", "side": "right"}, "thickness": 12},
        hovertemplate="<b>%{y}</b><br>%{x}: %{customdata:.4g} (%{z:.2f} of the row's largest)<extra></extra>",
    ))
    fig.update_layout(height=110 + 38 * len(names), margin={"l": 10, "r": 10, "t": 60, "b": 10},
                      xaxis={"side": "top", "tickangle": -45}, yaxis={"autorange": "reversed"})
    return fig


@themed
def kendall_matrix(tau: Sequence[Sequence[float | None]], names: Sequence[str], titles: Mapping[str, str]) -> go.Figure:
    """Kendall's τ between every pair of methods' token rankings (−1…1; blank where undefined)."""
    v = np.array([[np.nan if x is None else x for x in row] for row in tau], dtype=float)
    labels = [method_title(n, titles) for n in names]
    fig = go.Figure(go.Heatmap(
        z=v, x=labels, y=labels, zmin=-1, zmax=1, zmid=0, colorscale="RdBu_r", texttemplate="%{z:.2f}",
        colorbar={"title": "τ", "thickness": 12},
        hovertemplate="%{y} vs %{x}: τ = %{z:.3f}<extra></extra>",
    ))
    fig.update_layout(height=140 + 42 * len(names), margin={"l": 10, "r": 10, "t": 10, "b": 10},
                      yaxis={"autorange": "reversed"}, xaxis={"tickangle": -45})
    return fig


@themed
def erasure_curves(deletion: Mapping[str, Sequence[float]], insertion: Mapping[str, Sequence[float]],
                   titles: Mapping[str, str], label: str) -> go.Figure:
    """Deletion (top-k words removed) and insertion (only the top k kept) curves of p(label) against k,
    one line per method and the random order dashed."""
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.06,
                        subplot_titles=("Deletion: the top k words removed<br>(faithful: falls fast)",
                                        "Insertion: only the top k words kept<br>(faithful: rises fast)"))
    colours = iter(["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"])
    for name in deletion:
        line = _RANDOM_LINE if name == RANDOM else {"color": next(colours), "width": 2}
        for col, curve in ((1, deletion[name]), (2, insertion[name])):
            fig.add_trace(go.Scatter(x=list(range(len(curve))), y=list(curve), mode="lines+markers", line=line,
                                     marker={"size": 4}, name=method_title(name, titles), legendgroup=name,
                                     showlegend=col == 1,
                                     hovertemplate=f"{method_title(name, titles)}<br>k = %{{x}}: p = %{{y:.3f}}<extra></extra>"),
                          row=1, col=col)
    fig.update_xaxes(title="k words", dtick=1 if len(next(iter(deletion.values()), [])) <= 20 else None)
    fig.update_yaxes(title=f"p({label})", range=[0, 1.02], row=1, col=1)
    fig.update_layout(height=400, margin={"l": 10, "r": 10, "t": 60, "b": 10},
                      legend={"orientation": "h", "y": -0.25})
    return fig


@themed
def knocked_out_grid(attention: np.ndarray, tokens: Sequence[str], off: Sequence[tuple[int, int]], *,
                     pooling: bool = False) -> go.Figure:
    """:func:`~ui.figures.attention_grid` of every map (L or L + 1, H, T, T) with the heads in ``off``
    (0-based) marked in their titles ("L1 · H2 · OFF"); ``pooling``: the last row is a pooling
    attention's (drawn one row each)."""
    fig = attention_grid(attention, tokens, pooling=pooling)
    cols = attention.shape[1] + 1
    wide = cols > WIDE_GRID  # its maps too narrow for "1.2 · OFF" (it ran into the next title): framed in red instead
    for i, annotation in enumerate(fig.layout.annotations):  # subplot titles, row by row
        layer, head = divmod(i, cols)
        if (layer, head) in off:
            annotation.text = f"<b>{annotation.text}</b>" if wide else f"<b>{annotation.text} · OFF</b>"
            annotation.font.color = "#d62728"  # (its size stays the subplot titles')
            if wide:
                n = "" if i == 0 else i + 1  # the subplot's axes: x, x2, x3, … row by row
                fig.add_shape(type="rect", xref=f"x{n} domain", yref=f"y{n} domain", x0=0, x1=1, y0=0, y1=1,
                              line={"color": "#d62728", "width": 3})
    return fig


@themed
def head_accuracy(accuracy: Sequence[Sequence[float]], baseline: float, names: Sequence[str]) -> go.Figure:
    """Layer × head: the accuracy with that head alone knocked out, coloured by its change from
    ``baseline`` (red: worse without it, blue: better, white: the model does not need it)."""
    a = np.asarray(accuracy, dtype=float)
    change = a - baseline
    lim = max(float(np.abs(change).max()), 0.01)
    fig = go.Figure(go.Heatmap(
        z=change, x=[f"head {h + 1}" for h in range(a.shape[1])], y=list(names), customdata=a,
        colorscale="RdBu", zmid=0, zmin=-lim, zmax=lim,
        text=[[f"{v:.1%}<br>({d:+.1%})" for v, d in zip(row, drow, strict=True)] for row, drow in zip(a, change, strict=True)],
        texttemplate="%{text}", colorbar={"title": {"text": "change in<br>accuracy", "side": "right"}, "tickformat": "+.0%",
                                          "thickness": 12},
        hovertemplate="%{y}, %{x} off: accuracy %{customdata:.2%} (%{z:+.2%})<extra></extra>",
    ))
    fig.update_layout(height=120 + 60 * a.shape[0], margin={"l": 10, "r": 10, "t": 10, "b": 10},
                      yaxis={"autorange": "reversed"}, xaxis={"side": "top"})
    return fig


@themed
def pruning_curve(order: Sequence[str], accuracy: Sequence[float]) -> go.Figure:
    """Accuracy as heads are switched off one after another, least important first."""
    x = ["none", *(f"+{h}" for h in order)]
    fig = go.Figure(go.Scatter(x=x, y=list(accuracy), mode="lines+markers", line={"color": "#1f77b4", "width": 2},
                               hovertemplate="%{x}: accuracy %{y:.2%}<extra></extra>"))
    fig.update_layout(height=320, margin={"l": 10, "r": 10, "t": 10, "b": 10},
                      xaxis={"title": "heads switched off (in this order, adding one each step)", "type": "category"},
                      yaxis={"title": "accuracy", "tickformat": ".0%", "range": [0, 1.02]})
    return fig


@themed
def faithfulness_bars(comprehensiveness: Mapping[str, float], sufficiency: Mapping[str, float],
                      titles: Mapping[str, str]) -> go.Figure:
    """Per method (and the random order): mean comprehensiveness and sufficiency, side by side."""
    names = list(comprehensiveness)
    labels = [method_title(n, titles) for n in names]
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.04,
                        subplot_titles=("Comprehensiveness<br>(higher: the model<br>relies on those words)",
                                        "Sufficiency<br>(lower: those words alone<br>keep the prediction)"))
    colour = ["#888" if n == RANDOM else "#1f77b4" for n in names]
    for col, values in ((1, comprehensiveness), (2, sufficiency)):
        v = [values[n] for n in names]
        fig.add_trace(go.Bar(x=v, y=labels, orientation="h", marker_color=colour, text=[f"{x:.3f}" for x in v],
                             textposition="auto", showlegend=False, hovertemplate="%{y}: %{x:.4f}<extra></extra>"),
                      row=1, col=col)
    fig.update_layout(height=160 + 32 * len(names), margin={"l": 10, "r": 10, "t": 80, "b": 10},
                      yaxis={"autorange": "reversed"})
    return fig


@themed
def tvd_histogram(edges: Sequence[float], counts: Sequence[float]) -> go.Figure:
    """Jain & Wallace's test: how many sentences' outputs move by each total variation distance when
    the last layer's attention is shuffled."""
    e = np.asarray(edges, dtype=float)
    centres, widths = (e[:-1] + e[1:]) / 2, np.diff(e)
    fig = go.Figure(go.Bar(x=centres, y=list(counts), width=widths, marker_color="#1f77b4",
                           customdata=np.stack([e[:-1], e[1:]], axis=1),
                           hovertemplate="TVD %{customdata[0]:.3f}–%{customdata[1]:.3f}: %{y} sentences<extra></extra>"))
    fig.update_layout(height=300, margin={"l": 10, "r": 10, "t": 10, "b": 10}, bargap=0.05,
                      xaxis={"title": "total variation distance between the outputs (0: unchanged, 1: nothing in common)"},
                      yaxis={"title": "sentences"})
    return fig
