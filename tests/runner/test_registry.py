"""A reload (or a second tab) of a workspace finds its page's job again (runner.registry, ui.training_page):
the registry alone, then the Train page and the Seed experiment in AppTest, locally and in shared mode."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from runner.registry import JobRegistry
from tests.helpers.apptest import ending_banners, followed, page_job, start_small_training

TIMEOUT = 90
ROOT = Path(__file__).resolve().parents[2]
TRAIN = str(ROOT / "pages" / "1_Train.py")
SEED = str(ROOT / "pages" / "6_Seed_experiment.py")


# -- the registry ---------------------------------------------------------------------------------------
class Job:
    def __init__(self) -> None:
        self.done = False


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_workspace_finds_only_its_own_page_jobs_and_the_last_one_registered():
    reg = JobRegistry()
    mine, theirs, newer, seq = Job(), Job(), Job(), Job()
    reg.register("me", "train_job", mine, label="Training “a”", page="Train")
    reg.register("them", "train_job", theirs, label="Training “b”", page="Train")
    reg.register("me", "seedexp_seq", seq, label="Seed experiment", page="Seed_experiment")
    entry = reg.entries("me")["train_job"]
    assert entry.job is mine and (entry.label, entry.page) == ("Training “a”", "Train")
    assert list(reg.entries("me")) == ["train_job", "seedexp_seq"] and reg.entries("me")["seedexp_seq"].job is seq
    assert {k: e.job for k, e in reg.entries("them").items()} == {"train_job": theirs}
    assert reg.entries("nobody") == {}
    reg.register("me", "train_job", newer, label="Training “c”", page="Train")
    assert reg.entries("me")["train_job"].job is newer
    reg.drop("me", "train_job", mine)  # an older job's page was reset: the newer one stays
    assert reg.entries("me")["train_job"].job is newer
    reg.drop("me", "train_job", newer)
    assert list(reg.entries("me")) == ["seedexp_seq"] and reg.entries("them")["train_job"].job is theirs


def test_an_ended_job_is_kept_for_its_page_then_dropped_after_some_minutes():
    clock = Clock()
    reg = JobRegistry(keep_ended=600, clock=clock)
    running, ended = Job(), Job()
    reg.register("a", "k", running, label="", page="Train")
    reg.register("b", "k", ended, label="", page="Train")
    ended.done = True
    clock.now = 100.0
    assert reg.entries("b")["k"].job is ended  # its end is noticed now: a reload still shows its results
    clock.now = 699.0
    assert reg.entries("b")["k"].job is ended
    clock.now = 10_000.0
    assert reg.entries("b") == {} and len(reg) == 1  # the running one is never dropped by age
    assert reg.entries("a")["k"].job is running


def test_each_session_keeps_the_job_it_follows_and_a_reload_finds_the_latest_not_shown():
    clock = Clock()
    reg = JobRegistry(keep_ended=600, clock=clock)
    one, two = Job(), Job()
    first = reg.register("me", "train_job", one, label="Training “one”", page="Train")
    second = reg.register("me", "train_job", two, label="Training “two”", page="Train")  # a second tab's
    assert reg.get("me", first).job is one and reg.get("me", second).job is two  # each tab keeps its own
    assert reg.entries("me")["train_job"].job is two and reg.get("them", first) is None
    one.done = True
    reg.drop("me", "train_job", one)  # its page showed how it ended: no reload finds it...
    reg.drop("me", "train_job", two)
    assert reg.entries("me") == {}
    assert reg.get("me", first).job is one  # ...but the session that follows it still has it
    clock.now = 500.0
    assert reg.get("me", first) is not None  # asked for: kept another keep_ended seconds
    clock.now = 1000.0
    assert reg.get("me", first) is not None
    clock.now = 1700.0
    assert reg.get("me", first) is None and reg.get("me", second).job is two  # not asked for 700 s; two still runs


# -- the Train page -----------------------------------------------------------------------------------------
@pytest.fixture
def one_slot(monkeypatch):
    from runner import queue

    q = queue.TrainingQueue(slots=1)
    monkeypatch.setattr(queue, "_server_queue", q)
    return q


def visit(page: str = TRAIN, token: str | None = None) -> AppTest:
    at = AppTest.from_file(page, default_timeout=TIMEOUT)
    if token is not None:
        at.query_params["w"] = token
    at.run()
    assert not at.exception, at.exception
    return at


def wait_for_an_epoch(job) -> None:
    while not job.status().epochs_recorded:
        job.heartbeat()
        job.join(0.05)


def test_a_reload_finds_the_running_training_which_it_can_stop_and_then_shows_its_results(runs_dir):
    first = visit()
    start_small_training(first, 5000, "long")
    job = page_job(first)
    reload = visit()  # a new session of the same (local) workspace: was a page with no training
    assert page_job(reload) is job
    assert followed(reload)["train_job"].job is job  # kept alive from every page again
    assert reload.get("progress") and reload.button(key="train_stop").label == "Stop"
    assert not reload.button(key="train_stop").disabled
    wait_for_an_epoch(job)
    reload.button(key="train_stop").click().run()
    job.join(120)
    reload.run()
    assert not reload.exception and job.state == "stopped"
    assert ending_banners(reload)[0].startswith("Training stopped after")
    assert page_job(visit()) is None  # its results were shown: a reload now starts afresh


def test_a_reload_on_another_page_keeps_the_training_alive_from_the_sidebar(runs_dir):
    first = visit()
    start_small_training(first, 5000, "elsewhere")
    job = page_job(first)
    home = visit(str(ROOT / "app.py"))  # the learner reloads while reading the Home page
    assert followed(home)["train_job"].job is job
    assert "Watch on Train" in [e.proto.label for e in home.sidebar if e.type == "page_link"]
    job.stop()
    job.join(120)


def test_a_training_that_ended_with_no_page_open_shows_its_results_after_a_reload(runs_dir):
    first = visit()
    start_small_training(first, 2, "ended alone")
    job = page_job(first)
    job.join(120)  # ended while no page ran (the tab was reloaded meanwhile)
    reload = visit()
    assert page_job(reload) is job
    assert ending_banners(reload) == ["Training finished: all 2 epochs. Saved as run `ended-alone`."]
    assert reload.get("download_button")


def test_reset_forgets_the_job_for_every_later_reload(runs_dir):
    first = visit()
    start_small_training(first, 2, "reset me")
    page_job(first).join(120)
    first.button(key="train_reset").click().run()
    assert page_job(visit()) is None


TOKEN_A, TOKEN_B, TOKEN_C = "A" * 22, "B" * 22, "C" * 22


def test_shared_a_reload_with_the_link_finds_the_waiting_training_and_no_one_else_sees_it(shared, one_slot):
    a = visit(token=TOKEN_A)
    start_small_training(a, 5000, "a-long")
    running = page_job(a)
    b = visit(token=TOKEN_B)
    start_small_training(b, 2, "b-waits")
    waiting = page_job(b)
    assert waiting.state == "waiting"

    b_again = visit(token=TOKEN_B)  # B reloads (or opens a second tab with the link)
    assert page_job(b_again) is waiting
    assert b_again.info[0].value.startswith("Waiting for a free slot: 1st in line")
    assert b_again.button(key="train_stop").label == "Cancel"

    c = visit(token=TOKEN_C)  # another workspace: no training on its page, nobody's place in line
    assert page_job(c) is None and not c.get("progress")
    assert not [i for i in c.info if "Waiting" in i.value]
    a_again = visit(token=TOKEN_A)
    assert page_job(a_again) is running  # A's own, not B's

    b_again.button(key="train_stop").click().run()  # Cancel from the reloaded tab
    assert not b_again.exception and waiting.state == "cancelled"
    assert b_again.info[0].value == "Training cancelled before it started — nothing was trained or saved."
    wait_for_an_epoch(running)
    a_again.button(key="train_stop").click().run()
    running.join(120)
    assert running.state == "stopped" and one_slot.running == [] and one_slot.waiting == []


# -- the Seed experiment ----------------------------------------------------------------------------------
def test_a_reload_of_the_seed_experiment_finds_its_sequence_and_its_results(runs_dir):
    first = visit(SEED)
    first.number_input(key="seedexp_epochs").set_value(1)
    first.number_input(key="seedexp_default_epochs").set_value(1)
    first.button(key="seedexp_train").click().run()
    seq = page_job(first, "seedexp_seq")
    reload = visit(SEED)
    assert page_job(reload, "seedexp_seq") is seq
    assert seq.join(300)
    reload.run()
    assert not reload.exception
    assert [h.value for h in reload.header][:1] == ["Final training loss"]  # the three variants' results
    assert page_job(visit(SEED), "seedexp_seq") is None  # shown: a later reload starts afresh
