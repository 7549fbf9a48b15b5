"""The shell commands the README and docs/deploy.md give, run as written (with a stand-in for ``streamlit``).

A command that starts the shared server must leave the teacher with their secret: a token made inside
``$(…)`` and handed only to the server is never seen again, and the teacher cannot publish.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TEACHER_VARIABLE = "ATTENTION_PLAYGROUND_TEACHER_TOKEN"


def shell_block(doc: Path, containing: str) -> str:
    """The one ```bash block of ``doc`` that contains ``containing``."""
    blocks = [b for b in re.findall(r"```bash\n(.*?)```", doc.read_text(), flags=re.S) if containing in b]
    assert len(blocks) == 1, f"{doc.name}: {len(blocks)} bash blocks with {containing!r}"
    return blocks[0]


def run_with_a_stand_in_streamlit(block: str, folder: Path) -> tuple[subprocess.CompletedProcess, dict[str, str]]:
    """Run ``block`` with bash in ``folder``; ``streamlit`` is a script that records its environment and arguments."""
    bin_dir = folder / "bin"
    bin_dir.mkdir(exist_ok=True)
    seen = folder / "streamlit-saw"
    stand_in = bin_dir / "streamlit"
    stand_in.write_text(f'#!/bin/sh\n{{ env; echo "ARGS=$*"; }} > "{seen}"\n')
    stand_in.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}/usr/bin:/bin"}
    env.pop(TEACHER_VARIABLE, None)
    out = subprocess.run(["bash", "-c", block], cwd=folder, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    server_env = dict(line.split("=", 1) for line in seen.read_text().splitlines() if "=" in line)
    return out, server_env


@pytest.mark.parametrize(("doc", "token_file"), [
    ("README.md", "teacher-token.txt"),
    ("docs/deploy.md", "srv/attention-playground/teacher-token"),
])
def test_the_shared_mode_command_shows_and_keeps_the_teacher_token(tmp_path, doc, token_file):
    block = shell_block(ROOT / doc, TEACHER_VARIABLE).replace("/srv/", f"{tmp_path}/srv/")  # not the real /srv
    out, server = run_with_a_stand_in_streamlit(block, tmp_path)
    token = (tmp_path / token_file).read_text().strip()
    assert len(token) >= 32  # 24 random bytes, URL-safe
    assert stat.S_IMODE((tmp_path / token_file).stat().st_mode) == 0o600  # the teacher's alone
    assert f"?teacher={token}" in out.stdout  # the teacher is shown their link
    assert server[TEACHER_VARIABLE] == token and server["ATTENTION_PLAYGROUND_SHARED"] == "1"
    assert server["ARGS"].startswith("run app.py")
    again, server_again = run_with_a_stand_in_streamlit(block, tmp_path)  # a restart keeps the teacher's link
    assert server_again[TEACHER_VARIABLE] == token and f"?teacher={token}" in again.stdout


def test_the_notebook_command_tells_root_how_jupyter_starts():
    """The README addresses root users (leave out sudo): JupyterLab refuses root without --allow-root."""
    readme = (ROOT / "README.md").read_text()
    block = shell_block(ROOT / "README.md", "jupyter lab")
    after = readme[readme.index(block) + len(block):][:400]
    assert "--allow-root" in block or "--allow-root" in after


def test_the_token_file_is_not_committed_by_mistake():
    assert "/teacher-token.txt" in (ROOT / ".gitignore").read_text().splitlines()
