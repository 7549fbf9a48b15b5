"""The attention classifier: word vectors → attention layers → pooling → class logits.

The named configurations — ``seed`` (the Julia post's model) and ``default`` — are defined in
:mod:`attention_core.presets`.

The forward pass returns the logits **and** every layer's attention weights, so the
heatmaps a learner sees are the weights the prediction was computed from.

Legend: B batch, T tokens, L layers, H heads, E embedding dim, D model dim, C classes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attention_core.attention import MultiHeadAttention
from attention_core.configs import (  # noqa: F401 — ModelConfig and its choices, re-exported
    INIT,
    LOCAL_CONV_KINDS,
    MAX_LOCAL_CONV,
    POOLING,
    POOLING_KEYS,
    POSITIONAL,
    ModelConfig,
    with_data,
)
from attention_core.dropout import Dropout
from attention_core.text import CASINGS

# An intervention on the attention weights: (layer index, weights (B, H, T, T), key mask (B, 1, 1, T))
# → the weights that layer's heads attend with instead (head knock-out, permuted attention).
AttentionEdit = Callable[[int, Tensor, Tensor], Tensor]


@dataclass(frozen=True)
class Hidden:
    """The tokens between two maps of :meth:`AttentionClassifier.forward_features`, as they enter map ``layer``
    (block ``layer``, or at L the pooling: the last block's output, before the final norm). Kept, it lets the
    maps above run many times on what those below made once (the faithfulness report edits one map at a time).

    Shape:
        x (B, T, D); entered (B, T, D), the tokens as they entered the layers; mask (B, T) bool.
    """

    layer: int
    x: Tensor
    entered: Tensor
    mask: Tensor

    def rows(self, index: Tensor, t: int) -> Hidden:
        """Rows ``index`` (N,) of the batch, their first ``t`` tokens. → (N, t, D) each."""
        return replace(self, x=self.x[index, :t], entered=self.entered[index, :t], mask=self.mask[index, :t])


def sinusoidal_table(max_len: int, dim: int) -> Tensor:
    """The fixed sin/cos positional encodings of "Attention Is All You Need". Shape (max_len, dim)."""
    pos = torch.arange(max_len, dtype=torch.float32)[:, None]
    freq = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
    table = torch.zeros(max_len, dim)
    table[:, 0::2] = torch.sin(pos * freq)
    table[:, 1::2] = torch.cos(pos * freq)[:, : dim // 2]
    return table


class Block(nn.Module):
    """One attention layer, optionally with residuals, pre-norm LayerNorm and a feed-forward MLP."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        d = cfg.model_dim
        self.cfg = cfg
        self.attn = MultiHeadAttention(
            d, cfg.n_heads, bias=cfg.attention_bias, out_proj=cfg.attention_out_proj, dropout=cfg.dropout
        )
        self.norm1 = nn.LayerNorm(d) if cfg.layer_norm else nn.Identity()
        self.norm2 = nn.LayerNorm(d) if cfg.layer_norm and cfg.feed_forward else nn.Identity()
        self.ff = (
            nn.Sequential(nn.Linear(d, cfg.d_ff), nn.GELU(), nn.Linear(cfg.d_ff, d)) if cfg.feed_forward else None
        )
        self.drop = Dropout(cfg.dropout)

    def forward(
        self, x: Tensor, mask: Tensor | None, need_weights: bool, edit_weights: Callable[[Tensor], Tensor] | None = None
    ) -> tuple[Tensor, Tensor | None]:
        # (B, T, D), (B, H, T, T)
        a, weights = self.attn(self.norm1(x), mask=mask, need_weights=need_weights, edit_weights=edit_weights)
        x = x + self.drop(a) if self.cfg.residual else self.drop(a)
        if self.ff is not None:
            f = self.drop(self.ff(self.norm2(x)))
            x = x + f if self.cfg.residual else f
        return x, weights


class LocalConv(nn.Module):
    """Each token's vector mixed with its neighbours' (a window of ``local_conv`` tokens), like an n-gram.

    ``residual``: x + dropout(GELU(conv(x))), the token's own vector kept and its window's added;
    ``plain``: dropout(GELU(conv(x))) alone; ``depthwise``: the residual form with one filter per feature
    (neighbours mixed feature by feature, no mixing across features). Padded positions are zeroed before
    the convolution, so they add nothing to a real token's window, and stay zero after it. With
    ``local_conv_zero_init`` the weights and bias start at 0, so a residual branch starts adding nothing.

    Shape:
        x (B, T, D), mask (B, T) bool → (B, T, D).
    """

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        d = cfg.model_dim
        self.residual = cfg.local_conv_kind != "plain"
        groups = d if cfg.local_conv_kind == "depthwise" else 1
        conv = (nn.Conv1d, d, d, cfg.local_conv)
        options = {"padding": cfg.local_conv // 2, "groups": groups}
        if cfg.local_conv_zero_init:  # no random draw either: the other layers start as they would without it
            self.conv = nn.utils.skip_init(*conv, **options)
            nn.init.zeros_(self.conv.weight)
            nn.init.zeros_(self.conv.bias)
        else:
            self.conv = nn.Conv1d(*conv[1:], **options)
        self.drop = Dropout(cfg.dropout)

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        keep = mask[..., None].to(x.dtype)  # (B, T, 1)
        x = x * keep
        local = self.drop(F.gelu(self.conv(x.transpose(1, 2)).transpose(1, 2)))  # (B, T, D)
        return (x + local if self.residual else local) * keep

    def at(self, x: Tensor, sentence: Tensor, mask: Tensor, index: Tensor) -> Tensor:
        """:meth:`forward` of the rows ``x[sentence[n]]`` masked by ``mask[n]``, read at positions ``index[n]`` alone:
        many masks of a few sentences (the faithfulness lab's erasures). The window is linear in its masked input,
        so each kernel tap multiplies every sentence's tokens once, and a row adds up the taps its mask lets
        through at the positions it reads: the same numbers as :meth:`forward`, to float rounding.

        Shape:
            x (S, T, D), sentence (N,), mask (N, T) bool, index (N, K) → (N, K, D).
        """
        w, pad = self.conv.weight, self.conv.padding[0]  # (D, D / groups, k), k // 2
        per_tap = [x @ w[:, :, d].T if self.conv.groups == 1 else x * w[:, 0, d] for d in range(w.shape[-1])]
        taps = F.pad(torch.stack(per_tap), (0, 0, pad, pad))  # (k, S, T + 2·pad, D): the conv's zero padding
        let_through = F.pad(mask.to(x.dtype), (pad, pad))  # (N, T + 2·pad)
        window = self.conv.bias + sum(taps[d][sentence[:, None], index + d] * let_through.gather(1, index + d)[..., None]
                                      for d in range(len(per_tap)))  # (N, K, D): tap d reads position index − pad + d
        local = self.drop(F.gelu(window))
        keep = mask.gather(1, index)[..., None].to(x.dtype)  # (N, K, 1)
        return (x[sentence[:, None], index] * keep + local if self.residual else local) * keep


class AttentionPooling(nn.Module):
    """A learned query per head attends over the tokens; the weighted sum is the sentence vector.

    The weights say which words decided the label. Returned as a (T, T) map whose every row is the
    query's weights over the tokens, so it stacks with the layers' maps (the last map of the stack).
    With ``cfg.pooling_keys == "input"`` the query is compared with ``keys`` (the tokens as they entered
    the layers, layer-normed) instead of ``x``; the weighted sum is of ``x`` either way.

    Shape:
        x (B, T, D), mask (B, T) bool, keys (B, T, D) → pooled (B, D), weights (B, H, T, T) (every row the same).
    """

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        d = cfg.model_dim
        self.query = nn.Parameter(torch.randn(d) * d**-0.5)  # the sentence's question to its words
        self.attn = MultiHeadAttention(d, cfg.n_heads, bias=cfg.attention_bias, dropout=cfg.dropout)
        self.key_norm = nn.LayerNorm(d) if cfg.pooling_keys == "input" else None

    def forward(
        self, x: Tensor, mask: Tensor, edit_weights: Callable[[Tensor], Tensor] | None = None,
        keys: Tensor | None = None,
    ) -> tuple[Tensor, Tensor]:
        b, t, d = x.shape
        query = self.query.expand(b, 1, d)  # (B, 1, D)
        if self.key_norm is not None:
            if keys is None:
                raise ValueError("this pooling attention compares the tokens as they entered the layers: pass keys")
            context = self.key_norm(keys)  # (B, T, D)
        else:
            context = x
        # (B, 1, D), (B, H, 1, T)
        pooled, weights = self.attn(query, context, mask[:, None, None, :], value=x, edit_weights=edit_weights)
        return pooled[:, 0], weights.expand(-1, -1, t, -1)  # (B, D), (B, H, T, T)


class AttentionClassifier(nn.Module):
    """Classify a token sequence; return logits and every layer's and head's attention.

    Token ids index the run vocabulary (0 = <pad>, 1 = <unk>, 2… = words). Ids ≥ vocab_size
    pick rows of ``extra``: vectors of words the run never saw in training but the embedding
    table knows (used at prediction time, so a frozen-GloVe model can read new words).

    Shape:
        ids (B, T) long, mask (B, T) bool (True = real token), extra (X, E), casing (B, T) long
        (each token's index in ``CASINGS``, read when ``cfg.casing``)
        → logits (B, C), attention (L, B, H, T, T) or None when ``need_weights=False``;
        with ``pooling="attention"`` the stack has L + 1 maps, the last the pooling query's.

    Example:
        >>> model = AttentionClassifier(ModelConfig(vocab_size=10, embedding_dim=8, d_model=8, n_heads=2))
        >>> logits, attn = model(torch.tensor([[2, 3, 4]]))
        >>> logits.shape, attn.shape
        (torch.Size([1, 2]), torch.Size([2, 1, 2, 3, 3]))
    """

    def __init__(self, cfg: ModelConfig, vectors: Tensor | None = None) -> None:
        super().__init__()
        self.cfg = cfg
        self.embedding = nn.Embedding(cfg.vocab_size, cfg.embedding_dim, padding_idx=0)
        if vectors is not None:
            if tuple(vectors.shape) != (cfg.vocab_size, cfg.embedding_dim):
                raise ValueError(f"vectors shape {tuple(vectors.shape)} != {(cfg.vocab_size, cfg.embedding_dim)}")
            with torch.no_grad():
                self.embedding.weight.copy_(vectors)
        self.embedding.weight.requires_grad_(not cfg.freeze_embeddings)
        self.unk = nn.Parameter(torch.zeros(cfg.embedding_dim))  # the learned <unk> vector
        # CASINGS[1:]'s vectors (lower case, index 0, adds none); they start at 0: capitals first read as lower case
        self.casing = nn.Parameter(torch.zeros(len(CASINGS) - 1, cfg.embedding_dim)) if cfg.casing else None
        d = cfg.model_dim
        self.input_proj = nn.Linear(cfg.input_dim, d) if d != cfg.input_dim else nn.Identity()
        if cfg.positional == "sinusoidal":
            self.register_buffer("pos_table", sinusoidal_table(cfg.max_len, d), persistent=False)
        self.pos_embedding = nn.Embedding(cfg.max_len, d) if cfg.positional == "learned" else None
        self.local_conv = LocalConv(cfg) if cfg.local_conv else None
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.final_norm = nn.LayerNorm(d) if cfg.layer_norm else nn.Identity()
        self.pooling = AttentionPooling(cfg) if cfg.pooling == "attention" else None
        self.drop = Dropout(cfg.dropout)
        self.embedding_drop = Dropout(cfg.embedding_dropout)
        self.head = nn.Linear(d, cfg.n_classes)
        if cfg.init == "seed":
            self._post_init()
        self.head.requires_grad_(not cfg.freeze_head)
        for block in self.blocks[: cfg.frozen_layers]:
            block.requires_grad_(False)

    def _post_init(self) -> None:
        """The seed's ``randn(51, 51)/100`` weights, zero biases, and ``V = K``."""
        with torch.no_grad():
            for module in self.modules():
                if isinstance(module, nn.Linear):
                    module.weight.normal_(0.0, 0.01)
                    if module.bias is not None:
                        module.bias.zero_()
            for block in self.blocks:
                block.attn.v_proj.weight.copy_(block.attn.k_proj.weight)

    def embed(self, ids: Tensor, extra: Tensor | None = None, casing: Tensor | None = None) -> Tensor:
        """Token ids (and, for a model with ``cfg.casing``, each token's index in ``CASINGS``; None = all
        lower case) → input features. Shape (B, T), (B, T) → (B, T, input_dim)."""
        table = self.embedding.weight if extra is None else torch.cat([self.embedding.weight, extra.to(self.unk)])
        x = F.embedding(ids, table)  # (B, T, E)
        x = torch.where((ids == 1)[..., None], self.unk, x)
        if self.casing is not None and casing is not None:
            kinds = torch.cat([self.casing.new_zeros(1, self.casing.shape[1]), self.casing])  # (len(CASINGS), E)
            x = x + F.embedding(casing, kinds)
        if self.cfg.positional == "index":  # the seed: vcat(x, 0:n-1)
            pos = torch.arange(ids.shape[1], dtype=x.dtype, device=x.device)
            x = torch.cat([x, pos.expand(ids.shape[0], -1)[..., None]], dim=-1)  # (B, T, E+1)
        return x

    def forward(
        self,
        ids: Tensor,
        mask: Tensor | None = None,
        extra: Tensor | None = None,
        casing: Tensor | None = None,
        *,
        need_weights: bool = True,
        edit_attention: AttentionEdit | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        if mask is None:
            mask = ids != 0
        if self.training and self.cfg.word_dropout:
            dropped = (torch.rand(ids.shape, device=ids.device) < self.cfg.word_dropout) & (ids != 0)
            ids = ids.masked_fill(dropped, 1)  # read as <unk>
        return self.forward_features(self.embed(ids, extra, casing), mask, need_weights=need_weights,
                                     edit_attention=edit_attention)

    def forward_features(
        self,
        features: Tensor,
        mask: Tensor | None = None,
        *,
        need_weights: bool = True,
        edit_attention: AttentionEdit | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """The forward pass from the output of :meth:`embed`: :meth:`enter` then :meth:`forward_from`.

        Gradients can flow into ``features`` even when the embedding table is frozen (saliency).
        ``edit_attention`` replaces each layer's attention weights before the heads use them
        (:data:`AttentionEdit`; see :mod:`attention_core.faithfulness`); without it nothing changes.

        Shape:
            features (B, T, input_dim), mask (B, T) bool (True = real token; default: all True)
            → logits (B, C), attention (L, B, H, T, T) or None when ``need_weights=False``.
        """
        return self.forward_from(self.enter(features, mask), need_weights=need_weights, edit_attention=edit_attention)

    def enter(self, features: Tensor, mask: Tensor | None = None) -> Hidden:
        """The tokens as they enter the layers: projected, given their positions and their neighbours' (local
        convolution). Shape (B, T, input_dim), (B, T)."""
        b, t = self._check(features)
        if mask is None:
            mask = torch.ones(b, t, dtype=torch.bool, device=features.device)
        if mask.shape != (b, t) or mask.dtype != torch.bool:
            raise ValueError(f"mask must be a bool tensor of shape {(b, t)}, got {mask.dtype} {tuple(mask.shape)}")
        x = self._positioned(features)  # (B, T, D)
        if self.local_conv is not None:  # each token's vector now carries its neighbours'
            x = self.local_conv(x, mask)
        return Hidden(0, x, x, mask)  # entered: the pooling's keys with pooling_keys="input"

    def enter_rows(self, features: Tensor, sentence: Tensor, mask: Tensor) -> Hidden:
        """:meth:`enter` of the rows ``features[sentence[n]]`` masked by ``mask[n]``, each row's real tokens alone,
        packed to the left (:meth:`_kept`): many masks of a few sentences (the faithfulness lab's erasures), the
        same logits to float rounding for less work where most tokens are masked. The projection and the positions
        run once a sentence, the local convolution at the kept tokens alone (:meth:`LocalConv.at`). The maps of
        the layers after it are of the packed tokens. In eval mode (a sentence's dropout would be shared by its rows).

        Shape:
            features (S, T, input_dim), sentence (N,), mask (N, T) bool → a Hidden of (N, K, D).
        """
        if self.training:
            raise ValueError("enter_rows is for a model in eval mode")
        s, t = self._check(features)
        if mask.dim() != 2 or mask.shape[1] != t or mask.dtype != torch.bool or sentence.shape != mask.shape[:1]:
            raise ValueError(f"mask must be a bool tensor (N, {t}) and sentence (N,), got {tuple(mask.shape)} "
                             f"{mask.dtype} and {tuple(sentence.shape)}")
        x = self._positioned(features)  # (S, T, D)
        index = self._kept(mask)  # (N, K)
        x = x[sentence[:, None], index] if self.local_conv is None else self.local_conv.at(x, sentence, mask, index)
        return Hidden(0, x, x, mask.gather(1, index))

    def _check(self, features: Tensor) -> tuple[int, int]:
        cfg = self.cfg
        if features.dim() != 3 or features.shape[-1] != cfg.input_dim:
            raise ValueError(f"features must be (B, T, {cfg.input_dim}), got shape {tuple(features.shape)}")
        b, t, _ = features.shape
        if t > cfg.max_len and cfg.positional in ("sinusoidal", "learned"):
            raise ValueError(f"sequence of {t} tokens is longer than max_len={cfg.max_len}")
        return b, t

    def _positioned(self, features: Tensor) -> Tensor:
        """The features projected to the model's width, with their positions. (B, T, input_dim) → (B, T, D)."""
        t = features.shape[1]
        x = self.input_proj(self.embedding_drop(features))  # (B, T, D)
        if self.cfg.positional == "sinusoidal":
            x = x + self.pos_table[:t]
        elif self.pos_embedding is not None:
            x = x + self.pos_embedding.weight[:t]
        return self.drop(x)

    def advance(self, hidden: Hidden, layer: int) -> Hidden:
        """The tokens as they enter map ``layer`` (hidden.layer … L), through the blocks between, unedited."""
        x, _ = self._blocks(hidden, layer, False, None)
        return replace(hidden, layer=layer, x=x)

    def forward_from(self, hidden: Hidden, *, need_weights: bool = True,
                     edit_attention: AttentionEdit | None = None) -> tuple[Tensor, Tensor | None]:
        """The rest of the forward pass from ``hidden``: the one copy of the maps' order. The edit is called with
        each map's own index; the maps returned are those from ``hidden.layer`` on.

        Shape:
            → logits (B, C), attention (maps from hidden.layer, B, H, T, T) or None when ``need_weights=False``.
        """
        x, weights = self._blocks(hidden, len(self.blocks), need_weights, edit_attention)
        x = self.final_norm(x)
        if self.pooling is not None:
            layer = len(self.blocks)  # the pooling query's map comes after the layers'
            attn_mask = hidden.mask[:, None, None, :]
            edit = None if edit_attention is None else lambda w: edit_attention(layer, w, attn_mask)
            pooled, w = self.pooling(x, hidden.mask, edit, keys=hidden.entered)  # (B, D), (B, H, T, T)
            weights.append(w)
        else:
            pooled = pool(x, hidden.mask, self.cfg.pooling)  # (B, D)
        logits = self.head(self.drop(pooled))  # (B, C)
        return logits, torch.stack(weights) if need_weights else None  # (L or L + 1, B, H, T, T)

    def _blocks(self, hidden: Hidden, stop: int, need_weights: bool,
                edit_attention: AttentionEdit | None) -> tuple[Tensor, list[Tensor | None]]:
        """Blocks hidden.layer … stop − 1 on ``hidden``: the tokens after them (B, T, D) and their maps."""
        attn_mask = hidden.mask[:, None, None, :]  # (B, 1, 1, T): padded keys are never attended
        x, weights = hidden.x, []
        for layer in range(hidden.layer, stop):
            edit = None if edit_attention is None else lambda w, layer=layer: edit_attention(layer, w, attn_mask)
            x, w = self.blocks[layer](x, attn_mask, need_weights, edit)
            weights.append(w)
        return x, weights

    def _kept(self, mask: Tensor) -> Tensor:
        """Where each row's real tokens are, in order, the rest cut off (with ``first`` pooling the first token
        stays first, real or not: it is what the pooling reads): the packing of :meth:`enter_rows`. A masked token
        is never attended to nor pooled, so the layers give the real tokens the same vectors without it.

        Shape:
            mask (B, T) → (B, K), K = the most tokens a row keeps (at least 1).
        """
        keep = mask.clone()
        if self.cfg.pooling == "first":
            keep[:, 0] = True
        k = max(1, int(keep.sum(1).max()))
        return torch.argsort((~keep).to(torch.int8), dim=1, stable=True)[:, :k]  # the kept positions first


def pool(x: Tensor, mask: Tensor, how: str) -> Tensor:
    """Tokens → one vector per sentence, ignoring padding. Shape (B, T, D), (B, T) → (B, D)."""
    if how == "first":
        return x[:, 0]
    m = mask[..., None].to(x.dtype)  # (B, T, 1)
    if how == "max":  # an all-padding row would be −∞: give it 0 like mean pooling does
        return x.masked_fill(m == 0, float("-inf")).amax(dim=1).nan_to_num(neginf=0.0)
    return (x * m).sum(dim=1) / m.sum(dim=1).clamp(min=1.0)
