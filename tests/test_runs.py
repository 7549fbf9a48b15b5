"""Runs on disk: save → load → identical predictions; atomic saves; damaged runs refused."""

from __future__ import annotations

import json
import os
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from attention_core import (
    ModelConfig,
    Run,
    TrainConfig,
    Trainer,
    dataset_from_lists,
    load_embeddings,
    load_run,
    save_run,
)
from attention_core.errors import EmbeddingError, RunError
from attention_core.runs import list_runs, run_from_zip, run_to_zip

TEXTS = ["a great movie", "i love it", "wonderful fun", "a terrible movie", "i hate it", "awful boring"] * 2
LABELS = ["pos", "pos", "pos", "neg", "neg", "neg"] * 2


@pytest.fixture(scope="module")
def run() -> Run:
    ds = dataset_from_lists(TEXTS, LABELS)
    cfg = ModelConfig(n_layers=2, n_heads=2, d_model=16, d_ff=32, positional="learned")
    result = Trainer(cfg, TrainConfig(epochs=3, batch_size=4, val_fraction=0.25), ds, load_embeddings()).run()
    return Run.from_result(result, name="tiny")


def test_save_load_gives_identical_predictions(run, tmp_path):
    save_run(run, tmp_path / "r")
    loaded = load_run(tmp_path / "r")
    for text in ["a great movie", "a fantastic evening", "i hate xqzzy"]:
        a, b = run.predict(text), loaded.predict(text)
        assert a.probabilities == b.probabilities
        assert a.attention == b.attention and a.tokens == b.tokens
    assert loaded.label_names == run.label_names
    assert loaded.model_config == run.model_config and loaded.train_config == run.train_config
    assert loaded.history.to_dict() == run.history.to_dict()
    assert loaded.validation == (tuple(run.validation[0]), tuple(run.validation[1]))
    assert 0 < len(loaded.validation[0]) < len(TEXTS)


def test_prediction_shape_and_unknown_words(run):
    p = run.predict("a great xqzzy movie")
    assert p.tokens == ["a", "great", "<unk>", "movie"] and p.unknown_tokens == ["xqzzy"]
    attn = torch.tensor(p.attention)
    assert attn.shape == (2, 2, 4, 4)  # [layer][head][query][key]
    assert torch.allclose(attn.sum(-1), torch.ones(2, 2, 4), atol=1e-5)
    assert sum(p.probabilities.values()) == pytest.approx(1.0, abs=1e-5)
    assert p.label == max(p.probabilities, key=p.probabilities.get)
    with pytest.raises(EmbeddingError, match="none of the words"):
        run.predict("xqzzy qqqzz")


def test_batched_probabilities_equal_one_by_one_predictions(run):
    texts = ["i love this fantastic product", "xqzzy qqqzz", "terrible", "the food was not good at all, sadly"]
    probs = run.predict_proba(texts, batch_size=2)
    assert probs.shape == (4, len(run.label_names))
    assert np.isnan(probs[1]).all()  # no known word: nothing predicted
    for text, row in zip(texts, probs, strict=True):
        if text != "xqzzy qqqzz":
            single = run.predict(text).probabilities
            assert row == pytest.approx([single[name] for name in run.label_names], abs=1e-5)


def test_words_outside_the_run_vocabulary_use_glove(run):
    assert "fantastic" not in run.encoder.word_to_id
    enc = run.encoder.encode("a fantastic movie")
    assert enc.tokens == ("a", "fantastic", "movie") and enc.extra_words == ("fantastic",)


def test_save_replaces_atomically_and_leaves_no_temp_dirs(run, tmp_path):
    save_run(run, tmp_path / "r")
    save_run(run, tmp_path / "r")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]
    assert list_runs(tmp_path) == [tmp_path / "r"]


def test_crash_mid_save_keeps_the_old_run(run, tmp_path, monkeypatch):
    save_run(run, tmp_path / "r")
    before = (tmp_path / "r" / "model.safetensors").read_bytes()

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr("attention_core.runs.save_file", boom)
    with pytest.raises(OSError, match="disk full"):
        save_run(run, tmp_path / "r")
    assert (tmp_path / "r" / "model.safetensors").read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["r"]
    load_run(tmp_path / "r")


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: (d / "model.safetensors").unlink(), "missing model.safetensors"),
        (lambda d: (d / "config.json").write_text("{not json"), "not valid JSON"),
        (lambda d: (d / "config.json").write_text(json.dumps({"format": "other"})), "not an Attention Playground run"),
        (lambda d: (d / "model.safetensors").write_bytes(b"\x00" * 64), "cannot be read"),
        (lambda d: _edit_config(d, lambda c: c["model"].update(n_layers=3)), "does not fit"),
        (lambda d: _edit_config(d, lambda c: c["model"].update(bogus=1)), "unknown model setting"),
        (lambda d: _edit_config(d, lambda c: c.update(labels=["a"])), "do not match"),
    ],
)
def test_damaged_runs_are_refused_with_a_clear_error(run, tmp_path, damage, message):
    save_run(run, tmp_path / "r")
    damage(tmp_path / "r")
    with pytest.raises(RunError, match=message):
        load_run(tmp_path / "r")


def _edit_config(d: Path, change) -> None:
    cfg = json.loads((d / "config.json").read_text())
    change(cfg)
    (d / "config.json").write_text(json.dumps(cfg))


def test_loading_never_unpickles(run, tmp_path):
    save_run(run, tmp_path / "r")
    # A pickle payload where the weights should be: must be refused, not executed.
    marker = tmp_path / "pwned"
    payload = f"cos\nsystem\n(S'touch {marker}'\ntR.".encode()
    (tmp_path / "r" / "model.safetensors").write_bytes(payload)
    with pytest.raises(RunError):
        load_run(tmp_path / "r")
    assert not marker.exists()


def test_zip_round_trip_and_bad_archives(run, tmp_path):
    save_run(run, tmp_path / "r")
    data = run_to_zip(tmp_path / "r")
    target = run_from_zip(data, tmp_path, "copy of r")
    assert target.name == "copy-of-r"
    assert load_run(target).predict("i love it").probabilities == run.predict("i love it").probabilities
    with pytest.raises(RunError, match="not a zip"):
        run_from_zip(b"hello", tmp_path, "x")
    with pytest.raises(RunError, match="already exists"):
        run_from_zip(data, tmp_path, "copy of r")
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as zf:
        zf.writestr("../../config.json", "{}")
    with pytest.raises(RunError, match="has no"):
        run_from_zip(evil.read_bytes(), tmp_path, "evil")
    assert not any(p.name.startswith(".upload") for p in tmp_path.iterdir())


def test_missing_run_dir_is_a_clear_error(tmp_path):
    with pytest.raises(RunError, match="not found"):
        load_run(tmp_path / "nope")
    (tmp_path / "half").mkdir()
    with pytest.raises(RunError, match="not a complete run"):
        load_run(tmp_path / "half")
    shutil.rmtree(tmp_path / "half")
    assert os.listdir(tmp_path) == []


def test_a_run_keeps_weight_snapshots_for_any_sentences_time_lapse(tmp_path):
    from attention_core.training import snapshot_epochs

    cfg = ModelConfig(n_layers=2, n_heads=2, d_model=16, d_ff=32)
    train = TrainConfig(epochs=5, batch_size=4, val_fraction=0.0, snapshots=3, lr=0.01)  # no validation: keeps the last
    result = Trainer(cfg, train, dataset_from_lists(TEXTS, LABELS), load_embeddings()).run()
    assert sorted(result.snapshots) == sorted(snapshot_epochs(5, 3)) == [0, 2, 5]
    assert all(t.dtype == torch.float16 for w in result.snapshots.values() for t in w.values())
    saved = load_run(save_run(Run.from_result(result, name="lapse"), tmp_path / "lapse"))
    assert sorted(saved.snapshots) == [0, 2, 5]
    enc, steps = saved.forward_over_training("a really great movie")
    assert [e for e, _, _ in steps] == [0, 2, 5] and list(enc.tokens) == ["a", "really", "great", "movie"]
    _, probs, attn = saved.forward("a really great movie")
    assert steps[-1][2].shape == attn.shape  # (layers, heads, tokens, tokens)
    assert torch.allclose(steps[-1][2], attn, atol=2e-2) and torch.allclose(steps[-1][1], probs, atol=2e-2)
    assert not torch.allclose(steps[0][2], attn, atol=2e-2)  # before training it attended differently
    (tmp_path / "uploads").mkdir()
    back = load_run(run_from_zip(run_to_zip(tmp_path / "lapse"), tmp_path / "uploads", "back"))
    assert sorted(back.snapshots) == [0, 2, 5]


def test_damaged_snapshots_are_refused_and_a_run_without_them_loads(run, tmp_path):
    path = save_run(run, tmp_path / "r")
    assert (path / "snapshots.safetensors").is_file()
    good = (path / "snapshots.safetensors").read_bytes()
    from safetensors.torch import save_file

    save_file({"epoch1/head.weight": torch.zeros(7, 7, dtype=torch.float16)}, str(path / "snapshots.safetensors"))
    with pytest.raises(RunError, match="does not fit the model"):
        load_run(path)
    (path / "snapshots.safetensors").write_bytes(good[: len(good) // 2])
    with pytest.raises(RunError, match="cannot be read"):
        load_run(path)
    (path / "snapshots.safetensors").unlink()  # a run saved before snapshots existed
    assert load_run(path).snapshots == {} and load_run(path).forward_over_training("a great movie")[1] == []
    none = Trainer(ModelConfig(n_layers=1, n_heads=2, d_model=16, d_ff=32),
                   TrainConfig(epochs=1, batch_size=4, snapshots=0), dataset_from_lists(TEXTS, LABELS),
                   load_embeddings()).run()
    assert not (save_run(Run.from_result(none), tmp_path / "none") / "snapshots.safetensors").exists()


def test_the_kept_best_epoch_is_among_the_snapshots():
    # Validation rows the training rows do not settle (negations): validation loss is lowest mid-way.
    ds = dataset_from_lists(TEXTS + ["not great at all", "not bad really", "i did not love it", "fun but awful"],
                            LABELS + ["neg", "pos", "neg", "neg"])
    cfg = ModelConfig(n_layers=1, n_heads=2, d_model=16, d_ff=32)
    train = TrainConfig(epochs=12, batch_size=2, val_fraction=0.25, lr=0.05, snapshots=2)  # planned: epochs 0 and 12
    run = Run.from_result(Trainer(cfg, train, ds, load_embeddings()).run())
    best = run.history.best_epoch
    assert best not in (0, 12)  # the case this is about: a kept epoch that was not planned
    assert sorted(run.snapshots) == sorted({0, best, 12})
    kept = dict(run.model.named_parameters())
    assert all(torch.allclose(w.float(), kept[k], atol=1e-2) for k, w in run.snapshots[best].items())


def vectors_file(path: Path, dim: int) -> Path:
    """A GloVe-format file of the words TEXTS use, ``dim`` numbers each (GloVe's first ``dim``)."""
    glove = load_embeddings()
    words = sorted({w for t in TEXTS for w in t.split()})
    path.write_text("".join(f"{w} {' '.join(f'{x:.5f}' for x in glove.vector(w)[:dim])}\n" for w in words))
    return path


def test_a_run_whose_vectors_file_moved_is_pointed_at_its_new_place(tmp_path):
    from attention_core import embeddings as E
    from attention_core.embeddings import EmbeddingSource
    from attention_core.runs import relink_embeddings

    first = vectors_file(tmp_path / "v8.txt", 8)
    emb = load_embeddings(EmbeddingSource("file", str(first)))
    result = Trainer(ModelConfig(n_layers=1, n_heads=2, d_model=8, d_ff=16), TrainConfig(epochs=2, batch_size=4),
                     dataset_from_lists(TEXTS, LABELS), emb).run()
    save_run(Run.from_result(result, name="mine"), tmp_path / "mine")
    before = load_run(tmp_path / "mine").predict("i love it").probabilities
    moved = tmp_path / "elsewhere" / "v8.txt"
    moved.parent.mkdir()
    first.rename(moved)
    E._load_cached.cache_clear()  # as a new process (a restarted server) finds it: the file is not in memory
    E._file_arrays.cache_clear()
    with pytest.raises(EmbeddingError, match="word-vector file not found"):
        load_run(tmp_path / "mine")
    other = vectors_file(tmp_path / "v4.txt", 4)  # a file that does not fit: refused, nothing changed
    vocab = (tmp_path / "mine" / "vocab.json").read_text()
    with pytest.raises(RunError, match="needs 8-d word vectors"):
        relink_embeddings(tmp_path / "mine", str(other))
    assert (tmp_path / "mine" / "vocab.json").read_text() == vocab
    relinked = relink_embeddings(tmp_path / "mine", str(moved))
    assert relinked.predict("i love it").probabilities == pytest.approx(before)
    assert load_run(tmp_path / "mine").encoder.embeddings.source.path == str(moved)  # for good
    assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == sorted(
        ["config.json", "vocab.json", "model.safetensors", "history.json", "snapshots.safetensors"])
