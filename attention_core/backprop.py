"""Backpropagation through the seed's attention model, written out by hand.

The seed post ("Attention from Scratch in Julia") derives every gradient of its model —
one attention head with biases, a linear layer, mean pooling, softmax and cross entropy —
and applies them with per-example SGD. This module does the same with the correct
gradients, so that

* the explainer page can show each gradient in the order the post derives it, next to
  autograd's, and next to what the post's own code computes (:func:`seed_backward` with
  ``julia=True``: its softmax Jacobian is built from the first column of α and applied to
  every row, and its scores are divided by √length(q) = √(d·n) rather than √d);
* the ``seed`` preset trains fast: :class:`SeedKernel` runs the forward and backward pass
  as ~20 plain tensor operations with no autograd bookkeeping, which is what per-example
  SGD on 51-dim vectors needs (a trainer fast path; tests check it against autograd).

Notation (row-major, one sentence): x (n, d) inputs with the position index appended,
q = x Qᵀ + q_b, k = x Kᵀ + k_b, v = x Vᵀ + v_b (n, d); s = q kᵀ · c with c = 1/√d;
α = softmax(s) row-wise (n, n); z = α v (n, d); h = mean over rows of z (d,);
logits = W h + b (C,); p = softmax(logits); L = −log p[y].
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass
class SeedForward:
    """Every intermediate of the seed model's forward pass for one sentence."""

    x: Tensor  # (n, d)
    q: Tensor  # (n, d)
    k: Tensor  # (n, d)
    v: Tensor  # (n, d)
    scores: Tensor  # (n, n) q kᵀ · c
    alpha: Tensor  # (n, n)
    z: Tensor  # (n, d) context vectors
    pooled: Tensor  # (d,)
    logits: Tensor  # (C,)
    p: Tensor  # (C,)
    loss: Tensor  # ()
    scale: float


def seed_forward(x: Tensor, y: int, params: dict[str, Tensor], *, scale: float | None = None) -> SeedForward:
    """The seed model's forward pass. ``params``: Q, Qb, K, Kb, V, Vb (d×d, d), W (C×d), b (C)."""
    n, d = x.shape
    c = 1.0 / math.sqrt(d) if scale is None else scale
    q = x @ params["Q"].T + params["Qb"]  # (n, d)
    k = x @ params["K"].T + params["Kb"]
    v = x @ params["V"].T + params["Vb"]
    scores = (q @ k.T) * c  # (n, n)
    alpha = torch.softmax(scores, dim=-1)
    z = alpha @ v  # (n, d)
    pooled = z.mean(0)  # (d,)
    logits = params["W"] @ pooled + params["b"]  # (C,)
    p = torch.softmax(logits, dim=-1)
    return SeedForward(x, q, k, v, scores, alpha, z, pooled, logits, p, -torch.log(p[y]), c)


def seed_backward(fw: SeedForward, y: int, params: dict[str, Tensor], *, julia: bool = False) -> dict[str, Tensor]:
    """Every gradient of the seed model, in the order the post derives them.

    With ``julia=True`` the post's own choices are reproduced: the softmax Jacobian is the
    one of α's first column, applied to every row (its ``α[j]`` is linear indexing).
    (Its √(d·n) scaling is a forward-pass choice: pass ``scale`` to :func:`seed_forward`.)
    """
    n = fw.x.shape[0]
    onehot = torch.zeros_like(fw.p)
    onehot[y] = 1.0
    g: dict[str, Tensor] = {}
    g["dL/dlogits"] = fw.p - onehot  # ∂L/∂p in the post: p − y
    g["dL/dW"] = torch.outer(g["dL/dlogits"], fw.pooled)  # (C, d)
    g["dL/db"] = g["dL/dlogits"]
    g["dL/dpooled"] = params["W"].T @ g["dL/dlogits"]  # (d,)
    g["dL/dz"] = g["dL/dpooled"].expand(n, -1) / n  # mean pooling spreads it evenly (n, d)
    g["dL/dalpha"] = g["dL/dz"] @ fw.v.T  # (n, n)
    g["dL/dv"] = fw.alpha.T @ g["dL/dz"]  # (n, d)
    if julia:
        a = fw.alpha[:, 0]
        jac = torch.diag(a) - torch.outer(a, a)  # one n×n Jacobian for every row
        g["softmax Jacobian"] = jac.expand(n, n, n)
        g["dL/dscores"] = g["dL/dalpha"] @ jac
    else:
        # Row i: J_i = diag(α_i) − α_i α_iᵀ, so dL/ds_i = α_i ⊙ (dL/dα_i − ⟨dL/dα_i, α_i⟩).
        g["softmax Jacobian"] = torch.diag_embed(fw.alpha) - fw.alpha[:, :, None] * fw.alpha[:, None, :]
        g["dL/dscores"] = fw.alpha * (g["dL/dalpha"] - (g["dL/dalpha"] * fw.alpha).sum(-1, keepdim=True))
    ds = g["dL/dscores"] * fw.scale  # through the scaling
    g["dL/dq"] = ds @ fw.k  # (n, d)
    g["dL/dk"] = ds.T @ fw.q  # (n, d)
    g["dL/dQ"] = g["dL/dq"].T @ fw.x  # (d, d)
    g["dL/dK"] = g["dL/dk"].T @ fw.x
    g["dL/dV"] = g["dL/dv"].T @ fw.x
    g["dL/dQb"] = g["dL/dq"].sum(0)
    g["dL/dKb"] = g["dL/dk"].sum(0)
    g["dL/dVb"] = g["dL/dv"].sum(0)
    return g


def seed_params_from_model(model: torch.nn.Module) -> dict[str, Tensor]:
    """The seed-shaped model's weights under the post's names (views, not copies)."""
    attn = model.blocks[0].attn
    return {
        "Q": attn.q_proj.weight, "Qb": attn.q_proj.bias, "K": attn.k_proj.weight, "Kb": attn.k_proj.bias,
        "V": attn.v_proj.weight, "Vb": attn.v_proj.bias, "W": model.head.weight, "b": model.head.bias,
    }


class SeedKernel:
    """Per-example SGD for the seed architecture without autograd (the trainer's fast path).

    Q, K, V and their biases live in one fused (3d, d) buffer so a step is one matmul for
    q, k, v and one in-place update; :meth:`write_back` copies them into the model.
    """

    def __init__(self, model: torch.nn.Module, lr: float, train_head: bool) -> None:
        p = seed_params_from_model(model)
        with torch.no_grad():
            # [Q | Qb; K | Kb; V | Vb]: the bias is a last column, met by a column of ones in x.
            w = torch.cat([p["Q"], p["K"], p["V"]])  # (3d, d)
            b = torch.cat([p["Qb"], p["Kb"], p["Vb"]])  # (3d,)
            self.w_qkv = torch.cat([w, b[:, None]], dim=1).detach().clone()  # (3d, d+1)
            self.w = p["W"].detach().clone()
            self.b = p["b"].detach().clone()
        self.d = w.shape[1]
        self.scale = 1.0 / math.sqrt(self.d)
        self.lr, self.train_head = lr, train_head

    @staticmethod
    def prepare(x: Tensor) -> Tensor:
        """A sentence's inputs with the column of ones the fused biases need. (n, d) → (n, d+1)."""
        return torch.cat([x, torch.ones(x.shape[0], 1, dtype=x.dtype)], dim=1)

    def step(self, x1: Tensor, y: int) -> tuple[float, int]:
        """One SGD step on one prepared sentence x1 (n, d+1); returns (loss, predicted class).

        No ``torch.no_grad()`` needed: none of these tensors requires grad, so autograd
        records nothing (and the context manager would cost a few µs per step).
        """
        d, n = self.d, x1.shape[0]
        qkv = torch.mm(x1, self.w_qkv.T)  # (n, 3d) = x Wᵀ + b
        q, k, v = qkv.split(d, dim=1)
        alpha = torch.softmax(torch.mm(q, k.T).mul_(self.scale), dim=-1)  # (n, n)
        a_mean = alpha.mean(0)  # (n,): mean over queries of α, so pooled = a_mean @ v
        pooled = a_mean @ v  # (d,)
        # C is tiny (3 for the seed): softmax, loss and argmax in plain Python are cheaper
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

    @torch.no_grad()
    def write_back(self, model: torch.nn.Module) -> None:
        p = seed_params_from_model(model)
        d = self.d
        for i, (w, b) in enumerate((("Q", "Qb"), ("K", "Kb"), ("V", "Vb"))):
            p[w].copy_(self.w_qkv[i * d : (i + 1) * d, :d])
            p[b].copy_(self.w_qkv[i * d : (i + 1) * d, d])
        p["W"].copy_(self.w)
        p["b"].copy_(self.b)


def seed_fast_path_applies(model_cfg, train_cfg, device: torch.device) -> bool:
    """True when :class:`SeedKernel` computes exactly what autograd would for this setup."""
    m, t = model_cfg, train_cfg
    return (
        m.n_layers == 1 and m.n_heads == 1 and not m.residual and not m.layer_norm and not m.feed_forward
        and not m.attention_out_proj and m.attention_bias and m.pooling == "mean" and m.positional == "index"
        and m.dropout == 0.0 and m.d_model in (None, m.input_dim) and m.freeze_embeddings
        and t.optimizer == "sgd" and t.batch_size == 1 and t.weight_decay == 0.0 and t.grad_clip is None
        and not t.class_weights and t.unknown == "drop" and device.type == "cpu"
    )
