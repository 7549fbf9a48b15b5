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


UNKNOWN_TOKENS = ("<unk>", "[UNK]")  # a small model's unknown word; a word-piece model's (attention_core.pretrained)
SPECIAL_TOKENS = ("[CLS]", "[SEP]")  # a word-piece model's sentence start and end


def token_chips(tokens: Iterable[str], unknown: Iterable[str] = UNKNOWN_TOKENS) -> str:
    r"""The tokens a model read as Markdown chips, each as written: blue, an ``unknown`` token orange, a BERT
    tokenizer's [CLS] and [SEP] grey.

    Example:
        >>> print(token_chips(["a", "]", "<unk>"]))
        :blue-background[a] :blue-background[\]] :orange-background[\<unk\>]
        >>> print(token_chips(["[CLS]", "un", "##bel", "[SEP]"]))
        :gray-background[\[CLS\]] :blue-background[un] :blue-background[\#\#bel] :gray-background[\[SEP\]]
    """
    unknown = set(unknown)

    def colour(token: str) -> str:
        return "orange" if token in unknown else "gray" if token in SPECIAL_TOKENS else "blue"

    return " ".join(f":{colour(t)}-background[{escaped(t)}]" for t in tokens)
