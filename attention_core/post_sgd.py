"""The Julia post's model, trained as the post trains it: one hand-written SGD step per sentence.

"Attention from Scratch in Julia" trains one attention head with biases, mean pooling and a
linear head by per-example SGD, with gradients it derives by hand. :class:`PostModelSGDStep`
is that step with the correct gradients, as ~20 NumPy operations and no autograd bookkeeping,
which is what per-example SGD on 51-dim vectors needs: the trainer's fast path for the
``seed`` preset. :func:`post_sgd_step_applies` says when it computes what autograd and
``torch.optim.SGD`` would (tests check it against them). The Backpropagation page derives the
same gradients one at a time (:mod:`attention_core.backprop`).

Notation (row-major, one sentence): x (n, d) inputs with the position index appended,
q = x Qᵀ + q_b, k = x Kᵀ + k_b, v = x Vᵀ + v_b (n, d); α = softmax(q kᵀ / √d) row-wise (n, n);
pooled = mean over rows of α v (d,); logits = W pooled + b (C,); L = −log softmax(logits)[y].
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import Tensor

if TYPE_CHECKING:
    from attention_core.model import ModelConfig
    from attention_core.training import TrainConfig

def post_model_params(model: torch.nn.Module) -> dict[str, Tensor]:
    """A post-shaped model's weights under the post's names (views, not copies)."""
    attn = model.blocks[0].attn
    return {
        "Q": attn.q_proj.weight, "Qb": attn.q_proj.bias, "K": attn.k_proj.weight, "Kb": attn.k_proj.bias,
        "V": attn.v_proj.weight, "Vb": attn.v_proj.bias, "W": model.head.weight, "b": model.head.bias,
    }


class PostModelSGDStep:
    """Per-example SGD on the post's model without autograd (the trainer's fast path).

    It computes in NumPy, in the model's dtype: on a sentence of ~10 words each operation is a
    few hundred multiply-adds, so a step costs what its ~25 calls cost to dispatch, and NumPy
    dispatches a call faster than torch (``benchmarks/README.md``, ``seed_vs_numpy``). Q, K, V
    and their biases live in one fused (d+1, 3d) array [Qᵀ Kᵀ Vᵀ; q_b k_b v_b] (the biases meet a
    column of ones in x), so that q, k and v are one matmul and their update is one.

    The array holds the weights times a = d^(-1/4), so q, k and v come out times a: then
    q kᵀ is already q kᵀ/√d, and the updates of Q, K and V all need the same factor, which
    goes into one small vector (see :meth:`step`). :meth:`write_back` divides by a again.

    Example:
        >>> sgd = PostModelSGDStep(model, lr=0.001, train_head=False)
        >>> loss, predicted = sgd.step(PostModelSGDStep.prepare(x), y)  # x (n, d) tensor
        >>> sgd.write_back(model)
    """

    def __init__(self, model: torch.nn.Module, lr: float, train_head: bool) -> None:
        # Overflow in a step means the training diverges, which the trainer reports and rolls back;
        # NumPy's RuntimeWarnings about it would only add noise, from this module's lines only. Set
        # here rather than at import, where a catch_warnings block around the import would undo it;
        # a filter rather than np.errstate, which would cost time on every step.
        warnings.filterwarnings("ignore", category=RuntimeWarning, module=__name__)
        p = {name: t.detach().cpu().numpy() for name, t in post_model_params(model).items()}
        self.d = d = p["Q"].shape[1]
        self.a = d**-0.25
        # (d+1, 3d), row-major: x1 @ wt_qkv is then faster than on the column-major array np.block makes here.
        self.wt_qkv = np.ascontiguousarray(np.block([[p["Q"].T, p["K"].T, p["V"].T], [p["Qb"], p["Kb"], p["Vb"]]]))
        self.wt_qkv *= self.a
        self.dtype = self.wt_qkv.dtype
        self.w = p["W"].copy()  # (C, d)
        self.b = p["b"].tolist()  # (C,) as Python floats: the logits are Python floats too
        self.lr, self.train_head = lr, train_head
        # Kept, not allocated per step: with a fresh array for every update, the in-place subtraction after it is slower.
        self._update = np.empty_like(self.wt_qkv)
        wt = torch.from_numpy(self.wt_qkv)  # a view: write_back reads the trained values
        self._blocks = [(w, wt[:d, i * d : (i + 1) * d].T, b, wt[d, i * d : (i + 1) * d])
                        for i, (w, b) in enumerate((("Q", "Qb"), ("K", "Kb"), ("V", "Vb")))]

    @staticmethod
    def prepare(x: Tensor) -> np.ndarray:
        """A sentence's inputs with the column of ones the fused biases need. (n, d) tensor → (n, d+1) array."""
        x = x.detach().cpu().numpy()
        return np.concatenate([x, np.ones((x.shape[0], 1), dtype=x.dtype)], axis=1)

    def attention(self, x1: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """a·q, a·k, a·v (n, d) and the attention weights α (n, n) of one prepared sentence x1 (n, d+1).

        α is what :func:`~attention_core.attention.attention_steps` returns as ``weights`` for
        q, k, v (a test checks it, to float rounding), without the output α v (the step needs
        only its mean over rows) and the checks that would slow every step.
        """
        d = self.d
        qkv = x1 @ self.wt_qkv  # (n, 3d) = a·(x Wᵀ + b) for Q, K and V at once
        q, k, v = qkv[:, :d], qkv[:, d : 2 * d], qkv[:, 2 * d :]
        s = q @ k.T  # = q kᵀ/√d of the unscaled q, k
        s -= np.maximum.reduce(s, axis=1, keepdims=True)  # softmax as torch computes it: no overflow
        np.exp(s, out=s)
        s /= np.add.reduce(s, axis=1, keepdims=True)
        return q, k, v, s

    def step(self, x1: np.ndarray, y: int) -> tuple[float, int]:
        """One SGD step on one prepared sentence x1 (n, d+1); returns (loss, predicted class).

        With g = dL/dpooled = Wᵀ(p − y) and the softmax backward row by row, the weights move by
        −lr·a·x1ᵀ [dL/dq, dL/dk, dL/dv] (times a: the array holds them times a). Written with
        a·q, a·k, a·v, each of the three blocks is x1ᵀ(…) times lr·a/n, so that factor goes
        into g, the only vector all three paths share.
        """
        n, d, a = x1.shape[0], self.d, self.a
        q, k, v, alpha = self.attention(x1)  # q, k, v times a
        a_sum = np.add.reduce(alpha, axis=0)  # (n,): n × the mean over queries of α
        pooled = a_sum @ v  # (d,): n·a × the mean over rows of α v
        # C is tiny (3 for the post): logits, softmax, loss and argmax in plain Python are cheaper
        # than array operations.
        logits = [z / (n * a) + b for z, b in zip((self.w @ pooled).tolist(), self.b, strict=True)]
        top = max(logits)
        exps = [math.exp(z - top) for z in logits]
        total = sum(exps)
        loss = math.log(total) - (logits[y] - top)
        grad = [e / total for e in exps]
        grad[y] -= 1.0  # dL/dlogits = p − y
        c = self.lr * a / n
        g = np.array([c * e for e in grad], self.dtype) @ self.w  # (d,): c·dL/dpooled
        # dL/dα_ij = v_j · dL/dpooled / n is the same for every row i; the row-wise softmax backward
        # makes it dL/ds_ij ∝ G_ij = α_ij (g_j − r_i), with g = v (c·dL/dpooled) and r_i = Σ_k α_ik g_k.
        g_alpha = v @ g  # (n,)
        g_st = np.subtract.outer(g_alpha, alpha @ g_alpha)  # [j, i] = g_j − r_i: G's sign needs no extra operation
        g_st *= alpha.T  # (n, n): Gᵀ
        g_qkv = np.empty((n, 3 * d), self.dtype)
        np.matmul(g_st.T, k, out=g_qkv[:, :d])  # ∝ dL/dq = G k
        np.matmul(g_st, q, out=g_qkv[:, d : 2 * d])  # ∝ dL/dk = Gᵀ q
        np.multiply(a_sum[:, None], g, out=g_qkv[:, 2 * d :])  # ∝ dL/dv = outer(mean α, dL/dpooled)
        self.wt_qkv -= np.matmul(x1.T, g_qkv, out=self._update)  # weights and (last row) biases
        if self.train_head:
            self.w -= np.multiply.outer(np.array(grad, self.dtype), pooled * self.dtype.type(self.lr / (n * a)))
            self.b = [b - self.lr * e for b, e in zip(self.b, grad, strict=True)]
        return loss, logits.index(top)

    def weights_finite(self) -> bool:
        """Whether the attention weights it trains are all finite."""
        return bool(np.isfinite(self.wt_qkv).all())

    @torch.no_grad()
    def write_back(self, model: torch.nn.Module) -> None:
        """Copy the trained weights into ``model`` (the one it was made from), divided by a again."""
        p = post_model_params(model)
        for w, w_trained, b, b_trained in self._blocks:
            torch.div(w_trained, self.a, out=p[w])
            torch.div(b_trained, self.a, out=p[b])
        if self.train_head:
            p["W"].copy_(torch.from_numpy(self.w))
            p["b"].copy_(torch.tensor(self.b, dtype=p["b"].dtype))


def post_sgd_step_applies(model_cfg: ModelConfig, train_cfg: TrainConfig, device: torch.device) -> bool:
    """True when :class:`PostModelSGDStep` computes exactly what autograd would for this setup."""
    m, t = model_cfg, train_cfg
    return (
        m.n_layers == 1 and m.n_heads == 1 and not m.residual and not m.layer_norm and not m.feed_forward
        and not m.attention_out_proj and m.attention_bias and m.pooling == "mean" and m.positional == "index"
        and m.dropout == 0.0 and m.d_model in (None, m.input_dim) and m.freeze_embeddings and not m.casing
        and t.optimizer == "sgd" and t.batch_size == 1 and t.weight_decay == 0.0 and t.grad_clip is None
        and not t.class_weights and t.unknown == "drop" and device.type == "cpu"
    )
