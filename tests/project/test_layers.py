"""The house has four floors — pages → ui → runner → attention_core — and no import runs back up.

Read from the source (every ``import``, also those inside functions), so a lazy import cannot hide.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
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


# Modules whose import on the home page's first run would hold its first heatmap back: torch and the
# model code (~1–2 s to import here), and what only a trained model needs (the pretrained encoder's too).
HEAVY = ("torch", "gensim", "safetensors", "tokenizers", "transformers", "attention_core.model",
         "attention_core.training", "attention_core.runs", "attention_core.pretrained")
COLD_HOME = """
import json, sys, traceback
from importlib.abc import MetaPathFinder

first = {}

class Watch(MetaPathFinder):  # records who imports a heavy module first; imports nothing itself
    def find_spec(self, name, path=None, target=None):
        if name in HEAVY and name not in first:
            first[name] = "".join(traceback.format_stack(limit=14)[:-1])
        return None

HEAVY = set(json.loads(sys.argv[1]))
sys.meta_path.insert(0, Watch())
from streamlit.testing.v1 import AppTest
from ui import preview
preview.warm_up = lambda: None  # the page's own import of the model code, once the page is drawn
at = AppTest.from_file("app.py", default_timeout=120).run()
assert not at.exception, at.exception
heatmaps = [json.loads(json.loads(c.proto.json)["spec"]) for c in at.get("bidi_component") if c.proto.id.endswith("-home_heatmap")]
print(json.dumps({"tokens": [h["data"][0]["y"] for h in heatmaps], "subheader": [s.value for s in at.subheader],
                  "imported": first}))
"""


def test_nothing_heavy_is_imported_before_homes_first_heatmap_is_drawn(tmp_path):
    """A fresh server process draws the home page's first heatmap (the saved preview) without importing torch,
    the model code or the word vectors: they load once the page is drawn (``ui.preview.warm_up``)."""
    import json
    import os
    import subprocess
    import sys

    from ui import preview

    out = subprocess.run([sys.executable, "-c", COLD_HOME, json.dumps(HEAVY)], cwd=ROOT, capture_output=True, text=True,
                         timeout=300, env={**os.environ, "ATTENTION_PLAYGROUND_RUNS": str(tmp_path)})
    assert out.returncode == 0, out.stderr[-3000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["subheader"][0].startswith("Prediction: ")  # the first picture was drawn…
    assert seen["tokens"] == [preview.load().tokens]  # …with the saved answer's heatmap
    assert seen["imported"] == {}, "\n\n".join(f"{name} imported by:\n{stack}" for name, stack in seen["imported"].items())
