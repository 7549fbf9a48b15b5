"""Widget state that outlives a page switch. Light (Streamlit only): the home page uses it before torch is loaded."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

_PUT = "state_put_keys"  # widgets given a value by put during this page run


def kept(key: str, default: object = None, options: Sequence | None = None) -> dict:
    """Widget arguments (``key`` and its starting ``value``, or ``index`` for ``options``) for a
    choice that survives a visit to another page.

    Streamlit forgets the value of a widget that a page run does not draw, so a learner who
    looks at another page (say, while a training runs) would come back to the defaults: the
    bundled dataset instead of the CSV being trained on, the preset's settings instead of the
    ones being trained with, the example sentence instead of their own. The value is copied
    under a key of its own, which Streamlit does not clear, on every run that draws the widget,
    and becomes the widget's starting value when it is drawn again. The value is never written
    to the widget's own key: a form widget drawn again and given its value that way is
    submitted with its *default* instead (the learning rate arrives as its minimum; compare
    streamlit/streamlit#9082), and Streamlit warns about a widget given both. A kept value that
    is no longer among ``options`` (e.g. another CSV's columns) falls back to ``default``.

    Example:
        >>> st.number_input("Epochs", 1, 5000, **kept("train_epochs", 10))  # doctest: +SKIP
        >>> st.selectbox("Pooling", POOLING, **kept("train_pool", "mean", POOLING))  # doctest: +SKIP
    """
    copy = _copy(key)
    if key in st.session_state:  # the widget's current value (a form's: as last submitted)
        st.session_state[copy] = st.session_state[key]
    if key in st.session_state.get(_PUT, ()) and (options is None or st.session_state[key] in options):
        return {"key": key}  # its value is in its key already (put): a starting value as well would be a warning
    value = st.session_state.get(copy, default)
    if options is None:
        return {"key": key, "value": value}
    options = list(options)
    if value not in options:
        value = default
    return {"key": key, "index": options.index(value) if value in options else 0}


def kept_in_state(key: str, default: object, options: Sequence | None = None) -> None:
    """:func:`kept` for a widget whose value the page also sets through the Session State (a click
    on a chart or an example picks it), drawn with ``key`` only: the kept value goes back into the
    widget's own key before it is drawn. ``options``: the values it may take (None: any). Not for
    a widget in a form (see :func:`kept`)."""
    copy = _copy(key)
    if options is None:
        if key not in st.session_state:  # first visit, or back from another page
            st.session_state[key] = st.session_state.get(copy, default)
    elif st.session_state.get(key) not in options:  # first visit, back from another page, or fewer options now
        st.session_state[key] = st.session_state[copy] if st.session_state.get(copy) in options else default
    st.session_state[copy] = st.session_state[key]


def current(key: str, default: object = None) -> object:
    """The value of the widget ``key`` now: its own (drawn on the last run) or its kept copy, else ``default``."""
    if key in st.session_state:
        return st.session_state[key]
    return st.session_state.get(_copy(key), default)


def put(key: str, value: object) -> None:
    """Give the widget ``key`` the value ``value`` from outside (a link, ``ui.view_link``), before it is
    drawn: into its own key, so the browser shows it, and its kept copy, so :func:`kept` and
    :func:`kept_in_state` start from it. Not for a widget in a form (see :func:`kept`)."""
    st.session_state[key] = value
    st.session_state[_copy(key)] = value
    st.session_state.setdefault(_PUT, set()).add(key)


def new_run() -> None:
    """Forget which widgets :func:`put` gave a value: called as a page run begins (``ui.view_link``)."""
    st.session_state[_PUT] = set()


def _copy(key: str) -> str:
    return f"{key}__kept"  # Streamlit clears a widget's key when a run does not draw it, not this one
