"""attention_core.export: the Inspect page's CSV of attention weights and its file names."""

import csv
import io

import numpy as np

from attention_core.export import CSV_HEADER, attention_csv, file_stem


def test_attention_csv_has_a_row_per_layer_head_query_and_key():
    tokens = ["not", "good", "good"]
    attention = np.random.default_rng(0).dirichlet(np.ones(3), size=(2, 4, 3))  # (L=2, H=4, T=3, T=3)
    rows = list(csv.reader(io.StringIO(attention_csv(tokens, attention))))
    assert tuple(rows[0]) == CSV_HEADER and len(rows) == 1 + 2 * 4 * 3 * 3
    for layer, head, qi, query, ki, key, weight in rows[1:]:
        l, h, q, k = int(layer) - 1, int(head) - 1, int(qi), int(ki)  # layers and heads from 1, positions from 0
        assert (query, key) == (tokens[q], tokens[k])
        assert abs(float(weight) - attention[l, h, q, k]) <= 5e-6 * attention[l, h, q, k]  # 6 significant digits
    assert rows[1][:6] == ["1", "1", "0", "not", "0", "not"] and rows[-1][:6] == ["2", "4", "2", "good", "2", "good"]


def test_file_stem():
    assert file_stem("The food was NOT good, at all!") == "the-food-was-not-good-at-all"
    assert file_stem("¿?") == "sentence"
    assert file_stem("a " * 30) == "a-" * 20  # cut at 40 characters
