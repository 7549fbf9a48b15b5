"""The Inspect page's tabs, each drawn from the explanation of one sentence (pages/2_Inspect.py places them)."""

from __future__ import annotations

import json
from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import streamlit as st
import torch

from attention_core import Run
from attention_core.configs import KEPT_BY_WORDS
from attention_core.errors import InputError
from attention_core.explain import SALIENCY_METHODS, Explanation, explain, top_k_mask
from attention_core.export import attention_csv, attention_json
from attention_core.history import ProbeSentence
from attention_core.map_names import head_choice, layers_said, rollout_maps
from attention_core.metrics import spearman
from attention_core.model import ModelConfig
from attention_core.run_folders import run_stamp
from ui import chart_downloads, figures, state, view_link
from ui.common import EXAMPLES, get_run, run_choices
from ui.markup import escaped, token_chips
from ui.model_notes import HIDDEN_SAID, base_title, head_untrained, hide_special_switch, shown_maps
from ui.sentence_box import sentence_box
from ui.state import kept, kept_in_state

METHODS = {
    "grad_x_input": "gradient × input",
    "integrated_gradients": "integrated gradients",
    "grad_norm": "gradient norm",
}
REPLAYS = ["This sentence", "A probe sentence"]
SOURCES = ["Type a sentence", "Pick one from the validation set"]
TABS = {"model-view": "Model view", "rollout": "Rollout and saliency", "neuron": "Neuron view", "features": "Input features",
        "time-lapse": "Time-lapse", "compare": "Compare", "export": "Export"}  # the address's tab → its label


def view_params(run: Run, path: Path) -> list[view_link.Param]:
    """What defines the page's view in the address: sentence (or val, a validation row), tab, saliency
    method, layer and head (the zoom's; the time-lapse's on its tab), the time-lapse's epoch."""
    val_texts = run.validation[0]
    n_layers, n_heads = run.model_config.n_attention_maps, run.model_config.n_heads
    val_key = f"inspect_val_{path.name}"

    def typed() -> bool:  # the sentence is typed, not a validation row
        return state.current("inspect_source", SOURCES[0]) == SOURCES[0] or not val_texts

    def on_time_lapse() -> bool:  # layer and head are then the time-lapse's
        return state.current("inspect_tab", TABS["model-view"]) == TABS["time-lapse"]

    def put_text(text: object) -> None:
        state.put("inspect_text", text)
        state.put("inspect_source", SOURCES[0])

    def put_row(row: object) -> None:
        if row is not None:
            state.put(val_key, row)
            state.put("inspect_source", SOURCES[1])

    def parse_row(text: str) -> int:
        if not val_texts:
            raise view_link.BadParam("this run kept no validation rows", "give a sentence=… instead")
        if not text.strip().isdigit() or int(text) >= len(val_texts):
            raise view_link.BadParam(f"this run has {len(val_texts):,} validation rows", f"use 0–{len(val_texts) - 1}")
        return int(text)

    def parse_epoch(text: str) -> int:
        if not text.strip().isdigit():
            raise view_link.BadParam("an epoch is a whole number", "e.g. epoch=0 (before training)")
        return int(text)

    def layer_and_head(name: str, what: str, count: int, default: int, extra: dict, said: str | None = None) -> view_link.Param:
        zoom, replay = (view_link.number(name, f"{prefix}_{name}", count, default, what=what, extra=extra, said=said)
                        for prefix in ("inspect", "inspect_tl"))
        return view_link.Param(name, lambda: (replay if on_time_lapse() else zoom).get(),
                               lambda value: (zoom.put(value), replay.put(value)), zoom.parse, zoom.show, default)

    return [
        view_link.Param("sentence", lambda: state.current("inspect_text", EXAMPLES[0]) if typed() else EXAMPLES[0],
                        put_text, view_link.check_text, str, EXAMPLES[0]),
        view_link.Param("val", lambda: None if typed() else view_link.state_getter(val_key, 0, range(len(val_texts)))(),
                        put_row, parse_row, str, None),
        view_link.choice("tab", "inspect_tab", TABS, "model-view"),
        view_link.choice("method", "inspect_method", {m.replace("_", "-"): m for m in SALIENCY_METHODS},
                         SALIENCY_METHODS[0].replace("_", "-"), what="saliency method"),
        layer_and_head("layer", "layer", n_layers, n_layers - 1, {}, layers_said(run.model_config.n_layers, n_layers)),
        layer_and_head("head", "head", n_heads, n_heads, {"avg": n_heads}),
        view_link.Param("epoch", lambda: state.current("inspect_tl_epoch"), lambda e: state.put("inspect_tl_epoch", e),
                        parse_epoch, str, None, written=on_time_lapse),
    ]


def _cache() -> dict:
    """This session's explanations and time-lapses, keyed by the run's :func:`run_stamp` and the sentence."""
    return st.session_state.setdefault("inspect_explanations", {})


def explanation(run: Run, path: Path, text: str, method: str) -> Explanation:
    """:func:`explain` ``text``, once per run, sentence and saliency method; stops the page with the error
    if the sentence cannot be explained."""
    cache, key = _cache(), (run_stamp(path), text, method)
    if key not in cache:
        try:
            with st.spinner("Running the model…"):
                ex = explain(run, text, method=method)
        except InputError as err:
            st.error(f"{err}")
            st.stop()
        if len(cache) > 16:
            cache.clear()
        cache[key] = ex
    return cache[key]


def saliency_method() -> str:
    """The saliency method chosen on the Rollout tab (the explanation is made before its selectbox is drawn)."""
    method = state.current("inspect_method", SALIENCY_METHODS[0])
    return method if method in SALIENCY_METHODS else SALIENCY_METHODS[0]


def prediction(ex: Explanation, true_label: str | None, *, model: str) -> None:
    """The predicted class and its probabilities (left), the tokens the model read (right); ``model`` is the
    run's name (for the charts' downloads, as in every view below)."""
    left, right = st.columns([1, 2], gap="large")
    with left:
        st.subheader(f"Prediction: {ex.label}")
        if true_label is not None:
            st.markdown(f"True label: **{true_label}** · " + (":green[right]" if true_label == ex.label else ":red[wrong]"))
        st.plotly_chart(figures.probability_bars(ex.probabilities, predicted=ex.label), key="inspect_probs",
                        config=chart_downloads.config("Probabilities", model=model, sentence=ex.text))
    with right:
        st.subheader("Tokens the model read")
        st.markdown(token_chips(ex.tokens))
        for note in ex.notes:
            st.caption(note)


def _layer_and_head(names: list[str], n_heads: int, prefix: str, columns: list) -> tuple[int, int]:
    """The Layer and Head selectboxes (head ``n_heads`` = the average of the heads) in two ``columns``;
    ``names`` names the maps (``ModelConfig.map_names``: the layers, then a pooling attention's)."""
    layer = columns[0].selectbox("Layer", range(len(names)), key=f"{prefix}_layer", format_func=names.__getitem__)
    head = columns[1].selectbox("Head", range(n_heads + 1), key=f"{prefix}_head",
                                format_func=lambda h: head_choice(h, n_heads).capitalize())
    return layer, head


def _head_map(layer_attention: np.ndarray, head: int) -> np.ndarray:
    """One head's (T, T) map from a layer's (H, T, T), or the average of the heads for head H."""
    return layer_attention.mean(0) if head == len(layer_attention) else layer_attention[head]


def keep_layer_and_head_choices(n_layers: int, n_heads: int) -> None:
    """Keep the zoom's and the time-lapse's layer and head across pages (a click on the grid sets the zoom's)."""
    for key, options, default in [("inspect_layer", range(n_layers), n_layers - 1),
                                  ("inspect_head", range(n_heads + 1), n_heads),
                                  ("inspect_tl_layer", range(n_layers), n_layers - 1),
                                  ("inspect_tl_head", range(n_heads + 1), n_heads)]:
        kept_in_state(key, default, options)


@dataclass(frozen=True)
class Zoom:
    """The map shown in the Model view's zoom (after the filter) and its title."""

    shown: np.ndarray  # (T, T), or (1, T) for a pooling attention's map
    title: str
    tokens: list[str]  # its rows' and columns' (without [CLS] and [SEP] when they are hidden)
    pooling: bool = False  # the map is the pooling attention's: one row, the label's query


def _zoom_from_click() -> None:
    state = st.session_state.get("inspect_grid")
    points = state.selection.points if state is not None else []
    if points and points[0].get("customdata"):
        layer, head = points[0]["customdata"][:2]
        st.session_state["inspect_layer"], st.session_state["inspect_head"] = int(layer), int(head)


def model_view(ex: Explanation, cfg: ModelConfig, *, model: str) -> Zoom:
    """Every layer and head as a grid of maps; the one clicked or picked, zoomed in, with a top-k filter."""
    attn, tokens = ex.attention.numpy(), ex.tokens  # (L, H, T, T), (L + 1, …) with a pooling attention's map
    names, n_heads = cfg.map_names(), attn.shape[1]
    pooled = len(names) > cfg.n_layers
    hidden = hide_special_switch(tokens, "inspect_hide_special")  # a word-piece model's [CLS] and [SEP]
    attn, tokens = shown_maps(attn, tokens, hidden)
    st.caption("Rows of maps are layers, columns are heads, the last column is the average of the heads. In every map "
               "a row is the word asking (query), a column the word looked at (key); each row sums to 1. "
               + (f"The last row, **{names[-1]}**, is {figures.POOLING_CAPTION} (one row each: the label's "
                  "query). " if pooled else "")
               + (f"{HIDDEN_SAID} " if hidden else "")
               + ("Each map is titled *layer.head*. " if n_heads + 1 > figures.WIDE_GRID else "")
               + "**Click a map to zoom in**, or pick it below.")
    st.plotly_chart(figures.selectable_attention_grid(attn, tokens, pooling=pooled), key="inspect_grid",
                    on_select=_zoom_from_click, selection_mode="points",
                    config=chart_downloads.config("Attention, every layer and head", model=model, sentence=ex.text))
    layer, head = _layer_and_head(names, n_heads, "inspect", st.columns([1, 1, 2])[:2])
    pooling = layer >= cfg.n_layers
    zoom_col, filter_col = st.columns([3, 1], gap="large")
    with filter_col:
        st.markdown("**Filter**")
        k = st.number_input("Keep the top k per row (0 = all)", 0, 256, **kept("inspect_topk", 0))
        threshold = st.slider("Hide weights below", 0.0, 1.0, step=0.01, **kept("inspect_threshold", 0.0))
    raw = _head_map(attn[layer], head)
    raw = figures.pooling_row(raw) if pooling else raw  # (1, T): its one query
    shown = top_k_mask(torch.from_numpy(raw), k=int(k) or None, threshold=threshold or None).numpy()
    filters = [f for f in (f"top {k} per row" if k else "", f"weights ≥ {threshold:.2f}" if threshold else "") if f]
    title = f"{names[layer]} · {head_choice(head, n_heads)}" + (f" · {', '.join(filters)}" if filters else "")
    what = "Attention" + (f" ({', '.join(filters)})" if filters else "")
    filter_col.caption(f"The filter hides {int((shown == 0).sum() - (raw == 0).sum())} of {raw.size} weights; what is "
                       "left no longer sums to 1 per row." if filters else
                       "Hide the small weights to see each word's strongest links. The filter changes only this map.")
    with zoom_col:
        st.markdown(f"**{title}**")
        st.plotly_chart(figures.attention_heatmap(shown, tokens, pooling=pooling), key="inspect_zoom",
                        config=chart_downloads.config(what, model=model, sentence=ex.text, layer=names[layer],
                                                      head=head_choice(head, n_heads)))
    return Zoom(shown, title, tokens, pooling)


def attention_bars_said(cfg: ModelConfig) -> str:
    """What the Rollout tab's *attention (rollout)* bars are (``Explanation.attention_to_token``), in words."""
    if cfg.n_attention_maps > cfg.n_layers:
        return (f"the {cfg.map_names()[-1].lower()} attention's row times the rollout above ({rollout_maps(cfg)} "
                "multiplied): how much of each word reaches the label")
    return "the rollout above, its rows averaged: how much of each word is in the final vectors, on average over the words"


def rollout_and_saliency(ex: Explanation, cfg: ModelConfig, *, model: str, untrained: bool = False) -> None:
    """Rollout beside the last map's raw attention, then rollout against saliency, word by word. ``untrained``: the
    model's classifier head is (a pretrained encoder's before fine-tuning), so saliency explains a random head."""
    tokens, method, last = ex.tokens, ex.saliency_method, cfg.map_names()[-1]
    c1, c2 = st.columns(2, gap="large")
    c1.markdown(f"**Attention rollout** · {rollout_maps(cfg, pooling=False)}")
    c1.plotly_chart(figures.attention_heatmap(ex.rollout.numpy(), tokens, narrow=True), key="inspect_rollout",
                    config=chart_downloads.config("Attention rollout", model=model, sentence=ex.text,
                                                  layer=rollout_maps(cfg, pooling=False)))
    c2.markdown(f"**Raw attention** · {last} · average of heads")
    c2.plotly_chart(figures.attention_heatmap(ex.head_average[-1].numpy(), tokens, pooling=cfg.pooling == "attention",
                                              narrow=True),
                    key="inspect_last_layer", config=chart_downloads.config("Raw attention", model=model, sentence=ex.text,
                                                                            layer=last, head="average of heads"))
    half = "0.5·A + 0.5·I for the residual connection, " if cfg.residual else ""
    st.caption(f"Raw attention shows one map only. **Attention rollout** (Abnar & Zuidema, 2020) follows attention "
               f"through {rollout_maps(cfg, pooling=False)}: it averages the heads, uses {half}and multiplies the "
               "layers' maps from the first up, so a row tells how much of that word's final vector comes from each "
               "input word.")
    st.subheader("Which words mattered?")
    st.selectbox("Saliency method", SALIENCY_METHODS, **kept("inspect_method", SALIENCY_METHODS[0], SALIENCY_METHODS),
                 format_func=METHODS.get,
                 help="Each explains the predicted class's log-probability. gradient × input and integrated gradients "
                      "are signed (+ pushes towards the predicted class, − away from it); the gradient norm is a size "
                      "only.")
    sal = ex.saliency.numpy()
    att = ex.attention_to_token.numpy()
    st.plotly_chart(figures.token_scores(tokens, {"attention (rollout)": att, f"saliency ({METHODS[method]})": sal}),
                    key="inspect_scores", config=chart_downloads.config(f"Rollout and saliency ({METHODS[method]})",
                                                                        model=model, sentence=ex.text))
    rho = spearman(att, np.abs(sal))
    c1, c2 = st.columns([1, 3])
    c1.metric("Rank agreement (Spearman ρ)", "–" if rho is None else f"{rho:+.2f}",
              help="Correlation of the two rankings of the words: +1 same order, 0 unrelated, −1 reversed. "
                   "Saliency is ranked by its size |saliency|, since attention has no sign.")
    sign = ("A red bar above zero pushes towards **{0}**, one below zero pushes away from it (towards the other "
            "classes)." if method != "grad_norm" else "The gradient norm has no sign: it says how much, not which way.")
    c2.markdown(
        f"**How to read this.** The blue bars *attention (rollout)* are {attention_bars_said(cfg)}; the red bars show "
        f"how much the model's log-probability of **{ex.label}**, log p({ex.label}), "
        "changes with that word's vector (the gradient, times the vector for the signed methods). Both are scaled so "
        "the largest is 1. Where they agree, the model both looks at a word and depends on it. Where they disagree, "
        "attention is not an explanation: a word can be looked at a lot yet barely move the prediction, or matter "
        "through the feed-forward layers and the final average without drawing much attention. "
        + sign.format(ex.label)
    )
    if untrained:
        st.caption("This model's classifier head is untrained, so the saliency bars explain a random head's "
                   f"“{ex.label}”: they say nothing about sentiment yet. The attention and its rollout are the "
                   "pretrained encoder's own.")


def input_features(ex: Explanation, run: Run) -> None:
    """The model's input matrix, with or without the seed preset's position-index column."""
    cfg = run.model_config
    base = base_title(run)
    if base is not None:
        _word_piece_features(ex, run, base)
        return
    applies = cfg.positional == "index"
    show_position = st.toggle("Show the position-index feature", value=True, key="inspect_show_position",
                              disabled=not applies)
    names = [f"d{i + 1}" for i in range(cfg.embedding_dim)] + (["position"] if applies else [])
    features = ex.input_features if not applies or show_position else ex.input_features[:, :-1]
    names = names[: features.shape[1]]
    st.plotly_chart(figures.feature_heatmap(features, ex.tokens, names), key="inspect_features",
                    config=chart_downloads.config("Input features", model=run.name, sentence=ex.text))
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


def _word_piece_features(ex: Explanation, run: Run, base: str) -> None:
    """A pretrained encoder's input: each word piece's vector from its embedding table (the small model's
    position-index feature does not apply)."""
    cfg = run.model_config
    names = [f"d{i + 1}" for i in range(cfg.embedding_dim)]
    st.plotly_chart(figures.feature_heatmap(ex.input_features, ex.tokens, names), key="inspect_features",
                    config=chart_downloads.config("Input features", model=run.name, sentence=ex.text))
    table = ("kept as pretrained" if cfg.freeze_embeddings or head_untrained(run) else
             "fine-tuned with the rest")
    st.caption(f"What the model reads: one row per word piece, the {cfg.embedding_dim} numbers of its vector in "
               f"{base}'s table of {run.encoder.vocab_size:,} word pieces ({table}); [CLS] and [SEP] have vectors of "
               "their own. Before the first layer the model adds a learned vector for each position (and one for the "
               "sentence's segment) and normalises each row (LayerNorm); saliency starts from these rows. A "
               "position-index feature, as in the seed post, does not apply: positions are learned vectors, added.")


def _replayed_sentence(run: Run, path: Path, text: str) -> list[tuple[int, ProbeSentence]]:
    """(epoch, ``text`` as that epoch's weights read it) for each kept epoch, in the shape of the run's
    probe records; computed once per run and sentence."""
    cache, key = _cache(), ("time-lapse", run_stamp(path), text)
    if key not in cache:
        cache[key] = [(epoch, ProbeSentence(text, list(out.encoded.tokens), out.probabilities.tolist(), out.attention.numpy()))
                      for epoch, out in run.forward_over_training(text)]
    return cache[key]


def time_lapse(run: Run, path: Path, text: str, n_heads: int) -> None:
    """The typed sentence through the kept epochs' weights, or a probe sentence as recorded while training."""
    if head_untrained(run):
        st.info("This is the pretrained encoder before any fine-tuning: it has no training here to replay. Fine-tune "
                "it on the Train page: that run keeps its weights along the way, and its time-lapse shows how "
                "fine-tuning changes the pretrained attention.")
        return
    probes = [p for p in run.history.probes if p.sentences]
    offered = [name for name, has in zip(REPLAYS, (run.snapshots, probes), strict=True) if has] or REPLAYS[1:]
    source = (st.radio("Replay", offered, horizontal=True, **kept("inspect_tl_source", offered[0], offered))
              if len(offered) > 1 else offered[0])
    records, replayed = [], text
    if source == REPLAYS[0]:
        st.caption(f"The time-lapse runs **your sentence** through the model as it was at {len(run.snapshots)} moments "
                   "of its training (the run kept those weights; epoch 0 = before training).")
        records = _replayed_sentence(run, path, text)
        c1, c2, c3 = st.columns([2, 1, 1])
        c1.markdown("**The sentence above**, at every kept epoch")
    else:
        st.caption("The time-lapse replays the run's **probe sentences**: their attention was recorded after every epoch "
                   "while the model trained (epoch 0 = before training). Probe sentences are set on the Train page.")
        if not probes:
            st.info("This run kept no weights along its training and recorded no probe sentences (it was saved by an "
                    "older version): train a model on the Train page to get a time-lapse.")
            return
        probe_texts = list(dict.fromkeys(s.text for p in probes for s in p.sentences))
        c1, c2, c3 = st.columns([2, 1, 1])
        replayed = c1.selectbox("Probe sentence", probe_texts, key="inspect_probe")
        records = [(p.epoch, s) for p in probes if (s := p.sentence(replayed)) is not None]
    if not records:
        return
    names = run.model_config.map_names()
    layer, head = _layer_and_head(names, n_heads, "inspect_tl", [c2, c3])
    pooling = layer >= run.model_config.n_layers  # the pooling attention's map: one row
    epochs = [e for e, _ in records]
    probs = [dict(zip(run.label_names, r.probabilities, strict=False)) for _, r in records]
    model_epoch = run.history.kept_epoch
    st.markdown(f"**{names[layer]} · {head_choice(head, n_heads)}** · press ▶ to replay the training, or drag the "
                "slider" + (f"  \n{figures.POOLING_CAPTION.capitalize()}." if pooling else ""))
    # Built once per view, not on every rerun of the page: every tab runs each time.
    start = st.session_state.get("inspect_tl_epoch")  # a link's epoch=…: the frame it opens on
    if start is not None and start not in epochs:
        opens = f"the run's model, epoch {model_epoch}" if model_epoch in epochs else "the last"
        st.caption(f"The link's epoch {start} is not one of this time-lapse's ({', '.join(map(str, epochs))}): it "
                   f"opens on {opens}.")
    key: Hashable = ("time-lapse figure", run_stamp(path), source, replayed, layer, head, start)
    cache = _cache()
    if key not in cache:
        maps = [_head_map(np.asarray(r.attention)[layer], head) for _, r in records]  # (T, T) each
        cache[key] = figures.attention_time_lapse(epochs, maps, [r.tokens for _, r in records], probs,
                                                  kept=sorted(run.snapshots), model_epoch=model_epoch, start=start,
                                                  pooling=pooling)
    st.plotly_chart(cache[key], key="inspect_time_lapse",
                    config=chart_downloads.config("Attention over training", model=run.name, sentence=replayed,
                                                  layer=names[layer], head=head_choice(head, n_heads)))
    notes = []
    if run.snapshots:
        notes.append("▲ on the epoch axis above the slider: the run kept its weights there.")
    if not all(probs):
        notes.append("This run did not record probabilities for its probes.")
    if model_epoch is not None:
        where = (f"epoch {model_epoch} (★) is that model" if model_epoch in epochs else
                 "its predictions elsewhere on this page can differ from the epochs here")
        why = (f" ({KEPT_BY_WORDS[run.train_config.keep_by].removeprefix('the ')})"
               if run.history.epochs[-1].val_loss is not None else " (the last)")
        notes.append(f"The run's model has the weights of epoch {model_epoch}{why}: {where}.")
    st.caption(" ".join(notes))


def compare(run: Run, text: str) -> None:
    """Two sentences through this model, or this sentence through two models, side by side."""
    modes = ["Two sentences, same model", "Same sentence, two models"]
    mode = st.radio("Compare", modes, horizontal=True, **kept("inspect_compare_mode", modes[0], modes))
    choices = run_choices()
    current = st.session_state.get("inspect_run")
    if mode == modes[0]:
        other = sentence_box("Second sentence", "inspect_compare_text", EXAMPLES[1])
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
            st.markdown(f"**{name}**  \n“{escaped(t)}”")
            try:
                p = r.predict(t)
            except InputError as err:
                st.error(f"{err}")
                continue
            st.markdown(f"Prediction: **{p.label}**" + (" (its classifier head is untrained: this means nothing yet)"
                                                        if head_untrained(r) else ""))
            st.plotly_chart(figures.probability_bars(p.probabilities, predicted=p.label), key=f"inspect_cmp_probs_{i}",
                            config=chart_downloads.config("Probabilities", model=r.name, sentence=t))
            last = np.asarray(p.attention)[-1].mean(0)
            st.markdown(f"{r.model_config.map_names()[-1]} · average of heads")
            st.plotly_chart(figures.attention_heatmap(last, p.tokens, pooling=r.model_config.pooling == "attention",
                                                      narrow=True),
                            key=f"inspect_cmp_heatmap_{i}",
                            config=chart_downloads.config("Attention", model=r.name, sentence=t,
                                                          layer=r.model_config.map_names()[-1], head="average of heads"))


def export(ex: Explanation, run: Run, zoom: Zoom) -> None:
    """Downloads: the zoomed map as interactive HTML, every weight as CSV and JSON."""
    text, tokens, cfg = ex.text, ex.tokens, run.model_config
    pooled = cfg.n_attention_maps > cfg.n_layers
    st.caption("**PNG, SVG:** every chart has its own: hover over it and click the camera in its toolbar (PNG) or the one "
               "beside it (SVG). "
               f"**HTML** saves the zoomed map from the Model view (now: {zoom.title}) as one interactive file that "
               "works offline. **CSV** and **JSON** hold every layer's and head's weights for this sentence; in the CSV "
               "layers and heads count from 1, token positions from 0"
               + ("; the pooling attention is layer `pooling`, one row per head and word (its query is the label's, "
                  "no word), and in the JSON `pooling`, one row per head." if pooled else "."))
    stem = chart_downloads.filename("Attention", model=run.name, sentence=text)  # attention_<run>_<sentence>
    payload = attention_json(run.name, text, tokens, ex.label, ex.probabilities, ex.attention.numpy(), cfg.n_layers)
    c1, c2, c3 = st.columns(3)
    c1.download_button("Zoomed map (HTML)", lambda: figures.attention_heatmap(zoom.shown, zoom.tokens,
                                                                      title=f"“{text}” · {zoom.title}",
                                                                      pooling=zoom.pooling)
                       .to_html(include_plotlyjs=True), f"{stem}.html",
                       "text/html", key="inspect_dl_html", on_click="ignore", icon=":material/download:")
    c2.download_button("All weights (CSV)", attention_csv(tokens, ex.attention.numpy(), cfg.n_layers),
                       f"{stem}.csv", "text/csv",
                       key="inspect_dl_csv", on_click="ignore", icon=":material/download:")
    c3.download_button("All weights (JSON)", json.dumps(payload), f"{stem}.json", "application/json",
                       key="inspect_dl_json", on_click="ignore", icon=":material/download:",
                       help="attention is indexed [layer][head][query][key]"
                            + (", pooling [head][key]" if pooled else "") + ", all from 0")
