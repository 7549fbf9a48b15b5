"""Inspect: every layer and head, rollout vs saliency, input features, a training time-lapse, compare, export."""

from __future__ import annotations

import streamlit as st

from ui import inspect_views as views
from ui import model_notes, neuron_views, view_link
from ui.common import EXAMPLES, kept, page_setup, sidebar_run
from ui.sentence_box import sentence_box

page_setup("Inspect", "🔬")
st.title(":material/biotech: Inspect a model")
st.caption(
    "Look at one sentence from every angle: all attention maps at once, how attention flows through the layers, "
    "which words the prediction depends on, how attention changed during training, and two cases side by side."
)

link = view_link.ViewLink("Inspect")  # ?run=…&sentence=… (or val=…)&tab=…&method=…&layer=…&head=…&epoch=…
link.add(view_link.run())
path, run = sidebar_run("inspect_run")
link.add(*views.view_params(run, path))
link.write()

# -- the sentence ---------------------------------------------------------------------------------
val_texts, val_labels = run.validation
SOURCES = views.SOURCES
source = st.radio("Sentence", SOURCES, horizontal=True, **kept("inspect_source", SOURCES[0], SOURCES))
true_label = None
if source == SOURCES[0] or not val_texts:
    if source != SOURCES[0]:
        st.caption("The pretrained encoder was never trained here, so it has no validation rows: type a sentence "
                   "instead." if model_notes.head_untrained(run) else
                   "This run kept no validation rows: type a sentence instead.")
    text = sentence_box("Your sentence", "inspect_text", EXAMPLES[0])
else:
    i = st.selectbox(f"Validation sentence ({len(val_texts):,}, held out from training)", range(len(val_texts)),
                     **kept(f"inspect_val_{path.name}", 0, range(len(val_texts))),
                     format_func=lambda i: f"{val_texts[i]}  ·  true label: {run.label_names[val_labels[i]]}")
    text, true_label = val_texts[i], run.label_names[val_labels[i]]
if not text.strip():
    st.info("Type a sentence above to inspect it.")
    st.stop()

# -- one explanation of it: attention, rollout, saliency, input features --------------------------
method = views.saliency_method()  # (its selectbox is on the saliency tab)
ex = views.explanation(run, path, text, method)
n_layers, n_heads = ex.attention.shape[:2]
model_notes.untrained_notice(run)
views.prediction(ex, true_label, model=run.name)
views.keep_layer_and_head_choices(n_layers, n_heads)

tabs = view_link.tabs("inspect_tab", list(views.TABS.values()))
with tabs[0]:
    zoom = views.model_view(ex, run.model_config, model=run.name)
with tabs[1]:
    views.rollout_and_saliency(ex, run.model_config, model=run.name, untrained=model_notes.head_untrained(run))
with tabs[2]:
    neuron_views.neuron_tab(run, text, ex.tokens, model=run.name)
with tabs[3]:
    views.input_features(ex, run)
with tabs[4]:
    views.time_lapse(run, path, text, n_heads)
with tabs[5]:
    views.compare(run, text)
with tabs[6]:
    views.export(ex, run, zoom)
