"""Train: pick or upload a CSV, check it, set hyperparameters, train live, keep the run."""

from __future__ import annotations

import streamlit as st

from attention_core.data import detect_columns, load_dataset, read_table
from attention_core.errors import InputError
from attention_core.presets import DEFAULT
from attention_core.training import TrainerSpec
from runner import jobs
from runner.jobs import TrainingJob
from ui import background, live_chart, train_views
from ui.common import BUNDLED_DATA, EXAMPLES, embeddings, kept, page_setup, runs_dir, still_live_views
from ui.forms import form_settings, hyperparameter_form

page_setup("Train", "📈")
still_live_views()
jobs.warm_up()  # the process that trains jobs: started once per server, ready before Start is clicked
with st.sidebar:  # plotly.js for the live charts, loaded while the learner reads the page
    live_chart.preload()
st.title("Train a model")


@st.cache_data(show_spinner="Reading the CSV…", max_entries=8)
def parse(data: bytes, name: str):
    return read_table(data, name=name)


@st.cache_data(show_spinner="Checking the data…", max_entries=8)
def build_dataset(data: bytes, name: str, text_col: str, label_col: str, vectors: str | None):
    emb = embeddings(None, vectors)
    return load_dataset(data, name=name, text_col=text_col, label_col=label_col, is_known=emb.__contains__)


# -- 1. data --------------------------------------------------------------------------------------
st.header("1 · Data")
sources = [*BUNDLED_DATA, "Upload a CSV"]
source = st.radio("Dataset", sources, **kept("train_source", sources[0], sources))
if source == "Upload a CSV":
    upload = st.file_uploader("CSV with a text column and a label column (UTF-8 or Latin-1; comma, semicolon or tab)",
                              type=["csv", "tsv", "txt"], key="train_upload")
    if upload is not None:  # an upload does not survive a page switch: keep the bytes ourselves
        st.session_state["train_upload_data"] = (upload.name, upload.getvalue())
    if "train_upload_data" not in st.session_state:
        st.info("Upload a CSV to continue, or pick a bundled dataset.")
        st.stop()
    name, data = st.session_state["train_upload_data"]
else:
    name, data = BUNDLED_DATA[source].name, BUNDLED_DATA[source].read_bytes()

VECTORS = ["GloVe 6B 50d (bundled: 400,000 words)", "My own word2vec / GloVe file"]
vectors_choice = st.radio(
    "Word vectors", VECTORS, horizontal=True, **kept("train_vectors", VECTORS[0], VECTORS),
    help="The words' starting vectors, and the vocabulary: a word the vectors do not know is an unknown word. Your "
         "own file must be on the computer that runs the app.")
vectors: str | None = None  # the file's path; None: the bundled GloVe
if vectors_choice == VECTORS[1]:
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
    dataset = build_dataset(data, name, text_col, label_col, vectors)
except InputError as err:
    st.error(f"{err}")
    st.stop()
train_views.data_report(dataset, table, max_tokens=DEFAULT.train.max_tokens)

# -- 2. hyperparameters and controls ------------------------------------------------------------------
st.header("2 · Train")
job: TrainingJob | None = st.session_state.get("train_job")
running = job is not None and job.alive


def on_start() -> None:
    """The form's Start (a callback: the page is then drawn once, with the job running)."""
    current = st.session_state.get("train_job")
    if current is not None and current.alive:  # a second click on its way before the form was disabled
        return
    try:  # a bad combination (e.g. 3 heads for model dim 64) is a ConfigError with a hint
        run_name, model_cfg, train_cfg, probe = form_settings(name)
        spec = TrainerSpec(model_cfg, train_cfg, dataset, embeddings(train_cfg.vocab_limit, vectors))
        spec.check()
    except InputError as err:
        st.session_state["train_start_error"] = f"{err}"
        return
    job = TrainingJob(spec, runs_dir(), run_name)  # the training process builds the trainer
    job.start()
    st.session_state["train_job"] = job
    background.track("train", job, label=f"Training “{run_name}”", page="Train")  # kept alive from the other pages
    st.session_state["train_probe_pick"] = probe


hyperparameter_form(EXAMPLES[0], name, on_start=on_start, disabled=running)
if error := st.session_state.pop("train_start_error", None):
    st.error(f"Cannot start: {error}")


def on_pause() -> None:
    j = st.session_state["train_job"]
    j.resume() if j.paused else j.pause()


def on_stop() -> None:
    st.session_state["train_job"].stop()


def on_reset() -> None:
    j = st.session_state.pop("train_job", None)
    if j is not None:
        j.stop()
    background.forget("train")


if job is not None:
    b1, b2, b3 = st.columns(3)
    paused = job.paused
    b1.button("Resume" if paused else "Pause", icon=":material/play_arrow:" if paused else ":material/pause:",
              on_click=on_pause, disabled=not running, key="train_pause", use_container_width=True)
    b2.button("Stop", icon=":material/stop:", on_click=on_stop, disabled=not running, key="train_stop",
              use_container_width=True)
    b3.button("Reset", icon=":material/restart_alt:", on_click=on_reset, key="train_reset", use_container_width=True,
              help="Forget this job on the page (a finished run stays saved on disk).")

    every = jobs.live_refresh_seconds() if running else None  # 0.4 s; slower when many learners train at once

    @st.fragment(run_every=every)
    def live() -> None:
        j = st.session_state.get("train_job")
        if j is None:
            return
        j.heartbeat()
        snap = j.snapshot()
        train_views.progress(snap)
        train_views.probe_heatmap(snap)  # its chart is redrawn only when a new epoch's probe arrives
        if not running:
            return
        if snap.done:  # the job just ended: redraw the page once, buttons enabled
            st.rerun(scope="app")
        if every > jobs.LIVE_REFRESH:
            st.caption(f"The live view is redrawn every {every:.1f} s while {jobs.active_jobs()} trainings share "
                       "this server (every 0.4 s for up to two).")
        if jobs.live_refresh_seconds() != every:  # trainings started or ended elsewhere: poll at the new pace
            st.rerun(scope="app")

    live()
    if job.done:
        snap = job.snapshot()
        if snap.state in ("diverged", "failed"):
            st.error(f"{snap.message}")
        else:
            st.success(train_views.ending(snap, job.train_config.time_budget))
        background.open_new_run(job)
        if job.run is not None and job.run.history.epochs:
            st.header("3 · Results")
            train_views.results(job.run, job.run_path, job.validation_probs)

# -- 4. runs --------------------------------------------------------------------------------------
st.header("Runs")
train_views.runs_manager(runs_dir())
