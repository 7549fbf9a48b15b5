"""The Check yourself page in Streamlit's AppTest, through the router as the server serves it: a question,
an answer checked, the reveal with its numbers and its link, the session's score, the next question."""

from __future__ import annotations

import json
import shutil
import zlib
from pathlib import Path
from urllib.parse import parse_qs

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from attention_core.quiz import markdown_escape, questions
from tests.helpers.apptest import current_page, follow
from ui.preview import EXAMPLES

ROOT = Path(__file__).resolve().parents[2]
PAGE = "pages/8_Check_yourself.py"
TIMEOUT = 120
SEED = 7

pytestmark = pytest.mark.usefixtures("runs_dir", "through_the_router")  # a runs root of its own, AppTest through the router (conftest)


def page(**state: object) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.session_state["quiz_seed"] = SEED
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    at.switch_page(PAGE).run()
    at._page_hash = ""  # later runs stay on this page, as in the browser
    assert not at.exception, at.exception
    assert current_page(at) == "Check_yourself"
    return at


def expected(run, text: str = EXAMPLES[0]):
    """The questions the page asks, in its order: the same seed and sentence."""
    return questions(run, text, np.random.default_rng([SEED, zlib.crc32(text.encode())]))


def shown(at: AppTest) -> str:
    return " ".join(m.value for m in at.markdown)


def answer(at: AppTest, choice: str) -> AppTest:
    (radio,) = [r for r in at.radio if r.key.startswith("quiz_choice_")]
    radio.set_value(choice).run()
    at.button(key="quiz_check").click().run()
    assert not at.exception, at.exception
    return at


def test_ask_check_reveal_score_and_next(bundled):
    at = page()
    first, second, *_ = expected(bundled)
    assert at.title[0].value == "Check yourself"
    assert f"**Question 1.** {first.text}" in shown(at)
    assert at.button(key="quiz_check").disabled  # nothing chosen yet
    assert not at.metric  # no score before an answer
    wrong = next(o for o in first.options if o != first.answer)
    answer(at, wrong)
    assert at.error[0].value == f"Not quite: the answer is **{markdown_escape(first.answer)}**."
    assert first.explanation in shown(at)
    assert at.metric[0].value == "0 of 1"
    (link,) = at.get("page_link")
    query = {k: v for k, (v,) in parse_qs(link.proto.query_string).items()}
    assert query == dict(first.view.params)  # the bundled model: no run parameter
    assert link.proto.label == f"See why on {first.view.page.replace('_', ' ')}"

    at.button(key="quiz_next").click().run()
    assert f"**Question 2.** {second.text}" in shown(at) and not at.error and not at.success
    answer(at, second.answer)
    assert at.success[0].value == f"Right: **{markdown_escape(second.answer)}**."
    assert at.metric[0].value == "1 of 2"
    at.run()  # a rerun counts nothing twice
    assert at.metric[0].value == "1 of 2"

    follow(at, at.get("page_link")[0].proto.page_script_hash)
    assert not at.exception, at.exception
    assert current_page(at) == second.view.page


def test_a_new_sentence_asks_about_it_and_never_repeats_a_question(bundled):
    at = page()
    asked = [at.session_state["quiz_state"].current.key]
    at.text_input(key="quiz_text").set_value(EXAMPLES[1]).run()
    assert not at.exception, at.exception
    first_of_new = expected(bundled, EXAMPLES[1])[0]
    assert at.session_state["quiz_state"].current.key == first_of_new.key
    asked.append(first_of_new.key)
    at.text_input(key="quiz_text").set_value(EXAMPLES[0]).run()  # back: the next one, not the first again
    now = at.session_state["quiz_state"].current.key
    assert now not in asked and now == expected(bundled)[1].key
    assert at.session_state["quiz_state"].asked == [*asked, now]


def test_every_question_answered_says_so():
    at = page(quiz_text__kept="great")  # one word: few questions (its probabilities, a knock-out)
    for _ in range(10):
        if at.session_state["quiz_state"].current is None:
            break
        answer(at, at.session_state["quiz_state"].current.answer)
        at.button(key="quiz_next").click().run()
    assert "You have answered every question" in at.success[0].value
    state = at.session_state["quiz_state"]
    assert state.right == state.answered == len(state.asked) >= 1


def test_a_sentence_the_model_cannot_read_is_a_clear_error():
    at = page()
    at.text_input(key="quiz_text").set_value("xqzzyv blorfnik").run()
    assert not at.exception, at.exception
    assert "none of the words" in at.error[0].value and "common words" in at.error[0].value
    assert not at.radio


def test_a_run_of_the_workspace_is_named_in_the_link_and_two_runs_can_be_compared(runs_dir):
    for name in ("mine", "other"):
        shutil.copytree(ROOT / "data" / "default_run", runs_dir / name)
    history = json.loads((runs_dir / "other" / "history.json").read_text())
    for epoch in history["epochs"]:
        epoch["train_loss"] *= 1.5  # "other" learned slower
    (runs_dir / "other" / "history.json").write_text(json.dumps(history))
    at = page(active_run="mine")
    answer(at, at.session_state["quiz_state"].current.answer)
    (link,) = at.get("page_link")
    assert parse_qs(link.proto.query_string)["run"] == ["mine"]  # the run's folder name, as the pages read it
    (faster,) = [q for q in at.session_state["quiz_candidates"][1] if q.kind == "learned_faster"]
    assert set(faster.options) == {"mine", "other"} and faster.answer == "mine"
    assert dict(faster.view.params) == {"compare": "mine,other"}
