"""ModelConfig.pooling_keys: the pooling attention's query compared with the tokens as they entered the layers
("input") or as they left them ("output") — what the map depends on, padding, determinism, save → load,
validation, and the presets and old runs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from attention_core import ModelConfig, TrainConfig, Trainer, load_run, save_run
from attention_core.errors import ConfigError
from attention_core.model import AttentionClassifier
from attention_core.presets import preset

ROOT = Path(__file__).resolve().parents[2]
SMALL = ModelConfig(vocab_size=12, embedding_dim=8, n_layers=2, n_heads=2, d_model=8, d_ff=16, max_len=16,
                    n_classes=3, pooling="attention", pooling_keys="input")


def small_model(cfg: ModelConfig = SMALL) -> AttentionClassifier:
    torch.manual_seed(0)
    return AttentionClassifier(cfg, torch.randn(cfg.vocab_size, cfg.embedding_dim)).eval()


def pooling_map(model: AttentionClassifier, ids: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        _, attn = model(ids)
    return attn[-1][:, :, 0]  # (B, H, T): the query's weights over the tokens


def test_input_keys_make_the_map_independent_of_the_layers_and_the_sum_still_of_their_output() -> None:
    model, ids = small_model(), torch.tensor([[2, 3, 4, 5], [6, 7, 8, 9]])
    before = pooling_map(model, ids)
    logits_before, _ = model(ids)
    with torch.no_grad():
        for p in model.blocks.parameters():
            p.add_(torch.randn_like(p))
    assert torch.allclose(pooling_map(model, ids), before)  # the layers changed, the words as they entered did not
    assert not torch.allclose(model(ids)[0], logits_before)  # what is summed is what the layers made of them
    output_keys = small_model(replace(SMALL, pooling_keys="output"))
    map_before = pooling_map(output_keys, ids)
    with torch.no_grad():
        for p in output_keys.blocks.parameters():
            p.add_(torch.randn_like(p))
    assert not torch.allclose(pooling_map(output_keys, ids), map_before)


def test_padding_gets_no_weight_and_changes_nothing() -> None:
    model = small_model()
    alone = pooling_map(model, torch.tensor([[2, 3, 4]]))
    padded = pooling_map(model, torch.tensor([[2, 3, 4, 0, 0]]))
    assert torch.all(padded[..., 3:] == 0)
    assert torch.allclose(padded[..., :3], alone, atol=1e-6)
    assert torch.allclose(padded.sum(-1), torch.ones(1, SMALL.n_heads))


def test_the_pooling_needs_its_keys_when_it_reads_the_input() -> None:
    model = small_model()
    with pytest.raises(ValueError, match="pass keys"):
        model.pooling(torch.zeros(1, 3, 8), torch.ones(1, 3, dtype=torch.bool))


def test_a_bad_setting_is_refused_with_a_hint_and_other_poolings_ignore_it() -> None:
    with pytest.raises(ConfigError) as err:
        replace(SMALL, pooling_keys="middle")
    assert "pooling_keys" in err.value.message and "output, input" in err.value.hint
    mean = small_model(replace(SMALL, pooling="mean"))  # e.g. the default preset's model with mean pooling
    assert mean.pooling is None and mean(torch.tensor([[2, 3]]))[1].shape[0] == SMALL.n_layers


def test_training_is_deterministic_and_a_run_saves_and_loads(emb, ds, tmp_path) -> None:
    cfg = ModelConfig(n_layers=1, n_heads=2, d_model=16, d_ff=32, pooling="attention", pooling_keys="input")
    train = TrainConfig(epochs=2, batch_size=4, val_fraction=0.25, seed=1)
    a, b = (Trainer(cfg, train, ds, emb).run() for _ in range(2))
    assert [e.train_loss for e in a.history.epochs] == [e.train_loss for e in b.history.epochs]
    run = replace(a, name="keys")
    save_run(run, tmp_path / "r")
    loaded = load_run(tmp_path / "r")
    assert loaded.model_config.pooling_keys == "input"
    for text in ["a great movie", "the worst xqzzy service"]:
        x, y = run.predict(text), loaded.predict(text)
        assert x.probabilities == y.probabilities and x.attention == y.attention


def test_presets_and_old_runs() -> None:
    assert preset("default")[0].pooling_keys == "input"
    assert preset("seed")[0].pooling_keys == "output"
    assert load_run(ROOT / "data" / "seed_run" / "100_epochs").model_config.pooling_keys == "output"  # saved before
