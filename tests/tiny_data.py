"""A tiny sentiment data set the model tests train on: six positive and six negative sentences."""

from __future__ import annotations

from attention_core import TextDataset, dataset_from_lists

POS = ["a great movie", "i love it", "wonderful and fun", "the best food ever", "really good service", "so happy"]
NEG = ["a terrible movie", "i hate it", "awful and boring", "the worst food ever", "really bad service", "so sad"]


def tiny_sentiment(repeat: int = 3) -> TextDataset:
    """:data:`POS` and :data:`NEG` (labels "pos" / "neg"), ``repeat`` times over."""
    return dataset_from_lists((POS + NEG) * repeat, (["pos"] * len(POS) + ["neg"] * len(NEG)) * repeat)
