"""The neuron view (after BertViz's): one head's attention for one query token, every number on the way.

For a layer, a head and a query token of a sentence: the head's query vector q and every token's key
vector k, dimension by dimension, their products q_i·k_i, the sum (the score q·k), the score × 1/√d, and the
softmax over the tokens. The vectors are the ones the model computed in the forward pass (taken from the
layer's :class:`~attention_core.attention.MultiHeadAttention` as it ran), and the softmax is recomputed from
them by :func:`~attention_core.attention.attention_steps`, the function the model itself runs: the weights
equal the row of the attention map the pages show (``tests/core/test_neuron.py``).

Works for every model whose attention layers are ``model.blocks[i].attn`` — the small model and a pretrained
encoder alike — and for the small model's pooling attention (map index ``n_layers``: one query, the label's).

Legend: T tokens, Dh the head's dim.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from attention_core.attention import MultiHeadAttention, attention_steps
from attention_core.encoding import Batch, Encoded
from attention_core.sentence import run_encoded


@dataclass(frozen=True)
class NeuronView:
    """One query's attention in one head, step by step. Shapes: q (Dh,), k (T, Dh), products (T, Dh), the rest (T,)."""

    tokens: tuple[str, ...]
    map_index: int  # which attention map (a layer, or n_layers for the pooling attention)
    head: int  # 0-based
    query: int  # the query token's position (0 for the pooling attention's one query)
    q: Tensor
    k: Tensor
    products: Tensor  # q_i · k_i per token and dimension
    scores: Tensor  # products summed over the dimensions: q · k
    scale: float  # 1/√Dh
    scaled: Tensor  # scores × scale
    weights: Tensor  # softmax of scaled over the tokens the query may attend (padding never)
    map_row: Tensor  # the same row of the attention map the forward pass returned (equal to weights)
    pooling: bool = False  # the map is a pooling attention's: its one query is the label's, a learned vector

    @property
    def head_dim(self) -> int:
        return int(self.q.shape[0])


def attention_module(model: nn.Module, map_index: int) -> MultiHeadAttention:
    """The attention that computes map ``map_index``: layer ``map_index``'s, or the pooling attention's after them."""
    blocks = model.blocks
    if 0 <= map_index < len(blocks):
        return blocks[map_index].attn
    pooling = getattr(model, "pooling", None)
    if map_index == len(blocks) and pooling is not None:
        return pooling.attn
    raise ValueError(f"map {map_index} does not exist: the model has {len(blocks)} layers"
                     + (" and a pooling attention" if pooling is not None else ""))


def neuron_view(model: nn.Module, encoded: Encoded, batch: Batch, map_index: int, head: int, query: int) -> NeuronView:
    """Head ``head`` of map ``map_index`` for query token ``query`` of one encoded sentence (a batch of one).

    Example:
        >>> encoded, batch = run.encoder.encode_for_model("the food was good")  # doctest: +SKIP
        >>> view = neuron_view(run.model, encoded, batch, 0, 1, 2)  # doctest: +SKIP
        >>> view.weights.sum()  # doctest: +SKIP
        tensor(1.)
    """
    attn = attention_module(model, map_index)
    if not 0 <= head < attn.n_heads:
        raise ValueError(f"head {head} does not exist: the map has {attn.n_heads} heads")
    seen: dict[str, Tensor] = {}

    def keep_inputs(module: nn.Module, args: tuple, kwargs: dict) -> None:
        x = args[0]
        context = args[1] if len(args) > 1 and args[1] is not None else kwargs.get("context")
        mask = args[2] if len(args) > 2 else kwargs.get("mask")
        seen.update(x=x.detach(), context=(x if context is None else context).detach())
        if mask is not None:
            seen["mask"] = mask.detach()

    hook = attn.register_forward_pre_hook(keep_inputs, with_kwargs=True)
    try:
        out = run_encoded(model, encoded, batch)
    finally:
        hook.remove()
    n_queries = seen["x"].shape[1]
    if not 0 <= query < n_queries:
        raise ValueError(f"query {query} does not exist: this map has {n_queries} quer{'y' if n_queries == 1 else 'ies'}")
    with torch.no_grad():
        q = attn._split(attn.q_proj(seen["x"]))[0, head, query]  # (Dh,)
        k = attn._split(attn.k_proj(seen["context"]))[0, head]  # (T, Dh)
        mask = seen.get("mask")
        row_mask = None if mask is None else mask.reshape(-1, mask.shape[-1])[0]  # (T,): keys the query may attend
        steps = attention_steps(q[None], k, k, mask=None if row_mask is None else row_mask[None])
    # the map row the page shows: a pooling map repeats its one query's row for every token
    map_row = out.attention[map_index, head, min(query, out.attention.shape[-2] - 1)]
    return NeuronView(tuple(encoded.tokens), map_index, head, query, q, k, q * k, steps.scores[0],
                      1.0 / float(q.shape[0]) ** 0.5, steps.scaled[0], steps.weights[0], map_row,
                      pooling=map_index == len(model.blocks))
