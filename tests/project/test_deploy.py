"""The deploy recipes run as written: ``deploy/one-machine.sh`` starts Redis, a worker, two replicas and nginx,
a training from the command line goes through its queue, and Ctrl-C stops every part; ``deploy/systemd``'s units
verify."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import urllib.request

import pytest

from tests.helpers.broker import ROOT, free_port, wait_for


def _health(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
            return r.read().strip() == b"ok"
    except OSError:
        return False


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.e2e  # minutes: Redis, a worker, two replicas and nginx started
def test_the_one_machine_recipe_serves_trains_and_stops(tmp_path):
    ports = {"REDIS_PORT": free_port(), "PROXY_PORT": free_port()}
    apps = [free_port(), free_port()]
    env = {**os.environ, **{k: str(v) for k, v in ports.items()}, "APP_PORTS": " ".join(map(str, apps)),
           "ATTENTION_PLAYGROUND_RUNS": str(tmp_path / "runs"), "SLOTS": "1",
           "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}"}
    log = open(tmp_path / "recipe.log", "wb")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen(["bash", "deploy/one-machine.sh"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        proxy = f"http://127.0.0.1:{ports['PROXY_PORT']}"
        wait_for(lambda: proc.poll() is None and _health(proxy) and all(_health(f"http://127.0.0.1:{p}") for p in apps),
                 180, "the replicas behind nginx", every=0.5)
        out = tmp_path / "runs" / "from-the-cli"
        done = subprocess.run([sys.executable, "-m", "runner", "train", "data/small.csv", "--out", str(out), "--broker",
                               f"redis://127.0.0.1:{ports['REDIS_PORT']}/0", "--epochs", "2", "--quiet"],
                              cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout.strip().splitlines()[-1])["run"] == str(out)
    finally:
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C in its terminal
        proc.wait(60)
        log.close()
    every = [ports["REDIS_PORT"], ports["PROXY_PORT"], *apps]
    wait_for(lambda: not any(_listening(p) for p in every), 30, "every part to stop")
    assert "open http://127.0.0.1:" in (tmp_path / "recipe.log").read_text()


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze checks the units (Debian's systemd)")
def test_the_systemd_units_verify(tmp_path):
    """``deploy/systemd``'s units as systemd reads them, their paths pointed at this checkout: every line understood,
    every command there."""
    for unit in (ROOT / "deploy" / "systemd").glob("*.service"):
        text = (unit.read_text().replace("/srv/attention-playground/venv/bin/", f"{os.path.dirname(sys.executable)}/")
                .replace("/srv/attention-playground/app", str(ROOT))
                .replace("/etc/attention-playground.env", str(ROOT / "deploy" / "systemd" / "attention-playground.env"))
                .replace("User=attention-playground", "User=root"))
        name = unit.name.replace("@.service", "@8501.service")
        (tmp_path / name).write_text(text)
        done = subprocess.run(["systemd-analyze", "verify", str(tmp_path / name)], capture_output=True, text=True,
                              env={**os.environ, "SYSTEMD_LOG_LEVEL": "warning"}, timeout=60)
        complaints = [line for line in done.stderr.splitlines() if "ignoring" in line or "Unknown" in line
                      or "Failed" in line or "not executable" in line]
        assert done.returncode == 0 and not complaints, (unit.name, done.stderr)
