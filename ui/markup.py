"""Text of the learner's (a sentence, its tokens) shown as typed in Streamlit's Markdown. Light (Streamlit-free).

Streamlit's Markdown acts on brackets (its ``:blue-background[…]`` chips end at the first ``]``, so "the [very]
best film" showed as "the [] very best film"), on ``*``, ``_`` and backticks, on ``$`` (LaTeX) and on links:
every such character is backslash-escaped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_ACTIVE = re.compile(r"([\\`*_\[\]{}()<>#+!|~$:&])")  # what Markdown, Streamlit's directives or LaTeX act on


def escaped(text: str) -> str:
    r"""``text`` with every character Markdown, Streamlit's ``:color[…]`` or LaTeX would act on escaped.

    Example:
        >>> print(escaped("the [very] best $5 film"))
        the \[very\] best \$5 film
    """
    return _ACTIVE.sub(r"\\\1", text)


def token_chips(tokens: Iterable[str], unknown: str = "<unk>") -> str:
    r"""The tokens a model read as Markdown chips, each as written: blue, the ``unknown`` token orange.

    Example:
        >>> print(token_chips(["a", "]", "<unk>"]))
        :blue-background[a] :blue-background[\]] :orange-background[\<unk\>]
    """
    return " ".join(f":{'orange' if t == unknown else 'blue'}-background[{escaped(t)}]" for t in tokens)
