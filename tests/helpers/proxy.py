"""nginx in front of app replicas, for tests: ``deploy/nginx-replicas.conf`` as the docs give it, its ports and
paths replaced (Debian's nginx: scripts/test.sh installs it)."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

from tests.helpers.broker import ROOT, free_port, wait_for


def replicas_conf(replicas: Sequence[str], port: int, folder: Path) -> str:
    """The recipe's text for ``replicas`` (``host:port`` each), listening on ``port``, its files in ``folder``: as
    ``deploy/one-machine.sh`` makes it (``deploy/nginx-conf.sh``)."""
    done = subprocess.run(["bash", str(ROOT / "deploy" / "nginx-conf.sh"), str(port), str(folder), *replicas],
                          capture_output=True, text=True, check=True)
    return done.stdout


@contextlib.contextmanager
def nginx(replicas: Sequence[str], folder: Path) -> Iterator[str]:
    """nginx on a free port in front of ``replicas``; yields its URL."""
    exe = shutil.which("nginx") or "/usr/sbin/nginx"
    assert Path(exe).exists(), "nginx is missing: apt-get install nginx (scripts/test.sh does)"
    port = free_port()
    conf = folder / "nginx.conf"
    conf.write_text(replicas_conf(replicas, port, folder))
    test = subprocess.run([exe, "-t", "-c", str(conf), "-p", str(folder)], capture_output=True, text=True)
    assert test.returncode == 0, test.stderr
    proc = subprocess.Popen([exe, "-c", str(conf), "-p", str(folder), "-g", "daemon off;"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def listening() -> bool:
        assert proc.poll() is None, (folder / "nginx-error.log").read_text()
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    try:
        wait_for(listening, 20, "nginx to listen")
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


@contextlib.contextmanager
def replicas_behind_nginx(runs: Path, env: dict[str, str], folder: Path, n: int = 2
                          ) -> Iterator[tuple[str, dict[str, subprocess.Popen]]]:
    """``n`` app servers on one runs folder (``env`` added to theirs) behind :func:`nginx`; yields nginx's URL and each
    replica's process by its ``host:port`` (what nginx's ``X-Replica`` header names)."""
    from tests.helpers.browser import app_process

    with contextlib.ExitStack() as stack:
        started = [stack.enter_context(app_process(runs, env=env, timeout=120)) for _ in range(n)]
        replicas = {url.removeprefix("http://"): proc for url, proc in started}
        yield stack.enter_context(nginx(list(replicas), folder)), replicas
