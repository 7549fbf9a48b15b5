"""Projector mode and ``?hide=`` (ui/projector.py): the parsing, the chart style, and pages opened from a link."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from attention_core.training import EpochRecord
from tests.helpers.apptest import chart, live_chart
from ui import figures, projector

TIMEOUT = 90
ROOT = Path(__file__).resolve().parents[2]


# -- parsing ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "expected"), [
    ("1", True), ("on", True), ("TRUE", True), (" yes ", True),
    ("0", False), ("off", False), ("false", False), ("", False), (None, False),
    ("2", None), ("maybe", None), ("<b>1</b>", None),
])
def test_parse_switch(value, expected):
    assert projector.parse_switch(value) is expected


def test_parse_hide_known_unknown_and_spacing():
    assert projector.parse_hide("sidebar,advanced") == ({"sidebar", "advanced"}, [])
    assert projector.parse_hide(" Sidebar , CAPTIONS,,title ") == ({"sidebar", "captions", "title"}, [])
    assert projector.parse_hide("sidebar foo,bar,foo") == ({"sidebar"}, ["foo", "bar"])
    assert projector.parse_hide(None) == (frozenset(), [])
    assert projector.parse_hide("") == (frozenset(), [])


def test_every_hideable_part_has_its_css():
    assert set(projector._HIDE_CSS) == set(projector.HIDEABLE)


# -- the chart style ----------------------------------------------------------------------------------


def _epochs(n: int) -> list[EpochRecord]:
    return [EpochRecord(epoch=e, train_loss=1 / e, train_accuracy=0.5 + e / 40, val_loss=1.1 / e,
                        val_accuracy=0.5 + e / 50, seconds=0.1, examples_per_second=100.0) for e in range(1, n + 1)]


TOKENS = ["the", "food", "was", "not", "good"]
ATTN = np.random.default_rng(0).dirichlet(np.ones(5), size=(2, 2, 5))  # (L, H, T, T)
FIGURES = {
    "heatmap": lambda: figures.attention_heatmap(ATTN[0, 0], TOKENS, title="Layer 1 · Head 1"),
    "grid": lambda: figures.attention_grid(ATTN, TOKENS),
    "curves": lambda: figures.training_curves(_epochs(5), [0.9, 0.8, 0.7]),
    "bars": lambda: figures.probability_bars({"negative": 0.8, "positive": 0.2}, predicted="negative"),
    "gradient": lambda: figures.gradient_heatmap(np.arange(12.0).reshape(3, 4) - 6, list("abc"), list("wxyz")),
    "time-lapse": lambda: figures.attention_time_lapse([0, 1, 2], [ATTN[0, 0]] * 3, [TOKENS] * 3,
                                                        [{"negative": 0.6, "positive": 0.4}] * 3, kept=[0, 2]),
}


def _font_sizes(node: object, parent: str = "") -> list[float]:
    """Every font size a figure's JSON sets."""
    if isinstance(node, list):
        return [s for item in node for s in _font_sizes(item, parent)]
    if not isinstance(node, dict):
        return []
    out = [node["size"]] if parent.endswith("font") and isinstance(node.get("size"), (int, float)) else []
    return out + [s for k, v in node.items() for s in _font_sizes(v, k)]


@pytest.mark.parametrize("name", list(FIGURES))
def test_for_projector_enlarges_every_text_and_leaves_the_figure_alone(name):
    fig = FIGURES[name]()
    before = fig.to_json()
    big = json.loads(figures.for_projector(fig).to_json())
    assert fig.to_json() == before  # figures are cached and shared between sessions
    layout = big["layout"]
    assert layout["font"]["size"] >= figures.PROJECTOR_FONT and layout["hoverlabel"]["font"]["size"] >= figures.PROJECTOR_FONT
    assert min(_font_sizes(big)) >= figures.PROJECTOR_MIN_FONT  # a grid's 9 px tick labels too
    assert max(_font_sizes(big)) >= 1.5 * max(_font_sizes(json.loads(before)), default=12)  # subplot titles too
    assert layout["height"] == round(fig.layout.height * figures.PROJECTOR_HEIGHT)
    assert layout["xaxis"]["tickfont"]["color"] == figures.PROJECTOR_INK  # the Streamlit theme's grey does not win
    for trace in [*big["data"], *(t for frame in big.get("frames", []) for t in frame["data"])]:
        if trace["type"] == "heatmap" and trace.get("texttemplate"):  # numbers in the cells: sized to fit them
            rows = len(figures._array(trace["z"]))
            size = trace.get("textfont", {}).get("size")
            assert size is None if rows > 1 else size >= figures.PROJECTOR_MIN_FONT, (rows, size)


def test_numbers_in_a_heatmap_fit_their_cells_in_projector_mode():
    """Several rows: plotly.js fits the numbers to the cells it draws (no size of ours). One row it cannot fit: sized
    here for a strip :data:`figures.PROJECTOR_STRIP` px wide, or left to the hover labels when 15 px is too large."""
    matrix = figures.for_projector(figures.matrix_table(np.full((13, 8), 0.123456), list("abcdefghijklm"), list("abcdefgh")))
    assert matrix.data[0].texttemplate and matrix.data[0].textfont.size is None
    short = figures.for_projector(figures.attention_heatmap(np.full((5, 5), 0.2), list("abcde"), pooling=True))
    assert short.data[0].texttemplate and short.data[0].textfont.size >= figures.PROJECTOR_MIN_FONT
    words = [f"w{i}" for i in range(14)]  # Inspect's 14-word sentence: 0.04 0.05 0.04 0.27 … ran together
    long = figures.for_projector(figures.attention_heatmap(np.full((14, 14), 1 / 14), words, pooling=True))
    assert not long.data[0].texttemplate
    assert "%{z:.4f}" in long.data[0].hovertemplate  # the numbers are still there, on hover


def test_a_titled_heatmap_has_room_for_its_title_and_its_keys_on_top_in_projector_mode():
    keys = [f"{i} · w5" for i in range(8)]
    fig = figures.matrix_table(np.ones((13, 8)), [str(i) for i in range(13)], keys, title="scores").update_xaxes(tickangle=-45)
    big = figures.for_projector(fig)
    title = big.layout.title
    assert (title.y, title.yanchor, title.yref) == (1, "top", "container")
    ticks = len(keys[0]) * figures._CHAR_WIDTH * figures.PROJECTOR_FONT * np.sin(np.radians(45))
    assert big.layout.margin.t >= title.pad.t + title.font.size * 1.3 + ticks  # was 54: the keys ran into the title


def test_for_projector_thickens_lines_and_keeps_the_data():
    fig = figures.training_curves(_epochs(5), [0.9, 0.8, 0.7])
    big = figures.for_projector(fig)
    for small, large in zip(fig.data, big.data, strict=True):
        assert list(large.y) == list(small.y)
        assert large.line.width == (small.line.width * 2 if small.line.width else 4)


# -- pages opened from a link (AppTest) ---------------------------------------------------------------


pytestmark_pages = pytest.mark.usefixtures("runs_dir")


def _app(**params: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    for name, value in params.items():
        at.query_params[name] = value
    return at.run()


def _css(at: AppTest) -> str:
    return "".join(h.proto.body for h in at.get("html") if "<style>" in h.proto.body)


@pytestmark_pages
def test_projector_1_in_a_link_switches_it_on_and_styles_every_chart():
    at = _app(projector="1")
    assert not at.exception
    assert at.toggle(key="projector_switch").value is True
    assert at.query_params["projector"] == "1"
    assert "html { font-size: 21px; }" in _css(at)
    heatmap = live_chart(at, "home_heatmap")["layout"]
    assert heatmap["font"]["size"] == figures.PROJECTOR_FONT and heatmap["hoverlabel"]["font"]["size"] == figures.PROJECTOR_FONT
    at.toggle(key="home_grid_on").set_value(True).run()  # an st.plotly_chart: styled the same
    assert not at.exception
    grid = chart(at, "home_grid")["layout"]
    assert grid["font"]["size"] == figures.PROJECTOR_FONT and grid["xaxis"]["tickfont"]["size"] >= figures.PROJECTOR_MIN_FONT
    at.toggle(key="projector_switch").set_value(False).run()  # off again: out of the address, plotly's own sizes
    assert "projector" not in at.query_params
    assert "font-size: 21px" not in _css(at)
    assert chart(at, "home_grid")["layout"]["xaxis"]["tickfont"]["size"] == 9
    assert "size" not in live_chart(at, "home_heatmap")["layout"].get("font", {})


@pytestmark_pages
def test_without_the_parameter_nothing_changes():
    at = _app()
    assert not at.exception and not at.info
    assert at.toggle(key="projector_switch").value is False
    assert "font-size: 21px" not in _css(at) and "display: none !important" not in _css(at)
    assert "size" not in live_chart(at, "home_heatmap")["layout"].get("font", {})


@pytestmark_pages
@pytest.mark.parametrize("value", ["maybe", "<script>alert(1)</script>"])
def test_a_projector_value_it_does_not_take_is_a_notice_and_stays_off(value):
    at = _app(projector=value)
    assert not at.exception
    assert at.toggle(key="projector_switch").value is False
    notices = [i.value for i in at.info]
    assert len(notices) == 1 and "`projector=` takes 1 or 0" in notices[0]
    assert "<script>" not in notices[0]
    assert "projector" not in at.query_params  # replaced by what the page shows: once, not on every run
    assert not at.run().info


@pytestmark_pages
def test_hide_hides_what_it_names_and_an_unknown_name_is_a_notice():
    at = _app(hide="sidebar,advanced,captions,bogus,<b>x</b>")
    assert not at.exception
    css = _css(at)
    assert "[data-testid='stSidebar']" in css and ".st-key-train_advanced { display: none" in css
    assert "stCaptionContainer']) { display: none" in css
    assert "font-size: 21px" not in css  # hiding is not projector mode
    notices = [i.value for i in at.info]
    assert len(notices) == 1 and "`bogus`" in notices[0] and "<b>" not in notices[0]
    assert all(name in notices[0] for name in projector.HIDEABLE)  # the names it takes
    assert at.query_params["hide"] == "advanced,captions,sidebar"  # the names it took
    at.text_input(key="hide").set_value("title, menu").run()  # the sidebar's field: read as a link's
    assert at.query_params["hide"] == "title" and "stElementContainer']:has(h1)" in _css(at)
    assert "stSidebar" not in _css(at)
    assert [i.value for i in at.info] == [f"`hide=` does not know `menu`: ignored. It takes {', '.join(projector.HIDEABLE)}."]
    assert at.text_input(key="hide").value == "title"



@pytestmark_pages
def test_the_train_forms_advanced_rows_are_in_the_container_hide_advanced_hides():
    at = AppTest.from_file(str(ROOT / "pages" / "1_Train.py"), default_timeout=TIMEOUT).run()
    assert not at.exception
    blocks = [b for b in at.get("flex_container") if "train_advanced" in str(b.proto)]
    assert blocks, "no container keyed train_advanced on the Train page"
    labels = {w.label for kind in ("number_input", "selectbox", "toggle") for w in blocks[0].get(kind)}
    assert {"Layers", "Heads", "Dropout", "Residual + norm + feed-forward", "Patience (epochs, 0 = none)"} <= labels
    assert not labels & {"Epochs", "Learning rate", "Run name"}  # the demo's settings stay in sight


@pytestmark_pages
def test_hide_title_and_toolbar_without_a_notice():
    at = _app(hide="title, toolbar")
    assert not at.exception and not at.info
    css = _css(at)
    assert "stElementContainer']:has(h1)" in css and "[data-testid='stToolbar'] { display: none" in css


def _live_chart_script() -> None:
    import plotly.graph_objects as go
    import streamlit as st

    from ui.live_chart import live_plotly_chart

    st.session_state.setdefault("projector_switch", True)
    fig = go.Figure(go.Scatter(x=[0, 1], y=[1, 0]), layout={"height": 300})
    live_plotly_chart(fig.to_json(), height=300, key="probe")  # a cached figure's JSON, with its height


def test_a_live_chart_given_as_json_with_its_height_is_styled_and_sized_alike():
    at = AppTest.from_function(_live_chart_script, default_timeout=TIMEOUT).run()
    assert not at.exception
    sent = [json.loads(c.proto.json) for c in at.get("bidi_component") if c.proto.id.endswith("-probe")][0]
    spec = json.loads(sent["spec"])
    assert spec["layout"]["font"]["size"] == figures.PROJECTOR_FONT and spec["data"][0]["line"]["width"] == 4
    assert sent["height"] == spec["layout"]["height"] == round(300 * figures.PROJECTOR_HEIGHT)  # the element fits the figure
    at.session_state["projector_switch"] = False
    at.run()
    sent = [json.loads(c.proto.json) for c in at.get("bidi_component") if c.proto.id.endswith("-probe")][0]
    assert sent["height"] == 300 and "font" not in json.loads(sent["spec"])["layout"]
