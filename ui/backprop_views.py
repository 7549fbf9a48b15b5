"""The Backpropagation page's blocks of text and figures (pages/5_Backpropagation.py places them).

Each block draws what :mod:`attention_core.backprop` computed for the page; the widgets stay on the page.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
import streamlit as st

from attention_core.backprop import Difference, GradientCheck, PostCodeComparison, PostForward, PostInputs
from ui import chart_downloads, figures
from ui.explainer_views import charts_side_by_side, numbers
from ui.markup import token_chips

# What a gradient's cells are, for the Kb, softmax Jacobian, pooling and V gradients.
NOTES = {
    "∂L/∂Kb": "It is zero in exact arithmetic (what you see is rounding): adding the same vector to every key adds the same "
              "number to a whole row of scores, and softmax ignores that.",
    "∂α/∂e (softmax Jacobian)": "Each row's Jacobian is symmetric and its rows sum to 0, because α's rows always sum to 1.",
    "∂L/∂f": "Average pooling hands every token the same share, 1/n, of ∂L/∂p.",
    "∂L/∂V": "V, unlike Q and K, gets its gradient without passing through the softmax.",
}


def sentence(inp: PostInputs) -> None:
    """The tokens the model reads, and the words it dropped or cut."""
    st.markdown("**Tokens** (whitespace split, words outside GloVe's top 10,000 dropped, as in the post): "
                + token_chips(inp.tokens))
    if inp.unknown or inp.truncated:
        st.caption(" · ".join(filter(None, [f"dropped (unknown): {', '.join(inp.unknown)}" if inp.unknown else "",
                                             f"cut after 64 words: {inp.truncated}" if inp.truncated else ""])))


def _named(what: str, model: str, tokens: Sequence[str], detail: str | None = None) -> dict:
    """A chart's plotly config (:func:`chart_downloads.config`): its downloads named after ``what`` it shows, the
    model, the sentence (the words the model read) and ``detail``."""
    return chart_downloads.config(what, model=model, sentence=" ".join(tokens), detail=detail)


def prediction(forward: PostForward, labels: Sequence[str], target: str, inp: PostInputs, *, model: str) -> None:
    """The model's probabilities and its loss for the target label (``model``: the seed model's name, as in every
    chart's downloads below)."""
    left, right = st.columns([2, 1], gap="large")
    with left:
        st.plotly_chart(figures.probability_bars(dict(zip(labels, forward.p.tolist(), strict=True)),
                                                 predicted=labels[int(forward.p.argmax())]), key="backprop_probs",
                        config=_named("Probabilities", model, inp.tokens))
    right.metric(f"Loss for y = {target}", f"{float(forward.loss):.4f}", help="Cross-entropy: L = −log p_y")
    right.caption(f"x is {inp.x.shape[0]} × {inp.x.shape[1]}: each word's 50 GloVe numbers and its position 0, 1, 2, … "
                  f"All numbers on this page are float64.")


def gradient_table(checks: list[GradientCheck]) -> None:
    """Every gradient, hand-written against autograd, in the post's order."""
    st.header("Every gradient, by hand and by autograd")
    st.caption("In the post's order, from the loss back to the weights. *hand* = `post_backward`, the hand-written backward "
               "pass; *autograd* = `torch.autograd` on the post's forward pass. The post calls the pooled 3-vector p both "
               "before and after its softmax; ∂L/∂p is the gradient before it.")
    numbers({
        "step": [c.step for c in checks],
        "gradient": [c.name for c in checks],
        "shape": [" × ".join(map(str, c.shape)) for c in checks],
        "max |hand − autograd|": [c.max_abs_diff for c in checks],
        "largest |value|": [float(c.hand.abs().max()) for c in checks],
    }, {"max |hand − autograd|": "%.1e", "largest |value|": "%.2e"}, key="backprop_table", height=35 * (len(checks) + 1) + 3)
    worst = max(c.max_abs_diff for c in checks)
    st.success(f"All {len(checks)} hand-written gradients agree with autograd: the largest difference is {worst:.1e} "
               "(float64 rounding).", icon=":material/check_circle:")


def gradient_pair(pick: GradientCheck, row: int | None, labels: Sequence[str], inp: PostInputs, *, model: str) -> None:
    """One gradient, hand-written and by autograd, side by side (``row``: which row's softmax Jacobian)."""
    n_features = inp.x.shape[1]
    axis_labels = {"class": list(labels), "token": list(inp.tokens), "dim": [str(i + 1) for i in range(n_features)],
                   "input": [f"d{i + 1}" for i in range(n_features - 1)] + ["pos"]}
    hand, auto, axes = pick.hand.numpy(), pick.autograd.numpy(), pick.axes
    if row is not None:  # the softmax Jacobian: one n × n matrix per row of α
        hand, auto, axes = hand[row], auto[row], axes[1:]
    st.latex(pick.formula)
    rows, cols = (axis_labels[axes[0]], axis_labels[axes[1]]) if len(axes) == 2 else ([pick.name], axis_labels[axes[0]])
    lim = float(np.abs(hand).max())
    of_row = f"row {row + 1} “{inp.tokens[row]}”" if row is not None else None
    charts_side_by_side(("**hand-written** (`post_backward`)", figures.gradient_heatmap(hand, rows, cols, zmax=lim),
                         "backprop_hand", _named(f"Gradient {pick.name}, by hand", model, inp.tokens, of_row)),
                        ("**autograd**", figures.gradient_heatmap(auto, rows, cols, zmax=lim), "backprop_autograd",
                         _named(f"Gradient {pick.name}, by autograd", model, inp.tokens, of_row)))
    st.caption(f"{pick.name}: max |hand − autograd| = {pick.max_abs_diff:.1e} over all {pick.hand.numel():,} entries. "
               + NOTES.get(pick.name, ""))


# -- the post's own code ------------------------------------------------------------------------------


def post_code_intro() -> None:
    st.header("Where the post's code computes something else")
    st.caption("The derivation in the post is the one above. Its Julia code departs from it in three places; here is what "
               "each changes, for this sentence and model. (This app trains the seed preset with the gradients above and "
               "1/√d.) With a one-word sentence all three agree with the correct values.")


def differences(rows: list[Difference]) -> None:
    """How far each quantity of the post's code is from the correct one."""
    numbers(pd.DataFrame({
        "quantity": [r.name for r in rows],
        "max |post − correct|": [r.max_abs for r in rows],
        "relative difference": [100 * r.relative for r in rows],
        "size ratio ‖post‖ / ‖correct‖": [r.norm_ratio for r in rows],
    }), {"max |post − correct|": "%.2e", "relative difference": "%.1f %%", "size ratio ‖post‖ / ‖correct‖": "%.3f"},
        helps={"relative difference": "‖post − correct‖ / ‖correct‖"})


def jacobian_intro() -> None:
    st.markdown("The code fills ∂α/∂e with `α[j]*(1-α[j])` and `-α[k]*α[j]`. With a single index Julia counts down "
                "the columns, so `α[j]` is `α[j,1]`: the code builds the Jacobian of α's **first column** — the "
                "weights every word gives the first word — and applies that one matrix to every row. The correct "
                "Jacobian is a different matrix for each row i, built from row i.")


def jacobian(post: PostCodeComparison, tokens: Sequence[str], row: int, *, model: str) -> None:
    """(a): row ``row``'s softmax Jacobian against the post's one Jacobian, and what using it changes."""
    correct_j, post_j = post.jacobians[row].numpy(), post.post_jacobian.numpy()
    lim = float(max(np.abs(correct_j).max(), np.abs(post_j).max()))
    charts_side_by_side(
        (f"**correct J for row {row + 1}** (“{tokens[row]}”)", figures.gradient_heatmap(correct_j, tokens, tokens, zmax=lim),
         "backprop_jac", _named("Softmax Jacobian, correct", model, tokens, f"row {row + 1} “{tokens[row]}”")),
        ("**the post's code** (from α's first column, the same for every row)",
         figures.gradient_heatmap(post_j, tokens, tokens, zmax=lim), "backprop_jac_post",
         _named("Softmax Jacobian, the post's code", model, tokens)),
    )
    differences(post.jacobian)
    st.caption("The two agree when every row of α is alike — an untrained model attends almost uniformly, so pick it "
               "above to see the difference vanish — and drift apart as attention sharpens. ∂L/∂V does not pass "
               "through the softmax, so it is unaffected.")


def scale(post: PostCodeComparison, tokens: Sequence[str], *, model: str) -> None:
    """(b): the scores divided by √(d·n) instead of √d, and the flatter attention it gives."""
    n, d = post.n, post.d
    st.markdown(f"The post's text divides the scores by $\\sqrt{{d_k}}$, its code by `sqrt(length(q))`; `length` counts all "
                f"d × n = {d} × {n} entries of q. So this sentence's scores are divided by √{d * n} ≈ "
                f"{1 / post.post_scale:.1f} instead of √{d} ≈ {1 / post.scale:.1f}: {np.sqrt(n):.2f} times more.")
    charts_side_by_side(
        (f"**α with 1/√d** · mean largest weight per row {post.mean_largest_weight(post.alpha):.3f}",
         figures.attention_heatmap(post.alpha.numpy(), tokens), "backprop_alpha", _named("Attention α with 1/√d", model, tokens)),
        (f"**α with 1/√(d·n)**, the post's code · mean largest weight {post.mean_largest_weight(post.post_alpha):.3f}",
         figures.attention_heatmap(post.post_alpha.numpy(), tokens), "backprop_alpha_post",
         _named("Attention α with 1/√(d·n), the post's code", model, tokens)),
    )
    differences(post.scale_effect)
    st.caption(f"Why it matters: the divisor grows with the sentence, so the longer the sentence, the flatter its "
               f"attention (closer to a plain average of the words; uniform would be 1/n = {1 / n:.3f} per row) and the "
               "weaker the gradient that reaches Q and K: the longer the sentence, the less it teaches the model where "
               "to look. (The gradients here are the correct ones for each forward pass.)")


def backward_scale(post: PostCodeComparison) -> None:
    """(c): the scale the code's backward pass leaves out."""
    st.markdown(f"The code's local gradients `∂e_∂q, ∂e_∂k = k', q'` leave out the 1/√(d·n) its forward pass divided "
                f"by, so its ∂L/∂Q and ∂L/∂K come out √(d·n) ≈ {1 / post.post_scale:.1f} times the true gradient of "
                "its own forward pass — as if Q and K had a learning rate that many times larger than V, and a "
                "different one for every sentence length. Below: the post's backward pass in full (this and (a)) "
                "against the true gradient of its forward pass (with (b)).")
    differences(post.backward_scale)
    st.caption("∂L/∂V, ∂L/∂W and ∂L/∂b do not go through the scores, so they are unaffected.")


def code_behind(*functions: Callable) -> None:
    """An expander with the source of ``functions`` (of attention_core.backprop), each under its name."""
    with st.expander("Show the code that computed these numbers"):
        for fn in functions:
            st.markdown(f"`attention_core.backprop.{fn.__name__}`")
            st.code(inspect.getsource(fn), language="python")
