"""The Train page's words on how a training ended (ui.train_views.ending, and kept_model in its results'
caption), from a real training's history.

The default preset stops by patience (issue 15): a learner who asked for 40 epochs and got 9 is told why.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from attention_core import ModelConfig, TrainConfig, Trainer, load_embeddings
from attention_core.training import History, patience_stop
from runner.jobs import JobStatus
from tests.helpers.tiny_data import tiny_sentiment
from ui.train_views import ending, kept_model

MODEL = ModelConfig(n_layers=1, n_heads=2, d_model=16, d_ff=32, pooling="attention", local_conv=3)


@pytest.fixture(scope="module")
def train():
    emb, ds = load_embeddings(), tiny_sentiment()
    return lambda **options: Trainer(MODEL, config(**options), ds, emb).run().history


def config(**options) -> TrainConfig:
    return TrainConfig(batch_size=4, lr=0.05, val_fraction=0.34, **options)


def snapshot(history: History, planned: int, run_path: Path) -> JobStatus:
    """What the job reports once its training has ended and its run is saved (in ``run_path``)."""
    run_path.mkdir()
    return JobStatus(history.status, planned, 0.0, epochs_recorded=len(history.epochs), message=history.message,
                     run_path=run_path, done=True)


def test_a_training_ended_by_its_patience_says_so_and_why(train, tmp_path):
    history = train(epochs=200, patience=2)
    trained = len(history.epochs)
    assert history.status == "finished" and trained < 200  # the precondition: patience ended it
    said = ending(snapshot(history, 200, tmp_path / "early"), config(epochs=200, patience=2))
    assert said == (f"Training finished: {trained} of 200 epochs. Stopped early after epoch {trained}: validation loss "
                    f"has not improved for 2 epochs (best at epoch {history.kept_epoch}). Saved as run `early`.")
    # The results' caption says it too, briefly (it said "epoch k of n (200 planned)", as for a Stop).
    assert kept_model(history, config(epochs=200, patience=2)) == (
        f"epoch {history.kept_epoch} (stopped by patience 2 after {trained} of 200 planned epochs)")


def test_a_training_that_ran_all_its_epochs_gives_no_reason(train, tmp_path):
    history = train(epochs=3, patience=3)  # too few epochs for a patience of 3 to end it
    assert (history.status, len(history.epochs), history.message) == ("finished", 3, "")
    assert ending(snapshot(history, 3, tmp_path / "full"), config(epochs=3, patience=3)) == (
        "Training finished: all 3 epochs. Saved as run `full`.")
    assert kept_model(history, config(epochs=3, patience=3)) == f"epoch {history.kept_epoch} of 3"


def test_a_stopped_training_is_told_as_before(train, tmp_path):
    history = train(epochs=2)
    history.status, history.message = "stopped", "stopped by the user after 2 epoch(s)"
    said = ending(snapshot(history, 50, tmp_path / "mine"), config(epochs=50, patience=2))
    assert said == "Training stopped after 2 of 50 epochs. Saved as run `mine`."
    assert not re.search("(?i)stopped by the user|patience|improved", said)
    assert kept_model(history, config(epochs=50, patience=2)) == f"epoch {history.kept_epoch} of 2 (50 planned)"


@pytest.mark.parametrize(("status", "trained", "patience", "said"), [
    ("finished", 12, 4, "stopped by patience 4 after 12 of 40 planned epochs"),
    ("finished", 40, 4, ""),  # ran every epoch
    ("finished", 12, None, ""),  # no patience: the data ran out (no training rows)
    ("stopped", 12, 4, ""), ("time budget", 12, 4, ""), ("diverged", 12, 4, "")])
def test_only_a_run_its_patience_ended_is_said_to_be_stopped_by_patience(status, trained, patience, said):
    assert patience_stop(status, trained, TrainConfig(epochs=40, patience=patience)) == said


def test_a_time_budget_that_cuts_an_epoch_short_says_where_not_all_epochs(tmp_path):
    """A fine-tuning's one epoch cut by its budget at step 9 of 75 read "after all 1 epoch" (seen in Chromium)."""
    from attention_core.history import StepEvent

    (tmp_path / "tuned").mkdir()
    cut = JobStatus("time budget", 1, 0.1, step=StepEvent(1, 9, 75, 0.66, 288, 8.2), epochs_recorded=1,
                    run_path=tmp_path / "tuned", done=True)
    assert ending(cut, TrainConfig(epochs=1, time_budget=8)) == (
        "Training reached its time budget of 8 s at step 9 of 75 of epoch 1 of 1. Saved as run `tuned`.")
    whole = JobStatus("time budget", 3, 0.6, step=StepEvent(2, 150, 75, 0.5, 4800, 9.0), epochs_recorded=2,
                      run_path=tmp_path / "tuned", done=True)
    assert ending(whole, TrainConfig(epochs=3, time_budget=8)).startswith(
        "Training reached its time budget of 8 s after 2 of 3 epochs.")


def test_every_uploader_sets_its_own_limit_and_the_servers_is_the_largest_of_them():
    """The server refuses any upload over .streamlit/config.toml's server.maxUploadSize, whatever the uploader says:
    at 25 MB (the CSVs') a fine-tuned encoder's run zip (~27 MB) came back 413 after the app offered it for download.
    So the server's limit is the run zip's (run_folders.MAX_ZIP_BYTES) and each uploader passes its own."""
    import ast
    import tomllib

    from attention_core.data import MAX_FILE_BYTES
    from attention_core.run_folders import MAX_ZIP_BYTES

    root = Path(__file__).resolve().parents[2]
    limits = {}
    for path in sorted([*(root / "pages").glob("*.py"), *(root / "ui").glob("*.py"), root / "app.py"]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "file_uploader":
                keywords = {k.arg: ast.unparse(k.value) for k in node.keywords}
                limits[keywords.get("key")] = keywords.get("max_upload_size")
    assert limits == {"'train_upload'": "MAX_FILE_BYTES // 2 ** 20", "'train_run_upload'": "MAX_ZIP_BYTES // 2 ** 20"}
    server = tomllib.loads((root / ".streamlit" / "config.toml").read_text())["server"]["maxUploadSize"]
    assert server == MAX_ZIP_BYTES // 2**20 > MAX_FILE_BYTES // 2**20
