"""The Check yourself page's blocks: the session's quiz, one question at a time, the reveal and its link."""

from __future__ import annotations

import secrets
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import streamlit as st

from attention_core import Run
from attention_core.quiz import Question, View, compared_runs, markdown_escape, next_question, questions
from attention_core.run_folders import list_runs, run_stamp
from ui.common import BUNDLED_NAME, run_link_name, runs_dir
from ui.navigation import PAGE_FILES
from ui.view_link import GLOBAL

SEED_KEY = "quiz_seed"  # the session's seed: its questions' order (a test may set it)


@dataclass
class Quiz:
    """One session's quiz: what was asked, the score, the question on screen and the answer checked."""

    asked: list[str] = field(default_factory=list)  # keys of the questions shown, in order
    right: int = 0
    answered: int = 0
    current: Question | None = None
    checked: str | None = None  # the option the learner checked, once revealed


def quiz() -> Quiz:
    return st.session_state.setdefault("quiz_state", Quiz())


def candidates(run: Run, path: Path, text: str) -> list[Question]:
    """Every question on this run and sentence, in this session's order; kept while neither changes.
    Raises ``EmbeddingError`` for a sentence the model cannot read."""
    seed = st.session_state.setdefault(SEED_KEY, secrets.randbits(32))
    try:
        stamps = tuple(run_stamp(p) for p in list_runs(runs_dir()))
    except OSError:  # a run being saved or deleted right now: read again next time
        stamps = ()
    key = (str(path), text, seed, stamps)
    kept = st.session_state.get("quiz_candidates")
    if kept is None or kept[0] != key:
        rng = np.random.default_rng([seed, zlib.crc32(text.encode())])
        kept = (key, questions(run, text, rng, runs=compared_runs(list_runs(runs_dir()))))
        st.session_state["quiz_candidates"] = kept
    return kept[1]


def current(state: Quiz, offered: list[Question]) -> Question | None:
    """The question on screen: the one being answered if it is still ``offered`` (the run and the
    sentence are the same), else the next one not asked yet, which counts as asked from then on."""
    if state.current is None or state.current.key not in {q.key for q in offered}:
        state.current, state.checked = next_question(offered, state.asked), None
        if state.current is not None:
            state.asked.append(state.current.key)
    return state.current


def _check(state: Quiz, question: Question, widget: str) -> None:
    """Check's callback (before the page runs, so one click counts once)."""
    choice = st.session_state.get(widget)
    if choice is None or state.checked is not None:
        return
    state.checked = choice
    state.answered += 1
    state.right += question.is_right(choice)


def _next(state: Quiz) -> None:
    state.current, state.checked = None, None


def ask(state: Quiz, question: Question) -> None:
    """The question, its options, Check; once checked: right or wrong, why, and the view that shows it."""
    st.markdown(f"**Question {len(state.asked)}.** {question.text}")
    widget = f"quiz_choice_{len(state.asked)}"
    choice = st.radio("Your answer", question.options, index=None, key=widget, format_func=markdown_escape,
                      disabled=state.checked is not None)
    if state.checked is None:
        st.button("Check", key="quiz_check", type="primary", disabled=choice is None,
                  on_click=_check, args=(state, question, widget))
        return
    answer = markdown_escape(question.answer)
    if question.is_right(state.checked):
        st.success(f"Right: **{answer}**.")
    else:
        st.error(f"Not quite: the answer is **{answer}**.")
    st.markdown(question.explanation)
    view_link(question.view, run_link_name(st.session_state.get("active_run", BUNDLED_NAME)))
    st.button("Next question", key="quiz_next", type="primary", on_click=_next, args=(state,))


def view_link(view: View, run_param: str | None) -> None:
    """A link to the view that shows why, in this tab (the session and its workspace stay)."""
    page = next(p for p in PAGE_FILES if p.url_path == view.page)
    # The address's own global parameters (the private w, projector, hide) go along: the view opens in
    # this workspace and mode without a second address write (a second Back to come back here).
    params = {k: st.query_params[k] for k in GLOBAL if k in st.query_params} | dict(view.params)
    if run_param is not None and view.page != "Train":  # Train's runs are named in its own parameter
        params["run"] = run_param
    st.page_link(page.path, label=f"See why on {page.title}", icon=":material/search:", query_params=params)


def score(state: Quiz) -> None:
    """The session's score, once a question is answered."""
    if state.answered:
        st.metric("Your score this session", f"{state.right} of {state.answered}")
