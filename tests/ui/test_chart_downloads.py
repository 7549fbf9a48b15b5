"""The router (app.py) mounts the SVG download buttons (ui/chart_downloads.py) once, before the page runs.

AppTest runs only Home through the router (a page it switches to runs alone), so the other pages, and what the
buttons do, are tested in Chromium: tests/browser/test_chart_downloads.py.
"""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]


def test_the_router_mounts_the_svg_buttons_once_before_the_page():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).run()
    assert not at.exception
    components = [c.proto.component_name for c in at.get("bidi_component")]
    assert components.count("attention_playground.svg_download_buttons") == 1
    assert components.index("attention_playground.svg_download_buttons") == 0  # above Home's own (live) charts
    assert "attention_playground.live_plotly_chart" in components
