"""The seed documents' printed numbers, reproduced with attention_core.

The expected values below are copied from the seed documents (as printed there); the actual
values are computed by :func:`attention_core.attention.attention_steps` (and, for seed 000,
:func:`attention_core.embeddings.load_embeddings`). Nothing here reads the seed files.

* 001 — self-attention step by step in PyTorch ("Your journey starts with one step").
* 002 — cross-attention in NumPy/SciPy with one-hot words, ``np.random.seed(57)``.
* 000 — "Attention from Scratch in Julia": the GloVe 6B 50d vector of "red".
"""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from torch import Tensor, nn

from attention_core.attention import attention_steps
from attention_core.embeddings import load_embeddings
from tests.helpers.seed_documents import (  # the printed numbers
    ATTENTION,
    CONTEXT,
    INPUT_SENTENCE,
    INPUTS,
    KEY_WORD_0,
    KEYS_T,
    QUERIES,
    QUERY_WORD_0,
    SA_V1,
    SA_V2,
    SCORES,
    SCORES_WORD_0,
    VALUE_WORD_0,
    VALUES,
    W_KEY,
    W_QUERY,
    W_VALUE,
    WEIGHTS,
    WEIGHTS_WORD_0,
    assert_printed,
    floats,
)

# --- seed 001: self-attention in PyTorch, 4 printed decimals ----------------------------------


@pytest.fixture
def inputs() -> Tensor:
    return torch.tensor(INPUTS)


def test_001_simple_self_attention_for_journey(inputs: Tensor) -> None:
    steps = attention_steps(inputs, inputs, inputs, scale=1.0)
    scores_2 = steps.scores[1]
    assert_printed(scores_2, [0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865], 4)
    assert_printed(scores_2 / scores_2.sum(), [0.1455, 0.2278, 0.2249, 0.1285, 0.1077, 0.1656], 4)  # naive
    assert_printed(steps.weights[1], [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581], 4)
    assert steps.weights[1].sum().item() == pytest.approx(1.0, abs=1e-6)
    assert_printed(steps.output[1], [0.4419, 0.6515, 0.5683], 4)
    # the post's loop: context_vec_2 = Σ α_2i x_i
    loop = sum(steps.weights[1, i] * inputs[i] for i in range(6))
    torch.testing.assert_close(steps.output[1], loop)


def test_001_all_tokens(inputs: Tensor) -> None:
    steps = attention_steps(inputs, inputs, inputs, scale=1.0)
    assert steps.scores.shape == steps.weights.shape == (6, 6) and steps.output.shape == (6, 3)
    assert_printed(steps.scores, SCORES, 4)
    assert torch.equal(steps.scaled, steps.scores)
    assert_printed(steps.weights, WEIGHTS, 4)
    assert_printed(steps.output, CONTEXT, 4)


def test_001_trainable_weights(inputs: Tensor) -> None:
    torch.manual_seed(123)
    w_query, w_key, w_value = torch.rand(3, 2), torch.rand(3, 2), torch.rand(3, 2)
    assert_printed(w_query, W_QUERY, 4)
    assert_printed(w_key, W_KEY, 4)
    assert_printed(w_value, W_VALUE, 4)

    queries, keys, values = inputs @ w_query, inputs @ w_key, inputs @ w_value
    assert keys.shape == values.shape == (6, 2)
    assert_printed(queries[1], [0.4306, 1.4551], 4)  # query_2
    assert_printed(keys.T, KEYS_T, 4)
    assert_printed(values, VALUES, 4)

    steps = attention_steps(queries, keys, values)  # default scale 1/√d_k = 1/√2
    assert steps.scaled[1, 1].item() == pytest.approx(steps.scores[1, 1].item() / 2**0.5)
    assert_printed(steps.scores[1, 1], 1.8524, 4)  # attn_score_22
    assert_printed(steps.scores[1], [1.2705, 1.8524, 1.8111, 1.0795, 0.5577, 1.5440], 4)
    assert_printed(steps.weights[1], [0.1500, 0.2264, 0.2199, 0.1311, 0.0906, 0.1820], 4)
    assert_printed(steps.output[1], [0.3061, 0.8210], 4)  # context_vec_2


def test_001_self_attention_v1(inputs: Tensor) -> None:
    torch.manual_seed(123)  # SelfAttentionV1(3, 2): W_query, W_key, W_value = torch.rand(3, 2) in order
    w_query, w_key, w_value = torch.rand(3, 2), torch.rand(3, 2), torch.rand(3, 2)
    out = attention_steps(inputs @ w_query, inputs @ w_key, inputs @ w_value).output
    assert_printed(out, SA_V1, 4)


def test_001_self_attention_v2(inputs: Tensor) -> None:
    torch.manual_seed(789)  # SelfAttentionV2(3, 2): nn.Linear(3, 2, bias=False) for query, key, value
    w_query, w_key, w_value = (nn.Linear(3, 2, bias=False) for _ in range(3))
    with torch.no_grad():
        out = attention_steps(w_query(inputs), w_key(inputs), w_value(inputs)).output
    assert_printed(out, SA_V2, 4)


# --- seed 002: cross-attention in NumPy, seed 57, 8 printed decimals ---------------------------

VOCAB, IN_LEN, OUT_LEN = 10, 8, 13




def one_hot(index: int) -> np.ndarray:
    return np.array([1 if i == index else 0 for i in range(VOCAB)])


@pytest.fixture(scope="module")
def seed57() -> dict:
    """The notebook's data: np.random.seed(57) and random.seed(57), drawn in the notebook's order."""
    np_rng, py_rng = np.random.RandomState(57), random.Random(57)  # same streams as the global seeds
    weights_query = np_rng.rand(VOCAB, VOCAB)
    weights_key = np_rng.rand(VOCAB, VOCAB)
    weights_value = np_rng.rand(VOCAB, VOCAB)
    word_index = py_rng.randint(0, VOCAB - 1)
    input_word_indices = [py_rng.randint(0, VOCAB - 1) for _ in range(IN_LEN)]
    output_word_indices = [py_rng.randint(0, VOCAB - 1) for _ in range(OUT_LEN)]
    input_sentence = np.array([one_hot(i) for i in input_word_indices])
    output_sentence = np.array([one_hot(i) for i in output_word_indices])
    return {
        "wq": weights_query, "wk": weights_key, "wv": weights_value, "word_index": word_index,
        "input_sentence": input_sentence, "output_sentence": output_sentence,
        "query": torch.from_numpy(output_sentence @ weights_query),  # float64
        "key": torch.from_numpy(input_sentence @ weights_key),
        "value": torch.from_numpy(input_sentence @ weights_value),
    }  # fmt: skip


def test_002_one_word(seed57: dict) -> None:
    assert seed57["word_index"] == 0
    word = one_hot(seed57["word_index"])
    assert word.tolist() == [1, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    assert_printed(word @ seed57["wq"], QUERY_WORD_0, 8)
    assert_printed(word @ seed57["wk"], KEY_WORD_0, 8)
    assert_printed(word @ seed57["wv"], VALUE_WORD_0, 8)


def test_002_sentences(seed57: dict) -> None:
    assert seed57["input_sentence"].tolist() == INPUT_SENTENCE
    assert seed57["input_sentence"].shape == (IN_LEN, VOCAB)
    assert seed57["output_sentence"].shape == (OUT_LEN, VOCAB)
    queries = seed57["query"].numpy()
    assert len(QUERIES) == 7 * 10 + 3
    assert_printed(queries[:7], np.reshape(QUERIES[:70], (7, 10)), 8)
    assert_printed(queries[7, :3], QUERIES[70:], 8)
    assert str(queries[7, 3]).startswith("0.65")  # printed "0.65" before the cut


def test_002_first_output_word(seed57: dict) -> None:
    q, k, v = seed57["query"], seed57["key"], seed57["value"]
    assert q.dtype == k.dtype == v.dtype == torch.float64
    steps = attention_steps(q[:1], k, v)  # default scale 1/√10
    assert steps.scores[0, 0].item() == pytest.approx(3.1707535631756056, rel=1e-15)  # np.dot(queries[0], keys[0])
    assert_printed(steps.scores[0], SCORES_WORD_0, 8)
    assert_printed(steps.weights[0], WEIGHTS_WORD_0, 8)
    assert_printed(steps.output[0], ATTENTION[:10], 8)  # the one-word attention vector
    assert steps.scaled[0, 0].item() == pytest.approx(3.1707535631756056 / 10**0.5, rel=1e-15)


def test_002_whole_sentence(seed57: dict) -> None:
    steps = attention_steps(seed57["query"], seed57["key"], seed57["value"])
    assert steps.scores.shape == steps.weights.shape == (OUT_LEN, IN_LEN)
    assert steps.output.shape == (OUT_LEN, VOCAB)
    assert_printed(steps.weights[0], WEIGHTS_WORD_0, 8)
    assert len(ATTENTION) == 7 * 10 + 3
    assert_printed(steps.output[:7], np.reshape(ATTENTION[:70], (7, 10)), 8)
    assert_printed(steps.output[7, :2], ATTENTION[70:72], 8)
    assert 0.4609807 <= steps.output[7, 2].item() < 0.4609808  # printed up to "0.4609807" (cut)
    # one row per output word: equal output words (rows 1 and 2) give equal rows
    assert torch.equal(steps.output[1], steps.output[2])
    # and the scipy softmax the notebook used agrees
    from scipy.special import softmax

    np.testing.assert_allclose(
        steps.weights.numpy(), softmax(steps.scores.numpy() / VOCAB**0.5, axis=1), rtol=1e-12, atol=1e-15
    )


# --- seed 000: the GloVe 6B 50d vector of "red" ----------------------------------------------

# julia> get_embeddings("red"): the first 13 values, ⋮, then the last 12 (Julia elides 50 − 25)
RED_HEAD = floats("""-0.12878 0.8798 -0.60694 0.12934 0.5868 -0.038246 -1.0408
 -0.52881 -0.29563 -0.72567 0.21189 0.17112 0.19173""")
RED_TAIL = floats("""0.050825 -0.20362 0.13695 0.26686 -0.19461 -0.75482
 1.0303 -0.057467 -0.32327 -0.7712 -0.16764 -0.73835""")


def test_000_glove_red() -> None:
    red = load_embeddings().vector("red")
    assert red.dtype == np.float32
    assert red.shape == (50,)
    assert len(RED_HEAD) == 13 and len(RED_TAIL) == 12
    np.testing.assert_allclose(red[:13], RED_HEAD, rtol=5e-5, atol=0)  # 5 significant digits
    np.testing.assert_allclose(red[-12:], RED_TAIL, rtol=5e-5, atol=0)
    # printed as the file stores them: float32 of the printed decimal
    assert red[:13].tolist() == np.array(RED_HEAD, dtype=np.float32).tolist()
    assert red[-12:].tolist() == np.array(RED_TAIL, dtype=np.float32).tolist()
