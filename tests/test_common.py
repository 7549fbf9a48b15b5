"""ui.common's server-wide settings: the garbage collector leaves the server's long-lived objects alone."""

from __future__ import annotations

import gc
import subprocess
import sys

from ui import common


def test_importing_the_app_freezes_what_the_imports_loaded():
    """A fresh process (this one's heap depends on the tests before): after ``import ui.common`` the
    modules' objects are out of the full collections' reach."""
    code = "import gc, ui.common; print(gc.get_freeze_count(), len(gc.get_objects()))"
    out = subprocess.run([sys.executable, "-c", code], cwd=common.ROOT, capture_output=True, text=True, check=True)
    frozen, tracked = map(int, out.stdout.split())
    assert frozen > 100_000  # torch, plotly, pandas, streamlit…
    assert tracked < frozen / 10  # a full collection walks only what is not frozen


def test_page_runs_freeze_the_heap_only_during_the_servers_first_runs(monkeypatch):
    calls = []
    monkeypatch.setattr(common, "_runs_seen", 0)
    monkeypatch.setattr(gc, "freeze", lambda: calls.append(1))
    for _ in range(common.FREEZE_RUNS + 3):
        common.settle_heap()
    assert len(calls) == common.FREEZE_RUNS  # later runs' objects are collected as usual
