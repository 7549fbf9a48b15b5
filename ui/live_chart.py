"""A plotly chart that is updated in place, for figures redrawn several times a second.

``st.plotly_chart`` gives a chart a new identity whenever its figure changes, so the browser
throws the chart away and builds a new one on every update: while a training was watched
that cost the browser ~0.25 of a core for the curves alone, and a zoom or a hover label
vanished every 0.4 s. This custom component (a small HTML page with plotly.js, in an iframe
that stays mounted) draws each new figure with ``Plotly.react`` instead. plotly.js is the
copy that ships inside the ``plotly`` Python package: nothing is fetched from the internet.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

import plotly
import plotly.graph_objects as go
import streamlit.components.v1 as components

_HERE = Path(__file__).with_name("live_chart")
COMPONENT = "live_plotly_chart"


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "attention-playground"


@lru_cache(maxsize=1)
def asset_dir() -> Path:
    """A folder with the component's page and plotly.min.js (copied from the plotly package).

    Streamlit serves a component's files only from inside its folder (symlinks are resolved
    and must stay inside), so plotly.js is copied once per plotly version and page version.
    """
    page = (_HERE / "index.html").read_bytes()
    plotly_js = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    tag = f"{plotly.__version__}-{hashlib.sha256(page).hexdigest()[:12]}"
    for root in (_cache_root(), Path(tempfile.gettempdir()) / "attention-playground"):
        target = root / f"live-chart-{tag}"
        if (target / "index.html").exists() and (target / "plotly.min.js").exists():
            return target
        try:
            root.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(dir=root, prefix=".live-chart-"))
            (staging / "index.html").write_bytes(page)
            shutil.copyfile(plotly_js, staging / "plotly.min.js")
            try:
                staging.rename(target)  # atomic: two servers starting at once both end with a whole folder
            except OSError:  # the other one won
                shutil.rmtree(staging, ignore_errors=True)
            return target
        except OSError:
            continue  # an unwritable cache folder: try the temp folder
    raise OSError("cannot write the live chart's files to a cache or temp folder")


def live_plotly_chart(fig: go.Figure | str, *, key: str, height: int | None = None, config: dict | None = None) -> None:
    """Draw ``fig`` (a figure, or its ``to_json()``); later calls with the same ``key`` update that chart in place.

    An unchanged figure costs the browser nothing (the page compares the JSON it got last).
    """
    component = components.declare_component(COMPONENT, path=str(asset_dir()))
    spec = fig if isinstance(fig, str) else fig.to_json()
    if height is None:
        height = (fig if isinstance(fig, go.Figure) else go.Figure(json.loads(spec))).layout.height or 400
    component(spec=spec, height=int(height), config=config or {}, key=key, default=None)
