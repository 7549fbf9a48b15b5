"""Text → tokens, the way GloVe 6B's vocabulary expects them.

GloVe 6B was trained on lower-cased Wikipedia + Gigaword text split by the Stanford
tokenizer: punctuation is its own token and contractions are split Penn-Treebank style
("don't" → "do n't", "it's" → "it 's", "can't" → "ca n't"). We do the same so that far
fewer words end up unknown than with the seed's ``split(sentence, " ")``.
"""

from __future__ import annotations

import re
import unicodedata

# Curly quotes and dashes that reviews are full of, mapped to what GloVe has.
_TRANSLATE = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "--"})
_NT = re.compile(r"(?<=[a-z])n't\b")
_TOKEN = re.compile(
    r"""
    n't                          # negation clitic, split off by _NT
    | '(?:s|re|ve|ll|m|d)(?![a-z])  # 's 're 've 'll 'm 'd
    | \d+(?:[.,:]\d+)*           # numbers: 3, 3.5, 1,000, 10:30
    | [a-z]+(?:-[a-z]+)*         # words, hyphenated words kept whole
    | \.\.\.                     # an ellipsis is one GloVe token
    | [^\s\w]                    # any other punctuation mark, one at a time
    """,
    re.VERBOSE,
)


def normalize(text: str) -> str:
    """Lower-case, NFKC-normalize and straighten quotes."""
    return unicodedata.normalize("NFKC", text).translate(_TRANSLATE).lower()


def tokenize(text: str) -> list[str]:
    """Split ``text`` into GloVe-style tokens.

    Example:
        >>> tokenize("The food wasn't good... at ALL!")
        ['the', 'food', 'was', "n't", 'good', '...', 'at', 'all', '!']
    """
    text = _NT.sub(" n't", normalize(text))
    return _TOKEN.findall(text)


def whitespace_tokenize(text: str) -> list[str]:
    """The seed's tokenizer (``split(sentence, " ")``), lower-cased; for the seed preset."""
    return [t for t in normalize(text).split(" ") if t]


TOKENIZERS = {"glove": tokenize, "whitespace": whitespace_tokenize}
