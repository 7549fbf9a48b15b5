"""The Train page's hyperparameter form: presets in, (ModelConfig, TrainConfig) out."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import streamlit as st

from attention_core import ModelConfig, TrainConfig, preset
from attention_core.configs import KEEP_BY, LR_SCHEDULES, MAX_PROBE_RECORDS, MAX_SNAPSHOTS, OPTIMIZERS, SAMPLINGS
from attention_core.model import MAX_LOCAL_CONV, POOLING, POOLING_KEYS, POSITIONAL
from attention_core.presets import DEFAULT, PRESETS
from ui import state, view_link
from ui.common import kept

CUSTOM = "Custom"  # not a preset: the form's own choice, starting from the default preset with every field open
PRESET_LABELS = {p.label: p.name for p in PRESETS.values()} | {CUSTOM: "default"}  # radio option → preset name
PRESET_HELP = {p.label: p.help for p in PRESETS.values()} | {CUSTOM: f"Start from {DEFAULT.label} and change anything."}


def _keys(choice: str) -> str:
    """The prefix of a preset's widget keys: each preset keeps its own values."""
    return f"train_{PRESET_LABELS[choice]}_{'c' if choice == CUSTOM else 'p'}_"


def chosen_preset() -> tuple[ModelConfig, TrainConfig]:
    """The chosen preset's settings as it defines them (before the form's changes): known before the form is drawn
    (the radio's value, kept across pages), for the choices and the data check above it."""
    choice = state.current("train_preset", DEFAULT.label)
    return preset(PRESET_LABELS.get(choice, DEFAULT.name))


def view_params(datasets: Sequence[str]) -> list[view_link.Param]:
    """What defines the Train page's view in the address: the bundled ``dataset`` (uci | small; an
    upload has no link) and the ``preset`` (default | seed | custom)."""
    bundled = dict(zip(("uci", "small"), datasets, strict=True))
    presets = {p.name: p.label for p in PRESETS.values()} | {"custom": CUSTOM}
    return [view_link.choice("dataset", "train_source", bundled, "uci", what="bundled dataset"),
            view_link.choice("preset", "train_preset", presets, DEFAULT.name, what="preset")]


def hyperparameter_form(default_probe: str, data_name: str, *, on_start: Callable[[], None], disabled: bool = False) -> None:
    """Draw the form; its Start button calls ``on_start``, which reads the settings with :func:`form_settings`.

    Start is a callback, run before the page: the page is then drawn once per Start, with the job
    running and the form disabled, rather than once before the job starts and again after (work for
    the server and each watching browser). The form is drawn even while a job runs (submit
    disabled): a widget Streamlit does not draw in a run loses its value, and the learner's
    settings should survive a training. They also survive a visit to another page
    (:func:`ui.common.kept`).
    """
    choice = st.radio("Preset", list(PRESET_LABELS), horizontal=True, **kept("train_preset", DEFAULT.label, PRESET_LABELS))
    st.caption(PRESET_HELP[choice])
    model, train = preset(PRESET_LABELS[choice])
    custom = choice == CUSTOM
    p = _keys(choice)

    def k(name: str, default: object, options: Sequence | None = None) -> dict:
        return kept(p + name, default, options)  # the values also survive a visit to another page

    with st.form("train_form", border=True):
        c1, c2, c3, c4 = st.columns(4)
        c1.number_input("Epochs", 1, 5000, **k("epochs", train.epochs))
        c2.number_input("Learning rate", 1e-6, 1e4, format="%.4g", **k("lr", train.lr),
                        help="Too high and the run diverges: try it, the app stops it and keeps the last good weights.")
        c3.number_input("Batch size", 1, 1024, **k("batch", train.batch_size), disabled=not custom)
        c4.number_input("Seed", 0, 2**31 - 1, **k("seed", train.seed))
        if model.base is not None:  # a pretrained encoder: which of its layers train, how long a sentence is
            _fine_tune_fields(model, train, k)
        else:
            _small_model_fields(model, train, k, custom)
        _run_fields(choice, model, train, k, default_probe, data_name)
        st.form_submit_button("Start training", type="primary", use_container_width=True, disabled=disabled,
                              icon=":material/play_arrow:", on_click=on_start)


def _fine_tune_fields(model: ModelConfig, train: TrainConfig, k: Callable[..., dict]) -> None:
    """The fine-tuning preset's own settings: how many of the encoder's top layers train (the rest stay frozen,
    as pretrained), the sentence length in word pieces, the validation share. Its sizes are the checkpoint's."""
    with st.container(key="train_advanced"):  # the rows ?hide=advanced hides (ui/projector.py)
        c1, c2, c3, _ = st.columns(4)
        c1.number_input(f"Layers that train (of {model.n_layers})", 1, model.n_layers,
                        **k("trained_layers", model.n_layers - model.frozen_layers),
                        help="The top layers that learn from your data, with the new classifier head; the layers below "
                        "them, and the word-piece embeddings, stay as pretrained. More layers: slower, and more to "
                        "learn from few rows.")
        c2.number_input("Word pieces at most", 3, model.max_len, **k("max_pieces", train.max_tokens),
                        help="The maximum length of a sentence, in word pieces: a longer one is cut to this many, [CLS] "
                        "and [SEP] included (a word can be several pieces). Longer: slower.")
        c3.number_input("Validation share", 0.0, 0.5, step=0.05, **k("val", train.val_fraction))
        st.caption(f"What trains: the top layers of the pretrained encoder ({model.n_layers} layers × {model.n_heads} "
                   f"heads, {model.d_model}-d) that you choose above, and a new classifier head for your labels; the "
                   "word-piece embeddings and the layers below stay as pretrained. It reads word pieces with its own "
                   "vectors (no word vectors to choose), mean-pooled; AdamW with a warm-up, then a linear decay.")


def _small_model_fields(model: ModelConfig, train: TrainConfig, k: Callable[..., dict], custom: bool) -> None:
    """The small model's rows of settings: only the Custom preset's are open."""
    dims = [16, 32, 48, 64, 96, 128]
    with st.container(key="train_advanced"):  # the rows ?hide=advanced hides (ui/projector.py)
        c1, c2, c3, c4 = st.columns(4)
        c1.number_input("Layers", 1, 6, **k("layers", model.n_layers), disabled=not custom)
        c2.number_input("Heads", 1, 8, **k("heads", model.n_heads), disabled=not custom)
        c3.selectbox("Model dim", dims, **k("dmodel", model.d_model if model.d_model in dims else 64, dims),
                     disabled=not custom or model.d_model is None)
        c4.number_input("Validation share", 0.0, 0.5, step=0.05, **k("val", train.val_fraction))
        c1, c2, c3, c4 = st.columns(4)
        c1.selectbox("Positions", POSITIONAL, **k("pos", model.positional, POSITIONAL),
                     disabled=not custom, help="index = the seed's: append the position 0, 1, 2… as a feature")
        c2.selectbox("Pooling", POOLING, **k("pool", model.pooling, POOLING), disabled=not custom)
        c3.selectbox("Optimizer", OPTIMIZERS, **k("opt", train.optimizer, OPTIMIZERS), disabled=not custom)
        c4.number_input("Dropout", 0.0, 0.9, step=0.05, **k("drop", model.dropout), disabled=not custom)
        c1, c2, c3, c4 = st.columns(4)
        c1.toggle("Residual + norm + feed-forward", wrap=True, **k("block", model.residual), disabled=not custom)
        c2.toggle("Freeze word vectors", wrap=True, **k("femb", model.freeze_embeddings), disabled=not custom)
        c3.toggle("Freeze classifier head", wrap=True, **k("fhead", model.freeze_head), disabled=not custom,
                  help="The seed post froze it to watch only Q, K and V learn.")
        c4.toggle("Class weights", wrap=True, **k("cw", train.class_weights), disabled=not custom,
                  help="Weight the loss by inverse class frequency (for imbalanced data).")
        c1, c2, c3, c4 = st.columns(4)
        c1.number_input("Word dropout", 0.0, 0.9, step=0.05, **k("wdrop", model.word_dropout), disabled=not custom,
                        help="Share of training words read as unknown, so that no single word carries a label.")
        c2.number_input("Label smoothing", 0.0, 0.45, step=0.05, **k("smooth", train.label_smoothing),
                        disabled=not custom)
        c3.selectbox("Learning-rate schedule", LR_SCHEDULES, **k("sched", train.lr_schedule, LR_SCHEDULES),
                     disabled=not custom,
                     help="linear / cosine: decay to 0 over the planned epochs, or over the time budget when it ends first")
        c4.number_input("Patience (epochs, 0 = none)", 0, 1000, **k("patience", train.patience or 0), disabled=not custom,
                        help="Stop when the validation loss has not improved for this many epochs.")
        c1, c2, c3, c4 = st.columns(4)
        c1.number_input("Embedding dropout", 0.0, 0.9, step=0.05, **k("edrop", model.embedding_dropout),
                        disabled=not custom, help="Dropout on the word vectors entering the model, while training.")
        c2.number_input("Weight decay", 0.0, 1.0, step=0.01, format="%.3g", **k("wd", train.weight_decay),
                        disabled=not custom)
        c3.selectbox("Class sampling", SAMPLINGS, **k("sampling", train.sampling, SAMPLINGS), disabled=not custom,
                     help="Rows per class in an epoch. shuffle: each row once; sqrt / balanced: rare classes shown "
                     "more often; auto: balanced when a class is rare (under half of an equal share), else shuffle.")
        c4.selectbox("Keep the epoch by", KEEP_BY, **k("keep", train.keep_by, KEEP_BY), disabled=not custom,
                     help="The validation figure that picks the kept epoch, and that patience waits on: the loss, "
                     "or macro-F1 (every class counts the same).")
        windows = [0, *range(3, MAX_LOCAL_CONV + 1, 2)]
        c1, c2, c3, _ = st.columns(4)
        c3.selectbox("Pooling compares", POOLING_KEYS, **k("keys", model.pooling_keys, POOLING_KEYS),
                     disabled=not custom, format_func=lambda w: {"input": "words", "output": "outputs"}[w],
                     help="With attention pooling: what the label's query compares to choose words. words: each word "
                     "as it enters the layers (by what it is: a map that picks words); outputs: the layers' output "
                     "(the layers have mixed the sentence into every word: the map is often even). Either way it "
                     "sums the words as the layers left them.")
        c2.checkbox("Read capitals", **k("casing", model.casing), disabled=not custom,
                    help="GloVe's word vectors are lower-case: 'NASA' and 'nasa' are one vector. With this on, a "
                    "word written Capitalised, in CAPITALS or mIxed also gets a learned vector for that way of "
                    "writing (lower case adds nothing): 'What is BPH ?' reads as an abbreviation.")
        c1.selectbox("Word window", windows, **k("window", model.local_conv, windows), disabled=not custom,
                     format_func=lambda w: "off" if w == 0 else f"{w} words",
                     help="Before attention, each word's vector is mixed with its neighbours' (a window of this "
                     "many words, like a bigram or trigram): the maps still have a row and a column per word, "
                     "but each word's vector also carries its neighbours.")


def _run_fields(choice: str, model: ModelConfig, train: TrainConfig, k: Callable[..., dict], default_probe: str,
                data_name: str) -> None:
    """Every preset's last row: the probe sentence, the time budget, the time-lapse's moments, the run's name."""
    c1, c2, c3, c4 = st.columns([1.8, 1, 1, 2.2])  # (the run name: "default-" and the CSV's name)
    c1.text_input("Probe sentence (its attention recorded as it trains)", **k("probe", default_probe),
                  help=f"Its attention is recorded before training and after every epoch — for a training of over "
                  f"{MAX_PROBE_RECORDS} epochs after every n-th, {MAX_PROBE_RECORDS} times in all, and after the last.")
    c2.number_input("Time budget (s, 0 = none)", 0, 3600, **k("budget", int(train.time_budget or 0)))
    size = ("~3.5 MB for each layer that trains, for a fine-tuned encoder (only the weights that train are kept)"
            if model.base is not None else "~0.65 MB each for the Default model")
    c3.number_input("Time-lapse moments", 0, MAX_SNAPSHOTS, **k("snaps", train.snapshots),
                    help="How many moments of training keep their weights (epoch 0 to the last, plus the best "
                    f"epoch), so that Inspect's time-lapse can replay any sentence. {size}; 0 = none (the probe "
                    "sentence's attention is still recorded as it trains).")
    suggested = f"{choice.split()[0].lower()}-{data_name.rsplit('.', 1)[0]}"
    c4.text_input("Run name", **k(f"name_{data_name}", suggested))  # one per dataset: its suggestion follows


def form_settings(data_name: str) -> tuple[str, ModelConfig, TrainConfig, str]:
    """(run name, model config, train config, probe sentence) as the form was submitted.

    Raises ``ConfigError`` (an ``InputError``) for an impossible combination, e.g. 3 heads for
    model dim 64, with a hint.
    """
    choice = st.session_state["train_preset"]
    model, train = preset(PRESET_LABELS[choice])
    p = _keys(choice)

    def v(name: str) -> object:
        return st.session_state[p + name]

    if choice == CUSTOM:
        block = v("block")
        model = replace(model, n_layers=int(v("layers")), n_heads=int(v("heads")), d_model=int(v("dmodel")),
                        positional=v("pos"), pooling=v("pool"), dropout=float(v("drop")), residual=block,
                        layer_norm=block, feed_forward=block, freeze_embeddings=v("femb"), freeze_head=v("fhead"),
                        word_dropout=float(v("wdrop")), embedding_dropout=float(v("edrop")),
                        local_conv=int(v("window")), casing=bool(v("casing")),
                        pooling_keys=v("keys") if v("pool") == "attention" else "output")
        train = replace(train, label_smoothing=float(v("smooth")), lr_schedule=v("sched"),
                        patience=int(v("patience")) or None, weight_decay=float(v("wd")), sampling=v("sampling"),
                        keep_by=v("keep"), class_weights=v("cw"))
    if model.base is not None:  # the fine-tuning preset: its own fields (_fine_tune_fields)
        model = replace(model, frozen_layers=model.n_layers - int(v("trained_layers")))
        train = replace(train, max_tokens=int(v("max_pieces")))
    else:
        train = replace(train, optimizer=v("opt"))
    probe = v("probe").strip()
    train = replace(train, epochs=int(v("epochs")), lr=float(v("lr")), batch_size=int(v("batch")), seed=int(v("seed")),
                    val_fraction=float(v("val")),
                    time_budget=float(v("budget")) or None, snapshots=int(v("snaps")),
                    probes=tuple(dict.fromkeys(x for x in (probe, *train.probes) if x)))
    return v(f"name_{data_name}").strip() or "run", model, train, probe
