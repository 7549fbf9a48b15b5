"""Trainer: learning, determinism, control from another thread, divergence, callbacks."""

from __future__ import annotations

import json
import math
import threading
from dataclasses import asdict, replace

import pytest
import torch

from attention_core import ModelConfig, TextDataset, TrainConfig, Trainer, dataset_from_lists, load_embeddings, preset
from attention_core.errors import ConfigError, DataError
from attention_core.history import History
from attention_core.training import TrainerSpec, check_settings
from tests.helpers.tiny_data import NEG, POS

TINY = ModelConfig(n_layers=1, n_heads=2, d_model=16, d_ff=32, dropout=0.0)


@pytest.fixture(scope="module")
def tiny_ds():
    return dataset_from_lists(POS + NEG, ["pos"] * len(POS) + ["neg"] * len(NEG))


def fit(ds, emb, model=TINY, **train):
    cfg = TrainConfig(**{"epochs": 30, "batch_size": 4, "lr": 1e-2, "val_fraction": 0.0, **train})
    return Trainer(model, cfg, ds, emb)


def test_overfits_a_handful_of_rows(tiny_ds, emb):
    result = fit(tiny_ds, emb).run()
    h = result.history
    assert h.status == "finished"
    assert h.epochs[-1].train_loss < 0.1 < h.epochs[0].train_loss
    preds = [result.model(result.encoder.collate([result.encoder.encode(t)]).ids)[0].argmax().item() for t in POS + NEG]
    assert preds == [tiny_ds.label_names.index("pos")] * 6 + [tiny_ds.label_names.index("neg")] * 6


def numbers(result) -> dict:
    """Everything a run computed except its timings: History (as JSON), weights and snapshots."""
    h = result.history.to_dict()
    del h["seconds"]
    for e in h["epochs"]:
        del e["seconds"], e["examples_per_second"]
    return {"history": h, "weights": result.model.state_dict(), "snapshots": result.snapshots}


def assert_same_numbers(a: dict, b: dict, *, same_snapshot_epochs: bool = True) -> None:
    """Equal to the bit; snapshots of the epochs both kept (both runs planned the same ones, unless told)."""
    assert a["history"] == b["history"]
    assert a["weights"].keys() == b["weights"].keys()
    assert all(torch.equal(w, b["weights"][k]) for k, w in a["weights"].items())
    both = a["snapshots"].keys() & b["snapshots"].keys()
    assert not same_snapshot_epochs or a["snapshots"].keys() == both == b["snapshots"].keys()
    assert all(torch.equal(w, b["snapshots"][e][k]) for e in both for k, w in a["snapshots"][e].items())


@pytest.fixture(scope="module")
def seed_trainer_args():
    """The seed preset (its fast path) on the bundled small.csv, 6 epochs, 25 % held out."""
    from attention_core import EmbeddingSource, load_dataset

    model_cfg, train_cfg = preset("seed", epochs=6, val_fraction=0.25, snapshots=3)
    return model_cfg, train_cfg, load_dataset("data/small.csv"), load_embeddings(EmbeddingSource(limit=10_000))


def test_same_seed_same_history_other_seed_differs(tiny_ds, emb):
    a = fit(tiny_ds, emb, epochs=5, seed=3).run().history
    b = fit(tiny_ds, emb, epochs=5, seed=3).run().history
    c = fit(tiny_ds, emb, epochs=5, seed=4).run().history
    assert a.step_losses == b.step_losses
    assert a.step_losses != c.step_losses


@pytest.mark.parametrize("path", ["autograd", "post_sgd"])
def test_same_seed_same_numbers_to_the_bit(path, emb, seed_trainer_args):
    """History, weights kept (best by validation loss) and snapshots: equal, not close."""
    if path == "autograd":
        ds = dataset_from_lists(POS * 3 + NEG * 3, ["pos"] * 18 + ["neg"] * 18)
        make = lambda: fit(ds, emb, model=replace(TINY, dropout=0.1), epochs=6, val_fraction=0.25, snapshots=3)  # noqa: E731
    else:
        make = lambda: Trainer(*seed_trainer_args)  # noqa: E731
    a, b = numbers(make().run()), numbers(make().run())
    assert a["history"]["epochs"][-1]["val_loss"] is not None and len(a["snapshots"]) >= 3
    assert_same_numbers(a, b)


@pytest.mark.parametrize("path", ["autograd", "post_sgd"])
def test_pause_stop_and_time_budget_change_no_numbers(path, tiny_ds, emb, seed_trainer_args):
    """A run paused mid-epoch computes what an uninterrupted one does; one stopped after epoch 2, or by its time
    budget, computes what a shorter run does, up to where it ended."""
    def make(**train):
        if path == "autograd":
            return fit(tiny_ds, emb, **{"epochs": 4, **train})
        model_cfg, train_cfg, ds, vectors = seed_trainer_args
        return Trainer(model_cfg, replace(train_cfg, **{"epochs": 4, **train}), ds, vectors)

    whole = make().run()
    paused = make()

    def pause_at_step_2(ev):
        if ev.step == 2:
            paused.pause()

    resumer = threading.Thread(target=lambda: paused.wait_until_paused(60) and paused.resume())
    resumer.start()
    assert_same_numbers(numbers(paused.run(on_step=pause_at_step_2)), numbers(whole))
    resumer.join(60)

    stopped = make()
    result = stopped.run(on_epoch=lambda rec: rec.epoch == 2 and stopped.stop())
    assert (result.history.status, result.history.message) == ("stopped", "stopped by the user after 2 epoch(s)")
    two_epochs = numbers(make(epochs=2).run())
    two_epochs["history"].update(status="stopped", message="stopped by the user after 2 epoch(s)")
    assert 2 in result.snapshots
    assert_same_numbers(numbers(result), two_epochs, same_snapshot_epochs=False)

    budget = make(epochs=100_000, time_budget=0.3).run().history
    assert (budget.status, budget.message) == ("time budget", "stopped after the time budget of 0.3 s")
    longer = make(epochs=len(budget.epochs) + 1).run().history
    assert budget.step_losses == longer.step_losses[: len(budget.step_losses)]


def test_callbacks_fire_per_step_and_epoch(tiny_ds, emb):
    steps, epochs = [], []
    fit(tiny_ds, emb, epochs=3, batch_size=5).run(on_step=steps.append, on_epoch=epochs.append)
    assert [e.epoch for e in epochs] == [1, 2, 3]
    assert len(steps) == 3 * math.ceil(12 / 5)
    assert [s.step for s in steps] == list(range(1, len(steps) + 1))
    assert steps[-1].examples_seen == 3 * 12


def test_batch_size_one_and_class_weights(emb):
    ds = dataset_from_lists(POS + NEG[:2], ["pos"] * 6 + ["neg"] * 2)
    h = fit(ds, emb, epochs=2, batch_size=1, class_weights=True).run().history
    assert h.status == "finished" and len(h.step_losses) == 2 * 8
    assert all(math.isfinite(x) for x in h.step_losses)


def test_keeps_best_weights_by_validation_loss(emb):
    ds = dataset_from_lists(POS * 3 + NEG * 3, ["pos"] * 18 + ["neg"] * 18)
    trainer = fit(ds, emb, epochs=8, val_fraction=0.25)
    result = trainer.run()
    h = result.history
    best = min(h.epochs, key=lambda e: e.val_loss)
    assert h.kept_epoch == best.epoch
    val_loss, _, _ = trainer.evaluate_encoded(trainer._val)
    assert val_loss == pytest.approx(best.val_loss, rel=1e-5)


def test_diverging_run_is_caught_and_last_good_weights_kept(tiny_ds, emb):
    model = replace(TINY, layer_norm=False)
    trainer = fit(tiny_ds, emb, model=model, lr=1e6, optimizer="sgd", grad_clip=None, epochs=50)
    result = trainer.run()
    h = result.history
    assert h.status == "diverged"
    assert h.message == (f"training diverged at epoch 1, step {len(h.step_losses) + 1} (loss = nan) with learning rate "
                         "1e+06 — try a lower learning rate, e.g. 100000; the last good weights are kept")
    assert all(torch.isfinite(p).all() for p in result.model.parameters())
    logits, _ = result.model(result.encoder.collate([result.encoder.encode("a great movie")]).ids)
    assert torch.isfinite(logits).all()
    # The time-lapse ends with the weights kept (the last good epoch), all finite.
    last = max(result.snapshots)
    assert last == (h.epochs[-1].epoch if h.epochs else 0)
    assert all(torch.isfinite(w).all() for weights in result.snapshots.values() for w in weights.values())


def test_stop_from_another_thread(tiny_ds, emb):
    trainer = fit(tiny_ds, emb, epochs=100_000)
    seen = threading.Event()

    def on_epoch(rec):
        if rec.epoch == 3:
            seen.set()

    box = {}
    thread = threading.Thread(target=lambda: box.setdefault("r", trainer.run(on_epoch=on_epoch)))
    thread.start()
    assert seen.wait(60)
    trainer.stop()
    thread.join(60)
    assert not thread.is_alive()
    h = box["r"].history
    assert h.status == "stopped" and 3 <= len(h.epochs) < 100_000
    assert h.epochs[-1].epoch in box["r"].snapshots  # the time-lapse reaches the epoch it stopped at


def test_an_epoch_a_stop_cuts_short_records_the_share_of_its_steps_taken(tiny_ds, emb):
    """12 rows in batches of 4: 3 steps an epoch. Stopped after the 5th step, the second epoch is 2/3 done: its
    record says so (the charts draw it at 1.67, not as a whole second epoch), and the run's files keep it."""
    trainer = fit(tiny_ds, emb, epochs=10)
    h = trainer.run(on_step=lambda ev: ev.step == 5 and trainer.stop()).history
    assert h.status == "stopped" and [e.epoch for e in h.epochs] == [1, 2]
    assert [e.share for e in h.epochs] == [1.0, 0.6667] and h.epochs[-1].at == pytest.approx(1.6667)
    saved = h.to_dict()
    assert "share" not in saved["epochs"][0] and saved["epochs"][1]["share"] == 0.6667  # files of whole epochs unchanged
    assert History.from_dict(json.loads(json.dumps(saved))).epochs == h.epochs


def test_pause_and_resume_from_another_thread(tiny_ds, emb):
    trainer = fit(tiny_ds, emb, epochs=100_000)
    steps = []
    resumed = threading.Event()

    def on_step(ev):
        steps.append(ev.step)
        if ev.step == 5:
            trainer.pause()
        if ev.step == 8:
            resumed.set()

    thread = threading.Thread(target=lambda: trainer.run(on_step=on_step))
    thread.start()
    assert trainer.wait_until_paused(60)  # the worker is blocked in its pause now
    assert trainer.paused and thread.is_alive()
    assert steps == [1, 2, 3, 4, 5]  # nothing stepped after the pause took effect
    trainer.resume()
    assert resumed.wait(60)  # stepping went on after resume
    trainer.stop()
    thread.join(60)
    assert not thread.is_alive()
    assert steps[:8] == list(range(1, 9))


def test_time_budget_stops_training(tiny_ds, emb):
    h = fit(tiny_ds, emb, epochs=100_000, time_budget=0.5).run().history
    assert h.status == "time budget"
    assert 0.5 <= h.seconds < 5


def test_probe_attention_recorded_per_epoch(tiny_ds, emb):
    h = fit(tiny_ds, emb, epochs=4, probes=("a great movie", "xqzzy")).run().history
    assert [p.epoch for p in h.probes] == [0, 1, 2, 3, 4]
    sentence = h.probes[-1].sentences[0]
    assert sentence.tokens == ["a", "great", "movie"]
    attn = torch.tensor(sentence.attention)
    assert attn.shape == (1, 2, 3, 3)
    assert torch.allclose(attn.sum(-1), torch.ones(1, 2, 3), atol=1e-3)
    assert len(h.probes[-1].sentences) == 1  # the all-unknown probe is skipped, not an error


def test_rows_with_no_known_word_are_skipped(emb):
    ds = dataset_from_lists(POS + ["xqzzy qqqzz"], ["pos"] * 6 + ["neg"])
    h = fit(ds, emb, epochs=1, unknown="drop").run().history
    assert h.skipped_rows == 1
    # Known words only in the validation rows: half the text is known, but no training row has a word.
    labels = ["a", "a", "b", "b"]
    _, val = dataset_from_lists(["0", "1", "2", "3"], labels).split(0.5, seed=0)  # the split depends on labels only
    texts = ["great movie" if str(i) in val.texts else "xqzzy qqqzz" for i in range(4)]
    with pytest.raises(DataError, match="no training row"):
        fit(dataset_from_lists(texts, labels), emb, unknown="drop", val_fraction=0.5, seed=0)


def wrong_column(n: int = 20) -> TextDataset:
    """Product codes as the text column: every row a code the word vectors do not know."""
    return dataset_from_lists([f"{48213 + 7919 * i}" for i in range(n)], ["pos", "neg"] * (n // 2))


@pytest.mark.parametrize("unknown", ["unk", "drop"])
def test_a_text_the_vectors_cannot_read_is_refused_before_training(emb, unknown):
    cfg = TrainConfig(epochs=1, val_fraction=0.0, unknown=unknown)
    message = ("column 'text' holds almost no words that the word vectors know (0.0% of its text; its values are "
               "like '48213', '56132') — choose the column that holds the sentences, or for text in another language "
               "use word vectors for that language (command line: --text-col, --embeddings FILE)")
    spec = TrainerSpec(TINY, cfg, wrong_column(), emb)
    with pytest.raises(DataError) as checked:
        spec.check()  # what the app's Start calls, before a training process starts
    with pytest.raises(DataError) as built:
        Trainer(TINY, cfg, wrong_column(), emb)
    assert str(checked.value) == str(built.value) == message


def test_the_check_reads_with_the_training_vocabulary_and_tokenizer(emb):
    rare = [w for w in emb._words[60_000:60_100] if w.isalpha()][:40]  # words GloVe knows, none of its top 10,000
    ds = dataset_from_lists([f"{a} {b}" for a, b in zip(rare[::2], rare[1::2], strict=True)], ["x", "y"] * 10)
    check_settings(TINY, TrainConfig(), ds, emb)  # the whole table: every word known
    with pytest.raises(DataError, match=r"almost no words .* \([0-4]\.\d% of its text"):
        check_settings(TINY, TrainConfig(vocab_limit=10_000), ds, emb)
    # Words joined by commas: the GloVe tokenizer splits them, the seed's whitespace split reads one unknown token.
    glued = dataset_from_lists([",".join(t.split()) for t in POS + NEG], ["p"] * 6 + ["n"] * 6)
    check_settings(TINY, TrainConfig(tokenizer="glove"), glued, emb)
    with pytest.raises(DataError, match="almost no words"):
        check_settings(TINY, TrainConfig(tokenizer="whitespace"), glued, emb)


@pytest.mark.parametrize(
    "bad", [dict(epochs=0), dict(batch_size=0), dict(lr=0.0), dict(optimizer="lbfgs"), dict(val_fraction=0.95)]
)
def test_bad_train_config_is_a_clear_error(bad):
    with pytest.raises(ConfigError, match="is not valid"):
        TrainConfig(**bad)


def test_presets_learn_on_bundled_data(emb):
    from attention_core import load_dataset

    ds = load_dataset("data/small.csv")
    model_cfg, train_cfg = preset("seed", epochs=20)
    h = Trainer(model_cfg, train_cfg, ds, load_embeddings(replace_limit(10_000))).run().history
    assert h.epochs[-1].train_loss < h.epochs[0].train_loss
    assert [s.text for s in h.probes[-1].sentences] == list(train_cfg.probes)


def replace_limit(limit):
    from attention_core import EmbeddingSource

    return EmbeddingSource(limit=limit)


def test_the_kept_epoch_is_the_one_whose_weights_the_run_keeps():
    """Without validation rows the last weights are kept: best_epoch and the CLI's summary say so (they named the
    epoch of lowest training loss, whose figures the summary then printed for a model it did not keep)."""
    from attention_core import History
    from attention_core.training import EpochRecord

    texts = ["a great movie", "i love it", "wonderful fun", "a terrible movie", "i hate it", "awful boring"] * 4
    labels = ["pos", "pos", "pos", "neg", "neg", "neg"] * 4
    result = Trainer(ModelConfig(n_layers=1, n_heads=2, d_model=16, d_ff=32),
                     TrainConfig(epochs=3, batch_size=4, val_fraction=0.0),
                     dataset_from_lists(texts, labels), load_embeddings()).run()
    h = result.history
    assert h.kept_epoch == 3
    assert h.summary()["best_epoch"] == 3 and h.summary()["train_loss"] == h.epochs[-1].train_loss
    # A history saved before: best_epoch by training loss, no validation.
    old = History.from_dict({"epochs": [asdict(EpochRecord(e, loss, 0.5, None, None, 1.0, 10.0))
                                        for e, loss in ((1, 0.6), (2, 0.3), (3, 0.5))], "best_epoch": 2})
    assert old.kept_epoch == 3 and old.summary()["train_loss"] == 0.5
    with_val = History.from_dict({"epochs": [asdict(EpochRecord(e, 0.5, 0.5, v, 0.5, 1.0, 10.0))
                                             for e, v in ((1, 0.6), (2, 0.3), (3, 0.5))], "best_epoch": 2})
    assert with_val.kept_epoch == 2 and with_val.summary()["val_loss"] == 0.3
    assert History.from_dict({"epochs": []}).kept_epoch is None


def test_the_kept_epoch_has_one_name_and_run_files_keep_theirs():
    """History.kept_epoch is the one field and the one name in the code; run files
    keep calling it best_epoch, in the same place, so runs saved before and after read alike."""
    from dataclasses import fields

    from attention_core import History
    from attention_core.training import EpochRecord

    names = [f.name for f in fields(History)]
    assert "kept_epoch" in names and "best_epoch" not in names
    h = History(epochs=[EpochRecord(e, 0.5, 0.5, v, 0.5, 1.0, 10.0) for e, v in ((1, 0.6), (2, 0.3), (3, 0.5))],
                kept_epoch=2)
    assert not hasattr(h, "best_epoch")
    saved = h.to_dict()
    assert "kept_epoch" not in saved and saved["best_epoch"] == 2
    assert list(saved)[:4] == ["epochs", "step_losses", "probes", "best_epoch"]
    assert History.from_dict(saved) == h


def test_probes_record_the_sentence_forward_pass_rounded_and_keep_the_training_mode(tiny_ds, emb):
    from attention_core.sentence import run_sentence

    trainer = fit(tiny_ds, emb, model=replace(TINY, dropout=0.3), probes=("a great movie", "so sad"))
    trainer.model.train()
    trainer._record_probes(0)
    assert trainer.model.training
    for text, recorded in zip(("a great movie", "so sad"), trainer.history.probes[0].sentences, strict=True):
        seen = run_sentence(trainer.model, trainer.encoder, text)
        assert recorded.tokens == list(seen.encoded.tokens)
        assert recorded.probabilities == [round(p, 4) for p in seen.probabilities.tolist()]
        assert recorded.attention == torch.round(seen.attention, decimals=4).tolist()
