"""In headless Chromium: every chart's toolbar saves an SVG beside plotly's PNG camera (ui/chart_downloads.py),
on a live chart (Home's heatmap) and on a st.plotly_chart (Home's grid of every layer and head) alike; both files
are named after what the chart shows and carry its title (model, sentence, layer, head)."""

from __future__ import annotations

import re
import struct
from pathlib import Path

from tests.helpers.browser import E2E, SHOTS, browser_page
from ui import chart_downloads
from ui.chart_downloads import SVG_TITLE

pytestmark = E2E
PNG_TITLE = "Download plot as a PNG"
MODEL, SENTENCE = "default model on UCI sentences", "the food was not good at all"  # Home's first view
SELF_ATTENTION = "Your journey starts with one step"  # the Self-attention page's sentence
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
    """A page of st.plotly_charts only (Streamlit's own plotly.js), reached through the router's address: its charts
    are named and titled too (the post's sentence, the query)."""
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
        first = charts.first  # the first query's scores: named after the post's sentence and the query
        named = chart_downloads.filename("Scores of one query", sentence=SELF_ATTENTION, detail="query “journey”")
        name, svg = _download_svg(page, first)
        assert name == f"{named}.svg" and svg.startswith("<svg")  # was: self-attention_scores-of-journey.svg
        text = " ".join(re.sub(r"<[^>]+>", " ", svg).split())
        assert all(part in text for part in ("Scores of one query", f"“{SELF_ATTENTION}”", "query “journey”")), text
        title = re.search(r'<g class="g-gtitle">.*?</g>', svg).group(0)  # wider than this narrow chart: on two lines,
        assert title.count('class="line"') == 3  # then the chart's own title (was: one line, cut at the file's edge)
        with page.expect_download(timeout=30_000) as png:
            first.locator(f'.modebar-btn[data-title="{PNG_TITLE}"]').click()
        assert png.value.suggested_filename == f"{named}.png"
        data = Path(png.value.path()).read_bytes()
        assert data.startswith(b"\x89PNG") and _png_height(data) >= first.bounding_box()["height"] + 20  # the title's line
        if SHOTS:  # the file a teacher puts on a slide, to look at
            Path(SHOTS).mkdir(parents=True, exist_ok=True)
            (Path(SHOTS) / png.value.suggested_filename).write_bytes(data)


def test_a_live_chart_s_download_names_follow_it_without_the_chart_being_built_anew(server):
    """The knock-out grid's downloads say which heads are off; passed to plotly.js as a changed config, those names
    made it build the whole grid anew on every knock-out (issue 16's redraw went from ~316 to ~527 ms side by side):
    the names now follow the chart and the chart is updated in place."""
    with browser_page() as page:
        page.goto(f"{server}/Faithfulness")
        main = page.get_by_test_id("stMain")
        main.get_by_role("tab", name="Head knock-out").click()
        main.get_by_text("No head off").wait_for()
        page.wait_for_function("() => [...document.querySelectorAll('.live-plotly-chart')].some(c => c.__drawn)")
        page.evaluate("""() => {  // the grid: the live chart with the most subplot titles; its drawing, marked
            const grid = [...document.querySelectorAll('[data-testid=stMain] .live-plotly-chart')]
              .sort((a, b) => b.querySelectorAll('.annotation-text').length - a.querySelectorAll('.annotation-text').length)[0];
            grid.setAttribute('data-test-grid', '1');
            grid.querySelector('.main-svg').__before = true; }""")
        box = main.get_by_role("combobox", name="Heads to switch off (layer.head)")
        box.click()
        page.get_by_role("option", name="1.1", exact=True).click()
        page.wait_for_function("() => [...document.querySelectorAll('[data-test-grid] .annotation-text')]"
                               ".some(t => t.textContent.includes('OFF'))")
        assert page.evaluate("() => document.querySelector('[data-test-grid] .main-svg').__before === true")
        name, svg = _download_svg(page, page.locator("[data-test-grid]"))
        assert "1-1-off" in name and name.endswith(".svg"), name  # named after what it shows now
        assert "1.1 off" in " ".join(re.sub(r"<[^>]+>", " ", svg).split())  # and titled so
