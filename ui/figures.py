"""Every chart of the app: plotly ``go.Figure`` builders. No streamlit here; pages place them.

Attention heatmaps use one fixed 0–1 colour scale so a learner can compare heads and
layers by colour alone: rows are queries (the token that looks), columns are keys (the
token looked at), and each row sums to 1.
"""

from __future__ import annotations

import base64
import functools
import re
from collections.abc import Callable, Mapping, Sequence
from typing import ParamSpec

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

from attention_core.history import EpochRecord
from attention_core.map_names import grid_title, short_map_name

COLORSCALE = "Blues"
# plotly_white, keeping only what the app's charts use (every heatmap names its colour scale;
# no 3-D, map or polar charts): plotly deep-copies a figure's template each time one is built,
# and every figure sent to the browser carries it, to be read again on every redraw of a live
# chart (figures: benchmarks/README.md).
_WHITE = pio.templates["plotly_white"].to_plotly_json()
pio.templates["attention_playground"] = go.layout.Template(
    data={
        **{kind: _WHITE["data"][kind] for kind in ("bar", "histogram", "scatter", "table")},
        "heatmap": [{"type": "heatmap", "colorbar": {"outlinewidth": 0, "ticks": ""}}],
    },
    layout={k: v for k, v in _WHITE["layout"].items()
            if k in ("annotationdefaults", "autotypenumbers", "colorway", "font", "hoverlabel", "hovermode",
                     "paper_bgcolor", "plot_bgcolor", "shapedefaults", "title", "xaxis", "yaxis")},
)
TEMPLATE = "attention_playground"
P = ParamSpec("P")


def themed(make: Callable[P, go.Figure]) -> Callable[P, go.Figure]:
    """A figure function whose figures get the app's template: made plotly's default while they are
    built, so each figure takes it at its construction, where plotly applies the default without
    validating it again. Naming it in each figure's ``update_layout`` instead would validate and
    deep-copy it for every figure built, in the server's interpreter lock, for every redraw of
    every watched training (figures: benchmarks/README.md). Set on each call: importing Streamlit sets its own template as the default."""

    @functools.wraps(make)
    def build(*args: P.args, **kwargs: P.kwargs) -> go.Figure:
        if pio.templates.default != TEMPLATE:
            pio.templates.default = TEMPLATE
        return make(*args, **kwargs)

    return build


# Projector mode (ui/projector.py): every chart drawn for a room.
PROJECTOR_FONT = 18  # px: chart text and hover labels at least this size, heatmap numbers at most (plotly's: 12)
PROJECTOR_MIN_FONT = 15  # px: the smallest text of a chart that sets its own small sizes (a grid's tick labels)
PROJECTOR_SCALE = 1.5  # a size a figure sets itself (a tick font, a colour bar), and line widths
PROJECTOR_HEIGHT = 1.35  # taller charts: larger heatmap cells for the larger text
PROJECTOR_INK = "#111111"  # text and axis lines, near black on white
PROJECTOR_STRIP = 330  # px: the narrowest plot a one-row heatmap gets at 1024 px (its numbers are sized to fit it)
PROJECTOR_NARROW_STRIP = 240  # px: the same for a chart in half the page's width (``attention_heatmap(narrow=True)``)
_CHAR_WIDTH = 0.6  # a digit's width in a font's size (Source Sans)
# A pooling attention's map (ModelConfig.pooling == "attention", the last map of the stack) has one
# query, the label's, so it is drawn as one row: the model returns it as T identical rows.
POOLING_QUERY = "label's query"
POOLING_CAPTION = "the pooling attention: how much each word counts toward the label"
POOLING_ROW = 90  # px: a grid's row of pooling maps, against its layers' ``cell``
POOLING_VALUES = 24  # a pooling map's one row has its values written up to this many words (wider, they overlap)
POOLING_VALUES_NARROW = 8  # the same in half the page's width (a column of two)
WIDE_GRID = 9  # a grid with more columns of maps than this (a pretrained encoder's 12 heads + their average) is drawn
WIDE_CELL = 100  # px a row (its maps near square at 1280 px and at 1024 in projector mode), titled "layer.head"


def _dedupe(tokens: Sequence[str]) -> list[str]:
    """Plotly merges equal category labels: make repeated tokens unique ("the", "the ²")."""
    seen: dict[str, int] = {}
    out = []
    for tok in tokens:
        seen[tok] = seen.get(tok, 0) + 1
        out.append(tok if seen[tok] == 1 else f"{tok} ({seen[tok]})")
    return out


def pooling_row(weights: np.ndarray) -> np.ndarray:
    """A pooling attention's map as its one row (1, T), from the (T, T) of identical rows the model returns
    (or the row (T,) itself)."""
    w = np.asarray(weights, dtype=float)
    return w.reshape(1, -1) if w.ndim == 1 else w[:1]


def _heatmap_spec(
    weights: np.ndarray,
    queries: Sequence[str],
    keys: Sequence[str] | None = None,
    *,
    zmax: float = 1.0,
    show_values: bool | None = None,
    colorbar: Mapping[str, object] | None = None,
) -> dict:
    """:func:`attention_trace` as plain values (what a figure's constructor validates once)."""
    w = np.asarray(weights, dtype=float)
    keys = queries if keys is None else keys
    if show_values is None:
        show_values = w.shape[0] * w.shape[1] <= 144
    spec = {
        "type": "heatmap",
        "z": w,
        "x": _dedupe(keys),
        "y": _dedupe(queries),
        "zmin": 0.0,
        "zmax": zmax,
        "colorscale": COLORSCALE,
        # (its title beside the bar: above it, the top tick's label runs into it)
        "colorbar": {"thickness": 12, **(colorbar or {}),
                     "title": {"text": (colorbar or {}).get("title", "weight"), "side": "right"}},
        "hovertemplate": "<b>%{y}</b> → <b>%{x}</b><br>weight %{z:.4f}<extra></extra>",
    }
    if show_values:
        spec["texttemplate"] = "%{z:.2~f}"  # 0.53, 0.5, 1: two decimals, trailing zeros dropped
    return spec


def attention_trace(
    weights: np.ndarray,
    queries: Sequence[str],
    keys: Sequence[str] | None = None,
    *,
    zmax: float = 1.0,
    show_values: bool | None = None,
    colorbar: Mapping[str, object] | None = None,
) -> go.Heatmap:
    """The look of one attention map, as a trace: 0–``zmax`` colours, values written in small maps (≤ 144 cells
    unless ``show_values`` says), hover ``query → key: weight``. ``colorbar`` adds to (or replaces) its defaults."""
    return go.Heatmap(_heatmap_spec(weights, queries, keys, zmax=zmax, show_values=show_values, colorbar=colorbar))


@themed
def attention_heatmap(
    weights: np.ndarray,
    queries: Sequence[str],
    keys: Sequence[str] | None = None,
    *,
    title: str = "",
    zmax: float = 1.0,
    height: int | None = None,
    show_values: bool | None = None,
    colorbar_title: str = "weight",
    pooling: bool = False,
    narrow: bool = False,
) -> go.Figure:
    """One attention map: rows = queries, columns = keys, hover shows ``query → key: weight``.

    ``pooling``: the map is a pooling attention's (``queries`` are then the tokens it reads), drawn as
    its one row, the label's query, with :data:`POOLING_CAPTION` under the title. ``narrow``: drawn in half the
    page's width: the keys upright, :data:`POOLING_CAPTION` on two lines, the pooling row's values written for fewer
    words (:data:`POOLING_VALUES_NARROW`; in projector mode, for a strip :data:`PROJECTOR_NARROW_STRIP` px wide).

    Built by one constructor call from plain values (Home redraws it for every sentence typed)."""
    if pooling:
        weights, queries, keys = pooling_row(weights), [POOLING_QUERY], queries if keys is None else keys
        most = POOLING_VALUES_NARROW if narrow else POOLING_VALUES
        show_values = len(keys) <= most if show_values is None else show_values
    trace = _heatmap_spec(weights, queries, keys, zmax=zmax, show_values=show_values, colorbar={"title": colorbar_title})
    side = height or ((270 if narrow else 230) if pooling else max(260, 34 * len(queries) + 150))  # (narrow: the
    # caption's second line)
    # The key axis sits on top, next to the title: say what the columns are in the title's
    # subtitle instead of an axis title that would overlap it.
    what = POOLING_CAPTION if pooling else "rows: query (attending) · columns: key (attended to)"
    if narrow:
        what = what.replace(": ", ":<br>", 1)
    heading = f"{title}<br><sup>{what}</sup>" if title else f"<sup>{what}</sup>" if pooling else None
    layout = {
        "height": side,
        "margin": {"l": 10, "r": 10, "t": 130 if heading else 80, "b": 10},
        "xaxis": {"side": "top", "tickangle": -90 if narrow else -45},
        "yaxis": {"title": {"text": "" if pooling else "query (attending)"}, "autorange": "reversed"},
    }
    if narrow:
        layout["meta"] = {"narrow": True}  # (read by for_projector)
    if heading:
        layout["title"] = {"text": heading, "x": 0, "xanchor": "left", "y": 1, "yanchor": "top", "yref": "container",
                           "pad": {"t": 20 if narrow else 12, "l": 10}}  # (a second line of <sup> rises higher)
    return go.Figure(data=[trace], layout=layout)


@themed
def wide_grid_title(index: int, head: int, n_layers: int, n_heads: int) -> str:
    """A wide grid's small title (more than :data:`WIDE_GRID` columns, where "L1 · H10" runs into its neighbours):
    "1.10" (layer 1, head 10: as the Faithfulness page names heads), "1 avg" for the average of the heads.

    Example:
        >>> [wide_grid_title(0, 9, 6, 12), wide_grid_title(5, 12, 6, 12)]
        ['1.10', '6 avg']
    """
    name = short_map_name(index, n_layers).removeprefix("L")
    return f"{name} avg" if head == n_heads else f"{name}.{head + 1}"


def attention_grid(attention: np.ndarray, tokens: Sequence[str], *, average: bool = True, cell: int | None = None,
                   pooling: bool = False) -> go.Figure:
    """All layers × heads (plus a head-average column) as small heatmaps. attention (L, H, T, T).

    ``pooling``: the last row of maps is a pooling attention's (L − 1 layers, then it), each map drawn
    as its one row (:func:`pooling_row`), in a row of the grid :data:`POOLING_ROW` px high. ``cell``: a row's
    height in px (default 230; :data:`WIDE_CELL` for a grid of more than :data:`WIDE_GRID` columns, whose maps are
    narrow, titled as :func:`wide_grid_title` says)."""
    a = np.asarray(attention, dtype=float)
    n_layers, n_heads = a.shape[:2]
    cols = n_heads + (1 if average else 0)
    wide = cols > WIDE_GRID
    cell = cell or (WIDE_CELL if wide else 230)
    pooled = n_layers - 1 if pooling else None  # the pooling attention's row of maps
    title = wide_grid_title if wide else grid_title
    titles = [title(layer, h, n_layers - 1 if pooling else n_layers, n_heads) for layer in range(n_layers)
              for h in range(cols)]
    heights = [POOLING_ROW if layer == pooled else cell for layer in range(n_layers)]
    fig = make_subplots(rows=n_layers, cols=cols, subplot_titles=titles, horizontal_spacing=0.012 if wide else 0.03,
                        vertical_spacing=0.08 if not wide else 0.3 / n_layers, row_heights=heights)
    toks = _dedupe(tokens)
    for layer in range(n_layers):
        for h in range(cols):
            z = a[layer].mean(0) if h == n_heads else a[layer, h]
            fig.add_trace(
                go.Heatmap(
                    z=pooling_row(z) if layer == pooled else z,
                    x=toks,
                    y=[POOLING_QUERY] if layer == pooled else toks,
                    zmin=0,
                    zmax=1,
                    colorscale=COLORSCALE,
                    showscale=layer == 0 and h == 0,
                    colorbar={"thickness": 10, "len": 0.5, "y": 1, "yanchor": "top"},
                    hovertemplate=f"{'pooling' if layer == pooled else f'layer {layer + 1}'}, "
                    f"{'head average' if h == n_heads else f'head {h + 1}'}"
                    "<br><b>%{y}</b> → <b>%{x}</b>: %{z:.3f}<extra></extra>",
                ),
                row=layer + 1,
                col=h + 1,
            )
    labels = len(toks) <= 16
    fig.update_yaxes(autorange="reversed", showticklabels=labels, tickfont={"size": 9})
    # Upright: a word per column of a map, and a map is narrow. A wide grid's maps are too narrow for the words under
    # them (they ran into the next map's): its rows name them.
    fig.update_xaxes(showticklabels=labels and not wide, tickangle=-90, tickfont={"size": 9}, automargin=True)
    if labels:  # once per row / column of maps: elsewhere they run into the titles below and the maps to their left
        for layer in range(1, n_layers):
            fig.update_xaxes(showticklabels=False, row=layer)
        for col in range(2, cols + 1):
            fig.update_yaxes(showticklabels=False, col=col)
    fig.update_layout(height=sum(heights) + 60, margin={"l": 10, "r": 10, "t": 40, "b": 10})
    return fig


def _bar_spec(probabilities: Mapping[str, float], *, predicted: str | None = None, names_in_bars: bool = False) -> dict:
    """:func:`probability_trace` as plain values (what a figure's constructor validates once)."""
    labels = list(probabilities)
    values = [probabilities[k] for k in labels]
    spec = {
        "type": "bar",
        "x": values,
        "y": labels,
        "orientation": "h",
        "marker": {"color": ["#1f77b4" if k == predicted else "#b0c4de" for k in labels]},
        "text": [f"{k} {v:.1%}" if names_in_bars else f"{v:.1%}" for k, v in zip(labels, values, strict=True)],
        "textposition": ["inside" if v >= 0.35 else "outside" for v in values] if names_in_bars else "auto",
        "hovertemplate": "%{y}: %{x:.2%}<extra></extra>",
    }
    if names_in_bars:  # a name is read from the bar's start, and a short bar's name sits beyond its end
        spec.update(insidetextanchor="start", textangle=0, cliponaxis=False)
    return spec


def probability_trace(probabilities: Mapping[str, float], *, predicted: str | None = None,
                      names_in_bars: bool = False) -> go.Bar:
    """The look of a prediction, as a trace: one horizontal bar per class, the ``predicted`` one highlighted.

    ``names_in_bars`` writes each class's name in its bar, for a chart whose axis does not name them.
    """
    return go.Bar(_bar_spec(probabilities, predicted=predicted, names_in_bars=names_in_bars))


# A probability axis: 0 to 100 %, a grid line every 25 % and a label every 50 % (left to plotly, a narrow one
# showed only 0 % and 50 %; five labels stand on end in Home's column at 1024 px).
PROBABILITY_AXIS = {"range": [0, 1], "tickvals": [0, 0.25, 0.5, 0.75, 1], "ticktext": ["0%", "", "50%", "", "100%"]}


@themed
def probability_bars(probabilities: Mapping[str, float], *, predicted: str | None = None) -> go.Figure:
    """One horizontal bar per class, the predicted one highlighted."""
    return go.Figure(data=[_bar_spec(probabilities, predicted=predicted)], layout={
        "height": 60 + 34 * len(probabilities),
        "margin": {"l": 10, "r": 24, "t": 10, "b": 10},  # r: room for half of "100%" (plotly hides a label cut off)
        "xaxis": PROBABILITY_AXIS,
        "yaxis": {"autorange": "reversed"},
    })


def _curve_series(epochs: Sequence[EpochRecord], step_losses: Sequence[float],
                  steps: int | None = None) -> dict[str, tuple[np.ndarray, list]]:
    """name → (x, y) of each line of :func:`training_curves`, in drawing order; ``steps``: the first that many
    step losses (default: all), of which only the drawn ones are copied."""
    ep = [e.at for e in epochs]  # (an epoch a Stop or the time budget cut short: at its share, not as a whole one)
    series: dict[str, tuple] = {}
    n = len(step_losses) if steps is None else min(steps, len(step_losses))
    if n and ep:
        stride = max(1, n // 2000)  # keep the browser light on 39,000-step seed runs
        series["step loss"] = (np.linspace(0, ep[-1], n + 1)[1:][::stride], list(step_losses[:n:stride]))
    series["train loss"] = (ep, [e.train_loss for e in epochs])
    if any(e.val_loss is not None for e in epochs):
        series["validation loss"] = (ep, [e.val_loss for e in epochs])
        series["validation accuracy"] = (ep, [e.val_accuracy for e in epochs])
    series["train accuracy"] = (ep, [e.train_accuracy for e in epochs])
    return series


_CURVE_STYLE = {  # name → (subplot column, line style)
    "step loss": (1, {"color": "rgba(31,119,180,0.25)", "width": 1}),
    "train loss": (1, {"color": "#1f77b4"}),
    "validation loss": (1, {"color": "#ff7f0e"}),
    "validation accuracy": (2, {"color": "#ff7f0e", "dash": "dot"}),
    "train accuracy": (2, {"color": "#1f77b4", "dash": "dot"}),
}


def _curve_mode(epochs: Sequence[EpochRecord]) -> str:
    return "lines+markers" if len(epochs) <= 60 else "lines"  # markers blur into a bar on long runs


@themed
def training_curves(epochs: Sequence[EpochRecord], step_losses: Sequence[float] = (), *, title: str = "",
                    steps: int | None = None) -> go.Figure:
    """Loss (left) and accuracy (right) per epoch, train and validation; step losses (the first ``steps``)
    faintly behind."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("loss", "accuracy"))
    for name, (x, y) in _curve_series(epochs, step_losses, steps).items():
        col, line = _CURVE_STYLE[name]
        steps = name == "step loss"
        fig.add_trace(go.Scatter(x=x, y=y, name=name, mode="lines" if steps else _curve_mode(epochs), line=line,
                                 hoverinfo="skip" if steps else None), row=1, col=col)
    fig.update_xaxes(title="epoch")
    fig.update_yaxes(range=[0, 1.02], tickformat=".0%", row=1, col=2)
    fig.update_layout(height=330, title=title or None, margin={"l": 10, "r": 10, "t": 40, "b": 10},
                      legend={"orientation": "h", "y": -0.25})
    return fig


class LiveTrainingCurves:
    """:func:`training_curves` for a chart redrawn several times a second while a job trains.

    Building the figure (``make_subplots`` and plotly's validation) is the costly part of a
    redraw, and every watched training redraws 2.5 times a second. This keeps one figure and,
    while its set of lines stays the same, only replaces their data (figures: benchmarks/README.md).
    A training's history is handed as it is, with how many of its step losses to draw
    (its lists only grow while it trains): only the drawn points are copied.
    """

    def __init__(self) -> None:
        self._fig: go.Figure | None = None
        self._shape: tuple | None = None

    def __call__(self, epochs: Sequence[EpochRecord], step_losses: Sequence[float] = (), *,
                 steps: int | None = None) -> go.Figure:
        series = _curve_series(epochs, step_losses, steps)
        shape = (tuple(series), _curve_mode(epochs))
        if self._fig is None or shape != self._shape:
            self._fig, self._shape = training_curves(epochs, step_losses, steps=steps), shape
            return self._fig
        with self._fig.batch_update():
            for trace in self._fig.data:
                trace.x, trace.y = series[trace.name]
        return self._fig


@themed
def compare_curves(histories: Mapping[str, Sequence[EpochRecord]]) -> go.Figure:
    """Validation (or train) loss and accuracy of several runs overlaid."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("loss", "accuracy"))
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]
    for i, (name, epochs) in enumerate(histories.items()):
        color = palette[i % len(palette)]
        ep = [e.at for e in epochs]
        has_val = any(e.val_loss is not None for e in epochs)
        key = "val" if has_val else "train"
        fig.add_trace(go.Scatter(x=ep, y=[getattr(e, f"{key}_loss") for e in epochs], name=f"{name} ({key} loss)",
                                 line={"color": color}), row=1, col=1)
        fig.add_trace(go.Scatter(x=ep, y=[getattr(e, f"{key}_accuracy") for e in epochs], name=f"{name} ({key} accuracy)",
                                 line={"color": color, "dash": "dot"}), row=1, col=2)
    fig.update_xaxes(title="epoch")
    fig.update_yaxes(range=[0, 1.02], tickformat=".0%", row=1, col=2)
    fig.update_layout(height=340, margin={"l": 10, "r": 10, "t": 40, "b": 10},
                      legend={"orientation": "h", "y": -0.25})
    return fig


@themed
def confusion_heatmap(confusion: Sequence[Sequence[int]], labels: Sequence[str]) -> go.Figure:
    z = np.asarray(confusion)
    fig = go.Figure(go.Heatmap(z=z, x=list(labels), y=list(labels), colorscale="Oranges", text=z, texttemplate="%{text}",
                               hovertemplate="true %{y}, predicted %{x}: %{z}<extra></extra>", showscale=False))
    fig.update_layout(height=120 + 50 * len(labels), margin={"l": 10, "r": 10, "t": 10, "b": 10},
                      xaxis={"title": "predicted", "side": "top"}, yaxis={"title": "true", "autorange": "reversed"})
    return fig


@themed
def class_balance(counts: Mapping[str, int]) -> go.Figure:
    fig = go.Figure(go.Bar(x=list(counts), y=list(counts.values()), marker_color="#1f77b4", text=list(counts.values()),
                           textposition="auto"))
    fig.update_layout(height=240, margin={"l": 10, "r": 10, "t": 30, "b": 10}, title="class balance",
                      yaxis={"title": "rows"})
    return fig


@themed
def length_histogram(lengths: Sequence[int], *, limit: int | None = None, unit: str = "tokens") -> go.Figure:
    """Rows per sentence length in ``unit`` (tokens, or a pretrained encoder's word pieces), the x axis fitted to the
    data; ``limit`` (the truncation length) is a dashed line where some rows exceed it, and a note in the title where
    none does (a line beyond the data would stretch the axis and squeeze the bars to one side)."""
    n = np.asarray(lengths, dtype=int)
    longest = int(n.max()) if n.size else 1
    size = -(-(longest + 1) // 40)  # whole tokens per bar, at most ~40 bars
    fig = go.Figure(go.Histogram(x=n, marker_color="#1f77b4", xbins={"start": -0.5, "end": longest + 0.5, "size": size},
                                 hovertemplate="%{x} " + unit + ": %{y:,} rows<extra></extra>"))
    title = f"sentence length ({unit})"
    if limit and longest > limit:
        cut = int((n > limit).sum())
        fig.add_vline(x=limit + 0.5, line_dash="dash", line_color="#d62728", annotation_position="top left",
                      annotation_text=f"truncated beyond {limit}: {cut:,} row{'s' * (cut != 1)}")
    elif limit:
        title += f" · none over the limit, {limit}"
    fig.update_layout(height=240, margin={"l": 10, "r": 10, "t": 30, "b": 10}, title=title,
                      xaxis={"title": unit, "range": [-0.5, longest + size - 0.5]}, yaxis={"title": "rows"})
    return fig


@themed
def token_scores(tokens: Sequence[str], series: Mapping[str, Sequence[float]]) -> go.Figure:
    """Per-token bars for several scores (e.g. attention rollout vs saliency), each scaled to max |1|."""
    fig = go.Figure()
    toks = _dedupe(tokens)
    for name, values in series.items():
        v = np.asarray(values, dtype=float)
        scale = np.abs(v).max() or 1.0
        fig.add_trace(go.Bar(x=toks, y=v / scale, name=name, customdata=v,
                             hovertemplate="%{x}: %{customdata:.4f}<extra>" + name + "</extra>"))
    fig.update_layout(barmode="group", height=300, margin={"l": 10, "r": 10, "t": 30, "b": 10},
                      yaxis={"title": "relative score"}, legend={"orientation": "h", "y": -0.3})
    return fig


@themed
def matrix_table(values: np.ndarray, rows: Sequence[str], cols: Sequence[str], *, title: str = "",
                 colorscale: str = "RdBu", symmetric: bool = True) -> go.Figure:
    """A small numeric matrix with its values written in the cells (for the explainer pages)."""
    v = np.asarray(values, dtype=float)
    lim = float(np.abs(v).max()) if symmetric and v.size else None
    fig = go.Figure(go.Heatmap(z=v, x=_dedupe(cols), y=_dedupe(rows), colorscale=colorscale, zmid=0 if symmetric else None,
                               zmin=-lim if lim else None, zmax=lim if lim else None, text=np.round(v, 4),
                               texttemplate="%{text}", showscale=False,
                               hovertemplate="%{y}, %{x}: %{z:.6f}<extra></extra>"))
    fig.update_layout(title=title or None, height=max(200, 30 * v.shape[0] + 90),
                      margin={"l": 10, "r": 10, "t": 40 if title else 10, "b": 10},
                      yaxis={"autorange": "reversed"}, xaxis={"side": "top"})
    return fig


# --- Inspect page ----------------------------------------------------------------------------------


@themed
def selectable_attention_grid(attention: np.ndarray, tokens: Sequence[str], *, cell: int | None = None,
                              pooling: bool = False) -> go.Figure:
    """:func:`attention_grid` (with the head-average column) that reports which map was clicked.

    Plotly heatmaps send no selection events, so an invisible marker sits on every cell (every
    few cells of a long sentence, where a cell is a few pixels wide); a click selects one whose
    ``customdata`` is ``[layer, head, weight]`` (head = H for the average column), and hovering
    shows that marker's query, key and weight. ``pooling``: the last row of maps is a pooling
    attention's (one row each, as :func:`attention_grid` draws it).
    """
    a = np.asarray(attention, dtype=float)
    n_layers, n_heads, t = a.shape[0], a.shape[1], a.shape[-1]
    pooled = n_layers - 1 if pooling else None
    fig = attention_grid(a, tokens, cell=cell, pooling=pooling)
    fig.update_traces(hoverinfo="skip", hovertemplate=None, selector={"type": "heatmap"})
    toks = _dedupe(tokens)
    idx = range(0, t, -(-t // 24))  # at most 24 × 24 markers per map
    for layer in range(n_layers):
        queries = [0] if layer == pooled else idx  # a pooling map's one row, the label's query
        rows = [POOLING_QUERY] if layer == pooled else toks
        xs = [toks[k] for _ in queries for k in idx]
        ys = [rows[q] for q in queries for _ in idx]
        where = "pooling" if layer == pooled else f"layer {layer + 1}"
        for h in range(n_heads + 1):
            z = a[layer].mean(0) if h == n_heads else a[layer, h]
            name = "head average" if h == n_heads else f"head {h + 1}"
            fig.add_trace(
                go.Scatter(
                    x=xs, y=ys, mode="markers", showlegend=False,
                    marker={"size": 14, "opacity": 0, "symbol": "square"},
                    customdata=[[layer, h, round(float(z[q, k]), 4)] for q in queries for k in idx],
                    hovertemplate=f"{where}, {name}<br><b>%{{y}}</b> → <b>%{{x}}</b>: %{{customdata[2]:.3f}}"
                    "<br><i>click to zoom</i><extra></extra>",
                ),
                row=layer + 1, col=h + 1,
            )
    fig.update_xaxes(range=[-0.5, t - 0.5], autorange=False)
    for layer in range(n_layers):
        top = 0.5 if layer == pooled else t - 0.5
        fig.update_yaxes(range=[top, -0.5], autorange=False, row=layer + 1)
    fig.update_layout(clickmode="event+select", dragmode=False, hovermode="closest")
    return fig


@themed
def feature_heatmap(features: np.ndarray, tokens: Sequence[str], feature_names: Sequence[str], *, title: str = "") -> go.Figure:
    """The model's input matrix: one row per token, one column per input feature (diverging colours, 0 = white)."""
    v = np.asarray(features, dtype=float)
    lim = float(np.abs(v).max()) if v.size else 1.0
    fig = go.Figure(
        go.Heatmap(
            z=v, x=list(feature_names), y=_dedupe(tokens), colorscale="RdBu", zmid=0, zmin=-(lim or 1.0), zmax=lim or 1.0,
            colorbar={"title": "value", "thickness": 12},
            hovertemplate="<b>%{y}</b> · feature %{x}: %{z:.3f}<extra></extra>",
        )
    )
    fig.update_layout(
        title=title or None, height=max(240, 26 * v.shape[0] + 130),
        margin={"l": 10, "r": 10, "t": 40 if title else 10, "b": 10},
        xaxis={"title": "input feature", "type": "category", "tickangle": -90, "tickfont": {"size": 9}},
        yaxis={"title": "token", "autorange": "reversed"},
    )
    return fig


@themed
def attention_time_lapse(
    epochs: Sequence[int],
    weights: Sequence[np.ndarray],
    tokens: Sequence[Sequence[str]],
    probabilities: Sequence[Mapping[str, float]] = (),
    *,
    kept: Sequence[int] = (),
    model_epoch: int | None = None,
    start: int | None = None,
    pooling: bool = False,
) -> go.Figure:
    """One attention map over training, played in the browser: a frame per epoch, ▶ / ❚❚ buttons and a slider.

    ``weights[i]`` (T, T) and ``tokens[i]`` are the map at ``epochs[i]``; with ``probabilities``
    (label → p per epoch) the map has the prediction beside it and, right above the slider, each
    class's probability over the epochs, where a cursor follows the frame. That epoch axis spaces
    the epochs by their values (kept at 0, 2, 5, 7, 8: the gaps show) and spans the slider's width,
    whose steps are evenly spaced: they line up with the axis when the epochs are, and otherwise
    the steps name their epochs. ``kept`` are the epochs whose weights the run kept (▲ on that
    epoch axis, and its labels), ``model_epoch`` the weights the run's model has (★). Frames
    change only the map, the bars, the cursor and the title, so playing needs no round trip to
    the server. The figure opens on the epoch ``start``, else on ``model_epoch`` (the model the
    page shows), else on the last; ▶ plays from the first. ``pooling``: the maps are a pooling
    attention's, each drawn as its one row.
    """
    epochs = [int(e) for e in epochs]
    n = len(epochs)
    if not n or len(weights) != n or len(tokens) != n:
        raise ValueError(f"need one map and one token list per epoch: {n} epochs, {len(weights)} maps, "
                         f"{len(tokens)} token lists")
    has_probs = bool(probabilities) and all(probabilities)
    labels = list(probabilities[0]) if has_probs else []
    marked = {int(e) for e in kept} | ({model_epoch} if model_epoch is not None else set())

    def title(i: int) -> str:
        if not has_probs:
            return f"<b>Epoch {epochs[i]}</b>"
        p = probabilities[i]
        best = max(p, key=p.get)
        return f"<b>Epoch {epochs[i]}</b> · prediction: {best} ({p[best]:.0%})"

    colorbar = {"thickness": 10, "len": 0.6 if has_probs else 1.0, "x": 0.56 if has_probs else 1.0, "y": 1.0,
                "yanchor": "top"}

    def heatmap(i: int) -> go.Heatmap:
        if pooling:
            return attention_trace(pooling_row(weights[i]), [POOLING_QUERY], tokens[i], colorbar=colorbar,
                                   show_values=len(tokens[i]) <= POOLING_VALUES)
        return attention_trace(weights[i], tokens[i], colorbar=colorbar)

    def bars(i: int) -> go.Bar:
        p = probabilities[i]
        return probability_trace(p, predicted=max(p, key=p.get), names_in_bars=True).update(showlegend=False)

    def cursor(i: int) -> go.Scatter:
        return go.Scatter(x=[epochs[i]] * 2, y=[0, 1], mode="lines", line={"color": "#444", "dash": "dash"}, hoverinfo="skip",
                          showlegend=False)

    map_height = 260 if pooling else max(260, 34 * max(len(tok) for tok in tokens) + 120)  # (260: the smallest that fits)
    last = n - 1
    shown = epochs.index(next((e for e in (start, model_epoch) if e in epochs), epochs[last]))  # the frame it opens on
    named = [f"{e}★" if e == model_epoch else str(e) if e in marked or not marked else "" for e in epochs]
    if has_probs:
        # The epoch strip spans the slider's width: a slider step sits 10 px in from each end (plotly.js),
        # so the axis range reaches that far beyond the first and last epochs (for a figure ~800 px wide).
        inset = max(epochs[last] - epochs[0], 1) * 10 / 780
        fig = make_subplots(rows=2, cols=2, specs=[[{}, {}], [{"colspan": 2}, None]], column_widths=[0.6, 0.4],
                            row_heights=[map_height, 150], horizontal_spacing=0.14, vertical_spacing=0.14,
                            subplot_titles=("", "probability of each class", "", ""))
        fig.add_trace(heatmap(shown), row=1, col=1)
        fig.add_trace(bars(shown), row=1, col=2)
        for label in labels:
            fig.add_trace(go.Scatter(x=epochs, y=[p[label] for p in probabilities], name=label, mode="lines",
                                     customdata=epochs, hovertemplate="epoch %{customdata}: %{y:.1%}<extra>" + label
                                     + "</extra>"), row=2, col=1)
        fig.add_trace(cursor(shown), row=2, col=1)
        moving = [0, 1, len(fig.data) - 1]  # the traces a frame replaces
        kept_at = [i for i, e in enumerate(epochs) if e in marked and e != model_epoch]
        if kept_at:
            fig.add_trace(go.Scatter(x=[epochs[i] for i in kept_at], y=[0.0] * len(kept_at), mode="markers", name="weights kept",
                                     marker={"symbol": "triangle-up", "size": 11, "color": "#555"}, cliponaxis=False,
                                     customdata=[epochs[i] for i in kept_at],
                                     hovertemplate="epoch %{customdata}: the run kept its weights<extra></extra>"),
                          row=2, col=1)
        if model_epoch in epochs:
            fig.add_trace(go.Scatter(x=[model_epoch], y=[0.0], mode="markers", name="the run's model", cliponaxis=False,
                                     marker={"symbol": "star", "size": 14, "color": "#d62728"}, customdata=[model_epoch],
                                     hovertemplate="epoch %{customdata}: the weights of the run's model<extra></extra>"),
                          row=2, col=1)
        ticks = [i for i, e in enumerate(epochs) if e in marked] or sorted({round(k * last / 8) for k in range(9)})
        fig.update_xaxes(side="top", tickangle=-45, row=1, col=1)
        fig.update_yaxes(autorange="reversed", row=1, col=1)
        fig.update_xaxes(PROBABILITY_AXIS, row=1, col=2)
        fig.update_yaxes(autorange="reversed", showticklabels=False, row=1, col=2)  # the bars name their class
        fig.update_xaxes(range=[epochs[0] - inset, epochs[last] + inset], tickvals=[epochs[i] for i in ticks],
                         showgrid=False, zeroline=False, ticktext=[named[i] or str(epochs[i]) for i in ticks],
                         title={"text": "epoch", "standoff": 4}, row=2, col=1)
        fig.update_yaxes(range=[-0.08, 1.04], tickformat=".0%", title="probability", row=2, col=1)
        height = map_height + 150 + 205
        strip_top = fig.layout.yaxis3.domain[1]  # the legend goes just above the epoch strip
        even = len(set(np.diff(epochs))) <= 1
        step_labels = [""] * n if even else named  # evenly spaced, the strip's axis right above names the epochs
    else:
        fig = go.Figure(heatmap(shown))
        moving = [0]
        fig.update_layout(xaxis={"side": "top", "tickangle": -45}, yaxis={"autorange": "reversed"})
        height = map_height + 150
        strip_top = 0.0
        step_labels = named

    def frame(i: int) -> go.Frame:
        data = [heatmap(i)] + ([bars(i), cursor(i)] if has_probs else [])
        return go.Frame(name=str(epochs[i]), data=data, traces=moving, layout={"title": {"text": title(i)}})

    fig.frames = [frame(i) for i in range(n)]
    labelled = n > 1 and any(step_labels)  # the slider's steps name their epochs: the buttons go below those names
    height += 30 if labelled else 0
    duration = int(min(700, max(120, 6000 / n)))  # about 6 s for the whole training
    play = {"frame": {"duration": duration, "redraw": True}, "transition": {"duration": 0}, "fromcurrent": False,
            "mode": "immediate"}
    fig.update_layout(
        height=height, margin={"l": 10, "r": 20, "t": 60, "b": 10},
        title={"text": title(shown), "x": 0, "xanchor": "left", "y": 1, "yanchor": "top", "yref": "container",
               "pad": {"t": 12, "l": 10}},
        legend={"orientation": "h", "y": strip_top + 0.01, "yanchor": "bottom", "x": 1, "xanchor": "right"},
        sliders=[{
            "active": shown, "x": 0, "len": 1, "y": 0, "yanchor": "top", "pad": {"t": 45 if has_probs else 10, "l": 0, "r": 0},
            "currentvalue": {"visible": False},  # (it shows a step's label; the title names the epoch)
            "ticklen": 4, "minorticklen": 4,
            "steps": [{"label": label, "method": "animate",
                       "args": [[str(e)], {"frame": {"duration": 0, "redraw": True}, "mode": "immediate",
                                           "transition": {"duration": 0}}]} for e, label in zip(epochs, step_labels, strict=True)],
        }] if n > 1 else [],
        updatemenus=[{
            "type": "buttons", "direction": "left", "showactive": False, "x": 0, "xanchor": "left", "y": 0,
            "yanchor": "top", "pad": {"t": (95 if has_probs else 60) + (30 if labelled else 0)},
            "buttons": [
                {"label": "▶ Play", "method": "animate", "args": [None, play]},
                {"label": "❚❚ Pause", "method": "animate",
                 "args": [[None], {"frame": {"duration": 0, "redraw": False}, "mode": "immediate"}]},
            ],
        }] if n > 1 else [],
    )
    return fig


# --- Backpropagation and Seed experiment pages -------------------------------------------------------


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


@themed
def gradient_heatmap(values: np.ndarray, rows: Sequence[str], cols: Sequence[str], *, title: str = "",
                     zmax: float | None = None, height: int | None = None) -> go.Figure:
    """A gradient (or any signed matrix) in diverging colours, 0 = white; values written in small matrices.

    A 1-d vector is drawn as one row. ``zmax`` fixes the colour range to ±zmax (to compare two maps).
    Very small or large values are shown in units of a power of ten, named on the colour bar (×10⁻³).
    """
    v = np.asarray(values, dtype=float)
    if v.ndim == 1:
        v = v[None, :]
    lim = zmax if zmax is not None else float(np.abs(v).max()) if v.size else 0.0
    exponent = int(np.floor(np.log10(lim))) if lim > 0 else 0
    exponent = exponent if exponent < -2 or exponent > 2 else 0
    unit = f" ×10{str(exponent).translate(_SUPERSCRIPT)}" if exponent else ""
    v, lim = v / 10.0**exponent, (lim / 10.0**exponent) or 1.0  # an all-zero gradient still gets a colour range
    small = v.shape[0] * v.shape[1] <= 120 and v.shape[1] <= 12
    fig = go.Figure(
        go.Heatmap(
            z=v, x=_dedupe(cols), y=_dedupe(rows), colorscale="RdBu", zmid=0, zmin=-lim, zmax=lim,
            text=np.round(v, 3) if small else None, texttemplate="%{text}" if small else None, textfont={"size": 11},
            colorbar={"title": f"value{unit}", "thickness": 12},
            hovertemplate="<b>%{y}</b>, <b>%{x}</b>: %{z:.5f}" + unit + "<extra></extra>",
        )
    )
    many = v.shape[1] > 20
    fig.update_layout(
        title=title or None,
        height=height or int(min(640, max(150, (14 if v.shape[0] > 20 else 34) * v.shape[0] + 110))),
        margin={"l": 10, "r": 10, "t": 40 if title else 10, "b": 10},
        xaxis={"side": "top", "tickangle": -90 if many else -45, "tickfont": {"size": 9 if many else 12}, "type": "category"},
        yaxis={"autorange": "reversed", "tickfont": {"size": 9 if v.shape[0] > 20 else 12}, "type": "category"},
    )
    return fig


@themed
def loss_curve(epochs: Sequence[EpochRecord], *, height: int = 240) -> go.Figure:
    """Training loss per epoch, in one small panel (per-step losses of per-example SGD would hide it)."""
    ep = [e.at for e in epochs]
    fig = go.Figure(go.Scatter(x=ep, y=[e.train_loss for e in epochs], mode="lines+markers" if len(ep) <= 60 else "lines",
                               line={"color": "#1f77b4"}, hovertemplate="epoch %{x}: loss %{y:.4f}<extra></extra>"))
    fig.update_layout(height=height, margin={"l": 10, "r": 10, "t": 10, "b": 10}, showlegend=False,
                      xaxis={"title": "epoch"}, yaxis={"title": "training loss", "rangemode": "tozero"})
    return fig


@themed
def compact_attention_heatmap(weights: np.ndarray, tokens: Sequence[str], *, show_values: bool = False,
                              height: int | None = None, pooling: bool = False) -> go.Figure:
    """An attention map for side-by-side columns: rows = queries, columns = keys, 0–1 colours, no axis titles.
    ``pooling``: a pooling attention's map, drawn as its one row (the label's query)."""
    w = pooling_row(weights) if pooling else np.asarray(weights, dtype=float)
    toks = _dedupe(tokens)
    fig = go.Figure(
        go.Heatmap(
            z=w, x=toks, y=[POOLING_QUERY] if pooling else toks, zmin=0.0, zmax=1.0, colorscale=COLORSCALE,
            colorbar={"thickness": 8, "len": 0.9, "tickvals": [0, 0.5, 1]},
            text=np.round(w, 2) if show_values else None, texttemplate="%{text}" if show_values else None,
            hovertemplate="<b>%{y}</b> → <b>%{x}</b><br>weight %{z:.3f}<extra></extra>",
        )
    )
    fig.update_layout(height=height or (150 if pooling else max(220, 30 * len(toks) + 90)),
                      margin={"l": 10, "r": 10, "t": 10, "b": 10},
                      xaxis={"side": "top", "tickangle": -45}, yaxis={"autorange": "reversed"})
    return fig


# --- Projector mode ------------------------------------------------------------------------------------


def _projector_sizes(node: object, parent: str = "") -> None:
    """Scale, in place, the sizes a figure's JSON sets itself: fonts, line widths, marker sizes, colour bars."""
    if isinstance(node, list):
        for item in node:
            _projector_sizes(item, parent)
        return
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if number and key == "size" and parent.endswith("font"):
            node[key] = max(value * PROJECTOR_SCALE, PROJECTOR_MIN_FONT)
        elif number and key == "size" and parent == "marker":
            node[key] = value * PROJECTOR_SCALE
        elif number and key == "width" and parent == "line":
            node[key] = value * 2
        elif number and key == "thickness" and parent == "colorbar":
            node[key] = value * PROJECTOR_SCALE
        else:
            _projector_sizes(value, key)


@themed
def for_projector(fig: go.Figure) -> go.Figure:
    """A copy of ``fig`` for a projector: text at least ``PROJECTOR_FONT`` px (sizes the figure sets
    itself ×1.5), hover labels as large, lines twice as thick, markers and colour bars larger, the
    chart ``PROJECTOR_HEIGHT`` times taller (larger heatmap cells), near-black text and axes, darker
    grid lines; a heatmap's numbers fit to its cells (:func:`_cell_numbers`), room for the title above keys on top,
    tick labels that push the margins. ``fig`` is left as it is (figures are cached and shared)."""
    spec = fig.to_plotly_json()  # a deep copy
    _projector_sizes(spec)
    layout = spec.setdefault("layout", {})
    font = layout.setdefault("font", {})
    font["size"] = max(font.get("size", 0), PROJECTOR_FONT)
    font["color"] = PROJECTOR_INK
    hover = layout.setdefault("hoverlabel", {}).setdefault("font", {})
    hover["size"] = max(hover.get("size", 0), PROJECTOR_FONT)
    if isinstance(layout.get("height"), (int, float)):
        layout["height"] = round(layout["height"] * PROJECTOR_HEIGHT)
    margin = layout.get("margin") or {}
    for side in ("t", "b", "l"):
        if isinstance(margin.get(side), (int, float)):
            margin[side] = round(margin[side] * PROJECTOR_HEIGHT)
    # Each text's own font, not just the layout's: st.plotly_chart's Streamlit theme sets the axes',
    # legend's and titles' fonts (smaller, grey), and those win over the layout's font.
    for name in [k for k in layout if k.startswith(("xaxis", "yaxis"))] or ["xaxis", "yaxis"]:
        axis = layout.setdefault(name, {})
        axis.setdefault("gridcolor", "#c4c4c4")
        axis.setdefault("linecolor", PROJECTOR_INK)
        axis.setdefault("zerolinecolor", "#8a8a8a")
        axis.setdefault("automargin", True)  # the larger tick labels push the margins instead of leaving the chart
        _ink(axis.setdefault("tickfont", {}))
        title = axis.get("title")
        if isinstance(title, dict):
            _ink(title.setdefault("font", {}))
    _ink(layout.setdefault("legend", {}).setdefault("font", {}))
    if isinstance(layout.get("title"), dict):
        _ink(layout["title"].setdefault("font", {}), PROJECTOR_FONT * 1.3)
        pad = layout["title"].get("pad") or {}
        if isinstance(pad.get("t"), (int, float)):  # room above a title placed from the chart's top edge
            pad["t"] = pad["t"] * 2
    for note in layout.get("annotations", []):
        _ink(note.setdefault("font", {}))
    for trace in [*spec.get("data", []), *(t for frame in spec.get("frames", []) for t in frame.get("data", []))]:
        if trace.get("type", "scatter") == "scatter" and "lines" in str(trace.get("mode", "lines")):
            line = trace.setdefault("line", {})
            line.setdefault("width", 4)  # plotly's default is 2
        if isinstance(trace.get("colorbar"), dict):
            _ink(trace["colorbar"].setdefault("tickfont", {}))
        if trace.get("type") == "heatmap" and trace.get("texttemplate"):
            narrow = isinstance(layout.get("meta"), dict) and layout["meta"].get("narrow")
            _cell_numbers(trace, PROJECTOR_NARROW_STRIP if narrow else PROJECTOR_STRIP)
        if trace.get("type") == "table":  # a table's columns share the width: numbers at the smallest size, not ×1.5
            for part in ("header", "cells"):
                trace.setdefault(part, {}).setdefault("font", {})["size"] = PROJECTOR_MIN_FONT
    _title_above_top_ticks(spec)
    return go.Figure(spec)


def _title_above_top_ticks(spec: dict) -> None:
    """The chart's title at its top edge, and a top margin that holds it at projector size and below it an x axis's
    tick labels if they are on top (a heatmap's keys). (plotly.js's automargin makes room for the larger of the two
    only.)"""
    layout = spec["layout"]
    title = layout.get("title")
    top = [a for k, a in layout.items() if k.startswith("xaxis") and isinstance(a, dict) and a.get("side") == "top"
           and a.get("showticklabels", True)]
    if not (isinstance(title, dict) and title.get("text")):
        return
    labels = [str(x) for t in spec.get("data", []) if isinstance(t.get("x"), list) for x in t["x"]] or [""]
    ticks = 0.0
    for axis in top:
        size = (axis.get("tickfont") or {}).get("size", PROJECTOR_FONT)
        angle = np.radians(abs(axis["tickangle"])) if isinstance(axis.get("tickangle"), (int, float)) else 0.0
        width = max(len(label) for label in labels) * _CHAR_WIDTH * size
        ticks = max(ticks, width * np.sin(angle) + 1.3 * size * np.cos(angle))
    lines = str(title["text"]).count("<br>") + 1
    size = (title.get("font") or {}).get("size", PROJECTOR_FONT)
    # (plotly.js draws a title of several lines higher than its pad says, by about a line per line after the first)
    pad = ((title.get("pad") or {}).get("t", 0) or 8) + (lines - 1) * size
    title.update(y=1, yanchor="top", yref="container", pad={**(title.get("pad") or {}), "t": pad})
    height = pad + 1.35 * size * lines + ticks + (12 if top else 6)
    margin = layout.setdefault("margin", {})
    margin["t"] = max(margin.get("t", 0), round(height))


def _cell_numbers(trace: dict, strip: float) -> None:
    """A heatmap's numbers in projector mode, side by side without overlapping. With several rows plotly.js fits
    them to the cells it draws (at most the chart's font); with one row it cannot (it measures a cell's height from
    the next row), so they are set to fit a ``strip`` px wide, or left to the hover labels when even
    :data:`PROJECTOR_MIN_FONT` px is too large."""
    font = trace.setdefault("textfont", {})
    z = _array(trace.get("z"))
    if z.ndim == 2 and z.shape[0] > 1:
        font.pop("size", None)
        return
    texts = (_array(trace["text"]) if trace.get("text") is not None else z).ravel()
    chars = max([len(_cell_text(t, trace["texttemplate"])) for t in texts] or [1])
    size = min(strip / (max(len(texts), 1) * (chars + 1) * _CHAR_WIDTH), PROJECTOR_FONT)
    if size >= PROJECTOR_MIN_FONT:
        font["size"] = int(size)
    else:
        trace["texttemplate"] = ""


def _array(value: object) -> np.ndarray:
    """A figure JSON's array as numpy (plotly sends numpy arrays as ``{"dtype", "bdata", "shape"}``)."""
    if isinstance(value, dict) and "bdata" in value:
        shape = [int(n) for n in str(value.get("shape", "")).split(",") if n.strip()] or [-1]
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"]).reshape(shape)
    return np.asarray([[]] if value is None else value, dtype=object)


def _cell_text(value: object, template: str) -> str:
    """About what plotly.js writes in a cell for ``value`` (its length is what counts)."""
    if isinstance(value, str) or "{text}" in template:
        return str(value)
    decimals = re.search(r"\.(\d)", template)
    return f"{float(value):.{decimals[1] if decimals else 4}f}" if value is not None else ""


def _ink(font: dict, size: float = PROJECTOR_FONT) -> None:
    """A plotly font dict near black, ``size`` px unless the figure set its own (already scaled)."""
    font.setdefault("size", size)
    font["color"] = PROJECTOR_INK
