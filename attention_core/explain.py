"""Explaining one prediction: attention rollout, gradient saliency and attention filters.

Attention weights show where each layer *looked*; they do not by themselves say which
words *mattered* for the prediction. This module puts two kinds of evidence side by side:

* **Attention rollout** — Abnar & Zuidema (2020), "Quantifying Attention Flow in
  Transformers" (ACL 2020, arXiv:2005.00928). Each layer's heads are fused (mean, or
  max/min), the residual connection is modelled as 0.5·A + 0.5·I, rows are renormalised,
  and the layers are multiplied from the first layer up: rollout = Â_L · … · Â_1. Row i of
  the result says how much of token i's final representation flows from each input token.
  A pooling attention is not one of these layers: its row (no residual path around it) times
  the rollout says how much of each input token reaches the pooled vector, read by the label.
* **Gradient saliency** of a class's log-probability w.r.t. the input word vectors:
  gradient × input (Shrikumar et al., 2016; Baehrens et al., 2010 for plain gradients),
  integrated gradients (Sundararajan, Taly & Yan, 2017, "Axiomatic Attribution for Deep
  Networks", ICML, arXiv:1703.01365) from an all-zero baseline with midpoint Riemann
  sums, and the gradient's L2 norm (Simonyan et al., 2013, "Deep Inside Convolutional
  Networks", arXiv:1312.6034).

Saliency explains log p(class), not the class's raw logit: softmax ignores whatever the
logits share, so a raw logit can fall with a word that makes its class *more* likely (when
every logit falls, the others faster). For two classes ∂log p(c) = (1 − p(c))·∂(logit_c −
logit_other), so the sign says which class a word pushes towards.

Saliency needs gradients w.r.t. the *looked-up* vectors even when the embedding table is
frozen, so it runs :meth:`AttentionClassifier.forward_features` on the output of
``model.embed``: :func:`explain` takes those features, the probabilities and the attention
from one :func:`~attention_core.sentence.run_sentence`.

Legend: B batch, T tokens, L layers, H heads, E embedding dim, C classes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import Tensor

from attention_core.encoding import Batch
from attention_core.model import AttentionClassifier
from attention_core.sentence import run_sentence

if TYPE_CHECKING:  # runs.py may one day import this module
    from attention_core.runs import Run

HEAD_FUSIONS = ("mean", "max", "min")
SALIENCY_METHODS = ("grad_x_input", "integrated_gradients", "grad_norm")

__all__ = [
    "HEAD_FUSIONS", "SALIENCY_METHODS", "Explanation", "attention_rollout", "explain",
    "feature_saliency", "token_saliency", "top_k_mask",
]


# --- attention rollout -----------------------------------------------------------------------


def _normalise_rows(a: Tensor) -> Tensor:
    """Divide every row by its sum; all-zero rows stay zero."""
    return a / a.sum(dim=-1, keepdim=True).clamp(min=torch.finfo(a.dtype).tiny)


def attention_rollout(
    attention: Tensor, *, residual: bool = True, head_fusion: str = "mean", mask: Tensor | None = None
) -> Tensor:
    """Attention rollout (Abnar & Zuidema, 2020): how much each input token flows into each output.

    Per layer: fuse the heads (``head_fusion`` mean, max or min) and renormalise the rows;
    with ``residual`` use Â = 0.5·A + 0.5·I (the residual connection carries the token
    itself); then multiply from the first layer up, rollout = Â_L · … · Â_1.

    With ``mask`` (True = real token) padded keys and padded query rows are set to 0 before
    renormalising, so real rows sum to 1 over real tokens and padded rows are all zero.

    Shape:
        attention (L, H, T, T) or (L, B, H, T, T), mask (T,) or (B, T) bool
        → (T, T) or (B, T, T); rows sum to 1.

    Example:
        >>> attn = torch.softmax(torch.randn(2, 4, 5, 5), dim=-1)  # 2 layers, 4 heads, 5 tokens
        >>> attention_rollout(attn).sum(-1)
        tensor([1.0000, 1.0000, 1.0000, 1.0000, 1.0000])
    """
    if attention.dim() not in (4, 5):
        raise ValueError(f"attention must be (L, H, T, T) or (L, B, H, T, T), got shape {tuple(attention.shape)}")
    if attention.shape[-1] != attention.shape[-2]:
        raise ValueError(f"attention must be self-attention (square T × T), got shape {tuple(attention.shape)}")
    if head_fusion not in HEAD_FUSIONS:
        raise ValueError(f"head_fusion = {head_fusion!r} is not valid; choose one of {', '.join(HEAD_FUSIONS)}")
    batched = attention.dim() == 5
    a = attention if batched else attention[:, None]  # (L, B, H, T, T)
    a = a.detach().float() if not a.is_floating_point() else a.detach()
    t = a.shape[-1]
    if head_fusion == "mean":
        fused = a.mean(dim=2)
    elif head_fusion == "max":
        fused = a.amax(dim=2)
    else:
        fused = a.amin(dim=2)  # (L, B, T, T)
    keep = None
    if mask is not None:
        if mask.dtype != torch.bool:
            raise ValueError(f"mask must be boolean (True = real token), got {mask.dtype}")
        m = mask if mask.dim() == 2 else mask[None]
        if m.dim() != 2 or m.shape[-1] != t or m.shape[0] not in (1, a.shape[1]):
            raise ValueError(f"mask shape {tuple(mask.shape)} does not fit attention shape {tuple(attention.shape)}")
        keep = (m[:, :, None] & m[:, None, :]).to(fused.dtype)  # (B, T, T): real query × real key
        fused = fused * keep
    fused = _normalise_rows(fused)
    eye = torch.eye(t, dtype=fused.dtype, device=fused.device)
    if residual:
        fused = 0.5 * fused + 0.5 * (eye if keep is None else eye * keep)
        fused = _normalise_rows(fused)
    rollout = fused[0]  # (B, T, T)
    for layer in fused[1:]:
        rollout = layer @ rollout  # Â_l · (Â_{l-1} · … · Â_1)
    return rollout if batched else rollout[0]


# --- gradient saliency -----------------------------------------------------------------------


def token_saliency(
    model: AttentionClassifier,
    batch: Batch,
    *,
    target: int | None = None,
    method: str = "grad_x_input",
    steps: int = 32,
) -> Tensor:
    """Gradient saliency of one class's log-probability w.r.t. each token's input word vector.

    The gradient is taken w.r.t. the looked-up word vectors (the embedding part of
    ``model.embed``; the seed's position-index feature is held fixed), so it works for
    frozen embedding tables too. Methods:

    The score explained is s = log p(target) = log_softmax(logits)[target]: positive
    attributions push towards the target class, negative ones away from it.

    * ``"grad_x_input"`` — Σ_e ∂s/∂x_te · x_te (signed).
    * ``"integrated_gradients"`` — (x_t − 0) · mean over α of ∂s/∂x_t at α·x, summed
      over e; α = (k + ½)/steps, k = 0…steps−1 (midpoint Riemann sum, zero baseline). The
      attributions add up to ≈ s(x) − s(baseline) (completeness).
    * ``"grad_norm"`` — ‖∂s/∂x_t‖₂ (unsigned).

    ``target`` defaults to the predicted class. The model is run in eval mode and its
    training flag restored; gradients go through ``torch.autograd.grad``, so no parameter's
    ``.grad`` is touched. Padded positions get 0.

    Shape:
        batch.ids (1, T), batch.mask (1, T), batch.extra (X, E) → (T,).

    Example:
        >>> model = AttentionClassifier(ModelConfig(vocab_size=10, embedding_dim=8, d_model=8, n_heads=2))
        >>> ids = torch.tensor([[2, 3, 4]])
        >>> token_saliency(model, Batch(ids, ids != 0), method="grad_norm").shape
        torch.Size([3])
    """
    _check_method(method, steps)
    ids = batch.ids
    if ids.dim() != 2 or ids.shape[0] != 1:
        raise ValueError(f"token_saliency explains one sentence: ids must be (1, T), got shape {tuple(ids.shape)}")
    mask = batch.mask if batch.mask is not None else ids != 0
    _check_target(model, target)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            features = model.embed(ids, batch.extra, batch.casing)  # (1, T, input_dim)
            if target is None:
                logits, _ = model.forward_features(features, mask, need_weights=False)
                target = int(logits[0].argmax())
    finally:
        model.train(was_training)
    return feature_saliency(model, features, mask, int(target), method, steps)


def _check_target(model: AttentionClassifier, target: int | None) -> None:
    n_classes = model.cfg.n_classes
    if target is not None and not 0 <= target < n_classes:
        raise ValueError(f"target = {target!r} is not a class index (the model has {n_classes} classes)")


def _check_method(method: str, steps: int) -> None:
    if method not in SALIENCY_METHODS:
        raise ValueError(f"method = {method!r} is not valid; choose one of {', '.join(SALIENCY_METHODS)}")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps = {steps!r} is not valid; use a positive integer such as 32")


def feature_saliency(model: AttentionClassifier, features: Tensor, mask: Tensor, target: int, method: str,
                      steps: int) -> Tensor:
    """:func:`token_saliency` of class ``target`` from the model's input ``features`` (1, T, input_dim) → (T,)."""
    e = model.cfg.embedding_dim
    features = features.detach()
    words, rest = features[..., :e], features[..., e:]  # rest: the seed's position index (or empty)
    alphas = saliency_alphas(method, steps).to(words)  # (N,)
    n = alphas.shape[0]
    was_training = model.training
    model.eval()
    try:
        grads = log_prob_gradients(model, alphas[:, None, None] * words, rest.expand(n, -1, -1), mask.expand(n, -1),
                                   torch.full((n,), target, device=words.device))  # (N, T, E)
    finally:
        model.train(was_training)
    return saliency_from_gradients(words[0], grads, method).masked_fill(~mask[0], 0.0).detach()  # (T,)


def saliency_alphas(method: str, steps: int) -> Tensor:
    """Where the gradients of ``method`` are taken, as multiples of the word vectors: integrated gradients' ``steps``
    midpoints from 0 to 1, else the words themselves (1). Shape (N,)."""
    if method == "integrated_gradients":
        return (torch.arange(steps, dtype=torch.float32) + 0.5) / steps
    return torch.ones(1)


def saliency_from_gradients(words: Tensor, grads: Tensor, method: str) -> Tensor:
    """A token's saliency from the gradients taken at :func:`saliency_alphas`. Shape (T, E), (N, T, E) → (T,)."""
    if method == "integrated_gradients":
        return (words * grads.mean(dim=0)).sum(-1)
    return (grads[0] * words).sum(-1) if method == "grad_x_input" else grads[0].norm(dim=-1)


def log_prob_gradients(model: AttentionClassifier, words: Tensor, rest: Tensor, mask: Tensor, targets: Tensor) -> Tensor:
    """The gradient of log p(``targets[n]``) with respect to the word vectors ``words[n]``, row by row.

    The model must be in eval mode: then rows do not interact, and rows of many sentences (padded, with their
    masks) can share one batch. ``rest``: the input features after the word vectors (the seed's position
    index, or none). Log-probability, not the raw logit (module docstring).

    Shape:
        words (N, T, E), rest (N, T, input_dim − E), mask (N, T) bool, targets (N,) long → (N, T, E).
    """
    with torch.enable_grad():
        w = words.detach().requires_grad_(True)
        logits, _ = model.forward_features(torch.cat([w, rest], dim=-1), mask, need_weights=False)
        log_p = torch.log_softmax(logits, dim=-1).gather(1, targets[:, None])  # (N, 1)
        (grad,) = torch.autograd.grad(log_p.sum(), w)
    return grad


# --- filtering attention maps ------------------------------------------------------------------


def top_k_mask(weights: Tensor, k: int | None = None, threshold: float | None = None) -> Tensor:
    """Keep, per query row, the ``k`` largest weights and/or those ≥ ``threshold``; zero the rest.

    With both given a weight must pass both filters (among the top k *and* ≥ threshold).
    With neither, the weights come back unchanged (as a copy). Exactly ``min(k, S)`` entries
    survive the top-k filter per row (ties broken by position). Rows are not renormalised.

    Shape:
        weights (…, T, S) → (…, T, S).

    Example:
        >>> top_k_mask(torch.tensor([[0.5, 0.3, 0.2]]), k=2)
        tensor([[0.5000, 0.3000, 0.0000]])
    """
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise ValueError(f"k = {k!r} is not valid; use a positive integer")
    if threshold is not None and not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold = {threshold!r} is not valid; use a value in [0, 1]")
    if weights.dim() < 1:
        raise ValueError(f"weights must have at least one dimension, got shape {tuple(weights.shape)}")
    keep = torch.ones_like(weights, dtype=torch.bool)
    if k is not None and k < weights.shape[-1]:
        idx = weights.topk(k, dim=-1).indices
        keep = torch.zeros_like(keep).scatter_(-1, idx, True)
    if threshold is not None:
        keep &= weights >= threshold
    return torch.where(keep, weights, torch.zeros_like(weights))


# --- everything for one sentence ---------------------------------------------------------------


@dataclass
class Explanation:
    """Everything the app shows to explain one prediction (tensors are detached, on CPU)."""

    text: str
    tokens: list[str]  # as fed to the model (T)
    unknown_tokens: list[str]
    label: str  # the predicted class
    target: int  # the class the saliency explains (default: the predicted one)
    probabilities: dict[str, float]
    attention: Tensor  # (L, H, T, T) every layer's and head's weights
    head_average: Tensor  # (L, T, T) mean over heads
    rollout: Tensor  # (T, T) attention rollout over the self-attention layers
    saliency: Tensor  # (T,) gradient saliency of the target class's log-probability
    saliency_method: str
    input_features: np.ndarray  # (T, input_dim) the model's input; the seed's last column is the position index
    # (T,) how much of each token reaches the pooled vector: a pooling attention's row times the rollout, or
    # (other pooling) the rollout's rows averaged; sums to 1
    attention_to_token: Tensor
    notes: list[str]

    def to_dict(self) -> dict:
        """Plain lists and numbers (for JSON)."""
        return {
            "text": self.text,
            "tokens": self.tokens,
            "unknown_tokens": self.unknown_tokens,
            "label": self.label,
            "target": self.target,
            "probabilities": self.probabilities,
            "attention": self.attention.tolist(),
            "head_average": self.head_average.tolist(),
            "rollout": self.rollout.tolist(),
            "saliency": self.saliency.tolist(),
            "saliency_method": self.saliency_method,
            "input_features": self.input_features.tolist(),
            "attention_to_token": self.attention_to_token.tolist(),
            "notes": self.notes,
        }


def explain(
    run: Run,
    text: str,
    *,
    method: str = "grad_x_input",
    target: int | None = None,
    steps: int = 32,
    residual: bool | None = None,
    head_fusion: str = "mean",
) -> Explanation:
    """Attention, rollout and gradient saliency for one sentence of a trained :class:`~attention_core.runs.Run`.

    ``residual`` for the rollout defaults to the model's own setting (the seed has no
    residual connection, so its rollout is the plain product of head-averaged maps).
    Raises ``EmbeddingError`` if no word of ``text`` is known.

    Shape:
        T tokens, L layers, H heads: attention (L, H, T, T), head_average (L, T, T),
        rollout (T, T), saliency (T,), input_features (T, input_dim), attention_to_token (T,).

    Example:
        >>> ex = explain(run, "a great movie")
        >>> ex.tokens, ex.saliency.shape, ex.rollout.shape
        (['a', 'great', 'movie'], torch.Size([3]), torch.Size([3, 3]))
    """
    _check_method(method, steps)
    model, label_names = run.model, run.label_names
    seen = run_sentence(model, run.encoder, text, features=True)
    _check_target(model, target)
    enc, probs, features = seen.encoded, seen.probabilities, seen.features
    assert features is not None
    predicted = int(probs.argmax())
    cls = predicted if target is None else target
    mask = torch.ones(features.shape[:1], dtype=torch.bool, device=features.device)  # one sentence: no padding
    saliency = feature_saliency(model, features[None], mask[None], cls, method, steps)
    attention = seen.attention.detach().cpu()  # (L, H, T, T), or (L + 1, H, T, T) with a pooling attention's map last
    n_layers = model.cfg.n_layers
    rollout = attention_rollout(
        attention[:n_layers], residual=model.cfg.residual if residual is None else residual, head_fusion=head_fusion
    )  # (T, T)
    if attention.shape[0] > n_layers:  # its one row (drawn T times), heads fused; no residual path around it
        to_token = attention_rollout(attention[n_layers:], residual=False, head_fusion=head_fusion)[0] @ rollout
    else:
        to_token = rollout.mean(dim=0)
    return Explanation(
        text=text,
        tokens=list(enc.tokens),
        unknown_tokens=list(enc.unknown),
        label=label_names[predicted],
        target=cls,
        probabilities={name: round(float(p), 6) for name, p in zip(label_names, probs.tolist(), strict=True)},
        attention=attention,
        head_average=attention.mean(dim=1),
        rollout=rollout,
        saliency=saliency.cpu(),
        saliency_method=method,
        input_features=features.detach().cpu().numpy(),
        attention_to_token=to_token,
        notes=enc.notes,
    )
