"""The seed post's training loop in NumPy with its Python inner loops vectorised (a fairness control).

:mod:`benchmarks.seed_numpy` follows the Julia code line by line, including three loops that
Julia compiles but Python interprets: the row-wise softmax in ``AttentionWeights``, the
double loop that fills the softmax Jacobian in ``backprop``, and the word-by-word ``hcat``.
This module computes exactly the same numbers (same quirks: the Jacobian of α's first column
applied to every row, scores divided by √length(q), W and b frozen) with those loops written
as array operations, so the ``seed_vs_numpy`` benchmark can show how much of the speed-up
over NumPy comes from interpreter overhead in those loops and how much from the per-step
cost of many small NumPy calls. ``benchmarks/run.py`` checks that both give the same losses.
"""

from __future__ import annotations

import numpy as np

from benchmarks.seed_numpy import cross_entropy, linear, softmax

Params = tuple[np.ndarray, ...]  # Q, Qb, K, Kb, V, Vb, W, b


def forwardprop(x_em: np.ndarray, params: Params) -> tuple[np.ndarray, ...]:
    """The post's ``forwardprop`` with the row-wise softmax done for all rows at once."""
    Q, Qb, K, Kb, V, Vb, W, b = params
    x = np.vstack([x_em, np.arange(x_em.shape[1])[None, :]])
    q, k, v = linear(x, Q, Qb), linear(x, K, Kb), linear(x, V, Vb)
    e = q.T @ k / np.sqrt(q.size)  # √length(q) = √(d·n), as the post
    e = np.exp(e - e.max(axis=1, keepdims=True))
    alpha = e / e.sum(axis=1, keepdims=True)
    z = v @ alpha.T
    f = linear(z, W, b)
    p = softmax(np.sum(f, axis=1, keepdims=True) / f.shape[1])
    return x, q, k, v, alpha, z, p


def backprop(x: np.ndarray, y: np.ndarray, params: Params, q, k, v, alpha, z, p, lr: float = 0.001) -> Params:
    """The post's ``backprop``; its Jacobian double loop is ``diag(a) − a aᵀ`` with a = α[:, 1]."""
    Q, Qb, K, Kb, V, Vb, W, b = params
    n = z.shape[1]
    dL_dz = np.repeat(W.T @ (p - y) / n, n, axis=1)  # (∂L/∂f' W)' with ∂L/∂f = (p − y) ones(1, n) / n
    first = alpha[:, 0]
    dL_de = (dL_dz.T @ v) @ (np.diag(first) - np.outer(first, first))
    dL_dq, dL_dk, dL_dv = dL_de @ k.T, dL_de.T @ q.T, dL_dz @ alpha
    return (
        Q - lr * (dL_dq.T @ x.T), Qb - lr * dL_dq.sum(axis=0)[:, None],
        K - lr * (dL_dk.T @ x.T), Kb - lr * dL_dk.sum(axis=0)[:, None],
        V - lr * (dL_dv @ x.T), Vb - lr * dL_dv.sum(axis=1, keepdims=True),
        W, b,  # not updated: the post comments these updates out
    )


def train_seed_numpy_vectorized(rows: list[tuple[str, str]], vectors: dict[str, np.ndarray], epochs: int = 1000,
                                seed: int = 12) -> list[float]:
    """Same interface, initialisation and result as :func:`benchmarks.seed_numpy.train_seed_numpy`."""
    rng = np.random.default_rng(seed)
    Q = rng.standard_normal((51, 51)) / 100
    K = rng.standard_normal((51, 51)) / 100
    params: Params = (Q, np.zeros((51, 1)), K, np.zeros((51, 1)), K.copy(), np.zeros((51, 1)),
                      rng.standard_normal((3, 51)) / 100, np.zeros((3, 1)))
    sent = {"positive": np.array([[0], [0], [1]]), "negative": np.array([[1], [0], [0]]),
            "neutral": np.array([[0], [1], [0]])}
    losses = []
    for _ in range(epochs):
        total = 0.0
        for label, sentence in rows:  # re-tokenized every epoch, as the post does
            words = [w for w in sentence.split(" ") if w in vectors]
            if not words:
                continue
            x, q, k, v, alpha, z, p = forwardprop(np.column_stack([vectors[w] for w in words]), params)
            total += cross_entropy(p, sent[label])
            params = backprop(x, sent[label], params, q, k, v, alpha, z, p)
        losses.append(total / len(rows))
    return losses
