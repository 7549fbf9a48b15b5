"""The seed's experiment: the post's model trained on its 39 reviews, then one change at a time, side by side."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from attention_core.errors import InputError
from attention_core.presets import SEED
from attention_core.training import TrainerSpec
from ui import seed_views, view_link
from ui.common import embeddings
from ui.seed_findings import summarise, what_to_notice
from ui.seed_views import SENTENCES, SHORT, VARIANTS, small_csv
from ui.training_page import JobSequence, TrainingJob, scratch_folder, training_page

page = training_page(__file__, "🧪", job_key="seedexp_seq")
st.title("The seed's experiment")
view_link.ViewLink("Seed experiment").write()  # no parameters: its link is the page (and its sidebar's Copy link)
st.caption(
    "The seed post trains its model on 39 product reviews (small.csv) for 1000 epochs of per-example SGD, keeping the "
    "classifier head frozen so that only the queries, keys and values learn, then looks at the attention of five "
    "sentences. Train that, and two variants — the head trained too, and this app's default preset — and compare."
)
ss = st.session_state


def on_train() -> None:
    on_stop()
    ss.pop("seedexp_error", None)
    ss["seedexp_done"] = 0
    items = [(key, TrainerSpec(model_cfg, train_cfg, small_csv(train_cfg.vocab_limit), embeddings(train_cfg.vocab_limit)))
             for key, model_cfg, train_cfg in seed_views.plan(int(ss["seedexp_epochs"]), int(ss["seedexp_default_epochs"]))]
    ss.setdefault("seedexp_dir", scratch_folder("seedexp-"))  # a temporary folder, not the user's runs
    # One after the other, in the server: the learner can read another page meanwhile. A shared server's
    # caps lower a time budget quietly (each run says where it stopped).
    try:
        page.start(items, runs_dir=Path(ss["seedexp_dir"]), label="Seed experiment", keep=False, titles=VARIANTS)
    except InputError as err:
        ss["seedexp_error"] = f"{err}"


def on_stop() -> None:
    if (seq := page.job) is not None:
        seq.stop()


seq: JobSequence | None = page.job
jobs: dict[str, TrainingJob] = seq.jobs if seq is not None else {}
running = seq is not None and seq.alive

# -- controls -------------------------------------------------------------------------------------
c1, c2, c3, c4 = st.columns([1, 1, 1.3, 0.7], vertical_alignment="bottom")  # the Train button's label whole at 1024 px
c1.number_input("Epochs, seed variants", 1, 5000, 1000, step=100, key="seedexp_epochs", disabled=running,
                help="The post trains 1000 epochs: one SGD step per review, 39,000 steps.")
c2.number_input("Epochs, default preset", 1, 500, 10, key="seedexp_default_epochs", disabled=running,
                help="The default preset's own 10 epochs; with batches of 64, one step per epoch on 39 rows.")
c3.button("Train all three", icon=":material/play_arrow:", type="primary", on_click=on_train, disabled=running,
          key="seedexp_train", use_container_width=True)
c4.button("Stop", icon=":material/stop:", on_click=on_stop, disabled=not running, key="seedexp_stop",
          use_container_width=True)
if error := ss.get("seedexp_error") or (seq.error if seq is not None else None):
    st.error(error)
seed_views.variants_help()

page.live(lambda seq: seed_views.live_view(seq, running), every=0.5 if running else None)
if seq is not None and seq.done:
    page.shown(seq)  # its results (or why it ended) are drawn below: a reload from now on starts afresh
    seed_views.measure(seq)  # how long it took here: the next estimate
finished = {key: job for key, job in jobs.items() if job.done and job.run is not None and job.run.history.epochs}
results = {key: job.run for key, job in finished.items()}
if not results:
    seed_views.before_training(running)
    st.stop()
small = small_csv(SEED.train.vocab_limit)
true_labels = [small.label_names[y] for y in small.labels]
summaries = ss.setdefault("seedexp_summaries", {})  # per trained run: computed once
for key, run in results.items():
    if summaries.get(key, (None,))[0] is not run:
        summaries[key] = (run, summarise(run, small.texts, true_labels, SENTENCES))
found = {key: summaries[key][1] for key in results}

# -- results --------------------------------------------------------------------------------------
st.header("Final training loss")
seed_views.final_losses(results, found)

st.header("Attention on the post's five sentences")
st.caption("Rows: the word attending (query); columns: the word attended to (key); each row sums to 1. The default "
           "preset has 2 layers × 4 heads: its maps are the last layer's average over heads. Its tokenizer keeps "
           "words the seed drops, so its rows can differ.")
seed_views.attention_maps(finished)

trained = " · ".join(f"{SHORT[key]}: {len(run.history.epochs)} epochs" for key, run in results.items())
notes = what_to_notice(found, {key: VARIANTS[key] for key in found}, true_labels)
st.markdown(f"**What to notice** (computed from the runs above; {trained})  \n" + "\n".join(notes)
            + "\n- With 39 reviews, none of this reaches far beyond these sentences.")

# -- time-lapse -----------------------------------------------------------------------------------
st.header("Time-lapse")
seed_views.time_lapse(results)
seed_views.the_code(seq.runs_dir)  # (results come from a sequence)
