"""Projector mode and ``hide=``: the app shown to a room, and parts of a page left out for a focused demo.

Both live in the address, so that a teacher's link opens the same screen: ``?projector=1`` (the
sidebar's "Projector mode" switch) and ``?hide=sidebar,advanced`` (a comma list of
:data:`HIDEABLE`, like TensorFlow Playground's ``_hide``). The router (``app.py``) reads them
before each page and writes them back, as ``ui.common`` does the workspace's ``w``: they are
global parameters, which the pages' links (``ui.view_link``) keep as they are. (Not widgets
bound to the address: ``st.query_params`` refuses to write an address holding a bound one, and
a bound switch takes only ``true`` / ``false``.)

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

PARAM = "projector"  # the address parameter
SWITCH = "projector_switch"  # the sidebar's switch
HIDE_PARAM = "hide"  # the address parameter, and the key of the sidebar's text field

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
# page's side margins narrowed so the larger charts get the width (its top clears the top bar, 3.75 rem high), no
# introduction under a title.
_PROJECTOR_CSS = f"""
html {{ font-size: 21px; }}
[data-testid='stMain'] {{ color: #000; }}
[data-testid='stCaptionContainer'] {{ opacity: 1 !important; }}
[data-testid='stCaptionContainer'], [data-testid='stCaptionContainer'] * {{ color: #333 !important; }}
[data-testid='stMainBlockContainer'] {{ padding-left: 1.5rem; padding-right: 1.5rem; padding-top: 4.5rem;
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
    """Whether this session shows the app in projector mode."""
    return bool(st.session_state.get(SWITCH, False))


def setup() -> None:
    """The router's part, before each page: the switch and the hide list in the sidebar (from the
    address, and back into it), a notice for a value they do not take, the sidebar's start state,
    and the page's CSS."""
    on, names = _from_address()
    with st.sidebar:
        st.toggle("Projector mode", key=SWITCH, on_change=_write_switch,
                  help="For a room: larger text and charts, thicker lines, darker colours, fewer captions. "
                       "In a link: `?projector=1`.")
        with st.expander("Hide parts of the page"):
            st.text_input("Hide (comma list)", key=HIDE_PARAM, on_change=_write_hide, placeholder="sidebar, advanced",
                          help="For a focused demo; in a link: `?hide=sidebar,advanced`. "
                          + "; ".join(f"**{k}**: {v}" for k, v in HIDEABLE.items()))
    if on or "sidebar" in names:
        st.set_page_config(initial_sidebar_state="collapsed")
    css = (_PROJECTOR_CSS if on else "") + "".join(_HIDE_CSS[n] for n in sorted(names))
    if css:
        st.html(f"<style>{css}</style>")


def _from_address() -> tuple[bool, frozenset[str]]:
    """(projector mode, the names hidden) of this run: the address's values where it has them (a
    link, Back), else the session's, which are then written into it (a page opened from the
    sidebar, whose address Streamlit empties). A value they do not take is a notice, and is
    replaced in the address by what the page shows."""
    given = st.query_params.get(PARAM)
    parsed = parse_switch(given)
    if given is not None and parsed is None:
        shown = f"`{given.strip()}`" if _NAME.fullmatch(given.strip().lower()) else "that value"
        st.info(f"`projector=` takes 1 or 0, not {shown}: ignored.", icon="ℹ️")
    elif given is not None:
        st.session_state[SWITCH] = parsed
    on = bool(st.session_state.get(SWITCH, False))
    if given != ("1" if on else None):
        _write(PARAM, "1" if on else None)

    given = st.query_params.get(HIDE_PARAM)
    if given is not None:
        names, unknown = parse_hide(given)
        if unknown:
            shown = ", ".join(f"`{u}`" if _NAME.fullmatch(u) else "(a value that is not a name)" for u in unknown)
            st.info(f"`hide=` does not know {shown}: ignored. It takes {', '.join(HIDEABLE)}.", icon="ℹ️")
        st.session_state[HIDE_PARAM] = ",".join(sorted(names))
    names = parse_hide(st.session_state.get(HIDE_PARAM))[0]
    if given != (",".join(sorted(names)) or None):
        _write(HIDE_PARAM, ",".join(sorted(names)) or None)
    return on, names


def _write(name: str, value: str | None) -> None:
    """Put ``name=value`` into the address (None: take it out)."""
    if value is not None:
        st.query_params[name] = value
    elif name in st.query_params:
        del st.query_params[name]


def _write_switch() -> None:
    _write(PARAM, "1" if st.session_state[SWITCH] else None)


def _write_hide() -> None:  # as typed: the run reads it as it reads a link's (a notice for a name it does not know)
    _write(HIDE_PARAM, st.session_state[HIDE_PARAM].strip() or None)


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
