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
from attention_core.run_folders import list_runs, run_from_zip, run_to_zip
from tests.helpers.tiny_data import LABELS, TEXTS, vectors_file


@pytest.fixture(scope="module")
def run() -> Run:
    ds = dataset_from_lists(TEXTS, LABELS)
    cfg = ModelConfig(n_layers=2, n_heads=2, d_model=16, d_ff=32, positional="learned")
    return Trainer(cfg, TrainConfig(epochs=3, batch_size=4, val_fraction=0.25), ds, load_embeddings()).run(name="tiny")


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
    save_run(run, tmp_path / "r", overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]
    assert list_runs(tmp_path) == [tmp_path / "r"]


def test_crash_mid_save_keeps_the_old_run(run, tmp_path, monkeypatch):
    save_run(run, tmp_path / "r")
    before = (tmp_path / "r" / "model.safetensors").read_bytes()

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr("attention_core.runs.save_file", boom)
    with pytest.raises(OSError, match="disk full"):
        save_run(run, tmp_path / "r", overwrite=True)
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
    assert run_from_zip(data, tmp_path, "copy of r").name == "copy-of-r-2"  # a taken name gets -2, as training does
    assert load_run(tmp_path / "copy-of-r").predict("i love it").probabilities == run.predict("i love it").probabilities
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
    result = Trainer(cfg, train, dataset_from_lists(TEXTS, LABELS), load_embeddings()).run(name="lapse")
    assert sorted(result.snapshots) == sorted(snapshot_epochs(5, 3)) == [0, 2, 5]
    assert all(t.dtype == torch.float16 for w in result.snapshots.values() for t in w.values())
    saved = load_run(save_run(result, tmp_path / "lapse"))
    assert sorted(saved.snapshots) == [0, 2, 5]
    steps = saved.forward_over_training("a really great movie")
    assert [e for e, _ in steps] == [0, 2, 5]
    assert all(list(seen.encoded.tokens) == ["a", "really", "great", "movie"] for _, seen in steps)
    out = saved.forward("a really great movie")
    probs, attn = out.probabilities, out.attention
    last = steps[-1][1]
    assert last.attention.shape == attn.shape  # (layers, heads, tokens, tokens)
    assert torch.allclose(last.attention, attn, atol=2e-2) and torch.allclose(last.probabilities, probs, atol=2e-2)
    assert not torch.allclose(steps[0][1].attention, attn, atol=2e-2)  # before training it attended differently
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
    assert load_run(path).snapshots == {} and load_run(path).forward_over_training("a great movie") == []
    none = Trainer(ModelConfig(n_layers=1, n_heads=2, d_model=16, d_ff=32),
                   TrainConfig(epochs=1, batch_size=4, snapshots=0), dataset_from_lists(TEXTS, LABELS),
                   load_embeddings()).run()
    assert not (save_run(none, tmp_path / "none") / "snapshots.safetensors").exists()


def test_the_kept_best_epoch_is_among_the_snapshots():
    # Validation rows the training rows do not settle (negations): validation loss is lowest mid-way.
    ds = dataset_from_lists(TEXTS + ["not great at all", "not bad really", "i did not love it", "fun but awful"],
                            LABELS + ["neg", "pos", "neg", "neg"])
    cfg = ModelConfig(n_layers=1, n_heads=2, d_model=16, d_ff=32)
    train = TrainConfig(epochs=12, batch_size=2, val_fraction=0.25, lr=0.05, snapshots=2)  # planned: epochs 0 and 12
    run = Trainer(cfg, train, ds, load_embeddings()).run()
    best = run.history.kept_epoch
    assert best not in (0, 12)  # the case this is about: a kept epoch that was not planned
    assert sorted(run.snapshots) == sorted({0, best, 12})
    kept = dict(run.model.named_parameters())
    assert all(torch.allclose(w.float(), kept[k], atol=1e-2) for k, w in run.snapshots[best].items())




def test_a_run_whose_vectors_file_moved_is_pointed_at_its_new_place(tmp_path):
    from attention_core import embeddings as E
    from attention_core.embeddings import EmbeddingSource
    from attention_core.runs import relink_embeddings

    first = vectors_file(tmp_path / "v8.txt", 8)
    emb = load_embeddings(EmbeddingSource("file", str(first)))
    result = Trainer(ModelConfig(n_layers=1, n_heads=2, d_model=8, d_ff=16), TrainConfig(epochs=2, batch_size=4),
                     dataset_from_lists(TEXTS, LABELS), emb).run(name="mine")
    save_run(result, tmp_path / "mine")
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


# -- run folders: nothing but a run's own files is ever replaced, renamed over or deleted -------------------------


def _snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file and folder under ``root`` with its bytes: what a user would lose."""
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


def _users_files(folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "thesis.txt").write_text("three years of work")
    (folder / "sub").mkdir()
    (folder / "sub" / "data.bin").write_bytes(bytes(range(256)))


@pytest.mark.parametrize("what", ["folder with files", "file", "link"])
def test_save_run_never_replaces_what_is_not_a_run(run, tmp_path, what):
    target = tmp_path / "target"
    if what == "folder with files":
        _users_files(target)
    elif what == "file":
        target.write_text("a user's file")
    else:
        _users_files(tmp_path / "elsewhere")
        target.symlink_to(tmp_path / "elsewhere")
    before = _snapshot(tmp_path)
    for overwrite in (False, True):
        with pytest.raises(RunError):
            save_run(run, target, overwrite=overwrite)
    assert _snapshot(tmp_path) == before


def test_save_run_replaces_a_run_only_when_asked_and_keeps_unknown_files(run, tmp_path):
    save_run(run, tmp_path / "r")
    before = _snapshot(tmp_path)
    with pytest.raises(RunError, match="already holds a run"):
        save_run(run, tmp_path / "r")
    assert _snapshot(tmp_path) == before
    (tmp_path / "r" / "notes.txt").write_text("mine")  # no longer only a run's files
    with pytest.raises(RunError, match="other files"):
        save_run(run, tmp_path / "r", overwrite=True)
    assert (tmp_path / "r" / "notes.txt").read_text() == "mine"
    (tmp_path / "empty").mkdir()
    assert load_run(save_run(run, tmp_path / "empty")).label_names == run.label_names  # an empty folder is used


def test_prepare_destination_finds_every_problem_before_training(run, tmp_path, monkeypatch):
    from attention_core.run_folders import OUT_HINT, prepare_destination

    _users_files(tmp_path / "home")
    (tmp_path / "a_file").write_text("mine")
    save_run(run, tmp_path / "old_run")
    before = _snapshot(tmp_path)
    monkeypatch.chdir(tmp_path / "home")
    for bad, message in [(".", "not a name"), ("..", "not a name"), ("/", "not a name"), ("", "not a name"),
                         (str(tmp_path / "home"), "other files in it .sub, thesis.txt"),
                         (str(tmp_path / "a_file"), "is a file"), (str(tmp_path / "a_file" / "x"), "cannot write"),
                         (str(tmp_path / "old_run"), "already holds a run"), ("x" * 300, "cannot write")]:
        with pytest.raises(RunError, match=message) as err:
            prepare_destination(bad)
        assert str(err.value).endswith(OUT_HINT) or "cannot write" in message
    with pytest.raises(RunError, match="--overwrite only replaces a run"):
        prepare_destination(tmp_path / "home", overwrite=True)
    assert _snapshot(tmp_path) == before

    dest = prepare_destination(tmp_path / "new" / "deeper" / "run")  # made now, so a later save cannot fail on it
    assert dest.path.is_dir() and not any(dest.path.iterdir())
    dest.release()  # a training that failed leaves nothing behind
    assert not (tmp_path / "new").exists()
    assert prepare_destination(tmp_path / "old_run", overwrite=True).path == tmp_path / "old_run"


def test_prepare_destination_refuses_a_folder_it_cannot_write(tmp_path, monkeypatch):
    from attention_core.run_folders import prepare_destination

    locked = tmp_path / "locked"
    locked.mkdir()
    if os.geteuid() != 0:
        locked.chmod(0o500)
    else:  # root may write anywhere: the file system's refusal is simulated
        real_mkdir = Path.mkdir

        def refuse(self, *args, **kwargs):
            if self.parent == locked:
                raise PermissionError(13, "Permission denied", str(self))
            return real_mkdir(self, *args, **kwargs)

        monkeypatch.setattr(Path, "mkdir", refuse)
    try:
        with pytest.raises(RunError, match="cannot write a run to .*Permission denied"):
            prepare_destination(locked / "run")
        assert list(locked.iterdir()) == []
    finally:
        locked.chmod(0o700)


def test_rename_run_refuses_taken_and_unsafe_names_and_renames_for_good(run, tmp_path):
    from attention_core.run_folders import rename_run

    runs = tmp_path / "runs"
    save_run(run, runs / "a")
    save_run(run, runs / "b")
    _users_files(tmp_path / "x")  # a user's folder beside the runs folder: '../x' must never reach it
    before = _snapshot(tmp_path)
    for bad, message in [("b", "exists already"), ("../x", "cannot name a run"), ("a/b", "cannot name a run"),
                         ("", "needs a name"), (".hidden", "cannot name a run"), ("y" * 81, "81 characters"),
                         ("..", "cannot name a run"), ("/tmp/z", "cannot name a run")]:
        with pytest.raises(RunError, match=message):
            rename_run(runs, "a", bad)
    with pytest.raises(RunError, match="no run named"):
        rename_run(runs, "../x", "c")
    assert _snapshot(tmp_path) == before

    renamed = rename_run(runs, "a", "a-better-name")
    assert renamed == runs / "a-better-name" and not (runs / "a").exists()
    assert load_run(renamed).name == "a-better-name"  # the name it shows follows the folder


def test_delete_run_removes_only_a_run(run, tmp_path):
    from attention_core.run_folders import delete_run

    runs = tmp_path / "runs"
    save_run(run, runs / "gone")
    save_run(run, runs / "kept")
    (runs / "kept" / "my-notes.txt").write_text("mine")
    _users_files(tmp_path / "outside")
    save_run(run, tmp_path / "outside" / "run")
    (runs / "link").symlink_to(tmp_path / "outside" / "run")
    delete_run(runs, "gone")
    assert not (runs / "gone").exists()
    before = _snapshot(tmp_path)
    for name, message in [("kept", "not part of a run .my-notes.txt"), ("link", "no run named"),
                          ("../outside/run", "no run named"), ("..", "no run named"), ("missing", "no run named")]:
        with pytest.raises(RunError, match=message):
            delete_run(runs, name)
    assert _snapshot(tmp_path) == before
    assert [p.name for p in list_runs(runs)] == ["kept"]  # a link is not listed as a run


def _zip_with(entries: dict[str, bytes], links: dict[str, str] | None = None) -> bytes:
    import io

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
        for name, target in (links or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o120777 << 16)  # a symbolic link, as `zip --symlinks` stores it
            zf.writestr(info, target)
    return buf.getvalue()


def test_run_zips_with_paths_outside_or_links_are_refused(run, tmp_path):
    save_run(run, tmp_path / "r")
    files = {name: (tmp_path / "r" / name).read_bytes() for name in ("config.json", "vocab.json", "model.safetensors",
                                                                      "history.json")}
    runs = tmp_path / "runs"
    runs.mkdir()
    before = _snapshot(tmp_path)
    for bad, message in [
        ({**files, "../../config.json": b"{}"}, "outside its own folder"),
        ({f"../{k}": v for k, v in files.items()}, "outside its own folder"),
        ({**{k: v for k, v in files.items() if k != "config.json"}, "/etc/config.json": files["config.json"]},
         "outside its own folder"),
        ({**{f"a/{k}": v for k, v in files.items()}, "b/history.json": b"{}"}, "more than one folder"),
    ]:
        with pytest.raises(RunError, match=message):
            run_from_zip(_zip_with(bad), runs, "evil")
    with pytest.raises(RunError, match="link"):
        run_from_zip(_zip_with({k: v for k, v in files.items() if k != "vocab.json"}, {"vocab.json": "/etc/passwd"}),
                     runs, "evil")
    assert _snapshot(tmp_path) == before
    inside_a_folder = _zip_with({f"my-run/{k}": v for k, v in files.items()})  # as a zip tool packs a folder
    assert load_run(run_from_zip(inside_a_folder, runs, "my-run")).label_names == run.label_names


def test_runs_saved_at_the_same_moment_under_one_name_get_their_own_folders(run, tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    from attention_core.runs import save_new_run

    with ThreadPoolExecutor(8) as pool:
        paths = list(pool.map(lambda _: save_new_run(run, tmp_path, "same name"), range(8)))
    assert sorted(p.name for p in paths) == sorted(["same-name"] + [f"same-name-{n}" for n in range(2, 9)])
    assert all(load_run(p).label_names == run.label_names for p in paths)
    assert {load_run(p).name for p in paths} == {p.name for p in paths}  # each named after its folder, not 'same name'
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in paths)  # no temporary folders left


def test_a_run_summary_is_read_from_its_json_and_its_stamp_follows_every_file(run, tmp_path):
    from attention_core.run_folders import read_run_summary, rename_run, run_stamp

    save_run(run, tmp_path / "r")
    s = read_run_summary(tmp_path / "r")
    kept = run.history.kept_epoch
    assert (s.name, s.status, s.epochs_trained, s.epochs_planned, s.kept_epoch) == ("r", "finished", 3, 3, kept)
    assert s.kept_val_accuracy == next(e.val_accuracy for e in run.history.epochs if e.epoch == kept)
    assert (s.n_layers, s.n_heads) == (2, 2)
    before = run_stamp(tmp_path / "r")
    vocab = tmp_path / "r" / "vocab.json"  # what relinking a word-vector file rewrites, a moment later:
    os.utime(vocab, ns=(vocab.stat().st_atime_ns, vocab.stat().st_mtime_ns + 1_000_000))
    assert run_stamp(tmp_path / "r") != before
    assert run_stamp(rename_run(tmp_path, "r", "r2"))[0].endswith("r2")
    (tmp_path / "r2" / "history.json").write_text("{")
    with pytest.raises(RunError, match="not valid JSON"):
        read_run_summary(tmp_path / "r2")


def test_run_folders_workspaces_and_the_preview_load_no_torch_and_a_runs_list_line_needs_none(run, tmp_path):
    """The run-folder owner, the workspaces and the home page's preview import no torch, and the
    runs list's line of a run (its summary) is read without it: in a fresh interpreter."""
    import subprocess
    import sys

    save_run(run, tmp_path / "r")
    code = ("import json, sys\n"
            "import attention_core.run_folders as rf, attention_core.workspaces, ui.preview\n"
            f"s = rf.read_run_summary({str(tmp_path / 'r')!r})\n"
            "print(json.dumps({'torch': 'torch' in sys.modules, 'summary': [s.name, s.epochs_trained, s.n_heads]}))")
    out = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2],
                         capture_output=True, text=True, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {"torch": False, "summary": ["r", len(run.history.epochs), run.model_config.n_heads]}


def test_one_sentence_runs_in_eval_mode_without_gradients_and_restores_the_mode(run):
    from attention_core.sentence import run_sentence

    enc, batch = run.encoder.encode_for_model("a really great movie")
    with torch.no_grad():
        want_logits, want_attn = run.model.eval()(batch.ids, batch.mask, batch.extra)
    run.model.train()
    try:
        seen = run_sentence(run.model, run.encoder, "a really great movie")
        assert run.model.training  # the caller's mode is kept
        assert seen.encoded == enc
        assert torch.equal(seen.probabilities, torch.softmax(want_logits[0], -1))
        assert torch.equal(seen.attention, want_attn[:, 0])
        assert not seen.probabilities.requires_grad and not seen.attention.requires_grad
        out = run.forward("a really great movie")
        assert torch.equal(out.probabilities, seen.probabilities) and torch.equal(out.attention, seen.attention)
        assert run.model.training
    finally:
        run.model.eval()


def test_forward_over_training_gives_each_snapshots_sentence_output(run):
    """(epoch, SentenceOutput) per snapshot, oldest first, equal to the bit to the sentence through a model
    loaded with that epoch's weights (the way the time-lapse computed it before)."""
    import copy

    from attention_core.sentence import SentenceOutput, run_sentence

    text = "a really great xqzzy movie"
    before = {k: v.clone() for k, v in run.model.state_dict().items()}
    steps = run.forward_over_training(text)
    assert all(torch.equal(v, before[k]) for k, v in run.model.state_dict().items())  # the run's own model is untouched
    assert [e for e, _ in steps] == sorted(run.snapshots) and len(steps) >= 2
    for epoch, seen in steps:
        assert isinstance(seen, SentenceOutput)
        model = copy.deepcopy(run.model)
        model.load_state_dict({k: v.float() for k, v in run.snapshots[epoch].items()}, strict=False)
        want = run_sentence(model, run.encoder, text)
        assert seen.encoded == want.encoded and seen.encoded.unknown == ("xqzzy",)
        assert torch.equal(seen.probabilities, want.probabilities) and torch.equal(seen.attention, want.attention)


def test_batched_probabilities_run_the_models_forward_in_eval_mode_without_gradients_and_keep_the_mode(run):
    """predict_proba calls the model itself (model.forward: the one layer order), in eval mode without
    gradients, as run_sentence does, and gives the model back in the mode it had (it was left in eval)."""
    seen = []
    hook = run.model.register_forward_hook(lambda module, args, out: seen.append((module.training, torch.is_grad_enabled())))
    run.model.train()
    try:
        texts = ["i love this fantastic product", "terrible", "xqzzy", "the food was not good at all, sadly"]
        probs = run.predict_proba(texts, batch_size=2)
        assert run.model.training
        assert seen == [(False, False)] * 2  # 3 sentences with a known word, 2 batches
        run.model.eval()
        for text, row in zip(texts, probs, strict=True):
            if text != "xqzzy":
                single = run.forward(text).probabilities.double().numpy()
                np.testing.assert_allclose(row, single, atol=1e-6)
    finally:
        hook.remove()
        run.model.eval()


@pytest.mark.parametrize("overwrite", [False, True])
def test_save_run_and_prepare_destination_follow_one_rule_of_what_may_be_replaced(run, tmp_path, overwrite):
    """A run may go where nothing is, into an empty folder, or over a run with overwrite; the check before a
    training and the save itself refuse the same places, each message starting '<path> <what is there>'."""
    from attention_core.run_folders import prepare_destination

    places = {"missing": None, "empty": "empty", "run": "run", "file": "file", "link": "link", "other": "other"}
    for name, kind in places.items():
        path = tmp_path / name
        if kind == "empty":
            path.mkdir()
        elif kind == "run":
            save_run(run, path)
        elif kind == "file":
            path.write_text("mine")
        elif kind == "link":
            path.symlink_to(tmp_path)
        elif kind == "other":
            _users_files(path)
        errors = []
        for check in (lambda p: prepare_destination(p, overwrite=overwrite), lambda p: save_run(run, p, overwrite=overwrite)):
            try:
                check(path)
                errors.append(None)
            except RunError as err:
                errors.append(err.message)
        refused = name in ("file", "link", "other") or (name == "run" and not overwrite)
        assert [e is not None for e in errors] == [refused, refused], name
        if refused:
            save_message = errors[1]
            assert errors[0].startswith(save_message) and save_message.startswith(f"{path} "), name


def test_minilm_never_names_a_run_its_links_and_the_cli_open_the_pretrained_encoder(tmp_path):
    """?run=minilm and the CLI's `predict minilm …` open the bundled pretrained encoder: a run of that name would be
    shadowed by it, so none gets it (a training or an upload takes minilm-2, a rename to it is refused)."""
    from attention_core.run_folders import check_run_name, claim_free_folder, rename_run

    with pytest.raises(RunError, match="names the bundled pretrained encoder"):
        check_run_name("minilm")
    assert check_run_name("minilm-tuned") == "minilm-tuned"
    assert claim_free_folder(tmp_path, "minilm").name == "minilm-2"
    run = claim_free_folder(tmp_path, "mine")
    shutil.copytree(Path(__file__).resolve().parents[2] / "data" / "default_run", run, dirs_exist_ok=True)
    with pytest.raises(RunError, match="names the bundled pretrained encoder"):
        rename_run(tmp_path, "mine", "minilm")
    assert run.is_dir() and not (tmp_path / "minilm").exists()
