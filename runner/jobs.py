"""A training job: a ``Trainer`` trained in its own process, watched by a browser session.

The page checks its settings (:meth:`~attention_core.training.TrainerSpec.check`: a bad one
fails at once, with its hint) and hands a :class:`~attention_core.training.TrainerSpec` to a
:class:`TrainingJob`, which sends it to a process forked by the job host (:mod:`runner.worker`:
torch, ``attention_core`` and GloVe already loaded, so a job imports nothing); that
process builds the :class:`~attention_core.Trainer` (tokenizing and encoding the data, work
that the server, busy with every learner's page, does not do). A built ``Trainer`` is
accepted too. Why a process: a training thread inside the Streamlit server would hold the
GIL for most of each step, so the server's event loop (page updates, health checks, other
sessions) would wait behind it (figures: benchmarks/README.md).

The messages on the job's connection are the dataclasses of :mod:`runner.protocol`: a
``JobRequest``, then ``Command`` values from the page; ``Started``, ``Stepped`` (at most every
0.1 s), ``EpochDone``, ``ProbeRecorded``, ``Idle`` and last ``Ended`` or ``Failed`` from the job.
The validation predictions are made by the job's process, so that jobs ending at once do
not keep the server busy with them.

A thread in the server (one per job, asleep in ``recv``) appends the trainer's records to the job's
:class:`~attention_core.history.History` (the class a saved run has) and keeps its latest step; the
page's fragment polls :meth:`TrainingJob.status` every 0.4 s and draws the history (slower while many jobs run,
see :func:`live_refresh_seconds`). Every poll is a heartbeat, and so is every few seconds of any
other page of the same tab (the app's ``ui.background``): a job whose tab was closed (no heartbeat for
``orphan_after`` seconds) stops itself, and so does a job whose server went away.
Every finished, stopped or diverged job saves its run to disk before it ends, so nothing
trained is lost.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import logging
import math
import os
import pickle
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Client, Connection
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from attention_core import ModelConfig, Run, Trainer, load_run
from attention_core.errors import InputError
from attention_core.history import History, StepEvent
from attention_core.run_folders import JournalEntry, remove_journal_entry, write_journal_entry
from attention_core.training import TrainConfig, TrainerSpec
from runner.protocol import (
    Command,
    Ended,
    EpochDone,
    Failed,
    Idle,
    JobChannel,
    JobRequest,
    ProbeRecorded,
    Queued,
    Report,
    Restarted,
    Started,
    Stepped,
    TrainingBackend,
    Unheard,
)
from runner.queue import Ticket, TrainingQueue

if TYPE_CHECKING:
    from runner.distributed import Described

# Seconds without a heartbeat before a job stops itself (room for heartbeats delayed by a busy server;
# benchmarks/README.md). The
# page watching a job sends them, and the app's other pages do too (ui.background).
ORPHAN_AFTER = float(os.environ.get("ATTENTION_PLAYGROUND_ORPHAN_AFTER", 90))
HEARTBEAT_EVERY = 1.0  # the page sends at most one heartbeat a second
KEEPALIVE_EVERY = min(5.0, ORPHAN_AFTER / 4)  # seconds between heartbeats from a page not watching the job
HOST_START_TIMEOUT = 120.0  # importing torch on a busy machine
# Torch threads per training job. 1: beside a browser drawing the live view, or beside other
# learners' jobs, two OpenMP threads collapse. 0 = choose by measuring while training
# (attention_core.threads.training_threads, as the CLI), faster for a lone unwatched job. Measured in benchmarks/README.md.
JOB_THREADS = int(os.environ.get("ATTENTION_PLAYGROUND_JOB_THREADS", 1))
# Scheduling priority of the training processes (nice). 0: at a higher nice the learners' browsers
# starve the trainings and the server answers no faster (benchmarks/README.md).
JOB_NICE = int(os.environ.get("ATTENTION_PLAYGROUND_JOB_NICE", 0))
# Seconds of training before a job's pace counts for the queue's wait estimate: its first steps are
# few and slower (warm-up), and a pace taken from them overestimates the time left.
PACE_AFTER = 1.0
# Seconds between redraws of a watched job's live view while at most FULL_RATE_JOBS jobs train
# on this server (2.5 a second); see live_refresh_seconds.
LIVE_REFRESH = 0.4
FULL_RATE_JOBS = 2
ROOT = Path(__file__).resolve().parents[1]
log = logging.getLogger(__name__)
_active_jobs = 0  # jobs of this server started and not yet ended, all sessions together
_active_lock = threading.Lock()
_journaled: set[str] = set()  # journal entry ids of this server's jobs that have not ended


NO_WORKER = ("no worker takes trainings from the shared queue right now: it starts when one does (whoever runs the "
             "server can start one: attention-playground worker)")


def active_jobs() -> int:
    """How many training jobs this server is running now (all sessions)."""
    return _active_jobs


def live_journal_ids() -> frozenset[str]:
    """The journal entries (:class:`~attention_core.run_folders.JournalEntry`) of this server's jobs that have
    not ended: any other entry in a runs folder is a training that a server restart interrupted."""
    with _active_lock:
        return frozenset(_journaled)


def live_refresh_seconds(jobs: int | None = None) -> float:
    """Seconds between redraws of a live training view, given how many jobs the server runs.

    0.4 s while at most two jobs train; with more, the interval grows in steps (0.8 s for three
    or four jobs, 1.2 s for five or six…), so all live views together redraw about five times a
    second. Each redraw is a script run on the server and work for the watching browser; what
    the slower pace buys: benchmarks/README.md.
    """
    n = active_jobs() if jobs is None else jobs
    return LIVE_REFRESH * max(1, math.ceil(n / FULL_RATE_JOBS))


class JobHost:
    """The ``python -m runner.worker`` process that forks the training jobs; one per server."""

    COMMAND = (sys.executable, "-m", "runner.worker")
    _lock = threading.Lock()
    _current: JobHost | None = None

    def __init__(self) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="attention-jobs-")
        self.address = str(Path(self._dir.name) / "host.sock")
        self.authkey = secrets.token_bytes(32)
        self.process = subprocess.Popen(
            self.COMMAND, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            start_new_session=True,  # Ctrl+C in the server's terminal is the server's to handle
        )
        self.process.stdin.write(f"{self.address}\n{self.authkey.hex()}\n".encode())
        self.process.stdin.flush()  # stdin stays open: the host exits when it closes (with this server)
        self.started = False
        self._answered = threading.Event()  # the host said "ready", or its output ended
        threading.Thread(target=self._wait_ready, name="job-host-start", daemon=True).start()

    def _wait_ready(self) -> None:
        self.started = self.process.stdout.readline().strip() == b"ready"
        self._answered.set()

    @classmethod
    def get(cls) -> JobHost:
        """The running host, started (again) if needed."""
        with cls._lock:
            if cls._current is None or cls._current.process.poll() is not None:
                cls._current = JobHost()
            return cls._current

    def start(self, request: JobRequest) -> Connection:
        """The :class:`~runner.protocol.TrainingBackend` call: a new training process for ``request``,
        and its line (a ``multiprocessing`` connection: ``send`` commands, ``recv`` reports)."""
        conn = self.connect()
        # Plain pickle, not Connection.send: torch registers tensor reductions with
        # multiprocessing's pickler that pass file descriptors, which a process the job
        # host forked cannot receive. This copies the (small) tensors instead.
        conn.send_bytes(pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL))
        return conn

    def connect(self) -> Connection:
        if not self._answered.wait(HOST_START_TIMEOUT):
            raise RuntimeError(f"the training process host did not start within {HOST_START_TIMEOUT:.0f} s")
        if not self.started or self.process.poll() is not None:
            try:
                code = self.process.wait(5)
            except subprocess.TimeoutExpired:
                code = None
            raise RuntimeError(
                f"the training process host failed to start (exit code {code}) — the server's log has its error"
            )
        return Client(self.address, family="AF_UNIX", authkey=self.authkey)

    def close(self) -> None:
        self.process.stdin.close()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self._dir.cleanup()


@atexit.register
def _close_host() -> None:
    if JobHost._current is not None:
        JobHost._current.close()


def default_backend() -> TrainingBackend:
    """Where a job trains unless told: the shared queue of ``ATTENTION_PLAYGROUND_BROKER`` when it is set
    (:mod:`runner.distributed`), else this machine's job host."""
    return shared_backend() or JobHost.get()


def shared_backend() -> TrainingBackend | None:
    """The shared queue of ``ATTENTION_PLAYGROUND_BROKER`` when it is set, else None (without waiting for anything:
    :func:`default_backend`'s job host may have to start)."""
    from runner.distributed import BrokerBackend, broker_url

    url = broker_url()
    return BrokerBackend(url) if url else None


def warm_up() -> None:
    """Start the job host now, so the first Start click does not wait for torch to import (with a shared queue
    the workers train, and this server starts no job host)."""
    from runner.distributed import broker_url

    if broker_url() is None:
        JobHost.get()


@dataclass(frozen=True)
class JobStatus:
    """Where a job is, copied under its lock; what it recorded is its ``history`` (not copied: its lists only
    grow, and ``epochs_recorded`` / ``steps_recorded`` are their lengths as of this status)."""

    state: str  # waiting | starting | running | paused | finished | stopped | diverged | time budget | failed | cancelled
    epochs: int  # planned
    progress: float  # 0 … 1 (see _fraction_done)
    step: StepEvent | None = None  # the latest
    epochs_recorded: int = 0
    steps_recorded: int = 0
    message: str = ""
    run_path: Path | None = None
    done: bool = False
    eta_seconds: float | None = None
    place: int | None = None  # while waiting: 1 = next to start
    wait_seconds: float | None = None  # while waiting: about how long until it starts (None: unknown)
    unheard_seconds: float | None = None  # on a shared queue: how long its worker has been silent (it may have died)

    @property
    def epoch(self) -> int:
        return self.step.epoch if self.step is not None else 0

    @property
    def examples_per_second(self) -> float:
        return self.step.examples_seen / self.step.seconds if self.step is not None and self.step.seconds > 0 else 0.0


def _fraction_done(step: StepEvent | None, epochs: int, state: str) -> float:
    """How far a job is, 0 … 1, from the epoch its latest step is in and its place in that epoch.

    Full only for a job that trained all its epochs: one stopped (by the learner, its time
    budget, a divergence) stays where it stopped.
    """
    if state == "finished":
        return 1.0
    if epochs == 0 or step is None:
        return 0.0
    inner = step.step_in_epoch / step.steps_per_epoch if step.steps_per_epoch else 0.0
    return min(1.0, (max(step.epoch - 1, 0) + inner) / epochs)


@dataclass(frozen=True)
class _Described:
    """What a job started elsewhere is, for :meth:`TrainingJob.attach`: its configs, no trainer."""

    model_config: ModelConfig
    train_config: TrainConfig


@dataclass
class TrainingJob:
    """Train ``trainer`` in a child process; save the run under ``runs_dir / name`` (never overwriting).

    ``trainer``: a :class:`TrainerSpec` (built by the child) or a built :class:`Trainer`.
    """

    trainer: Trainer | TrainerSpec | None  # handed to the child on start(); None afterwards (it trains over there)
    runs_dir: Path
    name: str
    orphan_after: float = ORPHAN_AFTER
    threads: int = JOB_THREADS  # 0 = chosen while training (attention_core.threads.training_threads)
    on_end: Callable[[TrainingJob], None] | None = None  # called in the server once the job has ended
    backend: Callable[[], TrainingBackend] | None = None  # where it trains; None: default_backend()
    listing: dict | None = None  # a page's job: workspace, job_key, label, page (found by other app servers of a shared queue)
    job_id: str = field(default_factory=lambda: secrets.token_hex(8))  # its id on a shared queue (runner.distributed)
    state: str = "starting"
    message: str = ""
    run_path: Path | None = None
    run: Run | None = None
    pid: int | None = None  # the training process, once it has started
    validation_probs: np.ndarray | None = None  # the saved run's predictions for its validation rows (N, C)
    train_config: TrainConfig = field(init=False)
    model_config: ModelConfig = field(init=False)  # the model it trains (its attention maps' names and shapes)
    n_train_rows: int = field(init=False)  # 0 until the child has built a TrainerSpec's trainer
    history: History = field(default_factory=History)  # the trainer's records as they arrive (appended under _lock)
    _step: StepEvent | None = None  # the trainer's latest
    _paused: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _send_lock: threading.Lock = field(default_factory=threading.Lock)
    _idle: threading.Event = field(default_factory=threading.Event)
    _last_heartbeat: float = 0.0
    _reader: threading.Thread | None = None
    _conn: Connection | None = None
    _stop_asked: bool = False
    _queued: tuple[int, float | None] | None = None  # its place in a shared queue and the wait said, while there
    restarts: int = 0  # times its worker died and the shared queue started it again (runner.distributed)
    _unheard: tuple[float, float] | None = None  # its worker's silence as last said (seconds, when: time.monotonic())
    _ticket: Ticket | None = None  # its place in the server's queue, when submitted there
    _finished: threading.Event = field(default_factory=threading.Event)  # set once it has ended or was cancelled
    journal: JournalEntry | None = None  # its entry in runs_dir's journal until it ends (a page's job, see submit)
    started_at: float | None = None  # time.monotonic() when it was handed to a process
    ended_at: float | None = None  # time.monotonic() when it ended (its run saved, or not): a page's measure of it

    def __post_init__(self) -> None:
        self.train_config = self.trainer.train_config
        self.model_config = self.trainer.model_config
        self.n_train_rows = self.trainer.n_train_rows if isinstance(self.trainer, Trainer) else 0

    # -- control (called from the page) -------------------------------------------------------
    def submit(self, queue: TrainingQueue, owner: str, *, page: str | None = None, dataset: str = "") -> None:
        """Wait for a slot in ``queue`` (state "waiting"), then :meth:`start`; its slot is freed when it
        ends. Raises :class:`~runner.queue.QueueLimitError` if ``owner`` has a training running and one waiting.

        ``page``: the url_path of the page submitting it, which journals it in ``runs_dir`` (with the name
        of its ``dataset``) until it ends, so that a server restart does not lose sight of it."""
        self.state, self._last_heartbeat = "waiting", time.monotonic()
        if page is not None:
            self._write_journal(JournalEntry.new(self.name, page, dataset))
        try:
            self._ticket = queue.submit(owner, self._launch, label=self.name, remaining=self._time_left,
                                        expected=self.train_config.time_budget, ref=self.job_id)
        except InputError:
            self.state = "starting"
            self._remove_journal()
            raise

    def _launch(self, ticket: Ticket) -> None:
        """Its turn in the queue: start, unless its page has been gone for ``orphan_after`` seconds."""
        if time.monotonic() - self._last_heartbeat > self.orphan_after:
            log.warning("training job %s lost its page while waiting: not started", self.name)
            self._cancelled("not started: its page was closed while it waited")
            ticket.done()
            return
        if self.journal is not None:
            self._write_journal(self.journal.running())
        self.start()

    def _cancelled(self, message: str) -> None:
        with self._lock:
            self.state, self.message = "cancelled", message
        self.trainer = None
        self._remove_journal()
        self._finished.set()

    def _write_journal(self, entry: JournalEntry) -> None:
        """Journal ``entry`` (counted live first: a page never sees it as interrupted). Best effort: a
        runs folder that cannot take it is logged, and the training goes on."""
        with _active_lock:
            _journaled.add(entry.id)
        try:
            write_journal_entry(self.runs_dir, entry)
        except (OSError, InputError) as err:
            log.warning("training job %s: its journal entry could not be written: %s", self.name, err)
        self.journal = entry

    def _remove_journal(self) -> None:
        entry, self.journal = self.journal, None
        if entry is None:
            return
        try:
            remove_journal_entry(self.runs_dir, entry.id)
        except OSError as err:
            log.warning("training job %s: its journal entry could not be removed: %s", self.name, err)
        with _active_lock:
            _journaled.discard(entry.id)

    def _time_left(self) -> float | None:
        """Seconds of training left at its pace so far, for the queue's wait estimate; None before it
        has trained ``PACE_AFTER`` seconds (the queue then guesses from its budget or recent durations)."""
        with self._lock:
            return self._eta() if self._step is not None and self._step.seconds >= PACE_AFTER else None

    def _eta(self) -> float | None:
        step = self._step
        if step is None or step.seconds <= 0 or step.examples_seen <= 0:
            return None
        total = self.train_config.epochs * self.n_train_rows
        return max(0.0, (total - step.examples_seen) * step.seconds / step.examples_seen) if total else None

    def start(self) -> None:
        """Hand the trainer to a new process; returns at once (the connection is made in the background)."""
        self.state = "starting"  # "running" once the process says it has started
        self._last_heartbeat = self.started_at = time.monotonic()
        self._watch_in_background(self.request())

    def request(self) -> JobRequest:
        """What a training process is handed for this job, once: the trainer goes with it (None here from now on)."""
        job = JobRequest(self.trainer, self.runs_dir, self.name, self.threads, self.orphan_after, JOB_NICE,
                         journal=self.journal.id if self.journal is not None else None, listing=self.listing,
                         job_id=self.job_id)
        self.trainer = None
        return job

    @classmethod
    def attach(cls, described: Described, channel: JobChannel, *,
               on_end: Callable[[TrainingJob], None] | None = None) -> TrainingJob:
        """A job submitted by another app server of the shared queue, watched here through ``channel`` (its reports
        from the first): a reload of its page on this server finds it, running or ended."""
        job = cls(_Described(described.model_config, described.train_config), described.runs_dir, described.name,
                  listing=described.listing, job_id=described.job_id, on_end=on_end)
        job.trainer = None
        if described.journal is not None:
            with _active_lock:
                _journaled.add(described.journal)  # live: its worker removes the entry when it ends (and so do we)
            job.journal = dataclasses.replace(JournalEntry.new(described.name, "", ""), id=described.journal)
        job.follow(channel)
        return job

    def follow(self, channel: JobChannel) -> None:
        """Watch a job that was started elsewhere (another app server of a shared queue) through ``channel``, which
        replays its reports from the first; returns at once."""
        self.state = "starting"
        self._last_heartbeat = self.started_at = time.monotonic()
        self._watch_in_background(channel)

    def _watch_in_background(self, job: JobRequest | JobChannel) -> None:
        global _active_jobs
        with _active_lock:
            _active_jobs += 1  # until _watch_counted ends
        self._reader = threading.Thread(target=self._watch_counted, args=(job,), name=f"watch-{self.name}", daemon=True)
        self._reader.start()

    def _send(self, command: Command) -> None:
        with self._send_lock:
            if self._conn is None or self.done:
                return  # not connected yet: _watch sends what was asked once it is
            with contextlib.suppress(OSError):  # the process just ended; its last message says how
                self._conn.send(command)

    def pause(self) -> None:
        self._paused = True  # status() reads "paused" from this while the job runs
        self._send(Command.PAUSE)

    def resume(self) -> None:
        self._paused = False
        self._idle.clear()
        self._send(Command.RESUME)

    def stop(self) -> None:
        """Stop it (its run is kept); one still waiting in the queue leaves it and never starts."""
        if self._ticket is not None and self._ticket.cancel():
            self._cancelled("cancelled before it started — nothing was trained or saved")
            return
        self._stop_asked = True
        self._send(Command.STOP)

    def heartbeat(self) -> None:
        now = time.monotonic()
        if now - self._last_heartbeat >= HEARTBEAT_EVERY:
            self._last_heartbeat = now
            self._send(Command.HEARTBEAT)

    @property
    def paused(self) -> bool:
        """Pause was asked for (the process stops stepping at its next batch)."""
        return self._paused

    def wait_until_paused(self, timeout: float | None = None) -> bool:
        """Block until the process reports it has stopped stepping after :meth:`pause`."""
        return self._idle.wait(timeout)

    def run_renamed(self, path: Path) -> None:
        """The run this job saved now lives at ``path`` (renamed from the runs list)."""
        with self._lock:
            self.run_path = path

    def join(self, timeout: float | None = None) -> None:
        """Wait until it has ended (also while it waits in the queue); at once if it was never started."""
        if self._reader is not None or self._ticket is not None:
            self._finished.wait(timeout)

    @property
    def alive(self) -> bool:
        """Waiting in the queue, starting or training."""
        return (self._reader is not None or self._ticket is not None) and not self._finished.is_set()

    @property
    def done(self) -> bool:
        return self._finished.is_set()

    # -- the watcher thread (in the server) ---------------------------------------------------
    def _watch_counted(self, job: JobRequest | JobChannel) -> None:
        global _active_jobs
        try:
            self._watch(job)
        finally:
            with _active_lock:
                _active_jobs -= 1
            self._remove_journal()  # it ended in this server (its run saved, or not): nothing was interrupted
            if self._ticket is not None:
                self._ticket.done()  # its slot goes to the next in line
            self.ended_at = time.monotonic()
            if self.on_end is not None:
                try:
                    self.on_end(self)
                except Exception:
                    log.exception("training job %s: its on_end callback failed", self.name)
            self._finished.set()

    def _watch(self, job: JobRequest | JobChannel) -> None:
        """Connect to a new job process, send it the job (or take the line of a job started elsewhere), then fold
        its messages into this object."""
        ended = False
        try:
            conn = (self.backend or default_backend)().start(job) if isinstance(job, JobRequest) else job
        except (OSError, RuntimeError) as err:
            log.error("training job %s could not start: %s", self.name, err)
            with self._lock:
                self.state, self.message = "failed", f"the training process could not start: {err}"
            return
        del job
        with self._send_lock:
            self._conn = conn
            if self._stop_asked:  # asked for before the connection was there
                conn.send(Command.STOP)
            elif self._paused:
                conn.send(Command.PAUSE)
        try:
            while not ended:
                ended = self._take(conn.recv())
        except (EOFError, OSError):
            pass
        with self._send_lock:
            conn.close()
        if self.run_path is not None:
            try:
                self.run = load_run(self.run_path)
            except InputError as err:
                with self._lock:
                    self.state, self.message = "failed", f"the run was saved but cannot be read back: {err}"
        elif not ended:
            log.error("training job %s: its process ended without a result", self.name)
            with self._lock:
                self.state = "failed"
                self.message = (
                    "the training process ended unexpectedly — if the machine is short of memory, try a smaller "
                    "model or batch size; the server log has details"
                )

    def _take(self, report: Report) -> bool:
        """Fold one report of the training process into this job; True for its last."""
        if isinstance(report, Idle):
            self._idle.set() if report.paused else self._idle.clear()
            return False
        with self._lock:
            self._unheard = None
            match report:
                case Unheard(seconds):  # its worker may have died (a shared queue's watcher says so)
                    self._unheard = (seconds, time.monotonic())
                case Queued(place, wait, workers):  # waiting in a shared queue (runner.distributed)
                    self._queued = (place, wait)
                    if self.state == "running":  # back in line: the queue found its worker dead
                        self.message = "its worker stopped: it waits in line to start again on another worker"
                    elif workers == 0:
                        self.message = NO_WORKER
                    elif self.message == NO_WORKER:
                        self.message = ""
                    if self.state in ("starting", "running"):
                        self.state = "waiting"
                case Restarted(message):  # its worker died: it trains again from the start on another one
                    self._step, self.pid, self._queued = None, None, None
                    self.history.step_losses.clear()
                    self.history.epochs.clear()
                    self.history.probes.clear()
                    self.history.seconds = self.history.examples_seen = 0
                    self.state, self.message = "starting", message
                    self.restarts += 1
                case Started(pid, rows):
                    self.pid, self.n_train_rows = pid, rows
                    if self.state in ("starting", "waiting"):
                        self.state = "running"
                case Stepped(event, losses):
                    self._step = event
                    self.history.step_losses.extend(losses)
                    self.history.seconds, self.history.examples_seen = event.seconds, event.examples_seen
                case EpochDone(record):
                    self.history.epochs.append(record)
                case ProbeRecorded(record):
                    self.history.probes.append(record)
                case Ended():
                    self.state, self.message = report.status, report.message
                    self.history.status, self.history.message = report.status, report.message
                    self.run_path, self.validation_probs = report.run_path, report.validation_probs
                    return True
                case Failed(message):
                    self.state, self.message = "failed", message
                    return True
        return False

    def _state(self) -> str:
        return "paused" if self.state == "running" and self._paused else self.state

    def status(self) -> JobStatus:
        """Where the job is now (its records: :attr:`history`, up to the lengths this gives)."""
        ticket = self._ticket
        waiting = ticket is not None and ticket.state == "waiting"
        place, wait = (ticket.place, ticket.wait_seconds) if waiting else (None, None)
        with self._lock:
            if self.state == "waiting" and self._queued is not None:  # in a shared queue: its place there
                place, wait = self._queued
            state, step, done, h = self._state(), self._step, self.done, self.history
            epochs = self.train_config.epochs
            unheard = None
            if self._unheard is not None and state in ("running", "paused", "starting"):
                unheard = self._unheard[0] + time.monotonic() - self._unheard[1]
            return JobStatus(state, epochs, _fraction_done(step, epochs, state), step, len(h.epochs),
                             len(h.step_losses), self.message, self.run_path, done, None if done else self._eta(),
                             place, wait, unheard)


class JobSequence:
    """Trainings that run one after the other, each started by the end of the one before it.

    The next job is started from the server's watcher thread, not by a page, so the sequence goes
    on while the learner reads another page. One at a time keeps a core free for the server and
    the browser. Heartbeats go to the job that is training; a sequence that has had none for
    ``orphan_after`` seconds (its tab was closed) starts nothing more.

    With a shared queue (a backend with ``start_sequence``: :class:`runner.distributed.BrokerBackend`) the
    trainings go to it all at once when the sequence's turn comes, each to start when the one before it has
    ended, and are listed under ``listing``'s page: the sequence goes on if this app server stops, and another
    one adopts it (:meth:`attach`). Every job is then in :attr:`jobs` from the start, waiting its turn.

    Example:
        >>> seq = JobSequence([("a", spec_a), ("b", spec_b)], runs_dir)  # doctest: +SKIP
        >>> seq.start()  # doctest: +SKIP
    """

    def __init__(self, items: Sequence[tuple[str, TrainerSpec]], runs_dir: Path, *,
                 orphan_after: float = ORPHAN_AFTER, threads: int = JOB_THREADS,
                 backend: Callable[[], TrainingBackend] | None = None, listing: dict | None = None) -> None:
        self.runs_dir, self.orphan_after, self.threads = runs_dir, orphan_after, threads
        self.backend, self.listing = backend, listing
        self.job_id = secrets.token_hex(8)  # its first job's id on a shared queue (the sequence's, to its queue)
        self.shared = False  # its jobs went to a shared queue together
        self._ended: set[str] = set()  # ids of its jobs on a shared queue that have ended (_member_ended)
        self._jobs: dict[str, TrainingJob] = {}  # started so far, in order (grown by watcher threads)
        self.error: str | None = None  # why the sequence ended early, if a job could not start
        self._queue = list(items)
        self._lock = threading.Lock()
        self._last_heartbeat = time.monotonic()
        self._ticket: Ticket | None = None  # its place in the server's queue, when submitted there
        self._wake = threading.Event()  # set when a job starts or the sequence ends (for join)

    def start(self) -> None:
        self._last_heartbeat = time.monotonic()
        if not self._start_shared():
            self._next()

    def submit(self, queue: TrainingQueue, owner: str) -> None:
        """Train through ``queue``: one training of ``owner``, each of its jobs waiting its turn (after
        a job the sequence goes to the end of the line). Raises QueueLimitError like a job's submit."""
        self._last_heartbeat = time.monotonic()
        self._ticket = queue.submit(owner, self._launch, label="sequence", remaining=self._time_left, ref=self.job_id)

    def _time_left(self) -> float | None:
        job = self.current
        return job._time_left() if job is not None else None

    def _launch(self, ticket: Ticket) -> None:
        if self._start_shared():
            if not self.alive:  # none could be submitted
                ticket.done()
            return  # (else its slot is given back when its last job ends: _member_ended)
        if not self._start_next():
            ticket.done()  # nothing more to start (stopped, orphaned, or its next job cannot start)
            self._wake.set()

    def _start_shared(self) -> bool:
        """With a shared queue: check every training, then submit those before the first that cannot start, all
        at once; True (else, False: nothing done, the trainings are started here one by one)."""
        # (not default_backend(): on this machine that waits for the job host, in the page's thread)
        backend = (self.backend or shared_backend)()
        start_sequence = getattr(backend, "start_sequence", None)
        if start_sequence is None:
            return False
        self.shared = True
        with self._lock:
            items = list(self._queue)
        members: list[TrainingJob] = []
        for key, spec in items:
            try:
                spec.check()
            except InputError as err:
                with self._lock:
                    self.error = f"{key} cannot start: {err}"
                break
            members.append(TrainingJob(spec, self.runs_dir, key, orphan_after=self.orphan_after, threads=self.threads,
                                       on_end=self._member_ended, job_id=secrets.token_hex(8) if members else self.job_id))
        try:
            channels = start_sequence([job.request() for job in members], self.listing) if members else []
        except RuntimeError as err:
            log.error("job sequence could not be submitted: %s", err)
            with self._lock:
                self.error, self._queue = f"the training queue could not take them: {err}", []
            self._wake.set()
            return True
        with self._lock:
            self._jobs = {job.name: job for job in members}
            self._queue = []
        for job, channel in zip(members, channels, strict=True):
            job.follow(channel)
        self._wake.set()
        return True

    def _member_ended(self, ended: TrainingJob) -> None:
        """One of a shared sequence's jobs ended (called once per job, from its watcher thread): after the last, the
        sequence's turn in this server's queue ends. Counted, not read from the jobs' states: two ending at once
        would each see the other not done yet, and the turn would never end."""
        with self._lock:
            self._ended.add(ended.job_id)
            last = len(self._ended) == len(self._jobs)
        if last and self._ticket is not None:
            self._ticket.done()
        self._wake.set()

    @classmethod
    def attach(cls, members: Sequence[tuple[Described, JobChannel]]) -> JobSequence:
        """A sequence that another app server submitted to the shared queue (its jobs' descriptions and lines, in
        order), watched here: a reload of its page on this server finds it."""
        first = members[0][0]
        seq = cls([], first.runs_dir, listing=first.listing)
        seq.job_id, seq.shared = first.job_id, True
        jobs = [TrainingJob.attach(described, channel, on_end=seq._member_ended) for described, channel in members]
        with seq._lock:
            seq._jobs = {job.name: job for job in jobs}
        return seq

    @property
    def job_ids(self) -> list[str]:
        """Its jobs' ids on a shared queue, in order (empty unless :attr:`shared`)."""
        return [job.job_id for job in self.jobs.values()] if self.shared else []

    def _next(self, _ended: TrainingJob | None = None) -> None:
        """Start the next job: at once, or through the queue (its slot goes back to the end of the line)."""
        ticket = self._ticket
        if ticket is None:
            self._start_next()
            self._wake.set()
            return
        with self._lock:
            more = bool(self._queue)
        ticket.requeue() if more else ticket.done()
        self._wake.set()

    def _start_next(self) -> bool:
        """Start the first training not started yet; False if none was started."""
        with self._lock:
            if not self._queue:
                return False
            if time.monotonic() - self._last_heartbeat > self.orphan_after:
                log.warning("job sequence lost its page: %d trainings not started", len(self._queue))
                self._queue.clear()
                return False
            key, spec = self._queue[0]  # (stays queued while checked: the sequence is still alive)
        try:
            spec.check()  # tokenizes up to thousands of rows: not while the page's polls wait for the lock
        except InputError as err:
            with self._lock:
                self.error = f"{key} cannot start: {err}"
                self._queue.clear()
            return False
        with self._lock:
            if not self._queue or self._queue[0][0] != key:  # stopped meanwhile
                return False
            self._queue.pop(0)
            job = self._jobs[key] = TrainingJob(spec, self.runs_dir, key, orphan_after=self.orphan_after,
                                               threads=self.threads, on_end=self._next)
        job.start()
        self._wake.set()
        return True

    @property
    def jobs(self) -> dict[str, TrainingJob]:
        """The jobs started so far, in order (a copy: the next one is added from another thread)."""
        with self._lock:
            return dict(self._jobs)

    @property
    def queued(self) -> list[str]:
        """Keys of the trainings not started yet."""
        with self._lock:
            return [key for key, _ in self._queue]

    @property
    def current(self) -> TrainingJob | None:
        """The job training now, if any."""
        return next((j for j in self.jobs.values() if j.alive), None)  # (self.jobs: a copy)

    @property
    def alive(self) -> bool:
        with self._lock:
            return bool(self._queue) or any(j.alive for j in self._jobs.values())

    @property
    def done(self) -> bool:
        return not self.alive

    def join(self, timeout: float | None = None) -> bool:
        """Wait until every training has ended or will not start; False if ``timeout`` ran out first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.done:  # a job that has ended starts (or queues) the next one before it counts as done
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            self._wake.clear()
            if (job := self.current) is not None:
                job.join(left)
            else:
                self._wake.wait(left)  # its next job waits for a slot in the queue, or is being checked
            if deadline is not None and time.monotonic() >= deadline:
                break
        return self.done

    @property
    def waiting(self) -> bool:
        """Its next job waits for its turn in the queue."""
        if self.shared:
            job = self.current
            return job is not None and job.state == "waiting"
        return self._ticket is not None and self._ticket.state == "waiting"

    def heartbeat(self) -> None:
        self._last_heartbeat = time.monotonic()
        for job in self.jobs.values():
            if job.alive:
                job.heartbeat()

    def stop(self) -> None:
        """Start nothing more, and stop the job that is training (its run is kept)."""
        with self._lock:
            self._queue.clear()
        if self._ticket is not None and self._ticket.cancel():  # it was waiting for its turn
            self._wake.set()
        for job in reversed(self.jobs.values()):  # on a shared queue: those after it first, then none can start
            job.stop()

    def status(self) -> JobStatus:
        """The sequence as a whole: its current job's status, its state saying which job of how many it is
        while the sequence runs, and its progress over all its jobs."""
        jobs, queued = list(self.jobs.values()), self.queued
        started, total = len(jobs), len(jobs) + len(queued)
        if self.waiting and not self.shared:  # e.g. "waiting (2 of 3)": its next job waits for a slot
            return JobStatus(f"waiting ({started + 1} of {total})", 0, started / total)
        job = next((j for j in jobs if j.alive), jobs[-1] if jobs else None)
        if job is None:
            return JobStatus("starting" if total else "finished", 0, 0.0)
        started = jobs.index(job) + 1  # (on a shared queue every job is there from the start, waiting its turn)
        status = job.status()
        state = status.state
        if self.alive:  # e.g. "running (2 of 3)"
            state = f"{'running' if job.done else state} ({started} of {total})"  # (done: between two jobs)
        return replace(status, state=state, progress=(started - 1 + status.progress) / total if total else 1.0)
