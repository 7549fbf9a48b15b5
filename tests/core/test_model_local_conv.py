"""ModelConfig.local_conv: a 1-D convolution over neighbouring tokens before the first attention layer —
shapes, padding (padded positions change nothing in the real tokens' outputs), the window it reads, attention
maps that still sum to 1, determinism, save → load, validation, and old runs / presets unchanged."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from attention_core import ModelConfig, TrainConfig, Trainer, load_run, save_run
from attention_core.errors import ConfigError
from attention_core.model import AttentionClassifier, LocalConv
from attention_core.presets import preset

ROOT = Path(__file__).resolve().parents[2]
SMALL = {"vocab_size": 12, "embedding_dim": 8, "n_layers": 2, "n_heads": 2, "d_model": 8, "d_ff": 16, "max_len": 16,
         "n_classes": 3, "pooling": "attention"}
KINDS = ["residual", "plain", "depthwise"]
CONV = ModelConfig(n_layers=1, n_heads=2, d_model=16, d_ff=32, dropout=0.1, pooling="attention", local_conv=3,
                   word_dropout=0.1, embedding_dropout=0.1)


def small_model(**overrides: object) -> AttentionClassifier:
    torch.manual_seed(0)
    cfg = ModelConfig(**{**SMALL, **overrides})
    return AttentionClassifier(cfg, torch.randn(cfg.vocab_size, cfg.embedding_dim)).eval()


@pytest.mark.parametrize("kind", KINDS)
def test_shapes_and_a_small_parameter_count(kind) -> None:
    model = small_model(local_conv=3, local_conv_kind=kind)
    logits, attn = model(torch.tensor([[2, 3, 4, 5], [6, 7, 0, 0]]))
    assert logits.shape == (2, 3) and attn.shape == (3, 2, 2, 4, 4)  # 2 layers + the pooling query's map
    d64 = AttentionClassifier(ModelConfig(local_conv=3, local_conv_kind=kind))
    n = sum(p.numel() for p in d64.local_conv.parameters())
    assert n == {"residual": 64 * 64 * 3 + 64, "plain": 64 * 64 * 3 + 64, "depthwise": 64 * 3 + 64}[kind]
    assert small_model().local_conv is None  # off by default: no extra parameters


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("width", [3, 5])
def test_padding_changes_nothing_in_the_real_tokens_outputs(kind, width) -> None:
    model = small_model(local_conv=width, local_conv_kind=kind)
    alone, alone_attn = model(torch.tensor([[2, 3, 4]]))
    padded, padded_attn = model(torch.tensor([[2, 3, 4, 0, 0, 0]]))
    torch.testing.assert_close(alone, padded)
    torch.testing.assert_close(alone_attn, padded_attn[..., :3, :3])
    # in a batch beside a longer sentence, and with garbage vectors at the padded positions
    batch, _ = model(torch.tensor([[2, 3, 4, 0, 0, 0], [5, 6, 7, 8, 9, 10]]))
    torch.testing.assert_close(alone[0], batch[0])
    features = model.embed(torch.tensor([[2, 3, 4, 0, 0, 0]]))
    noisy = features.clone()
    noisy[0, 3:] = torch.randn(3, features.shape[-1]) * 10
    mask = torch.tensor([[True, True, True, False, False, False]])
    torch.testing.assert_close(model.forward_features(noisy, mask)[0], alone)


@pytest.mark.parametrize("kind", KINDS)
def test_each_token_reads_exactly_its_window(kind) -> None:
    torch.manual_seed(0)
    conv = LocalConv(ModelConfig(d_model=8, n_heads=2, local_conv=3, local_conv_kind=kind)).eval()
    x = torch.randn(1, 7, 8)
    mask = torch.ones(1, 7, dtype=torch.bool)
    changed = x.clone()
    changed[0, 3] += 1.0
    moved = (conv(changed, mask) - conv(x, mask)).abs().sum(-1)[0]  # (T,)
    assert (moved[2:5] > 0).all()  # token 3 and its neighbours 2, 4
    assert (moved[[0, 1, 5, 6]] == 0).all()  # nothing outside the window of 3
    out = conv(x, torch.tensor([[True] * 5 + [False] * 2]))
    assert (out[0, 5:] == 0).all()  # padded positions stay zero


def test_the_convolution_changes_the_model_it_is_added_to() -> None:
    ids = torch.tensor([[2, 3, 4, 5]])
    plain = small_model()(ids)[0]
    with_conv = small_model(local_conv=3)
    assert not torch.allclose(plain, with_conv(ids)[0])
    assert not torch.allclose(with_conv(ids)[0], with_conv(torch.tensor([[2, 4, 3, 5]]))[0])


@pytest.mark.parametrize("kind", KINDS)
def test_attention_maps_still_sum_to_one_over_the_real_tokens(kind) -> None:
    model = small_model(local_conv=3, local_conv_kind=kind)
    ids = torch.tensor([[2, 3, 4, 5, 6], [7, 8, 0, 0, 0], [9, 1, 10, 0, 0]])
    _, attn = model(ids)
    torch.testing.assert_close(attn.sum(-1), torch.ones(3, 3, 2, 5))
    padded_keys = (ids == 0)[None, :, None, None, :].expand_as(attn)
    assert (attn[padded_keys] == 0).all()


def test_same_seed_same_run_with_the_convolution(ds, emb) -> None:
    def history(seed: int):
        tc = TrainConfig(epochs=4, batch_size=4, seed=seed, val_fraction=0.25, patience=2, sampling="auto")
        return Trainer(CONV, tc, ds, emb).run().history

    a, b, c = history(3), history(3), history(4)
    assert a.step_losses == b.step_losses and a.probes == b.probes
    assert a.step_losses != c.step_losses


@pytest.mark.parametrize("kind", KINDS)
def test_a_run_with_the_convolution_saves_and_loads(ds, emb, tmp_path, kind) -> None:
    cfg = replace(CONV, local_conv=5, local_conv_kind=kind)
    run = Trainer(cfg, TrainConfig(epochs=2, batch_size=4, val_fraction=0.25), ds, emb).run(name="conv")
    save_run(run, tmp_path / "r")
    loaded = load_run(tmp_path / "r")
    assert loaded.model_config == run.model_config
    assert (loaded.model_config.local_conv, loaded.model_config.local_conv_kind) == (5, kind)
    for text in ["a great movie", "the worst xqzzy service"]:
        a, b = run.predict(text), loaded.predict(text)
        assert a.probabilities == b.probabilities and a.attention == b.attention
        assert len(a.attention) == cfg.n_layers + 1


@pytest.mark.parametrize(
    "bad", [{"local_conv": 2}, {"local_conv": -1}, {"local_conv": 11}, {"local_conv_kind": "wide"}]
)
def test_bad_local_conv_settings_name_the_value_with_a_hint(bad) -> None:
    with pytest.raises(ConfigError, match=repr(next(iter(bad.values())))) as info:
        ModelConfig(**bad)
    assert info.value.hint


def test_old_configs_and_the_seed_run_have_no_window_and_the_default_has_a_trained_one() -> None:
    old = ModelConfig().to_dict()
    del old["local_conv"], old["local_conv_kind"], old["local_conv_zero_init"]  # a run saved before the option
    assert ModelConfig.from_dict(old).local_conv == 0
    assert preset("seed")[0].local_conv == 0
    seed_run = load_run(ROOT / "data" / "seed_run" / "100_epochs")  # saved before the option
    assert seed_run.model_config.local_conv == 0 and seed_run.model.local_conv is None
    default = preset("default")[0]  # issue 15: a 3-word residual window, started at 0
    assert (default.local_conv, default.local_conv_kind, default.local_conv_zero_init) == (3, "residual", True)
    run = load_run(ROOT / "data" / "default_run")  # re-made with that preset: its window was trained and saved
    assert run.model_config.local_conv == 3 and isinstance(run.model.local_conv, LocalConv)
    assert run.model.local_conv.conv.weight.abs().sum() > 0


@pytest.mark.parametrize("kind", ["residual", "depthwise"])
def test_a_zero_initialised_convolution_starts_as_the_model_without_it_and_then_learns(ds, emb, kind) -> None:
    ids = torch.tensor([[2, 3, 4, 5, 0], [6, 7, 8, 9, 10]])
    without = small_model()
    zero = small_model(local_conv=3, local_conv_kind=kind, local_conv_zero_init=True)
    assert (zero.local_conv.conv.weight == 0).all() and (zero.local_conv.conv.bias == 0).all()
    state = {k: v for k, v in zero.state_dict().items() if not k.startswith("local_conv.")}
    assert all(torch.equal(v, without.state_dict()[k]) for k, v in state.items())  # same initial weights
    torch.testing.assert_close(zero(ids)[0], without(ids)[0])
    cfg = replace(CONV, local_conv_kind=kind, local_conv_zero_init=True)
    trained = Trainer(cfg, TrainConfig(epochs=2, batch_size=4, val_fraction=0.0), ds, emb).run().model
    assert trained.local_conv.conv.weight.abs().sum() > 0  # the gradient reaches a zero start


def test_a_plain_convolution_cannot_start_at_zero() -> None:
    with pytest.raises(ConfigError, match="local_conv_zero_init") as info:
        ModelConfig(local_conv=3, local_conv_kind="plain", local_conv_zero_init=True)
    assert "residual" in info.value.hint
