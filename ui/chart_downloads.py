"""Every chart's toolbar saves an SVG as well as a PNG.

plotly.js's camera saves one format (``toImageButtonOptions``); a second button needs a click function, which
``st.plotly_chart``'s config (JSON) cannot carry. So the router mounts this once per page: a Streamlit v2
component (``chart_downloads/svg_button.js``, in the page itself) that puts an SVG button beside the camera of
every plotly chart on the page, ``st.plotly_chart``'s and the live charts' alike. plotly.js makes the file in the
browser; nothing is fetched.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

SVG_TITLE = "Download plot as an SVG"  # the button's tooltip (svg_button.js)
_JS = (Path(__file__).with_name("chart_downloads") / "svg_button.js").read_text(encoding="utf-8")
_component = st.components.v2.component("attention_playground.svg_download_buttons", js=_JS, isolate_styles=False)


def svg_buttons() -> None:
    """Mount the page's SVG buttons (draws nothing of its own)."""
    _component(key="chart_downloads_svg_buttons")
