"""Inspect: every layer and head, rollout vs saliency, input features, a training time-lapse, compare, export."""

from __future__ import annotations

import csv
import io
import json
import re

import numpy as np
import streamlit as st
import torch

from attention_core.errors import InputError
from attention_core.explain import SALIENCY_METHODS, explain, top_k_mask
from attention_core.metrics import spearman
from attention_core.runs import run_stamp
from ui import figures
from ui.common import EXAMPLES, active_run_picker, get_run, kept, page_setup, run_choices
from ui.state import kept_in_state

page_setup("Inspect", "🔬")
st.title(":material/biotech: Inspect a model")
st.caption(
    "Look at one sentence from every angle: all attention maps at once, how attention flows through the layers, "
    "which words the prediction depends on, how attention changed during training, and two cases side by side."
)
METHODS = {
    "grad_x_input": "gradient × input",
    "integrated_gradients": "integrated gradients",
    "grad_norm": "gradient norm",
}

with st.sidebar:
    picked = active_run_picker("inspect_run")
if picked is None:
    st.stop()
path, run = picked
cfg = run.model_config
size = f"{cfg.n_layers} layer{'s' * (cfg.n_layers != 1)} × {cfg.n_heads} head{'s' * (cfg.n_heads != 1)}"
st.sidebar.caption(f"**{run.name}** · {size} · {cfg.positional} positions · labels: {', '.join(run.label_names)}")

# -- the sentence ---------------------------------------------------------------------------------
val_texts, val_labels = run.validation
SOURCES = ["Type a sentence", "Pick one from the validation set"]
source = st.radio("Sentence", SOURCES, horizontal=True, **kept("inspect_source", SOURCES[0], SOURCES))
true_label = None
if source == SOURCES[0] or not val_texts:
    if source != SOURCES[0]:
        st.caption("This run kept no validation rows: type a sentence instead.")
    text = st.text_input("Your sentence", **kept("inspect_text", EXAMPLES[0]), max_chars=500)
else:
    i = st.selectbox(f"Validation sentence ({len(val_texts):,}, held out from training)", range(len(val_texts)),
                     **kept(f"inspect_val_{path.name}", 0, range(len(val_texts))),
                     format_func=lambda i: f"{val_texts[i]}  ·  true label: {run.label_names[val_labels[i]]}")
    text, true_label = val_texts[i], run.label_names[val_labels[i]]
if not text.strip():
    st.info("Type a sentence above to inspect it.")
    st.stop()

method = SALIENCY_METHODS[kept("inspect_method", SALIENCY_METHODS[0], SALIENCY_METHODS)["index"]]  # selectbox: saliency tab
cache = st.session_state.setdefault("inspect_explanations", {})
cache_key = (run_stamp(path), text, method)
if cache_key not in cache:
    try:
        with st.spinner("Running the model…"):
            ex = explain(run, text, method=method)
    except InputError as err:
        st.error(f"{err}")
        st.stop()
    if len(cache) > 16:
        cache.clear()
    cache[cache_key] = ex
ex = cache[cache_key]
tokens, attn = ex.tokens, ex.attention.numpy()  # (L, H, T, T)
n_layers, n_heads = attn.shape[:2]

left, right = st.columns([1, 2], gap="large")
with left:
    st.subheader(f"Prediction: {ex.label}")
    if true_label is not None:
        st.markdown(f"True label: **{true_label}** · " + (":green[right]" if true_label == ex.label else ":red[wrong]"))
    st.plotly_chart(figures.probability_bars(ex.probabilities, predicted=ex.label), key="inspect_probs")
with right:
    st.subheader("Tokens the model read")
    st.markdown(" ".join(f":orange-background[{t}]" if t == "<unk>" else f":blue-background[{t}]" for t in tokens))
    for note in ex.notes:
        st.caption(note)


def label_of(h: int) -> str:
    return "average of heads" if h == n_heads else f"head {h + 1}"


for key, options, default in [("inspect_layer", range(n_layers), n_layers - 1), ("inspect_head", range(n_heads + 1), n_heads),
                              ("inspect_tl_layer", range(n_layers), n_layers - 1),
                              ("inspect_tl_head", range(n_heads + 1), n_heads)]:
    kept_in_state(key, default, options)  # a click on the grid sets the zoom's layer and head


tabs = st.tabs(["Model view", "Rollout and saliency", "Input features", "Time-lapse", "Compare", "Export"])

# -- model view -----------------------------------------------------------------------------------
with tabs[0]:
    st.caption("Rows of maps are layers, columns are heads, the last column is the average of the heads. In every map "
               "a row is the word asking (query), a column the word looked at (key); each row sums to 1. "
               "**Click a map to zoom in**, or pick it below.")

    def zoom_from_click() -> None:
        state = st.session_state.get("inspect_grid")
        points = state.selection.points if state is not None else []
        if points and points[0].get("customdata"):
            layer, head = points[0]["customdata"][:2]
            st.session_state["inspect_layer"], st.session_state["inspect_head"] = int(layer), int(head)

    st.plotly_chart(figures.selectable_attention_grid(attn, tokens), key="inspect_grid", on_select=zoom_from_click,
                    selection_mode="points")
    c1, c2, _ = st.columns([1, 1, 2])
    layer = c1.selectbox("Layer", range(n_layers), key="inspect_layer", format_func=lambda i: f"Layer {i + 1}")
    head = c2.selectbox("Head", range(n_heads + 1), key="inspect_head", format_func=lambda h: label_of(h).capitalize())
    zoom_col, filter_col = st.columns([3, 1], gap="large")
    with filter_col:
        st.markdown("**Filter**")
        k = st.number_input("Keep the top k per row (0 = all)", 0, 256, **kept("inspect_topk", 0))
        threshold = st.slider("Hide weights below", 0.0, 1.0, step=0.01, **kept("inspect_threshold", 0.0))
    raw = attn[layer].mean(0) if head == n_heads else attn[layer, head]
    shown = top_k_mask(torch.from_numpy(raw), k=int(k) or None, threshold=threshold or None).numpy()
    filters = [f for f in (f"top {k} per row" if k else "", f"weights ≥ {threshold:.2f}" if threshold else "") if f]
    zoom_title = f"Layer {layer + 1} · {label_of(head)}" + (f" · {', '.join(filters)}" if filters else "")
    filter_col.caption(f"The filter hides {int((shown == 0).sum() - (raw == 0).sum())} of {raw.size} weights; what is "
                       "left no longer sums to 1 per row." if filters else
                       "Hide the small weights to see each word's strongest links. The filter changes only this map.")
    with zoom_col:
        st.markdown(f"**{zoom_title}**")
        st.plotly_chart(figures.attention_heatmap(shown, tokens), key="inspect_zoom")

# -- rollout and saliency -------------------------------------------------------------------------
with tabs[1]:
    c1, c2 = st.columns(2, gap="large")
    c1.markdown("**Attention rollout** · all layers")
    c1.plotly_chart(figures.attention_heatmap(ex.rollout.numpy(), tokens), key="inspect_rollout")
    c2.markdown(f"**Raw attention** · layer {n_layers} · average of heads")
    c2.plotly_chart(figures.attention_heatmap(ex.head_average[-1].numpy(), tokens), key="inspect_last_layer")
    residual = "0.5·A + 0.5·I for the residual connection, " if cfg.residual else ""
    st.caption("Raw attention shows one layer only. **Attention rollout** (Abnar & Zuidema, 2020) follows attention "
               f"through all layers: it averages the heads, uses {residual}and multiplies the layers' maps from the "
               "first up, so a row tells how much of that word's final vector comes from each input word.")
    st.subheader("Which words mattered?")
    st.selectbox("Saliency method", SALIENCY_METHODS, **kept("inspect_method", SALIENCY_METHODS[0], SALIENCY_METHODS),
                 format_func=METHODS.get,
                 help="Each explains the predicted class's log-probability. gradient × input and integrated gradients "
                      "are signed (+ pushes towards the predicted class, − away from it); the gradient norm is a size "
                      "only.")
    sal = ex.saliency.numpy()
    att = ex.attention_to_token.numpy()
    st.plotly_chart(figures.token_scores(tokens, {"attention (rollout)": att, f"saliency ({METHODS[method]})": sal}),
                    key="inspect_scores")
    rho = spearman(att, np.abs(sal))
    c1, c2 = st.columns([1, 3])
    c1.metric("Rank agreement (Spearman ρ)", "–" if rho is None else f"{rho:+.2f}",
              help="Correlation of the two rankings of the words: +1 same order, 0 unrelated, −1 reversed. "
                   "Saliency is ranked by its size |saliency|, since attention has no sign.")
    sign = ("A red bar above zero pushes towards **{0}**, one below zero pushes away from it (towards the other "
            "classes)." if method != "grad_norm" else "The gradient norm has no sign: it says how much, not which way.")
    c2.markdown(
        f"**How to read this.** The blue bars show how much attention each word receives (rollout, averaged over "
        f"all words); the red bars show how much the model's log-probability of **{ex.label}**, log p({ex.label}), "
        "changes with that word's vector (the gradient, times the vector for the signed methods). Both are scaled so "
        "the largest is 1. Where they agree, the model both looks at a word and depends on it. Where they disagree, "
        "attention is not an explanation: a word can be looked at a lot yet barely move the prediction, or matter "
        "through the feed-forward layers and the final average without drawing much attention. "
        + sign.format(ex.label)
    )

# -- input features -------------------------------------------------------------------------------
with tabs[2]:
    applies = cfg.positional == "index"
    show_position = st.toggle("Show the position-index feature", value=True, key="inspect_show_position",
                              disabled=not applies)
    names = [f"d{i + 1}" for i in range(cfg.embedding_dim)] + (["position"] if applies else [])
    features = ex.input_features if not applies or show_position else ex.input_features[:, :-1]
    names = names[: features.shape[1]]
    st.plotly_chart(figures.feature_heatmap(features, tokens, names), key="inspect_features")
    vectors = "frozen GloVe vectors" if cfg.freeze_embeddings else "GloVe vectors, fine-tuned during training"
    if applies:
        st.caption(f"What the model reads: one row per token, the {cfg.embedding_dim} numbers of its word vector "
                   f"({vectors}), then, as in the seed post, the word's position 0, 1, 2, … appended as one more, "
                   "unscaled feature. Word-vector values are around ±1–3, so in a long sentence the position "
                   "column quickly dominates the colour scale — and the first layer's input. Toggle it off to see the "
                   "word vectors on their own scale.")
    else:
        st.caption(f"What the model reads: one row per token, the {cfg.embedding_dim} numbers of its word vector "
                   f"({vectors}). The position-index feature does not apply to this run: it uses **{cfg.positional}** "
                   "positions, which the model adds inside (after the input projection) instead of appending a "
                   "column. Train with the seed preset to see it.")

# -- time-lapse -----------------------------------------------------------------------------------
with tabs[3]:
    probes = [p for p in run.history.probes if p.get("sentences")]
    TL_SOURCES = ["This sentence", "A probe sentence"]
    offered = [name for name, has in zip(TL_SOURCES, (run.snapshots, probes), strict=True) if has] or TL_SOURCES[1:]
    tl_source = (st.radio("Replay", offered, horizontal=True, **kept("inspect_tl_source", offered[0], offered))
                 if len(offered) > 1 else offered[0])
    records = []
    if tl_source == TL_SOURCES[0]:
        st.caption(f"The time-lapse runs **your sentence** through the model as it was at {len(run.snapshots)} moments "
                   "of its training (the run kept those weights; epoch 0 = before training).")
        lapse_key = ("time-lapse", *cache_key[:3])  # computed once per sentence, like the explanation above
        if lapse_key not in cache:
            enc, steps = run.forward_over_training(text)
            cache[lapse_key] = [(e, {"tokens": list(enc.tokens), "attention": attn.numpy(), "probabilities": probs.tolist()})
                                for e, probs, attn in steps]
        records = cache[lapse_key]
        c1, c2, c3 = st.columns([2, 1, 1])
        c1.markdown("**The sentence above**, at every kept epoch")
    else:
        st.caption("The time-lapse replays the run's **probe sentences**: their attention was recorded after every epoch "
                   "while the model trained (epoch 0 = before training). Probe sentences are set on the Train page.")
        if not probes:
            st.info("This run kept no weights along its training and recorded no probe sentences (it was saved by an "
                    "older version): train a model on the Train page to get a time-lapse.")
        else:
            probe_texts = list(dict.fromkeys(s["text"] for p in probes for s in p["sentences"]))
            c1, c2, c3 = st.columns([2, 1, 1])
            probe = c1.selectbox("Probe sentence", probe_texts, key="inspect_probe")
            records = [(p["epoch"], s) for p in probes for s in p["sentences"] if s["text"] == probe]
    if records:
        tl_layer = c2.selectbox("Layer", range(n_layers), key="inspect_tl_layer",
                                format_func=lambda i: f"Layer {i + 1}")
        tl_head = c3.selectbox("Head", range(n_heads + 1), key="inspect_tl_head",
                               format_func=lambda h: label_of(h).capitalize())
        epochs = [e for e, _ in records]
        probs = [dict(zip(run.label_names, r.get("probabilities") or [], strict=False)) for _, r in records]
        h = run.history
        model_epoch = h.kept_epoch
        st.markdown(f"**Layer {tl_layer + 1} · {label_of(tl_head)}** · press ▶ to replay the training, or drag the "
                    "slider")
        # Built once per view (~0.25 s for 100 frames), not on every rerun of the page: all tabs run each time.
        replayed = text if tl_source == TL_SOURCES[0] else probe
        figure_key = ("time-lapse figure", cache_key[0], tl_source, replayed, tl_layer, tl_head)
        if figure_key not in cache:
            maps = [np.asarray(r["attention"])[tl_layer] for _, r in records]  # (H, T, T) each
            maps = [m.mean(0) if tl_head == n_heads else m[tl_head] for m in maps]
            cache[figure_key] = figures.attention_time_lapse(epochs, maps, [r["tokens"] for _, r in records], probs,
                                                            kept=sorted(run.snapshots), model_epoch=model_epoch)
        st.plotly_chart(cache[figure_key], key="inspect_time_lapse")
        notes = []
        if run.snapshots:
            notes.append("▲ on the epoch axis above the slider: the run kept its weights there.")
        if not all(probs):
            notes.append("This run did not record probabilities for its probes.")
        if model_epoch is not None:
            where = (f"epoch {model_epoch} (★) is that model" if model_epoch in epochs else
                     "its predictions elsewhere on this page can differ from the epochs here")
            why = " (lowest validation loss)" if h.epochs[-1].val_loss is not None else " (the last)"
            notes.append(f"The run's model has the weights of epoch {model_epoch}{why}: {where}.")
        st.caption(" ".join(notes))

# -- compare --------------------------------------------------------------------------------------
with tabs[4]:
    modes = ["Two sentences, same model", "Same sentence, two models"]
    mode = st.radio("Compare", modes, horizontal=True, **kept("inspect_compare_mode", modes[0], modes))
    choices = run_choices()
    current = st.session_state.get("inspect_run")
    if mode == modes[0]:
        other = st.text_input("Second sentence", **kept("inspect_compare_text", EXAMPLES[1]), max_chars=500)
        sides = [(current, run, text), (current, run, other)]
    else:
        others = [n for n in choices if n != current] or list(choices)
        if st.session_state.get("inspect_compare_run") not in others:
            st.session_state["inspect_compare_run"] = others[0]
        other_name = st.selectbox("Second model", others, key="inspect_compare_run")
        if len(choices) == 1:
            st.info("There is only one model so far: train another on the Train page to compare two models.")
        try:
            sides = [(current, run, text), (other_name, get_run(choices[other_name]), text)]
        except InputError as err:
            st.error(f"{other_name} cannot be loaded: {err}")
            sides = [(current, run, text)]
    for i, (col, (name, r, t)) in enumerate(zip(st.columns(2, gap="large"), sides, strict=False)):
        with col:
            st.markdown(f"**{name}**  \n“{t}”")
            try:
                p = r.predict(t)
            except InputError as err:
                st.error(f"{err}")
                continue
            st.markdown(f"Prediction: **{p.label}**")
            st.plotly_chart(figures.probability_bars(p.probabilities, predicted=p.label), key=f"inspect_cmp_probs_{i}")
            last = np.asarray(p.attention)[-1].mean(0)
            st.markdown("Last layer · average of heads")
            st.plotly_chart(figures.attention_heatmap(last, p.tokens), key=f"inspect_cmp_heatmap_{i}")

# -- export ---------------------------------------------------------------------------------------
with tabs[5]:
    st.caption("**PNG:** every chart has its own export: hover over it and click the camera icon in its toolbar. "
               f"**HTML** saves the zoomed map from the Model view (now: {zoom_title}) as one interactive file that "
               "works offline. **CSV** and **JSON** hold every layer's and head's weights for this sentence; in the CSV "
               "layers and heads count from 1, token positions from 0.")
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40] or "sentence"
    rows = io.StringIO()
    writer = csv.writer(rows)
    writer.writerow(["layer", "head", "query_index", "query", "key_index", "key", "weight"])
    for (li, hi, qi, ki), weight in np.ndenumerate(attn):
        writer.writerow([li + 1, hi + 1, qi, tokens[qi], ki, tokens[ki], f"{weight:.6g}"])
    payload = {"run": run.name, "text": text, "tokens": tokens, "label": ex.label, "probabilities": ex.probabilities,
               "attention": ex.attention.tolist()}
    c1, c2, c3 = st.columns(3)
    c1.download_button("Zoomed map (HTML)", lambda: figures.attention_heatmap(shown, tokens, title=f"“{text}” · {zoom_title}")
                       .to_html(include_plotlyjs=True), f"attention_{slug}.html",
                       "text/html", key="inspect_dl_html", on_click="ignore", icon=":material/download:")
    c2.download_button("All weights (CSV)", rows.getvalue(), f"attention_{slug}.csv", "text/csv", key="inspect_dl_csv",
                       on_click="ignore", icon=":material/download:")
    c3.download_button("All weights (JSON)", json.dumps(payload), f"attention_{slug}.json", "application/json",
                       key="inspect_dl_json", on_click="ignore", icon=":material/download:",
                       help="attention is indexed [layer][head][query][key], all from 0")
