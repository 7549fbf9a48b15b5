"""The app's training job: a process that reports progress, saves its run, and stops itself when its
page or its server is gone."""

from __future__ import annotations

import os
import select
import signal
import socket
import sys

import pytest

from attention_core import ModelConfig, TrainConfig, Trainer, dataset_from_lists, load_embeddings, load_run
from attention_core.errors import ConfigError
from attention_core.history import StepEvent
from attention_core.training import TrainerSpec
from runner import jobs
from runner.jobs import TrainingJob

TEXTS = ["a great movie", "i love it", "wonderful fun", "a terrible movie", "i hate it", "awful boring"]
LABELS = ["pos", "pos", "pos", "neg", "neg", "neg"]
TINY = ModelConfig(n_layers=1, n_heads=2, d_model=16, d_ff=32, dropout=0.0)


def make_job(tmp_path, epochs: int, name: str = "job", built: bool = False, **kwargs) -> TrainingJob:
    """A job as the app makes it: the settings travel, the training process builds the trainer
    (``built``: hand it a built Trainer instead)."""
    spec = TrainerSpec(TINY, TrainConfig(epochs=epochs, batch_size=2, val_fraction=0.0),
                       dataset_from_lists(TEXTS, LABELS), load_embeddings())
    return TrainingJob(spec.build() if built else spec, tmp_path, name, **kwargs)


@pytest.mark.parametrize("built", [False, True], ids=["spec", "built trainer"])
def test_job_trains_in_its_own_process_and_saves_its_run(tmp_path, built):
    job = make_job(tmp_path, epochs=3, built=built)
    assert job.n_train_rows == (6 if built else 0)  # a spec's rows are counted by the process that builds it
    job.start()
    job.join(60)
    assert job.n_train_rows == 6
    snap, h = job.status(), job.history
    assert snap.done and snap.state == "finished" and snap.progress == 1.0
    assert [r.epoch for r in h.epochs] == [1, 2, 3] and snap.epochs_recorded == 3
    assert snap.run_path == tmp_path / "job"
    assert len(h.step_losses) == snap.steps_recorded == 3 * 3  # every step's loss reached the page (6 rows, batches of 2)
    assert h.probes and h.probes[-1].epoch == 3
    assert job.run is not None and [e.epoch for e in job.run.history.epochs] == [1, 2, 3]
    assert load_run(snap.run_path).predict("a great movie").label in ("pos", "neg")


def test_a_job_whose_trainer_cannot_be_built_says_why(tmp_path):
    # Every word unknown: nothing to learn from. The page checks a spec before it starts a job; a
    # job started without that check fails in its process, with the reason, and saves nothing.
    spec = TrainerSpec(TINY, TrainConfig(epochs=1, batch_size=2, val_fraction=0.0, unknown="drop"),
                       dataset_from_lists(["qzxv wvvq", "xqqz zzvk"] * 2, ["a", "b"] * 2), load_embeddings())
    job = TrainingJob(spec, tmp_path, "nothing")
    job.start()
    job.join(60)
    assert job.done and job.state == "failed"
    assert job.message.startswith("Cannot start: ") and "word" in job.message and "Error" not in job.message
    assert list(tmp_path.iterdir()) == []


def test_a_spec_check_raises_what_building_would(tmp_path):
    data, emb = dataset_from_lists(TEXTS, LABELS), load_embeddings()
    cases = [(ModelConfig(n_heads=4, d_model=None, embedding_dim=48), TrainConfig()),  # GloVe is 50-d: 4 do not divide it
             (ModelConfig(max_len=16), TrainConfig(max_tokens=32))]
    for model_cfg, train_cfg in cases:
        spec = TrainerSpec(model_cfg, train_cfg, data, emb)
        with pytest.raises(ConfigError) as checked:
            spec.check()
        with pytest.raises(ConfigError) as built:
            spec.build()
        assert str(checked.value) == str(built.value)


def test_orphaned_job_stops_itself_and_keeps_what_it_learned(tmp_path):
    job = make_job(tmp_path, epochs=100_000, orphan_after=0.0)  # no heartbeat is ever recent enough
    job.start()
    job.join(60)
    assert job.done and job.state == "stopped"
    assert job.status().epochs_recorded < 100_000
    # Stopped mid-first-epoch: nothing complete to keep, so nothing half-written either.
    saved = list(tmp_path.iterdir())
    assert saved == [] or (saved == [tmp_path / "job"] and load_run(saved[0]))


def test_heartbeats_keep_the_job_alive(tmp_path):
    job = make_job(tmp_path, epochs=400, orphan_after=1.5)
    job.start()
    while not job.done:  # the page's fragment: a heartbeat on every poll (at most one a second is sent)
        job.heartbeat()
        job.join(0.2)
    assert job.state == "finished" and job.status().epochs_recorded == 400


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
        assert job.wait_until_paused(60)  # the process reported that it stopped stepping
        seen = list(job.history.step_losses)
        assert job.status().state == "paused" and job.paused
        job.join(0.5)
        assert job.history.step_losses == seen and job.alive  # no step while paused
        job.resume()
        while job.status().steps_recorded == len(seen):
            job.join(0.05)
        job.stop()
    job.join(60)
    assert job.done and job.state == "stopped"


def test_a_job_whose_server_is_gone_stops_and_saves_its_run(tmp_path):
    job = make_job(tmp_path, epochs=100_000)
    job.start()
    while job.status().epochs_recorded < 2:
        job.join(0.05)
    # What the process sees when the server exits or crashes: its end of the socket closes.
    process = os.pidfd_open(job.pid)  # readable once the process has exited
    socket.socket(fileno=os.dup(job._conn.fileno())).shutdown(socket.SHUT_RDWR)
    assert select.select([process], [], [], 60)[0], "the training process did not exit"
    job.join(60)
    saved = load_run(tmp_path / "job")
    assert saved.history.status == "stopped" and len(saved.history.epochs) >= 2


def test_a_crashed_process_is_reported_not_hung(tmp_path):
    job = make_job(tmp_path, epochs=100_000)
    job.start()
    while not job.status().steps_recorded:
        job.join(0.05)
    os.kill(job.pid, signal.SIGKILL)
    job.join(60)
    assert job.done and job.state == "failed"
    assert "ended unexpectedly" in job.message


def test_a_host_that_cannot_start_fails_the_job_at_once_with_a_message(tmp_path, monkeypatch):
    monkeypatch.setattr(jobs.JobHost, "COMMAND", (sys.executable, "-c", "import sys; sys.exit(3)"))
    monkeypatch.setattr(jobs.JobHost, "_current", None)  # a new host, started with that command
    job = make_job(tmp_path, epochs=1)
    job.start()
    job.join(30)  # not the 120 s start-up timeout
    assert job.done and job.state == "failed"
    assert "failed to start (exit code 3)" in job.message  # monkeypatch then puts the working host back


def test_a_job_ships_its_validation_predictions_and_the_live_pace_follows_the_job_count(tmp_path):
    trainer = Trainer(TINY, TrainConfig(epochs=2, batch_size=2, val_fraction=0.5),
                      dataset_from_lists(TEXTS * 2, LABELS * 2), load_embeddings())
    job = TrainingJob(trainer, tmp_path, "val")
    assert jobs.active_jobs() == 0
    job.start()
    assert jobs.active_jobs() == 1
    job.join(60)
    assert jobs.active_jobs() == 0
    texts, _ = job.run.validation
    assert len(texts) == 6 and job.validation_probs.shape == (6, 2)
    assert job.validation_probs == pytest.approx(job.run.predict_proba(texts))  # the same as the server would make
    assert [jobs.live_refresh_seconds(n) for n in (0, 1, 2, 3, 4, 5)] == pytest.approx([0.4, 0.4, 0.4, 0.8, 0.8, 1.2])


def tiny_spec(epochs: int, **train) -> TrainerSpec:
    return TrainerSpec(TINY, TrainConfig(epochs=epochs, batch_size=2, val_fraction=0.0, **train),
                       dataset_from_lists(TEXTS, LABELS), load_embeddings())


def test_a_sequence_trains_one_job_after_the_other_with_no_page_asking(tmp_path):
    ended: list[tuple[str, bool]] = []
    seq = jobs.JobSequence([(k, tiny_spec(e)) for k, e in (("a", 3), ("b", 2), ("c", 4))], tmp_path)
    seq.start()
    assert list(seq.jobs) == ["a"] and seq.queued == ["b", "c"] and seq.alive
    first = seq.jobs["a"]
    first_on_end = first.on_end
    first.on_end = lambda job: (ended.append((job.name, any(j.alive for j in seq.jobs.values() if j is not job))),
                                first_on_end(job))
    assert seq.join(180)  # nobody calls the page: each job's end started the next
    assert list(seq.jobs) == ["a", "b", "c"] and seq.queued == [] and seq.done and seq.error is None
    assert ended == [("a", False)]  # "a" had ended, and no other job trained beside it, when "b" was started
    assert [len(j.run.history.epochs) for j in seq.jobs.values()] == [3, 2, 4]
    assert {j.state for j in seq.jobs.values()} == {"finished"}
    s = seq.status()
    assert (s.state, s.epoch, s.epochs, s.progress) == ("finished", 4, 4, 1.0)


def test_a_stopped_sequence_starts_nothing_more_and_keeps_the_run_it_stopped(tmp_path):
    seq = jobs.JobSequence([("a", tiny_spec(100_000)), ("b", tiny_spec(2))], tmp_path)
    seq.start()
    while seq.jobs["a"].status().epochs_recorded < 2:
        seq.heartbeat()
        seq.jobs["a"].join(0.05)
    assert seq.status().state == "running (1 of 2)" and 0 < seq.status().progress < 0.5  # the first of two, far from its end
    seq.stop()
    assert seq.join(60)
    assert list(seq.jobs) == ["a"] and seq.jobs["a"].state == "stopped" and seq.queued == []
    assert [p.name for p in tmp_path.iterdir()] == ["a"] and len(load_run(tmp_path / "a").history.epochs) >= 2


def test_a_sequence_whose_next_job_cannot_start_says_which_and_why(tmp_path):
    bad = TrainerSpec(ModelConfig(max_len=16), TrainConfig(max_tokens=32), dataset_from_lists(TEXTS, LABELS),
                      load_embeddings())
    seq = jobs.JobSequence([("a", tiny_spec(1)), ("bad", bad), ("c", tiny_spec(1))], tmp_path)
    seq.start()
    assert seq.join(60)
    assert list(seq.jobs) == ["a"] and seq.queued == []
    assert seq.error.startswith("bad cannot start: max_tokens = 32 exceeds the model's max_len")


def test_a_sequence_nobody_asks_after_starts_nothing_more(tmp_path):
    seq = jobs.JobSequence([("a", tiny_spec(2)), ("b", tiny_spec(2))], tmp_path)  # its jobs: 90 s without heartbeats
    seq.start()
    seq.orphan_after = 0.0  # the sequence itself: no heartbeat is ever recent enough
    assert seq.join(60)
    assert list(seq.jobs) == ["a"] and seq.jobs["a"].state == "finished" and seq.queued == []


def test_a_stopped_job_shows_how_far_it_got_not_a_full_bar(tmp_path):
    job = make_job(tmp_path, epochs=100_000)
    job.start()
    while job.status().epochs_recorded < 2:
        job.join(0.05)
    job.stop()
    job.join(60)
    snap = job.status()
    assert snap.done and snap.state == "stopped"
    trained = snap.epochs_recorded
    assert (trained - 1) / 100_000 <= snap.progress <= trained / 100_000  # where it stopped, not 100 %
    assert (snap.state, snap.epochs) == ("stopped", 100_000)
    # Only a job that trained every epoch fills the bar; one ended early by its time budget or a divergence does not.
    step = StepEvent(epoch=3, step=10, steps_per_epoch=4, loss=0.5, examples_seen=80, seconds=1.0)  # 2nd of epoch 3
    assert step.step_in_epoch == 2
    assert jobs._fraction_done(step, 10, "finished") == 1.0
    for state in ("stopped", "time budget", "diverged", "failed"):
        assert jobs._fraction_done(step, 10, state) == pytest.approx(0.25)


def test_a_job_trains_on_any_backend_that_keeps_the_protocol(tmp_path):
    """The seam a distributed queue would fill (docs/deploy.md): a TrainingJob hands its request to
    whatever ``TrainingBackend`` it is given and folds the reports of the returned line."""
    from runner.protocol import Command, Ended, JobRequest, Started, Stepped

    requests: list[JobRequest] = []
    sent: list[Command] = []

    class Line:
        def __init__(self) -> None:
            self.reports = iter([Started(4242, 6), Stepped(StepEvent(1, 3, 3, 0.5, 6, 0.5), [0.7, 0.6, 0.5]),
                                 Ended("stopped", "stopped by the learner", None, None)])

        def send(self, command: Command) -> None:
            sent.append(command)

        def recv(self):
            return next(self.reports)

        def close(self) -> None:
            pass

    class Backend:
        def start(self, request: JobRequest) -> Line:
            requests.append(request)
            return Line()

    job = make_job(tmp_path, epochs=3, name="elsewhere", backend=Backend)
    job.stop()  # asked before the line exists: sent once it does
    job.start()
    job.join(10)
    snap = job.status()
    assert [r.name for r in requests] == ["elsewhere"] and requests[0].runs_dir == tmp_path
    assert sent == [Command.STOP]
    assert snap.done and snap.state == "stopped" and snap.message == "stopped by the learner"
    assert job.pid == 4242 and job.history.step_losses == [0.7, 0.6, 0.5] and snap.epoch == 1
    assert list(tmp_path.iterdir()) == []  # this backend saved nothing, and the job wrote nothing itself
