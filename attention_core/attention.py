"""Scaled dot-product attention, every step visible, and multi-head attention built on it.

One function, two audiences (after harvardnlp's annotated transformer): the model runs
:func:`attention_steps`, and the explainer pages show the very tensors it returns.

    scores  = Q Kᵀ                       (…, T, S)
    scaled  = scores · scale             scale = 1/√d_k unless given
    masked  = scaled, −∞ where mask is False
    weights = softmax(masked) over keys  rows sum to 1; masked entries exactly 0
    output  = weights V                  (…, T, Dv)

Masks follow PyTorch's ``F.scaled_dot_product_attention``: a boolean tensor broadcastable
to (…, T, S), ``True`` = may attend. A query row with every key masked gets all-zero
weights and a zero output, and no NaN reaches the gradients.

Legend: B batch, H heads, T query tokens, S key/value tokens, D model dim, Dh head dim.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import torch
from torch import Tensor, nn

from attention_core.dropout import dropout


class AttentionSteps(NamedTuple):
    """Every intermediate of scaled dot-product attention (shapes for q (…, T, Dk))."""

    scores: Tensor  # (…, T, S) raw dot products q·k
    scaled: Tensor  # (…, T, S) scores × scale
    masked: Tensor  # (…, T, S) scaled with −∞ where the mask forbids
    weights: Tensor  # (…, T, S) softmax over S; 0 where masked
    output: Tensor  # (…, T, Dv) weights @ v


def attention_steps(
    q: Tensor, k: Tensor, v: Tensor, *, mask: Tensor | None = None, scale: float | None = None,
    need_output: bool = True,
) -> AttentionSteps:
    """Scaled dot-product attention returning every step.

    Works for self-attention (q, k, v from one sequence) and cross-attention (queries of
    length T and dim Dk against keys of length S; values may have another dim Dv). With
    ``need_output=False`` the weights @ v product is skipped and ``output`` is empty (…, 0, Dv):
    for a caller that attends with weights of its own (dropout, an edit).

    Shape:
        q: (…, T, Dk), k: (…, S, Dk), v: (…, S, Dv), mask: bool broadcastable to (…, T, S).

    Example:
        >>> x = torch.tensor([[0.43, 0.15, 0.89], [0.55, 0.87, 0.66]])
        >>> attention_steps(x, x, x, scale=1.0).weights.sum(-1)
        tensor([1., 1.])
    """
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"queries and keys need the same last dim, got q {tuple(q.shape)} and k {tuple(k.shape)}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"keys and values need the same length, got k {tuple(k.shape)} and v {tuple(v.shape)}")
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    scores = q @ k.transpose(-2, -1)  # (…, T, S)
    scaled = scores * scale
    if mask is None:
        masked = scaled
        weights = torch.softmax(scaled, dim=-1)
    else:
        if mask.dtype != torch.bool:
            raise ValueError(f"mask must be boolean (True = may attend), got {mask.dtype}")
        # A hand-written broadcast check: torch.broadcast_shapes imports sympy on first use (slow).
        trailing = zip(reversed(mask.shape), reversed(scaled.shape), strict=False)
        if mask.dim() > scaled.dim() or any(m not in (1, s) for m, s in trailing):
            raise ValueError(f"mask of shape {tuple(mask.shape)} does not broadcast to scores {tuple(scaled.shape)}")
        masked = scaled.masked_fill(~mask, float("-inf"))
        # A row with no allowed key would be softmax(all −∞) = NaN, and NaN poisons gradients
        # even after a later fill; give such rows finite inputs, then zero them. Where every row
        # allows a key, softmax already gives exactly 0 at −∞ (and passes 0 gradient there): the
        # two fills, each the size of the scores, would change no bit (a test checks).
        any_allowed = mask.any(dim=-1, keepdim=True)
        if bool(any_allowed.all()):
            weights = torch.softmax(masked, dim=-1)
        else:
            weights = torch.softmax(masked.masked_fill(~any_allowed, 0.0), dim=-1)
            weights = weights.masked_fill(~mask, 0.0)
    # Without need_output the caller attends with weights of its own (dropped out, edited): output is then v's
    # empty slice, not a product it would throw away.
    output = weights @ v if need_output else v[..., :0, :]  # (…, T, Dv)
    return AttentionSteps(scores, scaled, masked, weights, output)


def causal_mask(t: int, s: int | None = None, *, device: torch.device | None = None) -> Tensor:
    """Query i may attend to keys 0…i (the seed's "uni-directional" mask). Shape (T, S)."""
    s = t if s is None else s
    return torch.ones(t, s, dtype=torch.bool, device=device).tril()


def padding_mask(lengths: Tensor, s: int | None = None) -> Tensor:
    """Keys beyond each sequence's length are masked. Shape (B, 1, 1, S), broadcasts over H and T."""
    s = int(lengths.max()) if s is None else s
    keep = torch.arange(s, device=lengths.device)[None, :] < lengths[:, None]  # (B, S)
    return keep[:, None, None, :]


class MultiHeadAttention(nn.Module):
    """Multi-head attention with separate ``q_proj``, ``k_proj``, ``v_proj`` and ``out_proj``.

    ``forward(x)`` is self-attention; ``forward(x, context)`` is cross-attention where
    queries come from ``x`` (dim ``d_model``) and keys and values from ``context`` (dim
    ``kdim``); pass ``value=`` when values come from another tensor (dim ``vdim``). The
    weights returned are the softmax the output was computed from (before any dropout).

    Shape:
        x: (B, T, D), context: (B, S, kdim), mask: bool broadcastable to (B, H, T, S)
        → output (B, T, D), weights (B, H, T, S) (``None`` when ``need_weights=False``).

    Example:
        >>> mha = MultiHeadAttention(8, 2)
        >>> out, w = mha(torch.randn(1, 5, 8))
        >>> out.shape, w.shape
        (torch.Size([1, 5, 8]), torch.Size([1, 2, 5, 5]))
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        *,
        kdim: int | None = None,
        vdim: int | None = None,
        bias: bool = True,
        out_proj: bool = True,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_model // n_heads
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(kdim or d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(vdim or d_model, d_model, bias=bias)
        # The seed's model has no output projection: z = v αᵀ goes straight on.
        self.out_proj: nn.Module = nn.Linear(d_model, d_model, bias=bias) if out_proj else nn.Identity()
        self.dropout = dropout

    def _split(self, x: Tensor) -> Tensor:
        b, t, _ = x.shape
        return x.view(b, t, self.n_heads, self.d_head).transpose(1, 2)  # (B, H, T, Dh)

    def forward(
        self,
        x: Tensor,
        context: Tensor | None = None,
        mask: Tensor | None = None,
        *,
        value: Tensor | None = None,
        need_weights: bool = True,
        edit_weights: Callable[[Tensor], Tensor] | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """With ``edit_weights`` the heads attend with ``edit_weights(weights)`` (B, H, T, S) instead
        of the softmax (head knock-out, permuted attention); the edited weights are returned."""
        context = x if context is None else context
        value = context if value is None else value
        q = self._split(self.q_proj(x))  # (B, H, T, Dh)
        k = self._split(self.k_proj(context))  # (B, H, S, Dh)
        v = self._split(self.v_proj(value))  # (B, H, S, Dh)
        p = self.dropout if self.training else 0.0
        # The one attention function, need_weights or not: the heads use the weights the pages show
        # (its speed against F.scaled_dot_product_attention on CPU: benchmarks/README.md).
        own = bool(p) or edit_weights is not None  # the heads attend with dropped-out or edited weights
        steps = attention_steps(q, k, v, mask=mask, need_output=not own)
        weights = steps.weights  # (B, H, T, S)
        if edit_weights is not None:
            weights = edit_weights(weights)  # (B, H, T, S)
        attended = dropout(weights, p) @ v if own else steps.output  # (B, H, T, Dh)
        b, _, t, _ = attended.shape
        out = attended.transpose(1, 2).reshape(b, t, self.d_model)  # (B, T, D)
        return self.out_proj(out), weights if need_weights else None
