"""The seed's experiment: the post's model trained on its 39 reviews, then one change at a time, side by side."""

from __future__ import annotations

import inspect
import tempfile
from pathlib import Path

import numpy as np
import streamlit as st

from attention_core import Run, load_dataset, preset
from attention_core.errors import InputError
from attention_core.post_sgd import PostModelSGDStep
from attention_core.presets import SEED
from attention_core.runs import save_new_run
from attention_core.training import TrainerSpec
from runner import jobs as training_jobs
from runner.jobs import JobSequence, TrainingJob
from ui import background, figures, live_chart
from ui.common import ROOT, embeddings, page_setup, runs_dir, still_live_views
from ui.seed_findings import summarise, what_to_notice

page_setup("Seed experiment", "🧪")
still_live_views()
with st.sidebar:  # plotly.js for the live loss curves, loaded while the learner reads the page
    live_chart.preload()
training_jobs.warm_up()
st.title("The seed's experiment")
st.caption(
    "The seed post trains its model on 39 product reviews (small.csv) for 1000 epochs of per-example SGD, keeping the "
    "classifier head frozen so that only the queries, keys and values learn, then looks at the attention of five "
    "sentences. Train that, and two variants — the head trained too, and this app's default preset — and compare."
)
SENTENCES = SEED.train.probes  # the post's five evaluate_model sentences
VARIANTS = {
    "frozen": "Seed · head frozen (the post)",
    "head": "Seed · head trained",
    "default": "Default preset",
}
SHORT = {"frozen": "Seed, head frozen", "head": "Seed, head trained", "default": "Default"}
# Seconds per SGD step of a seed variant on an idle 2-core machine (benchmarks/run.py --only seed_vs_numpy),
# and per variant for starting its process and saving its run: for the estimate shown before training.
STEP_SECONDS, VARIANT_SECONDS = 63e-6, 0.5
ss = st.session_state


@st.cache_resource(show_spinner="Reading small.csv…")
def small_csv(vocab_limit: int | None):
    emb = embeddings(vocab_limit)
    return load_dataset((ROOT / "data" / "small.csv").read_bytes(), name="small.csv", is_known=emb.__contains__)


def plan(seed_epochs: int, default_epochs: int) -> list[tuple]:
    """(variant, model config, train config) in training order; every variant trains on all 39 rows."""
    return [
        ("frozen", *preset("seed", epochs=seed_epochs)),
        ("head", *preset("seed", freeze_head=False, epochs=seed_epochs)),
        ("default", *preset("default", epochs=default_epochs, val_fraction=0.0, probes=SENTENCES)),
    ]


def on_train() -> None:
    on_stop()
    ss.pop("seedexp_error", None)
    ss["seedexp_done"] = 0
    items = []
    for key, model_cfg, train_cfg in plan(int(ss["seedexp_epochs"]), int(ss["seedexp_default_epochs"])):
        spec = TrainerSpec(model_cfg, train_cfg, small_csv(train_cfg.vocab_limit), embeddings(train_cfg.vocab_limit))
        try:
            spec.check()
        except InputError as err:
            ss["seedexp_error"] = f"{VARIANTS[key]} cannot start: {err}"
            return
        items.append((key, spec))
    ss.setdefault("seedexp_dir", tempfile.mkdtemp(prefix="seedexp-"))  # a temporary folder, not the user's runs
    # One after the other, each started by the end of the one before, in the server: the learner
    # can read another page meanwhile (ui.background keeps the sequence alive from there).
    seq = ss["seedexp_seq"] = JobSequence(items, Path(ss["seedexp_dir"]))
    seq.start()
    background.track("seedexp", seq, label="Seed experiment", page="Seed_experiment")


def on_stop() -> None:
    if (seq := ss.get("seedexp_seq")) is not None:
        seq.stop()


seq: JobSequence | None = ss.get("seedexp_seq")
jobs: dict[str, TrainingJob] = seq.jobs if seq is not None else {}
running = seq is not None and seq.alive

# -- controls -------------------------------------------------------------------------------------
c1, c2, c3, c4 = st.columns([1, 1, 1, 1], vertical_alignment="bottom")
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
with st.expander("The three variants"):
    st.markdown(
        "- **Seed · head frozen (the post)** — `preset(\"seed\")`: GloVe 50d (top 10,000 words) + position index, one "
        "attention head, no residual, norm or feed-forward, mean pooling, a linear head kept at its random start, "
        "per-example SGD with learning rate 0.001.\n"
        "- **Seed · head trained** — `preset(\"seed\", freeze_head=False)`: the same, but the head W, b learns too.\n"
        "- **Default preset** — `preset(\"default\")`: 2 layers × 4 heads, d = 64, residual connections, layer norm, "
        "feed-forward layers, sinusoidal positions, fine-tuned GloVe, AdamW in batches of 64. Here it trains on all "
        "39 rows like the others (it normally holds 20 % out for validation).\n\n"
        "Runs are kept for this session only; save the ones you want to your runs folder below."
    )


@st.fragment(run_every=0.5 if running else None)
def live() -> None:
    seq = ss.get("seedexp_seq")
    if seq is None:
        return
    seq.heartbeat()
    jobs, queued = seq.jobs, seq.queued
    for col, (key, title) in zip(st.columns(3, gap="medium"), VARIANTS.items(), strict=True):
        with col:
            st.markdown(f"**{title}**")
            job = jobs.get(key)
            if job is None:
                st.caption("waiting for its turn" if key in queued else "not trained yet")
                continue
            snap = job.snapshot()
            st.progress(snap.progress, text=f"{snap.state} · epoch {snap.epoch}/{snap.epochs}")
            if snap.epoch_records:  # rebuilt only when an epoch was added (this redraws twice a second)
                cached = ss.get(f"seedexp_live_{key}")
                if cached is None or cached[0] != (id(job), len(snap.epoch_records)):
                    fig = figures.loss_curve(snap.epoch_records)
                    cached = ss[f"seedexp_live_{key}"] = ((id(job), len(snap.epoch_records)), fig.to_json(), fig.layout.height)
                live_chart.live_plotly_chart(cached[1], height=cached[2], key=f"seedexp_live_curve_{key}")  # in place
    done = sum(j.done for j in jobs.values())
    if running and done != ss.get("seedexp_done", 0):  # a variant finished: redraw the page to show its maps
        ss["seedexp_done"] = done
        st.rerun(scope="app")


live()
results = {key: job.run for key, job in jobs.items() if job.done and job.run is not None and job.run.history.epochs}
if not results:
    seed_steps = 2 * int(ss["seedexp_epochs"]) * len(small_csv(SEED.train.vocab_limit))
    estimate = seed_steps * STEP_SECONDS + 3 * VARIANT_SECONDS
    st.info("The variants train one after the other, in the background: each one's attention maps appear here when it "
            "finishes." if running else "Press **Train all three**: the variants train one after the other, in the "
            f"background ({seed_steps:,} SGD steps for the two seed variants, then the default preset: about "
            f"{estimate:.0f} s on an idle computer, longer on a busy one).")
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
for col, (key, title) in zip(st.columns(3, gap="medium"), VARIANTS.items(), strict=True):
    run = results.get(key)
    if run is None:
        continue
    first, last, h = run.history.epochs[0], run.history.epochs[-1], run.history
    col.metric(title, f"{last.train_loss:.3f}", f"{last.train_loss - first.train_loss:+.3f} since epoch 1",
               delta_color="inverse", help="mean cross-entropy over the 39 reviews in the last epoch")
    col.caption(f"the trained model labels {found[key].right} of {found[key].rows} reviews correctly "
                f"({found[key].accuracy:.0%}) · {len(h.step_losses):,} steps in {h.seconds:.1f} s · {h.status}")
    if col.button("Save to my runs", icon=":material/save:", key=f"seedexp_save_{key}"):
        name = f"seed-experiment-{key}"
        try:  # a free name: seed-experiment-head, seed-experiment-head-2, …
            path = save_new_run(run, runs_dir(), name)
        except InputError as err:
            col.error(f"Could not save it: {err}")
        except OSError as err:
            where = f" {err.filename}" if err.filename else ""
            col.error(f"Could not save it ({err.strerror or err}): check that the runs folder{where} is a folder you "
                      "can write to.")
        else:
            col.success(f"Saved as `{path.name}`: open it on the Home or Inspect page.")

st.header("Attention on the post's five sentences")
st.caption("Rows: the word attending (query); columns: the word attended to (key); each row sums to 1. The default "
           "preset has 2 layers × 4 heads: its maps are the last layer's average over heads. Its tokenizer keeps "
           "words the seed drops, so its rows can differ.")
for i, sentence in enumerate(SENTENCES):
    st.subheader(f"“{sentence}”")
    for col, (key, title) in zip(st.columns(3, gap="medium"), VARIANTS.items(), strict=True):
        run = results.get(key)
        if run is None:
            col.caption(f"{title}: not trained yet")
            continue
        pred = run.predict(sentence)
        attn = np.asarray(pred.attention)  # (L, H, T, T)
        col.markdown(f"{SHORT[key]} → **{pred.label}** ({pred.probabilities[pred.label]:.0%})")
        col.plotly_chart(figures.compact_attention_heatmap(attn[-1].mean(0), pred.tokens), key=f"seedexp_map_{i}_{key}")

trained = " · ".join(f"{SHORT[key]}: {len(run.history.epochs)} epochs" for key, run in results.items())
notes = what_to_notice(found, {key: VARIANTS[key] for key in found}, true_labels)
st.markdown(f"**What to notice** (computed from the runs above; {trained})  \n" + "\n".join(notes)
            + "\n- With 39 reviews, none of this reaches far beyond these sentences.")

# -- time-lapse -----------------------------------------------------------------------------------
st.header("Time-lapse")
t1, t2 = st.columns(2)
variant = t1.selectbox("Variant", list(results), format_func=VARIANTS.get, key="seedexp_tl_variant")
sentence = t2.selectbox("Sentence", SENTENCES, key="seedexp_tl_sentence")
records = [(p["epoch"], s) for p in results[variant].history.probes for s in p["sentences"] if s["text"] == sentence]
if records:
    run = results[variant]
    epochs = [e for e, _ in records]
    gaps = sorted(set(np.diff(epochs).tolist()))
    every = "after every epoch" if gaps == [1] else f"every {gaps[0]} epochs" if len(gaps) == 1 else "at these epochs"
    st.markdown(f"**{VARIANTS[variant]}** · last layer, average of heads · press ▶ to replay the training, or drag the "
                "slider")
    probs = [dict(zip(run.label_names, r.get("probabilities") or [], strict=False)) for _, r in records]
    st.plotly_chart(figures.attention_time_lapse(epochs, [np.asarray(r["attention"])[-1].mean(0) for _, r in records],
                                                 [r["tokens"] for _, r in records], probs, kept=sorted(run.snapshots),
                                                 model_epoch=run.history.kept_epoch), key="seedexp_time_lapse")
    st.caption(f"The attention of each probe sentence was recorded as the model trained, {every} (epoch 0 = before "
               "training). ▲ on the epoch axis above the slider: the run kept its weights there; ★ the weights of its "
               "model (the last epoch).")
else:
    st.caption("This run recorded no attention for that sentence.")

with st.expander("Show the code that computed these numbers"):
    st.markdown("The seed variants train with `PostModelSGDStep.step` (the hand-written backward pass of the Backpropagation "
                "page, one review at a time); every variant's maps come from `Run.predict`.")
    for fn in (PostModelSGDStep.step, Run.predict, preset):
        st.code(inspect.getsource(fn), language="python")
    st.caption(f"Runs of this session live in a temporary folder ({ss.get('seedexp_dir')}), not in your runs folder.")
