"""Cross-attention (seeds 002 and 004) on one-hot words, real shapes and your own sentences; padding and causal masks."""

from __future__ import annotations

import inspect

import numpy as np
import pandas as pd
import streamlit as st

from attention_core import examples as ex
from attention_core.attention import attention_steps
from attention_core.errors import EmbeddingError
from ui import explainer_figures as xf
from ui import figures
from ui.common import embeddings, page_setup

page_setup("Cross-attention and masks", "🔀")
st.title(":material/compare_arrows: Cross-attention and masks")
st.caption("In cross-attention the queries come from one sequence and the keys and values from another, so the "
           "weights are a T × S rectangle. Every number is computed by `attention_steps`, the function the models in "
           "this app run; masks decide which keys each query may see.")


def shape_rows(steps: list[ex.ShapeStep]) -> pd.DataFrame:
    shapes = ["\u00a0×\u00a0".join(map(str, s.shape)) for s in steps]  # no-break spaces: "13 × 10" on one line
    return pd.DataFrame([(s.step, s.formula, shape) for s, shape in zip(steps, shapes, strict=True)],
                        columns=["step", "formula", "shape"])


tabs = st.tabs(["1 · One-hot words (NumPy, seed 57)", "2 · Shapes of cross-attention", "3 · Your sentences and masks"])

# -- 1: seed 002 ------------------------------------------------------------------------------------
with tabs[0]:
    oh = ex.one_hot_cross_attention()
    out_labels = [f"{i} · w{w}" for i, w in enumerate(oh.output_word_indices)]
    in_labels = [f"{j} · w{w}" for j, w in enumerate(oh.input_word_indices)]
    st.markdown(
        f"A language of **{ex.VOCABULARY_SIZE} words** w0 … w9, each a one-hot vector. The notebook sets "
        "`np.random.seed(57)` and `random.seed(57)`, draws three random 10 × 10 matrices W_Q, W_K, W_V, then an "
        f"**input sentence** of {len(in_labels)} words, `{' '.join(f'w{w}' for w in oh.input_word_indices)}`, and an "
        f"**output sentence** of {len(out_labels)}, `{' '.join(f'w{w}' for w in oh.output_word_indices)}`. "
        "The output words ask (queries); the input words answer (keys and values)."
    )
    st.latex(r"\mathrm{attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V, \qquad "
             r"Q = X_\mathrm{out} W_Q,\; K = X_\mathrm{in} W_K,\; V = X_\mathrm{in} W_V,\; d_k = 10")
    word = st.columns([1, 2])[0].selectbox("Output word to follow", range(len(out_labels)), format_func=out_labels.__getitem__,
                                           key="cross_output_word")
    c1, c2 = st.columns(2, gap="large")
    with c1:
        st.markdown("**Shapes, step by step** (read off the arrays)")
        st.table(shape_rows(oh.shapes()), hide_index=True, border="horizontal")
        st.caption("The result has one row per output word and one column per vocabulary entry: a weighted average "
                   "of value vectors. The attention matrix proper is the 13 × 8 score (or weight) matrix.")
    c2.plotly_chart(xf.matrix(oh.steps.scores.numpy(), out_labels, in_labels, colorscale="Blues", symmetric=False,
                              highlight=word, title="scores Q Kᵀ  (13 output words × 8 input words)"), key="cross_seed_scores")
    c1, c2 = st.columns(2, gap="large")
    c1.plotly_chart(xf.matrix(oh.steps.weights.numpy(), out_labels, in_labels, colorscale="Blues", symmetric=False,
                              highlight=word, title="weights softmax(Q Kᵀ / √10)  (13 × 8)"), key="cross_seed_weights")
    with c2:
        st.markdown(f"**Output word {out_labels[word]} in full precision** (float64, as the notebook prints it)")
        st.dataframe(pd.DataFrame({"input word": in_labels, "score q·k": oh.steps.scores[word].numpy(),
                                   "scaled score / √10": oh.steps.scaled[word].numpy(),
                                   "weight": oh.steps.weights[word].numpy()}), hide_index=True,
                     column_config={c: st.column_config.NumberColumn(format="%.8f")
                                    for c in ("score q·k", "scaled score / √10", "weight")})
        st.caption(f"The weights sum to {oh.steps.weights[word].sum().item():.8f}.")
    st.plotly_chart(xf.matrix(oh.steps.output.numpy(), out_labels, [f"w{i}" for i in range(10)], colorscale="Blues",
                              symmetric=False, highlight=word, title="result weights · V  (13 × 10)"), key="cross_seed_result")
    st.plotly_chart(xf.number_table({f"result of {out_labels[word]}": oh.steps.output[word].numpy()},
                                    [f"w{i}" for i in range(10)], decimals=8), key="cross_seed_row_result")
    with st.expander("The code that computed these numbers"):
        st.code(inspect.getsource(ex.one_hot_cross_attention), language="python")
        st.code(inspect.getsource(attention_steps), language="python")

# -- 2: seed 004's shapes ---------------------------------------------------------------------------
with tabs[1]:
    st.markdown("The *TL;DR on attention* post: find a contextual embedding of X (one token, or l tokens, of size "
                "d_x = 10) from a context Z of n = 7 tokens of size d_z = 13. The queries and keys meet in an "
                "attention space of d_q = 15; the values, and so the result, have d = 25 dimensions.")
    c1, _ = st.columns([1, 2])
    length = c1.slider("Length l of X (1 = one token, as in the post's first example)", 1, 8, 1, key="cross_len")
    shaped = ex.cross_attention_shapes(length)
    s = shaped.steps
    real = {"X": shaped.x.shape, "Z": shaped.z.shape, "W_Q": shaped.w_q.shape, "W_K": shaped.w_k.shape,
            "W_V": shaped.w_v.shape, "Q": shaped.q.shape, "K": shaped.k.shape, "V": shaped.v.shape,
            "scores": s.scores.shape, "weights": s.weights.shape, "output": s.output.shape}
    st.plotly_chart(xf.shape_diagram({k: tuple(v) for k, v in real.items()}), key="cross_shape_diagram")
    st.latex(r"X_\mathrm{contextual} = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_q}}\right) V"
             rf"\;\in\; \mathbb{{R}}^{{{length} \times 25}}")
    c1, c2 = st.columns([3, 2], gap="large")
    c1.table(shape_rows(shaped.shapes()), hide_index=True, border="horizontal")
    with c2:
        st.markdown(f"**The weights** ({length} × 7): each row sums to 1")
        st.plotly_chart(figures.attention_heatmap(s.weights.numpy(), [f"x{i + 1}" for i in range(length)],
                                                  [f"z{j + 1}" for j in range(7)], height=150 + 40 * length),
                        key="cross_shape_weights")
    st.caption("Tensors here are rows of tokens (l × d_x), the usual PyTorch layout; the post stores tokens as "
               "columns (d_x × l) and transposes. Its code also takes the softmax over `dim=0`, the queries: with "
               "one token every weight would then be 1. Here the softmax runs over the keys, so each row sums to 1.")
    with st.expander("The code: three nn.Linear layers and attention_steps"):
        st.code(inspect.getsource(ex.cross_attention_shapes), language="python")

# -- 3: the learner's sentences, and masks ----------------------------------------------------------
with tabs[2]:
    c1, c2 = st.columns(2, gap="large")
    text_a = c1.text_input("Sentence A: the queries", "the apple was sweet and fresh", key="cross_query_text", max_chars=300)
    text_b = c2.text_input("Sentence B: the context (keys and values)", "we are eating fruit for breakfast",
                           key="cross_context_text", max_chars=300)
    emb = embeddings()
    try:
        sent_a = ex.sentence_vectors(text_a, emb, what="sentence A")
        sent_b = ex.sentence_vectors(text_b, emb, what="sentence B")
    except EmbeddingError as err:
        st.error(f"{err}")
        st.stop()
    unknown = [f"`{w}` ({name})" for name, sent in (("A", sent_a), ("B", sent_b)) for w in sent.unknown]
    if unknown:
        st.caption(f"Not in {emb.source.describe()}, left out: {', '.join(unknown)}.")
    plain = ex.glove_attention(sent_a, sent_b)
    c1, c2 = st.columns([3, 2], gap="large")
    c1.markdown("**Sentence A attends to sentence B** · rows: A's words (queries) · columns: B's words (keys)")
    c1.plotly_chart(figures.attention_heatmap(plain.steps.weights.numpy(), plain.query_tokens, plain.key_tokens),
                    key="cross_glove")
    c2.markdown(
        f"Queries are the {emb.dim}-d GloVe vectors of A's words, keys and values those of B's: no trained "
        f"projections, so a weight is softmax(a · b / √{emb.dim}) over B's words. Each row sums to 1.\n\n"
        "Without learned W_Q and W_K the score is plain GloVe similarity: words look at words used in similar "
        "contexts (in the example, *apple* and *sweet* at *fruit*; *the*, *was*, *and* at *we*, *are*, *for*). "
        "A trained model learns projections that choose what to match on."
    )

    st.subheader("Masks")
    c1, c2, c3 = st.columns([3, 2, 2], gap="large")
    kind = c1.radio("Mask", ex.MASKS, index=1, horizontal=True, key="cross_mask",
                    help="padding: hide the pad keys. causal (“uni-directional”): query i sees keys 0…i only.")
    keys_from = c2.radio("Keys and values", ["sentence B (cross)", "sentence A (self)"], key="cross_keys_from")
    n_pad = c3.slider("Pad the keys with <pad> tokens", 0, 5, 2, key="cross_pad",
                      help="As in a batch where this sequence is shorter than the longest one. A pad is a zero vector.")
    self_attention = keys_from.startswith("sentence A")
    masked = ex.glove_attention(sent_a, sent_a if self_attention else sent_b, n_pad=n_pad, mask=kind)
    w = masked.steps.weights
    m1, m2, m3 = st.columns(3)
    m1.metric("Masked entries", masked.n_masked, border=True)
    m2.metric("Masked entries that are exactly 0.0", masked.n_masked_exactly_zero, border=True)
    worst = (masked.row_sums - 1).abs().max().item()
    m3.metric("Largest |row sum − 1|", f"{worst:.1e}" if worst else "0", border=True,
              help="float32 rounding leaves at most a few units of 1e-7.")
    c1, c2 = st.columns([3, 2], gap="large")
    c1.markdown(f"**Mask: {kind}** · grey cells are masked")
    c1.plotly_chart(xf.masked_heatmap(w.numpy(), masked.mask.numpy(), masked.query_tokens, masked.key_tokens),
                    key="cross_masked")
    with c2:
        st.markdown("**Check: every row still sums to 1**")
        st.dataframe(pd.DataFrame({"query": masked.query_tokens, "row sum": masked.row_sums.numpy(),
                                   "keys masked": (~masked.mask).sum(-1).numpy(),
                                   "weight on <pad>": masked.pad_weight.numpy()}),
                     hide_index=True, column_config={"row sum": st.column_config.NumberColumn(format="%.6f"),
                                                     "weight on <pad>": st.column_config.NumberColumn(format="%.4f")})
    notes = {
        "none": "Nothing is masked: " + (f"the pads get {masked.pad_weight.mean().item():.0%} of the weight on "
                                         "average (a zero vector scores 0, and e⁰ = 1 is not small). That is what "
                                         "a padding mask prevents." if n_pad else "every query sees every key."),
        "padding": "The pad keys are set to −∞ before the softmax, so their weights are exactly 0 and the real "
                   "keys share all of the weight.",
        "causal": "Query i sees keys 0…i only (seed 004's “uni-directional” attention, as in a decoder that must not "
                  "look ahead)." + ("" if self_attention else " It is meant for self-attention: pick sentence A as the keys."),
        "padding + causal": "Both at once, as in a batch of decoder inputs: no looking ahead, and no pads.",
    }
    st.caption(notes[kind])
    fm = ex.fully_masked_row()
    with st.expander("A row with every key masked: all zeros, no NaN"):
        st.markdown("If a query may see no key at all (an empty sequence in a batch, or a left pad under padding + "
                    "causal masks), the softmax of a row of −∞ is 0 / 0 = NaN, and a NaN spreads through every later "
                    "sum and gradient. `attention_steps` gives such a row all-zero weights and a zero output instead. "
                    "Three journey tokens, the third with every key masked:")
        t = ex.JOURNEY_TOKENS[:3]
        c1, c2 = st.columns(2)
        c1.plotly_chart(xf.number_table({f"{q}: attention_steps": row.numpy() for q, row in zip(t, fm.weights, strict=True)}
                                        | {f"{t[2]}: plain softmax": fm.plain_softmax[2].numpy()}, list(t)),
                        key="cross_fully_masked")
        c2.markdown(f"Output of the masked row: `{fm.output[2].tolist()}`  \nNaN anywhere in the weights: "
                    f"**{bool(np.isnan(fm.weights.numpy()).any())}**")
    with st.expander("The code: building the mask, and the masking inside attention_steps"):
        st.code(inspect.getsource(ex.attention_mask), language="python")
        st.code(inspect.getsource(attention_steps), language="python")
