"""A training job: a ``Trainer`` in a background thread, watched by a browser session.

The thread never calls Streamlit. It updates this object under a lock; the page's
fragment polls :meth:`TrainingJob.snapshot` twice a second and redraws. Each poll is a
heartbeat: a job whose tab was closed (no heartbeat for ``ORPHAN_AFTER`` seconds) stops
itself, and — like every finished, stopped or diverged job — saves its run to disk, so
nothing trained is lost.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from attention_core import Run, Trainer, save_run
from attention_core.errors import InputError
from attention_core.runs import safe_name
from attention_core.training import EpochRecord, StepEvent

ORPHAN_AFTER = 90.0  # seconds without a heartbeat before a job stops itself (5 s was too short under load)
log = logging.getLogger(__name__)
# One torch thread per training job. torch's thread count is per process (and, with OpenMP,
# per calling thread), and on two cores shared with the server, the browser and other
# sessions, two spinning OpenMP threads collapsed 10-20x whenever anything else ran
# (measured: 5,400 examples/s alone, 340-1,400 beside one busy core; one thread: ~3,700 either
# way). OMP_WAIT_POLICY=PASSIVE avoided the collapse but halved the quiet speed.
THREADS_PER_JOB = 1


@dataclass
class JobSnapshot:
    state: str  # starting | running | paused | finished | stopped | diverged | time budget | failed
    epoch: int
    epochs: int
    step_in_epoch: int
    steps_per_epoch: int
    examples_per_second: float
    seconds: float
    eta_seconds: float | None
    epoch_records: list[dict]
    step_losses: list[float]
    probe: dict | None  # the latest probe record {"epoch", "sentences": [...]}
    message: str
    run_path: Path | None
    done: bool

    @property
    def progress(self) -> float:
        if self.epochs == 0:
            return 0.0
        inner = self.step_in_epoch / self.steps_per_epoch if self.steps_per_epoch else 0.0
        return min(1.0, (max(self.epoch - 1, 0) + inner) / self.epochs) if not self.done else 1.0


@dataclass
class TrainingJob:
    trainer: Trainer
    runs_dir: Path
    name: str
    state: str = "starting"
    message: str = ""
    run_path: Path | None = None
    run: Run | None = None
    _epoch: int = 0
    _step_in_epoch: int = 0
    _steps_per_epoch: int = 0
    _examples_seen: int = 0
    _seconds: float = 0.0
    _records: list[dict] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _heartbeat: float = field(default_factory=time.monotonic)
    _thread: threading.Thread | None = None

    # -- control (called from the page) -------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._work, name=f"train-{self.name}", daemon=True)
        self.state = "running"
        self._thread.start()

    def pause(self) -> None:
        self.trainer.pause()
        with self._lock:
            if self.state == "running":
                self.state = "paused"

    def resume(self) -> None:
        self.trainer.resume()
        with self._lock:
            if self.state == "paused":
                self.state = "running"

    def stop(self) -> None:
        self.trainer.stop()

    def heartbeat(self) -> None:
        self._heartbeat = time.monotonic()

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def done(self) -> bool:
        return self._thread is not None and not self._thread.is_alive()

    # -- the worker thread ----------------------------------------------------------------------
    def _on_step(self, ev: StepEvent) -> None:
        with self._lock:
            self._epoch, self._steps_per_epoch = ev.epoch, ev.steps_per_epoch
            self._step_in_epoch = (ev.step - 1) % ev.steps_per_epoch + 1 if ev.steps_per_epoch else 0
            self._examples_seen, self._seconds = ev.examples_seen, ev.seconds
        if time.monotonic() - self._heartbeat > ORPHAN_AFTER:
            log.warning("training job %s lost its page (no heartbeat for %.0f s): stopping", self.name, ORPHAN_AFTER)
            self.trainer.stop()

    def _on_epoch(self, rec: EpochRecord) -> None:
        with self._lock:
            self._records.append(vars(rec).copy())

    def _work(self) -> None:
        import torch

        torch.set_num_threads(THREADS_PER_JOB)  # in this thread: OpenMP's setting is per thread
        try:
            result = self.trainer.run(on_step=self._on_step, on_epoch=self._on_epoch)
            run = Run.from_result(result, name=self.name)
            if result.history.epochs:  # a run stopped before its first epoch has nothing to keep
                path = self.runs_dir / safe_name(self.name)
                n = 2
                while path.exists():  # never overwrite an earlier run of the same name
                    path = self.runs_dir / f"{safe_name(self.name)}-{n}"
                    n += 1
                save_run(run, path)
                self.run_path = path
            with self._lock:
                self.run = run
                self.state = result.history.status
                self.message = result.history.message
        except InputError as err:
            with self._lock:
                self.state, self.message = "failed", str(err)
        except Exception as err:  # keep the server alive; the page shows the message
            log.error("training job %s failed:\n%s", self.name, traceback.format_exc())
            with self._lock:
                self.state, self.message = "failed", f"training failed: {type(err).__name__}: {err}"


    def snapshot(self) -> JobSnapshot:
        """A consistent copy of the job's progress, for drawing."""
        h = self.trainer.history
        with self._lock:
            records = list(self._records)
            epochs = self.trainer.train_config.epochs
            rate = self._examples_seen / self._seconds if self._seconds > 0 else 0.0
            total = epochs * self.trainer.n_train_rows
            eta = (total - self._examples_seen) / rate if rate > 0 else None
            done = self.done
            state = self.state
            if state == "running" and self.trainer.paused:
                state = "paused"
            return JobSnapshot(
                state=state,
                epoch=self._epoch,
                epochs=epochs,
                step_in_epoch=self._step_in_epoch,
                steps_per_epoch=self._steps_per_epoch,
                examples_per_second=rate,
                seconds=self._seconds,
                eta_seconds=None if done else eta,
                epoch_records=records,
                step_losses=list(h.step_losses),
                probe=h.probes[-1] if h.probes else None,
                message=self.message,
                run_path=self.run_path,
                done=done,
            )
