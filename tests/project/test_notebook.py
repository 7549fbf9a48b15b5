"""examples/attention_in_a_notebook.ipynb runs from top to bottom in a fresh kernel (nbclient), offline, so it never
goes stale; and the figures it draws come from a module that needs no Streamlit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "examples" / "attention_in_a_notebook.ipynb"

# Run before the notebook's own cells: every look-up of a host and every connection Python makes in the kernel is
# refused and recorded (the kernel's own channels are ZeroMQ's, which do not go through Python's socket module).
CUT_THE_NETWORK = """\
import socket as _socket
_tried_network = []
def _refuse(*args):
    _tried_network.append(args[-1] if isinstance(args[0], _socket.socket) else args[0])
    raise OSError(f"the notebook tried the network: {_tried_network[-1]}")
_socket.socket.connect = _socket.socket.connect_ex = _socket.getaddrinfo = _socket.create_connection = _refuse
"""
# Run after them: a library that caught the refusal (CircuitsVis does, when an object of its is shown) still counts.
NO_NETWORK_TRIED = "assert not _tried_network, f'the notebook tried the network: {_tried_network}'"


def _outputs(cell) -> str:
    return "\n".join(str(o.get("text", "")) + str(o.get("data", "")) for o in cell.outputs)


def test_the_notebook_runs_offline_from_top_to_bottom():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    own = len(notebook.cells)
    assert not any(c.get("outputs") or c.get("execution_count") for c in notebook.cells), "commit it with its outputs cleared"
    notebook.cells = [new_code_cell(CUT_THE_NETWORK), *notebook.cells, new_code_cell(NO_NETWORK_TRIED)]
    client = NotebookClient(notebook, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOK.parent)}})  # opened where it lives
    client.execute()  # raises CellExecutionError, with the cell and its traceback, if any cell fails

    code = [c for c in notebook.cells[1:own + 1] if c.cell_type == "code"]
    shown = "\n".join(_outputs(c) for c in code)
    assert "('negative', {'negative':" in shown  # the prediction cell's label and probabilities
    assert "application/vnd.plotly.v1+json" in shown  # the figures are plotly's, drawn by the notebook
    assert "bertviz-" in shown and "CircuitsVis.render(" in shown  # both views were drawn
    assert not any(o.get("output_type") == "error" for c in code for o in c.outputs)


def test_the_figures_module_imports_no_streamlit():
    """The notebook draws the app's charts from ui.figures: it (and what it imports) must not need Streamlit."""
    probe = "import sys, ui.figures, ui.explainer_figures; print(sorted(m for m in sys.modules if m.split('.')[0] == 'streamlit'))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
