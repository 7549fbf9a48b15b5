"""Tests for attention_core.model: ModelConfig, AttentionClassifier, the seed preset, pooling."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn import functional as F

from attention_core.embeddings import load_embeddings
from attention_core.errors import ConfigError
from attention_core.model import (
    AttentionClassifier,
    ModelConfig,
    pool,
    sinusoidal_table,
    with_data,
)
from attention_core.presets import DEFAULT, SEED

F64 = torch.float64
TIGHT = {"rtol": 1e-10, "atol": 1e-12}
SMALL = {"vocab_size": 12, "embedding_dim": 8, "n_layers": 2, "n_heads": 2, "d_model": 8, "d_ff": 16, "max_len": 16}


def small_model(seed: int = 0, **overrides: object) -> AttentionClassifier:
    torch.manual_seed(seed)
    cfg = ModelConfig(**{**SMALL, "n_classes": 3, **overrides})
    vectors = torch.randn(cfg.vocab_size, cfg.embedding_dim)
    return AttentionClassifier(cfg, vectors).eval()


# --- shapes, attention rows, padding invariance ----------------------------------------------


@pytest.mark.parametrize("positional", ["none", "index", "sinusoidal", "learned"])
def test_shapes_and_attention_rows(positional: str) -> None:
    d_model = 9 if positional == "index" else 8  # index: E + 1 = 9 → needs heads dividing 9
    model = small_model(n_heads=3 if positional == "index" else 2, d_model=d_model, positional=positional)
    ids = torch.tensor([[2, 3, 4, 5, 6], [7, 8, 0, 0, 0], [9, 1, 10, 0, 0]])
    mask = ids != 0
    logits, attn = model(ids)
    h = model.cfg.n_heads
    assert logits.shape == (3, 3)
    assert attn.shape == (2, 3, h, 5, 5)
    assert torch.isfinite(logits).all()
    assert torch.isfinite(attn).all()
    real_rows = mask[None, :, None, :].expand(2, 3, h, 5)  # (L, B, H, T): rows of real query tokens
    sums = attn.sum(-1)
    torch.testing.assert_close(sums[real_rows], torch.ones(int(real_rows.sum())))
    padded_keys = (~mask)[None, :, None, None, :].expand_as(attn)
    assert (attn[padded_keys] == 0.0).all()
    assert (attn >= 0).all()


@pytest.mark.parametrize("pooling", ["mean", "max", "first"])
@pytest.mark.parametrize("positional", ["sinusoidal", "index", "learned"])
def test_padding_does_not_change_logits(pooling: str, positional: str) -> None:
    d_model = 9 if positional == "index" else 8
    model = small_model(
        seed=4, pooling=pooling, positional=positional, d_model=d_model, n_heads=3 if positional == "index" else 2
    ).double()
    short = torch.tensor([[5, 3, 9]])
    long = torch.tensor([[2, 4, 6, 8, 10, 11, 7]])
    alone, attn_alone = model(short)
    batch = torch.cat([torch.cat([short, torch.zeros(1, 4, dtype=torch.long)], dim=1), long])
    together, attn_batch = model(batch)
    torch.testing.assert_close(together[0], alone[0], **TIGHT)
    torch.testing.assert_close(together[1], model(long)[0][0], **TIGHT)
    torch.testing.assert_close(attn_batch[:, 0, :, :3, :3], attn_alone[:, 0], **TIGHT)
    assert (attn_batch[:, 0, :, :, 3:] == 0.0).all()


def test_explicit_mask_equals_default_mask() -> None:
    model = small_model(seed=5)
    ids = torch.tensor([[2, 3, 0], [4, 0, 0]])
    a, wa = model(ids)
    b, wb = model(ids, mask=ids != 0)
    assert torch.equal(a, b) and torch.equal(wa, wb)


def test_need_weights_false() -> None:
    model = small_model(seed=6)
    ids = torch.tensor([[2, 3, 4], [5, 6, 0]])
    logits, attn = model(ids)
    logits2, attn2 = model(ids, need_weights=False)
    assert attn is not None and attn2 is None
    assert torch.equal(logits, logits2)


def test_eval_deterministic_train_uses_dropout() -> None:
    model = small_model(seed=7, dropout=0.3)
    ids = torch.tensor([[2, 3, 4, 5, 6, 7]])
    assert torch.equal(model(ids)[0], model(ids)[0])
    model.train()
    outs = []
    for s in range(4):
        torch.manual_seed(s)
        outs.append(model(ids)[0])
    assert any(not torch.allclose(outs[0], o) for o in outs[1:])


def test_unknown_and_extra_ids() -> None:
    model = small_model(seed=8, positional="none", n_layers=1)
    with torch.no_grad():
        model.unk.copy_(torch.arange(8.0))
    extra = torch.randn(2, 8)
    ids = torch.tensor([[1, 2, 12, 13]])
    x = model.embed(ids, extra)
    assert torch.equal(x[0, 0], torch.arange(8.0))  # <unk> = the learned vector
    assert torch.equal(x[0, 1], model.embedding.weight[2])
    assert torch.equal(x[0, 2:], extra)
    logits, _ = model(ids, extra=extra)
    assert logits.shape == (1, 3)


def test_vectors_shape_checked_and_copied() -> None:
    cfg = ModelConfig(**{**SMALL, "n_classes": 2})
    with pytest.raises(ValueError, match="vectors shape"):
        AttentionClassifier(cfg, torch.zeros(cfg.vocab_size + 1, cfg.embedding_dim))
    vectors = torch.randn(cfg.vocab_size, cfg.embedding_dim)
    model = AttentionClassifier(cfg, vectors)
    assert torch.equal(model.embedding.weight, vectors)
    assert model.embedding.weight.requires_grad is not cfg.freeze_embeddings
    frozen = AttentionClassifier(ModelConfig(**{**SMALL, "freeze_embeddings": True}))
    assert not frozen.embedding.weight.requires_grad
    unfrozen = AttentionClassifier(ModelConfig(**{**SMALL, "freeze_embeddings": False}))
    assert unfrozen.embedding.weight.requires_grad


@pytest.mark.parametrize("positional", ["sinusoidal", "learned"])
def test_too_long_for_positional_table(positional: str) -> None:
    model = small_model(positional=positional, max_len=4)
    assert model(torch.tensor([[2, 3, 4, 5]]))[0].shape == (1, 3)
    with pytest.raises(ValueError, match="max_len"):
        model(torch.tensor([[2, 3, 4, 5, 6]]))


def test_positional_options_change_the_input() -> None:
    ids = torch.tensor([[2, 3, 4]])
    none = small_model(seed=9, positional="none")
    assert none.pos_embedding is None and not hasattr(none, "pos_table")
    learned = small_model(seed=9, positional="learned")
    assert learned.pos_embedding is not None and learned.pos_embedding.weight.shape == (16, 8)
    sinus = small_model(seed=9, positional="sinusoidal")
    torch.testing.assert_close(sinus.pos_table, sinusoidal_table(16, 8))
    # "none" is order-blind with mean pooling: permuting tokens leaves the logits unchanged
    perm = torch.tensor([[4, 2, 3]])
    torch.testing.assert_close(none(ids)[0], none(perm)[0], rtol=1e-5, atol=1e-6)
    assert not torch.allclose(sinus(ids)[0], sinus(perm)[0])
    assert not torch.allclose(learned(ids)[0], learned(perm)[0])


# --- pooling ---------------------------------------------------------------------------------


def test_pool() -> None:
    x = torch.tensor([[[1.0, -2.0], [3.0, 4.0], [100.0, 100.0]], [[-5.0, 6.0], [0.0, 0.0], [0.0, 0.0]]])
    mask = torch.tensor([[True, True, False], [True, False, False]])
    assert torch.equal(pool(x, mask, "mean"), torch.tensor([[2.0, 1.0], [-5.0, 6.0]]))
    assert torch.equal(pool(x, mask, "max"), torch.tensor([[3.0, 4.0], [-5.0, 6.0]]))
    assert torch.equal(pool(x, mask, "first"), torch.tensor([[1.0, -2.0], [-5.0, 6.0]]))


# --- ModelConfig -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        {"n_heads": 3, "d_model": 64},
        {"n_heads": 4, "d_model": None, "positional": "index", "embedding_dim": 50},  # 51 % 4
        {"positional": "rotary"},
        {"pooling": "sum"},
        {"init": "xavier"},
        {"dropout": 1.0},
        {"dropout": -0.1},
        {"n_classes": 1},
        {"n_layers": 0},
        {"n_heads": 0},
        {"n_layers": 13},
        {"n_heads": 32, "d_model": 64},
        {"embedding_dim": 0},
        {"d_ff": 0},
        {"max_len": 0},
        {"d_model": -4},
        {"d_model": 0},
        {"frozen_layers": 3, "n_layers": 2},
        {"frozen_layers": -1},
        {"base": "minilm", "positional": "sinusoidal"},
        {"base": "minilm", "positional": "learned", "pooling": "attention"},
    ],
)
def test_config_validation(bad: dict) -> None:
    with pytest.raises(ConfigError) as info:
        ModelConfig(**bad)
    assert isinstance(info.value, ValueError)
    assert info.value.hint  # every config error says how to fix it


@pytest.mark.parametrize("cfg", [DEFAULT.model, SEED.model, ModelConfig(**SMALL, pooling="max", positional="none")])
def test_config_round_trip(cfg: ModelConfig) -> None:
    data = cfg.to_dict()
    assert isinstance(data, dict) and data["pooling"] == cfg.pooling
    assert ModelConfig.from_dict(data) == cfg
    assert ModelConfig.from_dict(dict(data)).to_dict() == data


def test_config_rejects_unknown_keys() -> None:
    with pytest.raises(ConfigError, match="unknown model setting"):
        ModelConfig.from_dict({**DEFAULT.model.to_dict(), "n_hedas": 2})


def test_model_dim_and_input_dim() -> None:
    assert DEFAULT.model.input_dim == 50 and DEFAULT.model.model_dim == 64
    assert SEED.model.input_dim == 51 and SEED.model.model_dim == 51
    assert ModelConfig(d_model=None, positional="sinusoidal", n_heads=5).model_dim == 50


def test_with_data_revalidates() -> None:
    cfg = with_data(DEFAULT.model, n_classes=4, vocab_size=99, embedding_dim=50)
    assert (cfg.n_classes, cfg.vocab_size, cfg.embedding_dim) == (4, 99, 50)
    assert cfg.n_layers == DEFAULT.model.n_layers
    with pytest.raises(ConfigError):
        with_data(DEFAULT.model, n_classes=1, vocab_size=99, embedding_dim=50)


# --- sinusoidal table ------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [4, 7, 51, 64])
def test_sinusoidal_table(dim: int) -> None:
    table = sinusoidal_table(10, dim)
    assert table.shape == (10, dim)
    assert torch.equal(table[0, 0::2], torch.zeros((dim + 1) // 2))  # pos 0: sin 0
    assert torch.equal(table[0, 1::2], torch.ones(dim // 2))  # pos 0: cos 0
    assert table[1, 0].item() == pytest.approx(math.sin(1.0), abs=1e-6)
    assert table[3, 1].item() == pytest.approx(math.cos(3.0), abs=1e-6)
    i = 1  # the second frequency: 10000^(-2/dim)
    if 2 * i + 1 < dim:
        w = 10000 ** (-2 * i / dim)
        assert table[5, 2 * i].item() == pytest.approx(math.sin(5 * w), abs=1e-6)
        assert table[5, 2 * i + 1].item() == pytest.approx(math.cos(5 * w), abs=1e-6)
    assert (table.abs() <= 1).all()


# --- the seed preset (the Julia post's model) ------------------------------------------------

SENTENCE = ["very", "sad", "as", "they", "both", "fail"]


def seed_model(vocab_size: int = 10, seed: int = 0) -> AttentionClassifier:
    torch.manual_seed(seed)
    cfg = with_data(SEED.model, n_classes=3, vocab_size=vocab_size, embedding_dim=50)
    return AttentionClassifier(cfg, torch.randn(vocab_size, 50))


def test_seed_preset_architecture() -> None:
    model = seed_model()
    cfg = model.cfg
    assert (cfg.input_dim, cfg.model_dim, cfg.n_heads, cfg.n_layers) == (51, 51, 1, 1)
    assert isinstance(model.input_proj, nn.Identity)
    assert isinstance(model.final_norm, nn.Identity)
    assert model.pos_embedding is None and not hasattr(model, "pos_table")
    (block,) = model.blocks
    attn = block.attn
    assert attn.n_heads == 1 and attn.d_head == 51
    assert isinstance(attn.out_proj, nn.Identity)
    assert isinstance(block.norm1, nn.Identity) and isinstance(block.norm2, nn.Identity)
    assert block.ff is None
    assert not any(isinstance(m, nn.LayerNorm) for m in model.modules())
    assert model.head.in_features == 51 and model.head.out_features == 3

    # no residual: the block's output is the attention's output
    x = torch.randn(2, 4, 51)
    with torch.no_grad():
        torch.testing.assert_close(block(x, None, False)[0], attn(x)[0], rtol=0, atol=0)

    ids = torch.tensor([[2, 3, 4, 5], [6, 7, 0, 0]])
    feats = model.embed(ids)
    assert feats.shape == (2, 4, 51)
    assert torch.equal(feats[..., -1], torch.arange(4.0).expand(2, 4))  # position index 0, 1, 2, …
    assert torch.equal(feats[..., :50], model.embedding.weight[ids])


def test_seed_preset_init() -> None:
    model = seed_model(seed=1)
    attn = model.blocks[0].attn
    for proj in (attn.q_proj, attn.k_proj, attn.v_proj, model.head):
        assert proj.bias is not None
        assert torch.equal(proj.bias, torch.zeros_like(proj.bias))
    assert torch.equal(attn.v_proj.weight, attn.k_proj.weight)  # V = K at init ...
    assert attn.v_proj.weight.data_ptr() != attn.k_proj.weight.data_ptr()  # ... but not the same tensor
    assert not torch.equal(attn.q_proj.weight, attn.k_proj.weight)
    for w, tol in ((attn.q_proj.weight, 0.1), (attn.k_proj.weight, 0.1), (model.head.weight, 0.3)):
        assert w.shape[1] == 51
        assert abs(w.std().item() - 0.01) < 0.01 * tol, w.std()
        assert abs(w.mean().item()) < 4 * 0.01 / math.sqrt(w.numel())


def test_seed_preset_frozen_parts() -> None:
    model = seed_model(seed=2)
    assert not model.head.weight.requires_grad and not model.head.bias.requires_grad
    assert not model.embedding.weight.requires_grad
    attn = model.blocks[0].attn
    logits, _ = model(torch.tensor([[2, 3, 4]]))
    torch.nn.functional.cross_entropy(logits, torch.tensor([1])).backward()
    assert model.head.weight.grad is None and model.embedding.weight.grad is None
    for proj in (attn.q_proj, attn.k_proj, attn.v_proj):
        assert proj.weight.grad is not None and proj.weight.grad.abs().sum() > 0


def julia_forwardprop(x: np.ndarray, Q, Qb, K, Kb, V, Vb, W, b) -> tuple[np.ndarray, np.ndarray]:
    """The post's forwardprop, columns = tokens, but scaled by √d_k = √51 (not √length(q)).

    Returns the pooled (pre-softmax) scores p (3,) and α (n, n).
    """
    n = x.shape[1]
    x = np.vstack([x, np.arange(n)[None, :]])  # vcat(x, 0:n-1)
    q, k, v = Q @ x + Qb, K @ x + Kb, V @ x + Vb
    e = q.T @ k / np.sqrt(q.shape[0])
    alpha = np.zeros(e.shape)
    for row in range(e.shape[0]):
        r = e[row] - e[row].max()
        alpha[row] = np.exp(r) / np.exp(r).sum()
    z = v @ alpha.T
    f = W @ z + b
    return f.sum(axis=1) / n, alpha


@pytest.mark.parametrize("random_biases", [False, True])
def test_seed_forward_equals_julia_forwardprop(random_biases: bool) -> None:
    emb = load_embeddings()
    vectors = np.zeros((2 + len(SENTENCE), 50), dtype=np.float32)
    vectors[2:] = emb.vectors(SENTENCE)
    cfg = with_data(SEED.model, n_classes=3, vocab_size=len(vectors), embedding_dim=50)
    torch.manual_seed(12)
    model = AttentionClassifier(cfg, torch.from_numpy(vectors)).double().eval()
    attn = model.blocks[0].attn
    if random_biases:  # zero biases would hide a missing or misplaced bias term
        with torch.no_grad():
            for p in (attn.q_proj.bias, attn.k_proj.bias, attn.v_proj.bias, model.head.bias):
                p.normal_(0.0, 0.5)
            attn.v_proj.weight.normal_(0.0, 0.01)  # and V ≠ K after training

    def np_(p: torch.Tensor) -> np.ndarray:
        return p.detach().numpy()

    params = [
        np_(attn.q_proj.weight), np_(attn.q_proj.bias)[:, None],
        np_(attn.k_proj.weight), np_(attn.k_proj.bias)[:, None],
        np_(attn.v_proj.weight), np_(attn.v_proj.bias)[:, None],
        np_(model.head.weight), np_(model.head.bias)[:, None],
    ]  # fmt: skip

    ids = torch.arange(2, 2 + len(SENTENCE))[None, :]
    logits, weights = model(ids)
    p, alpha = julia_forwardprop(vectors[2:].T.astype(np.float64), *params)
    np.testing.assert_allclose(logits[0].detach().numpy(), p, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(weights[0, 0, 0].detach().numpy(), alpha, rtol=1e-10, atol=1e-12)
    probs = torch.softmax(logits, -1)[0].detach().numpy()
    np.testing.assert_allclose(probs, np.exp(p - p.max()) / np.exp(p - p.max()).sum(), rtol=1e-10)

    # the same sentence padded in a batch with a longer one gives the same numbers
    longer = torch.tensor([[2, 3, 4, 5, 6, 7, 2, 3]])
    padded = torch.cat([torch.cat([ids, torch.zeros(1, 2, dtype=torch.long)], 1), longer])
    logits_b, weights_b = model(padded)
    torch.testing.assert_close(logits_b[0], logits[0], **TIGHT)
    torch.testing.assert_close(weights_b[0, 0, 0, :6, :6], weights[0, 0, 0], **TIGHT)

    # single word: the post reshapes a 1-D x to one column
    one, w_one = model(ids[:, :1])
    p1, a1 = julia_forwardprop(vectors[2:3].T.astype(np.float64), *params)
    np.testing.assert_allclose(one[0].detach().numpy(), p1, rtol=1e-10, atol=1e-12)
    assert w_one.shape == (1, 1, 1, 1, 1) and w_one.item() == 1.0 == a1.item()


def test_max_pooling_of_an_all_padding_row_is_finite() -> None:
    model = AttentionClassifier(ModelConfig(vocab_size=10, embedding_dim=8, d_model=8, n_heads=2, pooling="max")).eval()
    logits, _ = model(torch.tensor([[2, 3], [0, 0]]))
    assert torch.isfinite(logits).all()


# --- forward from features: the one copy of the layers' order --------------------------------


def reference_forward(model: AttentionClassifier, ids: torch.Tensor, mask: torch.Tensor, extra: torch.Tensor):
    """The classifier's forward pass spelled out from its submodules, as the spec of forward_features."""
    t = ids.shape[1]
    x = model.input_proj(model.embed(ids, extra))
    if model.cfg.positional == "sinusoidal":
        x = x + model.pos_table[:t]
    elif model.cfg.positional == "learned":
        x = x + model.pos_embedding.weight[:t]
    x = model.drop(x)
    cfg = model.cfg
    if cfg.local_conv:  # a window of local_conv tokens, padding zeroed before and after: x (+) GELU(conv(x))
        keep = mask[..., None].to(x.dtype)
        x = x * keep
        conv = model.local_conv.conv
        groups = x.shape[-1] if cfg.local_conv_kind == "depthwise" else 1
        window = F.conv1d(x.transpose(1, 2), conv.weight, conv.bias, padding=cfg.local_conv // 2, groups=groups)
        window = F.gelu(window.transpose(1, 2))  # (B, T, D)
        x = (window if cfg.local_conv_kind == "plain" else x + window) * keep
    entered = x  # the pooling's keys with pooling_keys="input": the tokens as they enter the layers
    weights = []
    for block in model.blocks:
        x, w = block(x, mask[:, None, None, :], True)
        weights.append(w)
    x = model.final_norm(x)
    if cfg.pooling == "attention":  # one learned query per head over the tokens; its row drawn for every query
        query = model.pooling.query.expand(x.shape[0], 1, -1)
        keys = model.pooling.key_norm(entered) if cfg.pooling_keys == "input" else x
        pooled, w = model.pooling.attn(query, keys, mask[:, None, None, :], value=x)
        pooled = pooled[:, 0]
        weights.append(w.expand(-1, -1, x.shape[1], -1))
    else:
        pooled = pool(x, mask, cfg.pooling)
    return model.head(model.drop(pooled)), torch.stack(weights)


FORWARD_CONFIGS = {
    "default preset": with_data(DEFAULT.model, n_classes=3, vocab_size=12, embedding_dim=8),
    "seed preset": with_data(SEED.model, n_classes=3, vocab_size=12, embedding_dim=8),
    "learned positions": ModelConfig(**{**SMALL, "n_classes": 3, "positional": "learned"}),
    "index positions": ModelConfig(**{**SMALL, "n_classes": 3, "positional": "index", "d_model": None, "n_heads": 3}),
    "max pooling": ModelConfig(**{**SMALL, "n_classes": 3, "pooling": "max"}),
    "dropout in eval": ModelConfig(**{**SMALL, "n_classes": 3, "dropout": 0.3}),
    "attention pooling": ModelConfig(**{**SMALL, "n_classes": 3, "pooling": "attention"}),
    "attention pooling, input keys": ModelConfig(**{**SMALL, "n_classes": 3, "pooling": "attention",
                                                    "pooling_keys": "input"}),
    "plain local conv": ModelConfig(**{**SMALL, "n_classes": 3, "local_conv": 3, "local_conv_kind": "plain"}),
    "depthwise local conv": ModelConfig(**{**SMALL, "n_classes": 3, "local_conv": 5, "local_conv_kind": "depthwise"}),
}


@pytest.mark.parametrize("name", FORWARD_CONFIGS)
def test_forward_is_forward_features_of_embed_to_the_bit(name: str) -> None:
    torch.manual_seed(3)
    model = AttentionClassifier(FORWARD_CONFIGS[name], torch.randn(12, 8)).eval()
    g = torch.Generator().manual_seed(4)
    if model.local_conv is not None:  # the default preset's window starts at 0: give it weights that show
        with torch.no_grad():
            model.local_conv.conv.weight.normal_(0, 0.3, generator=g)
            model.local_conv.conv.bias.normal_(0, 0.3, generator=g)
    ids = torch.randint(1, 12, (3, 6), generator=g)
    ids[1, 4:], ids[2, 2:] = 0, 0  # padding
    ids[0, 3] = 12  # a word outside the run vocabulary, read from `extra`
    extra = torch.randn(1, 8, generator=g)
    mask = ids != 0
    want_logits, want_attn = reference_forward(model, ids, mask, extra)
    for logits, attn in (model(ids, mask, extra), model(ids, extra=extra), model.forward_features(model.embed(ids, extra), mask)):
        assert torch.equal(logits, want_logits)
        assert torch.equal(attn, want_attn)
    assert torch.equal(model(ids, mask, extra, need_weights=False)[0], want_logits)


def test_frozen_layers_keep_the_lowest_layers_as_they_are() -> None:
    torch.manual_seed(0)
    model = AttentionClassifier(ModelConfig(**{**SMALL, "n_layers": 3, "frozen_layers": 2}))
    trains = {name.split(".")[1] for name, p in model.named_parameters() if name.startswith("blocks.") and p.requires_grad}
    assert trains == {"2"}  # only the top layer's parameters
    assert model.head.weight.requires_grad and model.embedding.weight.requires_grad


@pytest.mark.parametrize("name", [*FORWARD_CONFIGS, "first-token pooling"])
def test_only_real_tokens_through_the_layers_give_the_same_logits(name: str) -> None:
    """enter_rows packs each row's real tokens before the layers: the logits of every row, one with no real token
    included, are those of the padded rows (float64: to rounding)."""
    cfg = FORWARD_CONFIGS.get(name) or ModelConfig(**{**SMALL, "n_classes": 3, "pooling": "first", "local_conv": 3})
    torch.manual_seed(5)
    model = AttentionClassifier(cfg, torch.randn(12, 8)).eval().double()
    g = torch.Generator().manual_seed(6)
    if model.local_conv is not None:  # weights that show: a packed row must still see its masked neighbours as gaps
        with torch.no_grad():
            model.local_conv.conv.weight.normal_(0, 0.3, generator=g)
            model.local_conv.conv.bias.normal_(0, 0.3, generator=g)
    features = model.embed(torch.randint(2, 12, (9, 7), generator=g))
    mask = torch.rand(9, 7, generator=g) < 0.5
    mask[0], mask[1], mask[2, 1:] = False, True, False  # no real token; all real; the first alone
    mask[3, 0] = False  # the first token masked (with first-token pooling it is still what is read)
    # rows as masks of a few sentences: the projection once a sentence, the window at the kept tokens
    sentences = torch.cat([features[:3], features[5:6]])  # rows 0–2 and 5 are these; rows 3, 4, 6–8 repeat them
    sentence = torch.tensor([0, 1, 2, 0, 1, 3, 3, 2, 0])
    rows = sentences[sentence]
    want, _ = model.forward_features(rows, mask, need_weights=False)
    got, _ = model.forward_from(model.enter_rows(sentences, sentence, mask), need_weights=False)
    torch.testing.assert_close(got, want, **TIGHT)
    with pytest.raises(ValueError, match="eval mode"):
        model.train().enter_rows(sentences, sentence, mask)


@pytest.mark.parametrize("name", ["default preset", "attention pooling, input keys", "max pooling"])
def test_the_maps_above_a_kept_hidden_state_give_the_full_pass_to_the_bit(name: str) -> None:
    """forward_from(advance(enter(…), layer)) with an edit at that layer or above is forward_features with it."""
    torch.manual_seed(7)
    model = AttentionClassifier(FORWARD_CONFIGS[name], torch.randn(12, 8)).eval()
    g = torch.Generator().manual_seed(8)
    ids = torch.randint(2, 12, (4, 6), generator=g)
    ids[1, 3:] = 0
    features, mask = model.embed(ids), ids != 0
    entered = model.enter(features, mask)
    for layer in range(model.cfg.n_attention_maps):
        def edit(at: int, w: torch.Tensor, key_mask: torch.Tensor, layer=layer) -> torch.Tensor:
            return w.flip(-1) * key_mask if at == layer else w  # an edit of this map alone

        want_logits, want_maps = model.forward_features(features, mask, edit_attention=edit)
        hidden = model.advance(entered, layer)
        assert hidden.layer == layer
        logits, maps = model.forward_from(hidden, edit_attention=edit)
        assert torch.equal(logits, want_logits) and torch.equal(maps, want_maps[layer:])
        some = torch.tensor([3, 1, 1])  # rows picked (another batch: to float rounding)
        cut, _ = model.forward_from(hidden.rows(some, 6), edit_attention=edit, need_weights=False)
        torch.testing.assert_close(cut, want_logits[some], rtol=1e-5, atol=1e-6)
    assert not torch.equal(want_logits, model.forward_features(features, mask)[0])  # the edit changed something
