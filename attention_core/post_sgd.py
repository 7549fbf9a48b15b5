"""The Julia post's model, trained as the post trains it: one hand-written SGD step per sentence.

"Attention from Scratch in Julia" trains one attention head with biases, mean pooling and a
linear head by per-example SGD, with gradients it derives by hand. :class:`PostModelSGDStep`
is that step with the correct gradients, as ~20 plain tensor operations and no autograd
bookkeeping, which is what per-example SGD on 51-dim vectors needs: the trainer's fast path
for the ``seed`` preset. :func:`post_sgd_step_applies` says when it computes what autograd and
``torch.optim.SGD`` would (tests check it against them). The Backpropagation page derives the
same gradients one at a time (:mod:`attention_core.backprop`).

Notation (row-major, one sentence): x (n, d) inputs with the position index appended,
q = x Qᵀ + q_b, k = x Kᵀ + k_b, v = x Vᵀ + v_b (n, d); α = softmax(q kᵀ / √d) row-wise (n, n);
pooled = mean over rows of α v (d,); logits = W pooled + b (C,); L = −log softmax(logits)[y].
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

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

    Q, K, V and their biases live in one fused (3d, d+1) buffer so that q, k and v are one
    matmul and their update is one in-place ``addmm_``; :meth:`write_back` copies the buffers
    into the model.

    Example:
        >>> sgd = PostModelSGDStep(model, lr=0.001, train_head=False)
        >>> loss, predicted = sgd.step(PostModelSGDStep.prepare(x), y)  # x (n, d)
        >>> sgd.write_back(model)
    """

    def __init__(self, model: torch.nn.Module, lr: float, train_head: bool) -> None:
        p = post_model_params(model)
        with torch.no_grad():
            # [Q | Qb; K | Kb; V | Vb]: the bias is a last column, met by a column of ones in x.
            w = torch.cat([p["Q"], p["K"], p["V"]])  # (3d, d)
            b = torch.cat([p["Qb"], p["Kb"], p["Vb"]])  # (3d,)
            self.w_qkv = torch.cat([w, b[:, None]], dim=1).detach().clone()  # (3d, d+1)
            self.w = p["W"].detach().clone()  # (C, d)
            self.b = p["b"].detach().clone()  # (C,)
        self.d = w.shape[1]
        self.scale = 1.0 / math.sqrt(self.d)
        self.lr, self.train_head = lr, train_head

    @staticmethod
    def prepare(x: Tensor) -> Tensor:
        """A sentence's inputs with the column of ones the fused biases need. (n, d) → (n, d+1)."""
        return torch.cat([x, torch.ones(x.shape[0], 1, dtype=x.dtype)], dim=1)

    def attention(self, x1: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """q, k, v (n, d) and the attention weights α (n, n) of one prepared sentence x1 (n, d+1).

        α is what :func:`~attention_core.attention.attention_steps` returns as ``weights`` for
        these q, k, v (a test checks they are equal to the bit), without the output α v (the
        step needs only its mean over rows) and the checks that would slow every step
        (see ``benchmarks/README.md``).
        """
        q, k, v = torch.mm(x1, self.w_qkv.T).split(self.d, dim=1)  # (n, d) each = x Wᵀ + b
        alpha = torch.softmax(torch.mm(q, k.T).mul_(self.scale), dim=-1)  # (n, n)
        return q, k, v, alpha

    def step(self, x1: Tensor, y: int) -> tuple[float, int]:
        """One SGD step on one prepared sentence x1 (n, d+1); returns (loss, predicted class).

        No ``torch.no_grad()`` needed: none of these tensors requires grad, so autograd
        records nothing (and the context manager would cost a few µs per step).
        """
        n = x1.shape[0]
        q, k, v, alpha = self.attention(x1)
        a_mean = alpha.mean(0)  # (n,): mean over queries of α, so pooled = a_mean @ v
        pooled = a_mean @ v  # (d,)
        # C is tiny (3 for the post): softmax, loss and argmax in plain Python are cheaper
        # than three more tensor ops.
        logits = torch.addmv(self.b, self.w, pooled).tolist()
        top = max(logits)
        exps = [math.exp(v_ - top) for v_ in logits]
        total = sum(exps)
        loss = math.log(total) - (logits[y] - top)
        grad = [e / total for e in exps]
        grad[y] -= 1.0  # p − y
        g_logits = torch.tensor(grad, dtype=x1.dtype)
        g_pooled = self.w.T @ g_logits  # (d,)
        g_v = torch.outer(a_mean, g_pooled)  # (n, d) = αᵀ dL/dz, with dL/dz = g_pooled / n per row
        g_alpha = v @ g_pooled  # (n,): n·dL/dα, the same for every row; the 1/n joins the scale
        # Row-wise softmax backward, then through the scale: α ⊙ (g − ⟨g, α_i⟩) · c / n.
        g_s = (alpha * (g_alpha[None, :] - (alpha @ g_alpha)[:, None])).mul_(self.scale / n)  # (n, n)
        g_qkv = torch.cat([g_s @ k, g_s.T @ q, g_v], dim=1)  # (n, 3d)
        self.w_qkv.addmm_(g_qkv.T, x1, alpha=-self.lr)  # weights and (last column) biases
        if self.train_head:
            self.w.add_(torch.outer(g_logits, pooled), alpha=-self.lr)
            self.b.add_(g_logits, alpha=-self.lr)
        return loss, logits.index(top)

    def weights_finite(self) -> bool:
        """Whether the attention weights it trains are all finite."""
        return bool(torch.isfinite(self.w_qkv).all())

    @torch.no_grad()
    def write_back(self, model: torch.nn.Module) -> None:
        """Copy the trained weights into ``model`` (the one it was made from)."""
        p = post_model_params(model)
        d = self.d
        for i, (w, b) in enumerate((("Q", "Qb"), ("K", "Kb"), ("V", "Vb"))):
            p[w].copy_(self.w_qkv[i * d : (i + 1) * d, :d])
            p[b].copy_(self.w_qkv[i * d : (i + 1) * d, d])
        p["W"].copy_(self.w)
        p["b"].copy_(self.b)


def post_sgd_step_applies(model_cfg: ModelConfig, train_cfg: TrainConfig, device: torch.device) -> bool:
    """True when :class:`PostModelSGDStep` computes exactly what autograd would for this setup."""
    m, t = model_cfg, train_cfg
    return (
        m.n_layers == 1 and m.n_heads == 1 and not m.residual and not m.layer_norm and not m.feed_forward
        and not m.attention_out_proj and m.attention_bias and m.pooling == "mean" and m.positional == "index"
        and m.dropout == 0.0 and m.d_model in (None, m.input_dim) and m.freeze_embeddings
        and t.optimizer == "sgd" and t.batch_size == 1 and t.weight_decay == 0.0 and t.grad_clip is None
        and not t.class_weights and t.unknown == "drop" and device.type == "cpu"
    )
