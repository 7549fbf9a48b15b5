"""Process-wide settings of the app's server, made by its entry point (``app.py``) on every page run.

Light on purpose (no torch, no Streamlit): ``app.py`` calls :func:`configure_server` before the
home page's first picture, which is shown before torch is loaded (``ui/preview.py``). The
figures behind each setting are in ``benchmarks/README.md``.
"""

from __future__ import annotations

import gc
import os
import sys
import threading

SWITCH_INTERVAL = 0.001  # seconds a thread keeps the GIL before handing it over (Python's default: 0.005)
SERVER_TORCH_THREADS = 1
FREEZE_RUNS = 5  # page runs with the model code loaded (all sessions) during which the heap is frozen
_lock = threading.Lock()
_configured = False
_freezes = 0


def configure_server() -> None:
    """The server's settings: once per process, then :func:`settle_heap` (idempotent; call it
    at the top of every run of ``app.py``)."""
    global _configured
    with _lock:
        if not _configured:
            _configured = True
            # Script runs (live redraws of every watched training) are busy Python: the event loop,
            # which needs the GIL back after every socket call, would queue behind them for 5 ms each.
            sys.setswitchinterval(SWITCH_INTERVAL)
            # One torch thread for the server's own work (small: a sentence's heatmap): the
            # training processes and the browser need the cores more. Before torch is imported, its
            # OpenMP runtime reads the count from the environment; the training processes inherit
            # it, and set their own count for every job (runner.worker).
            if "torch" in sys.modules:
                sys.modules["torch"].set_num_threads(SERVER_TORCH_THREADS)
            else:
                os.environ["OMP_NUM_THREADS"] = str(SERVER_TORCH_THREADS)
        settle_heap()


def settle_heap() -> None:
    """Keep the server's long-lived objects out of Python's full garbage collections (``gc.freeze``).

    The server holds hundreds of thousands of objects the collector tracks (torch, plotly, pandas,
    Streamlit, the embedding table's index), alive until it exits; a full collection walks them
    all, holding the GIL, and the server answers nothing meanwhile. Frozen objects are skipped. Frozen here:
    what is alive at the start of the server's first few page runs once the model code (torch) is
    loaded, the imports and cached loaders of the runs before included. A frozen object is never
    collected, so this stops after those runs: what a session creates later is collected as usual.
    """
    global _freezes
    if _freezes < FREEZE_RUNS and "torch" in sys.modules:
        _freezes += 1
        gc.freeze()
