"""Trainings on the shared queue (RQ over a real redis-server, real workers as processes): the command line, a
page's job controls, the place in line, a second watcher, torch in forked work horses, a worker that dies."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from attention_core import ModelConfig, TrainConfig, dataset_from_lists, load_embeddings, load_run
from attention_core.cli import EXIT_BAD_INPUT
from attention_core.training import TrainerSpec
from runner import distributed, jobs
from runner.distributed import BrokerBackend
from runner.jobs import TrainingJob
from runner.protocol import Command, Ended, EpochDone, JobRequest, Queued, Restarted, Started
from tests.helpers.broker import ROOT, RedisServer, Worker, free_port, wait_for

TEXTS = ["a great movie", "i love it", "wonderful fun", "a terrible movie", "i hate it", "awful boring"]
LABELS = ["pos", "pos", "pos", "neg", "neg", "neg"]
TINY = ModelConfig(n_layers=1, n_heads=2, d_model=16, d_ff=32, dropout=0.0)


def spec(epochs: int) -> TrainerSpec:
    return TrainerSpec(TINY, TrainConfig(epochs=epochs, batch_size=2, val_fraction=0.0),
                       dataset_from_lists(TEXTS, LABELS), load_embeddings())


def on(server: RedisServer, db: int) -> str:
    """The broker URL of database ``db`` of ``server``: each test that needs its own queue takes its own database."""
    return server.url.rsplit("/", 1)[0] + f"/{db}"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def worker(broker, tmp_path_factory):
    w = Worker(broker.url, tmp_path_factory.mktemp("worker")).wait_ready()
    yield w
    w.stop()


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "runner", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)


def test_train_on_a_worker_saves_where_out_says_and_prints_the_summary(broker, worker, tmp_path):
    out = tmp_path / "shared" / "uci-small"
    done = cli("train", "data/small.csv", "--out", str(out), "--broker", broker.url, "--epochs", "3", "--quiet")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["run"] == str(out) and summary["epochs"] == 3
    assert "training on a worker" in done.stderr
    run = load_run(out)
    assert [e.epoch for e in run.history.epochs] == [1, 2, 3]
    assert sorted(p.name for p in out.parent.iterdir()) == ["uci-small"]  # one run, no leftovers beside it


def test_ctrl_c_while_the_command_waits_in_line_cancels_it_and_says_so_once(broker, tmp_path):
    url = on(broker, 9)  # no worker takes from this database's queue
    proc = subprocess.Popen([sys.executable, "-m", "runner", "train", "data/small.csv", "--out", str(tmp_path / "r"),
                             "--broker", url, "--epochs", "3", "--quiet"], cwd=ROOT, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        seen = []
        wait_for(lambda: seen.append(proc.stderr.readline()) or "waiting in line" in seen[-1], 120, "its place")
        proc.send_signal(signal.SIGINT)
        said = proc.communicate(timeout=60)[1]
    finally:
        proc.kill()
    assert proc.returncode == EXIT_BAD_INPUT and "cancelled before it started" in said, said
    assert said.count("nothing was") == 1, said  # (was: "… nothing was trained or saved: nothing was saved")
    assert not (tmp_path / "r").exists()


@pytest.mark.e2e
def test_the_command_says_once_when_its_worker_goes_silent_then_that_it_waits_in_line_again(broker, tmp_path):
    """Its worker killed (as its machine dying would), the command says the silence once (not every second), then,
    when the queue has found the worker dead, that the training waits in line; Ctrl-C there loses nothing saved."""
    url = on(broker, 13)
    worker = Worker(url, tmp_path).wait_ready()
    proc = subprocess.Popen([sys.executable, "-m", "runner", "train", "data/small.csv", "--out", str(tmp_path / "r"),
                             "--broker", url, "--preset", "seed", "--epochs", "100000", "--quiet"], cwd=ROOT,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        seen: list[str] = []
        wait_for(lambda: seen.append(proc.stderr.readline()) or "training on a worker" in seen[-1], 120, "it to train")
        worker.kill()
        wait_for(lambda: seen.append(proc.stderr.readline()) or "waiting in line" in seen[-1], 120, "its place again")
        proc.send_signal(signal.SIGINT)
        said = proc.communicate(timeout=60)[1]
    finally:
        proc.kill()
        worker.stop()
    before = "".join(seen)
    assert before.count("no word from its worker for ") == 1, before
    assert before.index("no word from its worker") < before.index("waiting in line"), before
    assert proc.returncode == EXIT_BAD_INPUT and "nothing was saved" in said, said
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("url, said", [
    ("http://127.0.0.1:1/0", "is not a Redis URL"),
    (f"redis://127.0.0.1:{free_port()}/0", "cannot reach the broker"),
], ids=["not redis", "nobody there"])
def test_a_bad_broker_is_one_line_and_leaves_no_folder(tmp_path, url, said):
    out = tmp_path / "run"
    done = cli("train", "data/small.csv", "--out", str(out), "--broker", url, "--quiet")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and said in lines[0], done.stderr
    assert not out.exists()


def test_bad_input_fails_before_anything_is_queued(broker, tmp_path):
    url = on(broker, 3)
    done = cli("train", "data/small.csv", "--out", str(tmp_path / "run"), "--broker", url, "--text-col", "nope")
    assert done.returncode == 2 and "nope" in done.stderr and "Traceback" not in done.stderr
    from rq import Queue

    assert Queue(distributed.QUEUE, connection=distributed.connect(url)).count == 0


def test_a_pages_job_pauses_resumes_and_stops_through_the_queue(broker, worker, tmp_path):
    job = TrainingJob(spec(epochs=100_000), tmp_path, "long", backend=lambda: BrokerBackend(broker.url))
    job.start()
    wait_for(lambda: job.status().state == "running" and job.status().steps_recorded > 5, 120, "the job to train")
    job.pause()
    assert job.wait_until_paused(60)
    steps = job.status().steps_recorded
    # paused: Stepped reports stop (one already on its way may land); none for a while after
    wait_for(lambda: job.status().steps_recorded >= steps, 5, "the last step to land")
    settled = job.status().steps_recorded
    assert not _steps_grow(job, settled, seconds=1.5)
    job.resume()
    wait_for(lambda: job.status().steps_recorded > settled + 5, 60, "steps after resume")
    job.stop()
    job.join(120)
    status = job.status()
    assert status.state == "stopped" and status.run_path == tmp_path / "long", (status, job.message)
    assert load_run(status.run_path).history.status == "stopped"


def _steps_grow(job: TrainingJob, steps: int, seconds: float) -> bool:
    try:
        wait_for(lambda: job.status().steps_recorded > steps, seconds, "a step")
    except AssertionError:
        return False
    return True


def test_a_second_watcher_reads_the_whole_history_from_the_start(broker, worker, tmp_path):
    channel = BrokerBackend(broker.url).start(JobRequest(spec(epochs=4), tmp_path, "seen", 1, 90.0, 0))
    first = _all_reports(channel)
    second = _all_reports(distributed.watch(broker.url, channel.job_id))  # e.g. a page on another app server
    assert [type(r).__name__ for r in second] == [type(r).__name__ for r in first]
    assert [r.record.epoch for r in second if isinstance(r, EpochDone)] == [1, 2, 3, 4]
    assert isinstance(second[-1], Ended) and second[-1].run_path == tmp_path / "seen"


def _all_reports(channel) -> list:
    reports = []
    while True:
        try:
            reports.append(channel.recv())
        except EOFError:
            return reports


def test_place_in_line_then_cancel_while_waiting_then_a_worker_takes_the_first(broker, tmp_path):
    url = on(broker, 1)  # no worker yet on this queue
    a = TrainingJob(spec(epochs=2), tmp_path, "a", backend=lambda: BrokerBackend(url))
    b = TrainingJob(spec(epochs=2), tmp_path, "b", backend=lambda: BrokerBackend(url))
    a.start()
    wait_for(lambda: a.status().state == "waiting", 30, "a to wait in line")
    b.start()
    wait_for(lambda: b.status().state == "waiting", 30, "b to wait in line")
    wait_for(lambda: (a.status().place, b.status().place) == (1, 2), 30, "their places")
    assert a.message == jobs.NO_WORKER and a.status().wait_seconds is None  # said, not guessed
    b.stop()
    b.join(30)
    assert b.status().state == "cancelled" and "nothing was trained" in b.message and b.run_path is None
    w = Worker(url, tmp_path).wait_ready()
    try:
        a.join(120)
        assert a.status().state == "finished" and (tmp_path / "a").is_dir() and not (tmp_path / "b").exists()
    finally:
        w.stop()


def test_a_workspaces_limit_counts_its_trainings_on_every_app_server(broker, tmp_path):
    """Two app servers (two queues, one broker, no worker: what they submit waits in the shared line): a learner
    with a training from server A (say, adopted on B after A died) may queue one more on B, not two."""
    from runner.queue import QueueLimitError, TrainingQueue

    url = on(broker, 6)
    servers = [TrainingQueue(slots=10_000, elsewhere=functools.partial(distributed.owners_trainings, url))
               for _ in range(2)]

    def page_job(name: str, workspace: str = "w") -> TrainingJob:
        return TrainingJob(spec(epochs=2), tmp_path, name, backend=lambda: BrokerBackend(url),
                           listing={"workspace": workspace, "job_key": name, "label": name, "page": "train"})

    on_a = page_job("on-a")
    on_a.submit(servers[0], "w")
    wait_for(lambda: on_a.status().state == "waiting" and on_a.status().place == 1, 30, "A's job in the shared line")
    assert distributed.owners_trainings(url, "w") == {on_a.job_id}
    on_b = page_job("on-b")
    on_b.submit(servers[1], "w")  # B knows nothing of A's: one running (A's) and this one waiting, by B's count
    with pytest.raises(QueueLimitError, match="2 trainings in the shared queue, training or waiting .* cancel it"):
        page_job("third").submit(servers[1], "w")
    with pytest.raises(QueueLimitError):
        page_job("third").submit(servers[0], "w")  # and A counts B's
    other = page_job("other", workspace="v")
    other.submit(servers[1], "v")  # another learner is not held back by w's
    on_a.stop()  # cancelled while waiting: no longer counted anywhere
    on_a.join(30)
    wait_for(lambda: distributed.owners_trainings(url, "w") == {on_b.job_id}, 30, "A's cancel to count")
    third = page_job("third")
    third.submit(servers[1], "w")
    for job in (on_b, other, third):  # nothing left waiting in the shared line, nor watching it, after the test
        job.stop()
        job.join(30)
        assert job.status().state == "cancelled"
    assert not any((tmp_path / name).exists() for name in ("on-a", "on-b", "other", "third"))


def test_a_sequence_goes_to_the_shared_queue_whole_and_another_server_adopts_it(broker, tmp_path):
    """The Seed experiment's three trainings: in the shared line at once, each after the one before (so they go on
    if their app server stops), listed as one under their page; Stop cancels those not started and stops the one
    training (its run kept); a second server that adopted the sequence sees the same."""
    from runner.jobs import JobSequence
    from runner.queue import TrainingQueue

    url = on(broker, 7)
    server = TrainingQueue(slots=10_000, elsewhere=functools.partial(distributed.owners_trainings, url))
    seq = JobSequence([("a", spec(epochs=2)), ("b", spec(epochs=100_000)), ("c", spec(epochs=2))], tmp_path,
                      backend=lambda: BrokerBackend(url),
                      listing={"workspace": "w", "job_key": "seedexp", "label": "Seed experiment", "page": "seed"})
    seq.submit(server, "w")
    assert seq.shared and list(seq.jobs) == ["a", "b", "c"] and seq.queued == []
    wait_for(lambda: [j.status().state for j in seq.jobs.values()] == ["waiting"] * 3, 30, "all three in line")
    wait_for(lambda: [j.status().place for j in seq.jobs.values()] == [1, None, None], 30, "their places")
    assert seq.waiting and seq.status().state == "waiting (1 of 3)"
    assert distributed.listed(url, "w") == {"seedexp": seq.job_ids}
    assert distributed.owners_trainings(url, "w") == {seq.job_id}  # one training of its owner
    adopted = JobSequence.attach([(distributed.described(url, i), distributed.watch(url, i)) for i in seq.job_ids])
    assert list(adopted.jobs) == ["a", "b", "c"] and adopted.listing["page"] == "seed"
    w = Worker(url, tmp_path).wait_ready()
    try:
        wait_for(lambda: seq.jobs["a"].done and seq.jobs["b"].status().epochs_recorded >= 1, 120, "b to train after a")
        assert seq.status().state.endswith("(2 of 3)") and seq.jobs["c"].status().state == "waiting"
        seq.stop()
        assert seq.join(120)
        # (b's record in RQ says finished once its work horse has returned, a moment after its last report: waited
        # for before the worker stops — stopped first, under load, it left b "started" in RQ: a flaky failure)
        wait_for(lambda: distributed.owners_trainings(url, "w") == set(), 30, "the queue to hold none of them")
    finally:
        w.stop()
    states = {key: (job.status().state, job.run_path) for key, job in seq.jobs.items()}
    assert states == {"a": ("finished", tmp_path / "a"), "b": ("stopped", tmp_path / "b"), "c": ("cancelled", None)}
    assert "nothing was trained" in seq.jobs["c"].message and not (tmp_path / "c").exists()
    assert server.running == [] and server.waiting == []  # its turn in the server's queue ended with its last job
    assert adopted.join(60) and {k: j.status().state for k, j in adopted.jobs.items()} == {
        "a": "finished", "b": "stopped", "c": "cancelled"}
    assert distributed.owners_trainings(url, "w") == set()


def test_two_jobs_of_a_shared_sequence_ending_at_once_end_its_turn(tmp_path):
    """Each job's end is counted (a job's on_end runs before it reads as done: two ending together each saw the
    other still going, and the sequence's turn in the server's queue never ended — its owner could start nothing)."""
    from runner.jobs import JobSequence
    from runner.queue import TrainingQueue

    server = TrainingQueue(slots=1)
    seq = JobSequence([], tmp_path)
    seq.shared = True
    seq._jobs = {key: TrainingJob(spec(epochs=2), tmp_path, key) for key in ("a", "b")}  # (never started)
    seq._ticket = server.submit("w", lambda _ticket: None)
    for job in seq._jobs.values():  # both in their on_end at once: neither done yet
        seq._member_ended(job)
    assert server.running == []


def test_a_job_nobody_watched_while_it_waited_is_not_started(broker, tmp_path):
    """Its page was closed while it waited in the shared line: the worker that takes it trains nothing."""
    url = on(broker, 8)
    channel = BrokerBackend(url).start(JobRequest(spec(epochs=2), tmp_path, "unwatched", 1, 1.0, 0))
    client = distributed.connect(url)
    wait_for(lambda: distributed._silent_for(client, channel.job_id) > 1.5, 30, "a silence longer than orphan_after")
    w = Worker(url, tmp_path).wait_ready()
    try:
        reports = _all_reports(channel)
    finally:
        w.stop()
    assert isinstance(reports[-1], Ended) and reports[-1].status == "cancelled", reports
    assert "its page was closed" in reports[-1].message and not any(isinstance(r, Started) for r in reports)
    assert not (tmp_path / "unwatched").exists()


def test_the_worker_loads_torch_without_starting_its_thread_pool():
    # A child forked from a process whose OpenMP pool has run hangs at its own first parallel step (measured:
    # docs/deploy.md); the worker forks every training from the process preload() ran in.
    code = "from runner.worker import preload; preload(); import torch; print(torch.get_num_threads())"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "1", done.stderr


def test_a_two_thread_training_in_a_forked_work_horse_finishes(broker, worker, tmp_path):
    channel = BrokerBackend(broker.url).start(JobRequest(spec(epochs=3), tmp_path, "two", 2, 90.0, 0))
    reports = _all_reports(channel)
    assert isinstance(reports[-1], Ended) and reports[-1].status == "finished", reports[-1]


@pytest.mark.e2e
def test_a_killed_workers_training_starts_again_on_the_other_worker_once(broker, tmp_path):
    url = on(broker, 2)
    workers = [Worker(url, tmp_path).wait_ready() for _ in range(2)]
    try:
        job = TrainingJob(spec(epochs=100_000), tmp_path, "survivor", backend=lambda: BrokerBackend(url))
        job.start()
        wait_for(lambda: job.status().state == "running" and job.pid, 120, "the job to train")
        first_horse = job.pid
        owner = next(w for w in workers if _parent(first_horse) == w.process.pid)
        owner.kill()  # as its machine dying would
        wait_for(lambda: job.restarts == 1, 120, "the queue to start it again", every=0.2)
        assert "started again from the beginning" in job.message
        wait_for(lambda: job.status().state == "running" and job.pid and job.pid != first_horse, 120,
                 "it to train on the other worker")
        other = next(w for w in workers if w is not owner)
        assert _parent(job.pid) == other.process.pid
        # a run stopped before its first epoch has nothing to keep (runner.worker.run_job): stop after one
        wait_for(lambda: job.status().epochs_recorded >= 1, 120, "an epoch on the other worker")
        job.stop()
        job.join(120)
        assert job.status().state == "stopped" and job.restarts == 1
        assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["survivor"]  # one run, saved once
        assert load_run(tmp_path / "survivor").history.epochs[0].epoch == 1  # trained again from the beginning
    finally:
        for w in workers:
            w.stop()


@contextlib.contextmanager
def _one_dead_one_busy(url: str, tmp_path: Path) -> Iterator[tuple[TrainingJob, TrainingJob]]:
    """Two workers: one trains ``doomed`` and is killed (as its machine dying would), the other trains ``busy`` —
    nothing is free to take ``doomed`` when it is back in line, nor to run the queue's clean-up."""
    workers = [Worker(url, tmp_path).wait_ready() for _ in range(2)]
    try:
        doomed = TrainingJob(spec(epochs=100_000), tmp_path, "doomed", backend=lambda: BrokerBackend(url))
        doomed.start()
        wait_for(lambda: doomed.status().state == "running" and doomed.pid, 120, "the first job to train")
        owner = next(w for w in workers if _parent(doomed.pid) == w.process.pid)
        busy = TrainingJob(spec(epochs=100_000), tmp_path, "busy", backend=lambda: BrokerBackend(url),
                           orphan_after=600.0)  # (no page polls it meanwhile: no heartbeats)
        busy.start()
        wait_for(lambda: busy.status().state == "running" and busy.pid, 120, "the second job to train")
        owner.kill()
        yield doomed, busy
        assert busy.status().state == "running"  # the other training was not disturbed
        busy.stop()
        busy.join(120)
        assert busy.status().state == "stopped" and (tmp_path / "busy").is_dir()
    finally:
        for w in workers:
            w.stop()


@pytest.mark.e2e
def test_a_stop_that_reached_a_training_after_its_worker_died_ends_it_in_line_unsaved(broker, tmp_path):
    """The learner's page still shows it running (its worker died a moment ago) and they press Stop: once the queue
    finds the worker dead, the training leaves the line, saying what was lost — it is not started again only to be
    stopped after an epoch as a new run, nor kept waiting for a worker to do that."""
    url = on(broker, 10)
    with _one_dead_one_busy(url, tmp_path) as (doomed, _):
        doomed.stop()  # its page does not know yet
        doomed.join(180)
        assert doomed.status().state == "cancelled" and doomed.message == distributed.STOPPED_LOST
        assert doomed.restarts == 0 and not (tmp_path / "doomed").exists()
        assert distributed._queue(distributed.connect(url)).count == 0  # out of the line


@pytest.mark.e2e
def test_with_every_other_worker_training_a_dead_workers_job_is_found_by_its_page_and_leaves_the_line_on_stop(
        broker, tmp_path):
    """No worker is free to run the queue's clean-up: the page's own watcher finds the dead worker's training (it
    says so instead of showing it running), and its Stop then takes it out of the line, saying what was lost."""
    url = on(broker, 11)
    with _one_dead_one_busy(url, tmp_path) as (doomed, busy):
        # before the queue can tell (its heartbeat not yet lapsed), the page hears that its worker has gone silent
        wait_for(lambda: doomed.status().unheard_seconds is not None, 60, "its worker's silence to be said", every=0.2)
        silent = doomed.status()
        assert silent.state == "running" and distributed.UNHEARD_AFTER <= silent.unheard_seconds < 60
        assert busy.status().unheard_seconds is None  # the live worker is heard from
        wait_for(lambda: doomed.status().state == "waiting", 120, "its page to find its worker dead", every=0.2)
        assert doomed.status().unheard_seconds is None  # back in line: that is what is said now
        assert doomed.message.startswith("its worker stopped") and busy.status().state == "running"
        doomed.stop()
        doomed.join(60)
        assert doomed.status().state == "cancelled" and doomed.message == distributed.STOPPED_LOST
        assert not (tmp_path / "doomed").exists() and distributed._queue(distributed.connect(url)).count == 0


@pytest.mark.e2e
def test_a_stop_sent_after_its_worker_died_is_not_started_again_by_the_next_worker(broker, tmp_path):
    """The same with no page watching (closed right after Stop): the next worker to take it ends it unstarted."""
    url = on(broker, 12)
    first = Worker(url, tmp_path).wait_ready()
    second = None
    try:
        channel = BrokerBackend(url).start(JobRequest(spec(epochs=100_000), tmp_path, "lost", 1, 600.0, 0))
        seen = []
        wait_for(lambda: seen.append(channel.recv()) or isinstance(seen[-1], EpochDone), 120, "an epoch")
        first.kill()
        channel.send(Command.STOP)  # and nobody watches it any more (a watcher would take it out of the line itself)
        second = Worker(url, tmp_path).wait_ready()
        client, reports = distributed.connect(url), distributed._key(channel.job_id, "reports")
        wait_for(lambda: any(b"Ended" in f[b"r"] for _, f in client.xrange(reports)), 180, "the job to end")
        told = _all_reports(distributed.watch(url, channel.job_id))  # the whole history, read afterwards
    finally:
        for w in (first, second):
            if w is not None:
                w.stop()
    assert isinstance(told[-1], Ended) and told[-1].status == "cancelled" and told[-1].message == distributed.STOPPED_LOST
    assert sum(isinstance(r, Started) for r in told) == 1 and not any(isinstance(r, Restarted) for r in told), told
    assert int(client.hget(distributed._key(channel.job_id, "meta"), "attempts")) == 2  # the second worker took it
    assert not (tmp_path / "lost").exists()


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def test_commands_sent_before_the_job_starts_apply_when_it_does(broker, tmp_path):
    url = on(broker, 4)
    channel = BrokerBackend(url).start(JobRequest(spec(epochs=100_000), tmp_path, "early", 1, 90.0, 0))
    assert isinstance(channel.recv(), Queued)
    channel.send(Command.PAUSE)  # a learner who paused while it waited in line
    w = Worker(url, tmp_path).wait_ready()
    try:
        reports = []
        wait_for(lambda: reports.append(channel.recv()) or any(type(r).__name__ == "Idle" for r in reports), 120,
                 "the job to pause")
        assert any(isinstance(r, Started) for r in reports)
        channel.send(Command.STOP)
        rest = _all_reports(channel)
        assert isinstance(rest[-1], Ended) and rest[-1].status in ("stopped", "finished")
    finally:
        w.stop()
    assert os.environ.get(distributed.BROKER_ENV) is None  # the tests never point the app at it by accident


def test_without_a_broker_trainings_stay_on_this_machine(monkeypatch):
    from runner import jobs, queue

    monkeypatch.delenv(distributed.BROKER_ENV, raising=False)
    monkeypatch.delenv("ATTENTION_PLAYGROUND_MAX_TRAININGS", raising=False)
    host = object()
    monkeypatch.setattr(jobs.JobHost, "get", classmethod(lambda cls: host))
    assert distributed.broker_url() is None and jobs.default_backend() is host
    assert queue.default_slots() == (os.cpu_count() or 1)
    monkeypatch.setenv(distributed.BROKER_ENV, "redis://127.0.0.1:1/0")
    assert isinstance(jobs.default_backend(), BrokerBackend) and queue.default_slots() == queue.SHARED_QUEUE_SLOTS


@pytest.mark.e2e
def test_redis_restarting_says_so_and_loses_no_saved_run(tmp_path):
    server = RedisServer(tmp_path)  # its own: this test stops it
    w = Worker(server.url, tmp_path).wait_ready()
    try:
        done = BrokerBackend(server.url).start(JobRequest(spec(epochs=2), tmp_path, "before", 1, 90.0, 0))
        assert isinstance(_all_reports(done)[-1], Ended)
        before = (tmp_path / "before" / "model.safetensors").read_bytes()
        job = TrainingJob(spec(epochs=100_000), tmp_path, "inflight", backend=lambda: BrokerBackend(server.url))
        job.start()
        wait_for(lambda: job.status().state == "running" and job.status().epochs_recorded > 2, 120, "the job to train")
        server.stop()  # the broker goes away mid-training
        job.join(distributed.LOST_AFTER + 60)
        assert job.status().state == "failed" and "lost the training queue" in job.message, job.message
        # its worker could not reach the broker either: it stopped the training and saved what it had learned
        wait_for(lambda: (tmp_path / "inflight" / "config.json").exists(), 60, "the in-flight run to be saved")
        assert load_run(tmp_path / "inflight").history.status == "stopped"
        assert (tmp_path / "before" / "model.safetensors").read_bytes() == before  # a finished run: untouched
        assert load_run(tmp_path / "before").history.status == "finished"
    finally:
        w.stop()
        server.stop()


def test_the_wait_in_the_shared_line_counts_the_workers_and_the_last_durations(broker, tmp_path):
    url = on(broker, 5)
    client = distributed.connect(url)
    assert distributed._wait_estimate(client, 1) == (0, None)  # no worker, no duration: nothing to promise
    w = Worker(url, tmp_path).wait_ready()
    try:
        assert distributed._wait_estimate(client, 1) == (1, None)  # a worker, but no training has ended yet
        client.lpush(distributed.DURATIONS, 10.0, 20.0)  # two trainings ended: 15 s each, typically
        assert distributed._wait_estimate(client, 1) == (1, 0.0)  # its one slot is free
        assert distributed._wait_estimate(client, 3) == (1, 30.0)  # two ahead of it, one after the other
    finally:
        w.stop()


def test_a_broker_that_cannot_be_reached_is_not_waited_on_by_every_page_run(monkeypatch):
    """Pages look the workspace's jobs up on every run: a broker that is down answers at once for a while, instead
    of each run waiting for a connection timeout."""
    import time

    url = f"redis://127.0.0.1:{free_port()}/0"
    tries = []
    real = distributed.connect
    monkeypatch.setattr(distributed, "connect", lambda u: tries.append(u) or real(u))
    with pytest.raises(distributed.InputError, match="cannot reach the broker"):
        distributed.client_for(url)
    started = time.monotonic()
    with pytest.raises(distributed.InputError, match="a moment ago"):
        distributed.client_for(url)
    assert time.monotonic() - started < 0.5 and tries == [url]  # not tried again
    monkeypatch.setitem(distributed._unreachable, url, time.monotonic() - distributed.RETRY_AFTER - 1)
    with pytest.raises(distributed.InputError, match="cannot reach the broker"):
        distributed.client_for(url)  # tried again after RETRY_AFTER
    assert tries == [url, url]
