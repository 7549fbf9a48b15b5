"""Self-attention step by step (seed 001), and why the scores are divided by √d_k (seeds 000 and 001)."""

from __future__ import annotations

import inspect

import numpy as np
import pandas as pd
import streamlit as st
import torch

from attention_core import examples as ex
from attention_core.attention import attention_steps
from ui import explainer_figures as xf
from ui.common import page_setup

page_setup("Self-attention step by step", "🧮")
st.title(":material/functions: Self-attention step by step")
st.caption("Six tokens, three numbers each: follow every number from the inputs to the context vectors. Each number "
           "below is computed by `attention_steps`, the function the models in this app run. The example follows "
           "the post *Self-attention step by step in PyTorch* (after Raschka's *LLMs from scratch*, ch. 3).")

TOKENS = list(ex.JOURNEY_TOKENS)
DIMS = ["dim 1", "dim 2", "dim 3"]


@st.cache_data(show_spinner="Sampling random queries and keys…")
def curves(n_keys: int) -> ex.SqrtDkCurves:
    return ex.sqrt_dk_curves(n_keys=n_keys)


def reset_inputs() -> None:
    # A data editor keeps its edits in the browser: only a new key gives a fresh one.
    st.session_state["selfattn_inputs_version"] = st.session_state.get("selfattn_inputs_version", 0) + 1


# -- the inputs and the controls every step below uses ---------------------------------------------
left, right = st.columns([3, 2], gap="large")
with left:
    st.markdown("**Inputs** · one 3-d vector per token. Edit any number: every matrix below follows.")
    edited = st.data_editor(
        pd.DataFrame(ex.JOURNEY_INPUTS, index=TOKENS, columns=DIMS), num_rows="fixed",
        key=f"selfattn_inputs_{st.session_state.get('selfattn_inputs_version', 0)}",
        column_config={d: st.column_config.NumberColumn(d, format="%.2f", step=0.01, required=True) for d in DIMS},
    )
    st.button("Reset to the post's inputs", key="selfattn_reset", on_click=reset_inputs, icon=":material/restart_alt:")
with right:
    query_token = st.radio("Query token (the word that asks)", TOKENS, index=1, horizontal=True, key="selfattn_query")
    temperature = st.slider("Temperature T (divides the scores before the softmax)", 0.1, 5.0, 1.0, 0.1,
                            key="selfattn_temperature", help="T > 1 flattens the weights, T < 1 sharpens them. The post uses T = 1.")
    st.caption("T = 1 and the post's inputs reproduce the post's numbers. Try T = 0.1: each row of weights "
               "becomes almost one-hot.")
if edited.isna().to_numpy().any():
    st.error("Every token needs three numbers: fill in the empty cells, or reset to the post's inputs.")
    st.stop()
x = torch.tensor(edited.to_numpy(dtype=np.float32))  # (6, 3)
q = TOKENS.index(query_token)
qname = f"x^{{({q + 1})}}"

tabs = st.tabs(["1 · Without trainable weights", "2 · With trainable weights", "3 · Why divide by √d_k"])

# -- 1: q = k = v = the inputs --------------------------------------------------------------------
with tabs[0]:
    scaled = st.toggle("Divide the scores by √d_k = √3 (the post does not, in this part)", key="selfattn_scale_simple")
    steps = ex.simple_self_attention(x, scaled=scaled, temperature=temperature)
    scale = ex.effective_scale(3, scaled=scaled, temperature=temperature)
    c1, c2 = st.columns([2, 3], gap="large")
    with c1:
        st.subheader("Step 1 · Scores")
        st.markdown(f"How well does **{query_token}** match each token? The dot product of its vector with each input:")
        st.latex(rf"\omega_{{{q + 1}j}} = {qname} \cdot x^{{(j)}}, \qquad \Omega = X X^\top")
        st.plotly_chart(xf.matrix(steps.scores[q : q + 1].numpy(), [query_token], TOKENS, colorscale="Blues",
                                  symmetric=False, title=f"scores of “{query_token}”"), key="selfattn_query_scores")
    c2.plotly_chart(xf.matrix(steps.scores.numpy(), TOKENS, TOKENS, colorscale="Blues", symmetric=False, highlight=q,
                              title="all scores at once: Ω = X Xᵀ  (6 × 6)"), key="selfattn_scores")

    c1, c2 = st.columns([2, 3], gap="large")
    with c1:
        st.subheader("Step 2 · Normalise")
        st.markdown("Turn the scores into weights that sum to 1. Dividing by the sum works, but the softmax is "
                    "better: always positive, and it stretches the differences between scores.")
        st.latex(r"\frac{\omega_j}{\sum_i \omega_i} \qquad \frac{e^{\omega_j}}{\sum_i e^{\omega_i}} \qquad "
                 r"\frac{e^{\omega_j - \max \omega}}{\sum_i e^{\omega_i - \max \omega}}")
        factor = st.select_slider("Multiply the scores by", [1, 10, 100, 1000], key="selfattn_blowup",
                                  help="Large scores, as in wide models: watch the naive softmax overflow.")
    row = steps.scaled[q] * factor
    norms = ex.normalizations(row)
    with c2:
        st.markdown(f"**Scores of “{query_token}”{f' × {scale:.4g}' if scale != 1 else ''}"
                    f"{f' × {factor}' if factor > 1 else ''}, three ways** (float32)")
        st.plotly_chart(xf.number_table({"scores in": row.numpy(), "scores / sum": norms.by_sum.numpy(),
                                         "naive softmax": norms.naive_softmax.numpy(),
                                         "stable softmax": norms.stable_softmax.numpy()}, TOKENS),
                        key="selfattn_normalizations")
        if not np.isfinite(norms.naive_softmax.numpy()).all():
            st.caption(f"**The naive softmax broke:** the largest score is {row.max().item():.1f}, and `exp` of "
                       "anything above 88.7 is `inf` in float32, so the ratio is `inf / inf = nan`. The stable "
                       "softmax subtracts the row's maximum first, so every `exp` is at most 1: same result, no overflow.")
        else:
            st.caption("The naive and the stable softmax agree here. Multiply the scores by 100 to see the naive one "
                       "overflow. The stable version subtracts the row's maximum first; the maximum cancels in the ratio.")

    c1, c2 = st.columns([2, 3], gap="large")
    with c1:
        st.subheader("Step 3 · Weights for every query")
        s_formula = r"1/(\sqrt{3}\,T)" if scaled else "1/T"
        st.latex(rf"A = \mathrm{{softmax}}(\Omega \cdot s), \quad s = {s_formula} = {scale:.4g}")
        st.markdown("Each row is one query's weights; each row sums to 1.")
    c2.plotly_chart(xf.matrix(steps.weights.numpy(), TOKENS, TOKENS, colorscale="Blues", symmetric=False, highlight=q,
                              zmin=0, zmax=1, title="attention weights A  (6 × 6)"), key="selfattn_weights")

    c1, c2 = st.columns([2, 3], gap="large")
    with c1:
        st.subheader("Step 4 · Context vectors")
        st.markdown(f"The context vector of **{query_token}** is the weighted average of all the input vectors:")
        terms = [rf"{a:.4f}\,x^{{({j + 1})}}" for j, a in enumerate(steps.weights[q].tolist())]
        z_values = ", ".join(f"{v:.4f}" for v in steps.output[q].tolist())
        st.latex(rf"""\begin{{aligned}} z^{{({q + 1})}} &= \textstyle\sum_j \alpha_{{{q + 1}j}}\, x^{{(j)}} \\
                 &= {terms[0]} + {terms[1]} \\ &\quad + {terms[2]} + {terms[3]} \\ &\quad + {terms[4]} + {terms[5]} \\
                 &= [{z_values}] \end{{aligned}}""")
    c2.plotly_chart(xf.matrix(steps.output.numpy(), TOKENS, DIMS, highlight=q, title="context vectors Z = A X  (6 × 3)"),
                    key="selfattn_context")
    with st.expander("The code that computed every number above"):
        st.code(inspect.getsource(attention_steps), language="python")
        st.code(inspect.getsource(ex.simple_self_attention) + "\n" + inspect.getsource(ex.softmax_stable), language="python")

# -- 2: W_query, W_key, W_value -------------------------------------------------------------------
with tabs[1]:
    scaled = st.toggle("Divide the scores by √d_k = √2 (the post does)", value=True, key="selfattn_scale")
    sa = ex.trainable_self_attention(x, scaled=scaled, temperature=temperature)
    st.markdown("Three matrices project each 3-d input to a 2-d **query** (what a token looks for), **key** (what it "
                "offers) and **value** (what it passes on). The post draws them with `torch.manual_seed(123)`, then "
                "`torch.rand(3, 2)` three times; training would change them.")
    pairs = ["d 1", "d 2"]
    cols = st.columns(3)
    for col, name, w in zip(cols, ("W_query", "W_key", "W_value"), (sa.w_query, sa.w_key, sa.w_value), strict=True):
        col.plotly_chart(xf.matrix(w.numpy(), DIMS, pairs, title=f"{name}  (3 × 2)"), key=f"selfattn_{name}")
    st.caption("The post prints `W_query` under the label “Key matrix weights” (a copy-paste slip); the real "
               "`W_key`, shown here, appears in its next cell.")
    cols = st.columns(3)
    for col, name, t in zip(cols, ("queries Q = X W_query", "keys K = X W_key", "values V = X W_value"),
                            (sa.queries, sa.keys, sa.values), strict=True):
        col.plotly_chart(xf.matrix(t.numpy(), TOKENS, pairs, highlight=q if "Q" in name else None, title=f"{name}  (6 × 2)"),
                         key=f"selfattn_{name.split()[0]}_matrix")
    c1, c2 = st.columns(2, gap="large")
    c1.plotly_chart(xf.matrix(sa.steps.scores.numpy(), TOKENS, TOKENS, colorscale="Blues", symmetric=False, highlight=q,
                              title="scores Q Kᵀ  (6 × 6)"), key="selfattn_qk_scores")
    c2.plotly_chart(xf.matrix(sa.steps.weights.numpy(), TOKENS, TOKENS, colorscale="Blues", symmetric=False, highlight=q,
                              zmin=0, zmax=1, title=f"weights A = softmax(Q Kᵀ · {sa.scale:.4g})  (6 × 6)"),
                    key="selfattn_qk_weights")
    c1, c2 = st.columns(2, gap="large")
    root = r"\sqrt{2}\," if scaled else ""
    z_values = ", ".join(f"{v:.4f}" for v in sa.steps.output[q].tolist())
    with c1:
        st.markdown(f"The context vector of **{query_token}**: its row of weights times the values.")
        st.latex(rf"z^{{({q + 1})}} = \mathrm{{softmax}}\!\left(\frac{{q^{{({q + 1})}} K^\top}}{{{root}T}}\right) V = [{z_values}]")
        st.caption("With the post's inputs, T = 1 and scaling on, “journey” gives [0.3061, 0.8210], as in the post.")
    c2.plotly_chart(xf.matrix(sa.steps.output.numpy(), TOKENS, pairs, highlight=q, title="context vectors Z = A V  (6 × 2)"),
                    key="selfattn_qk_context")

    st.subheader("Two classes, two initialisations")
    v = ex.compare_v1_v2(x)
    c1, c2, c3 = st.columns(3, gap="large")
    c1.plotly_chart(xf.matrix(v.v1_output.numpy(), TOKENS, pairs, title="SelfAttentionV1 · manual_seed(123)"),
                    key="selfattn_v1")
    c2.plotly_chart(xf.matrix(v.v2_output.numpy(), TOKENS, pairs, title="SelfAttentionV2 · manual_seed(789)"),
                    key="selfattn_v2")
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
    st.dataframe(pd.DataFrame(ex.init_spread()), hide_index=True,
                 column_config={c: st.column_config.NumberColumn(format="%.3f") for c in
                                ("std of queries", "std of scaled scores", "largest weight per row (mean)")})
    with st.expander("The code: SelfAttentionV1 and SelfAttentionV2 (on attention_steps)"):
        st.code(inspect.getsource(ex.SelfAttentionV1) + "\n\n" + inspect.getsource(ex.SelfAttentionV2), language="python")
        st.code(inspect.getsource(ex.trainable_self_attention), language="python")

# -- 3: why divide by √d_k ------------------------------------------------------------------------
with tabs[2]:
    c1, c2 = st.columns(2, gap="large")
    with c1:
        st.markdown("**The norm argument** (the Julia post). A vector's length grows as the square root of its "
                    "dimension:")
        st.latex(r"\left\|(2, 2)\right\| = \sqrt{2^2 + 2^2} = 2\sqrt{2}, \qquad \left\|(2, 2, 2)\right\| = 2\sqrt{3}")
        st.dataframe(pd.DataFrame(ex.norm_of_constant(2.0, (2, 3, 16, 1024)), columns=["d", "‖(2, …, 2)‖ (torch)", "2·√d"]),
                     hide_index=True)
    with c2:
        st.markdown("**The gradient argument** (the PyTorch post). So does a dot product: for q and k with "
                    "independent N(0, 1) entries, q·k is a sum of d terms of variance 1, so its standard deviation "
                    "is √d. Large scores push the softmax towards a step function, one-hot, where its gradient is "
                    "nearly 0 and learning stalls. Dividing by √d_k keeps the spread at 1 whatever d is.")
        st.latex(r"\mathrm{Var}(q \cdot k) = d \quad\Rightarrow\quad \mathrm{Var}\!\left(\frac{q \cdot k}{\sqrt{d}}\right) = 1")
    c1, _ = st.columns([1, 2])
    n_keys = c1.select_slider("Number of keys per query", [4, 8, 16, 32, 64], value=16, key="selfattn_keys")
    c = curves(n_keys)
    st.plotly_chart(xf.sqrt_dk_figure(c.dims, {"std": (c.dot_std_unscaled, c.dot_std_scaled),
                                               "entropy": (c.entropy_unscaled, c.entropy_scaled),
                                               "grad": (c.grad_norm_unscaled, c.grad_norm_scaled)}, n_keys=n_keys),
                    key="selfattn_sqrt_dk")
    st.caption(f"{c.n_samples} random queries per d, each against {n_keys} random keys, all entries N(0, 1) (fixed "
               "seed). Left: the spread of the softmax inputs. Middle: the entropy of the weights (ln n for uniform "
               "weights, 0 for one-hot). Right: the Frobenius norm of the softmax's Jacobian diag(p) − p pᵀ at its "
               "input, the factor every gradient through the softmax is multiplied by.")
    c1, c2 = st.columns([1, 2], gap="large")
    dim = c1.select_slider("Look at one query at d =", list(ex.SQRT_DK_DIMS), value=512, key="selfattn_dim")
    c1.caption("One random query against the same number of random keys. Unscaled, a large d gives one key almost "
               "all the weight; scaled, the weights stay spread out, as at small d.")
    unscaled_w, scaled_w = ex.softmax_at_dim(dim, n_keys=n_keys)
    c2.plotly_chart(xf.softmax_bars(unscaled_w, scaled_w, d=dim), key="selfattn_one_query")
    with st.expander("The code that computed these curves"):
        st.code(inspect.getsource(ex.sqrt_dk_curves) + "\n\n" + inspect.getsource(ex.softmax_jacobian), language="python")
