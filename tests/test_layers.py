"""The house has four floors — pages → ui → runner → attention_core — and no import runs back up.

Read from the source (every ``import``, also those inside functions), so a lazy import cannot hide.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROCESS_MODULES = {"subprocess", "multiprocessing", "socket", "select", "signal", "socketserver"}
FORBIDDEN = {  # floor → top-level modules it may not import
    "attention_core": {"streamlit", "plotly", "ui", "runner", "pages", "app"},
    "runner": {"streamlit", "plotly", "ui", "pages", "app"},
    "ui": PROCESS_MODULES | {"pages", "app"},
}


def imported(path: Path) -> set[str]:
    """Top-level names of every module ``path`` imports."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("floor", sorted(FORBIDDEN))
def test_no_import_runs_back_up(floor):
    files = sorted((ROOT / floor).rglob("*.py"))
    assert files
    wrong = {str(f.relative_to(ROOT)): sorted(imported(f) & FORBIDDEN[floor]) for f in files}
    assert {f: names for f, names in wrong.items() if names} == {}


def test_the_check_sees_imports_inside_functions(tmp_path):
    sample = tmp_path / "m.py"
    sample.write_text("def f():\n    import streamlit as st\n    from plotly import graph_objects\n")
    assert imported(sample) == {"streamlit", "plotly"}


# Pages and their views start, watch and describe trainings through one ui module; ui.background keeps
# trainings alive from every page with a lazy import (the home page loads it before torch).
RUNNER_IN_UI = {"ui/training_page.py", "ui/background.py"}


def test_pages_and_views_reach_the_trainings_through_one_ui_module():
    files = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py")), *sorted((ROOT / "ui").rglob("*.py"))]
    assert len(files) > 3
    wrong = [str(f.relative_to(ROOT)) for f in files if "runner" in imported(f)]
    assert sorted(set(wrong) - RUNNER_IN_UI) == []
