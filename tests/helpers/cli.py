"""The command line, two ways: ``python -m attention_core …`` in a process of its own (:func:`cli_process`: what
exit status, stdout and stderr a real process gives, torch imported again each time, 1–2 s) and
:func:`attention_core.cli.main` in the test's process (:func:`cli_in_process`: the same command, the same
three results, in milliseconds once torch is imported). A test of a command's behaviour uses the second; the few
tests of the process contract (the exit status, one ``error:`` line on stderr, the JSON line on stdout) the first.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def cli_process(*args: str, cwd: Path = ROOT, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``python -m attention_core ARGS`` in ``cwd``: its exit status, stdout and stderr."""
    return subprocess.run([sys.executable, "-m", "attention_core", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env=env)


@dataclass(frozen=True)
class Finished:
    """What :func:`cli_in_process` gives back: a :class:`subprocess.CompletedProcess`'s three fields."""

    returncode: int
    stdout: str
    stderr: str


def cli_in_process(capsys: pytest.CaptureFixture[str], *args: str, cwd: Path = ROOT) -> Finished:
    """``attention_core.cli.main(ARGS)`` in ``cwd``, with what it printed (``capsys``) and its exit status: its
    return value, or the status of the ``SystemExit`` that argparse raises on a usage error. What the command
    changes in the process is put back: the working folder, torch's thread count (``--threads``), the Ctrl-C
    handler that ``train`` installs. An exception that escapes ``main`` fails the test (a process would print a
    traceback)."""
    import torch

    from attention_core import cli

    capsys.readouterr()  # only what this command prints
    threads, on_ctrl_c = torch.get_num_threads(), signal.getsignal(signal.SIGINT)
    try:
        with contextlib.chdir(cwd):
            try:
                code = cli.main(list(args))
            except SystemExit as exit_:
                code = 0 if exit_.code is None else exit_.code if isinstance(exit_.code, int) else 1
    finally:
        torch.set_num_threads(threads)
        signal.signal(signal.SIGINT, on_ctrl_c)
    out, err = capsys.readouterr()
    return Finished(code, out, err)
