"""The model and training options of issue 15: attention pooling, embedding / word dropout, label smoothing,
the learning-rate schedule and early stopping — shapes, masks, determinism, save → load, validation."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from attention_core import ModelConfig, Run, TrainConfig, Trainer, dataset_from_lists, load_embeddings, load_run, save_run
from attention_core.errors import ConfigError
from attention_core.model import AttentionClassifier
from attention_core.training import lr_factor

ROOT = Path(__file__).resolve().parents[1]
SMALL = {"vocab_size": 12, "embedding_dim": 8, "n_layers": 2, "n_heads": 2, "d_model": 8, "d_ff": 16, "max_len": 16}
POS = ["a great movie", "i love it", "wonderful and fun", "the best food ever", "really good service", "so happy"]
NEG = ["a terrible movie", "i hate it", "awful and boring", "the worst food ever", "really bad service", "so sad"]
NEW_OPTIONS = ModelConfig(n_layers=1, n_heads=2, d_model=16, d_ff=32, dropout=0.1, pooling="attention",
                          embedding_dropout=0.1, word_dropout=0.1)
NEW_TRAINING = {"label_smoothing": 0.1, "lr_schedule": "cosine", "warmup": 0.1, "patience": 2, "embedding_lr": 0.5,
                "average_epochs": 1.0}


def small_model(**overrides: object) -> AttentionClassifier:
    torch.manual_seed(0)
    cfg = ModelConfig(**{**SMALL, "n_classes": 3, **overrides})
    return AttentionClassifier(cfg, torch.randn(cfg.vocab_size, cfg.embedding_dim)).eval()


@pytest.fixture(scope="module")
def emb():
    return load_embeddings()


@pytest.fixture(scope="module")
def ds():
    return dataset_from_lists((POS + NEG) * 3, (["pos"] * 6 + ["neg"] * 6) * 3)


def test_attention_pooling_map_is_the_last_of_the_stack_and_ignores_padding() -> None:
    model = small_model(pooling="attention")
    ids = torch.tensor([[2, 3, 4, 5, 6], [7, 8, 0, 0, 0], [9, 1, 10, 0, 0]])
    mask = ids != 0
    logits, attn = model(ids)
    assert model.cfg.n_attention_maps == 3
    assert logits.shape == (3, 3) and attn.shape == (3, 3, 2, 5, 5)  # 2 layers + the pooling query's map
    pooling = attn[-1]  # (B, H, T, T): every row is the query's weights over the tokens
    assert (pooling == pooling[:, :, :1, :]).all()
    torch.testing.assert_close(pooling.sum(-1), torch.ones(3, 2, 5))
    assert (pooling[(~mask)[:, None, None, :].expand_as(pooling)] == 0).all()
    assert (pooling[mask[:, None, None, :].expand_as(pooling)] > 0).all()


def test_attention_pooling_logits_do_not_depend_on_padding() -> None:
    model = small_model(pooling="attention")
    short, _ = model(torch.tensor([[2, 3, 4]]))
    padded, attn = model(torch.tensor([[2, 3, 4, 0, 0, 0]]))
    torch.testing.assert_close(short, padded)
    assert attn[-1, 0, :, 0, 3:].abs().sum() == 0


def test_word_and_embedding_dropout_act_only_in_training() -> None:
    model = small_model(word_dropout=0.5, embedding_dropout=0.5)
    ids = torch.tensor([[2, 3, 4, 5, 6, 7, 8, 9]])
    a, b = model(ids)[0], model(ids)[0]
    assert torch.equal(a, b)  # eval: nothing dropped
    model.train()
    torch.manual_seed(1)
    c = model(ids)[0]
    torch.manual_seed(1)
    d = model(ids)[0]
    torch.manual_seed(2)
    e = model(ids)[0]
    assert torch.equal(c, d) and not torch.equal(c, e) and not torch.equal(a, c)


def test_word_dropout_reads_words_as_unk_and_never_touches_padding() -> None:
    model = small_model(word_dropout=0.5).train()
    seen = []
    model.embed = lambda ids, extra=None: (seen.append(ids), AttentionClassifier.embed(model, ids, extra))[1]
    ids = torch.tensor([[2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0, 0]] * 20)
    torch.manual_seed(0)
    model(ids)
    read = seen[0]
    assert (read[:, 10:] == 0).all()  # padding stays padding
    changed = read[:, :10] != ids[:, :10]
    assert (read[:, :10][changed] == 1).all()  # a dropped word is read as <unk>
    assert 0.3 < changed.float().mean() < 0.7


@pytest.mark.parametrize(
    "bad",
    [{"pooling": "sum"}, {"embedding_dropout": 1.0}, {"word_dropout": -0.1}, {"word_dropout": 1.5}],
)
def test_bad_model_options_name_the_value(bad: dict) -> None:
    with pytest.raises(ConfigError, match=repr(next(iter(bad.values())))) as info:
        ModelConfig(**bad)
    assert info.value.hint


@pytest.mark.parametrize(
    "bad",
    [{"label_smoothing": 0.5}, {"label_smoothing": -0.1}, {"lr_schedule": "step"}, {"warmup": 1.0}, {"warmup": -0.2},
     {"patience": 0}, {"embedding_lr": 0.0}, {"embedding_lr": 11.0}, {"average_epochs": -1.0}],
)
def test_bad_training_options_name_the_value(bad: dict) -> None:
    with pytest.raises(ConfigError, match=repr(next(iter(bad.values())))) as info:
        TrainConfig(**bad)
    assert info.value.hint


def test_lr_factor_warms_up_then_decays_to_zero() -> None:
    assert lr_factor("constant", 0.0, 100) is None
    cosine, linear, flat = lr_factor("cosine", 0.1, 100), lr_factor("linear", 0.0, 100), lr_factor("constant", 0.2, 10)
    assert [cosine(s) for s in range(10)] == sorted(cosine(s) for s in range(10))  # rising in the warm-up
    assert cosine(10) == 1.0 and cosine(100) == pytest.approx(0.0, abs=1e-12) and cosine(55) == pytest.approx(0.5)
    assert linear(0) == 1.0 and linear(50) == 0.5 and linear(100) == 0.0
    assert flat(1) < 1.0 and flat(2) == flat(9) == 1.0


def test_the_schedule_sets_the_optimizers_learning_rate(ds, emb):
    tc = TrainConfig(epochs=4, batch_size=6, lr=0.01, val_fraction=0.0, lr_schedule="linear")
    trainer = Trainer(NEW_OPTIONS, tc, ds, emb)
    step = trainer._make_step(None)
    rates = []
    for _ in range(6):
        step([0, 1, 2])
        rates.append(step.optimizer.param_groups[0]["lr"])
    steps = 4 * 6  # 4 epochs × 36 rows / 6
    assert rates == pytest.approx([0.01 * (1 - s / steps) for s in range(1, 7)])


def test_embedding_lr_scales_only_the_word_vectors_learning_rate(ds, emb):
    tc = TrainConfig(epochs=2, batch_size=6, lr=0.01, val_fraction=0.0, embedding_lr=0.1, lr_schedule="linear")
    trainer = Trainer(NEW_OPTIONS, tc, ds, emb)
    step = trainer._make_step(None)
    before = trainer.model.embedding.weight.detach().clone()
    step([0, 1, 2])
    groups = step.optimizer.param_groups
    table = [g for g in groups if any(p is trainer.model.embedding.weight for p in g["params"])]
    assert len(table) == 1 and len(table[0]["params"]) == 1
    other = [g for g in groups if g is not table[0]]
    assert table[0]["lr"] == pytest.approx(0.1 * other[0]["lr"])  # the schedule keeps the ratio
    assert not torch.equal(before, trainer.model.embedding.weight)  # the vectors still learn
    frozen = Trainer(replace(NEW_OPTIONS, freeze_embeddings=True), tc, ds, emb)._make_step(None)
    assert len(frozen.optimizer.param_groups) == 1


def test_weight_averaging_changes_what_is_evaluated_and_kept_not_how_training_steps(ds, emb):
    def run(average_epochs: float):
        tc = TrainConfig(epochs=4, batch_size=4, lr=0.02, val_fraction=0.25, average_epochs=average_epochs, snapshots=0)
        return Trainer(NEW_OPTIONS, tc, ds, emb).run()

    plain, averaged = run(0.0), run(2.0)
    assert plain.history.step_losses == averaged.history.step_losses  # each epoch trains on from the trained weights
    assert [e.val_loss for e in plain.history.epochs] != [e.val_loss for e in averaged.history.epochs]
    kept = dict(averaged.model.named_parameters())
    assert any(not torch.equal(p, kept[k]) for k, p in plain.model.named_parameters())


def test_patience_stops_when_validation_loss_stops_improving(ds, emb):
    tc = TrainConfig(epochs=200, batch_size=4, lr=0.05, val_fraction=0.34, patience=2)
    h = Trainer(NEW_OPTIONS, tc, ds, emb).run().history
    assert h.status == "finished" and "validation loss has not improved for 2 epochs" in h.message
    assert len(h.epochs) < 200
    assert len(h.epochs) - h.kept_epoch == 2
    best = min(e.val_loss for e in h.epochs)
    assert h.epochs[h.kept_epoch - 1].val_loss == best  # the first epoch with the lowest loss is kept
    assert all(e.val_loss > best for e in h.epochs[: h.kept_epoch - 1])


def test_same_seed_same_history_with_every_new_option(ds, emb):
    def history(seed: int):
        tc = TrainConfig(epochs=5, batch_size=4, seed=seed, val_fraction=0.25, **NEW_TRAINING)
        return Trainer(NEW_OPTIONS, tc, ds, emb).run().history

    a, b, c = history(3), history(3), history(4)
    assert a.step_losses == b.step_losses and a.probes == b.probes
    assert a.step_losses != c.step_losses


def test_a_run_with_the_new_options_saves_and_loads(ds, emb, tmp_path):
    tc = TrainConfig(epochs=3, batch_size=4, val_fraction=0.25, **NEW_TRAINING)
    run = Run.from_result(Trainer(NEW_OPTIONS, tc, ds, emb).run(), name="new-options")
    save_run(run, tmp_path / "r")
    loaded = load_run(tmp_path / "r")
    assert loaded.model_config == run.model_config and loaded.train_config == run.train_config
    for text in ["a great movie", "the worst xqzzy service"]:
        a, b = run.predict(text), loaded.predict(text)
        assert a.probabilities == b.probabilities and a.attention == b.attention
        assert len(a.attention) == NEW_OPTIONS.n_layers + 1  # the pooling query's map comes last


@pytest.mark.parametrize("name", ["default_run", "seed_run"])
def test_bundled_runs_made_before_the_new_options_still_load(name):
    folder = ROOT / "data" / name
    folder = folder if (folder / "run.json").is_file() or not any(folder.glob("*/")) else next(
        p for p in sorted(folder.iterdir()) if p.is_dir())
    run = load_run(folder)
    assert run.model_config.word_dropout == 0.0 and run.model_config.embedding_dropout == 0.0
    assert run.train_config.patience is None and run.train_config.lr_schedule == "constant"
    p = run.predict("what a great film")
    assert len(p.attention) == run.model_config.n_layers
