"""The server's process-wide settings (ui.server.configure_server): made by the app's entry point,
not by importing a helper module; the heap frozen only during the server's first runs."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ui import server

ROOT = Path(__file__).resolve().parents[2]


def fresh_python(code: str, **env: str) -> dict:
    """Run ``code`` (which prints one JSON line last) in a fresh interpreter: this one's settings
    depend on the tests before."""
    clean = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"} | env
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True, env=clean)
    return json.loads(out.stdout.strip().splitlines()[-1])


SETTINGS = ("json.dumps({'switch': sys.getswitchinterval(), 'frozen': gc.get_freeze_count(), "
            "'omp': os.environ.get('OMP_NUM_THREADS'), 'threads': torch.get_num_threads()})")


def test_importing_ui_common_changes_no_setting_of_the_process():
    got = fresh_python(f"import gc, json, os, sys\nimport ui.common\nimport torch\nprint({SETTINGS})")
    alone = fresh_python(f"import gc, json, os, sys\nimport torch\nprint({SETTINGS})")
    assert got == alone
    assert got["switch"] == pytest.approx(0.005) and got["frozen"] == 0 and got["omp"] is None


def test_after_the_app_runs_its_settings_are_in_effect(tmp_path):
    code = f"""
import gc, json, os, sys
from streamlit.testing.v1 import AppTest
at = AppTest.from_file("app.py", default_timeout=120).run()
assert not at.exception, at.exception
import torch  # (the home page may show its saved picture before torch is loaded)
at.run()  # a run with torch loaded freezes the heap
assert not at.exception, at.exception
print({SETTINGS})
"""
    got = fresh_python(code, ATTENTION_PLAYGROUND_RUNS=str(tmp_path / "runs"))
    assert got["switch"] == pytest.approx(server.SWITCH_INTERVAL) and server.SWITCH_INTERVAL < 0.005
    assert got["threads"] == server.SERVER_TORCH_THREADS == 1
    assert got["frozen"] > 100_000  # torch, plotly, pandas, streamlit…


def test_a_training_process_sets_its_own_thread_count_over_the_servers():
    """The job host inherits the server's OMP_NUM_THREADS; runner.worker's torch.set_num_threads(n)
    (or the ThreadTuner's) must win over it."""
    got = fresh_python("import json, torch\ntorch.set_num_threads(2)\nprint(json.dumps(torch.get_num_threads()))",
                       OMP_NUM_THREADS="1")
    assert got == 2


def test_configure_server_sets_the_process_once(monkeypatch):
    monkeypatch.setattr(server, "_configured", False)
    monkeypatch.setattr(server, "_freezes", server.FREEZE_RUNS)  # (no freezing in this test)
    before = sys.getswitchinterval()
    try:
        sys.setswitchinterval(0.005)
        server.configure_server()
        assert sys.getswitchinterval() == pytest.approx(server.SWITCH_INTERVAL)
        sys.setswitchinterval(0.002)
        server.configure_server()  # every page run calls it: once is enough
        assert sys.getswitchinterval() == pytest.approx(0.002)
    finally:
        sys.setswitchinterval(before)


def test_page_runs_freeze_the_heap_only_during_the_servers_first_runs_with_torch(monkeypatch):
    calls = []
    monkeypatch.setattr(server, "_freezes", 0)
    monkeypatch.setattr(gc, "freeze", lambda: calls.append(1))
    torch = sys.modules.get("torch")
    monkeypatch.delitem(sys.modules, "torch", raising=False)  # a cold start: the home page's first runs come before torch
    server.settle_heap()
    assert calls == []
    monkeypatch.setitem(sys.modules, "torch", torch or object())
    for _ in range(server.FREEZE_RUNS + 3):
        server.settle_heap()
    assert len(calls) == server.FREEZE_RUNS  # later runs' objects are collected as usual
