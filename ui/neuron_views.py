"""Inspect › Neuron view: one head's attention for one query word, every number (after BertViz's neuron view).

The numbers are :func:`attention_core.neuron.neuron_view`'s: the query and key vectors the model computed, their
products dimension by dimension, the sum q·k, the score × 1/√d, and the softmax, which equals the row of the map the
Model view shows.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from attention_core import Run
from attention_core.errors import InputError
from attention_core.neuron import NeuronView, neuron_view
from ui import chart_downloads, figures
from ui.state import kept

STEPS = ("q·k", "× 1/√d", "softmax")  # the last figure's columns


@figures.themed
def neuron_figure(view: NeuronView) -> go.Figure:
    """Three panels over the tokens (rows): each token's key vector k, the products q_i·k_i, and the steps from
    their sum to the softmax; the query vector q is the first row of the first two panels."""
    tokens = [f"{i + 1} {t}" for i, t in enumerate(view.tokens)]
    rows = ["q (the label's query)" if view.pooling else f"q ({view.tokens[view.query]})", *tokens]
    q, k, products = view.q.numpy(), view.k.numpy(), view.products.numpy()
    dims = [f"{i + 1}" for i in range(view.head_dim)]
    steps = np.stack([view.scores.numpy(), view.scaled.numpy(), view.weights.numpy()], axis=1)  # (T, 3)
    # (the third panel's column names, on top, are its title)
    fig = make_subplots(rows=1, cols=3, column_widths=[0.36, 0.36, 0.28], horizontal_spacing=0.04, shared_yaxes=True,
                        subplot_titles=("q and each token's key k", "q_i × k_i (their sum is q·k)", ""))
    vectors = np.vstack([q[None], k])  # (1 + T, Dh)
    lim = float(np.abs(vectors).max()) or 1.0
    plim = float(np.abs(products).max()) or 1.0
    common = {"colorscale": "RdBu_r", "zmid": 0, "showscale": False, "xgap": 1, "ygap": 1}  # red above 0, blue below
    fig.add_trace(go.Heatmap(z=vectors, x=dims, y=rows, zmin=-lim, zmax=lim, **common,
                             hovertemplate="%{y}, dimension %{x}: %{z:.4f}<extra></extra>"), 1, 1)
    fig.add_trace(go.Heatmap(z=np.vstack([np.full((1, len(dims)), np.nan), products]), x=dims, y=rows, zmin=-plim,
                             zmax=plim, **common, hovertemplate="%{y}, dimension %{x}: q×k = %{z:.4f}<extra></extra>"),
                  1, 2)
    text = np.vstack([["", "", ""], [[f"{a:.2f}", f"{b:.2f}", f"{c:.2f}"] for a, b, c in steps]])
    fig.add_trace(go.Heatmap(z=np.vstack([np.full((1, 3), np.nan), np.c_[np.full((len(tokens), 2), np.nan), steps[:, 2]]]),
                             x=list(STEPS), y=rows, text=text, texttemplate="%{text}", zmin=0, zmax=1,
                             colorscale=figures.COLORSCALE, showscale=False, xgap=1, ygap=1,
                             hovertemplate="%{y}: %{x} = %{text}<extra></extra>"), 1, 3)
    fig.update_yaxes(autorange="reversed", tickfont={"size": 12}, showgrid=False)
    fig.update_xaxes(showgrid=False, zeroline=False)
    fig.update_xaxes(showticklabels=False, row=1, col=1)
    fig.update_xaxes(showticklabels=False, row=1, col=2)
    fig.update_xaxes(side="top", row=1, col=3)
    fig.update_layout(height=max(260, 26 * len(rows) + 110), margin={"l": 10, "r": 10, "t": 60, "b": 10})
    return fig


def step_by_step(view: NeuronView, key: int) -> str:
    """One key's numbers in a sentence: the sum, the scaling and the softmax with their real values."""
    word, query = view.tokens[key], "the label's query" if view.pooling else view.tokens[view.query]
    terms = " + ".join(f"{a:.2f}×{b:.2f}" for a, b in zip(view.q[:3].tolist(), view.k[key, :3].tolist(), strict=True))
    others = "" if view.head_dim <= 3 else f" + … ({view.head_dim - 3} more)"
    return (f"For **{word}**: q·k = {terms}{others} = **{view.scores[key]:.3f}**; × 1/√{view.head_dim} = "
            f"{view.scale:.3f} gives **{view.scaled[key]:.3f}**; the softmax over the {len(view.tokens)} tokens, "
            f"e^{view.scaled[key]:.3f} / Σ e^(each token's), gives **{view.weights[key]:.3f}**: the share of "
            f"“{query}”'s attention that goes to “{word}”.")


def neuron_tab(run: Run, text: str, tokens: Sequence[str], *, model: str) -> None:
    """The tab: pick a map, a head and a query word; the figure and the numbers of the most attended key."""
    cfg = run.model_config
    names = cfg.map_names()
    c1, c2, c3 = st.columns(3)
    layer = c1.selectbox("Layer", range(len(names)), format_func=names.__getitem__,
                         **kept("neuron_layer", 0, range(len(names))))
    head = c2.selectbox("Head", range(cfg.n_heads), format_func=lambda h: f"Head {h + 1}",
                        **kept("neuron_head", 0, range(cfg.n_heads)))
    pooling = layer >= cfg.n_layers
    if pooling:  # one query, the label's: nothing to pick
        c3.selectbox("Query word", ["the label's query"], disabled=True, key="neuron_query_pooling")
        query = 0
    else:
        positions = list(range(len(tokens)))
        query = c3.selectbox("Query word", positions, format_func=lambda i: f"{i + 1} · {tokens[i]}",
                             **kept("neuron_query", 0, positions),
                             help="The word whose attention is taken apart: its query vector against every word's key.")
        query = query if query in positions else 0  # a shorter sentence than the last one's word
    try:
        encoded, batch = run.encoder.encode_for_model(text)
    except InputError as err:
        st.error(f"{err}")
        return
    view = neuron_view(run.model, encoded, batch, layer, head, query)
    asking = "the label's query (a learned vector)" if pooling else f"“{tokens[query]}”"
    st.caption(f"How {names[layer]} · head {head + 1} decides where {asking} looks: its query vector q "
               f"(first row) against each token's key vector k, dimension by dimension ({view.head_dim} dimensions: "
               "red above 0, blue below); their products; the sum q·k, scaled by 1/√d, and the softmax over the tokens, "
               "which is the row of the map the Model view shows.")
    st.plotly_chart(neuron_figure(view), key="inspect_neuron",
                    config=chart_downloads.config("Neuron view", model=model, sentence=text, layer=names[layer],
                                                  head=f"head {head + 1}"))
    st.markdown(step_by_step(view, int(view.weights.argmax())))
