"""The Trainer's optimizer: PyTorch's fused kernels against its multi-tensor loop, side by side (issue 28).

Run from the repository root::

    python benchmarks/optimizer.py          # the figures in benchmarks/README.md (≈ 3 min on 2 cores)
    python benchmarks/optimizer.py --quick  # a smoke run (not figures)

The Trainer builds SGD / Adam / AdamW with ``fused=True`` on a CPU or CUDA device
(``attention_core.training.FUSED_DEVICES``), else with ``foreach=True``; the update is the same
(tests/core/test_training_options.py). Here two presets train as the Trainer trains them, on the UCI
sentences, with each kind of optimizer in turn (alternating, ``--rounds`` rounds, the other kind first
every other round: the machine's speed drifts), 2 torch threads:

* ``default`` — the small model, 3 epochs of the 2,400 training rows;
* ``finetune`` — the pretrained encoder's fine-tuning (the preset's trained parts), 1 epoch of 320 rows.

Reported: training examples per second of training (the history's examples seen ÷ its seconds), per round
and the medians, the speed-up (fused ÷ loop) and the CPU other processes used meanwhile. The last line of
stdout is one JSON object with everything.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse
import json
import statistics
from typing import Any

from attention_core.threads import OtherProcessesCpu

ROOT = Path(__file__).resolve().parents[1]
UCI_CSV = ROOT / "data" / "uci_sentiment_sentences.csv"
KINDS = ("fused", "loop")


def examples_per_s(preset_name: str, kind: str, data: Any, epochs: int, embeddings: Any) -> float:
    """One training of ``preset_name`` on ``data`` with ``kind``'s optimizer."""
    from attention_core import Trainer, preset, training

    model_cfg, train_cfg = preset(preset_name, epochs=epochs, patience=None, snapshots=0, probes=(), num_threads=2)
    saved = training.FUSED_DEVICES
    training.FUSED_DEVICES = saved if kind == "fused" else ()
    try:
        trainer = Trainer(model_cfg, train_cfg, data, None if model_cfg.base else embeddings)
        history = trainer.run().history
    finally:
        training.FUSED_DEVICES = saved
    return history.examples_seen / history.seconds


def compare(preset_name: str, rows: int | None, epochs: int, rounds: int, embeddings: Any) -> dict[str, Any]:
    """``preset_name`` trained on the first ``rows`` UCI sentences (None: all) with each optimizer in turn."""
    from attention_core import load_dataset

    data = load_dataset(UCI_CSV)
    if rows is not None:
        data = data.subset(range(rows))
    out: dict[str, list[float]] = {k: [] for k in KINDS}
    others = OtherProcessesCpu()
    for r in range(rounds):
        for kind in KINDS if r % 2 == 0 else KINDS[::-1]:
            out[kind].append(round(examples_per_s(preset_name, kind, data, epochs, embeddings), 1))
            print(f"  {preset_name} round {r + 1} {kind}: {out[kind][-1]} examples/s", flush=True)
    fused, loop = statistics.median(out["fused"]), statistics.median(out["loop"])
    return {"examples_per_s": {"fused": fused, "loop": loop}, "speedup": round(fused / loop, 3), "rounds": out,
            "other_processes_cores": others()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: one round of a few rows (not figures)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per preset (default 3)")
    args = parser.parse_args(argv)
    from attention_core.embeddings import load_embeddings

    embeddings = load_embeddings()
    rounds = 1 if args.quick else args.rounds
    results = {"quick": args.quick,
               "default": compare("default", 64 if args.quick else None, 1 if args.quick else 3, rounds, embeddings),
               "finetune": compare("finetune", 16 if args.quick else 320, 1, rounds, embeddings)}
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
