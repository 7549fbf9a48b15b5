"""The server's training jobs by workspace: the one place a page's job is kept.

A page that starts a job registers it here, under the workspace's key (``ui.common.workspace_key()``:
``local`` on one's own machine) and the page's job key, and gets the job's number; the browser
session keeps only that number (``ui.background``: which job of each page it follows). A session
that follows no job of a page (a reload, a second tab) takes the workspace's latest one of that page
(``ui.background.reattach``). Only a workspace's own key finds its entries: another workspace's
jobs are never returned.

A job whose page has shown how it ended (or whose page was reset) is no longer found by a reload,
nor shown in the sidebar, but a session that follows it keeps it; an ended job is dropped once no
session has asked for it for ``KEEP_ENDED`` seconds, so memory stays bounded (a finished job holds
its run).

Light on purpose: no torch, no Streamlit (the jobs are opaque: anything with ``done``).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

KEEP_ENDED = 30 * 60.0  # seconds an ended job stays after it was last asked for


@dataclass
class Entry:
    """A page's job, with what the sidebar shows of it (``ui.background``)."""

    number: int  # what a session that follows it keeps
    job: Any  # a runner.jobs.TrainingJob or JobSequence
    job_key: str  # the page's key for its job
    label: str
    page: str  # url_path of the page that shows it
    shown: bool = False  # its page showed how it ended, or was reset: a reload no longer finds it
    ended_at: float | None = None  # when it was first seen ended, or last asked for since (the registry's clock)


@dataclass
class JobRegistry:
    """The server's jobs per workspace key; thread-safe (sessions are threads)."""

    keep_ended: float = KEEP_ENDED
    clock: Callable[[], float] = time.monotonic
    _entries: dict[tuple[str, int], Entry] = field(default_factory=dict)
    _numbers: itertools.count = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def register(self, workspace: str, job_key: str, job: Any, *, label: str, page: str) -> int:
        """``job`` is now the page ``job_key``'s latest job of ``workspace``; returns its number."""
        with self._lock:
            self._prune()
            number = next(self._numbers)
            self._entries[workspace, number] = Entry(number, job, job_key, label, page)
            return number

    def get(self, workspace: str, number: int) -> Entry | None:
        """``workspace``'s job ``number`` (asked for: an ended one stays ``keep_ended`` seconds more)."""
        with self._lock:
            self._prune()
            entry = self._entries.get((workspace, number))
            if entry is not None and entry.ended_at is not None:
                entry.ended_at = self.clock()
            return entry

    def entries(self, workspace: str) -> dict[str, Entry]:
        """``workspace``'s latest job of each page's job key, of those a reload finds (none of another workspace's)."""
        with self._lock:
            self._prune()
            latest: dict[str, Entry] = {}
            for (owner, _), entry in sorted(self._entries.items(), key=lambda item: item[0][1]):
                if owner == workspace and not entry.shown:
                    latest[entry.job_key] = entry
            return latest

    def jobs(self, workspace: str) -> list[Any]:
        """Every job ``workspace`` has here, those a reload no longer finds included."""
        with self._lock:
            return [entry.job for (owner, _), entry in self._entries.items() if owner == workspace]

    def drop(self, workspace: str, job_key: str, job: Any) -> None:
        """Its page showed how ``job`` ended, or was reset: a reload no longer finds it (a newer job stays)."""
        with self._lock:
            for (owner, _), entry in self._entries.items():
                if owner == workspace and entry.job_key == job_key and entry.job is job:
                    entry.shown = True

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
