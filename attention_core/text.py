"""Text → tokens, the way GloVe 6B's vocabulary expects them.

GloVe 6B was trained on lower-cased Wikipedia + Gigaword text split by the Stanford
tokenizer: punctuation is its own token and contractions are split Penn-Treebank style
("don't" → "do n't", "it's" → "it 's", "can't" → "ca n't"). We do the same so that far
fewer words end up unknown than with the seed's ``split(sentence, " ")``.

And a sentence the other way, into a file's name (:func:`file_stem`): torch-free, for the home page's charts too.
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


# How a token was written, for models that read capitals (``ModelConfig.casing``): GloVe 6B's vectors
# are lower-case, so "NASA" and "nasa" get one vector; the kind of writing is added as a learned vector.
CASINGS = ("lower", "capitalised", "capitals", "mixed")  # index 0: lower case, digits, punctuation


def casing_kind(written: str) -> int:
    """The index in :data:`CASINGS` of a token as written.

    Example:
        >>> [CASINGS[casing_kind(w)] for w in ("the", "The", "NASA", "iPhone", "3", "I")]
        ['lower', 'capitalised', 'capitals', 'mixed', 'lower', 'capitalised']
    """
    letters = [ch for ch in written if ch.isalpha()]
    if not letters or all(ch.islower() for ch in letters):
        return 0
    if letters[0].isupper() and all(ch.islower() for ch in letters[1:]):
        return 1
    if len(letters) >= 2 and all(ch.isupper() for ch in letters):
        return 2
    return 3


def as_written(token: str, kind: int) -> str:
    """A lower-case ``token`` shown the way its :func:`casing_kind` says it was written (mixed: marked).

    Example:
        >>> [as_written("nasa", k) for k in range(len(CASINGS))]
        ['nasa', 'Nasa', 'NASA', 'nasa (mIxed)']
    """
    return (token, token[:1].upper() + token[1:], token.upper(), f"{token} (mIxed)")[kind]


def token_casing(text: str, tokens: list[str] | tuple[str, ...]) -> list[int]:
    """A :func:`casing_kind` per token of ``tokens`` (``text`` as a tokenizer split it), in the same order.

    Every token is a piece of the normalized, lower-cased text (the "n't" split only adds a space),
    so each is found there in turn and read back from the text as written. Where lower-casing
    changes the text's length (a few non-English letters, e.g. "İ") every token counts as lower case.

    Example:
        >>> text = "NASA isn't BIG"
        >>> list(zip(tokenize(text), token_casing(text, tokenize(text))))
        [('nasa', 2), ('is', 0), ("n't", 0), ('big', 2)]
    """
    written = unicodedata.normalize("NFKC", text).translate(_TRANSLATE)
    lowered = written.lower()
    if len(lowered) != len(written):
        return [0] * len(tokens)
    kinds, at = [], 0
    for token in tokens:
        start = lowered.find(token, at)
        if start < 0:  # not expected: every token is a piece of the lower-cased text
            kinds.append(0)
            continue
        at = start + len(token)
        kinds.append(casing_kind(written[start:at]))
    return kinds


def file_stem(text: str, limit: int = 40) -> str:
    """A file name from a sentence: its lower-case letters and digits, runs of anything else as one "-",
    at most ``limit`` characters; "sentence" when nothing is left.

    Example:
        >>> file_stem("It's GREAT!")
        'it-s-great'
    """
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:limit] or "sentence"
