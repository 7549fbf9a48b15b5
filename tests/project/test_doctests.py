"""The examples in attention_core's docstrings run and print what they say (doctest).

The modules listed here have examples that run on their own in a few seconds in all (the Trainer's
trains a tiny model on the bundled GloVe vectors). attention_core.quiz's, which need the bundled run
and the repository as the working directory, run in tests/core/test_quiz.py.
"""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["attention", "data", "embeddings", "examples", "map_names", "metrics", "model", "presets", "pretrained", "run_folders", "text",
           "threads", "training"]


@pytest.mark.parametrize("name", MODULES)
def test_the_modules_examples_run(name):
    module = importlib.import_module(f"attention_core.{name}")
    result = doctest.testmod(module)
    assert result.failed == 0 and result.attempted > 0  # attempted: a module that lost its examples is noticed
