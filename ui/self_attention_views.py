"""The Self-attention page's blocks of text and figures (pages/3_Self_attention.py places them).

Each block draws what :mod:`attention_core.examples` computed for the page; the widgets stay on the page.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st
import torch
from streamlit.delta_generator import DeltaGenerator

from attention_core import examples as ex
from attention_core.attention import AttentionSteps
from ui import chart_downloads
from ui import explainer_figures as xf
from ui.explainer_views import charts_side_by_side, numbers

TOKENS = list(ex.JOURNEY_TOKENS)
SENTENCE = " ".join(TOKENS)  # the post's sentence, in the charts' downloads
DIMS = ["dim 1", "dim 2", "dim 3"]
PAIRS = ["d 1", "d 2"]  # the two dimensions of the trainable part's queries, keys and values


def _named(what: str, q: int | None = None, detail: str | None = None) -> dict:
    """A chart's plotly config (:func:`chart_downloads.config`): its downloads named after ``what`` it shows, the post's
    sentence, and the query it outlines (``q``), if any, then ``detail``."""
    query = f"query “{TOKENS[q]}”" if q is not None else None
    return chart_downloads.config(what, sentence=SENTENCE, detail=", ".join(d for d in (query, detail) if d) or None)


def _step(title: str) -> tuple[DeltaGenerator, DeltaGenerator]:
    """A step of part 1: its explanation on the left (under ``title``), its matrix on the right."""
    left, right = st.columns([2, 3], gap="large")
    left.subheader(title)
    return left, right


# -- part 1: q = k = v = the inputs -------------------------------------------------------------------


def scores_step(steps: AttentionSteps, q: int) -> None:
    """Step 1: the query's scores, and all scores at once."""
    left, right = _step("Step 1 · Scores")
    with left:
        st.markdown(f"How well does **{TOKENS[q]}** match each token? The dot product of its vector with each input:")
        st.latex(rf"\omega_{{{q + 1}j}} = x^{{({q + 1})}} \cdot x^{{(j)}}, \qquad \Omega = X X^\top")
        # A column, j down the side: each score gets the column's width (as a row, six 4-decimal numbers run together)
        st.plotly_chart(xf.blue_matrix(steps.scores[q : q + 1].T.numpy(), TOKENS, [TOKENS[q]],
                                       title=f"scores of “{TOKENS[q]}”"), key="selfattn_query_scores",
                        config=_named("Scores of one query", q))
    right.plotly_chart(xf.blue_matrix(steps.scores.numpy(), TOKENS, TOKENS, highlight=q,
                                      title="all scores at once: Ω = X Xᵀ  (6 × 6)"), key="selfattn_scores",
                       config=_named("All scores", q))


def normalise_step() -> tuple[DeltaGenerator, DeltaGenerator]:
    """Step 2's explanation; returns its two columns (the page adds its widget on the left, the table on the right)."""
    left, right = _step("Step 2 · Normalise")
    left.markdown("Turn the scores into weights that sum to 1. Dividing by the sum works, but the softmax is "
                  "better: always positive, and it stretches the differences between scores.")
    left.latex(r"\frac{\omega_j}{\sum_i \omega_i} \qquad \frac{e^{\omega_j}}{\sum_i e^{\omega_i}} \qquad "
               r"\frac{e^{\omega_j - \max \omega}}{\sum_i e^{\omega_i - \max \omega}}")
    return left, right


def normalizations(row: torch.Tensor, norms: ex.Normalizations, q: int, *, scale: float, factor: int) -> None:
    """Step 2's table: the query's scores (× ``scale`` × ``factor``) normalised three ways, and what it shows."""
    st.markdown(f"**Scores of “{TOKENS[q]}”{f' × {scale:.4g}' if scale != 1 else ''}"
                f"{f' × {factor}' if factor > 1 else ''}, three ways** (float32)")
    st.plotly_chart(xf.number_table({"scores in": row.numpy(), "scores / sum": norms.by_sum.numpy(),
                                     "naive softmax": norms.naive_softmax.numpy(),
                                     "stable softmax": norms.stable_softmax.numpy()}, TOKENS),
                    key="selfattn_normalizations",
                    config=_named("Scores normalised three ways", q, f"scores × {scale * factor:.4g}" if scale * factor != 1 else None))
    if not np.isfinite(norms.naive_softmax.numpy()).all():
        st.caption(f"**The naive softmax broke:** the largest score is {row.max().item():.1f}, and `exp` of "
                   "anything above 88.7 is `inf` in float32, so the ratio is `inf / inf = nan`. The stable "
                   "softmax subtracts the row's maximum first, so every `exp` is at most 1: same result, no overflow.")
    else:
        st.caption("The naive and the stable softmax agree here. Multiply the scores by 100 to see the naive one "
                   "overflow. The stable version subtracts the row's maximum first; the maximum cancels in the ratio.")


def weights_step(steps: AttentionSteps, q: int, *, scaled: bool, scale: float) -> None:
    """Step 3: the softmax of every row of scores."""
    left, right = _step("Step 3 · Weights for every query")
    s_formula = r"1/(\sqrt{3}\,T)" if scaled else "1/T"
    left.latex(rf"A = \mathrm{{softmax}}(\Omega \cdot s), \quad s = {s_formula} = {scale:.4g}")
    left.markdown("Each row is one query's weights; each row sums to 1.")
    right.plotly_chart(xf.blue_matrix(steps.weights.numpy(), TOKENS, TOKENS, highlight=q, zmin=0, zmax=1,
                                      title="attention weights A  (6 × 6)"), key="selfattn_weights",
                       config=_named("Attention weights", q, f"scale s = {scale:.4g}"))


def context_step(steps: AttentionSteps, q: int) -> None:
    """Step 4: the query's context vector written out as a weighted sum, and every context vector."""
    left, right = _step("Step 4 · Context vectors")
    left.markdown(f"The context vector of **{TOKENS[q]}** is the weighted average of all the input vectors:")
    terms = [rf"{a:.4f}\,x^{{({j + 1})}}" for j, a in enumerate(steps.weights[q].tolist())]
    z_values = ", ".join(f"{v:.4f}" for v in steps.output[q].tolist())
    left.latex(rf"""\begin{{aligned}} z^{{({q + 1})}} &= \textstyle\sum_j \alpha_{{{q + 1}j}}\, x^{{(j)}} \\
                 &= {terms[0]} + {terms[1]} \\ &\quad + {terms[2]} + {terms[3]} \\ &\quad + {terms[4]} + {terms[5]} \\
                 &= [{z_values}] \end{{aligned}}""")
    right.plotly_chart(xf.matrix(steps.output.numpy(), TOKENS, DIMS, highlight=q, title="context vectors Z = A X  (6 × 3)"),
                       key="selfattn_context", config=_named("Context vectors", q))


# -- part 2: W_query, W_key, W_value ------------------------------------------------------------------


def trainable_steps(sa: ex.TrainableSelfAttention, q: int, *, scaled: bool) -> None:
    """The three projections, queries/keys/values, scores, weights and context vectors with trainable weights."""
    st.markdown("Three matrices project each 3-d input to a 2-d **query** (what a token looks for), **key** (what it "
                "offers) and **value** (what it passes on). The post draws them with `torch.manual_seed(123)`, then "
                "`torch.rand(3, 2)` three times; training would change them.")
    charts_side_by_side(*[(None, xf.matrix(w.numpy(), DIMS, PAIRS, title=f"{name}  (3 × 2)"), f"selfattn_{name}",
                           _named(f"Trainable weights {name}"))
                          for name, w in (("W_query", sa.w_query), ("W_key", sa.w_key), ("W_value", sa.w_value))],
                        gap="small")
    st.caption("The post prints `W_query` under the label “Key matrix weights” (a copy-paste slip); the real "
               "`W_key`, shown here, appears in its next cell.")
    charts_side_by_side(*[(None, xf.matrix(t.numpy(), TOKENS, PAIRS, highlight=q if "Q" in name else None,
                                           title=f"{name}  (6 × 2)"), f"selfattn_{name.split()[0]}_matrix",
                           _named(name.split()[0].capitalize(), q if "Q" in name else None))
                          for name, t in (("queries Q = X W_query", sa.queries), ("keys K = X W_key", sa.keys),
                                          ("values V = X W_value", sa.values))], gap="small")
    charts_side_by_side(
        (None, xf.blue_matrix(sa.steps.scores.numpy(), TOKENS, TOKENS, highlight=q, title="scores Q Kᵀ  (6 × 6)"),
         "selfattn_qk_scores", _named("Scores with trainable weights", q)),
        (None, xf.blue_matrix(sa.steps.weights.numpy(), TOKENS, TOKENS, highlight=q, zmin=0, zmax=1,
                              title=f"weights A = softmax(Q Kᵀ · {sa.scale:.4g})  (6 × 6)"), "selfattn_qk_weights",
         _named("Weights with trainable weights", q, f"scale s = {sa.scale:.4g}")),
    )
    c1, c2 = st.columns(2, gap="large")
    root = r"\sqrt{2}\," if scaled else ""
    z_values = ", ".join(f"{v:.4f}" for v in sa.steps.output[q].tolist())
    c1.markdown(f"The context vector of **{TOKENS[q]}**: its row of weights times the values.")
    c1.latex(rf"z^{{({q + 1})}} = \mathrm{{softmax}}\!\left(\frac{{q^{{({q + 1})}} K^\top}}{{{root}T}}\right) V = [{z_values}]")
    c1.caption("With the post's inputs, T = 1 and scaling on, “journey” gives [0.3061, 0.8210], as in the post.")
    c2.plotly_chart(xf.matrix(sa.steps.output.numpy(), TOKENS, PAIRS, highlight=q, title="context vectors Z = A V  (6 × 2)"),
                    key="selfattn_qk_context", config=_named("Context vectors with trainable weights", q))


def two_classes(v: ex.V1V2, spread: list[dict]) -> None:
    """SelfAttentionV1 and V2 side by side, and why their initialisations differ (with ``spread``, ex.init_spread())."""
    st.subheader("Two classes, two initialisations")
    c1, c2, c3 = st.columns(3, gap="large")
    c1.plotly_chart(xf.matrix(v.v1_output.numpy(), TOKENS, PAIRS, title="SelfAttentionV1<br>manual_seed(123)"),
                    key="selfattn_v1", config=_named("SelfAttentionV1", detail="manual_seed(123)"))
    c2.plotly_chart(xf.matrix(v.v2_output.numpy(), TOKENS, PAIRS, title="SelfAttentionV2<br>manual_seed(789)"),
                    key="selfattn_v2", config=_named("SelfAttentionV2", detail="manual_seed(789)"))
    c3.caption("Both classes as the post runs them, on the inputs above (always T = 1 and scaled). V1 draws the same "
               "three matrices as the steps above, so it returns the same context vectors; V2 starts from other "
               "weights, hence other numbers.")
    st.markdown(
        "Both compute the same thing; only the starting weights differ. **V1** draws them with `torch.rand`: uniform on "
        "[0, 1), all positive, with the same range whatever the input width. A query entry sums d_in inputs times such "
        "weights, so it grows with the width (as √d_in for zero-mean inputs, as d_in for all-positive ones like the "
        "post's); a score multiplies two such vectors and grows faster than dividing by √d_k can undo, so the softmax "
        "starts out nearly one-hot, where its gradient is close to 0 and learning stalls. **V2** uses `nn.Linear`, "
        "whose weights are drawn from U(−1/√d_in, 1/√d_in) (Kaiming-uniform): centred on 0 and narrower as the layer "
        "gets wider, so a projection keeps about the spread of its inputs at any width (std ≈ 1/√3 ≈ 0.58 below) and "
        "the weights start soft, where training can move them. (`nn.Linear` stores its weight as d_out × d_in and "
        "computes x Wᵀ.) With three inputs it hardly matters; the table shows wider layers, on N(0, 1) inputs:"
    )
    numbers(spread, dict.fromkeys(("std of queries", "std of scaled scores", "largest weight per row (mean)"), "%.3f"))


# -- part 3: why divide by √d_k -----------------------------------------------------------------------


def sqrt_dk_arguments(norms: list[tuple]) -> None:
    """The two arguments for √d_k: a vector's norm (with ``norms``, ex.norm_of_constant) and a dot product's spread."""
    c1, c2 = st.columns(2, gap="large")
    with c1:
        st.markdown("**The norm argument** (the Julia post). A vector's length grows as the square root of its "
                    "dimension:")
        st.latex(r"\left\|(2, 2)\right\| = \sqrt{2^2 + 2^2} = 2\sqrt{2}, \qquad \left\|(2, 2, 2)\right\| = 2\sqrt{3}")
        numbers(pd.DataFrame(norms, columns=["d", "‖(2, …, 2)‖ (torch)", "2·√d"]))
    with c2:
        st.markdown("**The gradient argument** (the PyTorch post). So does a dot product: for q and k with "
                    "independent N(0, 1) entries, q·k is a sum of d terms of variance 1, so its standard deviation "
                    "is √d. Large scores push the softmax towards a step function, one-hot, where its gradient is "
                    "nearly 0 and learning stalls. Dividing by √d_k keeps the spread at 1 whatever d is.")
        st.latex(r"\mathrm{Var}(q \cdot k) = d \quad\Rightarrow\quad \mathrm{Var}\!\left(\frac{q \cdot k}{\sqrt{d}}\right) = 1")


def sqrt_dk_curves(c: ex.SqrtDkCurves, n_keys: int) -> None:
    """The three curves over d, unscaled against scaled, and how they were sampled."""
    st.plotly_chart(xf.sqrt_dk_figure(c.dims, {"std": (c.dot_std_unscaled, c.dot_std_scaled),
                                               "entropy": (c.entropy_unscaled, c.entropy_scaled),
                                               "grad": (c.grad_norm_unscaled, c.grad_norm_scaled)}, n_keys=n_keys),
                    key="selfattn_sqrt_dk",
                    config=chart_downloads.config("Why divide by √d_k", detail=f"random queries, {n_keys} keys each"))
    st.caption(f"{c.n_samples} random queries per d, each against {n_keys} random keys, all entries N(0, 1) (fixed "
               "seed). Left: the spread of the softmax inputs. Middle: the entropy of the weights (ln n for uniform "
               "weights, 0 for one-hot). Right: the Frobenius norm of the softmax's Jacobian diag(p) − p pᵀ at its "
               "input, the factor every gradient through the softmax is multiplied by.")


def one_query(col: DeltaGenerator, unscaled: np.ndarray, scaled: np.ndarray, *, d: int, n_keys: int) -> None:
    """One random query's softmax weights at dimension ``d``, unscaled against scaled (in column ``col``)."""
    col.plotly_chart(xf.softmax_bars(unscaled, scaled, d=d), key="selfattn_one_query",
                     config=chart_downloads.config("Softmax of one random query", detail=f"d = {d}, {n_keys} keys"))
