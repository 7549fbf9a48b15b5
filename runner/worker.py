"""The training processes: a job host that forks one child per training job.

``python -m runner.worker`` is started once by the app server (see :class:`runner.jobs.JobHost`).
It imports torch and ``attention_core`` and maps the GloVe table once, then waits on a Unix
socket (``multiprocessing.connection``, with an auth key). For every connection it forks: the
child reads one :class:`~runner.protocol.JobRequest` (a :class:`~attention_core.training.TrainerSpec`
or a not yet run :class:`~attention_core.Trainer`, the runs folder and the run's name), builds the
trainer, trains it, reports progress on the same connection (the :mod:`runner.protocol`
messages) and saves the run. Forking from this small
single-threaded process starts a job with nothing to import; forking the
Streamlit server itself would copy its threads and state.

The host has no work of its own and exits when the server does (its stdin closes). A job
stops — and saves what it learned — when asked, when its page stops sending heartbeats, or
when its connection to the server breaks.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import select
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection, Listener
from pathlib import Path

from attention_core import Trainer
from attention_core.embeddings import load_embeddings
from attention_core.errors import InputError, RunError
from attention_core.runs import save_new_run, save_run
from attention_core.threads import training_threads
from attention_core.training import EpochRecord, StepEvent, TrainerSpec
from runner.protocol import (
    Command,
    Ended,
    EpochDone,
    Failed,
    Idle,
    JobRequest,
    ProbeRecorded,
    Report,
    Started,
    Stepped,
)

PROGRESS_EVERY = 0.1  # seconds between progress messages (the page redraws every 0.4 s)
log = logging.getLogger("runner.worker")


class _Reporter:
    """Sends the trainer's progress to the page: throttled steps, every epoch and probe record."""

    def __init__(self, trainer: Trainer, conn: Connection,
                 threads: Callable[[StepEvent], object] | None = None) -> None:
        self.trainer, self.conn, self.threads = trainer, conn, threads
        self.lock = threading.Lock()  # the training and the control thread both send
        self.sent_losses = self.sent_probes = 0
        self.last = 0.0
        self.step: StepEvent | None = None

    def send(self, msg: Report) -> None:
        with self.lock, contextlib.suppress(OSError):  # the server is gone; the control thread stops the training
            self.conn.send(msg)

    def flush(self) -> None:
        h, ev = self.trainer.history, self.step
        if ev is not None:
            losses = h.step_losses[self.sent_losses :]
            self.sent_losses += len(losses)
            self.send(Stepped(ev, losses))
        while self.sent_probes < len(h.probes):
            self.send(ProbeRecorded(h.probes[self.sent_probes]))
            self.sent_probes += 1
        self.last = time.monotonic()

    def on_step(self, ev: StepEvent) -> None:
        self.step = ev
        if self.threads is not None:
            self.threads(ev)
        if time.monotonic() - self.last >= PROGRESS_EVERY:
            self.flush()

    def on_epoch(self, rec: EpochRecord) -> None:
        self.send(EpochDone(rec))
        self.flush()


def _control_loop(
    trainer: Trainer, conn: Connection, reporter: _Reporter, orphan_after: float, name: str, ended: threading.Event
) -> None:
    """Carry the page's commands to the trainer; stop it when the page or the server is gone."""
    last_heartbeat, waiting_for_pause = time.monotonic(), False
    while not ended.is_set():
        try:
            command = conn.recv() if conn.poll(0.02 if waiting_for_pause else 0.5) else None
        except (EOFError, OSError):  # the server went away: stop, and the run is saved
            if not ended.is_set():
                log.warning("training job %s lost its server: stopping", name)
                trainer.stop()
            return
        now = time.monotonic()
        if command is not None:
            last_heartbeat = now
        if command is Command.PAUSE:
            trainer.pause()
            waiting_for_pause = True
        elif command is Command.RESUME:
            trainer.resume()
            waiting_for_pause = False
            reporter.send(Idle(False))
        elif command is Command.STOP:
            trainer.stop()
        if waiting_for_pause and trainer.wait_until_paused(0):
            reporter.send(Idle(True))
            waiting_for_pause = False
        if now - last_heartbeat > orphan_after:
            log.warning("training job %s lost its page (no heartbeat for %.0f s): stopping", name, orphan_after)
            trainer.stop()
            last_heartbeat = float("inf")  # say it once


def _save(run, job: JobRequest) -> Path:
    """Save ``run`` where ``job`` says: its ``out`` folder (a run already there only with ``overwrite``; anything
    put there meanwhile: beside it, as ``out-2``…), else a new folder ``runs_dir / name`` (or ``name-2``…)."""
    if job.out is not None:
        try:
            return save_run(run, job.out, overwrite=job.overwrite)
        except RunError:  # something was put into the folder while training: keep the run beside it
            return save_new_run(run, job.out.parent, job.out.name)
    return save_new_run(run, job.runs_dir, job.name)


def run_job(conn: Connection, job: JobRequest | None = None, *, device: str = "cpu") -> None:
    """Train ``job`` (else the one received on ``conn``), report on ``conn``, save. Runs in the forked child.

    ``conn``: a ``multiprocessing`` connection, or anything with its ``send``, ``poll`` and ``recv``
    (:class:`runner.distributed.HorseLine`, a job's line through Redis)."""
    import torch

    if job is None:
        try:
            job = pickle.loads(conn.recv_bytes())  # authenticated: our own server
        except Exception as err:  # e.g. a job this worker's code cannot read
            conn.send(Failed(f"the training process could not read the job: {type(err).__name__}: {err}"))
            return
    trainer, name = job.trainer, job.name  # (the trainer is built below from a spec)
    os.nice(job.nice)
    if isinstance(trainer, TrainerSpec):
        try:
            trainer = trainer.build(device=device)  # tokenizing, encoding, the model: here, not in the server
        except InputError as err:
            conn.send(Failed(f"Cannot start: {err}"))
            return
        except Exception as err:
            log.error("training job %s could not be built:\n%s", name, traceback.format_exc())
            conn.send(Failed(f"Cannot start: {type(err).__name__}: {err}"))
            return
    # Threads 0 (ATTENTION_PLAYGROUND_JOB_THREADS=0): chosen as the command line's `train` chooses (a pretrained
    # encoder's fine-tuning follows the free cores; here it took the small model's trials, which mis-time its steps).
    threads = training_threads(trainer, most=2) if job.threads == 0 else None
    if job.threads:
        torch.set_num_threads(job.threads)
    reporter = _Reporter(trainer, conn, threads)
    reporter.send(Started(os.getpid(), trainer.n_train_rows))
    signal.signal(signal.SIGTERM, lambda *_: trainer.stop())  # asked to end: stop at the next step, and save
    ended = threading.Event()
    threading.Thread(
        target=_control_loop, args=(trainer, conn, reporter, job.orphan_after, name, ended), name="control", daemon=True
    ).start()
    try:
        run = trainer.run(on_step=reporter.on_step, on_epoch=reporter.on_epoch, name=name)
        ended.set()  # what follows is saving: the server closing the connection now is no reason to warn
        reporter.flush()
        path, val_probs = None, None
        if run.history.epochs:  # a run stopped before its first epoch has nothing to keep
            path = _save(run, job)
            if run.validation[0]:  # the results' predictions, made here rather than in the server
                val_probs = run.predict_proba(run.validation[0])
        reporter.send(Ended(run.history.status, run.history.message, path, val_probs))
    except InputError as err:
        reporter.send(Failed(str(err)))
    except Exception as err:  # the page shows the message; the server is not affected
        log.error("training job %s failed:\n%s", name, traceback.format_exc())
        reporter.send(Failed(f"training failed: {type(err).__name__}: {err}"))


def serve(address: str, authkey: bytes) -> None:
    """Accept jobs until stdin closes (the server is gone); fork a child for each."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    with Listener(address, family="AF_UNIX", authkey=authkey) as listener:
        print("ready", flush=True)
        os.dup2(2, 1)  # nobody reads that pipe from now on: anything printed later goes to the server's log
        sock = listener._listener._socket  # private: to wait on it and stdin together
        while True:
            readable, _, _ = select.select([sock, sys.stdin], [], [])
            if sys.stdin in readable and not sys.stdin.buffer.read1(1):
                return  # stdin closed: the server has exited
            if sock not in readable:
                continue
            try:
                conn = listener.accept()
            except (OSError, EOFError) as err:  # a client that failed the handshake
                log.warning("job host: refused a connection: %s", err)
                continue
            if os.fork() == 0:  # the child: one job, then exit without running the host's cleanup
                code = 0
                try:
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    sock.close()
                    run_job(conn)
                except BaseException:
                    traceback.print_exc()
                    code = 1
                finally:
                    conn.close()
                    sys.stdout.flush()
                    sys.stderr.flush()
                    os._exit(code)
            conn.close()


def preload() -> None:
    """What every job needs, loaded once in the process that forks them: torch, the GloVe index and memory map
    (any vocabulary limit reuses them), torch's optimizer machinery.

    torch stays at one thread here and runs no parallel work: a child forked from a process whose OpenMP
    thread pool has started hangs at its own first parallel step (``tests/runner/test_distributed.py``)."""
    import torch

    torch.set_num_threads(1)
    load_embeddings()
    torch.optim.AdamW([torch.zeros(1, requires_grad=True)])  # a process's first optimizer imports torch._dynamo: once, here


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    address = sys.stdin.readline().strip()
    authkey = bytes.fromhex(sys.stdin.readline().strip())
    preload()
    serve(address, authkey)


if __name__ == "__main__":
    main()
