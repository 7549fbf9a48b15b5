"""The app's training job: a thread that saves its run, and stops itself when its page is gone."""

from __future__ import annotations

import pytest

from attention_core import ModelConfig, TrainConfig, Trainer, dataset_from_lists, load_embeddings, load_run
from ui import jobs
from ui.jobs import TrainingJob

TEXTS = ["a great movie", "i love it", "wonderful fun", "a terrible movie", "i hate it", "awful boring"]
LABELS = ["pos", "pos", "pos", "neg", "neg", "neg"]
TINY = ModelConfig(n_layers=1, n_heads=2, d_model=16, d_ff=32, dropout=0.0)


def make_job(tmp_path, epochs: int, name: str = "job") -> TrainingJob:
    trainer = Trainer(TINY, TrainConfig(epochs=epochs, batch_size=2, val_fraction=0.0),
                      dataset_from_lists(TEXTS, LABELS), load_embeddings())
    return TrainingJob(trainer, tmp_path, name)


def test_job_trains_in_a_thread_and_saves_its_run(tmp_path):
    job = make_job(tmp_path, epochs=3)
    job.start()
    job.join(60)
    snap = job.snapshot()
    assert snap.done and snap.state == "finished" and snap.progress == 1.0
    assert [r["epoch"] for r in snap.epoch_records] == [1, 2, 3]
    assert snap.run_path == tmp_path / "job"
    assert load_run(snap.run_path).predict("a great movie").label in ("pos", "neg")


def test_orphaned_job_stops_itself_and_keeps_what_it_learned(tmp_path, monkeypatch):
    monkeypatch.setattr(jobs, "ORPHAN_AFTER", 0.0)  # every step now looks like a closed tab
    job = make_job(tmp_path, epochs=100_000)
    job.start()
    job.join(60)
    assert job.done and job.state == "stopped"
    assert len(job.trainer.history.epochs) < 100_000
    # Stopped mid-first-epoch: nothing complete to keep, so nothing half-written either.
    saved = list(tmp_path.iterdir())
    assert saved == [] or (saved == [tmp_path / "job"] and load_run(saved[0]))


def test_a_heartbeat_keeps_the_job_alive(tmp_path, monkeypatch):
    monkeypatch.setattr(jobs, "ORPHAN_AFTER", 3600.0)
    job = make_job(tmp_path, epochs=4)
    job.heartbeat()
    job.start()
    job.join(60)
    assert job.state == "finished" and len(job.trainer.history.epochs) == 4


def test_a_second_run_with_the_same_name_gets_its_own_folder(tmp_path):
    for _ in range(2):
        job = make_job(tmp_path, epochs=1, name="same")
        job.start()
        job.join(60)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["same", "same-2"]


@pytest.mark.parametrize("action", ["pause", "stop"])
def test_controls_reach_the_trainer(tmp_path, action):
    job = make_job(tmp_path, epochs=100_000)
    job.start()
    getattr(job, action)()
    if action == "pause":
        assert job.trainer.wait_until_paused(60)
        assert job.snapshot().state == "paused"
        job.stop()
    job.join(60)
    assert job.done and job.state == "stopped"
