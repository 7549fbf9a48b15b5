"""The live chart component: its files, and that it keeps one identity while its figure changes."""

from __future__ import annotations

import json
from pathlib import Path

import plotly
import pytest
from streamlit.testing.v1 import AppTest

from ui import live_chart

PACKAGED = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"  # the full bundle the plotly package ships
PLOTLY_JS = live_chart.PLOTLY_JS
# What plotly.js's cartesian bundle registers (its README): every live chart's traces must be among them.
CARTESIAN_TRACES = {"bar", "box", "contour", "heatmap", "histogram", "histogram2d", "histogram2dcontour", "image", "pie",
                    "scatter", "scatterternary", "violin"}


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    live_chart.asset_dir.cache_clear()
    yield tmp_path / "cache"
    live_chart.asset_dir.cache_clear()


def test_asset_folder_holds_the_bundled_plotly_js(fresh_cache):
    folder = live_chart.asset_dir()
    assert folder.parent == fresh_cache / "attention-playground"
    assert (folder / "plotly.min.js").read_bytes() == PLOTLY_JS.read_bytes()
    assert plotly.__version__ in folder.name
    live_chart.asset_dir.cache_clear()
    assert live_chart.asset_dir() == folder  # made once, then reused
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]  # no staging folder left


def test_the_bundle_is_the_plotly_js_release_the_plotly_package_writes_figures_for():
    """The live charts draw the plotly package's figures with plotly.js's cartesian bundle: the same release
    (an upgrade of plotly must bring the bundle of its plotly.js along, from npm's plotly.js-cartesian-dist-min)."""
    import re

    def release(path: Path) -> str:
        return re.search(r"plotly\.js(?: \(cartesian - minified\))? (v[0-9.]+)", path.read_text(encoding="utf-8")[:300]).group(1)

    assert "cartesian" in PLOTLY_JS.read_text(encoding="utf-8")[:100]
    assert release(PLOTLY_JS) == release(PACKAGED)
    assert PLOTLY_JS.stat().st_size < PACKAGED.stat().st_size / 2


def test_every_live_chart_draws_traces_the_bundle_has():
    import numpy as np

    from attention_core.history import EpochRecord
    from ui import faithfulness_figures, figures

    w = np.full((2, 2, 3, 3), 1 / 3)
    drawn = [figures.attention_heatmap(w[0, 0], ["a", "b", "c"]), figures.attention_heatmap(w[0, 0], ["a", "b", "c"], pooling=True),
             figures.probability_bars({"neg": 0.4, "pos": 0.6}, predicted="pos"),
             faithfulness_figures.knocked_out_grid(w, ["a", "b", "c"], [(0, 1)]),
             figures.LiveTrainingCurves()([EpochRecord(1, 0.7, 0.5, 0.6, 0.6, 1.0, 100.0), EpochRecord(2, 0.5, 0.7, 0.5, 0.7, 2.0, 100.0)],
                                          [0.8, 0.7, 0.6, 0.5])]
    types = {trace.type for fig in drawn for trace in fig.data}
    assert {"heatmap", "bar", "scatter"} <= types <= CARTESIAN_TRACES


def test_an_unwritable_cache_falls_back_to_the_temp_folder(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would go")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    monkeypatch.setattr(live_chart.tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    live_chart.asset_dir.cache_clear()
    try:
        folder = live_chart.asset_dir()
    finally:
        live_chart.asset_dir.cache_clear()
    assert folder.parent == tmp_path / "tmp" / "attention-playground"
    assert (folder / "plotly.min.js").stat().st_size == PLOTLY_JS.stat().st_size


def _script() -> None:
    import plotly.graph_objects as go
    import streamlit as st

    from ui.live_chart import live_plotly_chart

    n = st.session_state["n"] = st.session_state.get("n", 0) + 1
    fig = go.Figure(go.Scatter(x=list(range(n)), y=[i * i for i in range(n)]), layout={"height": 222})
    live_plotly_chart(fig, key="curve")
    st.plotly_chart(fig, key="plain")


def test_the_live_chart_keeps_its_identity_while_its_figure_changes(fresh_cache):
    at = AppTest.from_function(_script, default_timeout=30).run()
    assert not at.exception
    first = at.get("bidi_component")
    assert len(first) == 1 and first[0].proto.component_name == "attention_playground.live_plotly_chart"
    data = json.loads(first[0].proto.json)
    assert data["height"] == 222 and json.loads(data["spec"])["data"][0]["y"] == [0]
    assert data["plotly"].startswith("component/") and data["plotly"].endswith("/plotly.min.js")
    plain_id = at.get("plotly_chart")[0].proto.id
    at.run()
    second = at.get("bidi_component")[0].proto
    assert json.loads(json.loads(second.json)["spec"])["data"][0]["y"] == [0, 1]
    assert second.id == first[0].proto.id  # same element: the browser updates it in place…
    assert at.get("plotly_chart")[0].proto.id != plain_id  # …where st.plotly_chart becomes a new chart


def test_the_plotly_asset_folder_is_declared_once_per_process(monkeypatch):
    """declare_component looks its caller up with inspect.getmodule, whose cache is filled without a lock: called on
    every page run, it failed once on a cold start with two visitors ("module is None"). Once, at import, it cannot."""
    from ui import live_chart

    url = live_chart._plotly_url()
    monkeypatch.setattr(live_chart.components_v1, "declare_component", lambda *a, **k: pytest.fail("declared again"))
    assert [live_chart._plotly_url() for _ in range(3)] == [url] * 3
