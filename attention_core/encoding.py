"""Sentences → token ids for the model, with unknown words and truncation reported.

Every sentence is read by :func:`look_up` (tokenize, then mark the tokens the word vectors
know), and a sentence a learner typed by :func:`read_sentence` (the same, refusing an empty
sentence or one with no known word): the run's encoder, the explainer pages' sentences and
the Julia post's inputs on the Backpropagation page.

A run's vocabulary is every word of its training data that the embedding table knows
(most frequent first), plus ``<pad>`` = 0 and ``<unk>`` = 1. At prediction time a word the
run never saw but the table knows is still read: its vector is passed as an ``extra`` row.
An encoder for a model that reads capitals (``casing``) also gives each token how it was written
(:data:`attention_core.text.CASINGS`), since the word vectors are lower-case.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor

from attention_core.embeddings import Embeddings
from attention_core.errors import ConfigError, EmbeddingError
from attention_core.text import TOKENIZERS, as_written, token_casing

PAD, UNK = 0, 1
UNKNOWN_MODES = ("drop", "unk")


def check_sentence(text: str, what: str = "the sentence") -> None:
    """Raise :class:`EmbeddingError` for an empty or whitespace-only sentence (before anything looks its words up).

    Example:
        >>> check_sentence("   ")
        Traceback (most recent call last):
        ...
        attention_core.errors.EmbeddingError: the sentence is empty — type a sentence, e.g. 'the food was good'
    """
    if not text.strip():
        raise EmbeddingError(f"{what} is empty", "type a sentence, e.g. 'the food was good'")


@dataclass(frozen=True)
class Words:
    """A sentence's tokens and which of them have a word vector (see :func:`look_up`)."""

    text: str
    tokens: tuple[str, ...]  # every token, in order
    known: tuple[bool, ...]  # per token: has a vector (or, for a run's encoder, an id)

    @property
    def known_tokens(self) -> list[str]:
        return [t for t, k in zip(self.tokens, self.known, strict=True) if k]

    @property
    def unknown_tokens(self) -> list[str]:
        return [t for t, k in zip(self.tokens, self.known, strict=True) if not k]


def look_up(text: str, is_known: Callable[[str], bool], tokenizer: str = "glove") -> Words:
    """Tokenize ``text`` with ``tokenizer`` (one of :data:`~attention_core.text.TOKENIZERS`) and mark the
    tokens ``is_known`` (e.g. ``embeddings.__contains__``).

    Example:
        >>> look_up("a xqzzy day", {"a", "day"}.__contains__).unknown_tokens
        ['xqzzy']
    """
    tokens = TOKENIZERS[tokenizer](text)
    return Words(text, tuple(tokens), tuple(map(is_known, tokens)))


def read_sentence(
    text: str,
    embeddings: Embeddings,
    tokenizer: str = "glove",
    *,
    is_known: Callable[[str], bool] | None = None,
    what: str | None = None,
    within: int | None = None,
) -> Words:
    """:func:`look_up` of a sentence a learner typed; :class:`EmbeddingError` if it is empty or no token is known.

    ``is_known`` defaults to "``embeddings`` has a vector"; ``within`` counts only the first
    ``within`` tokens (those a model reads). With ``what`` (e.g. ``"sentence A"``) the errors
    name the sentence and its unknown tokens; without, they quote it and name the word vectors.

    Example:
        >>> read_sentence("xqzzy", load_embeddings(), what="sentence A")
        Traceback (most recent call last):
        ...
        attention_core.errors.EmbeddingError: none of the words of sentence A has a GloVe vector ('xqzzy') — ...
    """
    check_sentence(text, what or "the sentence")
    words = look_up(text, embeddings.__contains__ if is_known is None else is_known, tokenizer)
    if any(words.known[:within]):
        return words
    if what is not None:
        unknown = words.unknown_tokens
        shown = ", ".join(repr(t) for t in unknown) if unknown else "only punctuation"
        raise EmbeddingError(f"none of the words of {what} has a GloVe vector ({shown})",
                             "check the spelling, or use more common English words")
    shown = text if len(text) < 60 else text[:57] + "…"
    raise EmbeddingError(
        f"none of the words in {shown!r} are in the vocabulary ({embeddings.source.describe()})",
        "type an English sentence with common words",
    )


@dataclass(frozen=True)
class Encoded:
    """One sentence as the model sees it, and what happened on the way."""

    text: str
    tokens: tuple[str, ...]  # the tokens fed to the model (unknown ones as "<unk>" or dropped)
    ids: tuple[int, ...]
    unknown: tuple[str, ...]  # words the embedding table does not know
    n_tokens: int  # tokens before dropping / truncation
    truncated: int  # tokens cut off at the end (max_tokens)
    extra_words: tuple[str, ...] = field(default=())  # known words outside the run vocabulary
    casing: tuple[int, ...] = field(default=())  # per id, how the token was written (encoders with casing; else empty)

    @property
    def readable(self) -> bool:
        """Whether the model has a known word of it to read: a sentence without one cannot be predicted."""
        return any(i != UNK for i in self.ids)

    @property
    def notes(self) -> list[str]:
        """What a page shows under the tokens, each as written here (a sentence, capitalised)."""
        out = []
        if self.unknown:
            marker = next((t for t in ("<unk>", "[UNK]") if t in self.tokens), None)  # ours, or BERT's word pieces'
            how = "dropped" if marker is None else f"read as {marker}"
            out.append(f"{len(self.unknown)} unknown word(s) {how}: {', '.join(self.unknown)}")
        if self.truncated:
            out.append(f"Text truncated: the last {self.truncated} token(s) were cut off")
        written = [as_written(t, k) for t, k in zip(self.tokens, self.casing, strict=False) if k]
        if written:
            out.append(f"Read with capitals (a learned vector for the way of writing added to the lower-case word's): "
                       f"{', '.join(written)}")
        return out


@dataclass
class Batch:
    """Padded token ids for a batch. Shapes: ids (B, T), mask (B, T), labels (B,), extra (X, E), casing (B, T)."""

    ids: Tensor
    mask: Tensor
    labels: Tensor | None = None
    extra: Tensor | None = None
    casing: Tensor | None = None  # each token's index in CASINGS (encoders with casing); padding 0


class TextEncoder:
    """Tokenize, look up and pad sentences for one run.

    Example:
        >>> enc = TextEncoder.build(load_embeddings(), ["a good day"])
        >>> enc.encode("a bad day").tokens
        ('a', 'bad', 'day')
    """

    def __init__(
        self,
        embeddings: Embeddings,
        words: Sequence[str],
        *,
        tokenizer: str = "glove",
        unknown: str = "unk",
        max_tokens: int = 64,
        casing: bool = False,
    ) -> None:
        if tokenizer not in TOKENIZERS:
            raise ConfigError(f"unknown tokenizer {tokenizer!r}", f"choose one of {', '.join(TOKENIZERS)}")
        if unknown not in UNKNOWN_MODES:
            raise ConfigError(f"unknown-word mode {unknown!r} is not valid", "choose 'drop' (the seed's) or 'unk'")
        if max_tokens < 1:
            raise ConfigError(f"max_tokens = {max_tokens} is not valid", "use a positive number, e.g. 64")
        self.embeddings = embeddings
        self.words = list(words)
        self.word_to_id = {w: i + 2 for i, w in enumerate(self.words)}
        self.tokenizer, self.unknown, self.max_tokens = tokenizer, unknown, max_tokens
        self.casing = casing  # also read how each token was written (for a model with ModelConfig.casing)

    @classmethod
    def build(cls, embeddings: Embeddings, texts: Iterable[str], **kwargs) -> TextEncoder:
        """A run vocabulary from ``texts``: every known word, most frequent first."""
        tokenizer = kwargs.get("tokenizer", "glove")
        counts = Counter(t for text in texts for t in look_up(text, embeddings.__contains__, tokenizer).known_tokens)
        return cls(embeddings, [w for w, _ in counts.most_common()], **kwargs)

    @property
    def vocab_size(self) -> int:
        return len(self.words) + 2

    def vectors(self) -> Tensor:
        """Initial embedding rows for the run vocabulary (pad and unk are zero). Shape (V, E)."""
        table = np.zeros((self.vocab_size, self.embeddings.dim), dtype=np.float32)
        if self.words:
            table[2:] = self.embeddings.vectors(self.words)
        return torch.from_numpy(table)

    def _has_id(self, token: str) -> bool:
        """Whether ``token`` gets an id: a run word, or a word the embedding table knows (an ``extra`` row)."""
        return token in self.word_to_id or token in self.embeddings

    def encode(self, text: str) -> Encoded:
        return self._encode(look_up(text, self._has_id, self.tokenizer))

    def _encode(self, words: Words) -> Encoded:
        kept, ids, unknown, extra, casing = [], [], [], [], []
        kinds = token_casing(words.text, words.tokens) if self.casing else [0] * len(words.tokens)
        for tok, known, kind in zip(words.tokens, words.known, kinds, strict=True):
            if known:
                i = self.word_to_id.get(tok)
                if i is None:
                    if tok not in extra:
                        extra.append(tok)
                    i = self.vocab_size + extra.index(tok)
            else:
                unknown.append(tok)
                if self.unknown == "drop":
                    continue
                tok, i = "<unk>", UNK
            kept.append(tok)
            ids.append(i)
            casing.append(kind)
        truncated = max(0, len(ids) - self.max_tokens)
        kept, ids = kept[: self.max_tokens], ids[: self.max_tokens]
        casing = casing[: self.max_tokens] if self.casing else []
        return Encoded(words.text, tuple(kept), tuple(ids), tuple(unknown), len(words.tokens), truncated, tuple(extra),
                       tuple(casing))

    def encode_for_model(self, text: str) -> tuple[Encoded, Batch]:
        """Encode one sentence into a batch of one; error if it is empty or no word the model reads is known."""
        within = self.max_tokens if self.unknown == "unk" else None  # dropped words leave room for later ones
        enc = self._encode(read_sentence(text, self.embeddings, self.tokenizer, is_known=self._has_id, within=within))
        return enc, self.collate([enc])

    def collate(self, encoded: Sequence[Encoded], labels: Sequence[int] | None = None) -> Batch:
        """Pad to the longest sentence; gather ``extra`` vectors for out-of-run words."""
        t = max(1, max(len(e.ids) for e in encoded))
        ids = torch.zeros(len(encoded), t, dtype=torch.long)
        extra_words: list[str] = []
        for row, e in enumerate(encoded):
            local = [i if i < self.vocab_size else self.vocab_size + len(extra_words) + (i - self.vocab_size) for i in e.ids]
            ids[row, : len(local)] = torch.tensor(local, dtype=torch.long)
            extra_words.extend(e.extra_words)
        extra = torch.from_numpy(self.embeddings.vectors(extra_words)) if extra_words else None
        lab = torch.tensor(labels, dtype=torch.long) if labels is not None else None
        casing = None
        if self.casing:
            casing = torch.zeros_like(ids)
            for row, e in enumerate(encoded):
                casing[row, : len(e.casing)] = torch.tensor(e.casing, dtype=torch.long)
        return Batch(ids, ids != PAD, lab, extra, casing)

    def to_dict(self) -> dict:
        return {
            "tokenizer": self.tokenizer,
            "unknown": self.unknown,
            "max_tokens": self.max_tokens,
            "embedding": self.embeddings.source.to_dict(),
            "words": self.words,
        }
