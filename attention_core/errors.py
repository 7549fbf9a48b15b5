"""Errors for bad user input: each says what is wrong and how to fix it.

Every error a user can cause (a broken CSV, a wrong column, a bad config value, a run
directory that does not load) is an :class:`InputError`, a ``ValueError`` with a one-line
message and a hint. The CLI prints ``error: <message>`` and exits with status 2; the app
shows the same text in ``st.error``. Internal invariants use ``assert`` instead.
"""

from __future__ import annotations


class InputError(ValueError):
    """A user-facing error: ``str(err)`` is ``"<what is wrong> — <how to fix it>"``."""

    def __init__(self, message: str, hint: str = "") -> None:
        self.message = message
        self.hint = hint
        super().__init__(f"{message} — {hint}" if hint else message)


class DataError(InputError):
    """A CSV file or a text column that cannot be used for training."""


class ConfigError(InputError):
    """A model or training setting that is out of range."""


class EmbeddingError(InputError):
    """A word-vector file that cannot be read, or a sentence with no known word."""


class RunError(InputError):
    """A run directory or run archive that is missing, incomplete or not ours."""
