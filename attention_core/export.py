"""One sentence's attention weights as a file to download: a CSV row per weight, and the file's name."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence

import numpy as np

CSV_HEADER = ("layer", "head", "query_index", "query", "key_index", "key", "weight")


def attention_csv(tokens: Sequence[str], attention: np.ndarray) -> str:
    """Every layer's and head's weights, one row per (layer, head, query, key): layers and heads count
    from 1, token positions from 0, weights to 6 significant digits.

    Shape: attention (L, H, T, T), tokens (T,).

    Example:
        >>> attention_csv(["hi"], np.ones((1, 1, 1, 1))).splitlines()[1]
        '1,1,0,hi,0,hi,1'
    """
    rows = io.StringIO()
    writer = csv.writer(rows)
    writer.writerow(CSV_HEADER)
    for (layer, head, query, key), weight in np.ndenumerate(np.asarray(attention)):
        writer.writerow([layer + 1, head + 1, query, tokens[query], key, tokens[key], f"{weight:.6g}"])
    return rows.getvalue()


def file_stem(text: str, limit: int = 40) -> str:
    """A file name from a sentence: its lower-case letters and digits, runs of anything else as one "-",
    at most ``limit`` characters; "sentence" when nothing is left.

    Example:
        >>> file_stem("It's GREAT!")
        'it-s-great'
    """
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:limit] or "sentence"
