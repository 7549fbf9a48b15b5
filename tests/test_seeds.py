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


def assert_printed(actual: Tensor | np.ndarray, printed: list, decimals: int) -> None:
    """``actual`` rounds to ``printed`` (given with ``decimals`` decimals): |a − p| ≤ half a unit."""
    a = np.asarray(actual.detach() if isinstance(actual, Tensor) else actual, dtype=np.float64)
    p = np.asarray(printed, dtype=np.float64)
    assert a.shape == p.shape, (a.shape, p.shape)
    # half a unit in the last printed place, plus a hair (1% of a unit) for float32 round-off
    np.testing.assert_allclose(a, p, rtol=0, atol=0.51 * 10.0**-decimals)


def floats(printed: str) -> list[float]:
    """The numbers of a NumPy printout (brackets, commas and ``array(`` ignored)."""
    for junk in ("array(", ")", "[", "]", ","):
        printed = printed.replace(junk, " ")
    return [float(x) for x in printed.split()]


# --- seed 001: self-attention in PyTorch, 4 printed decimals ----------------------------------

INPUTS = [
    [0.43, 0.15, 0.89],  # Your (x^1)
    [0.55, 0.87, 0.66],  # journey (x^2)
    [0.57, 0.85, 0.64],  # starts (x^3)
    [0.22, 0.58, 0.33],  # with (x^4)
    [0.77, 0.25, 0.10],  # one (x^5)
    [0.05, 0.80, 0.55],  # step (x^6)
]
SCORES = [
    [0.9995, 0.9544, 0.9422, 0.4753, 0.4576, 0.6310],
    [0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865],
    [0.9422, 1.4754, 1.4570, 0.8296, 0.7154, 1.0605],
    [0.4753, 0.8434, 0.8296, 0.4937, 0.3474, 0.6565],
    [0.4576, 0.7070, 0.7154, 0.3474, 0.6654, 0.2935],
    [0.6310, 1.0865, 1.0605, 0.6565, 0.2935, 0.9450],
]
WEIGHTS = [
    [0.2098, 0.2006, 0.1981, 0.1242, 0.1220, 0.1452],
    [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581],
    [0.1390, 0.2369, 0.2326, 0.1242, 0.1108, 0.1565],
    [0.1435, 0.2074, 0.2046, 0.1462, 0.1263, 0.1720],
    [0.1526, 0.1958, 0.1975, 0.1367, 0.1879, 0.1295],
    [0.1385, 0.2184, 0.2128, 0.1420, 0.0988, 0.1896],
]
CONTEXT = [
    [0.4421, 0.5931, 0.5790],
    [0.4419, 0.6515, 0.5683],
    [0.4431, 0.6496, 0.5671],
    [0.4304, 0.6298, 0.5510],
    [0.4671, 0.5910, 0.5266],
    [0.4177, 0.6503, 0.5645],
]
W_QUERY = [[0.2961, 0.5166], [0.2517, 0.6886], [0.0740, 0.8665]]
W_KEY = [[0.1366, 0.1025], [0.1841, 0.7264], [0.3153, 0.6871]]
W_VALUE = [[0.0756, 0.1966], [0.3164, 0.4017], [0.1186, 0.8274]]
KEYS_T = [[0.3669, 0.4433, 0.4361, 0.2408, 0.1827, 0.3275], [0.7646, 1.1419, 1.1156, 0.6706, 0.3292, 0.9642]]
VALUES = [[0.1855, 0.8812], [0.3951, 1.0037], [0.3879, 0.9831], [0.2393, 0.5493], [0.1492, 0.3346], [0.3221, 0.7863]]
SA_V1 = [[0.2996, 0.8053], [0.3061, 0.8210], [0.3058, 0.8203], [0.2948, 0.7939], [0.2927, 0.7891], [0.2990, 0.8040]]
SA_V2 = [
    [-0.0739, 0.0713],
    [-0.0748, 0.0703],
    [-0.0749, 0.0702],
    [-0.0760, 0.0685],
    [-0.0763, 0.0679],
    [-0.0754, 0.0693],
]


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


QUERY_WORD_0 = floats("""[0.08734964 0.2304771  0.41106107 0.3107827  0.56595589 0.5450637
 0.80709944 0.91815511 0.52209075 0.42468726]""")
KEY_WORD_0 = floats("""[0.81658165 0.148125   0.67386362 0.58028501 0.36955779 0.13700037
 0.85846563 0.2778117  0.42564585 0.73402552]""")
VALUE_WORD_0 = floats("""[0.23969168 0.0359505  0.16488377 0.31457254 0.0861606  0.59318729
 0.81810828 0.48468141 0.50546712 0.85403457]""")
# print(queries): the first 7 arrays are printed in full, the 8th is cut after "0.65"
QUERIES = floats("""[array([0.78670726, 0.66402411, 0.85267895, 0.54438794, 0.19747141,
       0.53870933, 0.50728999, 0.27735705, 0.66848423, 0.73135733]),
 array([0.28606284, 0.66473538, 0.13456831, 0.49466284, 0.64674894,
       0.9380451 , 0.99752772, 0.80880475, 0.45548152, 0.69100327]),
 array([0.28606284, 0.66473538, 0.13456831, 0.49466284, 0.64674894,
       0.9380451 , 0.99752772, 0.80880475, 0.45548152, 0.69100327]),
 array([0.08734964, 0.2304771 , 0.41106107, 0.3107827 , 0.56595589,
       0.5450637 , 0.80709944, 0.91815511, 0.52209075, 0.42468726]),
 array([0.87459418, 0.05216006, 0.99227957, 0.10514732, 0.40198985,
       0.07183655, 0.01919304, 0.72131415, 0.04146587, 0.01865054]),
 array([0.92833745, 0.30861285, 0.6790608 , 0.25945866, 0.12325794,
       0.19677946, 0.85349077, 0.30611078, 0.55043178, 0.95944013]),
 array([0.88585633, 0.4517676 , 0.16935395, 0.29627212, 0.53955157,
       0.76114919, 0.88933263, 0.56779742, 0.47443796, 0.7638936 ]),
 array([0.692714  , 0.59926426, 0.19623779""")
INPUT_SENTENCE = [
    [0, 0, 0, 0, 0, 1, 0, 0, 0, 0],
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
    [1, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    [0, 0, 0, 1, 0, 0, 0, 0, 0, 0],
    [0, 0, 0, 0, 0, 0, 0, 0, 1, 0],
    [0, 0, 0, 0, 0, 1, 0, 0, 0, 0],
    [0, 0, 0, 0, 0, 0, 0, 1, 0, 0],
]
SCORES_WORD_0 = [3.17075356, 2.48115636, 2.48115636, 3.11195578, 2.46003028, 2.65454707, 3.17075356, 1.81791341]
WEIGHTS_WORD_0 = [0.14514296, 0.116705, 0.116705, 0.14246918, 0.11592794, 0.12328273, 0.14514296, 0.09462423]
# the 13x10 attention result: rows 0-6 printed in full; the document ends inside row 7
ATTENTION = floats("""array([[0.56776484, 0.42919222, 0.45483751, 0.37362664, 0.50926416,
        0.40020751, 0.47256763, 0.46993472, 0.55653554, 0.65328568],
       [0.59119164, 0.41192583, 0.44918864, 0.3674337 , 0.53332671,
        0.37570831, 0.45324228, 0.46866823, 0.55895598, 0.650062  ],
       [0.59119164, 0.41192583, 0.44918864, 0.3674337 , 0.53332671,
        0.37570831, 0.45324228, 0.46866823, 0.55895598, 0.650062  ],
       [0.58594759, 0.42341096, 0.44979032, 0.37344594, 0.52907394,
        0.38805452, 0.46133003, 0.46045688, 0.5500834 , 0.6474111 ],
       [0.57048592, 0.46361578, 0.47133947, 0.3942548 , 0.51886836,
        0.41615059, 0.46720532, 0.4508532 , 0.55223346, 0.64633045],
       [0.55568366, 0.44515894, 0.45747396, 0.37976891, 0.49510853,
        0.41690305, 0.48619281, 0.4672868 , 0.55054167, 0.65628816],
       [0.58326513, 0.43260528, 0.46212944, 0.37934952, 0.527155  ,
        0.38895479, 0.45412531, 0.46555113, 0.56467623, 0.65315166],
       [0.58453305, 0.43225917, 0.4609807""")  # the last number is cut: "0.4609807…"


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
