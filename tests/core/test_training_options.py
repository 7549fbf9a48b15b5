"""The model and training options of issue 15: attention pooling, embedding / word dropout, label smoothing,
the learning-rate schedule, early stopping, class-aware sampling and the kept epoch by macro-F1 — shapes, masks,
determinism, save → load, validation."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, replace
from pathlib import Path

import pytest
import torch

from attention_core import ModelConfig, TrainConfig, Trainer, dataset_from_lists, load_run, save_run
from attention_core.errors import ConfigError
from attention_core.metrics import classification_metrics
from attention_core.model import AttentionClassifier
from attention_core.training import EpochRecord, History, epoch_rows, lr_factor, resolved_sampling
from tests.helpers.tiny_data import NEG, POS

ROOT = Path(__file__).resolve().parents[2]
SMALL = {"vocab_size": 12, "embedding_dim": 8, "n_layers": 2, "n_heads": 2, "d_model": 8, "d_ff": 16, "max_len": 16}
NEW_OPTIONS = ModelConfig(n_layers=1, n_heads=2, d_model=16, d_ff=32, dropout=0.1, pooling="attention",
                          embedding_dropout=0.1, word_dropout=0.1)
NEW_TRAINING = {"label_smoothing": 0.1, "lr_schedule": "cosine", "warmup": 0.1, "patience": 2, "embedding_lr": 0.5,
                "average_epochs": 1.0, "sampling": "sqrt", "keep_by": "macro_f1"}


def small_model(**overrides: object) -> AttentionClassifier:
    torch.manual_seed(0)
    cfg = ModelConfig(**{**SMALL, "n_classes": 3, **overrides})
    return AttentionClassifier(cfg, torch.randn(cfg.vocab_size, cfg.embedding_dim)).eval()


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
    model.embed = lambda ids, extra=None, casing=None: (seen.append(ids), AttentionClassifier.embed(model, ids, extra, casing))[1]
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
     {"patience": 0}, {"embedding_lr": 0.0}, {"embedding_lr": 11.0}, {"average_epochs": -1.0},
     {"sampling": "oversample"}, {"keep_by": "accuracy"}],
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


def test_with_a_time_budget_the_schedule_runs_on_whichever_ends_first(ds, emb):
    """A budget that stops the run long before its planned steps: the rate follows the budget's share spent (the
    training clock's), so it has warmed up early and decayed by the stop, instead of warming up for most of the run."""
    spent = [0.0]
    f = lr_factor("linear", 0.1, 1000, budget=60.0, clock=lambda: spent[0])
    assert f(0) == lr_factor("linear", 0.1, 1000)(0)  # no time spent: the steps' schedule
    spent[0] = 6.0
    assert f(5) == pytest.approx(1.0, abs=0.01)  # a tenth of the budget: warmed up, at step 5 of the planned 100
    spent[0] = 60.0
    assert f(50) == 0.0  # the budget spent: decayed
    tc = TrainConfig(epochs=4, batch_size=6, lr=0.01, val_fraction=0.0, lr_schedule="linear", time_budget=1e-9)
    trainer = Trainer(NEW_OPTIONS, tc, ds, emb)
    step = trainer._make_step(None, _clock_at(1.0))  # the training clock past the budget
    step([0, 1, 2])
    assert step.optimizer.param_groups[0]["lr"] == 0.0


def test_a_longer_training_peaks_lower_when_the_rate_has_a_reference_length(ds, emb):
    """lr_reference_steps N: up to N steps the peak is lr; a training of more peaks at lr × √(N / its steps) — planned,
    or with a time budget those its pace fits in it (measured, not assumed: a fast machine's 60 s are many steps)."""
    short, long = lr_factor("constant", 0.0, 100, reference_steps=100), lr_factor("constant", 0.0, 400, reference_steps=100)
    assert short(50) == 1.0 and long(0) == long(399) == pytest.approx(0.5)
    spent = [0.0]
    budgeted = lr_factor("linear", 0.1, 10_000, budget=60.0, clock=lambda: spent[0], reference_steps=100)
    spent[0] = 15.0
    assert budgeted(9) == lr_factor("linear", 0.1, 10_000, budget=60.0, clock=lambda: 15.0)(9)  # too early to tell
    assert budgeted(25) == pytest.approx(lr_factor("linear", 0.1, 10_000, budget=60.0, clock=lambda: 15.0)(25))  # 100 fit
    assert budgeted(100) == pytest.approx(0.5 * lr_factor("linear", 0.1, 10_000, budget=60.0, clock=lambda: 15.0)(100))
    tc = TrainConfig(epochs=4, batch_size=6, lr=0.01, val_fraction=0.0, lr_reference_steps=6)  # 24 steps: half the peak
    step = Trainer(NEW_OPTIONS, tc, ds, emb)._make_step(None)
    step([0, 1, 2])
    assert step.optimizer.param_groups[0]["lr"] == pytest.approx(0.005)
    with pytest.raises(ConfigError, match="lr_reference_steps"):
        TrainConfig(lr_reference_steps=-1)


def _clock_at(seconds: float):
    from attention_core.training import _TrainingClock

    clock = _TrainingClock()
    clock.now = lambda: seconds  # type: ignore[method-assign]
    return clock


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
    run = Trainer(NEW_OPTIONS, tc, ds, emb).run(name="new-options")
    save_run(run, tmp_path / "r")
    loaded = load_run(tmp_path / "r")
    assert loaded.model_config == run.model_config and loaded.train_config == run.train_config
    for text in ["a great movie", "the worst xqzzy service"]:
        a, b = run.predict(text), loaded.predict(text)
        assert a.probabilities == b.probabilities and a.attention == b.attention
        assert len(a.attention) == NEW_OPTIONS.n_layers + 1  # the pooling query's map comes last


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "data" / "seed_run").iterdir() if p.is_dir()))
def test_bundled_runs_made_before_the_new_options_still_load(name):
    run = load_run(ROOT / "data" / "seed_run" / name)
    assert run.model_config.word_dropout == 0.0 and run.model_config.embedding_dropout == 0.0
    assert run.train_config.patience is None and run.train_config.lr_schedule == "constant"
    p = run.predict("what a great film")
    assert len(p.attention) == run.model_config.n_layers


def test_the_bundled_default_run_is_made_with_the_new_options():
    run = load_run(ROOT / "data" / "default_run")  # the default preset of issue 15
    assert run.model_config.word_dropout == 0.1 and run.model_config.embedding_dropout == 0.1
    assert run.train_config.patience == 4 and run.train_config.label_smoothing == 0.1
    assert run.train_config.sampling == "auto" and run.model_config.pooling == "attention"
    p = run.predict("what a great film")
    assert len(p.attention) == run.model_config.n_layers + 1  # the pooling query's map comes last


def test_epoch_rows_shuffle_is_a_permutation_and_same_generator_same_rows() -> None:
    labels = [0] * 30 + [1] * 7 + [2] * 3
    rows = epoch_rows(labels, "shuffle", torch.Generator().manual_seed(0))
    assert sorted(rows) == list(range(40)) and rows != list(range(40))
    for how in ("shuffle", "sqrt", "balanced"):
        a = epoch_rows(labels, how, torch.Generator().manual_seed(5))
        assert a == epoch_rows(labels, how, torch.Generator().manual_seed(5))
        assert a != epoch_rows(labels, how, torch.Generator().manual_seed(6))


@pytest.mark.parametrize("how", ["balanced", "sqrt"])
def test_epoch_rows_give_each_class_its_share_common_ones_subsampled_rare_ones_repeated(how) -> None:
    labels = [0] * 30 + [1] * 7 + [2] * 3
    rows = epoch_rows(labels, how, torch.Generator().manual_seed(0))
    per_class = Counter(labels[r] for r in rows)
    assert len(rows) == 40 and sum(per_class.values()) == 40
    shares = {"balanced": [1.0, 1.0, 1.0], "sqrt": [30**0.5, 7**0.5, 3**0.5]}[how]
    exact = [40 * s / sum(shares) for s in shares]
    assert all(abs(per_class[c] - exact[c]) < 1 for c in range(3))  # largest-remainder rounding of each share
    common = [r for r in rows if labels[r] == 0]
    assert len(set(common)) == len(common) < 30  # the common class: subsampled, never a row twice
    rare = Counter(r for r in rows if labels[r] == 2)
    assert set(rare) == {37, 38, 39} and max(rare.values()) - min(rare.values()) <= 1  # whole passes first
    assert sum(rare.values()) > 3  # shown more often than once an epoch


def test_balanced_sampling_shows_the_rare_class_as_often_as_the_common_one(emb):
    texts = POS * 5 + NEG  # 30 positive rows, 6 negative
    data = dataset_from_lists(texts, ["pos"] * 30 + ["neg"] * 6)

    def seen(sampling: str) -> Counter:
        trainer = Trainer(NEW_OPTIONS, TrainConfig(epochs=2, batch_size=4, val_fraction=0.0, sampling=sampling), data, emb)
        make_step, counts = trainer._make_step, Counter()

        def counting(weight, clock=None):
            step = make_step(weight, clock)

            def call(rows):
                counts.update(trainer.label_names[trainer._train[1][r]] for r in rows)
                return step(rows)

            call.end_epoch, call.weights_finite = step.end_epoch, step.weights_finite
            return call

        trainer._make_step = counting
        trainer.run()
        return counts

    assert seen("shuffle") == Counter(pos=60, neg=12)
    assert seen("balanced") == Counter(pos=36, neg=36)  # each epoch: 18 of each, the 6 negative rows 3 times
    assert seen("auto") == Counter(pos=36, neg=36)  # 6 of 36 rows is under half of an equal split's 18


def test_auto_sampling_balances_only_a_strong_skew() -> None:
    k6 = [0] * 100 + [1] * 100 + [2] * 100 + [3] * 80 + [4] * 80 + [5] * 8  # TREC-like: 8 < ½ · 468 / 6
    assert resolved_sampling(k6, "auto") == "balanced"
    assert resolved_sampling([0] * 64 + [1] * 36, "auto") == "shuffle"  # CR-like: 36 ≥ ½ · 100 / 2
    assert resolved_sampling([0] * 76 + [1] * 24, "auto") == "balanced"
    assert resolved_sampling([0] * 5, "auto") == "shuffle"
    assert resolved_sampling([0] * 90 + [1] * 10, "sqrt") == "sqrt"  # only auto is decided from the data
    g = torch.Generator
    assert epoch_rows(k6, "auto", g().manual_seed(1)) == epoch_rows(k6, "balanced", g().manual_seed(1))


def test_keep_by_macro_f1_keeps_the_epoch_with_the_best_validation_macro_f1(ds, emb):
    def history(keep_by: str):
        tc = TrainConfig(epochs=8, batch_size=4, lr=0.02, val_fraction=0.34, keep_by=keep_by, patience=3, snapshots=0)
        return Trainer(NEW_OPTIONS, tc, ds, emb).run().history

    by_loss, by_f1 = history("loss"), history("macro_f1")
    assert [e.val_loss for e in by_loss.epochs] == [e.val_loss for e in by_f1.epochs][: len(by_loss.epochs)]
    assert all(e.val_macro_f1 is not None and 0.0 <= e.val_macro_f1 <= 1.0 for e in by_f1.epochs)
    best = max(e.val_macro_f1 for e in by_f1.epochs)
    kept = by_f1.epochs[by_f1.kept_epoch - 1]
    assert kept.val_macro_f1 == best
    ties = [e for e in by_f1.epochs if e.val_macro_f1 == best]
    assert kept.val_loss == min(e.val_loss for e in ties)  # ties go to the lower loss
    if by_f1.status == "finished" and len(by_f1.epochs) < 8:
        assert "validation macro-F1 has not improved for 3 epochs" in by_f1.message


def test_validation_macro_f1_is_recorded_and_older_histories_still_load(ds, emb):
    tc = TrainConfig(epochs=3, batch_size=4, val_fraction=0.34, snapshots=0)
    trainer = Trainer(NEW_OPTIONS, tc, ds, emb)
    h = trainer.run().history
    _, accuracy, preds = trainer.evaluate_encoded(trainer._val)  # the kept weights
    kept = h.epochs[h.kept_epoch - 1]
    assert kept.val_accuracy == accuracy
    assert kept.val_macro_f1 == classification_metrics(trainer._val[1], preds, trainer.label_names).macro_f1
    old = asdict(EpochRecord(1, 0.5, 0.5, 0.4, 0.8, 1.0, 10.0))
    del old["val_macro_f1"]
    assert History.from_dict({"epochs": [old], "best_epoch": 1}).epochs[0].val_macro_f1 is None


@pytest.mark.parametrize("optimizer", ["adamw", "adam", "sgd"])
def test_the_optimizer_is_pytorchs_fused_one_on_the_cpu_and_moves_the_weights_as_its_loop_does(ds, emb, optimizer,
                                                                                                 monkeypatch):
    """The fused kernels are what make the optimizer's share of a step small (benchmarks/README.md, fifth round): the
    same update as the multi-tensor loop (``foreach``), one pass over each tensor."""
    from attention_core import training

    tc = TrainConfig(epochs=2, batch_size=6, lr=0.01, val_fraction=0.0, optimizer=optimizer, weight_decay=0.01,
                     lr_schedule="linear", warmup=0.2)
    fused = Trainer(NEW_OPTIONS, tc, ds, emb)._make_step(None)
    assert fused.optimizer.param_groups[0]["fused"] is True and not fused.optimizer.param_groups[0]["foreach"]
    monkeypatch.setattr(training, "FUSED_DEVICES", ())  # a device without fused kernels: the loop
    looped_step = Trainer(NEW_OPTIONS, tc, ds, emb)._make_step(None)
    assert looped_step.optimizer.param_groups[0]["foreach"] and not looped_step.optimizer.param_groups[0]["fused"]
    before = [p.detach().clone() for p in fused.params]
    for rows in ([0, 1, 2, 3, 4, 5], [6, 7, 8, 9, 10, 11], [0, 2, 4, 6, 8, 10]):
        with torch.no_grad():  # the same weights before each step: Adam's m / √v turns a last-bit difference in
            torch._foreach_copy_(looped_step.params, fused.params)  # tiny gradients into a visible one over steps
        torch.manual_seed(0)  # the same dropout for both
        fused(rows)
        torch.manual_seed(0)
        looped_step(rows)
        for a, b in zip(fused.params, looped_step.params, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)  # the same update (its optimizer state too)
    moved = [float((a.detach() - b).abs().max()) for a, b in zip(fused.params, before, strict=True)]
    assert max(moved) > 1e-4  # the steps changed the weights (by more than the tolerance)
