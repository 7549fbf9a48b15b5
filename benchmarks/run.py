"""Attention Playground benchmarks: eight figures measured side by side in one process.

Run from the repository root::

    python benchmarks/run.py                 # everything (a few minutes on 2 cores)
    python benchmarks/run.py --quick         # a smoke test with few epochs (writes results-quick.json)
    python benchmarks/run.py --only predict_latency

What is measured, and why:

1. ``train_throughput`` — training examples per second of the ``default`` preset (2 layers ×
   4 heads, batches of 64) on ``data/uci_sentiment_sentences.csv`` with 2 torch threads:
   History.examples_per_second (training steps only) and each epoch's rate. The app trains
   live, so this decides how long a learner waits. Goal: ≥ 5,000 examples/s on 2 cores.
2. ``seed_vs_numpy`` — the ``seed`` preset (the Julia post: 1000 epochs of per-example SGD
   on ``data/small.csv``, 1 thread; build + run, everything included) against
   :func:`benchmarks.seed_numpy.train_seed_numpy`, a line-by-line NumPy port of the post, and
   :func:`benchmarks.seed_numpy_vectorized.train_seed_numpy_vectorized`, the same port with
   its Python loops vectorised, on the same rows and GloVe vectors: five alternating rounds,
   medians. Shows that the engine is faster than the plain code it replaces, and not only
   by Python loops. Goal: ≥ 2× faster than each.
3. ``predict_latency`` — ``Run.predict`` (probabilities and every attention map) of a saved
   and re-loaded ``default`` run on a 32-token sentence: median and p90 of 200 calls after 20
   warm-up calls. The app predicts as the user types. Goal: median < 5 ms.
4. ``accuracy_vs_tfidf`` — validation accuracy of the ``default`` preset (60 s time budget,
   best weights by validation loss) against TF-IDF (word 1–2-grams) + logistic regression on
   the same 80/20 split, plus the spread over seeds 0, 1, 2. Attention must earn its keep.
   Goal: beat the baseline within 60 s of CPU training.
5. ``vectors_file_cache`` — a user's own word-vector file (the bundled GloVe written out as
   400,000 lines of text): its first read (gensim's parse, kept in the cache) against a later
   read (the parsed copy, memory-mapped), as every training process and server start reads it.
   Goal: a later read ≥ 5× faster.
6. ``cli_threads`` — the command line's training throughput (``default`` preset, UCI data)
   with its default thread count (:func:`attention_core.threads.auto_threads`), ``--threads 1``
   and ``--threads 2``: quiet, beside a busy-loop process, and beside a second training with the
   same setting. Two OpenMP threads collapse beside anything busy; the default must not.
   Goals: quiet ≥ 90 % of the faster fixed count; beside either neighbour ≥ 80 % of 1 thread.
7. ``quality`` — :mod:`benchmarks.quality` on the test splits: the ``default`` preset trained as the
   CLI's ``train`` does (60 s budget) against TF-IDF + LogisticRegression(C=4), accuracy, macro-F1
   and seconds per set: UCI always, CR, Subj and TREC with ``--tuning-dir DIR`` (their files stay
   outside the repository). Goal: beat the baseline on every set, accuracy and macro-F1.
8. ``faithfulness`` — the faithfulness lab (:mod:`attention_core.faithfulness`) on the bundled
   run: one 32-token sentence's whole lab (every method, curves, ERASER, permutation test),
   each method alone, ``Run.predict`` with heads knocked out, and the run report over the
   run's 600 validation sentences. Goals: lab ≤ 1 s, knock-out ≤ 300 ms, report ≤ 60 s.

Every section also records how much CPU other processes used while it ran (from
``/proc/stat``): figures taken while another process competes for the 2 cores are not
comparable, and the output says so. Results go to ``benchmarks/results.json`` (``--only``
updates just that section in the file) and, as one JSON line, to the end of stdout.
Nothing here reads outside the repository (data comes from ``data/``) except the folder given as
``--tuning-dir``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse
import contextlib
import cProfile
import json
import os
import platform
import pstats
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
import sklearn
import torch
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from threadpoolctl import threadpool_limits

from attention_core import (
    Embeddings,
    EmbeddingSource,
    Run,
    TextDataset,
    Trainer,
    classification_metrics,
    evaluate_model,
    load_dataset,
    load_embeddings,
    load_run,
    preset,
    save_run,
)
from attention_core.metrics import Metrics
from attention_core.post_sgd import post_sgd_step_applies
from attention_core.threads import OtherProcessesCpu, ThreadTuner, auto_threads
from attention_core.training import StepEvent
from benchmarks import quality
from benchmarks.seed_numpy import train_seed_numpy
from benchmarks.seed_numpy_vectorized import train_seed_numpy_vectorized

ROOT = Path(__file__).resolve().parents[1]
UCI_CSV = ROOT / "data" / "uci_sentiment_sentences.csv"
SMALL_CSV = ROOT / "data" / "small.csv"
RESULTS = ROOT / "benchmarks" / "results.json"
QUICK_RESULTS = ROOT / "benchmarks" / "results-quick.json"

THROUGHPUT_GOAL = 5_000.0  # training examples per second, 2 cores
SPEEDUP_GOAL = 2.0  # seed preset vs each NumPy port of the post
LATENCY_GOAL_MS = 5.0  # median Run.predict on 32 tokens
TIME_BUDGET_S = 60.0  # CPU training seconds allowed to beat TF-IDF
DISTURBED_CORES = 0.1  # other processes using more than this many cores on average → figures suspect
TUNING_DIR: Path | None = None  # --tuning-dir: the quality section's CR, Subj and TREC files
TORCH_THREADS = torch.get_num_threads()  # torch's own count (one per core) before any section changes it


# -- results --------------------------------------------------------------------------------------------


@dataclass
class Goal:
    """A target; ``ratio`` ≥ 1 means met (measured / target, or target / measured for "lower is better")."""

    text: str
    measured: float
    target: float
    lower_is_better: bool = False
    extra_ok: bool = True  # a second condition that must also hold (e.g. within the time budget)

    @property
    def ratio(self) -> float:
        if self.lower_is_better:
            return self.target / self.measured if self.measured > 0 else float("inf")
        return self.measured / self.target if self.target else float("inf")

    @property
    def met(self) -> bool:
        return self.ratio >= 1.0 and self.extra_ok

    def to_dict(self) -> dict[str, Any]:
        return {"goal": self.text, "measured": _round(self.measured), "target": self.target,
                "ratio": _round(self.ratio), "met": self.met}


@dataclass
class Section:
    """One benchmark's figures (name → value), their units, goals and notes."""

    name: str
    title: str
    figures: dict[str, Any] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    goals: list[Goal] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)
    own_neighbours: bool = False  # the section starts other processes itself and judges its quiet part

    def add(self, key: str, value: Any, unit: str = "") -> Any:
        self.figures[key] = _round(value)
        if unit:
            self.units[key] = unit
        return value

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "figures": self.figures, "units": self.units,
                "goals": [g.to_dict() for g in self.goals], "notes": self.notes, "environment": self.environment}


def _round(value: Any) -> Any:
    if isinstance(value, float):
        return float(f"{value:.6g}")
    if isinstance(value, list | tuple):
        return [_round(v) for v in value]
    return value


# -- measuring helpers ------------------------------------------------------------------------------------


class CpuSampler:
    """CPU used by *other* processes (in cores, from Linux ``/proc/stat``) between calls of :meth:`mark`.

    Pass ``mark`` as a Trainer ``on_epoch`` callback to get one figure per epoch.
    """

    def __init__(self) -> None:
        self.cores: list[float | None] = []
        self._others = OtherProcessesCpu()

    def mark(self, *_: object) -> float | None:
        self.cores.append(self._others())
        return self.cores[-1]


class CpuMonitor:
    """Wall seconds, load average and other processes' CPU (cores) over a ``with`` block."""

    def __enter__(self) -> CpuMonitor:
        self.start, self.load_before, self.sampler = time.perf_counter(), os.getloadavg()[0], CpuSampler()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.start
        self.other_cores = self.sampler.mark()
        self.load_after = os.getloadavg()[0]


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def call_times_ms(fn: Callable[[], Any], warmup: int, calls: int) -> np.ndarray:
    """Milliseconds per call of ``fn`` over ``calls`` calls, after ``warmup`` untimed calls."""
    for _ in range(warmup):
        fn()
    out = np.empty(calls)
    for i in range(calls):
        start = time.perf_counter_ns()
        fn()
        out[i] = (time.perf_counter_ns() - start) / 1e6
    return out


# -- shared inputs ----------------------------------------------------------------------------------------


def embeddings_for(vocab_limit: int | None) -> Embeddings:
    return load_embeddings(EmbeddingSource(limit=vocab_limit))


def read_csv(path: Path, embeddings: Embeddings) -> TextDataset:
    return load_dataset(path, is_known=embeddings.__contains__)


def train_default(dataset: TextDataset, embeddings: Embeddings, on_epoch: Callable[..., Any] | None = None,
                  **overrides: Any) -> tuple[Trainer, Run, float]:
    """Build and run a ``default``-preset Trainer; returns it, its result and run()'s wall seconds."""
    model_cfg, train_cfg = preset("default", **overrides)
    trainer = Trainer(model_cfg, train_cfg, dataset, embeddings)
    seconds, result = timed(lambda: trainer.run(on_epoch=on_epoch))
    return trainer, result, seconds


def same_rows(a: TextDataset, b: TextDataset) -> bool:
    return a.texts == b.texts and a.labels == b.labels and a.label_names == b.label_names


# -- 1. training throughput -------------------------------------------------------------------------------


def bench_train_throughput(quick: bool) -> Section:
    s = Section("train_throughput", "default preset, UCI 3,000 sentences (val 20%), 2 torch threads")
    torch.set_num_threads(2)
    embeddings = embeddings_for(None)
    dataset = read_csv(UCI_CSV, embeddings)
    overrides = {"epochs": 2} if quick else {}
    sampler = CpuSampler()
    trainer, result, wall = train_default(dataset, embeddings, on_epoch=sampler.mark, num_threads=2, **overrides)
    h = result.history
    per_epoch = [e.examples_per_second for e in h.epochs]
    quiet = [eps for eps, other in zip(per_epoch, sampler.cores, strict=True) if other is not None
             and other < DISTURBED_CORES]
    s.add("train_rows", len(trainer.train_set))
    s.add("epochs", len(h.epochs))
    s.add("examples_seen", h.examples_seen)
    overall = s.add("examples_per_second_overall", h.examples_per_second, "ex/s")
    median = s.add("examples_per_second_median_epoch", statistics.median(per_epoch), "ex/s")
    s.add("examples_per_second_per_epoch", per_epoch, "ex/s")
    s.add("other_processes_cores_per_epoch", sampler.cores, "cores")
    s.add("quiet_epochs", len(quiet))
    s.add("examples_per_second_median_quiet_epoch", statistics.median(quiet) if quiet else None, "ex/s")
    s.add("train_seconds", h.seconds, "s")
    s.add("run_seconds", wall, "s")
    s.add("examples_per_second_wall", h.examples_seen / wall, "ex/s")
    _, one, _ = train_default(dataset, embeddings, num_threads=1, **overrides)  # same run on one thread
    torch.set_num_threads(2)
    s.add("examples_per_second_overall_1_thread", one.history.examples_per_second, "ex/s")
    s.goals.append(Goal("median epoch ≥ 5,000 ex/s on 2 cores", median, THROUGHPUT_GOAL))
    s.goals.append(Goal("overall ≥ 5,000 ex/s on 2 cores", overall, THROUGHPUT_GOAL))
    s.notes.append("train_seconds / examples_per_second_* count training steps only (History); run_seconds adds "
                   "the per-epoch validation pass, probe attention snapshots and weight snapshots")
    s.notes.append("examples_per_second_overall_1_thread: the same training with torch.set_num_threads(1), for "
                   "comparison (informative; the goal is for 2 threads)")
    s.notes.append(f"quiet epochs: those during which other processes used < {DISTURBED_CORES} cores; with 2 "
                   "threads on 2 cores one busy neighbour slows an epoch by up to 20×")
    return s


# -- 2. seed preset vs the NumPy port of the post ---------------------------------------------------------


def seed_rows(path: Path) -> list[tuple[str, str]]:
    """(label, sentence) rows as the post reads them (``CSV.read``; columns sentiments, cleaned_review)."""
    table = pd.read_csv(path, keep_default_na=False)
    return list(zip(table["sentiments"], table["cleaned_review"], strict=True))


def glove_float64(embeddings: Embeddings) -> dict[str, np.ndarray]:
    """word → float64 vector for the table's first ``size`` words (the post's ``embtable``, 10,000 words).

    GloVe is stored as float32; the post's ``Q * x`` promotes to Float64, so float64 copies of the
    float32 values compute the same numbers.
    """
    keys = embeddings.kv.index_to_key[: embeddings.size]
    table = np.asarray(embeddings.kv.vectors[: embeddings.size], dtype=np.float64)
    return {w: table[i] for i, w in enumerate(keys)}


def time_seed_preset(epochs: int, dataset: TextDataset, embeddings: Embeddings) -> dict[str, Any]:
    model_cfg, train_cfg = preset("seed", epochs=epochs, num_threads=1)
    with CpuMonitor() as cpu:
        cpu_start = time.process_time()
        build, trainer = timed(lambda: Trainer(model_cfg, train_cfg, dataset, embeddings))
        run, result = timed(trainer.run)
        cpu_seconds = time.process_time() - cpu_start
    h = result.history
    return {"build": build, "run": run, "total": build + run, "cpu": cpu_seconds, "train": h.seconds,
            "steps": h.examples_seen,
            "other": cpu.other_cores, "load": cpu.load_after, "loss": h.epochs[-1].train_loss, "trainer": trainer,
            "fast_path": post_sgd_step_applies(trainer.model_config, train_cfg, trainer.device)}


def time_numpy_seed(train: Callable[..., list[float]], rows: list[tuple[str, str]], vectors: dict[str, np.ndarray],
                    epochs: int) -> dict[str, Any]:
    with threadpool_limits(limits=1, user_api="blas"), CpuMonitor() as cpu:  # one thread, like the preset here
        cpu_start = time.process_time()
        seconds, losses = timed(lambda: train(rows, vectors, epochs=epochs))
        cpu_seconds = time.process_time() - cpu_start
    return {"total": seconds, "cpu": cpu_seconds, "losses": losses, "other": cpu.other_cores, "load": cpu.load_after}


def bench_seed_vs_numpy(quick: bool) -> Section:
    epochs, n_rounds = (50, 2) if quick else (1000, 5)
    s = Section("seed_vs_numpy", f"seed preset vs NumPy ports of the post, data/small.csv, {epochs} epochs, 1 thread, "
                                 f"{n_rounds} alternating rounds (medians)")
    torch.set_num_threads(1)
    _, seed_train = preset("seed")
    embeddings = embeddings_for(seed_train.vocab_limit)
    dataset = read_csv(SMALL_CSV, embeddings)
    rows, vectors = seed_rows(SMALL_CSV), glove_float64(embeddings)
    np_tokens = [tuple(w for w in sentence.split(" ") if w in vectors) for _, sentence in rows]
    rounds: dict[str, list[dict[str, Any]]] = {"seed": [], "numpy": [], "vectorized": []}
    for _ in range(n_rounds):  # alternate: neither side always runs on a warmer or quieter machine
        rounds["seed"].append(time_seed_preset(epochs, dataset, embeddings))
        rounds["numpy"].append(time_numpy_seed(train_seed_numpy, rows, vectors, epochs))
        rounds["vectorized"].append(time_numpy_seed(train_seed_numpy_vectorized, rows, vectors, epochs))
    med = {k: statistics.median(r["total"] for r in v) for k, v in rounds.items()}
    t, n, vec = rounds["seed"][0], rounds["numpy"][0], rounds["vectorized"][0]
    trainer: Trainer = t["trainer"]
    steps_np = epochs * sum(1 for tok in np_tokens if tok)

    s.add("rows", len(rows))
    s.add("same_tokens_as_numpy", [trainer.encoder.encode(x).tokens for x in dataset.texts] == np_tokens)
    s.add("fast_path", t["fast_path"])
    s.add("example_steps", t["steps"])
    s.add("seed_preset_build_seconds", statistics.median(r["build"] for r in rounds["seed"]), "s")
    s.add("seed_preset_run_seconds", statistics.median(r["run"] for r in rounds["seed"]), "s")
    s.add("seed_preset_train_loop_seconds", statistics.median(r["train"] for r in rounds["seed"]), "s")
    s.add("seed_preset_seconds", med["seed"], "s")
    s.add("numpy_seconds", med["numpy"], "s")
    s.add("numpy_vectorized_seconds", med["vectorized"], "s")
    s.add("seed_preset_us_per_step", 1e6 * med["seed"] / t["steps"], "µs")
    s.add("numpy_us_per_step", 1e6 * med["numpy"] / steps_np, "µs")
    s.add("numpy_vectorized_us_per_step", 1e6 * med["vectorized"] / steps_np, "µs")
    speedup = s.add("speedup_vs_numpy", med["numpy"] / med["seed"], "×")
    speedup_vec = s.add("speedup_vs_numpy_vectorized", med["vectorized"] / med["seed"], "×")
    cpu = {k: statistics.median(r["cpu"] for r in v) for k, v in rounds.items()}
    for key, label in (("seed", "seed_preset"), ("numpy", "numpy"), ("vectorized", "numpy_vectorized")):
        s.add(f"{label}_cpu_seconds", cpu[key], "s")
    s.add("speedup_vs_numpy_cpu_time", cpu["numpy"] / cpu["seed"], "×")
    s.add("speedup_vs_numpy_vectorized_cpu_time", cpu["vectorized"] / cpu["seed"], "×")
    for key, label in (("numpy", "numpy"), ("vectorized", "numpy_vectorized")):
        s.add(f"speedup_vs_{label}_per_round", [o["total"] / r["total"] for o, r in zip(rounds[key], rounds["seed"],
                                                                                        strict=True)], "×")
    for key, label in (("seed", "seed_preset"), ("numpy", "numpy"), ("vectorized", "numpy_vectorized")):
        s.add(f"{label}_seconds_all_rounds", [r["total"] for r in rounds[key]], "s")
        s.add(f"{label}_other_processes_cores_all_rounds", [r["other"] for r in rounds[key]], "cores")
    s.add("loadavg_1min_all_rounds", [r["load"] for r in rounds["seed"]])
    s.add("seed_preset_final_mean_loss", t["loss"])
    s.add("seed_preset_same_losses_every_round", len({r["loss"] for r in rounds["seed"]}) == 1)
    s.add("numpy_final_mean_loss", n["losses"][-1])
    s.add("numpy_vectorized_max_loss_diff", max(abs(a - b) for a, b in zip(n["losses"], vec["losses"], strict=True)))
    s.goals.append(Goal("seed preset (build + run) ≥ 2× faster than the NumPy port", speedup, SPEEDUP_GOAL))
    s.goals.append(Goal("seed preset (build + run) ≥ 2× faster than the vectorised port", speedup_vec, SPEEDUP_GOAL))
    s.notes += [
        "the final losses differ by design: the NumPy ports reproduce the post's gradient quirks (softmax "
        "Jacobian of α's first column applied to every row; scores / √(d·n)); the seed preset uses the "
        "correct gradients and / √d, in float32 (the ports are float64, like Julia); its random init differs too",
        "seed preset: Trainer(...) build + .run() wall time, everything included (probe snapshots, the fast path's "
        "setup; it has no compile step: its step is NumPy, attention_core/post_sgd.py); the loss is the last "
        "epoch's mean over rows; the ports' is total / rows like the post",
        "numpy_vectorized: the same port with its Python loops (row softmax, Jacobian fill, hcat) as array "
        "operations; same losses (see max diff); a control for how much of the speed-up is interpreter overhead",
        "speed-ups: ratios of the medians over rounds; *_per_round: each round's ratio (side by side); *_cpu_time: "
        "of this process's CPU seconds, which other processes on the 2 cores disturb much less than wall time",
    ]
    return s


# -- 3. prediction latency --------------------------------------------------------------------------------


def sentence_of(n_tokens: int, texts: tuple[str, ...], run: Run) -> str:
    """A sentence of exactly ``n_tokens`` real words: the run-vocabulary words of the data, in order."""
    words: list[str] = []
    for text in texts:
        words += [t for t in run.encoder.encode(text).tokens if t.isalpha() and t in run.encoder.word_to_id]
        if len(words) >= n_tokens:
            return " ".join(words[:n_tokens])
    raise RuntimeError(f"the data has fewer than {n_tokens} known words")


def bench_predict_latency(quick: bool) -> Section:
    calls, warmup, n_tokens = (50 if quick else 200), 20, 32
    s = Section("predict_latency", f"Run.predict on {n_tokens} tokens, default preset (1 epoch), saved + loaded")
    torch.set_num_threads(2)
    embeddings = embeddings_for(None)
    dataset = read_csv(UCI_CSV, embeddings)
    _, result, _ = train_default(dataset, embeddings, epochs=1, num_threads=2)
    with tempfile.TemporaryDirectory() as tmp:
        run = load_run(save_run(result, Path(tmp) / "run", name="latency"))
    text = sentence_of(n_tokens, dataset.texts, run)
    prediction = run.predict(text)
    layers, heads = run.model_config.n_attention_maps, run.model_config.n_heads  # a pooling attention's map too
    shape = np.shape(prediction.attention)
    if len(prediction.tokens) != n_tokens or shape != (layers, heads, n_tokens, n_tokens):
        raise RuntimeError(f"expected {n_tokens} tokens and attention {(layers, heads, n_tokens, n_tokens)}, "
                           f"got {len(prediction.tokens)} tokens and {shape}")
    ms = call_times_ms(lambda: run.predict(text), warmup, calls)
    forward_ms = call_times_ms(lambda: run.forward(text), warmup, calls)
    torch.set_num_threads(1)
    one_thread_ms = call_times_ms(lambda: run.predict(text), warmup, calls)
    torch.set_num_threads(2)
    s.add("layers_x_heads", f"{layers}x{heads}")
    s.add("tokens", len(prediction.tokens))
    s.add("calls", calls)
    median = s.add("median_ms", float(np.median(ms)), "ms")
    s.add("p90_ms", float(np.percentile(ms, 90)), "ms")
    s.add("min_ms", float(ms.min()), "ms")
    s.add("mean_ms", float(ms.mean()), "ms")
    s.add("forward_only_median_ms", float(np.median(forward_ms)), "ms")
    s.add("median_ms_1_thread", float(np.median(one_thread_ms)), "ms")
    s.goals.append(Goal("median Run.predict < 5 ms (32 tokens, 2×4 model)", median, LATENCY_GOAL_MS,
                        lower_is_better=True))
    s.notes.append("predict = encode + model forward with attention + softmax + .tolist() of all maps; "
                   "forward_only skips building the Prediction (the lists); 2 threads unless said")
    return s


# -- 4. accuracy against TF-IDF + logistic regression ----------------------------------------------------


def tfidf_baseline(train: TextDataset, val: TextDataset) -> tuple[Metrics, float]:
    """TF-IDF (word 1–2-grams, sublinear tf) + logistic regression; metrics on ``val`` and fit+predict seconds."""
    def fit_predict() -> list[int]:
        model = make_pipeline(TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True), LogisticRegression(max_iter=1000))
        model.fit(list(train.texts), list(train.labels))
        return model.predict(list(val.texts)).tolist()

    seconds, predicted = timed(fit_predict)
    return classification_metrics(list(val.labels), predicted, list(val.label_names)), seconds


def attention_vs_baseline(dataset: TextDataset, embeddings: Embeddings, seed: int,
                          epochs: int | None) -> dict[str, Any]:
    """Train ``default`` (60 s budget) with ``seed`` and score it and the baseline on that seed's split."""
    train, val = dataset.split(0.2, seed=seed)
    overrides = {"epochs": epochs} if epochs else {}
    trainer, result, wall = train_default(dataset, embeddings, seed=seed, val_fraction=0.2, time_budget=TIME_BUDGET_S,
                                          num_threads=2, **overrides)
    metrics = evaluate_model(result.model, result.encoder, val, result.label_names)
    baseline, baseline_seconds = tfidf_baseline(train, val)
    return {"same_split": same_rows(trainer.train_set, train) and same_rows(trainer.val_set, val),
            "metrics": metrics, "history": result.history, "wall": wall,
            "baseline": baseline, "baseline_seconds": baseline_seconds, "n_train": len(train), "n_val": len(val)}


def bench_accuracy_vs_tfidf(quick: bool) -> Section:
    s = Section("accuracy_vs_tfidf", "default preset (60 s budget) vs TF-IDF + LogisticRegression, 80/20 split seed 0")
    torch.set_num_threads(2)
    embeddings = embeddings_for(None)
    dataset = read_csv(UCI_CSV, embeddings)
    epochs = 2 if quick else None
    r = attention_vs_baseline(dataset, embeddings, 0, epochs)
    h, m, b = r["history"], r["metrics"], r["baseline"]
    s.add("train_rows", r["n_train"])
    s.add("val_rows", r["n_val"])
    s.add("same_split_as_trainer", r["same_split"])
    s.add("attention_val_accuracy", m.accuracy)
    s.add("attention_val_macro_f1", m.macro_f1)
    s.add("attention_train_seconds", h.seconds, "s")
    s.add("attention_run_seconds", r["wall"], "s")
    s.add("attention_epochs", len(h.epochs))
    s.add("attention_best_epoch", h.kept_epoch)
    s.add("attention_status", h.status)
    s.add("tfidf_val_accuracy", b.accuracy)
    s.add("tfidf_val_macro_f1", b.macro_f1)
    s.add("tfidf_seconds", r["baseline_seconds"], "s")
    s.add("accuracy_margin", m.accuracy - b.accuracy)
    s.goals.append(Goal("val accuracy > TF-IDF + LR, trained within 60 s", m.accuracy, b.accuracy,
                        extra_ok=h.seconds <= TIME_BUDGET_S and m.accuracy > b.accuracy))
    if not quick:
        runs = [r] + [attention_vs_baseline(dataset, embeddings, seed, None) for seed in (1, 2)]
        acc, base = [x["metrics"].accuracy for x in runs], [x["baseline"].accuracy for x in runs]
        s.add("seeds", [0, 1, 2])
        s.add("attention_val_accuracy_per_seed", acc)
        s.add("tfidf_val_accuracy_per_seed", base)
        s.add("attention_train_seconds_per_seed", [x["history"].seconds for x in runs], "s")
        s.add("attention_val_accuracy_mean", statistics.mean(acc))
        s.add("attention_val_accuracy_std", statistics.stdev(acc))
        s.add("tfidf_val_accuracy_mean", statistics.mean(base))
        s.add("tfidf_val_accuracy_std", statistics.stdev(base))
        s.add("seeds_beating_tfidf", sum(a > t for a, t in zip(acc, base, strict=True)))
        s.notes.append(f"seeds 0, 1, 2: attention {statistics.mean(acc):.3f} ± {statistics.stdev(acc):.3f} vs "
                       f"TF-IDF {statistics.mean(base):.3f} ± {statistics.stdev(base):.3f} validation accuracy")
        s.notes.append("the seed sets the split as well as init and batch order, so each seed's baseline is "
                       "trained and scored on that seed's split; std is the sample std (n − 1)")
    s.notes.append("accuracy of the best-by-validation-loss weights, scored with training.evaluate_model; "
                   "both models' metrics come from attention_core.metrics.classification_metrics")
    return s


# -- 5. a word-vector file: parsed, then read back from the cache ------------------------------------------

def bench_vectors_file_cache(quick: bool) -> Section:
    """A user's word2vec / GloVe text file: gensim's parse against the parsed copy kept in the cache."""
    from attention_core import embeddings as E

    n = 20_000 if quick else 400_000
    s = Section("vectors_file_cache", f"your own word-vector file ({n:,} words × 50, GloVe text): first read vs later reads")
    glove = embeddings_for(None)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "vectors.txt"
        rows = np.asarray(glove._vectors[:n])
        with open(path, "w", encoding="utf-8") as f:
            for i in range(n):
                f.write(glove._words[i] + " " + " ".join(f"{x:.5f}" for x in rows[i]) + "\n")
        old = os.environ.get("ATTENTION_PLAYGROUND_CACHE")
        os.environ["ATTENTION_PLAYGROUND_CACHE"] = str(Path(tmp) / "cache")
        try:
            def load_fresh() -> Embeddings:  # as a new process does: nothing of the file in memory
                for cached in (E._load_cached, E._file_arrays, E._lowercase_aliases):
                    cached.cache_clear()
                return E.load_embeddings(E.EmbeddingSource("file", str(path)))

            first_s, first = timed(load_fresh)
            again = [timed(load_fresh) for _ in range(3)]
        finally:
            if old is None:
                os.environ.pop("ATTENTION_PLAYGROUND_CACHE", None)
            else:
                os.environ["ATTENTION_PLAYGROUND_CACHE"] = old
        later = again[-1][1]
        if first.size != n or later.size != n or not np.array_equal(np.asarray(first._vectors), np.asarray(later._vectors)):
            raise RuntimeError("the cached copy differs from the parsed file")
        s.add("file_mb", path.stat().st_size / 1e6, "MB")
    s.add("words", n)
    s.add("first_read_s", first_s, "s")
    best = s.add("later_read_s", min(t for t, _ in again), "s")
    speedup = s.add("speedup", first_s / best, "×")
    s.goals.append(Goal("a later read ≥ 5× faster than parsing the file", speedup, 5.0))
    s.notes.append("first read = row check + gensim's parse + writing the cache; later read = memory-mapping the cached "
                   "vectors.npy + words.txt (best of 3); in-process, caches cleared as in a new process")
    return s


# -- 6. the command line's thread count beside other work ---------------------------------------------------

# Thread settings compared: the command line's default (no --threads) and the two fixed counts.
THREAD_POLICIES = ("default", "1", "2")
NEIGHBOURS = ("quiet", "busy core", "another training")
TRAIN_BESIDE_FLAG = "--train-beside"  # run.py started as the neighbour training (see train_beside)
NEIGHBOUR_SETTLE_S = 2.0  # seconds the neighbour training runs with a setting before the runs beside it


def thread_policy(policy: str) -> ThreadTuner | None:
    """Apply a thread setting as the command line does: ``"default"`` → the tuner of
    :func:`attention_core.threads.auto_threads` (fed every step), a number → ``--threads N``."""
    torch.set_num_threads(TORCH_THREADS)  # torch's own count, as a fresh process starts with
    if policy == "default":
        return auto_threads()
    torch.set_num_threads(int(policy))
    return None


def tuned_run(trainer: Trainer, tuner: ThreadTuner | None, on_step: Callable[[StepEvent], None] | None = None,
              seconds_by_threads: dict[int, float] | None = None) -> Run:
    """``trainer.run()`` with ``tuner`` fed every step; ``seconds_by_threads`` gets the training
    seconds spent at each thread count."""
    last = [0.0]

    def step(ev: StepEvent) -> None:
        if seconds_by_threads is not None:
            threads = tuner.current if tuner is not None else torch.get_num_threads()
            seconds_by_threads[threads] = seconds_by_threads.get(threads, 0.0) + ev.seconds - last[0]
            last[0] = ev.seconds
        if tuner is not None:
            tuner.update(ev.examples_seen, ev.seconds)
        if on_step is not None:
            on_step(ev)

    return trainer.run(on_step=step)


def train_beside() -> None:
    """The neighbour of the "another training" runs: trains the ``default`` preset on the UCI data
    until its stdin closes, taking commands on stdin, one a line (carried out by the training
    thread between two steps, where the tuner is fed too):

    * ``policy P`` — train with thread setting ``P`` from now on (a fresh tuner, as a new run
      starts with); answers ``policy P`` on stdout once applied;
    * ``mark`` — start counting (answers ``mark``); ``end`` — answer, as one JSON line, the
      examples trained and the wall seconds since ``mark`` (each taken when the step under way
      when the command came has ended).
    """
    import threading

    embeddings = embeddings_for(None)
    dataset = read_csv(UCI_CSV, embeddings)
    # patience off: the default preset's early stop ended this neighbour mid-benchmark on a faster host (exit 0)
    model_cfg, train_cfg = preset("default", epochs=100_000, snapshots=0, patience=None)
    trainer = Trainer(model_cfg, train_cfg, dataset, embeddings)
    commands: list[str] = []
    lock = threading.Lock()
    state: dict[str, Any] = {"tuner": None, "mark": (0, 0.0)}

    def on_step(ev: StepEvent) -> None:
        with lock:
            todo = commands[:]
            commands.clear()
        for command in todo:
            if command.startswith("policy "):
                state["tuner"] = thread_policy(command.removeprefix("policy "))
            elif command == "mark":
                state["mark"] = (ev.examples_seen, time.perf_counter())
            elif command == "end":
                n0, t0 = state["mark"]
                command = json.dumps({"examples": ev.examples_seen - n0, "seconds": time.perf_counter() - t0})
            print(command, flush=True)
        if state["tuner"] is not None:
            state["tuner"].update(ev.examples_seen, ev.seconds)

    def read_commands() -> None:
        for line in sys.stdin:
            with lock:
                commands.append(line.strip())
        trainer.stop()

    threading.Thread(target=read_commands, daemon=True).start()
    trainer.run(on_step=on_step)


class NeighbourTraining:
    """A second training process (:func:`train_beside`), switched between thread settings."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), TRAIN_BESIDE_FLAG], cwd=ROOT,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.policy: str | None = None

    def ask(self, command: str) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline().strip()
        if not answer:
            raise RuntimeError(f"the neighbour training ended (exit {self.proc.wait()})")
        return answer

    def use(self, policy: str) -> None:
        """Train with ``policy`` from now on, and for NEIGHBOUR_SETTLE_S before returning."""
        if policy != self.policy:
            self.ask(f"policy {policy}")
            self.policy = policy
            time.sleep(NEIGHBOUR_SETTLE_S)  # past its first trials of thread counts: a training already running

    def close(self) -> None:
        if self.proc.stdin is not None:
            with contextlib.suppress(BrokenPipeError):  # (it has ended already: ask() says so where it matters)
                self.proc.stdin.close()  # it stops at its next step
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@contextmanager
def neighbour(kind: str) -> Iterator[NeighbourTraining | None]:
    """Nothing, a busy-loop process, or a training process, for the ``with`` block."""
    if kind == "quiet":
        yield None
    elif kind == "busy core":
        proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            time.sleep(0.5)  # the loop is running long before this
            yield None
        finally:
            proc.kill()
            proc.wait()
    else:
        training = NeighbourTraining()
        try:
            yield training
        finally:
            training.close()


@dataclass
class ThreadCell:
    """One thread setting beside one neighbour, summed over its runs."""

    examples: int = 0
    seconds: float = 0.0  # training seconds (History)
    seconds_on_2: float = 0.0  # of which at 2 threads or more
    other_core_seconds: float = 0.0  # other processes' CPU during the runs (neighbour included)
    wall: float = 0.0
    neighbour_examples: int = 0
    neighbour_seconds: float = 0.0

    def rate(self) -> float:
        return self.examples / self.seconds if self.seconds else 0.0

    def neighbour_rate(self) -> float | None:
        return self.neighbour_examples / self.neighbour_seconds if self.neighbour_seconds else None


def run_thread_cell(cell: ThreadCell, policy: str, trainer: Trainer, beside: NeighbourTraining | None) -> None:
    """Train with ``policy`` (beside ``beside``, with the same policy); add what happened to ``cell``."""
    if beside is not None:
        beside.use(policy)
        beside.ask("mark")
    tuner, by_threads = thread_policy(policy), {}
    with CpuMonitor() as cpu:
        result = tuned_run(trainer, tuner, seconds_by_threads=by_threads)
    if beside is not None:
        counted = json.loads(beside.ask("end"))
        cell.neighbour_examples += counted["examples"]
        cell.neighbour_seconds += counted["seconds"]
    cell.examples += result.history.examples_seen
    cell.seconds += result.history.seconds
    cell.seconds_on_2 += sum(t for n, t in by_threads.items() if n >= 2)
    cell.other_core_seconds += (cpu.other_cores or 0.0) * cpu.seconds
    cell.wall += cpu.seconds


def bench_cli_threads(quick: bool) -> Section:
    """The command line's training throughput for each thread setting, quiet and beside other work."""
    seconds = 2.0 if quick else 6.0
    s = Section("cli_threads", f"CLI training (default preset, UCI data, 2 × {seconds / 2:g} s each) by thread "
                               "setting: quiet, beside a busy core, beside another training", own_neighbours=True)
    embeddings = embeddings_for(None)
    dataset = read_csv(UCI_CSV, embeddings)
    model_cfg, train_cfg = preset("default", epochs=100_000, time_budget=seconds / 2, snapshots=0, patience=None)
    table = {kind: {policy: ThreadCell() for policy in THREAD_POLICIES} for kind in NEIGHBOURS}
    tuned_run(Trainer(model_cfg, replace(train_cfg, time_budget=0.5), dataset, embeddings), thread_policy("1"))  # warm-up
    for kind in NEIGHBOURS:
        with neighbour(kind) as beside:
            # each setting twice, in order and then in reverse: this machine's speed drifts within minutes
            for policy in (*THREAD_POLICIES, *reversed(THREAD_POLICIES)):
                run_thread_cell(table[kind][policy], policy, Trainer(model_cfg, train_cfg, dataset, embeddings), beside)
        print(f"  {kind:<17} " + ", ".join(f"{p}: {table[kind][p].rate():,.0f}" for p in THREAD_POLICIES)
              + " examples/s", flush=True)
    torch.set_num_threads(TORCH_THREADS)
    for kind in NEIGHBOURS:
        for policy in THREAD_POLICIES:
            label = "default" if policy == "default" else f"threads_{policy}"
            s.add(f"{kind.replace(' ', '_')}_{label}", table[kind][policy].rate(), "ex/s")
    for kind in NEIGHBOURS:
        s.add(f"{kind.replace(' ', '_')}_other_processes_cores",
              [c.other_core_seconds / c.wall for c in table[kind].values()], "cores")
    s.add("another_training_neighbour_ex_per_s", [c.neighbour_rate() for c in table["another training"].values()],
          "ex/s")
    s.add("default_share_of_time_on_2_threads",
          [table[kind]["default"].seconds_on_2 / table[kind]["default"].seconds for kind in NEIGHBOURS])
    s.add("policies", list(THREAD_POLICIES))
    s.add("torch_default_threads", TORCH_THREADS)
    quiet = table["quiet"]
    s.goals.append(Goal("quiet: default ≥ 90 % of the faster fixed count", quiet["default"].rate(),
                        0.9 * max(quiet["1"].rate(), quiet["2"].rate())))
    for kind in ("busy core", "another training"):
        s.goals.append(Goal(f"beside a {kind.removeprefix('another ')}: default ≥ 80 % of --threads 1",
                            table[kind]["default"].rate(), 0.8 * table[kind]["1"].rate()))
    quiet_others = max(s.figures["quiet_other_processes_cores"])
    if quiet_others > DISTURBED_CORES:
        s.notes.append(f"DISTURBED: other processes used up to {quiet_others:.2f} cores during the quiet cells; "
                       "re-run with --only cli_threads on an idle machine")
    s.notes += [
        "each setting trains the default preset in this process twice (in order, then in reverse order) for "
        f"{seconds / 2:g} training seconds, each a fresh start as a CLI run is; examples/s = examples / training "
        "seconds over both (History's figure, the one the CLI prints); the default is "
        "attention_core.threads.auto_threads fed every step, as the CLI does without --threads; a number is "
        "torch.set_num_threads(N) (--threads N)",
        "busy core: a `while True: pass` process; another training: a second process training the default preset "
        f"with the same setting (two people running the same command), switched to it {NEIGHBOUR_SETTLE_S:g} s "
        "before the first run with it; its examples per wall second during the runs are "
        "another_training_neighbour_ex_per_s",
        "other_processes_cores: CPU used by every other process during each setting's runs (the neighbour "
        "included); default_share_of_time_on_2_threads: quiet, busy core, another training",
    ]
    return s


# -- 7. model quality on every set ---------------------------------------------------------------------


def bench_quality(quick: bool) -> Section:
    sets = list(quality.SETS) if TUNING_DIR else ["uci"]
    s = Section("quality", f"default preset (CLI train, 60 s budget) vs TF-IDF + LR(C=4), test splits: {', '.join(sets)}")
    embeddings = embeddings_for(None)
    configs = [("default", {"epochs": 2} if quick else {})]
    for name in sets:
        r = quality.compare(name, TUNING_DIR, embeddings, tune=False, configs=configs, seeds=[0], report=print)
        ours, b = r.ours["default"][0], r.baseline
        s.add(f"{name}_rows_train_test", [r.n_train, r.n_eval])
        s.add(f"{name}_ours_accuracy", ours.accuracy)
        s.add(f"{name}_ours_macro_f1", ours.macro_f1)
        s.add(f"{name}_ours_seconds", ours.seconds, "s")
        s.add(f"{name}_tfidf_accuracy", b.accuracy)
        s.add(f"{name}_tfidf_macro_f1", b.macro_f1)
        s.add(f"{name}_tfidf_seconds", b.seconds, "s")
        s.notes.append(f"{name}: {ours.detail}")
        s.goals.append(Goal(f"{name}: accuracy > TF-IDF + LR", ours.accuracy, b.accuracy,
                            extra_ok=ours.accuracy > b.accuracy))
        s.goals.append(Goal(f"{name}: macro-F1 > TF-IDF + LR", ours.macro_f1, b.macro_f1,
                            extra_ok=ours.macro_f1 > b.macro_f1))
    if not TUNING_DIR:
        s.notes.append("CR, Subj and TREC need --tuning-dir DIR (cr.csv, subj.csv, trec_train.csv, trec_test.csv)")
    return s


# -- running and reporting --------------------------------------------------------------------------------

# -- 8. the faithfulness lab ------------------------------------------------------------------------------


def bench_faithfulness(quick: bool) -> Section:
    """The faithfulness lab on the bundled run: one sentence's whole lab, a head knock-out, the run report."""
    from attention_core.faithfulness import (
        METHODS,
        SHAPLEY_EXACT_TOKENS,
        SentenceContext,
        available_methods,
        knock_out,
        run_report,
        sentence_lab,
    )
    from attention_core.sentence import evaluating
    from attention_core.threads import FollowFreeCores

    n_tokens = 32
    s = Section("faithfulness", f"faithfulness lab, bundled run (data/default_run), {n_tokens} tokens")
    run = load_run(ROOT / "data" / "default_run")
    texts, labels = run.validation
    text = sentence_of(n_tokens, texts, run)
    cfg = run.model_config
    every_other = [(layer, head) for layer in range(cfg.n_layers) for head in range(0, cfg.n_heads, 2)]
    s.add("tokens", len(run.encoder.encode(text).tokens))
    for threads in (1, 2):
        torch.set_num_threads(threads)
        lab_ms = call_times_ms(lambda: sentence_lab(run.model, run.encoder, run.label_names, text), 1, 3 if quick else 7)
        s.add(f"sentence_lab_median_ms_{threads}_thread", float(np.median(lab_ms)), "ms")
    torch.set_num_threads(1)
    lab_ms = call_times_ms(lambda: sentence_lab(run.model, run.encoder, run.label_names, text), 0, 3 if quick else 7)
    lab = s.add("sentence_lab_median_ms", float(np.median(lab_ms)), "ms")
    encoded, batch = run.encoder.encode_for_model(text)
    out = run.forward(text)
    with evaluating(run.model):
        features = run.model.embed(batch.ids, batch.extra, batch.casing)
    for method in available_methods(run.model):
        def score(method=method) -> None:
            ctx = SentenceContext(run.model, encoded, features, out.attention, out.probabilities,
                                  int(out.probabilities.argmax()), np.random.default_rng(0))
            method.score(ctx)

        s.add(f"method_{method.name}_ms", float(np.median(call_times_ms(score, 1, 5))), "ms")
    short = sentence_of(SHAPLEY_EXACT_TOKENS, texts, run)  # the longest sentence whose Shapley values are exact
    short_encoded, short_batch = run.encoder.encode_for_model(short)
    short_out = run.forward(short)
    with evaluating(run.model):
        short_features = run.model.embed(short_batch.ids, short_batch.extra, short_batch.casing)

    def exact_shapley() -> None:
        METHODS["shapley"].score(SentenceContext(run.model, short_encoded, short_features, short_out.attention,
                                                 short_out.probabilities, int(short_out.probabilities.argmax()),
                                                 np.random.default_rng(0)))

    s.add(f"method_shapley_exact_{SHAPLEY_EXACT_TOKENS}_tokens_ms", float(np.median(call_times_ms(exact_shapley, 1, 5))),
          "ms")
    knock_ms = call_times_ms(lambda: run.predict(text, edit_attention=knock_out(every_other, cfg)), 5, 50)
    knock = s.add("knock_out_predict_median_ms", float(np.median(knock_ms)), "ms")
    n = 60 if quick else len(texts)

    def report_of(sentences_per_pass: int, follow: Callable[[], object] | None = None) -> tuple[float, float, Any]:
        cpu = time.process_time()
        seconds, report = timed(lambda: run_report(run.model, run.encoder, run.label_names, texts[:n], labels[:n],
                                                   sentences_per_pass=sentences_per_pass,
                                                   on_progress=None if follow is None else lambda _: follow()))
        return seconds, time.process_time() - cpu, report

    one_by_one_seconds, one_by_one_cpu, _ = report_of(1)  # the same numbers (a test checks), each sentence alone
    seconds, cpu_seconds, report = report_of(32)
    torch.set_num_threads(TORCH_THREADS)  # torch's own count, as a new CLI process starts with
    follow = FollowFreeCores()  # the CLI's default: one thread per core other processes leave free
    following_seconds, following_cpu, _ = report_of(32, follow)
    torch.set_num_threads(1)
    s.add("report_sentences", report.n)
    s.add("report_seconds", seconds, "s")
    s.add("report_cpu_seconds", cpu_seconds, "s")
    s.add("report_free_cores_seconds", following_seconds, "s")
    s.add("report_free_cores_cpu_seconds", following_cpu, "s")
    s.add("report_free_cores_threads_at_end", follow.current)
    s.add("report_one_by_one_seconds", one_by_one_seconds, "s")
    s.add("report_one_by_one_cpu_seconds", one_by_one_cpu, "s")
    command = [sys.executable, "-m", "attention_core", "faithfulness", "data/default_run", "--quiet"]
    if not quick:  # the command as a user types it: start-up (import torch, load the run) and default threads
        cli_seconds, done = timed(lambda: subprocess.run(command, cwd=ROOT, capture_output=True, text=True))
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command[1:])} failed: {done.stderr[-500:]}")
        s.add("report_command_seconds", cli_seconds, "s")
    s.add("report_comprehensiveness", [report.comprehensiveness[m] for m in [*report.methods, "random"]])
    s.add("report_sufficiency", [report.sufficiency[m] for m in [*report.methods, "random"]])
    s.goals.append(Goal(f"one sentence's whole lab ≤ 1 s ({n_tokens} tokens, 1 thread)", lab, 1000.0,
                        lower_is_better=True))
    s.goals.append(Goal("head knock-out on one sentence ≤ 300 ms (Run.predict with the edit)", knock, 300.0,
                        lower_is_better=True))
    if quick:
        s.goals.append(Goal(f"run report over {n} of the bundled run's validation sentences ≤ {n}/600 × 30 s "
                            "(the CLI's threads)", following_seconds, 30.0 * n / len(texts), lower_is_better=True))
    else:
        s.goals.append(Goal(f"`{' '.join(command[2:])}` ≤ 30 s ({n} sentences, start-up included)", cli_seconds, 30.0,
                            lower_is_better=True))
    s.notes.append("methods in order: " + ", ".join([*report.methods, "random"]) + "; the lab runs on 1 and 2 torch "
                   "threads; the report on 1 (report_seconds) and on the CLI's default, one thread per core other "
                   "processes leave free, read again as it goes (report_free_cores_*, attention_core.threads."
                   "FollowFreeCores): 2 threads beside other work were much slower; the report scores 32 sentences "
                   "side by side, report_one_by_one_* one at a time (sentences_per_pass=1, 1 thread), in the same run")
    torch.set_num_threads(TORCH_THREADS)
    return s


SECTIONS: dict[str, Callable[[bool], Section]] = {
    "train_throughput": bench_train_throughput,
    "seed_vs_numpy": bench_seed_vs_numpy,
    "predict_latency": bench_predict_latency,
    "accuracy_vs_tfidf": bench_accuracy_vs_tfidf,
    "vectors_file_cache": bench_vectors_file_cache,
    "cli_threads": bench_cli_threads,
    "quality": bench_quality,
    "faithfulness": bench_faithfulness,
}


def run_section(name: str, quick: bool, profile: bool) -> Section:
    print(f"\n== {name} ==", flush=True)
    profiler = cProfile.Profile() if profile else None
    with CpuMonitor() as cpu:
        if profiler:
            profiler.enable()
        section = SECTIONS[name](quick)
        if profiler:
            profiler.disable()
    section.environment = {
        "section_seconds": round(cpu.seconds, 2), "other_processes_cores": _round(cpu.other_cores),
        "loadavg_1min_before": round(cpu.load_before, 2), "loadavg_1min_after": round(cpu.load_after, 2),
        "torch_threads": torch.get_num_threads(),
    }
    if not section.own_neighbours and cpu.other_cores is not None and cpu.other_cores > DISTURBED_CORES:
        section.notes.append(f"DISTURBED: other processes used {cpu.other_cores:.2f} cores on average during this "
                             f"section; re-run it with --only {name}")
    print_section(section)
    if profiler:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
    return section


def _fmt(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, list):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    return str(value)


def print_section(s: Section) -> None:
    print(f"{s.title}  ({s.environment['section_seconds']} s; other processes "
          f"{_fmt(s.environment['other_processes_cores'])} cores)")
    width = max(len(k) for k in s.figures)
    for key, value in s.figures.items():
        print(f"  {key:<{width}}  {_fmt(value)} {s.units.get(key, '')}".rstrip())
    for g in s.goals:
        print(f"  GOAL {g.text}: ratio to goal {g.ratio:.3f} (≥ 1 is met) → {'met' if g.met else 'NOT MET'}")
    for note in s.notes:
        print(f"  note: {note}")


def print_summary(sections: dict[str, dict[str, Any]]) -> None:
    print("\n== summary ==")
    print(f"  {'section':<18} {'goal':<52} {'measured':>10} {'target':>9} {'ratio':>6}  met")
    for name, s in sections.items():
        for g in s["goals"]:
            print(f"  {name:<18} {g['goal']:<52} {_fmt(g['measured']):>10} {_fmt(g['target']):>9} "
                  f"{g['ratio']:>6.3f}  {'yes' if g['met'] else 'NO'}")


def metadata(quick: bool) -> dict[str, Any]:
    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    return {
        "quick": quick, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "git_commit": git("rev-parse", "HEAD"),
        "git_dirty_files": git("status", "--porcelain", "--", "attention_core").splitlines(),
        "python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__,
        "scikit_learn": sklearn.__version__, "cpus": os.cpu_count(), "machine": platform.machine(),
    }


def save(path: Path, meta: dict[str, Any], sections: dict[str, dict[str, Any]], only: str | None) -> dict[str, Any]:
    """Write the results; with ``--only`` the other sections already in the file are kept."""
    results: dict[str, Any] = {"meta": meta, "sections": {}}
    if only and path.is_file():
        try:
            old = json.loads(path.read_text())
            if old.get("meta", {}).get("quick") == meta["quick"]:
                results["sections"] = old.get("sections", {})
        except (OSError, json.JSONDecodeError):
            pass
    for name, section in sections.items():
        section["meta"] = meta  # each section says when and on what code it was measured
        results["sections"][name] = section
    path.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    return results


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == [TRAIN_BESIDE_FLAG]:  # started by bench_cli_threads as its neighbour training
        train_beside()
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="few epochs and calls: a smoke test, not figures")
    parser.add_argument("--only", choices=list(SECTIONS), help="run one section (updates just it in the results file)")
    parser.add_argument("--out", type=Path, help="results file (default benchmarks/results.json, "
                        "or benchmarks/results-quick.json with --quick)")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of each section (slows it)")
    parser.add_argument("--tuning-dir", type=Path, help="the quality section's CR, Subj and TREC files (else UCI only)")
    args = parser.parse_args(argv)
    global TUNING_DIR
    TUNING_DIR = args.tuning_dir
    names = [args.only] if args.only else list(SECTIONS)
    meta = metadata(args.quick)
    sections = {name: run_section(name, args.quick, args.profile).to_dict() for name in names}
    print_summary(sections)
    results = save(args.out or (QUICK_RESULTS if args.quick else RESULTS), meta, sections, args.only)
    print(json.dumps(results, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
