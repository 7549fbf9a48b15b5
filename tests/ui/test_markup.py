"""The learner's text in Streamlit's Markdown (ui/markup.py): brackets, stars, dollars and the rest shown as typed."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

from streamlit.testing.v1 import AppTest

from ui import markup

ROOT = Path(__file__).resolve().parents[2]
# A Streamlit chip ``:name[label]``: its label ends at the first "]" not escaped by a backslash.
CHIP = re.compile(r":(?:blue|orange)-background\[((?:\\.|[^\]\\])*)\]")


def chips_read(markdown: str) -> list[str]:
    """The labels of ``markdown``'s chips as Streamlit reads them (escapes undone); the text must be chips alone."""
    labels, rest = [], markdown
    while rest:
        m = CHIP.match(rest.lstrip(" "))
        assert m, f"not a chip: {rest!r}"
        labels.append(re.sub(r"\\(.)", r"\1", m[1]))
        rest = rest.lstrip(" ")[m.end():]
    return labels


def test_the_modules_examples_run():
    result = doctest.testmod(markup)
    assert result.failed == 0 and result.attempted > 0


def test_every_character_markdown_or_latex_acts_on_is_escaped():
    typed = "the [very] *best* $5 `film` _ever_ :) <b>#1</b> | ~~ & a \\ b (yes) 1. - +!{}"
    out = markup.escaped(typed)
    assert re.sub(r"\\(.)", r"\1", out) == typed  # undone, the text as typed
    assert not re.search(r"(?<!\\)[\[\]*$`_:<>#|~&(){}!+]", out.replace("\\\\", ""))  # nothing active left


def test_home_shows_a_sentence_with_brackets_as_typed():
    """"the [very] best film" showed as "the [] very best film": a chip's label ended at the token "]"."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).run()
    at.text_input(key="home_text").input("the [very] *best* $ film $").run()
    assert not at.exception
    chips = next(m.value for m in at.markdown if "-background[" in m.value)
    assert chips_read(chips) == ["the", "[", "very", "]", "*", "best", "*", "$", "film", "$"]
