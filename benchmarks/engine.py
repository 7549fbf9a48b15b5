"""The shared queue's overhead, side by side with the local job host, on this machine (issue 29).

For each backend — the local job host (``runner.jobs.JobHost``: one server's trainings) and the shared queue
(``runner.distributed``: RQ over a redis-server of its own on a free port, one ``attention-playground worker``
process) — the same small training is submitted ``--rounds`` times, one at a time, each process already warm:

* submit → started: from ``start()`` to the training process's ``Started`` report;
* submit → first step: to its first ``Stepped`` report (the page's first progress);
* submit → ended: the whole training, its run saved;
* report latency (shared queue): a report's arrival at the watcher minus the time Redis stamped it into the job's
  stream (millisecond stamps of the same machine's clock).

Prints one JSON line (the figures); ``--quick``: two rounds, a short training (a smoke run for the tests).

    python benchmarks/engine.py
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _spec(epochs: int):
    from attention_core import ModelConfig, TrainConfig, load_embeddings
    from attention_core.data import load_dataset
    from attention_core.training import TrainerSpec

    embeddings = load_embeddings()
    dataset = load_dataset(ROOT / "data" / "uci_sentiment_sentences.csv", is_known=embeddings.__contains__)
    return TrainerSpec(ModelConfig(), TrainConfig(epochs=epochs, patience=None), dataset, embeddings)


def _one(backend, spec, runs: Path, name: str) -> dict:
    from runner.jobs import ORPHAN_AFTER
    from runner.protocol import Ended, Failed, JobRequest, Started, Stepped

    t0 = time.perf_counter()
    channel = backend.start(JobRequest(spec, runs, name, 1, ORPHAN_AFTER, 0))
    started = first_step = None
    latencies = []
    while True:
        report = channel.recv()
        now = time.perf_counter()
        stamp = getattr(channel, "_last", None)  # the shared queue: the Redis stream entry's "ms-seq" id
        if isinstance(stamp, str | bytes) and not isinstance(report, Started):
            ms = int((stamp.decode() if isinstance(stamp, bytes) else stamp).split("-")[0])
            latencies.append(time.time() * 1000 - ms)
        if isinstance(report, Started) and started is None:
            started = now - t0
        elif isinstance(report, Stepped) and first_step is None:
            first_step = now - t0
        elif isinstance(report, Ended | Failed):
            assert isinstance(report, Ended) and report.run_path is not None, report
            channel.close()
            return {"started_s": started, "first_step_s": first_step, "ended_s": now - t0, "latency_ms": latencies}


def _summary(rounds: list[dict]) -> dict:
    out = {key: round(statistics.median(r[key] for r in rounds), 3) for key in ("started_s", "first_step_s", "ended_s")}
    latencies = sorted(ms for r in rounds for ms in r["latency_ms"])
    if latencies:
        out["report_latency_ms_median"] = round(statistics.median(latencies), 1)
        out["report_latency_ms_p95"] = round(latencies[int(0.95 * (len(latencies) - 1))], 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="two rounds of one epoch (a smoke run, not figures)")
    args = parser.parse_args()
    rounds, epochs = (2, 1) if args.quick else (args.rounds, args.epochs)

    from runner.distributed import BrokerBackend
    from runner.jobs import JobHost
    from tests.helpers.broker import RedisServer, Worker

    spec = _spec(epochs)
    figures: dict = {"quick": args.quick, "rounds": rounds, "epochs": epochs, "rows": len(spec.dataset)}
    with tempfile.TemporaryDirectory(prefix="engine-bench-") as tmp:
        folder = Path(tmp)
        host = JobHost.get()
        _one(host, spec, folder, "warm-local")  # the host's first job: torch and GloVe loaded
        figures["local"] = _summary([_one(host, spec, folder, f"local-{i}") for i in range(rounds)])
        host.close()
        broker = RedisServer(folder)
        worker = Worker(broker.url, folder).wait_ready()
        try:
            backend = BrokerBackend(broker.url)
            _one(backend, spec, folder, "warm-queue")
            figures["shared_queue"] = _summary([_one(backend, spec, folder, f"queue-{i}") for i in range(rounds)])
        finally:
            worker.stop()
            broker.stop()
    local, queue = figures["local"], figures["shared_queue"]
    figures["overhead_s"] = {key: round(queue[key] - local[key], 3) for key in ("started_s", "first_step_s", "ended_s")}
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
