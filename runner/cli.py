"""``attention-playground``: the engine's command line (:mod:`attention_core.cli`) and what needs the runner.

Adds to it:

* ``attention-playground worker --broker redis://HOST:PORT/N [--slots K] [--device cuda]``: take trainings
  from the shared queue (:mod:`runner.distributed`) and run them on this machine;
* ``attention-playground train CSV --out DIR --broker redis://…``: train on such a worker instead of in this
  process, its progress followed here as today's; ``DIR`` is a folder on storage the workers share, at the same
  path. It exits as a local training does: 0 and the JSON summary once the run is saved; 2 and one line when
  the input is bad or the training could not finish (saying why).

``python -m runner`` is the same program.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
from pathlib import Path

from attention_core import cli as core
from attention_core.errors import ConfigError, InputError

HEARTBEAT_EVERY = 5.0  # seconds between the command's heartbeats to its job (runner.jobs.ORPHAN_AFTER: 90 s)


def extend(parser: argparse.ArgumentParser, commands: dict) -> None:
    sub = parser.commands
    w = sub.add_parser("worker", help="take trainings from a shared queue (Redis) and run them on this machine")
    w.add_argument("--broker", required=True, metavar="redis://HOST:PORT/N",
                   help="the shared queue's Redis (the app's ATTENTION_PLAYGROUND_BROKER)")
    w.add_argument("--slots", type=int, default=1, metavar="K",
                   help="trainings at once (default 1; one per core: each trains on one thread beside the others)")
    w.add_argument("--device", default="cpu", help="cpu (default) or cuda: where this worker's trainings run")
    w.add_argument("--burst", action="store_true", help="exit once the queue is empty (for scripts and tests)")
    train = sub.choices["train"]
    train.add_argument("--broker", metavar="redis://HOST:PORT/N",
                       help="train on a worker of this shared queue (`worker --broker`) and follow it here; --out "
                            "then names a folder on storage the workers share, at the same path")
    local = commands["train"]
    commands["train"] = lambda args: core.train_command(args, into=train_on_broker) if args.broker else local(args)
    commands["worker"] = worker_command


def worker_command(args: argparse.Namespace) -> dict:
    from runner import distributed

    device = core.check_device(args.device)
    print(f"worker: taking trainings from {distributed.shown(args.broker)} ({args.slots} at once, on {device}); "
          "Ctrl-C stops it (a running training is stopped and saved first)", file=sys.stderr)
    distributed.serve(args.broker, slots=args.slots, device=device, burst=args.burst)
    return {"worker": "stopped"}


def train_on_broker(args: argparse.Namespace, out: Path) -> dict:
    """``train --broker``: the training goes to the shared queue, saved by its worker into ``out`` (prepared by
    :func:`attention_core.cli.train_command`); this process shows its progress and its summary."""
    from tqdm import tqdm

    from attention_core.runs import load_run
    from attention_core.training import TrainerSpec
    from runner.distributed import FOUND_DEAD_WITHIN, BrokerBackend, client_for
    from runner.jobs import ORPHAN_AFTER
    from runner.protocol import Command, Ended, EpochDone, Failed, JobRequest, Queued, Restarted, Started, Unheard

    if args.device != "cpu":
        raise ConfigError(f"--device {args.device} does not apply with --broker: the worker's device does",
                          "start the worker with --device cuda")
    client_for(args.broker)  # a wrong URL or an unreachable broker: before the data is read
    model_cfg, train_cfg, dataset, embeddings = core.training_parts(args)
    spec = TrainerSpec(model_cfg, train_cfg, dataset, embeddings)
    spec.check()  # bad settings fail here, not on the worker
    out = out.resolve()
    request = JobRequest(spec, out.parent, args.name or out.name, args.num_threads or 0, ORPHAN_AFTER, 0,
                         out=out, overwrite=args.overwrite)
    try:
        channel = BrokerBackend(args.broker).start(request)
    except RuntimeError as err:
        raise InputError(str(err), "check the broker, then run the command again") from err
    bar = tqdm(total=train_cfg.epochs, unit="epoch", file=sys.stderr, disable=args.quiet, dynamic_ncols=True)
    done = threading.Event()

    def beat() -> None:  # a job with no heartbeat for ORPHAN_AFTER seconds stops itself (this command was killed)
        while not done.wait(HEARTBEAT_EVERY):
            with contextlib.suppress(OSError):  # the broker is unreachable for now: recv says so if it lasts
                channel.send(Command.HEARTBEAT)

    def interrupt(signum: int, frame: object) -> None:  # Ctrl-C: stop cleanly; the worker saves what was learned
        print("\nstopping after this step (Ctrl-C again to leave it training)…", file=sys.stderr)
        try:
            channel.send(Command.STOP)
        except OSError as err:
            print(f"could not ask the worker to stop: {err}", file=sys.stderr)
        signal.signal(signal.SIGINT, signal.default_int_handler)

    def say(message: str) -> None:  # on stderr, between the bar's redraws (tqdm.write's default is stdout)
        tqdm.write(message, file=sys.stderr)

    threading.Thread(target=beat, name="heartbeat", daemon=True).start()
    previous = signal.signal(signal.SIGINT, interrupt)
    try:
        silent = False  # its worker's silence was said (once per silence)
        while True:
            report = channel.recv()
            if silent and not isinstance(report, Unheard):
                silent = False
            match report:
                case Unheard(seconds) if not silent:
                    silent = True
                    say(f"no word from its worker for {seconds:.0f} s: it may have stopped (if so, the queue finds out "
                        f"within about {FOUND_DEAD_WITHIN} s of its last word)")
                case Queued(place):
                    say(f"waiting in line for a worker: place {place}")
                case Started():
                    say("training on a worker")
                case Restarted(message):
                    say(message)
                    bar.reset()
                case EpochDone(rec):
                    post = {"loss": f"{rec.train_loss:.4f}"}
                    if rec.val_loss is not None:
                        post.update(val_loss=f"{rec.val_loss:.4f}", val_acc=f"{rec.val_accuracy:.3f}")
                    bar.set_postfix(post, refresh=False)
                    bar.update(1)
                case Failed(message):
                    raise InputError(message)
                case Ended(status, message, run_path, _):
                    if run_path is None:  # (most such messages say so already)
                        raise InputError(message if "nothing was" in message else f"{message or status}: nothing was saved")
                    bar.close()
                    return core.trained_summary(load_run(run_path), Path(run_path))
    finally:
        done.set()
        bar.close()
        signal.signal(signal.SIGINT, previous)
        channel.close()


def main(argv: list[str] | None = None) -> int:
    return core.main(argv, extend=extend)


if __name__ == "__main__":
    sys.exit(main())
