"""Trainings that go on while the learner reads another page of the app.

A training job stops itself when nobody has asked after it for a while (``runner.jobs.ORPHAN_AFTER``):
that is how the training of a closed tab ends. The page that started a job asks after it while
it is open; on every other page the router (``app.py``) calls :func:`keep_alive`, which keeps
asking, shows each job's progress in the sidebar with a link back to its page, and says when
it has ended. Without it a learner who reads another page for longer than that while a run
trains comes back to a run stopped half-way.

The jobs themselves are kept in the server's registry (:mod:`runner.registry`, for the workspace); the
session keeps only which of them it follows, by number, one per page that trains.

Light on purpose (Streamlit only at import): the home page imports it before torch is loaded.
"""

from __future__ import annotations

import sys
from typing import Any

import streamlit as st

FOLLOWED = "followed_jobs"  # session state: {a page's job key: the number of the job it follows (runner.registry)}


def _registry() -> Any | None:
    """The server's registry of jobs (:mod:`runner.registry`); None while no page that trains has been
    opened on this server (no job to find, and nothing of ``runner`` imported)."""
    registry = sys.modules.get("runner.registry")
    return None if registry is None else registry.server_registry()


def _workspace() -> str:
    from ui import common  # (torch is loaded already: a page that trains was opened)

    return common.workspace_key()


def follow(job_key: str, number: int) -> None:
    """This session follows the workspace's job ``number`` as its page ``job_key``'s job."""
    st.session_state.setdefault(FOLLOWED, {})[job_key] = number


def unfollow(job_key: str) -> Any | None:
    """Stop following the page ``job_key``'s job; returns its registry entry (None if none)."""
    number = st.session_state.get(FOLLOWED, {}).pop(job_key, None)
    registry = _registry()
    return None if number is None or registry is None else registry.get(_workspace(), number)


def followed() -> dict[str, Any]:
    """The registry's entries of the jobs this session follows, by their page's job key (one the registry
    has let go of is let go here too)."""
    numbers, registry = st.session_state.get(FOLLOWED), _registry()
    if not numbers or registry is None:
        return {}
    workspace, entries = _workspace(), {}
    for job_key, number in list(numbers.items()):
        if (entry := registry.get(workspace, number)) is None:
            del numbers[job_key]
        else:
            entries[job_key] = entry
    return entries


def reattach(only: str | None = None) -> None:
    """Follow the workspace's jobs (the latest of each page) that this session does not follow (a reload,
    another tab), so heartbeats resume. ``only``: that page's job key alone."""
    registry = _registry()
    if registry is None:
        return
    training_page = sys.modules.get("ui.training_page")
    if training_page is not None:  # with a shared queue: jobs this workspace submitted on other app servers
        training_page.adopt_listed_jobs(only)
    numbers = st.session_state.setdefault(FOLLOWED, {})
    for job_key, entry in registry.entries(_workspace()).items():
        if job_key not in numbers and only in (None, job_key):
            numbers[job_key] = entry.number


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
    tracked = {}  # the sidebar's: the session's jobs whose page has not shown how they ended
    for entry in followed().values():
        open_new_run(entry.job)
        if entry.page == current and entry.job.done:  # the learner is back where its results are shown
            _registry().drop(_workspace(), entry.job_key, entry.job)
        elif not entry.shown:
            tracked[entry.job_key] = (entry.job, entry.label, entry.page)
    if not tracked:
        return
    from runner.jobs import KEEPALIVE_EVERY  # torch is loaded already: a job exists

    def alive(elsewhere: bool = False) -> bool:
        return any(job.alive for job, _, page in tracked.values() if not elsewhere or page != current)

    elsewhere = [alive(elsewhere=True)]  # as of this page run: the fragment's own runs compare with it

    @st.fragment(run_every=KEEPALIVE_EVERY if alive() else None)
    def status() -> None:
        for job, label, page in tracked.values():
            now = job.status()
            state = now.state
            if job.alive:
                job.heartbeat()
                if page == current:  # its view may be scrolled away, or not drawn (no data chosen); the
                    # numbers there change faster than this does, so only whether it trains or waits
                    st.caption(f"{label}: {_doing(state)}.")
                    continue
                waiting = state.startswith("waiting")  # no epoch yet: its place is on its page
                doing = "waiting in line" if waiting else f"{state} · epoch {now.epoch}/{now.epochs}"
                st.progress(now.progress, text=f"{label}: {doing}")
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
