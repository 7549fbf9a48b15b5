"""Cross-attention (seeds 002 and 004) on one-hot words, real shapes and your own sentences; padding and causal masks."""

from __future__ import annotations

import streamlit as st

from attention_core import examples as ex
from attention_core.attention import attention_steps
from attention_core.errors import EmbeddingError
from ui import cross_attention_views as views
from ui import view_link
from ui.common import embeddings, page_setup
from ui.explainer_views import code_expander, source

page_setup("Cross-attention and masks", "🔀")
st.title(":material/compare_arrows: Cross-attention and masks")
st.caption("In cross-attention the queries come from one sequence and the keys and values from another, so the "
           "weights are a T × S rectangle. Every number is computed by `attention_steps`, the function the models in "
           "this app run; masks decide which keys each query may see.")

TABS = {"one-hot": "1 · One-hot words (NumPy, seed 57)", "shapes": "2 · Shapes of cross-attention",
        "masks": "3 · Your sentences and masks"}
link = view_link.ViewLink("Cross attention and masks")  # ?tab=one-hot|shapes|masks
link.add(view_link.choice("tab", "cross_tab", TABS, "one-hot"))
link.write()
tabs = view_link.tabs("cross_tab", list(TABS.values()))

# -- 1: seed 002 ------------------------------------------------------------------------------------
with tabs[0]:
    oh = ex.one_hot_cross_attention()
    views.one_hot_intro(oh)
    out_labels = views.word_labels(oh.output_word_indices)
    word = st.columns([1, 2])[0].selectbox("Output word to follow", range(len(out_labels)), format_func=out_labels.__getitem__,
                                           key="cross_output_word")
    views.one_hot_steps(oh, word)
    code_expander("The code that computed these numbers", source(ex.one_hot_cross_attention), source(attention_steps))

# -- 2: seed 004's shapes ---------------------------------------------------------------------------
with tabs[1]:
    views.shapes_intro()
    c1, _ = st.columns([1, 2])
    length = c1.slider("Length l of X (1 = one token, as in the post's first example)", 1, 8, 1, key="cross_len")
    views.shapes(ex.cross_attention_shapes(length), length)
    code_expander("The code: three nn.Linear layers and attention_steps", source(ex.cross_attention_shapes))

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
    views.left_out(emb, sent_a, sent_b)
    views.glove(ex.glove_attention(sent_a, sent_b), emb.dim)

    st.subheader("Masks")
    c1, c2, c3 = st.columns([3, 2, 2], gap="large")
    kind = c1.radio("Mask", ex.MASKS, index=1, horizontal=True, key="cross_mask",
                    help="padding: hide the pad keys. causal (“uni-directional”): query i sees keys 0…i only.")
    keys_from = c2.radio("Keys and values", ["sentence B (cross)", "sentence A (self)"], key="cross_keys_from")
    n_pad = c3.slider("Pad the keys with <pad> tokens", 0, 5, 2, key="cross_pad",
                      help="As in a batch where this sequence is shorter than the longest one. A pad is a zero vector.")
    self_attention = keys_from.startswith("sentence A")
    masked = ex.glove_attention(sent_a, sent_a if self_attention else sent_b, n_pad=n_pad, mask=kind)
    views.masked(masked, kind, n_pad=n_pad, self_attention=self_attention)
    views.fully_masked(ex.fully_masked_row())
    code_expander("The code: building the mask, and the masking inside attention_steps",
                  source(ex.attention_mask), source(attention_steps))
