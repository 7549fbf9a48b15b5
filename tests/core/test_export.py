"""attention_core.export: the Inspect page's CSV of attention weights and its file names."""

import csv
import io
import json

import numpy as np

from attention_core.export import CSV_HEADER, attention_csv, attention_json, file_stem


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


def test_a_pooling_attention_s_map_is_one_row_per_head_and_word_named_pooling():
    """Was: written as "layer 3" (after 2 layers), its one row repeated for every word as a query."""
    tokens = ["not", "good", "."]
    rng = np.random.default_rng(1)
    layers = rng.dirichlet(np.ones(3), size=(2, 4, 3))  # (L=2, H=4, T=3, T=3)
    pooling = np.repeat(rng.dirichlet(np.ones(3), size=(1, 4, 1)), 3, axis=2)  # (1, H, T, T): T identical rows
    rows = list(csv.reader(io.StringIO(attention_csv(tokens, np.concatenate([layers, pooling]), n_layers=2))))
    assert len(rows) == 1 + 2 * 4 * 3 * 3 + 4 * 3
    assert {r[0] for r in rows[1:]} == {"1", "2", "pooling"}
    pooled = [r for r in rows[1:] if r[0] == "pooling"]
    assert [(r[1], r[2], r[3], r[4], r[5]) for r in pooled[:3]] == [("1", "", "pooling query", str(k), tokens[k]) for k in range(3)]
    for _, head, _, _, key, _, weight in pooled:
        assert abs(float(weight) - pooling[0, int(head) - 1, 0, int(key)]) <= 5e-6
    assert attention_csv(tokens, layers, n_layers=2) == attention_csv(tokens, layers)  # no pooling map: as before


def test_the_json_holds_a_pooling_attention_s_map_once_per_head_as_the_csv_does():
    """Was: its one row repeated for every word, as a third layer's map under "attention"."""
    tokens = ["not", "good", "."]
    rng = np.random.default_rng(2)
    layers = rng.dirichlet(np.ones(3), size=(2, 4, 3))  # (L=2, H=4, T=3, T=3)
    pooling = np.repeat(rng.dirichlet(np.ones(3), size=(1, 4, 1)), 3, axis=2)  # (1, H, T, T): T identical rows
    out = json.loads(json.dumps(attention_json("run a", "not good.", tokens, "negative", {"negative": 0.9, "positive": 0.1},
                                               np.concatenate([layers, pooling]), n_layers=2)))
    assert out["run"] == "run a" and out["tokens"] == tokens and out["label"] == "negative"
    np.testing.assert_allclose(out["attention"], layers)  # [layer][head][query][key]: the layers' maps only
    np.testing.assert_allclose(out["pooling"], pooling[0, :, 0])  # [head][key]: each head's one row
    csv_rows = [r for r in csv.reader(io.StringIO(attention_csv(tokens, np.concatenate([layers, pooling]), 2))) if r[0] == "pooling"]
    assert len(csv_rows) == np.size(out["pooling"])  # the same weights as the CSV's, one per head and word
    plain = attention_json("run a", "not good.", tokens, "negative", {}, layers, n_layers=2)
    assert "pooling" not in plain and np.shape(plain["attention"]) == (2, 4, 3, 3)


def test_file_stem():
    assert file_stem("The food was NOT good, at all!") == "the-food-was-not-good-at-all"
    assert file_stem("¿?") == "sentence"
    assert file_stem("a " * 30) == "a-" * 20  # cut at 40 characters


def test_hiding_cls_and_sep_drops_their_rows_and_columns_and_renormalises_each_row():
    from attention_core.export import has_special_tokens, without_special_tokens

    tokens = ["[CLS]", "un", "##bel", "good", "[SEP]"]
    attention = np.random.default_rng(2).dirichlet(np.ones(5), size=(6, 12, 5))  # (L, H, T, T), rows sum to 1
    kept, words = without_special_tokens(attention, tokens)
    assert words == ["un", "##bel", "good"] and kept.shape == (6, 12, 3, 3)
    np.testing.assert_allclose(kept.sum(-1), 1.0)
    inner = attention[..., 1:4, :][..., 1:4]  # the same weights, in proportion: each row divided by its sum
    np.testing.assert_allclose(kept, inner / inner.sum(-1, keepdims=True))
    assert has_special_tokens(tokens) and not has_special_tokens(["the", "food", "<unk>"])
    only_special = np.array([[0.5, 0.5, 0.0], [0.2, 0.8, 0.0], [0.5, 0.5, 0.0]])  # "x" looks at [CLS] and [SEP] only
    assert without_special_tokens(only_special, ["[CLS]", "[SEP]", "x"])[0].tolist() == [[0.0]]
