"""Tests for attention_core.attention: attention_steps, the masks and MultiHeadAttention.

References are PyTorch's own ``F.scaled_dot_product_attention`` and ``nn.MultiheadAttention``
(given the same weights); comparisons are in float64 so tolerances can be tight.
"""

from __future__ import annotations

import math
import zlib

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import Tensor, nn

from attention_core.attention import AttentionSteps, MultiHeadAttention, attention_steps, causal_mask, padding_mask

F64 = torch.float64
TIGHT = {"rtol": 1e-10, "atol": 1e-12}


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def randn(*shape: int, g: torch.Generator, requires_grad: bool = False) -> Tensor:
    return torch.randn(*shape, generator=g, dtype=F64).requires_grad_(requires_grad)


def make_mask(kind: str, q_shape: tuple[int, ...], s: int, g: torch.Generator) -> Tensor | None:
    """A boolean mask (True = may attend) broadcastable to (…, T, S); every row keeps ≥ 1 key."""
    t, batch = q_shape[-2], q_shape[:-2]
    if kind == "none":
        return None
    if kind == "causal":
        return causal_mask(t, s)
    if kind == "padding":
        lengths = torch.randint(1, s + 1, (batch[0],), generator=g)
        lengths[0] = s  # one full-length sequence, as in a real padded batch
        mask = padding_mask(lengths, s)  # (B, 1, 1, S)
        return mask.view(batch[0], *([1] * (len(q_shape) - 2)), s)
    if kind == "random":
        mask = torch.rand(*batch, t, s, generator=g) < 0.5
        keep = torch.randint(0, s, (*batch, t, 1), generator=g)
        return mask.scatter(-1, keep, True)
    raise AssertionError(kind)


# (q shape, S, Dv): self-attention, cross-attention (T != S, Dv != Dk), extra batch dims, 3-D
SHAPES = [
    pytest.param((2, 3, 5, 4), 5, 4, id="self-BHTD"),
    pytest.param((2, 3, 4, 6), 7, 5, id="cross-T4-S7-Dk6-Dv5"),
    pytest.param((2, 2, 3, 6, 4), 3, 2, id="cross-5d-batch"),
    pytest.param((3, 5, 4), 6, 3, id="cross-3d"),
]
MASKS = ["none", "causal", "padding", "random"]


# --- attention_steps against F.scaled_dot_product_attention ----------------------------------


@pytest.mark.parametrize("kind", MASKS)
@pytest.mark.parametrize(("q_shape", "s", "dv"), SHAPES)
def test_matches_sdpa_outputs_and_gradients(q_shape: tuple[int, ...], s: int, dv: int, kind: str) -> None:
    g = gen(zlib.crc32(repr((q_shape, s, dv, kind)).encode()))
    *batch, t, dk = q_shape
    q = randn(*q_shape, g=g, requires_grad=True)
    k = randn(*batch, s, dk, g=g, requires_grad=True)
    v = randn(*batch, s, dv, g=g, requires_grad=True)
    mask = make_mask(kind, q_shape, s, g)

    steps = attention_steps(q, k, v, mask=mask)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert steps.output.shape == ref.shape == (*batch, t, dv)

    rows = torch.ones(steps.weights.shape[:-1], dtype=torch.bool)
    if mask is not None:
        rows = mask.expand_as(steps.weights).any(-1)
    assert rows.all(), "these masks keep at least one key in every row"
    torch.testing.assert_close(steps.output[rows], ref[rows], **TIGHT)

    # the weights SDPA used: recompute them from the definition
    expected_w = torch.softmax((q @ k.transpose(-2, -1)) / math.sqrt(dk) + _additive(mask), dim=-1)
    torch.testing.assert_close(steps.weights, expected_w, **TIGHT)

    grad_out = randn(*ref.shape, g=g)
    ours = torch.autograd.grad(steps.output, (q, k, v), grad_out)
    theirs = torch.autograd.grad(ref, (q, k, v), grad_out)
    for name, a, b in zip("qkv", ours, theirs, strict=True):
        assert torch.isfinite(a).all(), name
        torch.testing.assert_close(a, b, **TIGHT, msg=lambda m, name=name: f"grad {name}: {m}")


def _additive(mask: Tensor | None) -> Tensor | float:
    if mask is None:
        return 0.0
    return torch.zeros(mask.shape, dtype=F64).masked_fill(~mask, float("-inf"))


@pytest.mark.parametrize("scale", [1.0, 0.25, 3.0])
def test_explicit_scale_matches_sdpa(scale: float) -> None:
    g = gen(7)
    q, k, v = randn(2, 4, 3, g=g), randn(2, 6, 3, g=g), randn(2, 6, 5, g=g)
    mask = causal_mask(4, 6)
    steps = attention_steps(q, k, v, mask=mask, scale=scale)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
    torch.testing.assert_close(steps.output, ref, **TIGHT)
    assert torch.equal(steps.scaled, steps.scores * scale)


# --- fully masked rows ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, F64])
def test_fully_masked_rows_are_zero_and_finite(dtype: torch.dtype) -> None:
    g = gen(3)
    b, t, s, d = 2, 4, 5, 3
    q = torch.randn(b, t, d, generator=g, dtype=dtype, requires_grad=True)
    k = torch.randn(b, s, d, generator=g, dtype=dtype, requires_grad=True)
    v = torch.randn(b, s, d + 1, generator=g, dtype=dtype, requires_grad=True)
    mask = torch.rand(b, t, s, generator=g) < 0.6
    mask[:, :, 0] = True
    mask[0, 1] = False  # two fully masked query rows
    mask[1, 3] = False
    dead = ~mask.any(-1)
    assert dead.sum() == 2

    steps = attention_steps(q, k, v, mask=mask)
    for name, x in steps._asdict().items():
        assert not torch.isnan(x).any(), name
    assert torch.equal(steps.weights[dead], torch.zeros(2, s, dtype=dtype))
    assert torch.equal(steps.output[dead], torch.zeros(2, d + 1, dtype=dtype))
    assert torch.isneginf(steps.masked[dead]).all()

    live = ~dead
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    tol = TIGHT if dtype == F64 else {"rtol": 1e-5, "atol": 1e-6}
    torch.testing.assert_close(steps.output[live], ref[live], **tol)

    grads = torch.autograd.grad((steps.output * torch.randn_like(steps.output)).sum(), (q, k, v))
    for x in grads:
        assert torch.isfinite(x).all()
    assert torch.equal(grads[0][dead], torch.zeros(2, d, dtype=dtype))  # dead queries get no gradient


def filled_three_times(q: Tensor, k: Tensor, v: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    """attention_steps' weights and output as first written: every mask filled in, whether a row is dead or not."""
    masked = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(~mask, float("-inf"))
    weights = torch.softmax(masked.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0), dim=-1).masked_fill(~mask, 0.0)
    return weights, weights @ v


@pytest.mark.parametrize("dtype", [torch.float32, F64])
@pytest.mark.parametrize("kind", ["causal", "padding", "random"])
def test_rows_with_a_key_skip_the_dead_row_fills_and_change_no_bit(dtype: torch.dtype, kind: str) -> None:
    """Where every row allows a key the weights skip two fills: the same bits, forward and backward."""
    g = gen(11)
    q_shape = (3, 2, 6, 4)
    mask = make_mask(kind, q_shape, 6, g)
    answers = []
    for attend in (attention_steps, filled_three_times):
        torch.manual_seed(0)
        q, k, v = (torch.randn(*shape, dtype=dtype, requires_grad=True) for shape in (q_shape, (3, 2, 6, 4), (3, 2, 6, 5)))
        got = attend(q, k, v, mask=mask) if attend is attention_steps else attend(q, k, v, mask)
        weights, output = (got.weights, got.output) if attend is attention_steps else got
        grads = torch.autograd.grad((output * torch.linspace(-1, 1, output.numel()).view_as(output).to(dtype)).sum()
                                    + (weights**2).sum(), (q, k, v))
        answers.append((weights, output, *grads))
    for fast, reference in zip(*answers, strict=True):
        assert torch.equal(fast, reference)


def test_all_keys_masked_everywhere() -> None:
    q, k, v = torch.randn(3, 2), torch.randn(4, 2), torch.randn(4, 3)
    steps = attention_steps(q, k, v, mask=torch.zeros(3, 4, dtype=torch.bool))
    assert torch.equal(steps.weights, torch.zeros(3, 4))
    assert torch.equal(steps.output, torch.zeros(3, 3))


# --- properties of the steps -----------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    b=st.integers(1, 3),
    t=st.integers(1, 6),
    s=st.integers(1, 6),
    dk=st.integers(1, 5),
    dv=st.integers(1, 4),
    p_keep=st.sampled_from([None, 0.0, 0.3, 0.7, 1.0]),
    scale=st.one_of(st.none(), st.floats(0.05, 4.0)),
    seed=st.integers(0, 2**31 - 1),
)
def test_step_properties(
    b: int, t: int, s: int, dk: int, dv: int, p_keep: float | None, scale: float | None, seed: int
) -> None:
    g = gen(seed)
    q, k, v = randn(b, t, dk, g=g) * 3, randn(b, s, dk, g=g) * 3, randn(b, s, dv, g=g)
    mask = None if p_keep is None else torch.rand(b, t, s, generator=g) < p_keep
    steps = attention_steps(q, k, v, mask=mask, scale=scale)
    assert isinstance(steps, AttentionSteps)
    assert steps.scores.shape == steps.scaled.shape == steps.masked.shape == steps.weights.shape == (b, t, s)
    assert steps.output.shape == (b, t, dv)

    expected_scale = 1.0 / math.sqrt(dk) if scale is None else scale
    torch.testing.assert_close(steps.scores, q @ k.transpose(-2, -1), **TIGHT)
    assert torch.equal(steps.scaled, steps.scores * expected_scale)
    w = steps.weights
    assert (w >= 0).all() and (w <= 1).all()
    torch.testing.assert_close(steps.output, w @ v, **TIGHT)

    if mask is None:
        assert torch.equal(steps.masked, steps.scaled)
        torch.testing.assert_close(w.sum(-1), torch.ones(b, t, dtype=F64), **TIGHT)
        return
    assert torch.equal(torch.isneginf(steps.masked), ~mask)
    assert torch.equal(steps.masked[mask], steps.scaled[mask])
    assert (w[~mask] == 0.0).all()
    live = mask.any(-1)
    torch.testing.assert_close(w.sum(-1)[live], torch.ones(int(live.sum()), dtype=F64), **TIGHT)
    assert (w.sum(-1)[~live] == 0.0).all()


def test_default_scale_is_inverse_sqrt_dk() -> None:
    g = gen(11)
    q, k, v = randn(3, 9, g=g), randn(4, 9, g=g), randn(4, 2, g=g)
    default = attention_steps(q, k, v)
    explicit = attention_steps(q, k, v, scale=1 / 3)
    assert torch.equal(default.scaled, explicit.scaled)
    assert torch.equal(default.weights, explicit.weights)


def test_weights_are_exact_softmax_without_mask() -> None:
    x = torch.tensor([[0.43, 0.15, 0.89], [0.55, 0.87, 0.66]], dtype=F64)
    steps = attention_steps(x, x, x, scale=1.0)
    e = torch.exp(x @ x.T)
    torch.testing.assert_close(steps.weights, e / e.sum(-1, keepdim=True), **TIGHT)


# --- masks -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("t", "s"), [(1, 1), (4, 4), (3, 5), (5, 3)])
def test_causal_mask(t: int, s: int) -> None:
    m = causal_mask(t, s)
    assert m.dtype == torch.bool and m.shape == (t, s)
    for i in range(t):
        for j in range(s):
            assert bool(m[i, j]) == (j <= i)
    assert torch.equal(causal_mask(t), causal_mask(t, t))


def test_padding_mask() -> None:
    m = padding_mask(torch.tensor([3, 1, 4]))
    assert m.dtype == torch.bool and m.shape == (3, 1, 1, 4)
    expected = torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0], [1, 1, 1, 1]], dtype=torch.bool)
    assert torch.equal(m[:, 0, 0], expected)
    wide = padding_mask(torch.tensor([2, 1]), s=5)
    assert wide.shape == (2, 1, 1, 5)
    assert wide.sum().item() == 3


def test_padding_mask_zeroes_padded_keys() -> None:
    g = gen(5)
    lengths = torch.tensor([5, 2, 3])
    q, k, v = randn(3, 2, 5, 4, g=g), randn(3, 2, 5, 4, g=g), randn(3, 2, 5, 4, g=g)
    w = attention_steps(q, k, v, mask=padding_mask(lengths)).weights
    for i, n in enumerate(lengths.tolist()):
        assert (w[i, ..., n:] == 0.0).all()
        torch.testing.assert_close(w[i].sum(-1), torch.ones(2, 5, dtype=F64), **TIGHT)


# --- gradcheck and errors --------------------------------------------------------------------


@pytest.mark.parametrize("mask_kind", ["none", "random", "with-dead-row"])
def test_gradcheck(mask_kind: str) -> None:
    g = gen(13)
    q = randn(2, 3, 2, g=g, requires_grad=True)
    k = randn(2, 4, 2, g=g, requires_grad=True)
    v = randn(2, 4, 3, g=g, requires_grad=True)
    mask = None
    if mask_kind != "none":
        mask = make_mask("random", (2, 3, 2), 4, g)
        if mask_kind == "with-dead-row":
            mask[1, 2] = False

    def fn(q: Tensor, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        steps = attention_steps(q, k, v, mask=mask)
        return steps.output, steps.weights

    assert torch.autograd.gradcheck(fn, (q, k, v), eps=1e-6, atol=1e-8)
    assert torch.autograd.gradgradcheck(fn, (q, k, v), eps=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.uint8])
def test_non_bool_mask_raises(dtype: torch.dtype) -> None:
    q = torch.randn(2, 3)
    with pytest.raises(ValueError, match="boolean"):
        attention_steps(q, q, q, mask=torch.ones(2, 2, dtype=dtype))


@pytest.mark.parametrize(
    ("q_shape", "k_shape", "v_shape", "match"),
    [
        ((2, 3), (4, 5), (4, 2), "same last dim"),
        ((2, 2, 3), (2, 4, 3), (2, 5, 3), "same length"),
    ],
)
def test_mismatched_shapes_raise(q_shape: tuple, k_shape: tuple, v_shape: tuple, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        attention_steps(torch.randn(q_shape), torch.randn(k_shape), torch.randn(v_shape))


def test_unbroadcastable_mask_raises_value_error() -> None:
    q, k, v = torch.randn(3, 4), torch.randn(5, 4), torch.randn(5, 2)
    with pytest.raises(ValueError, match="does not broadcast"):
        attention_steps(q, k, v, mask=torch.ones(3, 4, dtype=torch.bool))


# --- MultiHeadAttention against nn.MultiheadAttention ----------------------------------------


def paired_mha(d_model: int, n_heads: int, kdim: int | None, seed: int) -> tuple[MultiHeadAttention, nn.Module]:
    """Ours and PyTorch's multi-head attention with the same (random) weights, in float64."""
    torch.manual_seed(seed)
    ours = MultiHeadAttention(d_model, n_heads, kdim=kdim, vdim=kdim).double()
    theirs = nn.MultiheadAttention(d_model, n_heads, batch_first=True, kdim=kdim, vdim=kdim, dtype=F64)
    with torch.no_grad():
        for p in ours.parameters():  # nn.Linear's default init leaves biases small: make them matter
            p.normal_(0.0, 0.5)
        if kdim is None:
            assert theirs._qkv_same_embed_dim
            theirs.in_proj_weight.copy_(torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight]))
        else:
            assert not theirs._qkv_same_embed_dim
            theirs.q_proj_weight.copy_(ours.q_proj.weight)
            theirs.k_proj_weight.copy_(ours.k_proj.weight)
            theirs.v_proj_weight.copy_(ours.v_proj.weight)
        theirs.in_proj_bias.copy_(torch.cat([ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias]))
        theirs.out_proj.weight.copy_(ours.out_proj.weight)
        theirs.out_proj.bias.copy_(ours.out_proj.bias)
    return ours, theirs


def their_grads(theirs: nn.Module, e: int, cross: bool) -> dict[str, Tensor]:
    b = theirs.in_proj_bias.grad
    if cross:
        w = {"q": theirs.q_proj_weight.grad, "k": theirs.k_proj_weight.grad, "v": theirs.v_proj_weight.grad}
    else:
        full = theirs.in_proj_weight.grad
        w = {"q": full[:e], "k": full[e : 2 * e], "v": full[2 * e :]}
    out = {f"{n}_proj.weight": w[n] for n in "qkv"}
    out |= {"q_proj.bias": b[:e], "k_proj.bias": b[e : 2 * e], "v_proj.bias": b[2 * e :]}
    out |= {"out_proj.weight": theirs.out_proj.weight.grad, "out_proj.bias": theirs.out_proj.bias.grad}
    return out


@pytest.mark.parametrize("mask_kind", ["none", "padding", "causal"])
@pytest.mark.parametrize(
    ("d_model", "n_heads", "kdim", "t", "s"),
    [
        pytest.param(8, 2, None, 5, 5, id="self-8x2"),
        pytest.param(12, 3, None, 4, 4, id="self-12x3"),
        pytest.param(8, 4, 6, 4, 7, id="cross-kdim6"),
        pytest.param(6, 1, 10, 3, 5, id="cross-1head-kdim10"),
    ],
)
def test_mha_matches_torch(d_model: int, n_heads: int, kdim: int | None, t: int, s: int, mask_kind: str) -> None:
    ours, theirs = paired_mha(d_model, n_heads, kdim, seed=d_model * 31 + n_heads)
    ours.eval()
    theirs.eval()
    g = gen(17)
    b = 3
    cross = kdim is not None
    x = randn(b, t, d_model, g=g, requires_grad=True)
    ctx = randn(b, s, kdim, g=g, requires_grad=True) if cross else x

    mask = key_padding = attn_mask = None
    if mask_kind == "padding":
        lengths = torch.tensor([s, 1, max(1, s - 2)])
        mask = padding_mask(lengths, s)  # (B, 1, 1, S), True = may attend
        key_padding = ~mask[:, 0, 0, :]  # (B, S), PyTorch: True = ignore
    elif mask_kind == "causal":
        mask = causal_mask(t, s)
        attn_mask = ~mask  # PyTorch's bool attn_mask: True = not allowed

    out, w = ours(x, ctx if cross else None, mask=mask)
    ref, ref_w = theirs(
        x, ctx, ctx, key_padding_mask=key_padding, attn_mask=attn_mask, need_weights=True, average_attn_weights=False
    )
    assert out.shape == ref.shape == (b, t, d_model)
    assert w.shape == ref_w.shape == (b, n_heads, t, s)
    torch.testing.assert_close(out, ref, **TIGHT)
    torch.testing.assert_close(w, ref_w, **TIGHT)
    if mask is not None:
        assert (w.masked_select(~mask.expand_as(w)) == 0.0).all()

    _, ref_avg = theirs(x, ctx, ctx, key_padding_mask=key_padding, attn_mask=attn_mask, need_weights=True)
    assert ref_avg.shape == (b, t, s)
    torch.testing.assert_close(w.mean(1), ref_avg, **TIGHT)

    grad_out = randn(b, t, d_model, g=g)
    inputs = (x, ctx) if cross else (x,)
    ours.zero_grad()
    theirs.zero_grad()
    ours_in = torch.autograd.grad(out, inputs, grad_out, retain_graph=True)
    theirs_in = torch.autograd.grad(ref, inputs, grad_out, retain_graph=True)
    for a, c in zip(ours_in, theirs_in, strict=True):
        torch.testing.assert_close(a, c, **TIGHT)
    (out * grad_out).sum().backward()
    (ref * grad_out).sum().backward()
    expected = their_grads(theirs, d_model, cross)
    got = dict(ours.named_parameters())
    assert set(got) == set(expected)
    for name, grad in expected.items():
        torch.testing.assert_close(got[name].grad, grad, **TIGHT, msg=lambda m, name=name: f"{name}: {m}")


def test_mha_weights_are_used_for_output() -> None:
    """Without an out projection the output is exactly the heads' weights @ v, concatenated."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(6, 2, out_proj=False).double().eval()
    assert isinstance(mha.out_proj, nn.Identity)
    x = torch.randn(2, 4, 6, dtype=F64)
    out, w = mha(x)
    v = mha.v_proj(x).view(2, 4, 2, 3).transpose(1, 2)
    expected = (w @ v).transpose(1, 2).reshape(2, 4, 6)
    torch.testing.assert_close(out, expected, **TIGHT)


def test_mha_need_weights_false() -> None:
    torch.manual_seed(1)
    mha = MultiHeadAttention(8, 2).eval()
    x = torch.randn(2, 5, 8)
    mask = padding_mask(torch.tensor([5, 3]))
    out, w = mha(x, mask=mask)
    out2, w2 = mha(x, mask=mask, need_weights=False)
    assert w is not None and w.shape == (2, 2, 5, 5)
    assert w2 is None
    assert torch.equal(out, out2)


def test_mha_dropout_only_in_train_mode() -> None:
    torch.manual_seed(2)
    mha = MultiHeadAttention(8, 2, dropout=0.5)
    plain = MultiHeadAttention(8, 2, dropout=0.0)
    plain.load_state_dict(mha.state_dict())
    x = torch.randn(2, 6, 8)

    mha.eval()
    plain.eval()
    a, wa = mha(x)
    b, wb = mha(x)
    assert torch.equal(a, b) and torch.equal(wa, wb)
    assert torch.equal(a, plain(x)[0])

    mha.train()
    torch.manual_seed(10)
    c, _ = mha(x)
    torch.manual_seed(11)
    d, _ = mha(x)
    assert not torch.allclose(c, d)
    assert not torch.allclose(c, a)
    torch.manual_seed(10)
    assert torch.equal(c, mha(x)[0])  # the same seed gives the same dropout

    plain.train()  # dropout 0: train mode changes nothing
    assert torch.equal(plain(x)[0], a)


def test_mha_rejects_indivisible_heads() -> None:
    with pytest.raises(ValueError, match="divisible"):
        MultiHeadAttention(10, 3)


def test_cross_attention_with_separate_value_tensor() -> None:
    mha = MultiHeadAttention(8, 2, kdim=6, vdim=7)
    out, w = mha(torch.randn(1, 3, 8), torch.randn(1, 4, 6), value=torch.randn(1, 4, 7))
    assert out.shape == (1, 3, 8) and w.shape == (1, 2, 3, 4)


def test_heads_that_attend_with_dropped_out_or_edited_weights_skip_the_product_they_would_throw_away(monkeypatch):
    """Training with dropout (the fine-tuned encoder's 0.1) computed weights @ v twice: once in attention_steps, once
    with the dropped-out weights. Now attention_steps is asked for no output then, and the heads' numbers are the same."""
    from attention_core import attention

    asked: list[bool] = []
    real = attention.attention_steps

    def recording(*args, **kwargs):
        asked.append(kwargs.get("need_output", True))
        return real(*args, **kwargs)

    monkeypatch.setattr(attention, "attention_steps", recording)
    torch.manual_seed(0)
    mha = attention.MultiHeadAttention(8, 2, dropout=0.5)
    x = torch.randn(3, 5, 8)
    mha.eval()
    mha(x)
    mha.train()
    torch.manual_seed(1)
    out, w = mha(x)
    assert asked == [True, False]
    q, k, v = (mha._split(proj(x)) for proj in (mha.q_proj, mha.k_proj, mha.v_proj))
    torch.manual_seed(1)
    expected = (attention.dropout(w, 0.5) @ v).transpose(1, 2).reshape(3, 5, 8)
    assert torch.allclose(out, mha.out_proj(expected), atol=1e-6)
    assert real(q, k, v, need_output=False).output.numel() == 0
