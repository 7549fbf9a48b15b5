"""Backpropagation through attention: every gradient of the seed post, by hand and by autograd, and its own code."""

from __future__ import annotations

import streamlit as st
import torch

from attention_core import load_run
from attention_core.backprop import (
    gradient_report,
    post_backward,
    post_code_comparison,
    post_forward,
    post_inputs,
    post_params_float64,
)
from attention_core.errors import InputError
from attention_core.model import AttentionClassifier
from ui import backprop_views as views
from ui import view_link
from ui.common import ROOT, embeddings, page_setup

page_setup("Backpropagation", "🔁")
st.title("Backpropagation through attention")
TABS = {"jacobian": "(a) the softmax Jacobian", "scale": "(b) dividing by √(d·n)", "backward": "(c) the scale in the backward pass"}
link = view_link.ViewLink("Backpropagation")  # ?tab=jacobian|scale|backward
link.add(view_link.choice("tab", "backprop_tab", TABS, "jacobian"))
link.write()
st.caption(
    "The seed post derives every gradient of its model — one attention head, a linear layer, average pooling, softmax "
    "and cross entropy — and writes the backward pass by hand. Here that backward pass runs on a real sentence in "
    "float64 and is checked, gradient by gradient, against PyTorch's autograd."
)
MODELS = {0: "untrained (random start)", 100: "after 100 epochs on small.csv", 1000: "after 1000 epochs (as in the post)"}
SEED_RUNS = ROOT / "data" / "seed_run"  # the seed preset on small.csv, seed 0: made by scripts/make_seed_run.sh


@st.cache_resource(show_spinner="Loading the seed model…", max_entries=3)
def post_model(epochs: int) -> tuple[dict, tuple[str, ...]]:
    """The seed preset's weights (float64) after ``epochs`` on the post's 39 reviews, from the bundled runs: read-only."""
    run = load_run(SEED_RUNS / f"{max(epochs, 100)}_epochs")
    if epochs > 0:
        return post_params_float64(run.model), run.label_names
    with torch.random.fork_rng():  # the same network before its first step: built as Trainer builds it
        torch.manual_seed(run.train_config.seed)
        return post_params_float64(AttentionClassifier(run.model_config)), run.label_names


# -- inputs ---------------------------------------------------------------------------------------
c1, c2, c3 = st.columns([2.5, 1.5, 2], gap="medium")  # the target picker shows "negative" whole at 1024 px
text = c1.text_input("Sentence", "very sad as they both fail", key="backprop_text", max_chars=300)
model_epochs = c3.radio("Seed-preset model", list(MODELS), index=2, format_func=MODELS.get, key="backprop_model",
                        help="The trained models come with the app (data/seed_run); the untrained model is the same "
                             "network before its first step (torch seed 0, the post's N(0,1)/100 init with V = K).")
try:
    params, labels = post_model(model_epochs)
except InputError as err:  # a bundled run missing or damaged
    st.error(f"The bundled seed model cannot be loaded: {err.message} — re-create it with "
             "`bash scripts/make_seed_run.sh`.")
    st.stop()
target = c2.selectbox("Target label y", labels, key="backprop_target")
y = labels.index(target)
try:
    inp = post_inputs(text, embeddings(10_000))
except InputError as err:
    st.error(f"{err}")
    st.stop()
tokens = list(inp.tokens)
checks = gradient_report(inp.x, y, params)
views.sentence(inp)
model = f"seed preset, {MODELS[model_epochs]}"  # in every chart's downloads
views.prediction(post_forward(inp.x, y, params), labels, target, inp, model=model)

# -- every gradient ----------------------------------------------------------------------------------
views.gradient_table(checks)
names = [c.name for c in checks]
g1, g2, _ = st.columns([1, 1, 1])
pick = checks[names.index(g1.selectbox("Gradient to look at", names, index=names.index("∂L/∂e"), key="backprop_gradient"))]
row = (g2.selectbox("Row of α (the word attending)", range(len(tokens)), format_func=lambda i: tokens[i], key="backprop_row")
       if pick.axes[0] == "row" else None)  # the softmax Jacobian: one n × n matrix per row of α
views.gradient_pair(pick, row, labels, inp, model=model)

# -- the post's own code -----------------------------------------------------------------------------
post = post_code_comparison(inp.x, y, params)
views.post_code_intro()
tabs = view_link.tabs("backprop_tab", list(TABS.values()))
with tabs[0]:
    views.jacobian_intro()
    jac_row = st.columns(3)[0].selectbox("Row i", range(post.n), format_func=lambda i: f"{i + 1}: {tokens[i]}",
                                         key="backprop_jac_row")
    views.jacobian(post, tokens, jac_row, model=model)
with tabs[1]:
    views.scale(post, tokens, model=model)
with tabs[2]:
    views.backward_scale(post)
views.code_behind(post_forward, post_backward, gradient_report, post_code_comparison)
