"""The server's jobs by (workspace, page): how a reload or a second tab of a workspace finds its job again.

A page keeps its job in the browser session (``st.session_state``), which a reload or a new tab
does not have. So a page that starts a job also registers it here, under the workspace's key
(``ui.common.workspace_key()``: ``local`` on one's own machine) and the page's job key; a session
without a job of its own under that key takes the registered one, on whichever page it opens
(``ui.background.reattach``). Only a workspace's own key finds its entries: another workspace's
jobs are never returned.

One entry per (workspace, job key): the job registered last. An entry is dropped when its page
has shown how the job ended (or the learner pressed Reset), and an ended job's entry at the
latest ``KEEP_ENDED`` seconds after its end was first noticed, so memory stays bounded (a
finished job holds its run).

Light on purpose: no torch, no Streamlit (the jobs are opaque: anything with ``done``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

KEEP_ENDED = 10 * 60.0  # seconds an ended job stays findable when its page never showed it


@dataclass
class Entry:
    """A page's job, with what the sidebar shows of it (``ui.background.track``)."""

    job: Any  # a runner.jobs.TrainingJob or JobSequence
    label: str
    page: str  # url_path of the page that shows it
    ended_at: float | None = None  # when it was first seen ended (the registry's clock)


@dataclass
class JobRegistry:
    """The server's jobs per (workspace key, job key); thread-safe (sessions are threads)."""

    keep_ended: float = KEEP_ENDED
    clock: Callable[[], float] = time.monotonic
    _entries: dict[tuple[str, str], Entry] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def register(self, workspace: str, job_key: str, job: Any, *, label: str, page: str) -> None:
        """``job`` is the page ``job_key``'s job of ``workspace`` (replacing an earlier one)."""
        with self._lock:
            self._prune()
            self._entries[workspace, job_key] = Entry(job, label, page)

    def entries(self, workspace: str) -> dict[str, Entry]:
        """``workspace``'s entries by job key (none of another workspace's)."""
        with self._lock:
            self._prune()
            return {job_key: entry for (owner, job_key), entry in self._entries.items() if owner == workspace}

    def drop(self, workspace: str, job_key: str, job: Any) -> None:
        """Forget ``job`` (shown, or reset); a newer job registered under the same keys stays."""
        with self._lock:
            entry = self._entries.get((workspace, job_key))
            if entry is not None and entry.job is job:
                del self._entries[workspace, job_key]

    def __len__(self) -> int:
        with self._lock:
            self._prune()
            return len(self._entries)

    def _prune(self) -> None:
        now = self.clock()
        for keys, entry in list(self._entries.items()):
            if not entry.job.done:
                continue
            if entry.ended_at is None:
                entry.ended_at = now
            elif now - entry.ended_at >= self.keep_ended:
                del self._entries[keys]


_server_registry: JobRegistry | None = None
_server_lock = threading.Lock()


def server_registry() -> JobRegistry:
    """This server's registry (one per process)."""
    global _server_registry
    with _server_lock:
        if _server_registry is None:
            _server_registry = JobRegistry()
        return _server_registry
