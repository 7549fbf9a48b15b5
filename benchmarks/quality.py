"""Model quality: our ``default`` preset against TF-IDF + logistic regression, per data set, side by side.

Run from the repository root::

    python benchmarks/quality.py --tuning-dir DIR              # test splits: the figures to report
    python benchmarks/quality.py --quick                       # a smoke run: uci, 2 epochs
    python benchmarks/quality.py --tuning-dir DIR --preset finetune --time-budget 300   # the pretrained encoder
    python benchmarks/quality.py --tuning-dir DIR --tune \\
        --config drop=dropout=0.2 --config pool=pooling=attention,dropout=0.2   # validation splits only

The sets and their fixed splits (defined before any tuning, never changed):

* ``uci`` — ``data/uci_sentiment_sentences.csv``; test = ``dataset.split(0.2, seed=0)``'s 20 %.
* ``cr``, ``subj`` — ``DIR/cr.csv``, ``DIR/subj.csv``; the same 80/20 split.
* ``trec`` — ``DIR/trec_train.csv`` for training, ``DIR/trec_test.csv`` as test.

Without ``--tune`` ours is trained on the training part and both models are scored on the test part.
With ``--tune`` the training part is split again (``split(0.2, seed=1)``): both are trained on its
80 % and scored on its 20 % (the validation split) — settings are chosen on these figures only.

Ours is trained as the CLI's ``train`` trains (``preset("default", **overrides)``, or ``--preset finetune``'s
pretrained encoder, which keeps every row: it reads word pieces, not GloVe words, ``Trainer``,
:func:`attention_core.cli.run_trainer`) with ``--time-budget 60`` by default; inside, the Trainer holds
out its own 20 % for choosing the kept epoch, as ``train`` does. The baseline (TF-IDF word 1–2-grams,
sublinear tf, + ``LogisticRegression(C=4)``) is trained on all of the same training rows. Both are scored
with :func:`attention_core.metrics.classification_metrics`: accuracy and macro-F1 (rows with no word the
vectors know are left out of ours — there are almost none). The data never enters the repository:
the folder is an argument.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse
import ast
import json
import statistics
import time
from dataclasses import dataclass
from typing import Any

from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

from attention_core import TextDataset, Trainer, classification_metrics, evaluate_model, load_dataset, preset
from attention_core.cli import run_trainer
from attention_core.embeddings import EmbeddingSource, load_embeddings
from attention_core.metrics import Metrics
from attention_core.presets import get_preset

ROOT = Path(__file__).resolve().parents[1]
UCI_CSV = ROOT / "data" / "uci_sentiment_sentences.csv"
SETS = ("uci", "cr", "subj", "trec")
SPLIT_SEED = 0  # the test split
TUNE_SEED = 1  # the validation split carved from the training part
TIME_BUDGET_S = 60.0


@dataclass
class Score:
    accuracy: float
    macro_f1: float
    seconds: float
    detail: str = ""  # ours: epochs trained, kept epoch, how the run ended


def load_splits(name: str, tuning_dir: Path, is_known: Any = None) -> tuple[TextDataset, TextDataset]:
    """The fixed (train, test) split of a set."""
    if name == "trec":
        return (load_dataset(tuning_dir / "trec_train.csv", is_known=is_known),
                load_dataset(tuning_dir / "trec_test.csv", is_known=is_known))
    path = UCI_CSV if name == "uci" else tuning_dir / f"{name}.csv"
    return load_dataset(path, is_known=is_known).split(0.2, seed=SPLIT_SEED)


def baseline(train: TextDataset, test: TextDataset) -> Score:
    """TF-IDF (word 1–2-grams, sublinear tf) + LogisticRegression(C=4), scored on ``test`` (labels matched by name)."""
    start = time.perf_counter()
    model = make_pipeline(TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True), LogisticRegression(C=4, max_iter=2000))
    model.fit(list(train.texts), [train.label_names[y] for y in train.labels])
    predicted = model.predict(list(test.texts)).tolist()
    seconds = time.perf_counter() - start
    names = list(train.label_names)
    truth = [names.index(test.label_names[y]) for y in test.labels]
    m = classification_metrics(truth, [names.index(p) for p in predicted], names)
    return Score(m.accuracy, m.macro_f1, seconds)


def ours(train: TextDataset, test: TextDataset, embeddings: Any, overrides: dict[str, Any],
         preset_name: str = "default") -> Score:
    """The preset ``preset_name`` with ``overrides`` (e.g. ``time_budget``) trained as the CLI trains, scored on
    ``test``. ``embeddings``: None for a preset that fine-tunes a pretrained encoder (it reads word pieces)."""
    model_cfg, train_cfg = preset(preset_name, **overrides)
    start = time.perf_counter()
    trainer = Trainer(model_cfg, train_cfg, train, embeddings)
    run = run_trainer(trainer)
    seconds = time.perf_counter() - start
    m: Metrics = evaluate_model(run.model, run.encoder, test, run.label_names)
    h = run.history
    detail = (f"{len(h.epochs)} ep, kept {h.kept_epoch}, {h.status}, train {h.seconds:.1f} s, "
              f"{h.examples_seen:,} examples")
    return Score(m.accuracy, m.macro_f1, seconds, detail)


def parse_config(text: str) -> tuple[str, dict[str, Any]]:
    """``name=key=value,key=value`` (values as Python literals, else strings) → (name, overrides)."""
    name, _, body = text.partition("=")
    overrides: dict[str, Any] = {}
    for item in filter(None, body.split(",")):
        key, _, value = item.partition("=")
        try:
            overrides[key.strip()] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            overrides[key.strip()] = value.strip()
    return name, overrides


@dataclass
class SetResult:
    """One set's side-by-side figures: the baseline, then ours per config and seed."""

    name: str
    n_train: int
    n_eval: int
    baseline: Score
    ours: dict[str, list[Score]]


def compare(name: str, tuning_dir: Path | None, embeddings: Any, *, tune: bool, configs: list[tuple[str, dict]],
            seeds: list[int], time_budget: float = TIME_BUDGET_S, threads: int | None = None,
            report: Any = print, preset_name: str = "default") -> SetResult:
    """Train the baseline and ours (each config × seed) on one set's split; ``report`` gets a line per model. The
    configs take turns within each seed: a budgeted training's figure follows the machine's speed, which drifts
    within minutes (a host's CPU steal: benchmarks/README.md, "Fine-tuning's quality", fourth round)."""
    if name != "uci" and tuning_dir is None:
        raise SystemExit(f"the {name} set needs --tuning-dir")
    train, test = load_splits(name, tuning_dir or Path("."), None if embeddings is None else embeddings.__contains__)
    if tune:
        train, test = train.split(0.2, seed=TUNE_SEED)
    b = baseline(train, test)
    split = "validation" if tune else "test"
    report(f"  {name:<5} {'tfidf+lr':<22} {b.accuracy:6.3f} {b.macro_f1:8.3f} {b.seconds:6.1f}  "
           f"{len(train)} train / {len(test)} {split} rows")
    result = SetResult(name, len(train), len(test), b, {})
    for seed in seeds:
        for config, overrides in configs:
            extra = {"num_threads": threads} if threads else {}
            s = ours(train, test, embeddings, {"time_budget": time_budget, **overrides, "seed": seed, **extra},
                     preset_name)
            result.ours.setdefault(config, []).append(s)
            report(f"  {name:<5} {config + f' s{seed}':<22} {s.accuracy:6.3f} {s.macro_f1:8.3f} {s.seconds:6.1f}  "
                   f"{s.detail}  Δacc {s.accuracy - b.accuracy:+.3f} ΔF1 {s.macro_f1 - b.macro_f1:+.3f}")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tuning-dir", type=Path, help="folder with cr.csv, subj.csv, trec_train.csv, "
                        "trec_test.csv (text,label); without it only uci runs")
    parser.add_argument("--tune", action="store_true", help="score on validation splits of the training parts only")
    parser.add_argument("--sets", help=f"comma-separated, from {', '.join(SETS)} (default: all, or uci without "
                        "--tuning-dir)")
    parser.add_argument("--config", action="append", default=[], metavar="NAME=KEY=VALUE,…",
                        help="settings over the default preset (repeatable; default: the default preset as it is)")
    parser.add_argument("--preset", default="default", help="ours: the preset to train (default: default; "
                        "finetune: the pretrained encoder, which reads word pieces and needs no word vectors)")
    parser.add_argument("--threads", type=int, help="torch threads (default: as the CLI chooses)")
    parser.add_argument("--time-budget", type=float, default=TIME_BUDGET_S, metavar="SECONDS",
                        help="ours' training budget (default 60; a busy machine trains 5–15× slower: give it more "
                        "to tune on epochs, and say so)")
    parser.add_argument("--seeds", default="0", help="training seeds, comma-separated (the splits stay fixed)")
    parser.add_argument("--log", type=Path, help="append one JSON line per result to this file")
    parser.add_argument("--quick", action="store_true", help="a smoke run: uci only, 2 epochs (not figures)")
    args = parser.parse_args(argv)
    configs = [parse_config(c) for c in args.config] or [(args.preset, {})]
    if args.quick:
        configs = [(name, {**overrides, "epochs": 2}) for name, overrides in configs]
        args.time_budget = min(args.time_budget, 10.0)  # the pretrained encoder's 2 epochs would take minutes
        args.sets, args.tuning_dir = "uci", None
    seeds = [int(s) for s in args.seeds.split(",")]
    sets = args.sets.split(",") if args.sets else list(SETS) if args.tuning_dir else ["uci"]
    pretrained = get_preset(args.preset).model.base is not None
    embeddings = None if pretrained else load_embeddings(EmbeddingSource())
    split = "validation" if args.tune else "test"
    print(f"quality on {split} splits; ours = {args.preset} preset + config, {args.time_budget:g} s budget", flush=True)
    print(f"  {'set':<5} {'model':<22} {'acc':>6} {'macroF1':>8} {'s':>6}  detail", flush=True)
    results = []
    for name in sets:
        r = compare(name, args.tuning_dir, embeddings, tune=args.tune, configs=configs, seeds=seeds,
                    time_budget=args.time_budget, threads=args.threads, report=lambda line: print(line, flush=True),
                    preset_name=args.preset)
        results.append(r)
        if args.log:
            with args.log.open("a") as f:
                for config, scores in r.ours.items():
                    for seed, s in zip(seeds, scores, strict=True):
                        f.write(json.dumps({"split": split, "set": r.name, "preset": args.preset, "config": config,
                                            "time_budget": args.time_budget, "overrides":
                                            dict(configs)[config], "seed": seed, "accuracy": s.accuracy,
                                            "macro_f1": s.macro_f1, "seconds": s.seconds, "detail": s.detail,
                                            "baseline_accuracy": r.baseline.accuracy,
                                            "baseline_macro_f1": r.baseline.macro_f1}) + "\n")
    print(f"\n== summary ({split}; mean over seeds) ==")
    for r in results:
        b = r.baseline
        print(f"  {r.name:<5} {'tfidf+lr':<16} acc {b.accuracy:.3f} macroF1 {b.macro_f1:.3f} {b.seconds:5.1f} s")
        for config, scores in r.ours.items():
            acc = statistics.mean(s.accuracy for s in scores)
            f1 = statistics.mean(s.macro_f1 for s in scores)
            sec = statistics.mean(s.seconds for s in scores)
            print(f"  {r.name:<5} {config:<16} acc {acc:.3f} macroF1 {f1:.3f} {sec:5.1f} s  "
                  f"ratio acc {acc / b.accuracy:.3f} F1 {f1 / b.macro_f1:.3f}")
    print(json.dumps({"split": split, "quick": args.quick, "sets": {r.name: {
        "tfidf_lr": {"accuracy": r.baseline.accuracy, "macro_f1": r.baseline.macro_f1},
        **{config: [{"accuracy": s.accuracy, "macro_f1": s.macro_f1, "seconds": s.seconds} for s in scores]
           for config, scores in r.ours.items()}} for r in results}}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
