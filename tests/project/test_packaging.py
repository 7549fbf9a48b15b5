"""The project installs as a package: its dependencies are requirements.txt and its console command
works from any folder (scripts/test.sh installs it with ``pip install -e .``, as the README says)."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
COMMAND = Path(sys.executable).parent / "attention-playground"


def test_dependencies_are_requirements_txt():
    wanted = {str(Requirement(line)) for line in (ROOT / "requirements.txt").read_text().splitlines()
              if line.strip() and not line.startswith("#")}
    installed = {str(Requirement(r)) for r in metadata.requires("attention-playground") or []
                 if "extra ==" not in r}  # an extra (e.g. signin) is installed only when asked for
    assert installed == wanted


def test_console_command_works_from_any_folder(tmp_path):
    assert COMMAND.is_file(), "the project is not installed here: pip install -e ."
    r = subprocess.run([str(COMMAND), "predict", str(ROOT / "data" / "default_run"), "what a great film"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["label"] == "positive"
    assert r.stderr.startswith("positive")  # the summary for a person
    r = subprocess.run([str(COMMAND), "predct"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.strip().endswith("see `attention-playground --help`"), r.stderr
