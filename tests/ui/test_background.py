"""Trainings going on while the learner reads another page: kept alive, shown in the sidebar, linked back."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from streamlit.testing.v1 import AppTest

from runner.registry import server_registry
from tests.helpers.apptest import track_jobs

TIMEOUT = 90
ROOT = Path(__file__).resolve().parents[2]


class FakeJob:
    """What ui.background needs of a TrainingJob or a JobSequence."""

    def __init__(self, state: str = "running", epoch: int = 3, epochs: int = 10) -> None:
        self.state, self.epoch, self.epochs, self.heartbeats = state, epoch, epochs, 0

    @property
    def alive(self) -> bool:
        return self.state.split()[0] in ("running", "paused", "waiting")  # a JobSequence adds "(2 of 3)"

    @property
    def done(self) -> bool:
        return not self.alive

    def status(self) -> SimpleNamespace:  # the fields of a runner.jobs.JobStatus it reads
        return SimpleNamespace(state=self.state, epoch=self.epoch, epochs=self.epochs, progress=self.epoch / self.epochs)

    def heartbeat(self) -> None:
        self.heartbeats += 1


def test_the_home_page_keeps_a_training_of_the_train_page_alive_and_links_back():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    train, seed = FakeJob(), FakeJob("finished", 1000, 1000)
    track_jobs(at, {"train": (train, "Training “mine”", "Train"), "seedexp": (seed, "Seed experiment", "Seed_experiment")})
    at.run()
    assert not at.exception
    assert train.heartbeats == 1 and seed.heartbeats == 0  # a job that has ended is not asked after
    progress = [e for e in at.sidebar if e.type == "progress"]
    assert [p.proto.text for p in progress] == ["Training “mine”: running · epoch 3/10"]
    assert progress[0].proto.value == 30
    links = [e.proto for e in at.sidebar if e.type == "page_link"]
    labels = [link.label for link in links]
    assert "Watch on Train" in labels and "Results on Seed experiment" in labels
    assert "Seed experiment: finished." in [c.value for c in at.sidebar.caption]
    train.epoch = 7
    at.run()
    assert train.heartbeats == 2
    assert [e.proto.text for e in at.sidebar if e.type == "progress"] == ["Training “mine”: running · epoch 7/10"]


def test_back_on_its_page_a_finished_job_is_forgotten_and_a_running_one_kept_alive_with_no_link_to_itself():
    def page() -> None:
        import streamlit as st

        from ui import background

        pages = {"Train": st.Page(lambda: None, title="Train", url_path="Train"),
                 "Inspect": st.Page(lambda: None, title="Inspect", url_path="Inspect")}
        background.keep_alive(pages, "Train")

    at = AppTest.from_function(page, default_timeout=TIMEOUT)
    done, running = FakeJob("finished"), FakeJob()
    track_jobs(at, {"old": (done, "Old", "Train"), "train": (running, "Now", "Train")})
    at.run()
    assert not at.exception
    assert list(server_registry().entries("local")) == ["train"]  # the finished one: shown, no longer tracked
    assert running.heartbeats == 1  # the page may stop before its own live view asks
    assert [c.value for c in at.sidebar.caption] == ["Now: in progress."]  # its state and numbers: the page's to show
    assert not [e for e in at.sidebar if e.type in ("progress", "page_link")]
    running.state = "paused"  # paused from its page: the page runs again, and so does this
    at.run()
    assert [c.value for c in at.sidebar.caption] == ["Now: paused."]
    assert running.heartbeats == 2  # a paused job is kept alive too
    running.state = "paused (2 of 3)"  # a JobSequence's state names its current job
    at.run()
    assert [c.value for c in at.sidebar.caption] == ["Now: paused."]
    running.state = "waiting"  # in the server's queue: not "in progress" (it was, while it waited)
    at.run()
    assert [c.value for c in at.sidebar.caption] == ["Now: waiting in line."]


def test_no_tracked_job_nothing_drawn_and_the_module_does_not_load_torch():
    def page() -> None:
        from ui import background

        background.keep_alive({}, "")

    at = AppTest.from_function(page, default_timeout=TIMEOUT).run()
    assert not at.exception and not at.sidebar.children and not at.get("progress") and not at.get("page_link")
    # The router imports it on every page run, the home page's first one too (before torch is loaded).
    out = subprocess.run([sys.executable, "-c", "import sys, ui.background; print('torch' in sys.modules)"], cwd=ROOT,
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_training_that_ends_while_the_learner_is_on_home_opens_its_run_in_the_model_picker(tmp_path, monkeypatch):
    """Home's picker showed the old model after a training ended elsewhere (only the Train page opened the new run)."""
    import shutil

    runs = tmp_path / "runs"
    shutil.copytree(ROOT / "data" / "default_run", runs / "just-trained")
    monkeypatch.setenv("ATTENTION_PLAYGROUND_RUNS", str(runs))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    job = FakeJob()
    track_jobs(at, {"train": (job, "Training “just-trained”", "Train")})
    at.session_state["home_text"] = "the food was not good at all"
    at.run()
    assert "active_run" not in at.session_state or at.session_state["active_run"] != "just-trained"
    job.state, job.run_path = "finished", runs / "just-trained"
    at.run()
    assert not at.exception
    assert at.session_state["active_run"] == "just-trained" and at.sidebar.selectbox[0].value == "just-trained"
    at.sidebar.selectbox[0].select(at.sidebar.selectbox[0].options[0]).run()  # the learner's own choice then stands
    at.run()
    assert at.session_state["active_run"] == at.sidebar.selectbox[0].options[0]
