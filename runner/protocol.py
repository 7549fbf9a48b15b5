"""What crosses the process boundary between the app server and a training process.

Defined once and imported by both ends (:mod:`runner.jobs` in the server, :mod:`runner.worker`
in the training process). The server sends one :class:`JobRequest`, then :class:`Command` values;
the training process sends :data:`Report` messages, the last of which is :class:`Ended` or
:class:`Failed`. Everything here pickles (it travels over a ``multiprocessing`` connection).

:class:`TrainingBackend` is what runs the trainings: :class:`runner.jobs.JobHost` (a process on
this machine that forks one training process per job) is the first; :class:`runner.distributed.BrokerBackend`
(RQ over Redis: workers on other machines, ``docs/deploy.md``) is the second, which also sends
:class:`Queued` and :class:`Restarted`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Protocol

import numpy as np

from attention_core.history import EpochRecord, ProbeRecord, StepEvent
from attention_core.training import Trainer, TrainerSpec


@dataclass(frozen=True)
class JobRequest:
    """Server → training process, once: what to train and where to save it."""

    trainer: TrainerSpec | Trainer  # a spec is built over there (tokenizing and encoding off the server)
    runs_dir: Path
    name: str  # the run's name; saved as name, name-2, … (never over anything)
    threads: int  # torch threads; 0 = chosen while training (attention_core.threads)
    orphan_after: float  # seconds without a command or heartbeat before the job stops itself
    nice: int  # scheduling priority of the training process
    out: Path | None = None  # save the run exactly here (a folder the command line prepared) instead of runs_dir / name
    overwrite: bool = False  # with out: replace the run already there (never other files)
    journal: str | None = None  # its page's restart-journal entry in runs_dir, removed by a shared queue's worker at its end
    listing: dict | None = None  # a page's job on a shared queue: workspace, job_key, label, page (runner.distributed)
    job_id: str | None = None  # its id on a shared queue, chosen by the submitter (None: the backend chooses)
    after: str | None = None  # on a shared queue: the id of the training it starts after (a sequence's one before)


class Command(Enum):
    """Server → training process, any number of times."""

    PAUSE = "pause"
    RESUME = "resume"
    STOP = "stop"  # stop at the next step; the run is saved
    HEARTBEAT = "heartbeat"  # a page still watches


@dataclass(frozen=True)
class Started:
    pid: int
    training_rows: int


@dataclass(frozen=True)
class Stepped:
    """Sent at most every ``runner.worker.PROGRESS_EVERY`` seconds while steps are taken."""

    event: StepEvent  # the trainer's latest
    new_step_losses: list[float]  # the step losses since the last Stepped


@dataclass(frozen=True)
class EpochDone:
    record: EpochRecord


@dataclass(frozen=True)
class ProbeRecorded:
    record: ProbeRecord


@dataclass(frozen=True)
class Idle:
    paused: bool  # True once the trainer has stopped stepping after PAUSE; False after RESUME


@dataclass(frozen=True)
class Queued:
    """A job waiting in a shared queue (:mod:`runner.distributed`): sent when its place changes."""

    place: int | None  # 1 = next to start; None: it waits for the training before it (a sequence's) to end first
    wait_seconds: float | None = None  # about how long until it starts (None: unknown)
    workers: int | None = None  # trainings the queue's workers run at once (0: no worker takes trainings now)


@dataclass(frozen=True)
class Restarted:
    """The job's worker stopped mid-training and the queue gave it to another: what it had recorded is
    void, it trains again from the start (once: :mod:`runner.distributed`)."""

    message: str


@dataclass(frozen=True)
class Unheard:
    """A shared queue's watcher, of a training its worker runs: the worker has not renewed the job's heartbeat for
    ``seconds`` (it renews it every few seconds while it lives, paused or not, whatever the training does). It may
    have died: the queue finds out when the heartbeat lapses (:mod:`runner.distributed`). Any other report ends it."""

    seconds: float


@dataclass(frozen=True)
class Ended:
    """The last message of a training that ran: its run is saved (unless no epoch was completed)."""

    status: str  # finished | stopped | diverged | time budget | cancelled (left a shared queue before it started)
    message: str
    run_path: Path | None
    validation_probs: np.ndarray | None  # the saved run's predictions for its validation rows (N, C)


@dataclass(frozen=True)
class Failed:
    """The last message of a training that could not start or broke."""

    message: str


Report = Queued | Restarted | Unheard | Started | Stepped | EpochDone | ProbeRecorded | Idle | Ended | Failed


class JobChannel(Protocol):
    """One job's two-way line: the server sends commands and receives reports until the last."""

    def send(self, command: Command) -> None: ...

    def recv(self) -> Report:
        """The next report; raises EOFError (or OSError) once the job's side has gone."""
        ...

    def close(self) -> None: ...


class TrainingBackend(Protocol):
    """Where trainings run: hands a job to a training process and returns its line."""

    def start(self, request: JobRequest) -> JobChannel:
        """Start ``request`` (at once: the queue in ``runner.queue`` has already given it a slot);
        raises OSError or RuntimeError if it cannot be started."""
        ...
