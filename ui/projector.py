"""Projector mode and ``hide=``: the app shown to a room, and parts of a page left out for a focused demo.

Both live in the address, so that a teacher's link opens the same screen: ``?projector=1`` (the
sidebar's "Projector mode" switch) and ``?hide=sidebar,advanced`` (a comma list of
:data:`HIDEABLE`, like TensorFlow Playground's ``_hide``). Each is kept by a text field of the
router (``app.py``) bound to the address (``bind="query-params"``): Streamlit keeps it there
across pages, writes a change without a reload and without a new history entry, and a link or
the Back button sets it. (A bound switch would only take ``true`` / ``false``; the projector's
field is hidden, and the visible switch writes ``1`` into it.)

Projector mode: larger text and chart text, thicker lines, larger heatmap cells and hover labels,
darker colours (:func:`ui.figures.for_projector` on every chart; CSS for Streamlit's own text),
no introduction under a page's title, and the sidebar starts closed.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import plotly.graph_objects as go
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

PARAM = "projector"  # the address parameter, and the key of its hidden text field
HIDE_PARAM = "hide"  # the address parameter, and the key of its text field
SWITCH = "projector_switch"  # the visible switch

HIDEABLE = {  # name in ?hide= → what it hides (the README lists them)
    "sidebar": "the sidebar and its button",
    "advanced": "the Train form's advanced settings (architecture, regularisation, schedule)",
    "captions": "the small grey explanations",
    "title": "each page's title and the introduction under it",
    "toolbar": "Streamlit's menu and Deploy button at the top right",
}
ON, OFF = frozenset({"1", "on", "yes", "true"}), frozenset({"0", "off", "no", "false", ""})
_NAME = re.compile(r"[a-z0-9_-]{1,24}")

# CSS of each hideable part (Streamlit's test ids and the keyed container's class).
_TITLE = "[data-testid='stElementContainer']:has(h1)"
_HIDE_CSS = {
    "sidebar": "[data-testid='stSidebar'], [data-testid='stExpandSidebarButton'] { display: none !important; }",
    "advanced": ".st-key-train_advanced { display: none !important; }",
    "captions": "[data-testid='stElementContainer']:has([data-testid='stCaptionContainer']) { display: none !important; }",
    "title": f"{_TITLE}, {_TITLE} + [data-testid='stElementContainer']:has([data-testid='stCaptionContainer']) "
             "{ display: none !important; }",
    "toolbar": "[data-testid='stToolbar'] { display: none !important; }",
}
# Projector mode: text ~1.3 times larger (Streamlit sizes its text in rem), near-black text and captions, the
# page's side margins narrowed so the larger charts get the width, no introduction under a title.
_PROJECTOR_CSS = f"""
html {{ font-size: 21px; }}
[data-testid='stMain'] {{ color: #000; }}
[data-testid='stCaptionContainer'] {{ opacity: 1 !important; }}
[data-testid='stCaptionContainer'], [data-testid='stCaptionContainer'] * {{ color: #333 !important; }}
[data-testid='stMainBlockContainer'] {{ padding-left: 1.5rem; padding-right: 1.5rem; padding-top: 2.5rem;
  max-width: none; }}
{_TITLE} + [data-testid='stElementContainer']:has([data-testid='stCaptionContainer']) {{ display: none; }}
"""


def parse_switch(value: str | None) -> bool | None:
    """``projector=`` as given in a link: True (1, on, yes, true), False (0, off, no, false, empty,
    absent: None → False), or None for anything else."""
    if value is None:
        return False
    v = value.strip().lower()
    return True if v in ON else False if v in OFF else None


def parse_hide(value: str | None) -> tuple[frozenset[str], list[str]]:
    """``hide=`` → (the known names, the unknown ones in order). Names are separated by commas or
    spaces, in any case; empty items are skipped."""
    known: set[str] = set()
    unknown: list[str] = []
    for item in re.split(r"[,\s]+", (value or "").strip().lower()):
        if not item:
            continue
        if item in HIDEABLE:
            known.add(item)
        elif item not in unknown:
            unknown.append(item)
    return frozenset(known), unknown


def is_on() -> bool:
    """Whether this session shows the app in projector mode (False outside a page run)."""
    try:
        return parse_switch(st.session_state.get(PARAM)) is True
    except Exception:  # no script run (plotly figures built in a test, a thread of the server)
        return False


def hidden(name: str) -> bool:
    """Whether ``?hide=`` hides ``name`` (one of :data:`HIDEABLE`) in this session."""
    if name not in HIDEABLE:
        raise KeyError(f"{name!r} is not a hideable part: one of {', '.join(HIDEABLE)}")
    try:
        return name in parse_hide(st.session_state.get(HIDE_PARAM))[0]
    except Exception:  # no script run
        return False


def setup() -> None:
    """The router's part, before each page: the switch and the hide list in the sidebar, a notice
    for a value they do not take, the sidebar's start state, and the page's CSS."""
    on = switch()
    names, unknown = parse_hide(st.session_state.get(HIDE_PARAM))
    if unknown:
        shown = ", ".join(f"`{u}`" if _NAME.fullmatch(u) else "(a value that is not a name)" for u in unknown)
        st.info(f"`hide=` does not know {shown}: ignored. It takes {', '.join(HIDEABLE)}.", icon="ℹ️")
    if on or "sidebar" in names:
        st.set_page_config(initial_sidebar_state="collapsed")
    css = (_PROJECTOR_CSS if on else "") + "".join(_HIDE_CSS[n] for n in sorted(names))
    if css:
        st.html(f"<style>{css}</style>")


def switch() -> bool:
    """The sidebar's "Projector mode" switch and "Hide" list, kept in the address; returns the switch.

    The address's ``projector=`` is a hidden text field's (see the module's docstring); the
    switch shows it and writes 1 (or nothing) into it. A value it does not take is a notice.
    """
    with st.sidebar:
        with st.container(key="projector_param"):  # hidden (its CSS below)
            st.html("<style>.st-key-projector_param { display: none; }</style>")
            given = st.text_input("projector=", key=PARAM, bind="query-params", label_visibility="collapsed")
        parsed = parse_switch(given)
        st.session_state[SWITCH] = parsed is True  # the address decides (a link, Back)
        on = st.toggle("Projector mode", key=SWITCH, on_change=_switched,
                       help="For a room: larger text and charts, thicker lines, darker colours, fewer captions. "
                            "In a link: `?projector=1`.")
        with st.expander("Hide parts of the page"):
            st.text_input("Hide (comma list)", key=HIDE_PARAM, bind="query-params",
                          placeholder="sidebar, advanced", help="For a focused demo; in a link: `?hide=sidebar,advanced`. "
                          + "; ".join(f"**{k}**: {v}" for k, v in HIDEABLE.items()))
    if parsed is None:
        shown = f"`{given.strip()}`" if _NAME.fullmatch(given.strip().lower()) else "that value"
        st.info(f"`projector=` takes 1 or 0, not {shown}: projector mode is off.", icon="ℹ️")
    return on


def _switched() -> None:
    st.session_state[PARAM] = "1" if st.session_state[SWITCH] else ""  # "" is the field's default: out of the address


def _styled(draw: Callable) -> Callable:
    """Streamlit's ``plotly_chart`` (``draw``), drawing a figure in projector mode's style when this session has it on."""

    def plotly_chart(self, figure_or_data, *args, **kwargs):
        if isinstance(figure_or_data, go.Figure) and is_on():
            from ui.figures import for_projector  # (imports torch: not before a chart needs it)

            figure_or_data = for_projector(figure_or_data)
        return draw(self, figure_or_data, *args, **kwargs)

    plotly_chart.projector_styled = True
    return plotly_chart


def style_every_chart() -> None:
    """Route every ``st.plotly_chart`` (and a column's, a container's) through :func:`figures.for_projector`
    in projector mode. Once per process; the figure builders and the pages stay as they are."""
    if getattr(DeltaGenerator.plotly_chart, "projector_styled", False):
        return
    DeltaGenerator.plotly_chart = _styled(DeltaGenerator.plotly_chart)
    main = st.plotly_chart.__self__  # st.plotly_chart is bound to the main container at import
    st.plotly_chart = DeltaGenerator.plotly_chart.__get__(main)
