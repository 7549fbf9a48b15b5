"""The Cross-attention page's blocks of text and figures (pages/4_Cross_attention_and_masks.py places them).

Each block draws what :mod:`attention_core.examples` computed for the page; the widgets stay on the page.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import streamlit as st

from attention_core import examples as ex
from attention_core.embeddings import Embeddings
from ui import chart_downloads, figures
from ui import explainer_figures as xf
from ui.explainer_views import numbers

VOCABULARY = [f"w{i}" for i in range(ex.VOCABULARY_SIZE)]
ONE_HOT = "one-hot words, seed 57"  # part 1's example, in its charts' downloads


def sentences(m: ex.MaskedAttention) -> str:
    """The two sentences of part 3 as its charts' downloads name them: "queries → keys" (the words with a vector,
    without the pads), or the one sentence of self-attention."""
    queries, keys = " ".join(m.query_tokens), " ".join(t for t in m.key_tokens if t != ex.PAD)
    return queries if keys == queries else f"{queries} → {keys}"


def shape_rows(steps: list[ex.ShapeStep]) -> pd.DataFrame:
    """One row per step: its name, formula and shape."""
    shapes = ["\u00a0×\u00a0".join(map(str, s.shape)) for s in steps]  # no-break spaces: "13 × 10" on one line
    return pd.DataFrame([(s.step, s.formula, shape) for s, shape in zip(steps, shapes, strict=True)],
                        columns=["step", "formula", "shape"])


def word_labels(word_indices: Sequence[int]) -> list[str]:
    """``"position · word"`` for each word of a sentence of one-hot words."""
    return [f"{i} · w{w}" for i, w in enumerate(word_indices)]


# -- part 1: seed 002 ---------------------------------------------------------------------------------


def one_hot_intro(oh: ex.OneHotCrossAttention) -> None:
    """The notebook's language, sentences and formula."""
    n_in, n_out = len(oh.input_word_indices), len(oh.output_word_indices)
    st.markdown(
        f"A language of **{ex.VOCABULARY_SIZE} words** w0 … w9, each a one-hot vector. The notebook sets "
        "`np.random.seed(57)` and `random.seed(57)`, draws three random 10 × 10 matrices W_Q, W_K, W_V, then an "
        f"**input sentence** of {n_in} words, `{' '.join(f'w{w}' for w in oh.input_word_indices)}`, and an "
        f"**output sentence** of {n_out}, `{' '.join(f'w{w}' for w in oh.output_word_indices)}`. "
        "The output words ask (queries); the input words answer (keys and values)."
    )
    st.latex(r"\mathrm{attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V, \qquad "
             r"Q = X_\mathrm{out} W_Q,\; K = X_\mathrm{in} W_K,\; V = X_\mathrm{in} W_V,\; d_k = 10")


def one_hot_steps(oh: ex.OneHotCrossAttention, word: int) -> None:
    """Shapes, scores, weights and result of the notebook, with output word ``word`` outlined and in full precision."""
    out_labels, in_labels = word_labels(oh.output_word_indices), word_labels(oh.input_word_indices)
    steps = oh.steps

    def named(what: str) -> dict:  # a chart's downloads: named after the example and the output word followed
        return chart_downloads.config(what, model=ONE_HOT, detail=f"output word {word}: w{oh.output_word_indices[word]}")

    c1, c2 = st.columns(2, gap="large")
    with c1:
        st.markdown("**Shapes, step by step** (read off the arrays)")
        st.table(shape_rows(oh.shapes()), hide_index=True, border="horizontal")
        st.caption("The result has one row per output word and one column per vocabulary entry: a weighted average "
                   "of value vectors. The attention matrix proper is the 13 × 8 score (or weight) matrix.")
    c2.plotly_chart(xf.blue_matrix(steps.scores.numpy(), out_labels, in_labels, highlight=word,
                                   title="scores Q Kᵀ  (13 output words × 8 input words)"), key="cross_seed_scores",
                    config=named("Cross-attention scores"))
    c1, c2 = st.columns(2, gap="large")
    c1.plotly_chart(xf.blue_matrix(steps.weights.numpy(), out_labels, in_labels, highlight=word,
                                   title="weights softmax(Q Kᵀ / √10)  (13 × 8)"), key="cross_seed_weights",
                    config=named("Cross-attention weights"))
    with c2:
        st.markdown(f"**Output word {out_labels[word]} in full precision** (float64, as the notebook prints it)")
        numbers({"input word": in_labels, "score q·k": steps.scores[word].numpy(),
                 "score / √10": steps.scaled[word].numpy(), "weight": steps.weights[word].numpy()},
                dict.fromkeys(("score q·k", "score / √10", "weight"), "%.8f"))
        st.caption(f"The weights sum to {steps.weights[word].sum().item():.8f}.")
    st.plotly_chart(xf.blue_matrix(steps.output.numpy(), out_labels, VOCABULARY, highlight=word,
                                   title="result weights · V  (13 × 10)"), key="cross_seed_result",
                    config=named("Cross-attention result"))
    st.plotly_chart(xf.number_table({f"result of {out_labels[word]}": steps.output[word].numpy()}, VOCABULARY,
                                    decimals=6), key="cross_seed_row_result",  # (eight: eleven columns run together)
                    config=named("Cross-attention result of one word"))


# -- part 2: seed 004's shapes ------------------------------------------------------------------------


def shapes_intro() -> None:
    st.markdown("The *TL;DR on attention* post: find a contextual embedding of X (one token, or l tokens, of size "
                "d_x = 10) from a context Z of n = 7 tokens of size d_z = 13. The queries and keys meet in an "
                "attention space of d_q = 15; the values, and so the result, have d = 25 dimensions.")


def shapes(shaped: ex.CrossAttentionShapes, length: int) -> None:
    """Seed 004's diagram with the real shapes, the formula, the shape table and the weights."""
    s = shaped.steps
    real = {"X": shaped.x.shape, "Z": shaped.z.shape, "W_Q": shaped.w_q.shape, "W_K": shaped.w_k.shape,
            "W_V": shaped.w_v.shape, "Q": shaped.q.shape, "K": shaped.k.shape, "V": shaped.v.shape,
            "scores": s.scores.shape, "weights": s.weights.shape, "output": s.output.shape}
    st.plotly_chart(xf.shape_diagram({k: tuple(v) for k, v in real.items()}), key="cross_shape_diagram",
                    config=chart_downloads.config("Shapes of cross-attention", detail=f"l = {length}"))
    st.latex(r"X_\mathrm{contextual} = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_q}}\right) V"
             rf"\;\in\; \mathbb{{R}}^{{{length} \times 25}}")
    c1, c2 = st.columns([3, 2], gap="large")
    c1.table(shape_rows(shaped.shapes()), hide_index=True, border="horizontal")
    with c2:
        st.markdown(f"**The weights** ({length} × 7): each row sums to 1")
        st.plotly_chart(figures.attention_heatmap(s.weights.numpy(), [f"x{i + 1}" for i in range(length)],
                                                  [f"z{j + 1}" for j in range(7)], height=150 + 40 * length, narrow=True),
                        key="cross_shape_weights",
                        config=chart_downloads.config("Cross-attention weights", detail=f"l = {length}, n = 7"))
    st.caption("Tensors here are rows of tokens (l × d_x), the usual PyTorch layout; the post stores tokens as "
               "columns (d_x × l) and transposes. Its code also takes the softmax over `dim=0`, the queries: with "
               "one token every weight would then be 1. Here the softmax runs over the keys, so each row sums to 1.")


# -- part 3: the learner's sentences, and masks -------------------------------------------------------


def left_out(emb: Embeddings, sent_a: ex.SentenceVectors, sent_b: ex.SentenceVectors) -> None:
    """A caption naming the words of either sentence that have no word vector, if any."""
    unknown = [f"`{w}` ({name})" for name, sent in (("A", sent_a), ("B", sent_b)) for w in sent.unknown]
    if unknown:
        st.caption(f"Not in {emb.source.describe()}, left out: {', '.join(unknown)}.")


def glove(plain: ex.MaskedAttention, dim: int) -> None:
    """Sentence A attending to sentence B on plain GloVe vectors, and what that shows."""
    c1, c2 = st.columns([3, 2], gap="large")
    c1.markdown("**Sentence A attends to sentence B** · rows: A's words (queries) · columns: B's words (keys)")
    c1.plotly_chart(figures.attention_heatmap(plain.steps.weights.numpy(), plain.query_tokens, plain.key_tokens),
                    key="cross_glove", config=chart_downloads.config("Sentence A attends to sentence B", model=f"GloVe {dim}d",
                                                                     sentence=sentences(plain)))
    c2.markdown(
        f"Queries are the {dim}-d GloVe vectors of A's words, keys and values those of B's: no trained "
        f"projections, so a weight is softmax(a · b / √{dim}) over B's words. Each row sums to 1.\n\n"
        "Without learned W_Q and W_K the score is plain GloVe similarity: words look at words used in similar "
        "contexts (in the example, *apple* and *sweet* at *fruit*; *the*, *was*, *and* at *we*, *are*, *for*). "
        "A trained model learns projections that choose what to match on."
    )


def _mask_note(masked: ex.MaskedAttention, kind: str, *, n_pad: int, self_attention: bool) -> str:
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
    return notes[kind]


def masked(m: ex.MaskedAttention, kind: str, *, n_pad: int, self_attention: bool) -> None:
    """The masked weights with their checks (masked entries exactly 0, rows summing to 1) and what the mask does."""
    m1, m2, m3 = st.columns(3)
    m1.metric("Masked entries", m.n_masked, border=True)
    m2.metric("Masked entries that are exactly 0.0", m.n_masked_exactly_zero, border=True)
    worst = (m.row_sums - 1).abs().max().item()
    m3.metric("Largest |row sum − 1|", f"{worst:.1e}" if worst else "0", border=True,
              help="float32 rounding leaves at most a few units of 1e-7.")
    c1, c2 = st.columns([3, 2], gap="large")
    c1.markdown(f"**Mask: {kind}** · grey cells are masked")
    c1.plotly_chart(xf.masked_heatmap(m.steps.weights.numpy(), m.mask.numpy(), m.query_tokens, m.key_tokens),
                    key="cross_masked",
                    config=chart_downloads.config("Masked attention", sentence=sentences(m),
                                                  detail=f"mask: {kind}, {n_pad} pads"))
    with c2:
        st.markdown("**Check: every row still sums to 1**")
        numbers({"query": m.query_tokens, "row sum": m.row_sums.numpy(), "masked": (~m.mask).sum(-1).numpy(),
                 "on <pad>": m.pad_weight.numpy()}, {"row sum": "%.6f", "masked": "%d", "on <pad>": "%.4f"},
                helps={"masked": "How many of its keys the mask hides", "on <pad>": "Its weight on the <pad> keys"})
    st.caption(_mask_note(m, kind, n_pad=n_pad, self_attention=self_attention))


def fully_masked(fm: ex.FullyMaskedRow) -> None:
    """An expander: a query that may see no key gets all-zero weights from attention_steps, not NaN."""
    with st.expander("A row with every key masked: all zeros, no NaN"):
        st.markdown("If a query may see no key at all (an empty sequence in a batch, or a left pad under padding + "
                    "causal masks), the softmax of a row of −∞ is 0 / 0 = NaN, and a NaN spreads through every later "
                    "sum and gradient. `attention_steps` gives such a row all-zero weights and a zero output instead. "
                    "Three journey tokens, the third with every key masked:")
        t = ex.JOURNEY_TOKENS[:3]
        c1, c2 = st.columns(2)
        c1.plotly_chart(xf.number_table({f"{q}: attention_steps": row.numpy() for q, row in zip(t, fm.weights, strict=True)}
                                        | {f"{t[2]}: plain softmax": fm.plain_softmax[2].numpy()}, list(t)),
                        key="cross_fully_masked",
                        config=chart_downloads.config("A row with every key masked", sentence=" ".join(t)))
        c2.markdown(f"Output of the masked row: `{fm.output[2].tolist()}`  \nNaN anywhere in the weights: "
                    f"**{bool(np.isnan(fm.weights.numpy()).any())}**")
