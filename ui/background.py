"""Trainings that go on while the learner reads another page of the app.

A training job stops itself when nobody has asked after it for a while (``runner.jobs.ORPHAN_AFTER``):
that is how the training of a closed tab ends. The page that started a job asks after it while
it is open; on every other page the router (``app.py``) calls :func:`keep_alive`, which keeps
asking, shows each job's progress in the sidebar with a link back to its page, and says when
it has ended. Without it a learner who read the Self-attention page for two minutes while a
run trained came back to a run stopped half-way.

Light on purpose (Streamlit only at import): the home page imports it before torch is loaded.
"""

from __future__ import annotations

import sys
from typing import Any

import streamlit as st

KEY = "background_jobs"  # session state: {key: (job, label, url_path of the page that shows it)}


def track(key: str, job: Any, *, label: str, page: str) -> None:
    """Keep ``job`` (a ``TrainingJob`` or ``JobSequence``) alive from every page; ``page`` is
    the ``url_path`` of the page that shows it (its link in the sidebar)."""
    st.session_state.setdefault(KEY, {})[key] = (job, label, page)


def forget(key: str) -> None:
    st.session_state.get(KEY, {}).pop(key, None)


def reattach(only: str | None = None) -> None:
    """Take the workspace's jobs that this session has not got (a reload, another tab) from the
    server's registry (:mod:`runner.registry`): kept in the session under their page's job key
    and tracked here, so heartbeats resume. ``only``: that job key alone."""
    registry = sys.modules.get("runner.registry")
    if registry is None:  # no page that trains has been opened on this server: no job to find
        return
    from ui import common  # (torch is loaded already: a page that trains was opened)

    for job_key, entry in registry.server_registry().entries(common.workspace_key()).items():
        if job_key not in st.session_state and only in (None, job_key):
            st.session_state[job_key] = entry.job
            track(job_key, entry.job, label=entry.label, page=entry.page)


def open_new_run(job: Any) -> None:
    """Once per saved run: the model picker of every page opens the run ``job`` saved (the
    learner may pick another afterwards, and that choice stands)."""
    path = getattr(job, "run_path", None) if job.done else None
    opened = st.session_state.setdefault("runs_opened_after_training", set())
    if path is not None and str(path) not in opened:
        opened.add(str(path))
        st.session_state["active_run"] = path.name


def keep_alive(pages: dict[str, Any], current: str) -> None:
    """Called by the router on every page run, before the page: the workspace's jobs found again
    after a reload (:func:`reattach`), heartbeats for the session's jobs every few seconds, and a
    sidebar line for each (with a link to its page from the others).

    The jobs of the page being shown get heartbeats and a line too: its own live view asks
    after them only once drawn, and a page can stop before that (e.g. the Train page waiting
    for an upload, or scrolled down to its runs list).

    Args:
        pages: url_path → ``st.Page``, for the links back.
        current: the url_path of the page about to run.
    """
    reattach()
    tracked = st.session_state.get(KEY)
    if not tracked:
        return
    for key, (job, _, page) in list(tracked.items()):
        open_new_run(job)
        if page == current and job.done:  # the learner is back where its results are shown
            del tracked[key]
    if not tracked:
        return
    from runner.jobs import KEEPALIVE_EVERY  # torch is loaded already: a job exists

    def alive(elsewhere: bool = False) -> bool:
        return any(job.alive for job, _, page in tracked.values() if not elsewhere or page != current)

    elsewhere = [alive(elsewhere=True)]  # as of this page run: the fragment's own runs compare with it

    @st.fragment(run_every=KEEPALIVE_EVERY if alive() else None)
    def status() -> None:
        for job, label, page in tracked.values():
            status = job.status()
            state = status.state
            if job.alive:
                job.heartbeat()
                if page == current:  # its view may be scrolled away, or not drawn (no data chosen); the
                    # numbers there change faster than this does, so only whether it trains or waits
                    st.caption(f"{label}: {_doing(state)}.")
                    continue
                waiting = state.startswith("waiting")  # no epoch yet: its place is on its page
                doing = "waiting in line" if waiting else f"{state} · epoch {status.epoch}/{status.epochs}"
                st.progress(status.progress, text=f"{label}: {doing}")
                st.page_link(pages[page], label=f"Watch on {pages[page].title}", icon=":material/monitoring:")
            elif page != current:  # (on its own page, the page shows how it ended)
                st.caption(f"{label}: {state}.")
                st.page_link(pages[page], label=f"Results on {pages[page].title}", icon=":material/task_alt:")
        if elsewhere[0] and not alive(elsewhere=True):  # other pages' trainings all ended since this page run:
            elsewhere[0] = False
            st.rerun(scope="app")  # draw the page again (the new runs in its lists), and stop asking

    with st.sidebar:
        status()


def _doing(state: str) -> str:
    """A living job's state in two words (a JobSequence's state ends with "(2 of 3)")."""
    return "paused" if state.startswith("paused") else "waiting in line" if state.startswith("waiting") else "in progress"
