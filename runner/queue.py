"""The training queue of one server: at most N trainings at once, the others wait their turn.

A learner's Start becomes a :class:`Ticket` in the server's :class:`TrainingQueue` (first in,
first out). While one of the N slots is free, the first waiting ticket whose owner has nothing
running is launched; a ticket gives its slot back when its training ends, however it ends. The
queue knows nothing of trainings: a ticket's ``launch`` starts whatever it stands for
(:meth:`runner.jobs.TrainingJob.submit`, :meth:`runner.jobs.JobSequence.submit`), and whoever
launched it calls :meth:`Ticket.done` (or :meth:`Ticket.requeue`, for a sequence's next job).

Rules:

* **N slots**: ``ATTENTION_PLAYGROUND_MAX_TRAININGS``, by default ``os.cpu_count()`` — each job
  trains on one torch thread (``runner.jobs.JOB_THREADS``), so N jobs keep N cores busy; the
  server and the browsers get what the trainings leave between steps.
* **Per owner** (a workspace's key): at most one ticket running and one waiting; a third is
  refused with :class:`QueueLimitError`. A waiting ticket whose owner already has one running is
  passed over (the next in line may start) until that one ends. On one's own machine (the owner
  ``local``) only the slots limit trainings. With a shared queue (several app servers), the owner's
  trainings that it holds and this server does not (submitted by another server, or adopted from
  one) count as running (``elsewhere``); the passing over is this server's alone.
* **A sequence** (the Seed experiment's three jobs) is one ticket, so one training of its owner:
  it runs one job per turn and goes back to the end of the line for its next job, so a class
  does not wait behind three trainings of one learner.
* **Wait estimate** (:meth:`TrainingQueue.wait_seconds`): each slot is free after its running
  ticket's time left (the job's own ETA; else its expected time, or the mean of the last
  durations, minus its time so far), each ticket ahead in line then takes the slot that frees first for its expected time
  (its time budget; else the mean of the last durations); the ticket's wait is when the first
  slot frees after them. Unknown (None) until a duration is known. The per-owner rule is not
  simulated, so a wait can be longer than said. What the learner is told (:attr:`Ticket.wait_seconds`)
  counts down between readings and believes a sudden rise only once it has lasted a few seconds.
* **Caps** of one training on a shared server (:func:`apply_caps`): ``ATTENTION_PLAYGROUND_MAX_SECONDS``
  (a time budget above it is lowered to it, and the learner told) and ``ATTENTION_PLAYGROUND_MAX_WORK``
  (rows × epochs: above it the training is refused before it starts, saying what to change).

Thread-safe: the server's sessions are threads, and tickets end in the jobs' watcher threads.
Launches run outside the queue's lock, so a launch may end its ticket at once.
"""

from __future__ import annotations

import dataclasses
import functools
import heapq
import itertools
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from attention_core.errors import InputError
from attention_core.training import TrainConfig
from attention_core.workspaces import LOCAL_KEY

log = logging.getLogger(__name__)
RECENT = 20  # durations kept for the wait estimate
# What a learner is told (Ticket.wait_seconds): the estimate counts down between readings, and a rise
# of more than RISE_SLACK seconds above that count is believed once it has lasted RISE_AFTER seconds.
RISE_SLACK = 5.0
RISE_AFTER = 5.0


# With a shared queue (ATTENTION_PLAYGROUND_BROKER) a server hands every training to it at once: its workers' slots
# are the limit, and the place in line is the shared queue's (runner.distributed). The per-owner rule still holds here.
SHARED_QUEUE_SLOTS = 10_000


class QueueLimitError(InputError):
    """An owner asked for more trainings than the queue lets one owner have."""


class CapError(InputError):
    """A training is bigger than the server lets one training be."""


def default_slots() -> int:
    """``ATTENTION_PLAYGROUND_MAX_TRAININGS``, else one per core (each job trains on one thread)."""
    raw = os.environ.get("ATTENTION_PLAYGROUND_MAX_TRAININGS", "").strip()
    if not raw:
        from runner.distributed import broker_url

        if broker_url() is not None:  # the shared queue's workers decide how many train at once
            return SHARED_QUEUE_SLOTS
        return max(1, os.cpu_count() or 1)
    try:
        slots = int(raw)
    except ValueError:
        slots = 0
    if slots < 1:
        raise InputError(f"ATTENTION_PLAYGROUND_MAX_TRAININGS={raw!r} is not a whole number of at least 1 — "
                         "set it to how many trainings may run at once, or unset it for one per core")
    return slots


@dataclass(eq=False)
class Ticket:
    """One training of ``owner`` in the queue: waiting → running → ended (or cancelled while waiting)."""

    queue: TrainingQueue
    owner: str
    label: str
    launch: Callable[[Ticket], None]  # starts the training; called by the queue, outside its lock
    remaining: Callable[[], float | None] | None = None  # seconds left, once running (None: unknown)
    expected: float | None = None  # seconds it should run, if known before it starts (a time budget)
    state: str = "waiting"  # waiting | running | ended | cancelled
    order: int = 0  # place in the first-in, first-out order (lower goes first)
    started_at: float | None = None
    ref: str = ""  # the training's id on a shared queue (runner.distributed), to count it once with ``elsewhere``
    turns: int = 0  # how many times it has been launched (a sequence: once per job)
    _told: tuple[float, float] | None = None  # (wait, queue clock) last told to its learner
    _rising_since: float | None = None  # when the estimate first rose above the count-down of _told

    def done(self) -> None:
        """Its training ended: its slot goes to the next in line."""
        self.queue._release(self, again=False)

    def requeue(self) -> None:
        """Its current training ended and it has another (a sequence's next job): to the end of the line."""
        self.queue._release(self, again=True)

    def cancel(self) -> bool:
        """Leave the line before starting; False if it is no longer waiting."""
        return self.queue.cancel(self)

    @property
    def place(self) -> int | None:
        """1 = next to start; None unless waiting."""
        return self.queue.place(self)

    @property
    def wait_seconds(self) -> float | None:
        """About how long until it starts, as its learner is told: the queue's estimate
        (:meth:`TrainingQueue.wait_seconds`), except that a sudden rise above the count-down of the
        last value told is believed only once it has lasted ``RISE_AFTER`` seconds: a rise for a
        moment (e.g. the first guess for a training that has just started) is not news for the learner."""
        estimate = self.queue.wait_seconds(self)
        now = self.queue.clock()
        with self.queue._lock:
            if estimate is None:  # unknown, or no longer waiting
                self._told = self._rising_since = None
                return None
            if self._told is not None:
                counted = max(0.0, self._told[0] - (now - self._told[1]))
                if estimate > counted + RISE_SLACK:
                    self._rising_since = now if self._rising_since is None else self._rising_since
                    if now - self._rising_since < RISE_AFTER:
                        return counted
            self._told, self._rising_since = (estimate, now), None
            return estimate


@dataclass
class TrainingQueue:
    """At most ``slots`` trainings at once; the others wait, first in, first out (see the module)."""

    slots: int = field(default_factory=default_slots)
    per_owner_running: int = 1
    per_owner_waiting: int = 1
    # Owners the per-owner limits do not apply to: the one person on their own machine (local mode),
    # whose trainings are limited by the slots alone, as before the queue.
    exempt: frozenset[str] = frozenset({LOCAL_KEY})
    # With a shared queue: the ids of an owner's trainings it holds (waiting or training), whichever server
    # submitted them; those without a ticket here count as running for the per-owner limit.
    elsewhere: Callable[[str], set[str]] | None = None
    clock: Callable[[], float] = time.monotonic
    _waiting: deque[Ticket] = field(default_factory=deque)
    _running: list[Ticket] = field(default_factory=list)
    _durations: deque[float] = field(default_factory=lambda: deque(maxlen=RECENT))
    _order: itertools.count = field(default_factory=itertools.count)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        if self.slots < 1:
            raise ValueError(f"a queue needs at least one slot, got {self.slots}")

    def submit(self, owner: str, launch: Callable[[Ticket], None], *, label: str = "",
               remaining: Callable[[], float | None] | None = None, expected: float | None = None,
               ref: str = "") -> Ticket:
        """Put a training in line (launched at once if a slot is free). Raises QueueLimitError
        when ``owner`` already has a training running and one waiting (here, or on the shared queue)."""
        shared = self._elsewhere(owner)
        with self._lock:
            mine = [t for t in (*self._running, *self._waiting) if t.owner == owner]
            running = sum(t.state == "running" for t in mine) + len(shared - {t.ref for t in mine})
            waiting = sum(t.state == "waiting" for t in mine)
            if owner not in self.exempt and running + waiting >= self.per_owner_running + self.per_owner_waiting:
                have = " and ".join(filter(None, (
                    f"{running} training{'s' * (running != 1)} running" if running else "",
                    f"{waiting} waiting" if waiting else "")))
                if self.elsewhere is not None:  # handed to the shared queue: training or in its line, not known here
                    have = f"{running + waiting} trainings in the shared queue, training or waiting"
                raise QueueLimitError(f"you already have {have} (one running and one waiting at most) — wait for "
                                      "one to end, or cancel it")
            ticket = Ticket(self, owner, label, launch, remaining, expected, order=next(self._order), ref=ref)
            self._waiting.append(ticket)
        self._fill()
        return ticket

    def _elsewhere(self, owner: str) -> set[str]:
        """The ids of ``owner``'s trainings on the shared queue (empty without one, or when it cannot be asked:
        then this server's own count is the limit, as without a shared queue)."""
        if self.elsewhere is None or owner in self.exempt:
            return set()
        try:
            return self.elsewhere(owner)
        except Exception as err:  # the broker is down: its trainings cannot be counted, this server's are
            log.warning("training queue: could not count %s's trainings on the shared queue: %s", owner, err)
            return set()

    def cancel(self, ticket: Ticket) -> bool:
        """Take a waiting ticket out of line (it never starts); False if it is not waiting."""
        with self._lock:
            if ticket.state != "waiting":
                return False
            self._waiting.remove(ticket)
            ticket.state = "cancelled"
        return True

    def _release(self, ticket: Ticket, *, again: bool) -> None:
        with self._lock:
            if ticket.state == "running":
                self._running.remove(ticket)
                if ticket.started_at is not None:
                    self._durations.append(self.clock() - ticket.started_at)
            elif ticket.state == "waiting":  # ended before its turn (e.g. its launch was refused)
                self._waiting.remove(ticket)
            if again and ticket.state == "running":  # (a ticket ended or cancelled stays so)
                ticket.state, ticket.order, ticket.started_at = "waiting", next(self._order), None
                self._waiting.append(ticket)
            elif ticket.state in ("running", "waiting"):
                ticket.state = "ended"
        self._fill()

    def _fill(self) -> None:
        """Launch the first waiting tickets that may run, while slots are free."""
        while True:
            with self._lock:
                busy = {t.owner for t in self._running} - self.exempt
                ticket = next((t for t in self._waiting if t.owner not in busy), None)
                if ticket is None or len(self._running) >= self.slots:
                    return
                self._waiting.remove(ticket)
                self._running.append(ticket)
                ticket.state, ticket.started_at = "running", self.clock()
                ticket.turns += 1
            try:
                ticket.launch(ticket)
            except Exception:
                log.exception("training queue: launching %s failed", ticket.label)
                ticket.done()

    # -- what a learner is told ---------------------------------------------------------------
    def place(self, ticket: Ticket) -> int | None:
        with self._lock:
            return self._waiting.index(ticket) + 1 if ticket.state == "waiting" else None

    @property
    def running(self) -> list[Ticket]:
        with self._lock:
            return list(self._running)

    @property
    def waiting(self) -> list[Ticket]:
        with self._lock:
            return list(self._waiting)

    def typical_seconds(self) -> float | None:
        """The mean duration of the last trainings (None before the first has ended)."""
        with self._lock:
            return sum(self._durations) / len(self._durations) if self._durations else None

    def wait_seconds(self, ticket: Ticket) -> float | None:
        """About how long until ``ticket`` starts (the rule in the module's docstring); None if unknown
        or not waiting."""
        with self._lock:
            if ticket.state != "waiting":
                return None
            running, ahead = list(self._running), list(itertools.takewhile(lambda t: t is not ticket, self._waiting))
            typical = sum(self._durations) / len(self._durations) if self._durations else None
            now = self.clock()
        free: list[float] = []
        for t in running:
            left = t.remaining() if t.remaining is not None else None
            base = t.expected if t.expected is not None else typical
            if left is None and base is not None and t.started_at is not None:
                left = max(0.0, base - (now - t.started_at))
            if left is None:
                return None
            free.append(left)
        expected = [t.expected if t.expected is not None else typical for t in ahead]
        return None if None in expected else turn_comes(free, self.slots, expected)


def turn_comes(free_in: list[float], slots: int, ahead: list[float]) -> float:
    """Seconds until the next in line after ``ahead`` starts: ``slots`` slots, the busy ones free in ``free_in``
    seconds (the others now); each training ahead takes the slot that frees first for its expected seconds.

    Example:
        >>> turn_comes([10.0], 2, [30.0, 5.0])  # a slot free now, one in 10 s; two ahead: 30 s now, 5 s at 10 s
        15.0
    """
    free = [*free_in, *[0.0] * max(0, slots - len(free_in))]
    heapq.heapify(free)
    for expected in ahead:
        heapq.heappush(free, heapq.heappop(free) + expected)
    return free[0]


_server_queue: TrainingQueue | None = None
_server_lock = threading.Lock()


def server_queue() -> TrainingQueue:
    """This server's queue (one per process), made on first use with :func:`default_slots`."""
    global _server_queue
    with _server_lock:
        if _server_queue is None:
            from runner.distributed import broker_url, owners_trainings

            url = broker_url()
            _server_queue = TrainingQueue(elsewhere=None if url is None else functools.partial(owners_trainings, url))
        return _server_queue


def ordinal(n: int) -> str:
    """1 → "1st", 2 → "2nd", 11 → "11th", 23 → "23rd"."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _cap(name: str) -> float | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise InputError(f"{name}={raw!r} is not a positive number — fix it, or unset it for no cap")
    return value


def apply_caps(config: TrainConfig, rows: int) -> tuple[TrainConfig, str | None]:
    """Fit one training of ``rows`` rows into this server's caps, before it starts.

    Returns the config to train with and a note for the learner when its time budget was lowered
    to ``ATTENTION_PLAYGROUND_MAX_SECONDS``. Raises :class:`CapError` when rows × epochs is above
    ``ATTENTION_PLAYGROUND_MAX_WORK``, saying how many epochs or rows fit.
    """
    max_work, max_seconds = _cap("ATTENTION_PLAYGROUND_MAX_WORK"), _cap("ATTENTION_PLAYGROUND_MAX_SECONDS")
    if max_work is not None and rows * config.epochs > max_work:
        fit = int(max_work // max(rows, 1))
        fix = (f"train at most {fit:,} epoch{'s' * (fit != 1)} on these rows, or use fewer rows" if fit >= 1
               else f"use at most {int(max_work):,} rows")
        raise CapError(f"{rows:,} rows × {config.epochs:,} epochs = {rows * config.epochs:,} is more work than this "
                       f"server allows for one training ({int(max_work):,}) — {fix}")
    if max_seconds is not None and (config.time_budget is None or config.time_budget > max_seconds):
        note = (f"This server stops a training after {max_seconds:g} s: the time budget is {max_seconds:g} s "
                f"(asked: {'none' if config.time_budget is None else f'{config.time_budget:g} s'}). The run is "
                "saved when it stops.")
        return dataclasses.replace(config, time_budget=max_seconds), note
    return config, None
