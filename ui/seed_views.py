"""Drawing helpers for the Seed experiment page: its three variants, their live curves, results and maps."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import streamlit as st

from attention_core import Run, TextDataset, load_dataset, preset
from attention_core.errors import InputError
from attention_core.post_sgd import PostModelSGDStep
from attention_core.presets import SEED
from attention_core.run_folders import run_stamp
from attention_core.runs import Prediction, save_new_run
from ui import chart_downloads, figures, live_chart
from ui.common import ROOT, check_room, embeddings, runs_dir
from ui.seed_findings import VariantSummary
from ui.training_page import JobSequence, TrainingJob, ordinal, time_left

SENTENCES = SEED.train.probes  # the post's five evaluate_model sentences
VARIANTS = {
    "frozen": "Seed · head frozen (the post)",
    "head": "Seed · head trained",
    "default": "Default preset",
}
SHORT = {"frozen": "Seed, head frozen", "head": "Seed, head trained", "default": "Default"}


@dataclass(frozen=True)
class Pace:
    """How long the three variants took when last trained to their end on this server, in parts that scale
    with the epochs asked for: the estimate shown before training."""

    step_seconds: float  # per SGD step of a seed variant, training alone
    epoch_seconds: float  # per epoch of the default preset, training alone
    other_seconds: float  # the rest: each variant's process, data and vectors, saving its run, the hand-overs

    def estimate(self, seed_steps: int, default_epochs: int) -> float:
        return seed_steps * self.step_seconds + default_epochs * self.epoch_seconds + self.other_seconds


@st.cache_resource
def _paces() -> dict[str, Pace]:
    """The server's measurement ("last": a :class:`Pace`), shared by its sessions."""
    return {}


def measure(seq: JobSequence) -> None:
    """Keep how long ``seq`` took, when its three variants all trained to their end, for the next estimate."""
    jobs = seq.jobs
    if set(jobs) != set(VARIANTS) or any(j.state != "finished" or j.ended_at is None for j in jobs.values()):
        return
    seed, default = [jobs["frozen"], jobs["head"]], jobs["default"]
    seed_seconds, steps = sum(j.history.seconds for j in seed), sum(len(j.history.step_losses) for j in seed)
    wall = max(j.ended_at for j in jobs.values()) - min(j.started_at for j in jobs.values())
    _paces()["last"] = Pace(seed_seconds / max(steps, 1), default.history.seconds / max(len(default.history.epochs), 1),
                            max(0.0, wall - seed_seconds - default.history.seconds))


@st.cache_resource(show_spinner="Reading small.csv…")
def small_csv(vocab_limit: int | None) -> TextDataset:
    emb = embeddings(vocab_limit)
    return load_dataset((ROOT / "data" / "small.csv").read_bytes(), name="small.csv", is_known=emb.__contains__)


def plan(seed_epochs: int, default_epochs: int) -> list[tuple]:
    """(variant, model config, train config) in training order; every variant trains on all 39 rows."""
    return [
        ("frozen", *preset("seed", epochs=seed_epochs)),
        ("head", *preset("seed", freeze_head=False, epochs=seed_epochs)),
        ("default", *preset("default", epochs=default_epochs, val_fraction=0.0, probes=SENTENCES)),
    ]


def variants_help() -> None:
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


def live_view(seq: JobSequence, running: bool) -> None:
    """Each variant's progress and loss curve (redrawn twice a second while they train)."""
    ss = st.session_state
    jobs, queued = seq.jobs, seq.queued
    if seq.waiting:  # its next variant waits for a free slot in the server's queue
        st.caption(f"Waiting for a free slot: {seq.status().state}; it starts by itself.")
    for col, (key, title) in zip(st.columns(3, gap="medium"), VARIANTS.items(), strict=True):
        with col:
            st.markdown(f"**{title}**")
            job = jobs.get(key)
            if job is None:
                st.caption("waiting for its turn" if key in queued else "not trained yet")
                continue
            snap = job.status()
            if snap.state == "waiting":  # on a shared queue: after the one before it, or in its line
                st.caption("waiting for its turn" + (f": {ordinal(snap.place)} in line" if snap.place else ""))
                continue
            left = time_left(snap)
            st.progress(snap.progress, text=f"{snap.state} · epoch {snap.epoch}/{snap.epochs}{left}")
            if n := snap.epochs_recorded:  # rebuilt only when an epoch was added (this redraws twice a second)
                cached = ss.get(f"seedexp_live_{key}")
                if cached is None or cached[0] != (id(job), n):
                    fig = figures.loss_curve(job.history.epochs[:n])
                    cached = ss[f"seedexp_live_{key}"] = ((id(job), n), fig.to_json(), fig.layout.height)
                live_chart.live_plotly_chart(cached[1], height=cached[2], key=f"seedexp_live_curve_{key}",  # in place
                                             config=chart_downloads.config("Training loss", model=title))
    done = sum(j.done for j in jobs.values())
    if running and done != ss.get("seedexp_done", 0):  # a variant finished: redraw the page to show its maps
        ss["seedexp_done"] = done
        st.rerun(scope="app")


def before_training(running: bool) -> None:
    """What the page says while no variant has finished: how much work training them is."""
    if running:
        st.info("The variants train one after the other, in the background: each one's attention maps appear here when "
                "it finishes.")
        return
    seed_steps = 2 * int(st.session_state["seedexp_epochs"]) * len(small_csv(SEED.train.vocab_limit))
    work = f"{seed_steps:,} SGD steps for the two seed variants, then the default preset"
    if (pace := _paces().get("last")) is not None:  # measured here: scaled to the epochs asked for now
        took = (f"about {pace.estimate(seed_steps, int(st.session_state['seedexp_default_epochs'])):.0f} s, scaled "
                "from the last training of all three on this server")
    else:  # nothing measured here yet: a figure from another machine would be a promise
        took = "each one shows its progress and the time it has left as it trains"
    st.info(f"Press **Train all three**: the variants train one after the other, in the background ({work}: {took}).")


def final_losses(results: dict[str, Run], found: dict[str, VariantSummary]) -> None:
    """Each trained variant's last loss, accuracy on its 39 reviews, and a button to keep it."""
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
            _save(col, run, f"seed-experiment-{key}")


def _save(col, run: Run, name: str) -> None:
    try:  # a free name: seed-experiment-head, seed-experiment-head-2, …
        check_room()
        path = save_new_run(run, runs_dir(), name)
    except InputError as err:
        col.error(f"Could not save it: {err}")
    except OSError as err:
        where = f" {err.filename}" if err.filename else ""
        col.error(f"Could not save it ({err.strerror or err}): check that the runs folder{where} is a folder you "
                  "can write to.")
    else:
        col.success(f"Saved as `{path.name}`: open it on the Home or Inspect page.")


def predictions(key: str, job: TrainingJob) -> list[Prediction]:
    """The variant's predictions for the post's sentences, made once per run (keyed by its files' stamp)."""
    cache = st.session_state.setdefault("seedexp_predictions", {})  # variant → (stamp, predictions)
    try:
        stamp = run_stamp(job.run_path)
    except OSError:  # its temporary folder was removed: predict again rather than fail
        stamp = None
    if stamp is None or cache.get(key, (None,))[0] != stamp:
        cache[key] = (stamp, [job.run.predict(sentence) for sentence in SENTENCES])
    return cache[key][1]


def attention_maps(finished: dict[str, TrainingJob]) -> None:
    """Each sentence's last-layer attention (average of heads), one column per variant."""
    preds = {key: predictions(key, job) for key, job in finished.items()}
    for i, sentence in enumerate(SENTENCES):
        st.subheader(f"“{sentence}”")
        for col, (key, title) in zip(st.columns(3, gap="medium"), VARIANTS.items(), strict=True):
            if key not in preds:
                col.caption(f"{title}: not trained yet")
                continue
            pred = preds[key][i]
            attn = np.asarray(pred.attention)  # (L, H, T, T)
            col.markdown(f"{SHORT[key]} → **{pred.label}** ({pred.probabilities[pred.label]:.0%})")
            col.plotly_chart(figures.compact_attention_heatmap(attn[-1].mean(0), pred.tokens), key=f"seedexp_map_{i}_{key}",
                             config=chart_downloads.config("Attention", model=title, sentence=sentence,
                                                           layer=finished[key].model_config.map_names()[-1],
                                                           head="average of heads"))


def time_lapse(results: dict[str, Run]) -> None:
    """A variant's probe record for one sentence, replayed epoch by epoch."""
    t1, t2 = st.columns(2)
    variant = t1.selectbox("Variant", list(results), format_func=VARIANTS.get, key="seedexp_tl_variant")
    sentence = t2.selectbox("Sentence", SENTENCES, key="seedexp_tl_sentence")
    run = results[variant]
    records = [(p.epoch, s) for p in run.history.probes if (s := p.sentence(sentence)) is not None]
    if not records:
        st.caption("This run recorded no attention for that sentence.")
        return
    epochs = [e for e, _ in records]
    gaps = sorted(set(np.diff(epochs).tolist()))
    every = "after every epoch" if gaps == [1] else f"every {gaps[0]} epochs" if len(gaps) == 1 else "at these epochs"
    st.markdown(f"**{VARIANTS[variant]}** · last layer, average of heads · press ▶ to replay the training, or drag the "
                "slider")
    probs = [dict(zip(run.label_names, r.probabilities, strict=False)) for _, r in records]
    st.plotly_chart(figures.attention_time_lapse(epochs, [np.asarray(r.attention)[-1].mean(0) for _, r in records],
                                                 [r.tokens for _, r in records], probs, kept=sorted(run.snapshots),
                                                 model_epoch=run.history.kept_epoch), key="seedexp_time_lapse",
                    config=chart_downloads.config("Attention over training", model=VARIANTS[variant], sentence=sentence,
                                                  layer=run.model_config.map_names()[-1], head="average of heads"))
    st.caption(f"The attention of each probe sentence was recorded as the model trained, {every} (epoch 0 = before "
               "training). ▲ on the epoch axis above the slider: the run kept its weights there; ★ the weights of its "
               "model (the last epoch).")


def the_code(folder: str | Path | None) -> None:
    with st.expander("Show the code that computed these numbers"):
        st.markdown("The seed variants train with `PostModelSGDStep.step` (the hand-written backward pass of the "
                    "Backpropagation page, one review at a time); every variant's maps come from `Run.predict`.")
        for fn in (PostModelSGDStep.step, Run.predict, preset):
            st.code(inspect.getsource(fn), language="python")
        st.caption(f"Runs of this session live in a temporary folder ({folder}), not in your runs folder.")
