"""Drawing helpers for the Train page: data report, live progress, results, runs list."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from attention_core import ModelConfig, Run, TextDataset, load_dataset, load_run
from attention_core.data import read_table
from attention_core.errors import InputError
from attention_core.metrics import learning_verdict, run_verdict, same_labels, wilson_interval
from attention_core.run_folders import (
    MAX_ZIP_BYTES,
    delete_run,
    interrupted_run,
    journal_entries,
    list_runs,
    read_run_summary,
    remove_journal_entry,
    rename_run,
    run_from_zip,
    run_stamp,
    run_to_zip,
    safe_name,
    zip_unpacked_size,
)
from attention_core.training import KEPT_BY_WORDS, History, TrainConfig, metrics_from_probabilities, patience_stop
from ui import background, chart_downloads, figures, training_page, view_link
from ui.common import check_room, embeddings, kept, layers_trained, workspace_store
from ui.live_chart import live_plotly_chart
from ui.training_page import JobStatus, TrainingJob, TrainingPage, ordinal

HOME_URL_PATH = "home"  # the url_path app.py's router gives its Home page (tests/ui/test_navigation.py follows it)


# The browser refuses a file over the uploader's limit (max_upload_size) itself, and Streamlit says why only
# in a tooltip of the file's chip (its text is there, visually hidden): shown here as text under the chip.
UPLOAD_REFUSAL_CSS = """
[data-testid='stFileChip'][aria-invalid='true'] { flex-wrap: wrap; height: auto; max-width: none; }
[data-testid='stFileChip'][aria-invalid='true'] [role='alert'] {
  position: static; width: auto; height: auto; margin: 0.25rem 0 0; clip: auto; clip-path: none;
  overflow: visible; white-space: normal; flex-basis: 100%; color: #bd4043; font-size: 0.875rem; }
"""


def show_upload_refusals() -> None:
    """Show why the browser refused an upload (a file over the limit) as text, not only on hover."""
    st.html(f"<style>{UPLOAD_REFUSAL_CSS}</style>")


@st.cache_data(show_spinner="Reading the CSV…", max_entries=8)
def parse(data: bytes, name: str):
    return read_table(data, name=name)


@st.cache_data(show_spinner="Checking the data…", max_entries=8)
def build_dataset(data: bytes, name: str, text_col: str, label_col: str, vectors: str | None,
                  word_pieces: bool = False):
    """The CSV as a data set; with ``word_pieces`` (a pretrained encoder to fine-tune) read as the CLI's ``train``
    reads it then, without the word vectors: the encoder reads every word in pieces, so GloVe's unknown words do
    not apply."""
    if word_pieces:
        return load_dataset(data, name=name, text_col=text_col, label_col=label_col)
    emb = embeddings(None, vectors)
    return load_dataset(data, name=name, text_col=text_col, label_col=label_col, is_known=emb.__contains__)


@st.cache_data(show_spinner="Counting word pieces…", max_entries=8)
def piece_lengths(texts: tuple[str, ...], base: str) -> list[int]:
    """Each text's length in the word pieces of the checkpoint ``base`` ([CLS] and [SEP] included)."""
    from attention_core.pretrained import word_piece_lengths

    return word_piece_lengths(texts, base)


VECTORS = ["GloVe 6B 50d (bundled: 400,000 words)", "My own word2vec / GloVe file"]


def word_vectors_choice(word_pieces_of: str | None = None) -> str | None:
    """The word vectors to train with: None for the bundled GloVe, or the path of the learner's own
    file (read and described here; the page stops with what to do while there is none that works).
    ``word_pieces_of``: the pretrained encoder the chosen preset fine-tunes, which reads word pieces with its own
    vectors: the choice is then shown disabled, with why, and the bundled GloVe only checks the data."""
    choice = st.radio(
        "Word vectors", VECTORS, horizontal=True, **kept("train_vectors", VECTORS[0], VECTORS),
        disabled=word_pieces_of is not None,
        help="The words' starting vectors, and the vocabulary: a word the vectors do not know is an unknown word. Your "
             "own file must be on the computer that runs the app.")
    if word_pieces_of is not None:
        st.caption(f"Word vectors do not apply to the fine-tuning preset: {word_pieces_of} reads word pieces with "
                   "vectors of its own (the data check below counts its word pieces).")
        return None
    if choice != VECTORS[1]:
        return None
    vectors = st.text_input(
        "Path of the word-vector file", **kept("train_vectors_path", ""), placeholder="/path/to/glove.6B.100d.txt",
        help="word2vec text (a 'count dim' first line) or binary, or GloVe text (one 'word v1 v2 …' per line). Read "
             "once per server; runs trained with it remember the path, and need the file there to be opened again.")
    vectors = vectors.strip() or None
    if vectors is None:
        st.info("Type the path of your word-vector file, or use the bundled GloVe.")
        st.stop()
    try:
        table_of_vectors = embeddings(None, vectors)
    except InputError as err:
        st.error(f"These word vectors cannot be used: {err}")
        st.stop()
    st.caption(f"{table_of_vectors.source.describe()}: {table_of_vectors.size:,} words × {table_of_vectors.dim} "
               "numbers each.")
    return vectors


def data_report(dataset: TextDataset, preview: pd.DataFrame, max_tokens: int, *,
                piece_lengths: Sequence[int] | None = None) -> None:
    """The data check: rows kept and dropped, classes, unknown words, the class balance and the lengths against
    ``max_tokens``; ``piece_lengths``: the rows' lengths in a pretrained encoder's word pieces (fine-tuning), which
    the cut counts, instead of words."""
    r = dataset.report
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Rows kept", f"{r.rows_kept:,}", help=f"of {r.rows_read:,} read")
    c2.metric("Rows dropped", f"{sum(r.dropped.values()):,}",
              help=", ".join(f"{k}: {v}" for k, v in r.dropped.items()) or "none")
    c3.metric("Classes", len(r.class_counts))
    if piece_lengths is None:
        c4.metric("Unknown words", f"{r.unknown_rate:.1%}" if r.unknown_rate is not None else "–",
                  help="share of tokens the word vectors do not know")
    else:
        c4.metric("Unknown words", "–", help="the pretrained encoder reads words in pieces of its own vocabulary: a "
                  "word it has never seen whole is read in pieces, not lost")
    for reason, count in r.dropped.items():
        st.caption(f"Dropped {count:,} row(s): {reason}.")
    for warning in r.warnings:
        st.warning(warning, icon="⚠️")
    a, b = st.columns(2)
    a.plotly_chart(figures.class_balance(r.class_counts), key="train_balance",
                   config=chart_downloads.config("Class balance", model=r.source))
    unit = "tokens" if piece_lengths is None else "word pieces"
    b.plotly_chart(figures.length_histogram(r.token_lengths if piece_lengths is None else piece_lengths,
                                            limit=max_tokens, unit=unit), key="train_lengths",
                   config=chart_downloads.config("Sentence lengths", model=r.source, detail=unit))
    with st.expander(f"Preview ({r.source}: {r.encoding}, delimiter {r.delimiter!r})"):
        st.dataframe(preview.head(50), hide_index=True)


def progress(snap: JobStatus, history: History, name: str, key: str = "train") -> None:
    """The live progress line and curves of a job (redrawn 2.5 times a second), from its status and its
    history (read up to the lengths the status took); ``name``: the run's, in the chart's downloads.

    The curves' figure is kept in the session and only its data replaced
    (:class:`~ui.figures.LiveTrainingCurves`). The chart is a :func:`live_plotly_chart`,
    updated in place in the browser, also when the job ends (a zoom survives; the browser
    does not build the chart again while it draws the results).
    """
    eta = training_page.time_left(snap)
    step = snap.step
    in_epoch = f"{step.step_in_epoch}/{step.steps_per_epoch}" if step is not None else "0/0"
    label = (f"{snap.state} · epoch {snap.epoch}/{snap.epochs} · step {in_epoch} · "
             f"{snap.examples_per_second:,.0f} examples/s{eta}")
    st.progress(snap.progress, text=label)
    if snap.epochs_recorded:
        curves = st.session_state.setdefault(f"{key}_live_curves", figures.LiveTrainingCurves())
        chart = curves(history.epochs[: snap.epochs_recorded], history.step_losses, steps=snap.steps_recorded)
        live_plotly_chart(chart, key=f"{key}_live_curves_chart", config=chart_downloads.config("Training curves", model=name))


def probe_heatmap(history: History, model: ModelConfig, name: str, key: str = "train") -> None:
    """The probe sentence's attention after the latest recorded epoch (rebuilt when that changes): the
    model's last map, its last layer's or its pooling attention's (one row); ``name``: the run's."""
    probe = history.probes[-1] if history.probes else None
    if not (probe and probe.sentences):
        return
    s = probe.sentence(st.session_state.get(f"{key}_probe_pick")) or probe.sentences[0]
    signature = (probe.epoch, s.text, id(probe))
    cached = st.session_state.get(f"{key}_live_heatmap")
    if cached is None or cached[0] != signature:
        attn = np.asarray(s.attention)  # (L, H, T, T), or (L + 1, …) with the pooling attention's map last
        fig = figures.attention_heatmap(
            attn[-1].mean(0), s.tokens, pooling=model.pooling == "attention",
            title=f"“{s.text}” · {model.map_names()[-1]}, head average · after epoch {probe.epoch}")
        cached = st.session_state[f"{key}_live_heatmap"] = (signature, fig.to_json(), fig.layout.height)
    named = chart_downloads.config("Attention during training", model=name, sentence=s.text, layer=model.map_names()[-1],
                                   head="average of heads", detail=f"after epoch {probe.epoch}")
    live_plotly_chart(cached[1], height=cached[2], key=f"{key}_live_probe_chart", config=named)  # redrawn when the JSON changes


def job_buttons(page: TrainingPage, *, running: bool, waiting: bool = False) -> None:
    """Pause / Resume, Stop and Reset for the page's job (callbacks: they act before the page is drawn again);
    while it waits in the queue, Stop is Cancel and Pause is off."""
    def on_pause(pause: bool) -> None:  # what the button said when it was clicked, not a toggle: a second tab may
        j = page.job                      # have paused it meanwhile, and a click must never do the opposite of its label
        j.pause() if pause else j.resume()

    def on_reset() -> None:
        if (j := page.forget()) is not None:
            j.stop()

    b1, b2, b3 = st.columns(3)
    paused = page.job.paused
    b1.button("Resume" if paused else "Pause", icon=":material/play_arrow:" if paused else ":material/pause:",
              on_click=on_pause, args=(not paused,), disabled=not running or waiting, key="train_pause", use_container_width=True)
    b2.button("Cancel" if waiting else "Stop", icon=":material/close:" if waiting else ":material/stop:",
              on_click=lambda: page.job.stop(), disabled=not running, key="train_stop", use_container_width=True,
              help="Leave the line: it never starts, nothing is saved." if waiting else None)
    b3.button("Reset", icon=":material/restart_alt:", on_click=on_reset, key="train_reset", use_container_width=True,
              help="Forget this job on the page (a finished run stays saved on disk).")


def interrupted(folder: Path, page: str) -> None:
    """The trainings of ``page`` in the journal of ``folder`` with no job in this server (a restart
    stopped them): each "not finished — start again", with the run saved where it had begun
    training, and Dismiss (which removes the journal entry only)."""
    live = training_page.live_journal_ids()
    if live is None:  # the shared queue cannot say which trainings still go: none is called interrupted
        return
    for entry in journal_entries(folder):
        if entry.page != page or entry.id in live:
            continue
        saved = interrupted_run(folder, entry)
        if saved is not None:
            what = f"what it had learned is saved as run `{saved.name}`"
        elif entry.state == "running":
            what = "it had not finished its first epoch, so nothing was saved"
        else:
            what = "it was waiting in line, so nothing was trained"
        when = time.strftime("%d %b %H:%M", time.localtime(entry.submitted))
        dataset = entry.dataset.replace("`", "'")
        text, button = st.columns([6, 1], vertical_alignment="center")
        cause = ("The server, or the worker that trained it, stopped" if training_page.distributed.broker_url()
                 else "The server restarted")
        text.warning(f"Training “{entry.run_name}” (`{dataset}`, {when}): **not finished — start again**. "
                     f"{cause}: {what}.", icon=":material/replay:")
        button.button("Dismiss", key=f"train_dismiss_{entry.id}", on_click=_dismiss, args=(folder, entry.id),
                      use_container_width=True, help="Remove this note (a saved run stays in your runs).")
    if error := st.session_state.pop("train_dismiss_error", None):
        st.error(error)


def _dismiss(folder: Path, entry_id: str) -> None:
    try:
        remove_journal_entry(folder, entry_id)
    except OSError as err:
        st.session_state["train_dismiss_error"] = (f"Cannot dismiss it ({err.strerror or err}): check that the runs "
                                                   "folder is one you can write to.")


WAITING_REFRESH = 1.0  # seconds between redraws of a place in line (it changes slowly; many may wait)


def refresh_seconds(running: bool, waiting: bool) -> float | None:
    """Seconds between redraws of the live view: None once the job has ended; slower while it waits."""
    if not running:
        return None
    return max(WAITING_REFRESH, training_page.live_refresh_seconds()) if waiting else training_page.live_refresh_seconds()


SOON_SECONDS = 5.0  # a wait estimate this short is "starting soon": the training ahead is ending (saving its run)


def in_line(snap: JobStatus) -> str:
    """A waiting job's place, in words: "2nd in line, about 40 s", "1st in line, starting soon" (the
    wait is the queue's estimate, which cannot see a run being saved: a few seconds are not a promise)."""
    place = f"{ordinal(snap.place)} in line" if snap.place else "about to start"
    if snap.wait_seconds is None:
        return f"{place} — your turn comes when a training ends"
    if snap.wait_seconds <= SOON_SECONDS:
        return f"{place}, starting soon"
    wait = f"{snap.wait_seconds:.0f} s" if snap.wait_seconds < 120 else f"{snap.wait_seconds / 60:.0f} min"
    return f"{place}, about {wait}"


def settings_said(job: TrainingJob) -> str:
    """What the page's training runs with, from its own configs (not the form's, which after a reload, or once the
    learner edits it, holds the next training's settings): e.g. "“custom-ben” trains on ben.csv: the small model
    (2 layers × 4 heads, 64-d) · 5000 epochs · learning rate 0.001 · batch 32 · seed 0 · no time budget"."""
    m, t = job.model_config, job.train_config
    on = f" on {job.journal.dataset}" if job.journal is not None and job.journal.dataset else ""
    if m.base is not None:
        from attention_core.pretrained import base_title

        model = f"fine-tuning {base_title(m.base)} ({layers_trained(m)} train, {t.max_tokens} word pieces)"
    else:
        model = f"the small model ({m.n_layers} layer{'s' if m.n_layers != 1 else ''} × {m.n_heads} heads, {m.d_model}-d)"
    budget = f"time budget {t.time_budget:g} s" if t.time_budget else "no time budget"
    return (f"“{job.name}” trains{on}: {model} · {t.epochs} epoch{'s' if t.epochs != 1 else ''} · learning rate "
            f"{t.lr:g} · batch {t.batch_size} · seed {t.seed} · {budget}")


def live_view(job: TrainingJob, every: float | None, *, waiting: bool = False) -> None:
    """The job's live progress and probe map (``every``: seconds between redraws, None once it has ended);
    its place in line while it waits in the server's queue (``waiting``: as the page was drawn)."""
    snap = job.status()
    if snap.state == "waiting":
        if not waiting and every is not None:  # it went into a shared queue's line after the page was drawn: Cancel
            st.rerun(scope="app")
        no_worker = snap.message == training_page.NO_WORKER  # then no training ends to make its turn come
        where = f"{ordinal(snap.place)} in line" if no_worker and snap.place else in_line(snap)
        why = f"{snap.message[0].upper()}{snap.message[1:]}. " if snap.message else ""  # e.g. its worker stopped
        st.info(f"Waiting for a free slot: {where}. {why}It starts by itself; you may read other pages "
                "meanwhile.", icon=":material/hourglass_top:")
        return
    if waiting and every is not None:  # its turn came (or it was cancelled): draw the page's buttons again
        st.rerun(scope="app")
    name = snap.run_path.name if snap.run_path is not None else job.name  # (saved under a free name: "run-2")
    if job.restarts and not snap.done and snap.message:  # its worker died: why the curves began again at epoch 1
        st.info(f"{snap.message[0].upper()}{snap.message[1:]}.", icon=":material/restart_alt:")
    if snap.unheard_seconds is not None and not snap.done:  # not simply "running" while its worker may be gone
        st.warning(training_page.unheard_said(snap.unheard_seconds, job.restarts), icon=":material/cloud_off:")
    progress(snap, job.history, name)
    probe_heatmap(job.history, job.model_config, name)  # its chart is redrawn only when a new epoch's probe arrives
    if every is None:
        return
    if snap.done:  # the job just ended: redraw the page once, buttons enabled
        st.rerun(scope="app")
    if every > training_page.LIVE_REFRESH:
        st.caption(f"The live view is redrawn every {every:.1f} s while {training_page.active_jobs()} trainings share "
                   "this server (every 0.4 s for up to two).")
    if training_page.live_refresh_seconds() != every:  # trainings started or ended elsewhere: poll at the new pace
        st.rerun(scope="app")


def finished(job: TrainingJob) -> None:
    """How the job ended, and its run's results (its run opens in every page's model picker)."""
    snap, warned = job.status(), False
    if snap.state in ("diverged", "failed"):
        st.error(f"{snap.message}")
    elif snap.state == "cancelled":
        st.info(f"Training {snap.message}.")
        return
    else:
        said = ending(snap, job.train_config)
        verdict = run_verdict(job.run.history, job.run.label_names) if job.run is not None else None
        warned = verdict is not None and verdict.warn
        if warned:  # not a green "success" for a run that learned nothing
            st.warning(f"{said}\n\n{verdict.message}", icon=":material/warning:")
        else:
            st.success(said)
    background.open_new_run(job)
    if job.model_config.base is not None and job.run_path is not None:
        from attention_core.pretrained import base_title

        cfg, base = job.model_config, base_title(job.model_config.base)
        trained = layers_trained(cfg, its="its ")
        st.caption(f"Fine-tuned from the pretrained **{base}**: {trained} and a new classifier head trained. The run "
                   "keeps only the weights that "
                   f"trained and names its base, so it opens where {base} is installed (its zip holds no copy of it).")
    if job.run is not None and job.run.history.epochs:
        st.header("3 · Results")
        results(job.run, job.run_path, job.validation_probs, warned=warned)


def kept_model(history: History, train_config: TrainConfig) -> str:
    """Which epoch's model a run keeps, in words: "epoch 3 of 10", "epoch 230 of 237 (300 planned)",
    "epoch 8 (stopped by patience 4 after 12 of 40 planned epochs)"."""
    trained, planned = len(history.epochs), train_config.epochs
    if stop := patience_stop(history.status, trained, train_config):
        return f"epoch {history.kept_epoch} ({stop})"
    return f"epoch {history.kept_epoch} of {trained}" + (f" ({planned} planned)" if trained < planned else "")


def accuracy_note(correct: int, n: int) -> str:
    """How far a validation accuracy can be trusted: its 95 % interval, and for few rows, what one row weighs."""
    low, high = wilson_interval(correct, n)
    note = f"95% interval for this accuracy: {low:.0%}–{high:.0%} over {n:,} validation row{'s' * (n != 1)} (Wilson)."
    if n < 100:
        note += (f" Few rows: one sentence more or less right moves it by {100 / n:.1f} points, so a difference of a "
                 "few points between two runs may be chance.")
    return note


def results(run: Run, run_path: Path | None, probs: np.ndarray | None = None, *, warned: bool = False) -> None:
    """Metrics (the majority class's share beside the accuracy), confusion, per-class scores and
    misclassified rows of a run's validation share, all of the model the run keeps (which epoch that
    is, is said), and a warning if it learned nothing beyond the majority class.

    ``probs``: the run's predictions for those rows, if made already (a job makes them in its
    own process); otherwise they are made here. ``warned``: that warning is on the page already
    (:func:`finished`'s).
    """
    texts, labels = run.validation
    kept = kept_model(run.history, run.train_config)
    if texts:
        if probs is None or len(probs) != len(texts):
            probs = run.predict_proba(texts)  # one batched pass
        m = metrics_from_probabilities(probs, labels, run.label_names)
        verdict = learning_verdict(m.confusion, m.labels)
        c1, c2, c3, c4 = st.columns(4)
        c1.metric("Validation accuracy", f"{m.accuracy:.1%}", help=f"Of the kept model: {kept}.")
        if verdict is not None:
            c2.metric("Majority class", f"{verdict.majority_share:.1%}",
                      help=f"Always answering “{verdict.majority_label}” scores this, without reading a word.")
        c3.metric("Macro F1", f"{m.macro_f1:.3f}")
        c4.metric("Validation rows", m.n)
        if verdict is not None and verdict.warn and not warned:
            st.warning(verdict.message, icon=":material/warning:")
        st.caption(f"**Kept model: {kept}**, the one with {KEPT_BY_WORDS[run.train_config.keep_by]}; the figures below are its "
                   "own. " + (accuracy_note(int(np.trace(np.asarray(m.confusion))), m.n) if m.n else ""))
        a, b = st.columns(2)
        a.plotly_chart(figures.confusion_heatmap(m.confusion, m.labels), key="train_confusion",
                       config=chart_downloads.config("Confusion matrix", model=run.name, detail=f"kept model: {kept}"))
        b.dataframe(pd.DataFrame({"class": m.labels, "precision": m.precision, "recall": m.recall, "f1": m.f1,
                                  "support": m.support}).round(3), hide_index=True)
        _misclassified(run, texts, labels, probs)
    else:
        share = run.train_config.val_fraction
        why = ("This run had no validation share" if not share else  # set, but too few rows (TextDataset.split)
               f"This run has no validation rows, though its validation share was {share:.0%}: too few rows to hold "
               "any out (a class gives a validation row only from two rows on, as one always stays for training)")
        st.info(f"{why}, so there are no validation metrics. Kept model: {kept}, the last one (without validation rows "
                "there is no best epoch to go back to).")
    if run_path is not None and run_path.is_dir():  # (not deleted since from the runs list)
        # Zipped when clicked, not on every redraw of the page (its cost: benchmarks/README.md).
        st.download_button("⬇ Download run (.zip: model, config, history)", lambda: run_to_zip(run_path),
                           file_name=f"{run_path.name}.zip", mime="application/zip", key="train_download")


def ending(snap: JobStatus, train_config: TrainConfig) -> str:
    """How a job that was not an error ended, in a sentence: how many epochs, why (patience, the time
    budget of ``train_config``), and where its run is."""
    trained, planned = snap.epochs_recorded, snap.epochs
    epochs = f"{trained} of {planned} epochs" if trained < planned else f"all {planned} epoch{'s' * (planned != 1)}"
    step, when = snap.step, f"after {epochs}"
    if snap.state == "time budget" and step is not None and 0 < step.step_in_epoch < step.steps_per_epoch:
        # cut short within an epoch (a fine-tuning's first epoch can outlast the budget): said, not "all 1 epoch"
        when = f"at step {step.step_in_epoch} of {step.steps_per_epoch} of epoch {step.epoch} of {planned}"
    how = {"stopped": f"Training stopped after {epochs}.",
           "time budget": f"Training reached its time budget of {train_config.time_budget or 0:g} s {when}."}
    sentence = how.get(snap.state, f"Training finished: {epochs}.")
    if patience_stop(snap.state, trained, train_config) and snap.message:  # say why
        sentence += f" {snap.message[0].upper()}{snap.message[1:]}."
    if snap.run_path is None:
        return sentence.replace(when, "before its first epoch ended") + " There is nothing to save."
    gone = "" if snap.run_path.is_dir() else " (deleted since)"
    return f"{sentence} Saved as run `{snap.run_path.name}`{gone}."


def _misclassified(run: Run, texts, labels, probs: np.ndarray) -> None:
    rows = []
    for text, y, p in zip(texts, labels, probs, strict=True):
        if np.isnan(p).any():  # no known word: nothing was predicted
            continue
        if int(p.argmax()) != y:
            rows.append({"text": text, "true": run.label_names[y], "predicted": run.label_names[int(p.argmax())],
                         "confidence": round(float(p.max()), 6)})
    st.markdown(f"**Misclassified validation sentences** ({len(rows)}) — click one to inspect it")
    if not rows:
        return
    df = pd.DataFrame(rows).sort_values("confidence", ascending=False)
    event = st.dataframe(df, hide_index=True, on_select="rerun", selection_mode="single-row", key="train_miss")
    picked = event.selection.rows if event else []
    if picked:
        text = df.iloc[picked[0]]["text"]
        p = run.predict(text)
        last = run.model_config.map_names()[-1]  # the last layer, or the pooling attention
        st.plotly_chart(figures.attention_heatmap(np.asarray(p.attention)[-1].mean(0), p.tokens,
                                                  title=f"predicted {p.label} · {last}, head average",
                                                  pooling=run.model_config.pooling == "attention"),
                        key="train_miss_heatmap",
                        config=chart_downloads.config("Attention", model=run.name, sentence=text, layer=last,
                                                      head="average of heads", detail=f"predicted {p.label}"))


def _run_row(path: Path) -> dict:
    """A run's line in the runs list, read again only when its files change."""
    try:
        return _read_run_row(run_stamp(path))
    except OSError:
        return {"run": path.name, "status": "unreadable"}


@st.cache_data(max_entries=512, show_spinner=False)
def _read_run_row(stamp: tuple) -> dict:
    """``stamp``: :func:`attention_core.run_folders.run_stamp`, so an edited run is read again. A history
    holds every step's loss and the probe sentences' attention: each run is parsed once per change
    of its files, not on every redraw of the page (figures: benchmarks/README.md). The accuracy is the kept model's (the one the
    run's results show), not the last epoch's."""
    path = Path(stamp[0])
    try:
        r = read_run_summary(path)
    except InputError:
        return {"run": path.name, "status": "unreadable"}
    trained, planned, acc, verdict = r.epochs_trained, r.epochs_planned, r.kept_val_accuracy, r.verdict
    return {"run": r.name, "created": r.created, "status": r.status,
            "epochs": f"{trained} of {planned}" if trained < planned else f"{trained}",
            "kept model": f"epoch {r.kept_epoch}" if r.kept_epoch is not None else "–",
            "val accuracy": f"{acc:.1%}" if acc is not None else "no validation",  # the kept model's (column_config)
            # "–": no validation rows, or a run saved before its validation confusion was recorded
            "majority": f"{verdict.majority_share:.1%}" if verdict else "–",
            "learned?": verdict.word if verdict else "–",  # (in full in the run's results; a cell fits a projector)
            "layers×heads": f"{r.n_layers}×{r.n_heads}"}


# The runs list's columns whose header would be wider than their values (at 1024 px in projector mode the table
# must fit its box: tests/browser/test_projector.py): what they mean, on hover.
RUNS_COLUMNS = {
    "val accuracy": st.column_config.TextColumn(help="The validation accuracy of the model the run kept (the epoch "
                                                "in “kept model”), as its results show it."),
    "majority": st.column_config.TextColumn(help="The share of the validation rows with the most common label: what "
                                            "always answering that label scores."),
    "learned?": st.column_config.TextColumn(help="Whether the run learned more than always answering the majority "
                                            "label (its accuracy's 95 % interval above the majority share); "
                                            "“one class”: it predicts one label for almost every row."),
}


def home_page() -> st.Page:
    """The router's Home page (``app.py``), for ``st.switch_page``: Home is a function page there,
    which Streamlit finds by its ``url_path`` ("home"), not by a file name."""
    return st.Page(lambda: None, title="Home", url_path=HOME_URL_PATH, default=True)


def compare_param(runs_dir: Path) -> view_link.Param:
    """``compare=a,b``: the runs list's comparison of two of the visitor's runs (Check yourself's "which
    run learned faster" links to it). A name that is not a run of the visitor's is a notice."""

    def parse(text: str) -> list[str]:
        names = [n.strip() for n in text.split(",") if n.strip()]
        mine = {path.name for path in list_runs(runs_dir)}
        if not 1 <= len(names) <= 2:
            raise view_link.BadParam("it names no run, or more than two", "give one or two run names, e.g. compare=a,b")
        if any(n not in mine for n in names):
            raise view_link.BadParam("it names a run that is not in your runs", "pick two runs in the list below")
        return names

    return view_link.Param("compare", lambda: list(st.session_state.get("train_compare", [])),
                           lambda names: st.session_state.__setitem__("train_compare", list(names)),
                           parse, ",".join, [])


def runs_manager(runs_dir: Path) -> None:
    """The saved runs: a table, and upload, open, rename, delete, compare.

    Every change to a run folder goes through ``attention_core.run_folders`` (which refuses names such
    as ``../x``, a name taken, a zip with links or ``..`` entries, and removes only a run's own
    files); what it refuses is shown as an error, and nothing is changed then.
    """
    if workspace_store().shared:  # the folder's name is the workspace's key: nothing to show a learner
        st.caption("Your runs are saved in your private workspace on this server: your link opens them again.")
    else:
        st.caption(f"Runs are saved in `{runs_dir}` (set `ATTENTION_PLAYGROUND_RUNS` to change it).")
    # A run's own limit, not the CSVs' 25 MB: a fine-tuned encoder's run zips to ~27 MB (.streamlit/config.toml's
    # server.maxUploadSize, which the server enforces for every upload, is this one)
    upload = st.file_uploader("Upload a run (.zip from 'Download run')", type=["zip"], key="train_run_upload",
                              max_upload_size=MAX_ZIP_BYTES // 2**20)
    outcome = st.session_state.get("train_run_uploaded")  # (file_id, kind, text): handled once, whatever the outcome
    if upload is not None and (outcome is None or outcome[0] != upload.file_id):
        wanted = safe_name(Path(upload.name).stem)
        try:
            check_room(zip_unpacked_size(upload.getvalue()))  # its size once unpacked, not the zip's
            target = run_from_zip(upload.getvalue(), runs_dir, wanted)
        except InputError as err:
            outcome = (upload.file_id, "error", f"Cannot upload {upload.name}: {err}")
        else:
            taken = f" (a run named {wanted!r} exists already)" if target.name != wanted else ""
            outcome = (upload.file_id, "success", f"Uploaded run {target.name!r}{taken}.")
            st.session_state["train_manage_pick"] = target.name  # (drawn below: it may still be set)
        st.session_state["train_run_uploaded"] = outcome
    if upload is not None and outcome[0] == upload.file_id:  # said for as long as the file is in the box
        (st.error if outcome[1] == "error" else st.success)(outcome[2])
    if message := st.session_state.pop("train_runs_message", None):
        kind, text = message
        (st.error if kind == "error" else st.success)(text)
    paths = list_runs(runs_dir)
    if not paths:
        st.info("No saved runs yet: train one above.")
        return
    st.dataframe(pd.DataFrame([_run_row(p) for p in paths]), hide_index=True, column_config=RUNS_COLUMNS)
    names = [p.name for p in paths]
    compared = st.session_state.get("train_compare", [])
    if any(n not in names for n in compared):  # a run renamed or deleted since is no longer a choice
        st.session_state["train_compare"] = [n for n in compared if n in names]
    c1, c2 = st.columns(2)
    with c1:
        name = st.selectbox("Run", names, key="train_manage_pick")
        a, b = st.columns(2)
        if a.button("Open on Home", key="train_open", use_container_width=True):
            st.session_state["active_run"] = name
            st.switch_page(home_page())
        if b.button("Delete", key="train_delete", use_container_width=True):
            st.session_state["train_confirm_delete"] = name  # asked below, before anything is deleted
        r1, r2 = st.columns([3, 1], vertical_alignment="bottom")
        r1.text_input("Rename to", key="train_rename_to", placeholder="new name: letters, digits, - _ .")
        r2.button("Rename", key="train_rename", on_click=_rename, args=(runs_dir, name), use_container_width=True)
        if st.session_state.get("train_confirm_delete") == name:
            st.warning(f"Delete run {name!r} for good?")
            st.button("Yes, delete it", key="train_delete_yes", on_click=_delete, args=(runs_dir, name))
    with c2:
        both = st.multiselect("Compare two runs", names, max_selections=2, key="train_compare")
        if len(both) == 2:
            try:
                runs = {n: load_run(runs_dir / n) for n in both}
            except InputError as err:
                st.error(f"{err}")
            else:
                if note := not_on_one_scale({n: r.label_names for n, r in runs.items()}):
                    st.warning(note, icon=":material/balance:")
                st.plotly_chart(figures.compare_curves({n: r.history.epochs for n, r in runs.items()}),
                                key="train_compare_chart",
                                config=chart_downloads.config("Training curves", model=" vs ".join(runs)))


def not_on_one_scale(labels: dict[str, Sequence[str]]) -> str | None:
    """What a learner must know before comparing the curves of runs with different label sets (None when they
    share one): a loss starts at ln k for k labels, and an accuracy is read against its own majority share."""
    if same_labels(*labels.values()):
        return None
    said = "; ".join(f"“{n}”: {len(names)} labels, a guess's loss ln {len(names)} ≈ {math.log(len(names)):.2f}"
                     for n, names in labels.items())
    return ("These runs were trained on different labels, so their curves are not on one scale: a lower loss or a "
            f"higher accuracy does not mean one learned more ({said}). Compare each run's accuracy with its own "
            "majority share, in the table above.")


def _rename(runs_dir: Path, old: str) -> None:
    """Rename's callback (run before the page, so the picker can follow the new name)."""
    new = st.session_state.get("train_rename_to", "").strip()
    try:
        target = rename_run(runs_dir, old, new)
    except InputError as err:
        st.session_state["train_runs_message"] = ("error", f"Cannot rename {old!r}: {err}")
        return
    st.session_state["train_manage_pick"] = target.name
    st.session_state["train_rename_to"] = ""
    entry = background.followed().get("train_job")  # the run just trained: its results and download follow it
    job = entry.job if entry is not None else None
    if job is not None and job.done and job.run_path and job.run_path.resolve() == (runs_dir / old).resolve():
        job.run_renamed(target)
    if st.session_state.get("active_run") == old:  # the model picker of every page follows it
        st.session_state["active_run"] = target.name
    st.session_state["train_runs_message"] = ("success", f"Renamed {old!r} to {target.name!r}.")


def _delete(runs_dir: Path, name: str) -> None:
    st.session_state.pop("train_confirm_delete", None)
    try:
        delete_run(runs_dir, name)
    except InputError as err:
        st.session_state["train_runs_message"] = ("error", f"Cannot delete {name!r}: {err}")
        return
    st.session_state.pop("train_manage_pick", None)
    st.session_state["train_runs_message"] = ("success", f"Deleted run {name!r}.")
