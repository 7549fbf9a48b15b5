"""A plotly chart that is updated in place, for figures redrawn several times a second.

``st.plotly_chart`` gives a chart a new identity whenever its figure changes, so the browser
throws the chart away and builds a new one on every update: costly for the browser at several
updates a second, and a zoom or a hover label vanishes at each one. This is a Streamlit v2
component (a few lines of JavaScript in the page itself, ``live_chart/live_chart.js``) that draws
each new figure with ``Plotly.react``.

plotly.js: Streamlit's own bundle of it sets ``window.Plotly`` when the page shows any
``st.plotly_chart``, and the live charts use that. On a page without one, they load plotly.js's
"cartesian" bundle kept beside this module (``live_chart/plotly-cartesian.min.js``, the release of
the plotly package's own plotly.js, a third of its size: the home page's first heatmap waits for the
browser to load it), once per page; nothing is fetched from the internet. Streamlit serves it
through its static route for v1 components, which serves files only from inside a declared folder,
so it is copied once into a cache folder.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

import plotly
import plotly.graph_objects as go
import streamlit as st
import streamlit.components.v1 as components_v1

from ui import projector

_JS = (Path(__file__).with_name("live_chart") / "live_chart.js").read_text(encoding="utf-8")
# plotly.js's "cartesian" bundle (npm plotly.js-cartesian-dist-min, MIT): every trace type a live chart
# draws (heatmap, bar, scatter), a third of the full bundle the plotly package ships.
PLOTLY_JS = Path(__file__).with_name("live_chart") / "plotly-cartesian.min.js"
_ASSETS = "live_plotly_assets"

_chart = st.components.v2.component("attention_playground.live_plotly_chart", js=_JS, isolate_styles=False)


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "attention-playground"


@lru_cache(maxsize=1)
def asset_dir() -> Path:
    """A folder holding plotly.min.js (:data:`PLOTLY_JS`), copied once per plotly version."""
    for root in (_cache_root(), Path(tempfile.gettempdir()) / "attention-playground"):
        target = root / f"plotly-js-cartesian-{plotly.__version__}"
        if (target / "plotly.min.js").is_file():
            return target
        try:
            root.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(dir=root, prefix=".plotly-js-"))
            shutil.copyfile(PLOTLY_JS, staging / "plotly.min.js")
            try:
                staging.rename(target)  # atomic: two servers starting at once both end with a whole folder
            except OSError:  # the other one won
                shutil.rmtree(staging, ignore_errors=True)
            return target
        except OSError:
            continue  # an unwritable cache folder: try the temp folder
    raise OSError("cannot write plotly.js to a cache or temp folder for the live charts")


@lru_cache(maxsize=1)
def _plotly_url() -> str:
    """plotly.min.js's address, relative to the app's base URL."""
    name = components_v1.declare_component(_ASSETS, path=str(asset_dir())).name
    return f"component/{name}/plotly.min.js"


# Declared once, while this module is imported (other threads wait for an import to end):
# declare_component looks its caller up with inspect.getmodule, whose module cache is filled
# without a lock, and a page run of another session filling it at the same moment (a cold start
# with several sessions) makes the lookup fail ("module is None").
_plotly_url()


def preload(key: str = "live_chart_preload", *, at_once: bool = False) -> None:
    """Load plotly.js for the live charts (draws nothing) before the first one is needed.

    By default once the browser is idle; ``at_once`` for a page whose first chart comes soon.
    """
    _chart(data={"plotly": _plotly_url(), "at_once": at_once}, key=key)


def live_plotly_chart(fig: go.Figure | str, *, key: str, height: int | None = None, config: dict | None = None) -> None:
    """Draw ``fig`` (a figure, or its ``to_json()``); later calls with the same ``key`` update that chart in place.

    An unchanged figure costs the browser nothing (the chart compares the JSON it drew last).
    """
    if projector.is_on():  # the projector's style, as every st.plotly_chart gets (ui/projector.py)
        from ui.figures import PROJECTOR_HEIGHT, for_projector

        fig = for_projector(go.Figure(json.loads(fig)) if isinstance(fig, str) else fig)
        height = round(height * PROJECTOR_HEIGHT) if height else None  # as the figure's own
    spec = fig if isinstance(fig, str) else fig.to_json()
    if height is None:
        height = (fig.layout.height if isinstance(fig, go.Figure) else json.loads(spec).get("layout", {}).get("height")) or 400
    _chart(data={"spec": spec, "height": int(height), "config": config or {}, "plotly": _plotly_url()}, key=key)
