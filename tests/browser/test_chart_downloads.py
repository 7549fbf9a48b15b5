"""In headless Chromium: every chart's toolbar saves an SVG beside plotly's PNG camera (ui/chart_downloads.py),
on a live chart (Home's heatmap) and on a st.plotly_chart (Home's grid of every layer and head) alike; both files
are named after what the chart shows and carry its title (model, sentence, layer, head)."""

from __future__ import annotations

import re
import struct
from pathlib import Path

from tests.helpers.browser import E2E, browser_page
from ui import chart_downloads
from ui.chart_downloads import SVG_TITLE

pytestmark = E2E
PNG_TITLE = "Download plot as a PNG"
MODEL, SENTENCE = "default model on UCI sentences", "the food was not good at all"  # Home's first view
NAMES = {  # the file each chart is saved as, without its extension
    "heatmap": chart_downloads.filename("Attention", model=MODEL, sentence=SENTENCE, layer="Layer 1", head="Average of heads"),
    "grid": chart_downloads.filename("Attention, every layer and head", model=MODEL, sentence=SENTENCE),
}


def _download_svg(page, chart) -> tuple[str, str]:
    """The SVG button's file: its name, its text."""
    chart.hover()  # plotly shows its toolbar on hover
    with page.expect_download(timeout=30_000) as download:
        chart.locator(f'.modebar-btn[data-title="{SVG_TITLE}"]').click()
    return download.value.suggested_filename, Path(download.value.path()).read_text(encoding="utf-8")


def _png_height(data: bytes) -> int:
    return struct.unpack(">I", data[20:24])[0]  # IHDR: width, then height


def test_every_chart_saves_an_svg_beside_the_png(server):
    with browser_page() as page:
        page.goto(server)
        main = page.get_by_test_id("stMain")
        heatmap = main.locator(".live-plotly-chart", has=page.locator("g.ytick text", has_text="food"))
        heatmap.wait_for()
        main.get_by_text("Show all layers and heads at once").click()
        grid = main.get_by_test_id("stPlotlyChart").locator(".js-plotly-plot")
        grid.locator("text.gtitle, text.annotation-text", has_text="L1 · H1").first.wait_for()
        for what, chart in (("heatmap", heatmap), ("grid", grid)):
            toolbar = chart.locator(".modebar-group", has=page.locator(f'[data-title="{PNG_TITLE}"]'))
            assert toolbar.locator(f'[data-title="{SVG_TITLE}"]').count() == 1  # once, beside the camera
            name, svg = _download_svg(page, chart)
            assert name == f"{NAMES[what]}.svg"  # was: newplot.svg
            assert svg.startswith("<svg") and "food" in svg  # the chart itself, its tokens as text
            assert f"{MODEL} · “{SENTENCE}”" in svg  # its title, which the page shows outside the chart
            with page.expect_download(timeout=30_000) as png:  # and the camera saves a PNG, named and titled alike
                chart.locator(f'.modebar-btn[data-title="{PNG_TITLE}"]').click()
            assert png.value.suggested_filename == f"{NAMES[what]}.png"  # was: newplot.png
            data = Path(png.value.path()).read_bytes()
            assert data.startswith(b"\x89PNG")
            assert _png_height(data) >= chart.bounding_box()["height"] + 20  # the title's line above the chart as drawn
        main.get_by_text("Show all layers and heads at once").click()  # a page run: the mount's empty row stays hidden
        main.get_by_test_id("stPlotlyChart").wait_for(state="detached")
        assert page.locator(".st-key-chart_downloads_svg_buttons").is_hidden()


def test_another_page_s_charts_save_an_svg_too(server):
    """A page of st.plotly_charts only (Streamlit's own plotly.js), reached through the router's address."""
    with browser_page() as page:
        page.goto(f"{server}/Self_attention")
        charts = page.get_by_test_id("stMain").get_by_test_id("stPlotlyChart").locator(".js-plotly-plot")
        charts.first.wait_for()
        page.wait_for_function(  # every chart drawn so far has its SVG button beside its camera
            """([png, svg]) => {
                 const c = [...document.querySelectorAll('[data-testid=stPlotlyChart] .js-plotly-plot')];
                 return c.length >= 5
                   && c.every(e => e.querySelectorAll(`[data-title="${png}"] + [data-title="${svg}"]`).length === 1) }""",
            arg=[PNG_TITLE, SVG_TITLE], timeout=30_000)
        assert page.locator(".st-key-chart_downloads_svg_buttons").is_hidden()
        name, svg = _download_svg(page, charts.first)  # a chart without a config: named after the page and its title
        assert re.fullmatch(r"self-attention[a-z-]*_scores-of-[a-z]+\.svg", name) and svg.startswith("<svg")
