"""A page that trains, set up in one call: what it needs to start, watch and keep a training alive.

    page = training_page(__file__, "📈", job_key="train_job")
    ...
    job, note = page.start([(name, spec)], runs_dir=..., label="Training “mine”", dataset="small.csv")
    job = page.job                                   # this session's, else the workspace's (a reload)
    page.live(draw, every=0.4 if running else None)  # heartbeat + the page's live view, redrawn in place
    page.shown(job)                                  # once its results are drawn

The page's title and its address (for the sidebar's "Watch on …" links) are its entry in
:mod:`ui.navigation`, the list the router (``app.py``) is built from, found by the page's file.

The one ui module that imports :mod:`runner` (``tests/test_layers.py``): pages and their views start,
watch and describe trainings through it, and it re-exports the few names of ``runner`` they draw with.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import streamlit as st

from attention_core.errors import InputError
from attention_core.training import TrainerSpec
from runner import distributed, jobs
from runner.jobs import (  # noqa: F401 — re-exported for the views
    LIVE_REFRESH,
    NO_WORKER,
    JobSequence,
    JobStatus,
    TrainingJob,
    active_jobs,
    live_refresh_seconds,
)
from runner.queue import apply_caps, ordinal, server_queue  # noqa: F401 — ordinal re-exported for the views
from runner.registry import server_registry
from ui import background, common, live_chart
from ui.common import page_setup, still_live_views
from ui.navigation import page_of

log = logging.getLogger(__name__)
try:
    from redis import RedisError
except ImportError:  # no shared queue installed (pyproject's "distributed" extra): nothing raises it
    class RedisError(Exception):
        pass


class CannotStart(InputError):
    """Why a Start started nothing, worded for the page to show as it is."""


class TrainingPage:
    """The page's job (a ``TrainingJob`` or ``JobSequence``): kept in the server's registry for the
    workspace under ``job_key`` (:mod:`runner.registry`, the one place a job is kept, so a reload or
    another tab of the same workspace finds it again); the session follows it by its number, and keeps
    it alive from every other page of the app (:mod:`ui.background`)."""

    def __init__(self, job_key: str, url_path: str) -> None:
        self.job_key, self.url_path = job_key, url_path

    @property
    def job(self) -> Any | None:
        """This session's job, else the workspace's job of this page (re-attached: kept alive from here on)."""
        job = self.own_job
        if job is None:
            background.reattach(self.job_key)
            job = self.own_job
        return job

    @property
    def own_job(self) -> Any | None:
        """The job this session follows only (e.g. to ignore a second click on Start)."""
        entry = background.followed().get(self.job_key)
        return entry.job if entry is not None else None

    def start(self, trainings: Sequence[tuple[str, TrainerSpec]], *, runs_dir: Path, label: str, dataset: str = "",
              keep: bool = True, titles: Mapping[str, str] | None = None) -> tuple[TrainingJob | JobSequence, str | None]:
        """Start the page's training: one ``(name, spec)`` is a :class:`TrainingJob` saved as ``name`` (or
        ``name-2``…) in ``runs_dir``; several are a :class:`JobSequence`, trained one after the other.

        Everything a Start needs, in order: the shared server's caps (a time budget lowered, or a refusal),
        the workspace's disk room, each spec's check, the server's queue (owned by the workspace), the
        restart journal, and the page's job: registered for the workspace (a reload finds it) and tracked in
        the sidebar under ``label``. ``keep``: the runs go to the learner's runs folder (its room is checked,
        and a single training journaled as trained on ``dataset``); False for a temporary folder.

        Returns the job and the caps' note for the learner (None: nothing lowered); raises
        :class:`CannotStart` to show as it is ("Cannot start: …", or for one training
        of several "<its title> cannot start: …", ``titles`` by name); nothing is started then.
        """
        try:
            if keep:  # a workspace at its disk limit says what to delete, before anything is trained
                common.check_room(_expected_bytes([spec for _, spec in trainings]))
            capped, notes = [], []
            for name, spec in trainings:
                try:
                    train_config, note = apply_caps(spec.train_config, len(spec.dataset))
                    spec = dataclasses.replace(spec, train_config=train_config)
                    spec.check()  # a bad combination (e.g. 3 heads for model dim 64) is a ConfigError with a hint
                except InputError as err:
                    if len(trainings) == 1:
                        raise
                    raise CannotStart(f"{(titles or {}).get(name, name)} cannot start: {err}") from err
                capped.append((name, spec))
                notes.append(note)
            if len(capped) == 1:
                name, spec = capped[0]
                job: TrainingJob | JobSequence = TrainingJob(  # the training process builds it
                    spec, runs_dir, name, listing={"workspace": common.workspace_key(), "job_key": self.job_key,
                                                   "label": label, "page": self.url_path})  # (found by other servers)
                job.submit(server_queue(), common.workspace_key(), page=self.url_path if keep else None,
                           dataset=dataset)  # journaled (keep) until it ends
            else:
                job = JobSequence(capped, runs_dir,  # one after the other, each started by the end of the one before
                                  listing={"workspace": common.workspace_key(), "job_key": self.job_key,
                                           "label": label, "page": self.url_path})  # (with a shared queue)
                job.submit(server_queue(), common.workspace_key())  # one training of the learner in the queue
        except CannotStart:
            raise
        except InputError as err:
            raise CannotStart(f"Cannot start: {err}") from err
        self.track(job, label=label)
        return job, next((n for n in notes if n), None)

    def track(self, job: Any, *, label: str) -> None:
        """Make ``job`` the page's job, registered for the workspace and followed by this session (kept
        alive and shown in the sidebar of the other pages)."""
        number = server_registry().register(common.workspace_key(), self.job_key, job, label=label, page=self.url_path)
        background.follow(self.job_key, number)

    def shown(self, job: Any) -> None:
        """The page has shown how ``job`` ended: a reload from now on starts afresh (its run is on disk), on this
        server and, with a shared queue, on the others."""
        server_registry().drop(common.workspace_key(), self.job_key, job)
        url = distributed.broker_url()
        ids = [job.job_id] if isinstance(job, TrainingJob) else job.job_ids if isinstance(job, JobSequence) else []
        if url is not None and ids:
            try:
                distributed.unlist(url, common.workspace_key(), self.job_key, ids)
            except (InputError, RedisError) as err:  # the broker is down: another server may offer it once more
                log.warning("could not unlist job %s from the shared queue: %s", job.job_id, err)

    def forget(self) -> Any | None:
        """Drop the page's job (a finished run stays saved on disk); returns it (None if none)."""
        entry = background.unfollow(self.job_key)
        if entry is None:
            return None
        self.shown(entry.job)
        return entry.job

    def live(self, draw: Callable[[Any], None], *, every: float | None) -> None:
        """A fragment redrawn every ``every`` seconds (None: once, with the page): a heartbeat for
        the job, then ``draw(job)``. Nothing while the page has no job."""

        @st.fragment(run_every=every)
        def live_view() -> None:
            job = self.job
            if job is None:
                return
            job.heartbeat()
            draw(job)

        live_view()


def time_left(snap: jobs.JobStatus) -> str:
    """" · about 40 s left" (" · under 1 s left"), or nothing once it has ended or while its pace is unknown."""
    if snap.eta_seconds is None or snap.done:
        return ""
    return " · under 1 s left" if snap.eta_seconds < 1 else f" · about {snap.eta_seconds:.0f} s left"


SCRATCH = ".scratch"  # in a runs folder: session-only runs that a shared queue's workers save (hidden from lists)
SCRATCH_KEPT = 24 * 3600  # seconds a session-only folder there is kept
SCRATCH_MARK = ".session-only"  # in each folder scratch_folder made: only folders holding it are ever removed


def unheard_said(seconds: float, restarts: int) -> str:
    """A training on a shared queue whose worker has gone silent (:class:`runner.protocol.Unheard`): what that may
    mean, and what the queue does about it."""
    then = ("starts the training again from the beginning on another worker" if restarts < distributed.RETRIES
            else "ends it: it was started again once already")
    return (f"No word from its worker for {seconds:.0f} s: its machine or process may have stopped. If so, the queue "
            f"finds out within about {distributed.FOUND_DEAD_WITHIN} s of its last word and {then}. Until then the "
            "progress below is as last reported.")


def scratch_folder(prefix: str) -> Path:
    """A new folder for runs kept for this session only (the Seed experiment's). With a shared queue its workers,
    on other machines, save there: it is then on the storage they share, hidden in the visitor's runs folder (the
    runs list skips it; our folders there — ``prefix…`` holding :data:`SCRATCH_MARK` — older than a day are removed
    here, nothing else is touched);
    otherwise the system's temporary folder."""
    if distributed.broker_url() is None:
        return Path(tempfile.mkdtemp(prefix=prefix))
    root = common.runs_dir() / SCRATCH
    root.mkdir(parents=True, exist_ok=True)
    for old in root.glob(f"{prefix}*"):
        with contextlib.suppress(OSError):
            if (old.is_dir() and not old.is_symlink() and (old / SCRATCH_MARK).is_file()
                    and time.time() - old.stat().st_mtime > SCRATCH_KEPT):
                shutil.rmtree(old)
    made = Path(tempfile.mkdtemp(prefix=prefix, dir=root))
    (made / SCRATCH_MARK).write_text("a session-only folder of Attention Playground: removed a day after it was made\n")
    return made


def adopt_listed_jobs(only: str | None = None) -> None:
    """With a shared queue: the workspace's page jobs that other app servers submitted (a learner whose server
    died, now on this one), registered here and watched from their first report. ``only``: that page's job key."""
    url = distributed.broker_url()
    if url is None:
        return
    workspace, registry = common.workspace_key(), server_registry()
    try:
        listed = distributed.listed(url, workspace)
        known = {getattr(job, "job_id", None) for job in registry.jobs(workspace)}
        for job_key, job_ids in listed.items():
            if only not in (None, job_key) or job_ids[0] in known:
                continue
            described = [distributed.described(url, job_id) for job_id in job_ids]
            if None in described or described[0].listing is None:  # (the queue has forgotten it: a day old)
                continue
            listing = described[0].listing
            if listing.get("sequence"):  # a sequence (the Seed experiment's trainings)
                job = JobSequence.attach([(d, distributed.watch(url, d.job_id)) for d in described])
            else:
                job = TrainingJob.attach(described[0], distributed.watch(url, job_ids[0]))
            registry.register(workspace, job_key, job, label=listing["label"], page=listing["page"])
    except (InputError, RedisError) as err:  # the broker is down: this server's own jobs are still shown
        log.warning("could not look up the workspace's trainings on the shared queue: %s", err)


def live_journal_ids() -> frozenset[str] | None:
    """The journal entries of trainings still going: this server's, and with a shared queue every server's; None
    when the broker cannot be reached (then no training is said to be interrupted: never on a guess)."""
    local = jobs.live_journal_ids()
    url = distributed.broker_url()
    if url is None:
        return local
    try:
        return local | distributed.live_journal_ids(url)
    except (InputError, RedisError) as err:
        log.warning("could not ask the shared queue which trainings are live: %s", err)
        return None


def training_page(script: str, icon: str, *, job_key: str) -> TrainingPage:
    """Set up the page whose file is ``script`` (its ``__file__``): its config (title from
    :mod:`ui.navigation`, :func:`~ui.common.page_setup`), live views without animations,
    plotly.js for the live charts (loaded while the learner reads the page) and the process that
    trains jobs (started once per server, ready before Start is clicked); a session without a
    job takes the workspace's job of this page (a reload, another tab). ``job_key``: where the
    page keeps its job in the session."""
    entry = page_of(script)
    page_setup(entry.title, icon)
    still_live_views()
    with st.sidebar:  # where its empty element leaves no gap in the page
        live_chart.preload()
    jobs.warm_up()
    page = TrainingPage(job_key, entry.url_path)
    _ = page.job  # a reload: the workspace's job, kept alive from now on even if the page stops early
    return page


def _expected_bytes(specs: Sequence[TrainerSpec]) -> int:
    """The room the runs of ``specs`` will take that matters to a workspace's disk cap: a fine-tuned encoder's
    (tens of MB: its trained layers and their snapshots); the small model's (~1 MB) are not counted, as before."""
    from attention_core.pretrained import fine_tuned_run_bytes  # torch: never before the first page

    return sum(fine_tuned_run_bytes(spec.model_config, spec.train_config.snapshots) for spec in specs
               if spec.model_config.base is not None)
