"""Backpropagation through attention: every gradient of the seed post, by hand and by autograd, and its own code."""

from __future__ import annotations

import inspect

import numpy as np
import pandas as pd
import streamlit as st
import torch

from attention_core import load_run
from attention_core.backprop import (
    gradient_report,
    post_code_comparison,
    seed_backward,
    seed_forward,
    seed_inputs,
    seed_params_float64,
)
from attention_core.errors import InputError
from attention_core.model import AttentionClassifier
from ui import figures
from ui.common import ROOT, embeddings, page_setup

page_setup("Backpropagation", "🔁")
st.title("Backpropagation through attention")
st.caption(
    "The seed post derives every gradient of its model — one attention head, a linear layer, average pooling, softmax "
    "and cross entropy — and writes the backward pass by hand. Here that backward pass runs on a real sentence in "
    "float64 and is checked, gradient by gradient, against PyTorch's autograd."
)
MODELS = {0: "untrained (random start)", 100: "after 100 epochs on small.csv", 1000: "after 1000 epochs (as in the post)"}
SEED_RUNS = ROOT / "data" / "seed_run"  # the seed preset on small.csv, seed 0: made by scripts/make_seed_run.sh


@st.cache_resource(show_spinner="Loading the seed model…", max_entries=3)
def seed_model(epochs: int) -> tuple[dict, tuple[str, ...]]:
    """The seed preset's weights (float64) after ``epochs`` on the post's 39 reviews, from the bundled runs: read-only."""
    run = load_run(SEED_RUNS / f"{max(epochs, 100)}_epochs")
    if epochs > 0:
        return seed_params_float64(run.model), run.label_names
    with torch.random.fork_rng():  # the same network before its first step: built as Trainer builds it
        torch.manual_seed(run.train_config.seed)
        return seed_params_float64(AttentionClassifier(run.model_config)), run.label_names


# -- inputs ---------------------------------------------------------------------------------------
c1, c2, c3 = st.columns([3, 1, 2], gap="medium")
text = c1.text_input("Sentence", "very sad as they both fail", key="backprop_text", max_chars=300)
model_epochs = c3.radio("Seed-preset model", list(MODELS), index=2, format_func=MODELS.get, key="backprop_model",
                        help="The trained models come with the app (data/seed_run); the untrained model is the same "
                             "network before its first step (torch seed 0, the post's N(0,1)/100 init with V = K).")
try:
    params, labels = seed_model(model_epochs)
except InputError as err:  # a bundled run missing or damaged
    st.error(f"The bundled seed model cannot be loaded: {err.message} — re-create it with "
             "`bash scripts/make_seed_run.sh`.")
    st.stop()
target = c2.selectbox("Target label y", labels, key="backprop_target")
y = labels.index(target)
try:
    inp = seed_inputs(text, embeddings(10_000))
except InputError as err:
    st.error(f"{err}")
    st.stop()
tokens = list(inp.tokens)
checks = gradient_report(inp.x, y, params)
forward = seed_forward(inp.x, y, params)

st.markdown("**Tokens** (whitespace split, words outside GloVe's top 10,000 dropped, as in the post): "
            + " ".join(f":blue-background[{t}]" for t in tokens))
if inp.unknown or inp.truncated:
    st.caption(" · ".join(filter(None, [f"dropped (unknown): {', '.join(inp.unknown)}" if inp.unknown else "",
                                         f"cut after 64 words: {inp.truncated}" if inp.truncated else ""])))
left, right = st.columns([2, 1], gap="large")
with left:
    st.plotly_chart(figures.probability_bars(dict(zip(labels, forward.p.tolist(), strict=True)),
                                             predicted=labels[int(forward.p.argmax())]), key="backprop_probs")
right.metric(f"Cross-entropy loss for y = {target}", f"{float(forward.loss):.4f}", help="L = −log p_y")
right.caption(f"x is {inp.x.shape[0]} × {inp.x.shape[1]}: each word's 50 GloVe numbers and its position 0, 1, 2, … "
              f"All numbers on this page are float64.")

# -- every gradient ----------------------------------------------------------------------------------
st.header("Every gradient, by hand and by autograd")
st.caption("In the post's order, from the loss back to the weights. *hand* = `seed_backward`, the hand-written backward "
           "pass; *autograd* = `torch.autograd` on the post's forward pass. The post calls the pooled 3-vector p both "
           "before and after its softmax; ∂L/∂p is the gradient before it.")
table = pd.DataFrame({
    "step": [c.step for c in checks],
    "gradient": [c.name for c in checks],
    "shape": [" × ".join(map(str, c.shape)) for c in checks],
    "max |hand − autograd|": [c.max_abs_diff for c in checks],
    "largest |value|": [float(c.hand.abs().max()) for c in checks],
})
st.dataframe(table, hide_index=True, key="backprop_table", height=35 * (len(table) + 1) + 3, column_config={
    "max |hand − autograd|": st.column_config.NumberColumn(format="%.1e"),
    "largest |value|": st.column_config.NumberColumn(format="%.2e"),
})
worst = max(c.max_abs_diff for c in checks)
st.success(f"All {len(checks)} hand-written gradients agree with autograd: the largest difference is {worst:.1e} "
           "(float64 rounding).", icon=":material/check_circle:")

AXES = {"class": list(labels), "token": tokens, "dim": [str(i + 1) for i in range(inp.x.shape[1])],
        "input": [f"d{i + 1}" for i in range(inp.x.shape[1] - 1)] + ["pos"]}
names = [c.name for c in checks]
g1, g2, _ = st.columns([1, 1, 1])
pick = checks[names.index(g1.selectbox("Gradient to look at", names, index=names.index("∂L/∂e"), key="backprop_gradient"))]
hand, auto, axes = pick.hand.numpy(), pick.autograd.numpy(), pick.axes
if axes[0] == "row":  # the softmax Jacobian: one n × n matrix per row of α
    row = g2.selectbox("Row of α (the word attending)", range(len(tokens)), format_func=lambda i: tokens[i],
                       key="backprop_row")
    hand, auto, axes = hand[row], auto[row], axes[1:]
st.latex(pick.formula)
rows, cols = (AXES[axes[0]], AXES[axes[1]]) if len(axes) == 2 else ([pick.name], AXES[axes[0]])
lim = float(np.abs(hand).max())
h1, h2 = st.columns(2, gap="large")
h1.markdown("**hand-written** (`seed_backward`)")
h1.plotly_chart(figures.gradient_heatmap(hand, rows, cols, zmax=lim), key="backprop_hand")
h2.markdown("**autograd**")
h2.plotly_chart(figures.gradient_heatmap(auto, rows, cols, zmax=lim), key="backprop_autograd")
NOTES = {
    "∂L/∂Kb": "It is zero in exact arithmetic (what you see is rounding): adding the same vector to every key adds the same "
              "number to a whole row of scores, and softmax ignores that.",
    "∂α/∂e (softmax Jacobian)": "Each row's Jacobian is symmetric and its rows sum to 0, because α's rows always sum to 1.",
    "∂L/∂f": "Average pooling hands every token the same share, 1/n, of ∂L/∂p.",
    "∂L/∂V": "V, unlike Q and K, gets its gradient without passing through the softmax.",
}
st.caption(f"{pick.name}: max |hand − autograd| = {pick.max_abs_diff:.1e} over all {pick.hand.numel():,} entries. "
           + NOTES.get(pick.name, ""))

# -- the post's own code -----------------------------------------------------------------------------
st.header("Where the post's code computes something else")
post = post_code_comparison(inp.x, y, params)
n, d = post.n, post.d
st.caption("The derivation in the post is the one above. Its Julia code departs from it in three places; here is what "
           "each changes, for this sentence and model. (This app trains the seed preset with the gradients above and "
           "1/√d.) With a one-word sentence all three agree with the correct values.")


def differences(rows: list) -> None:
    st.dataframe(pd.DataFrame({
        "quantity": [r.name for r in rows],
        "max |post − correct|": [r.max_abs for r in rows],
        "relative difference": [100 * r.relative for r in rows],
        "size ratio ‖post‖ / ‖correct‖": [r.norm_ratio for r in rows],
    }), hide_index=True, column_config={
        "max |post − correct|": st.column_config.NumberColumn(format="%.2e"),
        "relative difference": st.column_config.NumberColumn(format="%.1f %%", help="‖post − correct‖ / ‖correct‖"),
        "size ratio ‖post‖ / ‖correct‖": st.column_config.NumberColumn(format="%.3f"),
    })


tabs = st.tabs(["(a) the softmax Jacobian", "(b) dividing by √(d·n)", "(c) the scale in the backward pass"])
with tabs[0]:
    st.markdown("The code fills ∂α/∂e with `α[j]*(1-α[j])` and `-α[k]*α[j]`. With a single index Julia counts down "
                "the columns, so `α[j]` is `α[j,1]`: the code builds the Jacobian of α's **first column** — the "
                "weights every word gives the first word — and applies that one matrix to every row. The correct "
                "Jacobian is a different matrix for each row i, built from row i.")
    row = st.columns(3)[0].selectbox("Row i", range(n), format_func=lambda i: f"{i + 1}: {tokens[i]}", key="backprop_jac_row")
    correct_j, post_j = post.jacobians[row].numpy(), post.post_jacobian.numpy()
    lim = float(max(np.abs(correct_j).max(), np.abs(post_j).max()))
    j1, j2 = st.columns(2, gap="large")
    j1.markdown(f"**correct J for row {row + 1}** (“{tokens[row]}”)")
    j1.plotly_chart(figures.gradient_heatmap(correct_j, tokens, tokens, zmax=lim), key="backprop_jac")
    j2.markdown("**the post's code** (from α's first column, the same for every row)")
    j2.plotly_chart(figures.gradient_heatmap(post_j, tokens, tokens, zmax=lim), key="backprop_jac_post")
    differences(post.jacobian)
    st.caption("The two agree when every row of α is alike — an untrained model attends almost uniformly, so pick it "
               "above to see the difference vanish — and drift apart as attention sharpens. ∂L/∂V does not pass "
               "through the softmax, so it is unaffected.")
with tabs[1]:
    st.markdown(f"The post's text divides the scores by $\\sqrt{{d_k}}$, its code by `sqrt(length(q))`; `length` counts all "
                f"d × n = {d} × {n} entries of q. So this sentence's scores are divided by √{d * n} ≈ "
                f"{1 / post.post_scale:.1f} instead of √{d} ≈ {1 / post.scale:.1f}: {np.sqrt(n):.2f} times more.")
    a1, a2 = st.columns(2, gap="large")
    a1.markdown(f"**α with 1/√d** · mean largest weight per row {post.mean_largest_weight(post.alpha):.3f}")
    a1.plotly_chart(figures.attention_heatmap(post.alpha.numpy(), tokens), key="backprop_alpha")
    a2.markdown(f"**α with 1/√(d·n)**, the post's code · mean largest weight {post.mean_largest_weight(post.post_alpha):.3f}")
    a2.plotly_chart(figures.attention_heatmap(post.post_alpha.numpy(), tokens), key="backprop_alpha_post")
    differences(post.scale_effect)
    st.caption(f"Why it matters: the divisor grows with the sentence, so the longer the sentence, the flatter its "
               f"attention (closer to a plain average of the words; uniform would be 1/n = {1 / n:.3f} per row) and the "
               "weaker the gradient that reaches Q and K: the longer the sentence, the less it teaches the model where "
               "to look. (The gradients here are the correct ones for each forward pass.)")
with tabs[2]:
    st.markdown(f"The code's local gradients `∂e_∂q, ∂e_∂k = k', q'` leave out the 1/√(d·n) its forward pass divided "
                f"by, so its ∂L/∂Q and ∂L/∂K come out √(d·n) ≈ {1 / post.post_scale:.1f} times the true gradient of "
                "its own forward pass — as if Q and K had a learning rate that many times larger than V, and a "
                "different one for every sentence length. Below: the post's backward pass in full (this and (a)) "
                "against the true gradient of its forward pass (with (b)).")
    differences(post.backward_scale)
    st.caption("∂L/∂V, ∂L/∂W and ∂L/∂b do not go through the scores, so they are unaffected.")

with st.expander("Show the code that computed these numbers"):
    for fn in (seed_forward, seed_backward, gradient_report, post_code_comparison):
        st.markdown(f"`attention_core.backprop.{fn.__name__}`")
        st.code(inspect.getsource(fn), language="python")
