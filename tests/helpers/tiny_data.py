"""Tiny sentiment data sets the tests train on, and a word-vector file of their words."""

from __future__ import annotations

import random
from pathlib import Path

from attention_core import TextDataset, dataset_from_lists, load_embeddings

POS = ["a great movie", "i love it", "wonderful and fun", "the best food ever", "really good service", "so happy"]
NEG = ["a terrible movie", "i hate it", "awful and boring", "the worst food ever", "really bad service", "so sad"]


def tiny_sentiment(repeat: int = 3) -> TextDataset:
    """:data:`POS` and :data:`NEG` (labels "pos" / "neg"), ``repeat`` times over."""
    return dataset_from_lists((POS + NEG) * repeat, (["pos"] * len(POS) + ["neg"] * len(NEG)) * repeat)


# Twelve sentences of three and two words (the runs tests' set)
TEXTS = ["a great movie", "i love it", "wonderful fun", "a terrible movie", "i hate it", "awful boring"] * 2
LABELS = ["pos", "pos", "pos", "neg", "neg", "neg"] * 2


def vectors_file(path: Path, dim: int) -> Path:
    """A GloVe-format file of the words TEXTS use, ``dim`` numbers each (GloVe's first ``dim``)."""
    glove = load_embeddings()
    words = sorted({w for t in TEXTS for w in t.split()})
    path.write_text("".join(f"{w} {' '.join(f'{x:.5f}' for x in glove.vector(w)[:dim])}\n" for w in words))
    return path


def labels_without_meaning(n: int = 100, seed: int = 0) -> tuple[list[str], list[str]]:
    """``n`` sentences, each a :data:`POS` and a :data:`NEG` one joined, whose labels ("yes" for 60 %, "no" for
    40 %) are shuffled at random: nothing in the words tells them apart, so a model can learn nothing beyond
    always answering "yes"."""
    rng = random.Random(seed)
    texts = [f"{rng.choice(POS)} and {rng.choice(NEG)}" for _ in range(n)]
    labels = ["yes"] * (n * 3 // 5) + ["no"] * (n - n * 3 // 5)
    rng.shuffle(labels)
    return texts, labels
