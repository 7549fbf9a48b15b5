"""A page that trains, set up in one call: what it needs to start, watch and keep a training alive.

    page = training_page(__file__, "📈", job_key="train_job")
    ...
    page.track(job, label="Training “mine”")       # in the Start button's callback
    job = page.job                                   # this session's, else the workspace's (a reload)
    page.live(draw, every=0.4 if running else None)  # heartbeat + the page's live view, redrawn in place
    page.shown(job)                                  # once its results are drawn

The page's title and its address (for the sidebar's "Watch on …" links) are its entry in
:mod:`ui.navigation`, the list the router (``app.py``) is built from, found by the page's file.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from runner import jobs
from runner.registry import server_registry
from ui import background, common, live_chart
from ui.common import page_setup, still_live_views
from ui.navigation import page_of


class TrainingPage:
    """The page's job (a ``TrainingJob`` or ``JobSequence``), kept in the session under ``job_key``
    and alive from every other page of the app (:mod:`ui.background`) under the same key; also
    registered for the workspace (:mod:`runner.registry`), so a reload or another tab of the same
    workspace finds it again."""

    def __init__(self, job_key: str, url_path: str) -> None:
        self.job_key, self.url_path = job_key, url_path

    @property
    def job(self) -> Any | None:
        """This session's job, else the workspace's job of this page (re-attached: kept alive from here on)."""
        if self.job_key not in st.session_state:
            background.reattach(self.job_key)
        return st.session_state.get(self.job_key)

    @property
    def own_job(self) -> Any | None:
        """This session's job only (e.g. to ignore a second click on Start)."""
        return st.session_state.get(self.job_key)

    def track(self, job: Any, *, label: str) -> None:
        """Make ``job`` the page's job, kept alive and shown in the sidebar of the other pages."""
        st.session_state[self.job_key] = job
        background.track(self.job_key, job, label=label, page=self.url_path)
        server_registry().register(common.workspace_key(), self.job_key, job, label=label, page=self.url_path)

    def shown(self, job: Any) -> None:
        """The page has shown how ``job`` ended: a reload from now on starts afresh (its run is on disk)."""
        server_registry().drop(common.workspace_key(), self.job_key, job)

    def forget(self) -> Any | None:
        """Drop the page's job (a finished run stays saved on disk); returns it (None if none)."""
        background.forget(self.job_key)
        job = st.session_state.pop(self.job_key, None)
        if job is not None:
            self.shown(job)
        return job

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
