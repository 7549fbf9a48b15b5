"""The real parts of the shared queue for tests: a redis-server of their own on a free port, and workers
(``python -m runner worker``) as processes. No mocks: scripts/test.sh installs Debian's redis-server."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(condition: Callable[[], object], timeout: float, what: str, every: float = 0.05):
    """``condition()``'s first true value, checked every ``every`` seconds; AssertionError after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(every)


class RedisServer:
    """``redis-server`` on a free port of 127.0.0.1, nothing saved to disk; :meth:`stop` and :meth:`start` again
    (the same port) for a broker that restarts."""

    def __init__(self, workdir: Path) -> None:
        exe = shutil.which("redis-server")
        assert exe, "redis-server is missing: apt-get install redis-server (scripts/test.sh does)"
        self.exe, self.workdir, self.port = exe, workdir, free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None
        self.start()

    def start(self) -> None:
        import redis

        self.log = open(self.workdir / f"redis-{self.port}.log", "ab")  # noqa: SIM115 (closed in stop)
        self.process = subprocess.Popen(
            [self.exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.workdir)], stdout=self.log, stderr=subprocess.STDOUT)
        client = redis.Redis(port=self.port, socket_connect_timeout=1)

        def up() -> bool:
            assert self.process.poll() is None, (self.workdir / f"redis-{self.port}.log").read_text()
            try:
                return bool(client.ping())
            except redis.RedisError:
                return False

        wait_for(up, 20, "redis-server to answer")
        client.close()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self.log.close()

    def client(self):
        import redis

        return redis.Redis.from_url(self.url)


class Worker:
    """``python -m runner worker --broker URL`` in a process group of its own (its work horses with it)."""

    def __init__(self, url: str, workdir: Path, *extra: str, env: dict[str, str] | None = None) -> None:
        self.url = url
        self.log_path = workdir / f"worker-{time.monotonic_ns()}.log"
        self.log = open(self.log_path, "wb")  # noqa: SIM115 (closed in stop)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "runner", "worker", "--broker", url, *extra], cwd=ROOT,
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True, env={**os.environ, **(env or {})})

    def names(self) -> set[str]:
        import redis
        from rq import Worker as RQWorker

        client = redis.Redis.from_url(self.url)
        try:
            return {w.name for w in RQWorker.all(connection=client) if f"-{self.process.pid}-" in w.name}
        finally:
            client.close()

    def wait_ready(self, timeout: float = 120) -> Worker:
        def ready() -> bool:
            assert self.process.poll() is None, f"the worker exited: {self.output()}"
            return bool(self.names())

        wait_for(ready, timeout, "the worker to take jobs", every=0.2)
        return self

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill(self) -> None:
        """As its machine dying would: the worker killed at once (its work horse dies with it)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)
        else:  # its horses may outlive it only by mistake: take the group down anyway
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
        self.log.close()
