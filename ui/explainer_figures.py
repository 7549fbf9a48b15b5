"""Plotly builders for the explainer pages (self-attention, cross-attention and masks). No streamlit here.

They build on :mod:`ui.figures` (``matrix_table``, ``attention_heatmap``) and add what the
explainers need: a highlighted query row, tables that show ``inf`` and ``nan`` as such, the
√d_k curves, a shape diagram and masked cells drawn in grey.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ui.figures import attention_heatmap, matrix_table, themed

HIGHLIGHT = "#ff7f0e"
UNSCALED, SCALED = "#d62728", "#1f77b4"


@themed
def matrix(values: np.ndarray, rows: Sequence[str], cols: Sequence[str], *, title: str = "", highlight: int | None = None,
           colorscale: str = "RdBu", symmetric: bool = True, zmin: float | None = None, zmax: float | None = None) -> go.Figure:
    """:func:`ui.figures.matrix_table` (values to 4 decimals) sized to its rows, with row ``highlight`` outlined."""
    v = np.asarray(values, dtype=float)
    fig = matrix_table(v, rows, cols, title=title, colorscale=colorscale, symmetric=symmetric)
    fig.update_traces(text=[[f"{x:.4f}" for x in row] for row in v], textfont={"size": 12})  # 1.4950, not 1.495
    if zmin is not None or zmax is not None:
        fig.update_traces(zmin=zmin, zmax=zmax, zmid=None)
    turned = sum(len(c) + 2 for c in cols) > 44  # column names that would run into each other side by side
    fig.update_layout(height=34 * v.shape[0] + (75 if title else 45) + (25 if turned else 0),
                      margin={"t": 60 if title else 30}, title={"font": {"size": 14}},
                      xaxis={"tickfont": {"size": 12}, **({"tickangle": -45} if turned else {})},
                      yaxis={"tickfont": {"size": 12}})
    if highlight is not None:
        fig.add_shape(type="rect", x0=-0.5, x1=v.shape[1] - 0.5, y0=highlight - 0.5, y1=highlight + 0.5,
                      line={"color": HIGHLIGHT, "width": 3})
    return fig


@themed
def blue_matrix(values: np.ndarray, rows: Sequence[str], cols: Sequence[str], **kwargs) -> go.Figure:
    """:func:`matrix` in one-sided blues, for scores and weights (keyword arguments as for :func:`matrix`)."""
    return matrix(values, rows, cols, colorscale="Blues", symmetric=False, **kwargs)


@themed
def number_table(values: Mapping[str, Sequence[float]], cols: Sequence[str], *, decimals: int = 4) -> go.Figure:
    """One row per entry of ``values``; ``inf`` and ``nan`` are written out and shown in red.

    A last column gives each row's sum (what a normalisation should make 1).
    """
    names = list(values)
    data = np.array([np.asarray(values[n], dtype=float) for n in names])  # (rows, cols)
    with np.errstate(invalid="ignore", over="ignore"):
        sums = data.sum(axis=1)
    cells = np.column_stack([data, sums])

    def fmt(x: float) -> str:
        if np.isfinite(x) and x != 0 and abs(x) < 10.0**-decimals:
            return f"{x:.1e}"  # tiny but not zero: say so instead of printing 0.0000
        return f"{x:.{decimals}f}"

    text = [[fmt(x) for x in row] for row in cells.T]  # go.Table wants columns
    fill = [["#fde0dd" if not np.isfinite(x) else "white" for x in row] for row in cells.T]
    font = [["#b2182b" if not np.isfinite(x) else "#222" for x in row] for row in cells.T]
    fig = go.Figure(go.Table(
        header={"values": ["", *cols, "sum"], "fill_color": "#f0f2f6", "align": "center", "font": {"size": 13}},
        cells={"values": [names, *text], "fill_color": [["white"] * len(names), *fill], "align": ["left", "center"],
               "font": {"color": [["#222"] * len(names), *font], "size": 13}, "height": 28},
        columnwidth=[max(2.0, max(map(len, names)) / 5)] + [1] * (len(cols) + 1),  # (names on one line)
    ))  # fmt: skip
    fig.update_layout(height=20 + 30 * (len(names) + 1), margin={"l": 0, "r": 0, "t": 4, "b": 0})
    return fig


@themed
def sqrt_dk_figure(dims: Sequence[int], curves: Mapping[str, tuple[Sequence[float], Sequence[float]]], *,
                   n_keys: int) -> go.Figure:
    """Three panels over d (log axis): each entry of ``curves`` is (unscaled, scaled) values per d.

    ``curves`` has the keys ``"std"``, ``"entropy"`` and ``"grad"``; reference lines show √d
    and the entropy of uniform weights, ln(n_keys).
    """
    d = np.asarray(dims, dtype=float)
    titles = ("spread of the softmax<br>inputs (std)", f"entropy of the weights<br>over {n_keys} keys",
              "size of the softmax<br>gradient ‖J‖")  # (on two lines: three panels side by side)
    fig = make_subplots(rows=1, cols=3, subplot_titles=titles, horizontal_spacing=0.07)
    for col, key in enumerate(("std", "entropy", "grad"), start=1):
        unscaled, scaled = curves[key]
        for name, y, color in (("q·k (unscaled)", unscaled, UNSCALED), ("q·k / √d (scaled)", scaled, SCALED)):
            fig.add_trace(go.Scatter(x=d, y=np.asarray(y, dtype=float), name=name, legendgroup=name, showlegend=col == 1,
                                     mode="lines+markers", line={"color": color}, marker={"size": 5},
                                     hovertemplate="d = %{x}<br>%{y:.3f}<extra>" + name + "</extra>"), row=1, col=col)
    fig.add_trace(go.Scatter(x=d, y=np.sqrt(d), name="√d", mode="lines", line={"color": "#222", "dash": "dash", "width": 1.5},
                             hovertemplate="√%{x} = %{y:.2f}<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Scatter(x=d, y=np.full_like(d, np.log(n_keys)), name=f"uniform weights: ln {n_keys}", mode="lines",
                             line={"color": "#888", "dash": "dot"}, hoverinfo="skip"), row=1, col=2)
    ticks = [t for t in (2, 8, 32, 128, 512) if d.min() <= t <= d.max()]
    fig.update_xaxes(type="log", title="d (dimension of q and k)", tickvals=ticks, ticktext=[str(t) for t in ticks])
    fig.update_yaxes(type="log", tickvals=[0.5, 1, 2, 4, 8, 16, 32], row=1, col=1)
    fig.update_yaxes(rangemode="tozero", row=1, col=2)
    fig.update_yaxes(rangemode="tozero", row=1, col=3)
    fig.update_layout(height=420, margin={"l": 10, "r": 10, "t": 60, "b": 10},
                      legend={"orientation": "h", "y": -0.22, "x": 0})
    return fig


@themed
def softmax_bars(unscaled: Sequence[float], scaled: Sequence[float], *, d: int) -> go.Figure:
    """One query's weights over its keys, unscaled vs scaled, at dimension d."""
    keys = [f"k{j + 1}" for j in range(len(unscaled))]
    fig = go.Figure()
    for name, y, color in (("unscaled", unscaled, UNSCALED), ("scaled by 1/√d", scaled, SCALED)):
        fig.add_trace(go.Bar(x=keys, y=np.asarray(y, dtype=float), name=name, marker_color=color,
                             hovertemplate="%{x}: %{y:.4f}<extra>" + name + "</extra>"))
    fig.update_layout(barmode="group", height=280, title={"text": f"one query, d = {d}", "font": {"size": 14}},
                      margin={"l": 10, "r": 10, "t": 40, "b": 10}, yaxis={"title": "weight", "range": [0, 1.02]},
                      legend={"orientation": "h", "y": 1.12, "x": 1, "xanchor": "right"})
    return fig


# Where each box of the cross-attention diagram sits, what it is, and its symbolic shape (seed 004's names).
_DIAGRAM = {
    "X": (0.7, 4.2, "input", "l × d_x"),
    "Z": (0.7, 1.5, "input", "n × d_z"),
    "W_Q": (2.7, 4.2, "weight", "d_x × d_q"),
    "W_K": (2.7, 2.5, "weight", "d_z × d_q"),
    "W_V": (2.7, 0.5, "weight", "d_z × d"),
    "Q": (4.7, 4.2, "tensor", "l × d_q"),
    "K": (4.7, 2.5, "tensor", "n × d_q"),
    "V": (4.7, 0.5, "tensor", "n × d"),
    "scores": (6.7, 3.35, "tensor", "l × n"),
    "weights": (8.7, 3.35, "attention", "l × n"),
    "output": (10.7, 1.9, "attention", "l × d"),
}
_TITLES = {"scores": "Q Kᵀ / √d_q", "weights": "softmax", "output": "weights · V"}
_ARROWS = [("X", "W_Q"), ("W_Q", "Q"), ("Z", "W_K"), ("Z", "W_V"), ("W_K", "K"), ("W_V", "V"), ("Q", "scores"),
           ("K", "scores"), ("scores", "weights"), ("weights", "output"), ("V", "output")]
_COLORS = {"input": "#eef1f6", "weight": "#fff1dc", "tensor": "#e3eefa", "attention": "#e2f3e4"}


def _sub(text: str) -> str:
    """W_Q → W<sub>Q</sub>, d_x → d<sub>x</sub>."""
    return re.sub(r"_(\w+)", r"<sub>\1</sub>", text)


@themed
def shape_diagram(shapes: Mapping[str, Sequence[int]]) -> go.Figure:
    """Seed 004's cross-attention as boxes and arrows, each box with its real shape.

    ``shapes`` maps X, Z, W_Q, W_K, W_V, Q, K, V, scores, weights, output to a tensor shape.
    """
    w, h = 1.45, 0.95
    fig = go.Figure()
    for name, (x, y, kind, symbolic) in _DIAGRAM.items():
        real = " × ".join(str(n) for n in shapes[name])
        fig.add_shape(type="rect", x0=x - w / 2, x1=x + w / 2, y0=y - h / 2, y1=y + h / 2, line={"color": "#888"},
                      fillcolor=_COLORS[kind], layer="below")
        fig.add_annotation(x=x, y=y, showarrow=False, align="center", font={"size": 13, "color": "#222"},
                           text=f"<b>{_sub(_TITLES.get(name, name))}</b><br>{_sub(symbolic)}<br><b>{real}</b>")
    for src, dst in _ARROWS:
        (x0, y0, *_), (x1, y1, *_) = _DIAGRAM[src], _DIAGRAM[dst]
        fig.add_annotation(x=x1 - w / 2, y=y1, ax=x0 + w / 2, ay=y0, xref="x", yref="y", axref="x", ayref="y", text="",
                           showarrow=True, arrowhead=2, arrowsize=1.2, arrowwidth=1.5, arrowcolor="#555")
    for label, kind in (("input", "input"), ("learned weight", "weight"), ("computed", "tensor"), ("attention", "attention")):
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=label, hoverinfo="skip",
                                 marker={"symbol": "square", "size": 14, "color": _COLORS[kind], "line": {"color": "#888", "width": 1}}))
    fig.update_xaxes(visible=False, range=[-0.1, 11.5], fixedrange=True)
    fig.update_yaxes(visible=False, range=[-0.15, 4.85], fixedrange=True)
    fig.update_layout(height=430, margin={"l": 0, "r": 0, "t": 10, "b": 0}, dragmode=False,
                      legend={"orientation": "h", "y": -0.02, "x": 0}, hovermode=False)
    return fig


@themed
def masked_heatmap(weights: np.ndarray, mask: np.ndarray, queries: Sequence[str], keys: Sequence[str], *,
                   title: str = "") -> go.Figure:
    """:func:`ui.figures.attention_heatmap` with the masked cells drawn grey and marked "0"."""
    w = np.asarray(weights, dtype=float)
    m = np.asarray(mask, dtype=bool)
    fig = attention_heatmap(w, queries, keys, title=title)
    heat = fig.data[0]
    if (~m).any() and heat.texttemplate:  # a masked cell's "0" is the grey trace's: not written twice
        heat.update(text=np.where(m, [[f"{x:.2f}".rstrip("0").rstrip(".") for x in row] for row in w], ""),
                    texttemplate="%{text}")
    if (~m).any():
        fig.add_trace(go.Heatmap(
            z=np.where(m, np.nan, 0.0), x=heat.x, y=heat.y, colorscale=[[0, "#d9d9d9"], [1, "#d9d9d9"]], showscale=False,
            text=np.where(m, "", "0"), texttemplate="%{text}" if heat.texttemplate else None, hoverongaps=False,
            hovertemplate="<b>%{y}</b> → <b>%{x}</b><br>masked: weight exactly 0<extra></extra>", name="masked",
        ))  # fmt: skip
    return fig
