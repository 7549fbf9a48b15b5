"""A faithful NumPy re-implementation of the seed post's training loop (``000_…``, Julia).

Line by line the post's ``forwardprop``, ``backprop`` (hand-written gradients, including its
softmax Jacobian built from the first column of α, and scores divided by √length(q)),
``remove_nid`` and the per-epoch loop that re-tokenizes and ``hcat``s every sentence. It is
the baseline the ``seed`` preset is timed against in ``benchmarks/run.py``; nothing in the
app or the core imports it.
"""

from __future__ import annotations

import numpy as np


def softmax(x: np.ndarray) -> np.ndarray:
    x = x - np.max(x)
    return np.exp(x) / np.sum(np.exp(x))


def cross_entropy(p: np.ndarray, y: np.ndarray) -> float:
    return float(-np.sum(y * np.log(p)))


def linear(x, w, b):
    return w @ x + b


def attention_weights(q, k):
    e = q.T @ k / np.sqrt(q.size)  # the post: sqrt(length(q)) = sqrt(d·n)
    alpha = np.zeros(e.shape)
    for row in range(e.shape[0]):
        alpha[row, :] = softmax(e[row, :])
    return alpha


def forwardprop(x, Q, Qb, K, Kb, V, Vb, W, b):
    if x.ndim == 1:
        x = x.reshape(-1, 1)
    x = np.vstack([x, np.arange(x.shape[1])[None, :]])
    q, k, v = linear(x, Q, Qb), linear(x, K, Kb), linear(x, V, Vb)
    alpha = attention_weights(q, k)
    z = v @ alpha.T
    f = linear(z, W, b)
    p = np.sum(f, axis=1, keepdims=True) / f.shape[1]
    return x, q, k, v, alpha, z, softmax(p)


def backprop(x, y, Q, Qb, K, Kb, V, Vb, W, b, q, k, v, alpha, z, p, lr=0.001):
    dL_dp = p - y
    dp_df = 1.0 / z.shape[1] * np.ones((1, z.shape[1]))
    dL_df = dL_dp @ dp_df
    dL_dz = (dL_df.T @ W).T
    # The post's softmax Jacobian: Julia's α[j] (linear, column-major indexing) is α[j, 1],
    # so the Jacobian of the first column is built and applied to every row.
    first = alpha[:, 0]
    dalpha_de = np.zeros(alpha.shape)
    for kk in range(alpha.shape[0]):
        for j in range(alpha.shape[1]):
            dalpha_de[j, kk] = first[j] * (1 - first[j]) if j == kk else -first[kk] * first[j]
    dL_dalpha = dL_dz.T @ v
    dL_de = dL_dalpha @ dalpha_de
    dL_dq = dL_de @ k.T
    dL_dk = dL_de.T @ q.T
    dL_dv = dL_dz @ alpha
    dL_dQ, dL_dK, dL_dV = dL_dq.T @ x.T, dL_dk.T @ x.T, dL_dv @ x.T
    dL_dQb = np.sum(dL_dq.T, axis=1, keepdims=True)
    dL_dKb = np.sum(dL_dk.T, axis=1, keepdims=True)
    dL_dVb = np.sum(dL_dv, axis=1, keepdims=True)
    return (Q - lr * dL_dQ, Qb - lr * dL_dQb, K - lr * dL_dK, Kb - lr * dL_dKb,
            V - lr * dL_dV, Vb - lr * dL_dVb, W, b)  # W, b not updated: the post comments them out


def train_seed_numpy(rows: list[tuple[str, str]], vectors: dict[str, np.ndarray], epochs: int = 1000,
                     seed: int = 12) -> list[float]:
    """The post's main loop; returns the mean loss per epoch."""
    rng = np.random.default_rng(seed)
    Q = rng.standard_normal((51, 51)) / 100
    K = rng.standard_normal((51, 51)) / 100
    V = K.copy()
    Qb, Kb, Vb = np.zeros((51, 1)), np.zeros((51, 1)), np.zeros((51, 1))
    W, b = rng.standard_normal((3, 51)) / 100, np.zeros((3, 1))
    sent = {"positive": np.array([[0], [0], [1]]), "negative": np.array([[1], [0], [0]]),
            "neutral": np.array([[0], [1], [0]])}
    losses = []
    for _ in range(epochs):
        total = 0.0
        for label, sentence in rows:
            words = [w for w in sentence.split(" ") if w in vectors]  # remove_nid
            if not words:
                continue
            x_em = None
            for w in words:  # hcat word by word, as the post does
                x_em = vectors[w] if x_em is None else np.column_stack([x_em, vectors[w]])
            x, q, k, v, alpha, z, p = forwardprop(x_em, Q, Qb, K, Kb, V, Vb, W, b)
            total += cross_entropy(p, sent[label])
            Q, Qb, K, Kb, V, Vb, W, b = backprop(x, sent[label], Q, Qb, K, Kb, V, Vb, W, b, q, k, v, alpha, z, p)
        losses.append(total / len(rows))
    return losses
