"""The home page: type a sentence, see what the model predicts and where it looks.

Light on purpose (Streamlit only at import; the rest inside :func:`home`): on a cold start it
shows the bundled model's saved answer before torch is loaded (``ui/preview.py``).
"""

from __future__ import annotations

import streamlit as st

# How the model turns the words' final vectors into the label, for "What am I looking at?" (by whether
# it pools by attention).
READOUT: dict[object, str] = {
    False: "The model then averages the words' final vectors and a linear layer turns that into the class "
           "probabilities on the left.",
    True: "The model then sums the words' final vectors weighted by the **Pooling** map: each head has a learned "
          "query, the label's query, that attends over the words, so that map has one row, how much each word "
          "counts toward the label. A linear layer turns the sum into the class probabilities on the left.",
    "untrained": "The model then averages the word pieces' final vectors, and a linear layer, its classifier head, "
                 "turns that into the class probabilities on the left. This pretrained encoder's head is untrained "
                 "(random), so those probabilities mean nothing until it is fine-tuned on the Train page.",
}
# What Q, K and V are maps of, by whether the model reads word pieces (a pretrained encoder) or words (GloVe).
INPUTS = {
    False: "the word vectors (GloVe)",
    True: "the word pieces' vectors (the pretrained encoder's own, plus a learned vector for each position; from "
          "the second layer on, of what the layer below made of them)",
}


def home() -> None:
    """Home: type a sentence, see what the model predicts and where it looks."""
    st.set_page_config(page_title="Home · Attention Playground", page_icon="🔎", layout="wide")
    st.title("Attention Playground")
    from attention_core.map_names import head_choice, layers_said
    from ui import view_link

    link = view_link.ViewLink("Home")  # ?run=…&sentence=…&layer=…&head=…&grid=1 (notices go here)
    st.caption(
        "Learn how attention works by looking inside a real model. Type a sentence: a small attention "
        "classifier reads it, predicts its sentiment, and shows you which words each word attended to."
    )
    # On a cold start the browser fetches and compiles plotly.js only when asked. The live
    # charts' preload asks now, while the server imports what the page needs and builds it.
    from ui import live_chart

    with st.sidebar:  # where its empty element leaves no gap in the page
        live_chart.preload(at_once=True)

    # plotly looks numpy and pandas up in sys.modules without importing them: a figure built while
    # another session's run was half-way through importing pandas (Streamlit imports it on first
    # use) met a half-made module ("partially initialized module 'pandas'"). An import waits for
    # the other thread's, so both are imported before the first figure (the other pages import
    # them through attention_core first); this run would import pandas with its first chart anyway.
    import numpy as np
    import pandas  # noqa: F401

    from ui import figures, preview
    from ui.markup import token_chips
    from ui.preview import BUNDLED_NAME, EXAMPLES, PICKER_HELP, PRETRAINED_NAME
    from ui.sentence_box import sentence_box
    from ui.state import kept, kept_in_state

    def use_example() -> None:  # a click on the example already in the box deselects it: nothing to load
        choice = st.session_state.get("home_example")
        if choice:
            st.session_state["home_text"] = choice

    link.add(view_link.text("sentence", "home_text", EXAMPLES[0]), view_link.run(), view_link.flag("grid", "home_grid_on"))
    kept_in_state("home_text", EXAMPLES[0])  # the sentence box (an example click sets it)
    text_now = st.session_state["home_text"]
    # A server that has not loaded torch yet shows the bundled model's saved answer to the first
    # example (ui/preview.py) and loads torch in the background; everything else is computed live.
    # Not to a user with runs saved: that path's picker lists the bundled model alone.
    saved = preview.load()
    quick = (not preview.model_code_loaded() and saved is not None and text_now == saved.text
             and st.session_state.get("active_run", BUNDLED_NAME) == BUNDLED_NAME and not preview.runs_saved())
    with st.sidebar:
        if quick:
            # The pretrained encoder is listed when its package is installed (located, not loaded); picking it
            # takes the path below (it is not the bundled model), which loads the model code.
            st.selectbox("Model", [BUNDLED_NAME, *([PRETRAINED_NAME] * preview.pretrained_installed())], key="home_run",
                         help=PICKER_HELP, on_change=lambda: st.session_state.update(active_run=st.session_state["home_run"]))
            about = (saved.run_name, saved.n_layers, saved.n_heads, saved.label_names, saved.embeddings)
            untrained, wordpieces = False, False  # the bundled model: trained, on GloVe's words
            layer_names = saved.map_names  # ModelConfig.map_names(), as saved with the preview
        else:
            from ui.common import active_run_picker
            from ui.model_notes import head_untrained, inputs_said

            picked = active_run_picker("home_run")
            if picked is None:
                st.stop()
            path, run = picked
            layer_names = run.model_config.map_names()  # a map per layer, and "Pooling" for the pooling query's
            about = (run.name, run.model_config.n_layers, run.model_config.n_heads, run.label_names, inputs_said(run))
            untrained, wordpieces = head_untrained(run), run.model_config.base is not None
        st.page_link("pages/1_Train.py", label="Train your own model")
        st.page_link("pages/2_Inspect.py", label="Inspect a model in depth")
        name, n_layers, n_heads, labels, embeddings = about
        size = f"{n_layers} layer{'s' * (n_layers != 1)} × {n_heads} head{'s' * (n_heads != 1)}"
        untrained_said = " (the classifier head is untrained: they mean nothing yet)" if untrained else ""
        st.caption(f"**{name}** · {size} · labels: {', '.join(labels)}{untrained_said} · embeddings: {embeddings}")
    n_maps = len(layer_names)
    head_options = [head_choice(h, n_heads).capitalize() for h in (n_heads, *range(n_heads))]  # the average first
    link.add(view_link.number("layer", "home_layer", n_maps, layer_names[0], what="layer", value=layer_names.__getitem__,
                              said=layers_said(n_layers, n_maps)),
             view_link.number("head", "home_head", n_heads, head_options[0], what="head", extra={"avg": head_options[0]},
                              value=lambda h: head_options[h + 1]))
    link.write()

    # The example in the box is the one highlighted, none for a sentence of one's own: a click on
    # another example selects it and so loads it (a click on a selected pill would deselect it).
    st.session_state["home_example"] = text_now if text_now in EXAMPLES else None
    st.pills("Try an example", EXAMPLES, key="home_example", on_change=use_example)
    text = sentence_box("Your sentence", "home_text", placeholder="Type a sentence in English…")
    if not text.strip():
        st.info("Type a sentence above to see the model's prediction and its attention.")
        st.stop()

    if quick:  # (its text is the saved one: the widget's value is the one read above)
        prediction = saved
    else:
        from attention_core.errors import InputError

        try:
            prediction = run.predict(text)
        except InputError as err:
            st.error(f"{err}")
            st.stop()

    from ui import chart_downloads

    if untrained:
        from ui.model_notes import UNTRAINED_HEAD

        st.info(UNTRAINED_HEAD, icon=":material/info:")
    left, right = st.columns([1, 2], gap="large")
    with left:
        st.subheader(f"Prediction: {prediction.label}")
        live_chart.live_plotly_chart(figures.probability_bars(prediction.probabilities, predicted=prediction.label), key="home_probs",
                                     config=chart_downloads.config("Probabilities", model=name, sentence=text))
    with right:
        st.subheader("Tokens the model read")
        st.markdown(token_chips(prediction.tokens))
        if prediction.unknown_tokens:
            how = "read as [UNK]" if wordpieces else (
                "read as the learned `<unk>` vector" if "<unk>" in prediction.tokens else "dropped")
            st.caption(
                f"Unknown to {embeddings}: "
                f"{', '.join(f'`{w}`' for w in prediction.unknown_tokens)} — {how}. "
                "Check the spelling, or use a more common word."
            )
        for note in prediction.notes:
            if "unknown word" not in note:  # said above, with a hint
                st.caption(note)
        if wordpieces:
            st.caption("Word pieces, as the model reads them: a word not in its vocabulary is split into pieces it has (`##` marks a "
                       "piece that continues the one before it); [CLS] opens the sentence and [SEP] closes it.")

    st.subheader("Attention")
    attn = np.asarray(prediction.attention)  # (L, H, T, T)
    c1, c2 = st.columns(2)
    layer = layer_names.index(c1.radio("Layer", layer_names, horizontal=True, **kept("home_layer", layer_names[0], layer_names)))
    head = c2.radio("Head", head_options, horizontal=True, **kept("home_head", head_options[0], head_options))
    head = head_options.index(head) - 1 if head != head_options[0] else n_heads  # (n_heads: their average)
    pooled = n_maps > n_layers  # the last map is the pooling attention's: one row, the label's query
    tokens = prediction.tokens
    if wordpieces:  # [CLS] and [SEP]: shown, or hidden as BertViz does (each row renormalised)
        from ui.model_notes import HIDDEN_SAID, hide_special_switch, shown_maps

        if hide_special_switch(tokens, "home_hide_special"):
            attn, tokens = shown_maps(attn, tokens, True)
            st.caption(HIDDEN_SAID)
    weights = attn[layer].mean(0) if head == n_heads else attn[layer, head]
    live_chart.live_plotly_chart(
        figures.attention_heatmap(weights, tokens, title=f"{layer_names[layer]} · {head_choice(head, n_heads)}",
                                  pooling=layer >= n_layers),
        key="home_heatmap",
        config=chart_downloads.config("Attention", model=name, sentence=text, layer=layer_names[layer], head=head_choice(head, n_heads)),
    )
    if st.toggle("Show all layers and heads at once", **kept("home_grid_on", False)):  # drawn on request: 10+ maps are slow to draw
        st.plotly_chart(figures.attention_grid(attn, tokens, pooling=pooled), key="home_grid",
                        config=chart_downloads.config("Attention, every layer and head", model=name, sentence=text))

    with st.expander("What am I looking at?", expanded=False):
        st.markdown(
            r"""
Each **row** is a word *asking* (the query); each **column** is a word being *looked at* (the key).
The colour is the attention weight: how much of the row word's new representation comes from the
column word. Every row sums to 1 — attention is a weighted average.

The weights come from scaled dot-product attention, the same function this model runs:

$$\alpha = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right), \qquad z = \alpha V$$

where $Q$, $K$ and $V$ are learned linear maps of {inputs}. Each **head** has its own
$Q$, $K$, $V$ and can learn to look for something different; a **layer** stacks heads, and later
layers attend over what earlier layers produced. {readout}

Attention shows where the model *looked*, not necessarily *why* it decided — the Inspect page puts
attention next to gradient-based saliency so you can see where they agree and where they don't.
""".replace("{readout}", READOUT["untrained" if untrained else pooled]).replace("{inputs}", INPUTS[wordpieces])
        )
    if quick:  # torch, for what the learner does next: loaded once the page is drawn (its import would slow the drawing)
        preview.warm_up()
