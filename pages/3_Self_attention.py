"""Self-attention step by step (seed 001), and why the scores are divided by √d_k (seeds 000 and 001)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st
import torch

from attention_core import examples as ex
from attention_core.attention import attention_steps
from ui import self_attention_views as views
from ui import view_link
from ui.common import kept, page_setup
from ui.explainer_views import code_expander, source
from ui.self_attention_views import DIMS, TOKENS

page_setup("Self-attention step by step", "🧮")
st.title(":material/functions: Self-attention step by step")
st.caption("Six tokens, three numbers each: follow every number from the inputs to the context vectors. Each number "
           "below is computed by `attention_steps`, the function the models in this app run. The example follows "
           "the post *Self-attention step by step in PyTorch* (after Raschka's *LLMs from scratch*, ch. 3).")
TABS = {"plain": "1 · Without trainable weights", "trainable": "2 · With trainable weights", "sqrt-dk": "3 · Why divide by √d_k"}
link = view_link.ViewLink("Self attention")  # ?query=<token>&tab=plain|trainable|sqrt-dk
link.add(view_link.choice("query", "selfattn_query", {t.lower(): t for t in TOKENS}, TOKENS[1].lower(), what="token"),
         view_link.choice("tab", "selfattn_tab", TABS, "plain"))
link.write()


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
    query_token = st.radio("Query token (the word that asks)", TOKENS, horizontal=True, **kept("selfattn_query", TOKENS[1], TOKENS))
    temperature = st.slider("Temperature T (divides the scores before the softmax)", 0.1, 5.0, 1.0, 0.1,
                            key="selfattn_temperature", help="T > 1 flattens the weights, T < 1 sharpens them. The post uses T = 1.")
    st.caption("T = 1 and the post's inputs reproduce the post's numbers. Try T = 0.1: each row of weights "
               "becomes almost one-hot.")
if edited.isna().to_numpy().any():
    st.error("Every token needs three numbers: fill in the empty cells, or reset to the post's inputs.")
    st.stop()
x = torch.tensor(edited.to_numpy(dtype=np.float32))  # (6, 3)
q = TOKENS.index(query_token)

tabs = view_link.tabs("selfattn_tab", list(TABS.values()))

# -- 1: q = k = v = the inputs --------------------------------------------------------------------
with tabs[0]:
    scaled = st.toggle("Divide the scores by √d_k = √3 (the post does not, in this part)", key="selfattn_scale_simple")
    steps = ex.simple_self_attention(x, scaled=scaled, temperature=temperature)
    scale = ex.effective_scale(3, scaled=scaled, temperature=temperature)
    views.scores_step(steps, q)
    left, right = views.normalise_step()
    factor = left.select_slider("Multiply the scores by", [1, 10, 100, 1000], key="selfattn_blowup",
                                help="Large scores, as in wide models: watch the naive softmax overflow.")
    row = steps.scaled[q] * factor
    with right:
        views.normalizations(row, ex.normalizations(row), q, scale=scale, factor=factor)
    views.weights_step(steps, q, scaled=scaled, scale=scale)
    views.context_step(steps, q)
    code_expander("The code that computed every number above", source(attention_steps),
                  source(ex.simple_self_attention, ex.softmax_stable, sep="\n"))

# -- 2: W_query, W_key, W_value -------------------------------------------------------------------
with tabs[1]:
    scaled = st.toggle("Divide the scores by √d_k = √2 (the post does)", value=True, key="selfattn_scale")
    views.trainable_steps(ex.trainable_self_attention(x, scaled=scaled, temperature=temperature), q, scaled=scaled)
    views.two_classes(ex.compare_v1_v2(x), ex.init_spread())
    code_expander("The code: SelfAttentionV1 and SelfAttentionV2 (on attention_steps)",
                  source(ex.SelfAttentionV1, ex.SelfAttentionV2), source(ex.trainable_self_attention))

# -- 3: why divide by √d_k ------------------------------------------------------------------------
with tabs[2]:
    views.sqrt_dk_arguments(ex.norm_of_constant(2.0, (2, 3, 16, 1024)))
    c1, _ = st.columns([1, 2])
    n_keys = c1.select_slider("Number of keys per query", [4, 8, 16, 32, 64], value=16, key="selfattn_keys")
    views.sqrt_dk_curves(curves(n_keys), n_keys)
    c1, c2 = st.columns([1, 2], gap="large")
    dim = c1.select_slider("Look at one query at d =", list(ex.SQRT_DK_DIMS), value=512, key="selfattn_dim")
    c1.caption("One random query against the same number of random keys. Unscaled, a large d gives one key almost "
               "all the weight; scaled, the weights stay spread out, as at small d.")
    unscaled_w, scaled_w = ex.softmax_at_dim(dim, n_keys=n_keys)
    views.one_query(c2, unscaled_w, scaled_w, d=dim, n_keys=n_keys)
    code_expander("The code that computed these curves", source(ex.sqrt_dk_curves, ex.softmax_jacobian))
