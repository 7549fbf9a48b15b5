"""Worked examples for the explainer pages, every number computed by :func:`attention_steps`.

The explainer pages call these functions and draw what they return; the tests check the
results against the numbers the seed documents print. Nothing here reads the seed files:
their data are copied below as literals, or regenerated from the seeds' own random seeds.

* seed 001 — self-attention step by step in PyTorch: six tokens "Your journey starts with one
  step" with 3-d inputs; scores, naive vs stable softmax, context vectors; trainable
  ``W_query``, ``W_key``, ``W_value`` from ``torch.manual_seed(123)``; ``SelfAttentionV1``
  (``nn.Parameter(torch.rand(…))``) vs ``SelfAttentionV2`` (``nn.Linear``, seed 789).
* seed 000 — "Attention from scratch in Julia": the norm of a d-dim vector grows as √d
  (‖(2, 2)‖ = 2√2, ‖(2, 2, 2)‖ = 2√3), so scores are divided by √d_k. Seed 001 adds the
  gradient argument: large scores saturate the softmax and its gradient vanishes.
* seed 002 — cross-attention in NumPy/SciPy with one-hot words of a 10-word vocabulary, an
  input sentence of 8 and an output sentence of 13 words, ``np.random.seed(57)`` and
  ``random.seed(57)``.
* seed 004 — "TL;DR on attention": the shapes of cross-attention (d_x = 10, d_z = 13,
  attention dim 15, output dim 25, a context of n = 7) and bi- / uni-directional masks.

Legend: T query tokens, S key/value tokens, D input dim, Dk query/key dim, Dv value dim.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor, nn

from attention_core.attention import AttentionSteps, attention_steps, causal_mask, padding_mask
from attention_core.embeddings import Embeddings
from attention_core.encoding import read_sentence
from attention_core.errors import InputError

# --- seed 001: "Your journey starts with one step" -------------------------------------------

JOURNEY_TOKENS: tuple[str, ...] = ("Your", "journey", "starts", "with", "one", "step")
JOURNEY_INPUTS: tuple[tuple[float, float, float], ...] = (
    (0.43, 0.15, 0.89),  # Your (x^1)
    (0.55, 0.87, 0.66),  # journey (x^2)
    (0.57, 0.85, 0.64),  # starts (x^3)
    (0.22, 0.58, 0.33),  # with (x^4)
    (0.77, 0.25, 0.10),  # one (x^5)
    (0.05, 0.80, 0.55),  # step (x^6)
)
TRAINABLE_SEED = 123  # torch.manual_seed(123), then W_query, W_key, W_value = torch.rand(3, 2) in order
V2_SEED = 789  # torch.manual_seed(789); SelfAttentionV2(3, 2)


def journey_inputs() -> Tensor:
    """The seed's six 3-d input vectors, float32 as in the post.

    Shape:
        (6, 3): one row per token of :data:`JOURNEY_TOKENS`.
    """
    return torch.tensor(JOURNEY_INPUTS)


def effective_scale(d_k: int, *, scaled: bool, temperature: float = 1.0) -> float:
    """The factor the scores are multiplied by before the softmax: (1/√d_k if ``scaled`` else 1) / T.

    A temperature T > 1 flattens the weights, T < 1 sharpens them.
    """
    if not temperature > 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    return (1.0 / math.sqrt(d_k) if scaled else 1.0) / temperature


def simple_self_attention(inputs: Tensor, *, scaled: bool = False, temperature: float = 1.0) -> AttentionSteps:
    """Self-attention without trainable weights: q = k = v = the inputs (the post's first part).

    The post does not scale here, so ``scaled=False`` and T = 1 reproduce its numbers.

    Shape:
        inputs: (T, D) → scores, weights (T, T), output (T, D).

    Example:
        >>> steps = simple_self_attention(journey_inputs())
        >>> [round(w, 4) for w in steps.weights[1].tolist()]
        [0.1385, 0.2379, 0.2333, 0.124, 0.1082, 0.1581]
    """
    scale = effective_scale(inputs.shape[-1], scaled=scaled, temperature=temperature)
    return attention_steps(inputs, inputs, inputs, scale=scale)


def normalize_by_sum(scores: Tensor, dim: int = -1) -> Tensor:
    """The post's first try: scores / their sum. Sums to 1, but can go negative or explode."""
    return scores / scores.sum(dim=dim, keepdim=True)


def softmax_naive(scores: Tensor, dim: int = -1) -> Tensor:
    """exp(x) / Σ exp(x), as the post writes it: exp overflows to inf for x > 88.7 in float32."""
    return torch.exp(scores) / torch.exp(scores).sum(dim=dim, keepdim=True)


def softmax_stable(scores: Tensor, dim: int = -1) -> Tensor:
    """exp(x − max x) / Σ exp(x − max x): the same function, but every exp is at most 1.

    Subtracting the row's maximum changes nothing mathematically (it cancels in the ratio), so
    this equals ``torch.softmax``, which does the same internally.
    """
    shifted = scores - scores.amax(dim=dim, keepdim=True)
    return torch.exp(shifted) / torch.exp(shifted).sum(dim=dim, keepdim=True)


class Normalizations(NamedTuple):
    """Three ways to turn scores into weights that sum to 1 (each of the scores' shape)."""

    by_sum: Tensor
    naive_softmax: Tensor
    stable_softmax: Tensor


def normalizations(scores: Tensor, dim: int = -1) -> Normalizations:
    """Scores / sum, naive softmax and stable softmax side by side.

    Shape:
        scores: (…, S) → three tensors (…, S).

    Example:
        >>> big = torch.tensor([0.9544, 1.4950, 1.4754]) * 100  # journey's first scores × 100
        >>> normalizations(big).naive_softmax  # exp(95.44) is already inf in float32: inf / inf
        tensor([nan, nan, nan])
    """
    return Normalizations(normalize_by_sum(scores, dim), softmax_naive(scores, dim), softmax_stable(scores, dim))


def post_projections(d_in: int = 3, d_out: int = 2, *, seed: int = TRAINABLE_SEED) -> tuple[Tensor, Tensor, Tensor]:
    """``W_query``, ``W_key``, ``W_value`` drawn as the post does: ``torch.manual_seed(seed)``, then
    ``torch.rand(d_in, d_out)`` three times. The global random state is left as it was.

    Shape:
        three (d_in, d_out) tensors.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return torch.rand(d_in, d_out), torch.rand(d_in, d_out), torch.rand(d_in, d_out)


@dataclass(frozen=True)
class TrainableSelfAttention:
    """Self-attention with projection matrices: every intermediate of the post's second part.

    Attributes (T tokens, D input dim, Dk = Dv = d_out):
        w_query, w_key, w_value: (D, Dk) projection matrices.
        queries, keys, values: (T, Dk) = inputs @ W.
        steps: :class:`AttentionSteps` of ``attention_steps(queries, keys, values)``.
        scale: the factor the scores were multiplied by.
    """

    w_query: Tensor
    w_key: Tensor
    w_value: Tensor
    queries: Tensor
    keys: Tensor
    values: Tensor
    steps: AttentionSteps
    scale: float


def trainable_self_attention(
    inputs: Tensor, *, d_out: int = 2, seed: int = TRAINABLE_SEED, scaled: bool = True, temperature: float = 1.0
) -> TrainableSelfAttention:
    """Project the inputs to queries, keys and values, then attend (the post scales by 1/√d_k).

    Shape:
        inputs: (T, D) → queries, keys, values (T, d_out), weights (T, T), output (T, d_out).

    Example:
        >>> sa = trainable_self_attention(journey_inputs())
        >>> [round(z, 4) for z in sa.steps.output[1].tolist()]  # context_vec_2
        [0.3061, 0.821]
    """
    w_query, w_key, w_value = post_projections(inputs.shape[-1], d_out, seed=seed)
    queries, keys, values = inputs @ w_query, inputs @ w_key, inputs @ w_value  # (T, Dk) each
    scale = effective_scale(d_out, scaled=scaled, temperature=temperature)
    steps = attention_steps(queries, keys, values, scale=scale)
    return TrainableSelfAttention(w_query, w_key, w_value, queries, keys, values, steps, scale)


class SelfAttentionV1(nn.Module):
    """The post's ``SelfAttentionV1``: weights ``nn.Parameter(torch.rand(d_in, d_out))``, uniform on [0, 1).

    Shape:
        x: (T, d_in) → (T, d_out).
    """

    def __init__(self, d_in: int, d_out: int) -> None:
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x: Tensor) -> Tensor:
        queries, keys, values = x @ self.W_query, x @ self.W_key, x @ self.W_value  # (T, d_out)
        return attention_steps(queries, keys, values).output  # softmax(QKᵀ/√d_k) V


class SelfAttentionV2(nn.Module):
    """The post's ``SelfAttentionV2``: ``nn.Linear(d_in, d_out, bias=False)`` projections.

    ``nn.Linear`` stores its weight as (d_out, d_in) and draws it from U(−1/√d_in, 1/√d_in).

    Shape:
        x: (T, d_in) → (T, d_out).
    """

    def __init__(self, d_in: int, d_out: int, qkv_bias: bool = False) -> None:
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x: Tensor) -> Tensor:
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)  # (T, d_out)
        return attention_steps(queries, keys, values).output


def seeded_module(cls: type[nn.Module], *args: int, seed: int) -> nn.Module:
    """``torch.manual_seed(seed); cls(*args)`` without touching the global random state."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return cls(*args)


class V1V2(NamedTuple):
    """The two classes' outputs on the same inputs, and their query weights as (d_in, d_out)."""

    v1_output: Tensor  # (T, d_out)
    v2_output: Tensor  # (T, d_out)
    v1_w_query: Tensor  # (d_in, d_out)
    v2_w_query: Tensor  # (d_in, d_out), nn.Linear's weight transposed


def compare_v1_v2(inputs: Tensor, d_out: int = 2) -> V1V2:
    """Run ``SelfAttentionV1`` (seed 123) and ``SelfAttentionV2`` (seed 789) as the post does.

    Shape:
        inputs: (T, d_in) → outputs (T, d_out).
    """
    d_in = inputs.shape[-1]
    v1 = seeded_module(SelfAttentionV1, d_in, d_out, seed=TRAINABLE_SEED)
    v2 = seeded_module(SelfAttentionV2, d_in, d_out, seed=V2_SEED)
    with torch.no_grad():
        return V1V2(v1(inputs), v2(inputs), v1.W_query.detach().clone(), v2.W_query.weight.detach().T.clone())


def init_spread(widths: Sequence[int] = (3, 64, 768), *, d_out: int = 64, n_tokens: int = 16, seed: int = 0) -> list[dict]:
    """How each initialisation behaves as the input width grows: one row per (width, init).

    Inputs are N(0, 1), shape (n_tokens, width). For each init the queries' spread, the scaled
    scores' spread and the mean largest attention weight (1/n_tokens = uniform, 1 = one-hot).
    """
    gen = torch.Generator().manual_seed(seed)
    rows = []
    for width in widths:
        x = torch.randn(n_tokens, width, generator=gen)
        for name, cls in (("torch.rand (V1)", SelfAttentionV1), ("nn.Linear (V2)", SelfAttentionV2)):
            module = seeded_module(cls, width, d_out, seed=seed)
            with torch.no_grad():
                if isinstance(module, SelfAttentionV1):
                    q, k, v = x @ module.W_query, x @ module.W_key, x @ module.W_value
                else:
                    q, k, v = module.W_query(x), module.W_key(x), module.W_value(x)
                steps = attention_steps(q, k, v)
            rows.append({
                "input width": width, "initialisation": name, "std of queries": q.std().item(),
                "std of scaled scores": steps.scaled.std().item(),
                "largest weight per row (mean)": steps.weights.amax(-1).mean().item(),
            })  # fmt: skip
    return rows


# --- why divide by √d_k (seeds 000 and 001) ---------------------------------------------------

SQRT_DK_DIMS: tuple[int, ...] = tuple(sorted({round(2 ** (k / 2)) for k in range(2, 21)}))  # 2 … 1024, log-spaced


def norm_of_constant(value: float = 2.0, dims: Sequence[int] = (2, 3)) -> list[tuple[int, float, float]]:
    """Seed 000's argument: ‖(v, …, v)‖ in d dims is v√d. Returns (d, the norm torch computes, v·√d)."""
    return [(d, torch.linalg.vector_norm(torch.full((d,), value, dtype=torch.float64)).item(), value * math.sqrt(d)) for d in dims]


def softmax_jacobian(weights: Tensor) -> Tensor:
    """∂softmax(s)/∂s = diag(p) − p pᵀ for p = softmax(s).

    Shape:
        weights: (…, S) → (…, S, S).
    """
    return torch.diag_embed(weights) - weights.unsqueeze(-1) * weights.unsqueeze(-2)


@dataclass(frozen=True)
class SqrtDkCurves:
    """Statistics of random attention rows over the dimension d, unscaled vs scaled by 1/√d.

    Attributes (each array has one value per entry of ``dims``):
        dot_std_*: standard deviation of the softmax inputs (q·k, or q·k/√d).
        entropy_*: mean entropy of the weights in nats (ln n_keys = uniform, 0 = one-hot).
        grad_norm_*: mean Frobenius norm of the softmax Jacobian at its input.
    """

    dims: np.ndarray
    n_keys: int
    n_samples: int
    dot_std_unscaled: np.ndarray
    dot_std_scaled: np.ndarray
    entropy_unscaled: np.ndarray
    entropy_scaled: np.ndarray
    grad_norm_unscaled: np.ndarray
    grad_norm_scaled: np.ndarray


def random_rows(d: int, *, n_samples: int, n_keys: int, seed: int) -> tuple[Tensor, Tensor]:
    """q and k with N(0, 1) entries (float64), the same for a given (d, n_samples, n_keys, seed).

    Shape:
        q (n_samples, 1, d), k (n_samples, n_keys, d).
    """
    gen = torch.Generator().manual_seed(seed * 100_003 + d)
    q = torch.randn(n_samples, 1, d, generator=gen, dtype=torch.float64)
    k = torch.randn(n_samples, n_keys, d, generator=gen, dtype=torch.float64)
    return q, k


def sqrt_dk_curves(
    dims: Sequence[int] = SQRT_DK_DIMS, *, n_samples: int = 200, n_keys: int = 16, seed: int = 0
) -> SqrtDkCurves:
    """Why scale: for each d, ``n_samples`` random queries against ``n_keys`` random keys.

    q·k of N(0, 1) vectors has variance d, so without scaling the softmax inputs spread as √d,
    the weights approach one-hot (entropy → 0) and the softmax Jacobian (its gradient) → 0.
    Divided by √d the spread stays 1 whatever d is.

    Shape:
        each curve (len(dims),).
    """
    stats: dict[str, list[float]] = {}
    for d in dims:
        q, k = random_rows(d, n_samples=n_samples, n_keys=n_keys, seed=seed)
        for name, scale in (("unscaled", 1.0), ("scaled", None)):
            steps = attention_steps(q, k, k, scale=scale)  # weights (n_samples, 1, n_keys)
            p = steps.weights[:, 0]
            stats.setdefault(f"dot_std_{name}", []).append(steps.scaled.std().item())
            stats.setdefault(f"entropy_{name}", []).append(torch.special.entr(p).sum(-1).mean().item())
            stats.setdefault(f"grad_norm_{name}", []).append(torch.linalg.matrix_norm(softmax_jacobian(p)).mean().item())
    return SqrtDkCurves(np.asarray(dims), n_keys, n_samples, **{key: np.asarray(v) for key, v in stats.items()})


def softmax_at_dim(d: int, *, n_keys: int = 16, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """One random query's weights over ``n_keys`` random keys at dimension d: (unscaled, scaled by 1/√d).

    Shape:
        two (n_keys,) arrays.
    """
    q, k = random_rows(d, n_samples=1, n_keys=n_keys, seed=seed)
    unscaled = attention_steps(q, k, k, scale=1.0).weights[0, 0]
    scaled = attention_steps(q, k, k).weights[0, 0]
    return unscaled.numpy(), scaled.numpy()


# --- seed 002: cross-attention with one-hot words, NumPy seed 57 ------------------------------

SEED57 = 57
VOCABULARY_SIZE, INPUT_SENTENCE_LENGTH, OUTPUT_SENTENCE_LENGTH = 10, 8, 13


class ShapeStep(NamedTuple):
    """One row of a shape trace: what was computed, how, and the shape that came out."""

    step: str
    formula: str
    shape: tuple[int, ...]


def one_hot(index: int, size: int = VOCABULARY_SIZE) -> np.ndarray:
    """The notebook's ``encode_one_hot``: a vector of ``size`` zeros with a 1 at ``index``."""
    if not 0 <= index < size:
        raise ValueError(f"index {index} is outside a vocabulary of {size}")
    return np.array([1 if i == index else 0 for i in range(size)])


@dataclass(frozen=True)
class OneHotCrossAttention:
    """Seed 002's data and its attention (float64, as NumPy computes).

    Attributes:
        weights_query, weights_key, weights_value: (V, V) uniform [0, 1) matrices, V = 10.
        word_index: the single word the notebook draws first (0).
        input_word_indices (8), output_word_indices (13): random words of the two sentences.
        input_sentence (8, V), output_sentence (13, V): their one-hot rows.
        query (13, V) from the output sentence; key, value (8, V) from the input sentence.
        steps: ``attention_steps(query, key, value)``; scale 1/√10; output (13, V).
    """

    weights_query: np.ndarray
    weights_key: np.ndarray
    weights_value: np.ndarray
    word_index: int
    input_word_indices: list[int]
    output_word_indices: list[int]
    input_sentence: np.ndarray
    output_sentence: np.ndarray
    query: Tensor
    key: Tensor
    value: Tensor
    steps: AttentionSteps

    def shapes(self) -> list[ShapeStep]:
        """The shape of every step, read off the actual arrays."""
        s = self.steps
        return [
            ShapeStep("output sentence (one-hot)", "X_out", self.output_sentence.shape),
            ShapeStep("input sentence (one-hot)", "X_in", self.input_sentence.shape),
            ShapeStep("query weights", "W_Q", self.weights_query.shape),
            ShapeStep("queries", "Q = X_out · W_Q", tuple(self.query.shape)),
            ShapeStep("keys", "K = X_in · W_K", tuple(self.key.shape)),
            ShapeStep("values", "V = X_in · W_V", tuple(self.value.shape)),
            ShapeStep("scores (the attention matrix)", "Q · Kᵀ", tuple(s.scores.shape)),
            ShapeStep("weights", "softmax(Q · Kᵀ / √10) over each row", tuple(s.weights.shape)),
            ShapeStep("result", "weights · V", tuple(s.output.shape)),
        ]


def one_hot_cross_attention(seed: int = SEED57) -> OneHotCrossAttention:
    """Regenerate seed 002's example exactly, with private generators (no global state changes).

    The notebook calls ``np.random.seed(57); random.seed(57)``, draws the three weight matrices
    with ``np.random.rand(10, 10)``, one word with ``random.randint(0, 9)``, then 8 input and 13
    output word indices with ``random.randint(0, 9)``; ``RandomState(57)`` and ``Random(57)``
    produce the same streams.

    Shape:
        query (13, 10), key and value (8, 10); scores and weights (13, 8); output (13, 10).
    """
    np_rng, py_rng = np.random.RandomState(seed), random.Random(seed)
    weights_query = np_rng.rand(VOCABULARY_SIZE, VOCABULARY_SIZE)
    weights_key = np_rng.rand(VOCABULARY_SIZE, VOCABULARY_SIZE)
    weights_value = np_rng.rand(VOCABULARY_SIZE, VOCABULARY_SIZE)
    word_index = py_rng.randint(0, VOCABULARY_SIZE - 1)
    input_word_indices = [py_rng.randint(0, VOCABULARY_SIZE - 1) for _ in range(INPUT_SENTENCE_LENGTH)]
    output_word_indices = [py_rng.randint(0, VOCABULARY_SIZE - 1) for _ in range(OUTPUT_SENTENCE_LENGTH)]
    input_sentence = np.array([one_hot(i) for i in input_word_indices])  # (8, V)
    output_sentence = np.array([one_hot(i) for i in output_word_indices])  # (13, V)
    query = torch.from_numpy(output_sentence @ weights_query)  # (13, V) float64
    key = torch.from_numpy(input_sentence @ weights_key)  # (8, V)
    value = torch.from_numpy(input_sentence @ weights_value)  # (8, V)
    steps = attention_steps(query, key, value)  # scale 1/√V
    return OneHotCrossAttention(weights_query, weights_key, weights_value, word_index, input_word_indices,
                                output_word_indices, input_sentence, output_sentence, query, key, value, steps)


# --- seed 004: the shapes of cross-attention ---------------------------------------------------


@dataclass(frozen=True)
class CrossAttentionShapes:
    """Seed 004's cross-attention with real tensors (rows are tokens; the post stores columns).

    Attributes:
        x (l, d_x): the sequence to contextualise; z (n, d_z): the context.
        w_q (d_x, d_attn), w_k (d_z, d_attn), w_v (d_z, d_out): the projections, as x @ W.
        q (l, d_attn), k (n, d_attn), v (n, d_out) and steps (weights (l, n), output (l, d_out)).
    """

    x: Tensor
    z: Tensor
    w_q: Tensor
    w_k: Tensor
    w_v: Tensor
    q: Tensor
    k: Tensor
    v: Tensor
    steps: AttentionSteps

    def shapes(self) -> list[ShapeStep]:
        """The shape of every step, read off the actual tensors."""
        d_attn = self.q.shape[-1]
        return [
            ShapeStep("input X", "X", tuple(self.x.shape)),
            ShapeStep("context Z", "Z", tuple(self.z.shape)),
            ShapeStep("query projection", "W_Q", tuple(self.w_q.shape)),
            ShapeStep("key projection", "W_K", tuple(self.w_k.shape)),
            ShapeStep("value projection", "W_V", tuple(self.w_v.shape)),
            ShapeStep("queries", "Q = X W_Q (+ b)", tuple(self.q.shape)),
            ShapeStep("keys", "K = Z W_K (+ b)", tuple(self.k.shape)),
            ShapeStep("values", "V = Z W_V (+ b)", tuple(self.v.shape)),
            ShapeStep("scores", "Q Kᵀ", tuple(self.steps.scores.shape)),
            ShapeStep("weights", f"softmax(Q Kᵀ / √{d_attn}) over the keys", tuple(self.steps.weights.shape)),
            ShapeStep("contextual X", "weights · V", tuple(self.steps.output.shape)),
        ]


def cross_attention_shapes(
    l: int = 1, *, n: int = 7, d_x: int = 10, d_z: int = 13, d_attn: int = 15, d_out: int = 25, seed: int = 0
) -> CrossAttentionShapes:
    """Seed 004's ``Attention(inp_embd_size=10, context_embd_size=13, attn_embd_size=15, out_embd_size=25)``.

    Three ``nn.Linear`` layers (with bias, as in the post) and :func:`attention_steps`; X and Z
    are ``torch.rand`` like the post's. The post's softmax runs over ``dim=0`` (the queries);
    here it runs over the keys, so each query's weights sum to 1.

    Shape:
        x (l, d_x), z (n, d_z) → q (l, d_attn), k (n, d_attn), v (n, d_out), weights (l, n), output (l, d_out).
    """
    if l < 1 or n < 1:
        raise ValueError(f"sequence lengths must be at least 1, got l={l}, n={n}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        w_q, w_k, w_v = nn.Linear(d_x, d_attn), nn.Linear(d_z, d_attn), nn.Linear(d_z, d_out)
        x, z = torch.rand(l, d_x), torch.rand(n, d_z)
    with torch.no_grad():
        q, k, v = w_q(x), w_k(z), w_v(z)  # (l, d_attn), (n, d_attn), (n, d_out)
        steps = attention_steps(q, k, v)  # scale 1/√d_attn
    return CrossAttentionShapes(x, z, w_q.weight.detach().T, w_k.weight.detach().T, w_v.weight.detach().T, q, k, v, steps)


# --- a learner's sentences: GloVe vectors as queries, keys and values --------------------------

PAD = "<pad>"
MASKS: tuple[str, ...] = ("none", "padding", "causal", "padding + causal")


@dataclass(frozen=True)
class SentenceVectors:
    """A sentence's tokens and the GloVe vectors of the known ones.

    Attributes:
        tokens: every token of the sentence; known: those with a vector (in order);
        unknown: those without; vectors (len(known), dim) float32.
    """

    tokens: list[str]
    known: list[str]
    unknown: list[str]
    vectors: Tensor


def sentence_vectors(text: str, embeddings: Embeddings, *, what: str = "the sentence") -> SentenceVectors:
    """Tokenize ``text`` and look its tokens up; unknown tokens are dropped and reported.

    Raises:
        EmbeddingError: when the text is empty or no token is known.

    Shape:
        vectors (number of known tokens, embeddings.dim).
    """
    words = read_sentence(text, embeddings, what=what)
    known = words.known_tokens
    return SentenceVectors(list(words.tokens), known, words.unknown_tokens, torch.from_numpy(embeddings.vectors(known)))


def attention_mask(kind: str, t: int, s: int, n_real: int) -> Tensor:
    """The boolean mask (True = may attend) for ``kind`` in :data:`MASKS`.

    ``padding`` hides the keys from ``n_real`` on (the pads); ``causal`` lets query i see keys
    0…i (seed 004's "uni-directional"); ``none`` allows everything.

    Shape:
        (t, s).
    """
    if kind not in MASKS:
        raise InputError(f"unknown mask {kind!r}", f"use one of {', '.join(MASKS)}")
    mask = torch.ones(t, s, dtype=torch.bool)
    if "padding" in kind:
        mask &= padding_mask(torch.tensor([n_real]), s)[0, 0]  # (1, s) broadcasts over the queries
    if "causal" in kind:
        mask &= causal_mask(t, s)
    return mask


@dataclass(frozen=True)
class MaskedAttention:
    """Attention of one sentence's tokens over another's (or its own), with a mask.

    Attributes:
        query_tokens (T), key_tokens (S, pads last); mask (T, S) bool, True = may attend;
        steps: ``attention_steps(q, k, v, mask=mask)``, scale 1/√dim.
    """

    query_tokens: list[str]
    key_tokens: list[str]
    mask: Tensor
    steps: AttentionSteps

    @property
    def row_sums(self) -> Tensor:
        """Σ_j weights[i, j] per query: 1, or 0 for a fully masked row. Shape (T,)."""
        return self.steps.weights.sum(-1)

    @property
    def n_masked(self) -> int:
        return int((~self.mask).sum())

    @property
    def n_masked_exactly_zero(self) -> int:
        """How many masked entries have a weight of exactly 0.0 (should be all of them)."""
        return int((self.steps.weights[~self.mask] == 0.0).sum())

    @property
    def pad_weight(self) -> Tensor:
        """The weight each query gives the padding keys. Shape (T,)."""
        is_pad = torch.tensor([t == PAD for t in self.key_tokens])
        return self.steps.weights[:, is_pad].sum(-1)


def glove_attention(queries: SentenceVectors, context: SentenceVectors, *, n_pad: int = 0, mask: str = "none") -> MaskedAttention:
    """Cross-attention with raw GloVe vectors: q = the query sentence's vectors, k = v = the context's.

    The context is padded with ``n_pad`` zero vectors (``<pad>``), as in a batch where it is
    shorter than the longest context; ``mask`` chooses which keys each query may see.
    Pass the same sentence twice for self-attention.

    Shape:
        queries.vectors (T, D), context.vectors (S, D) → weights (T, S + n_pad), output (T, D).
    """
    if n_pad < 0:
        raise ValueError(f"n_pad must be non-negative, got {n_pad}")
    k = torch.cat([context.vectors, torch.zeros(n_pad, context.vectors.shape[-1])])  # (S + n_pad, D)
    t, s = queries.vectors.shape[0], k.shape[0]
    m = attention_mask(mask, t, s, n_real=context.vectors.shape[0])
    steps = attention_steps(queries.vectors, k, k, mask=m)  # scale 1/√D
    return MaskedAttention(list(queries.known), list(context.known) + [PAD] * n_pad, m, steps)


class FullyMaskedRow(NamedTuple):
    """One query row with every key masked, through :func:`attention_steps` and through a plain softmax."""

    mask: Tensor  # (T, S)
    weights: Tensor  # (T, S): the masked row is all 0.0
    output: Tensor  # (T, Dv): the masked row is 0
    plain_softmax: Tensor  # (T, S): softmax of the −∞-filled scores; the masked row is NaN


def fully_masked_row() -> FullyMaskedRow:
    """The first three journey tokens attending to each other, with the last query's keys all masked.

    Shape:
        mask, weights, plain_softmax (3, 3); output (3, 3).
    """
    x = journey_inputs()[:3]  # (3, 3)
    mask = torch.ones(3, 3, dtype=torch.bool)
    mask[2] = False
    steps = attention_steps(x, x, x, mask=mask)
    return FullyMaskedRow(mask, steps.weights, steps.output, torch.softmax(steps.masked, dim=-1))
