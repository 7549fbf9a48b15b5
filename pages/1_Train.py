"""Train: pick or upload a CSV, check it, set hyperparameters, train live, keep the run."""

from __future__ import annotations

import streamlit as st

from attention_core.data import MAX_FILE_BYTES, detect_columns
from attention_core.errors import InputError
from attention_core.pretrained import base_title
from attention_core.training import TrainerSpec
from ui import forms, train_views, view_link
from ui.common import BUNDLED_DATA, EXAMPLES, embeddings, kept, runs_dir
from ui.forms import form_settings, hyperparameter_form
from ui.train_views import build_dataset, parse
from ui.training_page import CannotStart, TrainingJob, training_page

page = training_page(__file__, "📈", job_key="train_job")
st.title("Train a model")
link = view_link.ViewLink("Train")  # ?dataset=uci|small&preset=default|seed|custom&compare=a,b
link.add(*forms.view_params(list(BUNDLED_DATA)), train_views.compare_param(runs_dir()))
link.write()
train_views.interrupted(runs_dir(), page.url_path)  # trainings a server restart stopped: start them again
train_views.show_upload_refusals()  # a file over 25 MB: the browser's refusal as text


# -- 1. data --------------------------------------------------------------------------------------
st.header("1 · Data")
sources = [*BUNDLED_DATA, "Upload a CSV"]
source = st.radio("Dataset", sources, **kept("train_source", sources[0], sources))
if source == "Upload a CSV":
    upload = st.file_uploader("CSV with a text column and a label column (UTF-8 or Latin-1; comma, semicolon or tab)",
                              type=["csv", "tsv", "txt"], key="train_upload", max_upload_size=MAX_FILE_BYTES // 2**20)
    if upload is not None:  # an upload does not survive a page switch: keep the bytes ourselves
        st.session_state["train_upload_data"] = (upload.name, upload.getvalue())
    if "train_upload_data" not in st.session_state:
        st.info("Upload a CSV to continue, or pick a bundled dataset.")
        st.stop()
    name, data = st.session_state["train_upload_data"]
else:
    name, data = BUNDLED_DATA[source].name, BUNDLED_DATA[source].read_bytes()

preset_model, preset_train = forms.chosen_preset()
base = preset_model.base  # a pretrained encoder to fine-tune: it reads word pieces, not word vectors
vectors = train_views.word_vectors_choice(base and base_title(base))  # the file's path; None: the bundled GloVe

try:
    table, *_ = parse(data, name)
    text_guess, label_guess, text_why, label_why = detect_columns(table)
except InputError as err:
    st.error(f"**{name}** cannot be used: {err}")
    st.stop()
columns = list(table.columns)
c1, c2 = st.columns(2)
text_col = c1.selectbox("Text column", columns, **kept(f"train_text_{name}", text_guess, columns), help=text_why)
label_col = c2.selectbox("Label column", columns, **kept(f"train_label_{name}", label_guess, columns), help=label_why)
try:
    dataset = build_dataset(data, name, text_col, label_col, vectors, word_pieces=base is not None)
except InputError as err:
    st.error(f"{err}")
    st.stop()
train_views.data_report(dataset, table, max_tokens=preset_train.max_tokens,
                        piece_lengths=None if base is None else train_views.piece_lengths(dataset.texts, base))

# -- 2. hyperparameters and controls ------------------------------------------------------------------
st.header("2 · Train")
job: TrainingJob | None = page.job
running = job is not None and job.alive


def on_start() -> None:
    """The form's Start (a callback: the page is then drawn once, with the job running)."""
    current = page.own_job  # (a stale tab of the same workspace may start another, as the queue allows)
    if current is not None and current.alive:  # a second click on its way before the form was disabled
        return
    try:
        run_name, model_cfg, train_cfg, probe = form_settings(name)
        spec = TrainerSpec(model_cfg, train_cfg, dataset, embeddings(train_cfg.vocab_limit, vectors))
        _, st.session_state["train_cap_note"] = page.start([(run_name, spec)], runs_dir=runs_dir(),
                                                           label=f"Training “{run_name}”", dataset=name)
    except InputError as err:  # CannotStart is worded already; a setting the form refused is not
        st.session_state["train_start_error"] = f"{err}" if isinstance(err, CannotStart) else f"Cannot start: {err}"
        return
    st.session_state["train_probe_pick"] = probe


if running:  # the form below holds the next training's settings (after a reload: the defaults), not this one's
    st.caption(f"{train_views.settings_said(job)}. The form holds your next training's settings.")
hyperparameter_form(EXAMPLES[0], name, on_start=on_start, disabled=running)
if error := st.session_state.pop("train_start_error", None):
    st.error(error)
elif job is not None and (note := st.session_state.get("train_cap_note")):
    st.info(note)

if job is not None:
    waiting = job.state == "waiting"  # in the server's queue: a place in line and Cancel
    train_views.job_buttons(page, running=running, waiting=waiting)  # pause / resume, stop (cancel), reset
    every = train_views.refresh_seconds(running, waiting)
    page.live(lambda j: train_views.live_view(j, every, waiting=waiting), every=every)
    if job.done:
        train_views.finished(job)
        page.shown(job)  # a reload from now on starts afresh

# -- 4. runs --------------------------------------------------------------------------------------
st.header("Runs")
train_views.runs_manager(runs_dir())
