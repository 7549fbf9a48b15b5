"""The pages' sentence box: a text input that keeps the first :data:`ui.view_link.MAX_TEXT` characters of a
longer text, and says so. Light (Streamlit only): the home page draws it before torch is loaded.

Streamlit's own ``max_chars`` refuses a paste longer than the limit in the browser: the box stays as
it was, without a word. This box takes the paste, cuts it in its ``on_change`` callback (before the
page runs) and shows what it kept.
"""

from __future__ import annotations

import streamlit as st

from ui.state import kept
from ui.view_link import MAX_TEXT


def sentence_box(label: str, key: str, default: str | None = None, *, placeholder: str | None = None) -> str:
    """Draw the sentence box ``key`` and return its text (at most ``MAX_TEXT`` characters).

    ``default``: its starting text, kept across pages with :func:`ui.state.kept`; None for a box
    whose value the page has put into its key already (``ui.state.kept_in_state``).
    """
    cut_key = f"{key}__cut"  # (the text kept, the length of the text given) after a cut
    cut_now = f"{key}__cut_now"  # cut by this run's callback

    def cut() -> None:
        text = st.session_state[key]
        if len(text) > MAX_TEXT:
            st.session_state[key] = text[:MAX_TEXT]  # the box shows it (ui.state.kept copies it)
            st.session_state[cut_key] = (text[:MAX_TEXT], len(text))
            st.session_state[cut_now] = True

    args = {"key": key} if default is None else kept(key, default)
    if st.session_state.pop(cut_now, False):  # a starting value given as well would be a warning (ui.state.kept)
        args = {"key": key}
    text = st.text_input(label, **args, on_change=cut, placeholder=placeholder)
    shown, given = st.session_state.get(cut_key, (None, 0))
    if text == shown:
        st.warning(f"The text had {given:,} characters: the box keeps the first {MAX_TEXT}.", icon=":material/content_cut:")
    return text
