"""Trainings on a shared queue: RQ over Redis, workers on any machine, app servers that share one line.

The second :class:`~runner.protocol.TrainingBackend` (the first is :class:`runner.jobs.JobHost`, a process
on the server's own machine). Chosen by measuring (``docs/deploy.md``, "Beyond one machine"): **RQ**
forks one work horse per job from a worker that has loaded everything once — the shape of our job host —,
gives a job whose worker died to another worker (``Retry``), and installs in 15.7 MB with redis-py
(Celery: 31.8 MB, a prefork pool that reuses its processes, and over Redis a job whose worker died comes
back only after a visibility timeout that must outlast the longest training).

What travels through Redis, per job (``attention-playground:job:<id>:…``):

* the :class:`~runner.protocol.JobRequest`, as the RQ job's argument: the dataset travels with the job
  (a worker on another machine has no access to the server's memory); the run is saved in
  ``runs_dir``, which every worker and app server mounts (``docs/deploy.md``);
* ``:commands``: a stream of :class:`~runner.protocol.Command` values (pause, resume, stop, heartbeat),
  from any app server or the command line, read by the job between steps (:class:`HorseLine`);
* ``:reports``: a stream of the job's :data:`~runner.protocol.Report` values, read from the start by
  whoever watches it (:class:`BrokerChannel`), so a page opened on another app server finds the
  whole history of a training started elsewhere;
* ``:meta``: its attempts (a job whose worker died is started again on another worker, once:
  :class:`~runner.protocol.Restarted`, then "not finished — start again").

Messages are pickled, as RQ pickles its jobs: the broker must be as private as the servers (a password,
a private network or TLS — ``docs/deploy.md``). Nothing here runs without a broker: the default stays the
local job host, and a single user never needs Redis.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import logging
import os
import pickle
import secrets
import signal
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from attention_core.configs import ModelConfig, TrainConfig
from attention_core.errors import ConfigError, InputError
from runner.protocol import Command, Ended, Failed, JobRequest, Queued, Report, Restarted, Unheard
from runner.queue import turn_comes

BROKER_ENV = "ATTENTION_PLAYGROUND_BROKER"
QUEUE = "attention-playground"  # the RQ queue every app server submits to and every worker takes from
PREFIX = "attention-playground:job"
RETRIES = 1  # a job whose worker died is started again on another worker this many times
KEEP = 24 * 3600  # seconds a job's streams and RQ record stay after it ended (a late page still finds how it ended)
# A worker checks its running job's horse every MONITOR_EVERY seconds and renews the job's heartbeat; a job whose
# heartbeat is ABANDONED_AFTER seconds old has lost its worker, and the next worker's maintenance (every
# MAINTENANCE_EVERY seconds) gives it to another. RQ's own default waits 60 s more than its check interval.
MONITOR_EVERY = 5
ABANDONED_AFTER = 30
MAINTENANCE_EVERY = 10
# A watcher that has had no report for this long while the job's heartbeat is as old says so (Unheard): its worker
# may have died, and its page should not show it simply "running" until the queue finds out (ABANDONED_AFTER).
UNHEARD_AFTER = 3 * MONITOR_EVERY
FOUND_DEAD_WITHIN = ABANDONED_AFTER + MAINTENANCE_EVERY  # seconds after a dead worker's last word, at most (as said)
POLL = 1.0  # seconds a watcher waits for a report before it looks at the job's place in the queue
RETELL_EVERY = 5.0  # seconds between reports of an unchanged place (its wait estimate counts down)
DURATIONS = "attention-playground:durations"  # the last trainings' durations (seconds), for the wait estimate
RECENT = 20
LOST_AFTER = 15.0  # seconds of an unreachable broker before a watcher says the training's fate is unknown
# A Stop that reached a training only after its worker had died (its page still showed it running) ends it in line:
# not started again only to be stopped after an epoch, as a new run the learner never asked for.
STOPPED_LOST = ("stopped: its worker had stopped mid-training, and what it had trained was lost with it — nothing was "
                "saved; start it again to train")
CANCELLED = "cancelled before it started — nothing was trained or saved"
log = logging.getLogger(__name__)


def broker_url() -> str | None:
    """``ATTENTION_PLAYGROUND_BROKER`` (``redis://HOST:PORT/N``), or None: trainings run on this machine."""
    return os.environ.get(BROKER_ENV, "").strip() or None


def shown(url: str) -> str:
    """``url`` without its password, for messages and logs.

    Example:
        >>> shown("redis://:s3cret@db.example:6380/2")
        'redis://:***@db.example:6380/2'
    """
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    netloc = f"{user}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def connect(url: str):
    """A Redis client for ``url``, checked with a ping; :class:`InputError` saying what is wrong otherwise."""
    try:
        import redis
        import rq  # noqa: F401 — both come with the "distributed" extra
    except ImportError as err:
        raise ConfigError(f"a shared queue needs RQ and redis-py, which are not installed ({err.name or err})",
                          'pip install -e ".[distributed]"') from err

    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise ConfigError(f"the broker {shown(url)!r} is not a Redis URL", "use redis://HOST:PORT/N (rediss:// for TLS)")
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=5, health_check_interval=30)
        client.ping()
    except ValueError as err:
        raise ConfigError(f"the broker {shown(url)!r} is not a Redis URL: {err}", "use redis://HOST:PORT/N") from err
    except redis.RedisError as err:
        raise InputError(f"cannot reach the broker at {shown(url)}: {err}",
                         "is redis-server running there, and is the URL's port, database and password right?") from err
    return client


JOURNAL = "attention-playground:journal"  # restart-journal entry id → job id, of pages' jobs on the queue


def _workspace_key(workspace: str) -> str:
    return f"attention-playground:workspace:{workspace}"


def _key(job_id: str, part: str) -> str:
    return f"{PREFIX}:{job_id}:{part}"


def _rq_id(job_id: str) -> str:
    return f"ap-{job_id}"


def _queue(client):
    from rq import Queue

    return Queue(QUEUE, connection=client)


# -- the app server's (or the command line's) end ------------------------------------------------------------------
class BrokerBackend:
    """Submit trainings to the shared queue at ``url``: a :class:`~runner.protocol.TrainingBackend`."""

    def __init__(self, url: str) -> None:
        self.url = url

    def start(self, request: JobRequest) -> BrokerChannel:
        """Put ``request`` in the shared queue and return its line; ``RuntimeError`` if the broker cannot take it."""
        try:
            client = client_for(self.url)  # the process's one client (its pool) for this broker: no new connection per job
        except InputError as err:
            raise RuntimeError(str(err)) from err
        import redis
        from rq import Retry
        from rq.job import Dependency

        job_id = request.job_id or secrets.token_hex(8)
        payload = pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL)
        trainer = request.trainer
        described = pickle.dumps((request.name, request.runs_dir, trainer.model_config, trainer.train_config,
                                  request.journal, request.listing), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            with client.pipeline() as pipe:
                pipe.hset(_key(job_id, "meta"), mapping={"attempts": 0, "described": described,
                                                         "submitted": _redis_now(client)})
                pipe.expire(_key(job_id, "meta"), KEEP)
                if request.listing is not None and not request.listing.get("sequence"):
                    # a page's job: the workspace's other app servers find it by its page (a sequence's, by its own)
                    workspace = _workspace_key(request.listing["workspace"])
                    pipe.hset(workspace, request.listing["job_key"], job_id)
                    pipe.expire(workspace, KEEP)
                if request.journal is not None:
                    pipe.hset(JOURNAL, request.journal, job_id)
                pipe.execute()
            after = None if request.after is None else Dependency(jobs=[_rq_id(request.after)], allow_failure=True)
            _queue(client).enqueue(  # (after another: deferred until that one ends, however it ends)
                "runner.distributed.perform", job_id, payload, job_id=_rq_id(job_id), retry=Retry(max=RETRIES),
                job_timeout=-1, result_ttl=KEEP, failure_ttl=KEEP, description=f"training {request.name}",
                depends_on=after,
            )
        except redis.RedisError as err:
            raise RuntimeError(f"the broker at {shown(self.url)} did not take the training: {err}") from err
        return BrokerChannel(client, job_id)

    def start_sequence(self, requests: Sequence[JobRequest], listing: dict | None) -> list[BrokerChannel]:
        """Put trainings in the shared queue, each to start when the one before it has ended (a
        :class:`~runner.jobs.JobSequence`'s, whole: it goes on if the app server that submitted it stops), and list
        them together under ``listing``'s page (another app server adopts them as one). Their lines, in order;
        ``RuntimeError`` as :meth:`start` (those already submitted are cancelled first)."""
        channels: list[BrokerChannel] = []
        member = None if listing is None else {**listing, "sequence": True}
        try:
            for request in requests:
                after = channels[-1].job_id if channels else None
                channels.append(self.start(dataclasses.replace(request, after=after, listing=member)))
            if listing is not None:
                client = client_for(self.url)
                workspace = _workspace_key(listing["workspace"])
                client.hset(workspace, listing["job_key"], SEPARATOR.join(c.job_id for c in channels))
                client.expire(workspace, KEEP)
        except Exception:
            for channel in reversed(channels):
                with contextlib.suppress(Exception):
                    channel.send(Command.STOP)
            raise
        return channels


@dataclass(frozen=True)
class Described:
    """What an app server needs of a job it did not submit to show it: its name, where it saves, its configs,
    its journal entry and page (:func:`described`)."""

    job_id: str
    name: str
    runs_dir: Path
    model_config: ModelConfig
    train_config: TrainConfig
    journal: str | None
    listing: dict | None


_clients: dict[str, object] = {}
_clients_lock = threading.Lock()


_unreachable: dict[str, float] = {}  # broker URL → when connecting to it last failed (time.monotonic())
RETRY_AFTER = 10.0  # seconds a page does not wait on a broker that could not be reached


def client_for(url: str):
    """One Redis client per broker URL for this process (thread-safe: its connection pool). A broker that could not
    be reached is not tried again for ``RETRY_AFTER`` seconds (its :class:`InputError` at once), so that the pages
    that look jobs up on every run do not each wait for its connection timeout."""
    with _clients_lock:
        client = _clients.get(url)
        if client is not None:
            return client
        failed = _unreachable.get(url)
        if failed is not None and time.monotonic() - failed < RETRY_AFTER:
            raise InputError(f"the broker at {shown(url)} could not be reached a moment ago", "try again shortly")
        try:
            client = _clients[url] = connect(url)
        except InputError:
            _unreachable[url] = time.monotonic()
            raise
        _unreachable.pop(url, None)
        return client


SEPARATOR = ","  # between a sequence's job ids in its page's listing


def listed(url: str, workspace: str) -> dict[str, list[str]]:
    """``workspace``'s latest job of each page on the shared queue, wherever submitted: job key → its job id, or
    its sequence's job ids in order."""
    got = client_for(url).hgetall(_workspace_key(workspace))
    return {k.decode(): v.decode().split(SEPARATOR) for k, v in got.items()}


def unlist(url: str, workspace: str, job_key: str, job_ids: Sequence[str]) -> None:
    """Its page showed how the job (or sequence) ``job_ids`` ended: other app servers no longer offer it to a
    reload (a newer job of the page stays listed)."""
    client = client_for(url)
    if client.hget(_workspace_key(workspace), job_key) == SEPARATOR.join(job_ids).encode():
        client.hdel(_workspace_key(workspace), job_key)


def described(url: str, job_id: str) -> Described | None:
    """How job ``job_id`` was submitted; None if the queue no longer knows it."""
    raw = client_for(url).hget(_key(job_id, "meta"), "described")
    if raw is None:
        return None
    name, runs_dir, model_config, train_config, journal, listing = pickle.loads(raw)  # our servers' (module docstring)
    return Described(job_id, name, Path(runs_dir), model_config, train_config, journal, listing)


def _alive(client, job_ids: Iterable[str]) -> list[bool]:
    """For each of ``job_ids``: does the shared queue still have it (waiting, or training)?"""
    from rq.job import Job, JobStatus

    with client.pipeline() as pipe:
        for job_id in job_ids:
            pipe.hget(Job.key_for(_rq_id(job_id)), "status")
        statuses = pipe.execute()
    alive = {JobStatus.QUEUED.value, JobStatus.STARTED.value, JobStatus.SCHEDULED.value, JobStatus.DEFERRED.value}
    return [bool(status) and status.decode() in alive for status in statuses]


def owners_trainings(url: str, workspace: str) -> set[str]:
    """``workspace``'s page trainings the shared queue still has (waiting or training), whichever app server
    submitted them, each by its id (a sequence, one training of its owner, by its first job's): what its
    per-workspace limit counts across servers (``runner.queue.TrainingQueue``)."""
    pages = list(listed(url, workspace).values())
    alive = iter(_alive(client_for(url), [job_id for ids in pages for job_id in ids]))
    return {ids[0] for ids in pages if any([next(alive) for _ in ids])}  # (a list: every flag is taken)


def live_journal_ids(url: str) -> frozenset[str]:
    """The restart-journal entries whose trainings the shared queue still has (waiting or training), submitted by
    any app server: such an entry is not an interrupted training. Entries of ended trainings are forgotten here."""
    client = client_for(url)
    journal = {k.decode(): v.decode() for k, v in client.hgetall(JOURNAL).items()}
    if not journal:
        return frozenset()
    live = {entry for entry, alive in zip(journal, _alive(client, journal.values()), strict=True) if alive}
    gone = [entry for entry in journal if entry not in live]
    if gone:
        client.hdel(JOURNAL, *gone)
    return frozenset(live)


def _wait_estimate(client, place: int) -> tuple[int, float | None]:
    """The queue's workers (trainings at once) and about how long until the job at ``place`` starts: each slot
    frees after its running training's typical time left (the mean of the last trainings' durations, minus its time
    so far), each job ahead then takes the slot that frees first for a typical time (as ``runner.queue``'s
    estimate). None while no duration is known, or no worker runs."""
    from rq import Worker
    from rq.job import Job
    from rq.registry import StartedJobRegistry

    queue = _queue(client)
    slots = Worker.count(queue=queue)
    durations = [float(d) for d in client.lrange(DURATIONS, 0, RECENT - 1)]
    if not slots or not durations:
        return slots, None
    typical = sum(durations) / len(durations)
    running = StartedJobRegistry(queue=queue).get_job_ids()
    free = []
    for job in Job.fetch_many(running[:slots], connection=client):
        started = job.started_at if job is not None else None
        if started is not None and started.tzinfo is None:
            started = started.replace(tzinfo=UTC)  # RQ keeps UTC
        elapsed = (datetime.now(UTC) - started).total_seconds() if started is not None else 0.0
        free.append(max(0.0, typical - elapsed))
    return slots, turn_comes(free, slots, [typical] * (place - 1))


def watch(url: str, job_id: str) -> BrokerChannel:
    """The line of a job already in the queue (``job_id``), its reports read from the first: for a page on
    another app server than the one that submitted it."""
    return BrokerChannel(client_for(url), job_id)


class BrokerChannel:
    """One job's line through Redis, at the watching end: commands out, reports in (a
    :class:`~runner.protocol.JobChannel`).

    While the job waits in the queue, :meth:`recv` says where (:class:`~runner.protocol.Queued`); once the queue
    has given up on it (its worker died twice), or the broker has lost it, the last report is a
    :class:`~runner.protocol.Failed` saying so."""

    def __init__(self, client, job_id: str) -> None:
        self.client, self.job_id = client, job_id
        self._last = "0-0"  # the last report read
        self._pending: deque[Report] = deque()
        self._place: int | None = None
        self._told = 0.0  # when its place was last reported
        self._final = False  # its last report (Ended or Failed) was read
        self._unreachable_since: float | None = None
        self._heard = self._looked = time.monotonic()  # when a report last came; when its worker was last looked for

    # commands
    def send(self, command: Command) -> None:
        """Send ``command``; a STOP to a job still waiting takes it out of the queue. ``OSError`` if the broker
        cannot be reached (the caller's to ignore, as a local job's closed pipe)."""
        import redis

        try:
            if command is Command.STOP and self._cancel_waiting(STOPPED_LOST if self._attempts() else CANCELLED):
                return  # (back in line after its worker died, or never started)
            if command is Command.STOP:
                self._mark_stopped()
                return
            self.client.xadd(_key(self.job_id, "commands"), {"c": command.value}, maxlen=10_000, approximate=True)
            self.client.expire(_key(self.job_id, "commands"), KEEP)
        except redis.RedisError as err:
            raise OSError(f"the broker cannot be reached: {err}") from err

    def _mark_stopped(self) -> None:
        """The one way a Stop is sent: on the command stream (a running training reads it) and as the job's ``stop``
        field (what :func:`_stop_sent` and a watcher look at, instead of the stream's heartbeats)."""
        with self.client.pipeline() as pipe:
            pipe.xadd(_key(self.job_id, "commands"), {"c": Command.STOP.value}, maxlen=10_000, approximate=True)
            pipe.expire(_key(self.job_id, "commands"), KEEP)
            pipe.hset(_key(self.job_id, "meta"), "stop", 1)
            pipe.execute()

    def _cancel_waiting(self, message: str) -> bool:
        """Take the job out of the queue if no worker has taken it (atomic against the workers); True if it was,
        and its last report says ``message``."""
        from rq.exceptions import InvalidJobOperation, NoSuchJobError
        from rq.job import Job, JobStatus

        queue = _queue(self.client)
        if not self.client.lrem(queue.key, 0, _rq_id(self.job_id)):
            # waiting for the training before it (a sequence's, stopped by the same Stop after this one: that one
            # ends only then, so this one cannot be moved into the line meanwhile)
            try:
                job = Job.fetch(_rq_id(self.job_id), connection=self.client)
                if job.get_status() is not JobStatus.DEFERRED:
                    return False
                job.cancel(remove_from_dependencies=True)  # (else the one before it would queue it when it ends)
            except (NoSuchJobError, InvalidJobOperation):
                return False
            self._mark_stopped()  # and if it ever starts: stop
            self._report(Ended("cancelled", message, None, None))
            return True
        with contextlib.suppress(Exception):  # its record: cancelled (it is out of the queue whatever this does)
            Job.fetch(_rq_id(self.job_id), connection=self.client).cancel()
        self._report(Ended("cancelled", message, None, None))
        return True

    def _report(self, report: Report) -> None:
        """Add ``report`` to the job's stream, as its worker would (every watcher reads it)."""
        key = _key(self.job_id, "reports")
        self.client.xadd(key, {"r": pickle.dumps(report, protocol=pickle.HIGHEST_PROTOCOL)})
        self.client.expire(key, KEEP)

    # reports
    def recv(self) -> Report:
        """The next report (waiting for it); after the last, ``EOFError``."""
        import redis

        while True:
            if self._pending:
                report = self._pending.popleft()
                self._final = isinstance(report, Ended | Failed)
                return report
            if self._final:
                raise EOFError("the job has ended")
            try:
                self._read(block_ms=int(POLL * 1000))
                if not self._pending:
                    report = self._queue_state()
                    if report is not None:
                        self._pending.append(report)
                self._unreachable_since = None
            except redis.RedisError as err:
                now = time.monotonic()
                self._unreachable_since = self._unreachable_since or now
                if now - self._unreachable_since >= LOST_AFTER:
                    self._pending.append(Failed(
                        f"lost the training queue (its broker cannot be reached: {err}); the training may go on and "
                        f"save its run if its worker still runs — look for it in the runs list, or start it again"))
                else:
                    time.sleep(min(POLL, LOST_AFTER))

    def _read(self, block_ms: int | None) -> None:
        got = self.client.xread({_key(self.job_id, "reports"): self._last}, count=500, block=block_ms)
        for _stream, entries in got or []:
            for entry_id, fields in entries:
                self._last, self._heard = entry_id, time.monotonic()
                self._pending.append(pickle.loads(fields[b"r"]))  # written by our workers (module docstring)

    def _queue_state(self) -> Report | None:
        """No report came: where the job is in the queue, or how the queue gave up on it."""
        from rq.exceptions import NoSuchJobError
        from rq.job import Job, JobStatus

        try:
            job = Job.fetch(_rq_id(self.job_id), connection=self.client)
        except NoSuchJobError:
            self._read(block_ms=None)  # a last report may have come meanwhile
            if self._pending:
                return None
            return Failed("the training queue has lost this training (was its broker restarted without its data?) — "
                          "runs saved before are untouched: start it again")
        status = job.get_status(refresh=False)
        if status is JobStatus.DEFERRED:  # after the training before it (a sequence's): no place in line yet
            if self._place != 0:
                self._place = 0
                return Queued(None, None, None)
            return None
        if status in (JobStatus.QUEUED, JobStatus.SCHEDULED):
            if self._requeued_after_stop() and self._cancel_waiting(STOPPED_LOST):
                self._read(block_ms=None)  # its last report, just written
                return None
            position = job.get_position()
            place = position + 1 if position is not None else 1
            now = time.monotonic()
            if place != self._place or now - self._told >= RETELL_EVERY:
                self._place, self._told = place, now
                slots, wait = _wait_estimate(self.client, place)
                return Queued(place, wait, slots)
            return None
        if status in (JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED):
            self._read(block_ms=None)
            if self._pending:
                return None
            return Failed("not finished — its worker stopped and no other worker could finish it (the queue starts a "
                          f"training again {RETRIES} time{'s' if RETRIES != 1 else ''}): start it again")
        if status is JobStatus.STARTED:
            unheard = self._worker_silence(job)
            self._find_a_dead_worker()
            return unheard
        if status == JobStatus.FINISHED:  # its work horse returned; its last report should be there by now
            self._read(block_ms=int(POLL * 1000))
            if self._pending:
                return None
            return Failed("its worker ended without saying how (its last report was lost) — look for its run in the "
                          "runs list, or start it again")
        return None

    def _worker_silence(self, job) -> Unheard | None:
        """No report for ``UNHEARD_AFTER`` seconds and the job's heartbeat (renewed by its worker every
        ``MONITOR_EVERY`` seconds, whatever its training does: a long validation pass, a pause) as old: its worker
        may have died. Heard from, or too soon to tell: None."""
        if time.monotonic() - self._heard < UNHEARD_AFTER or job.last_heartbeat is None:
            return None
        age = _redis_now(self.client) - job.last_heartbeat.timestamp()
        return Unheard(age) if age >= UNHEARD_AFTER else None

    def _find_a_dead_worker(self) -> None:
        """Silent as long as a dead worker's job stays marked started: have the queue look for dead workers' jobs
        now (RQ's own clean-up of its started jobs, under its maintenance lock) rather than when a worker is next
        free to — with every worker training that can take a whole training, and the page would show a dead one
        running all that time. Found, it goes back in line (the ``Retry`` it was queued with): the next
        :meth:`_queue_state` says so, or ends it if a Stop came meanwhile."""
        now = time.monotonic()
        if now - self._heard < ABANDONED_AFTER or now - self._looked < MAINTENANCE_EVERY:
            return  # reports come (or came a moment ago): its worker lives; a paused one renews its heartbeat too
        self._looked = now
        queue = _queue(self.client)
        if queue.acquire_maintenance_lock():  # one clean-up at a time, the workers' included
            try:
                queue.started_job_registry.cleanup()  # only jobs whose worker stopped renewing their heartbeat
            finally:
                queue.release_maintenance_lock()

    def _attempts(self) -> int:
        """Times a worker has started it (more than none: back in line now, its worker died)."""
        return int(self.client.hget(_key(self.job_id, "meta"), "attempts") or 0)

    def _requeued_after_stop(self) -> bool:
        """Back in line after its worker died (it had started), and told to stop meanwhile — from any page."""
        return self._attempts() > 0 and _stop_sent(self.client, self.job_id)

    def close(self) -> None:
        """Nothing to release: the client is the process's shared one (:func:`client_for`)."""


# -- the worker's end ----------------------------------------------------------------------------------------------
class HorseLine:
    """One job's line through Redis, at the training's end: what :func:`runner.worker.run_job` talks to
    (``send`` reports; ``poll`` and ``recv`` commands, as on a ``multiprocessing`` connection).

    Commands are read from the stream's start: one sent before the job started (a pause, a stop) applies."""

    def __init__(self, client, job_id: str) -> None:
        self.client, self.job_id = client, job_id
        self._last = "0-0"
        self._commands: deque[Command] = deque()

    def send(self, report: Report) -> None:
        import redis

        key = _key(self.job_id, "reports")
        try:
            self.client.xadd(key, {"r": pickle.dumps(report, protocol=pickle.HIGHEST_PROTOCOL)})
            self.client.expire(key, KEEP)
        except redis.RedisError as err:
            raise OSError(f"the broker cannot be reached: {err}") from err

    def poll(self, timeout: float | None = None) -> bool:
        """True once a command is there (waiting up to ``timeout`` seconds); ``EOFError`` if the broker is gone,
        which stops the training (its run is saved) as a local job's closed pipe does."""
        import redis

        if not self._commands:
            try:
                got = self.client.xread({_key(self.job_id, "commands"): self._last}, count=100,
                                        block=max(1, int((timeout or 0) * 1000)))
            except redis.RedisError as err:
                raise EOFError(f"the broker cannot be reached: {err}") from err
            for _stream, entries in got or []:
                for entry_id, fields in entries:
                    self._last = entry_id
                    with contextlib.suppress(ValueError):  # a command this version does not know
                        self._commands.append(Command(fields[b"c"].decode()))
        return bool(self._commands)

    def recv(self) -> Command:
        while not self._commands:
            self.poll(1.0)
        return self._commands.popleft()

    def close(self) -> None:
        pass


_device = "cpu"  # the worker's --device, inherited by its work horses


def _die_with_parent() -> None:
    """This work horse is killed when its worker dies (Linux), as a training whose machine died would be: the
    queue then gives it to another worker, and no orphan trains beside it."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() == 1:  # the worker died before that took effect
        os._exit(1)


def perform(job_id: str, payload: bytes) -> str:
    """The RQ job: train the pickled :class:`~runner.protocol.JobRequest` in this work horse, reporting through
    Redis. Runs in the process RQ forks for it (:func:`serve`)."""
    from rq import get_current_job

    from runner.worker import run_job

    _die_with_parent()
    client = get_current_job().connection
    line = HorseLine(client, job_id)
    attempt = int(client.hincrby(_key(job_id, "meta"), "attempts", 1))
    request: JobRequest = pickle.loads(payload)  # put there by our app servers or command line (module docstring)
    if attempt == 1 and _stop_sent(client, job_id):  # cancelled while it waited (a sequence's Stop)
        line.send(Ended("cancelled", CANCELLED, None, None))
        _ended(client, job_id, request)
        return "not started"
    if attempt == 1 and (silent := _silent_for(client, job_id)) > request.orphan_after:
        line.send(Ended("cancelled", f"not started: nothing watched it for {silent:.0f} s while it waited (its page "
                                     "was closed) — nothing was trained or saved", None, None))
        _ended(client, job_id, request)
        return "not started"
    if attempt > 1 and _stop_sent(client, job_id):  # stopped after its worker died, before anyone took it out of line
        line.send(Ended("cancelled", STOPPED_LOST, None, None))
        _ended(client, job_id, request)
        return "not started again"
    if attempt > 1:
        line.send(Restarted(f"its worker stopped mid-training, so it was started again from the beginning on "
                            f"{socket.gethostname()} (attempt {attempt} of {RETRIES + 1})"))
    started = time.monotonic()
    run_job(line, request, device=_device)
    with contextlib.suppress(Exception):  # for the wait estimate of those in line
        client.lpush(DURATIONS, round(time.monotonic() - started, 1))
        client.ltrim(DURATIONS, 0, RECENT - 1)
    _ended(client, job_id, request)
    return "ended"


def _ended(client, job_id: str, request: JobRequest) -> None:
    """After a job's last report: its journal entry removed, its keys kept ``KEEP`` seconds from now."""
    from attention_core.run_folders import remove_journal_entry

    if request.journal is not None:  # it ended here, whichever app server (if any) still watches it
        with contextlib.suppress(OSError):
            remove_journal_entry(request.runs_dir, request.journal)
    for part in ("meta", "commands", "reports"):
        with contextlib.suppress(Exception):
            client.expire(_key(job_id, part), KEEP)


def _redis_now(client) -> float:
    """The broker's clock (seconds): every machine's times compared on one clock."""
    seconds, micros = client.time()
    return seconds + micros / 1e6


def _stop_sent(client, job_id: str) -> bool:
    """Was job ``job_id`` ever told to stop (asked before it starts, or before it starts again)?"""
    return client.hget(_key(job_id, "meta"), "stop") is not None


def _silent_for(client, job_id: str) -> float:
    """Seconds since anyone last spoke to job ``job_id`` (a heartbeat or any command; else since it was
    submitted), on the broker's clock."""
    last = client.xrevrange(_key(job_id, "commands"), count=1)
    heard = int(last[0][0].decode().split("-")[0]) / 1000 if last else 0.0
    submitted = float(client.hget(_key(job_id, "meta"), "submitted") or 0.0)
    return max(0.0, _redis_now(client) - max(heard, submitted))


def _worker_class():
    from rq import Worker

    class TrainingWorker(Worker):
        """RQ's forking worker, its jobs' heartbeats short: a job whose worker died is found in
        ``ABANDONED_AFTER`` seconds (RQ's default is its check interval plus 60 s)."""

        def get_heartbeat_ttl(self, job, working_time: float = 0.0) -> int:
            return ABANDONED_AFTER

        def request_stop(self, signum, frame) -> None:
            """Stopping the worker (SIGTERM, Ctrl-C) stops its training at the next step, which saves its run,
            then the worker exits (RQ's warm shutdown waits for it); a second signal kills it unsaved."""
            if self.horse_pid:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.horse_pid, signal.SIGTERM)  # runner.worker.run_job: stop, and save
            super().request_stop(signum, frame)

    return TrainingWorker


def serve(url: str, *, slots: int = 1, device: str = "cpu", burst: bool = False,
          on_ready: Callable[[], None] | None = None) -> None:
    """``attention-playground worker``: take trainings from the shared queue at ``url``, ``slots`` at a time, until
    stopped (SIGTERM or Ctrl-C: a running training is stopped and its run saved first).

    Loads torch, GloVe and the optimizer once (:func:`runner.worker.preload`), then runs ``slots`` RQ workers
    (forked from this process, so they share what it loaded); each forks a work horse per training."""
    global _device
    from runner.worker import preload

    if slots < 1:
        raise ConfigError(f"--slots {slots} is not valid", "use 1 or more: how many trainings this worker runs at once")
    client = connect(url)
    preload()
    _device = device
    host = socket.gethostname()
    if slots == 1:
        worker = _worker_class()([QUEUE], connection=client, name=f"{host}-{os.getpid()}-{secrets.token_hex(3)}",
                                 job_monitoring_interval=MONITOR_EVERY, maintenance_interval=MAINTENANCE_EVERY,
                                 worker_ttl=MAINTENANCE_EVERY + 15)  # an idle worker waits worker_ttl - 15 s per look
        if on_ready is not None:
            on_ready()
        worker.work(burst=burst, logging_level="WARNING")
        return
    children = []
    for _ in range(slots):
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                serve(url, slots=1, device=device, burst=burst)
            except BaseException:
                log.exception("worker slot failed")
                code = 1
            finally:
                os._exit(code)
        children.append(pid)
    if on_ready is not None:
        on_ready()

    def forward(signum: int, _frame: object) -> None:
        for child in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    for child in children:
        while True:
            try:
                os.waitpid(child, 0)
                break
            except ChildProcessError:
                break
            except InterruptedError:
                continue
