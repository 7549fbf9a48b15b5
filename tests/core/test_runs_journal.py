"""The journal of trainings not ended yet (attention_core.run_folders, runner.jobs): a server restart loses sight
of no training — those it interrupted are listed on the Train page as "not finished — start again"."""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict, replace
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from attention_core.errors import RunError
from attention_core.run_folders import (
    JOURNAL_DIR,
    JournalEntry,
    interrupted_run,
    journal_entries,
    list_runs,
    remove_journal_entry,
    write_journal_entry,
)
from attention_core.workspaces import WorkspaceStore
from runner.jobs import TrainingJob, live_journal_ids
from runner.queue import QueueLimitError, TrainingQueue
from tests.helpers.apptest import page_job, start_small_training
from tests.helpers.jobs import tiny_spec, wait_for_epochs

TIMEOUT = 90
ROOT = Path(__file__).resolve().parents[2]
BUNDLED = ROOT / "data" / "default_run"


# -- the journal's files ------------------------------------------------------------------------------
def test_an_entry_is_written_listed_replaced_and_removed(tmp_path):
    first = JournalEntry.new("my run", "Train", "reviews.csv")
    second = JournalEntry.new("other", "Train", "small.csv")
    assert (first.run_name, first.state, first.started) == ("my-run", "waiting", None)  # as its run will be named
    write_journal_entry(tmp_path, second)
    write_journal_entry(tmp_path, first)
    assert journal_entries(tmp_path) == sorted([first, second], key=lambda e: e.submitted)
    running = first.running()
    write_journal_entry(tmp_path, running)  # the same file, replaced
    assert running.state == "running" and running.started >= running.submitted
    assert {e.id: e for e in journal_entries(tmp_path)}[first.id] == running
    assert sorted(p.name for p in (tmp_path / JOURNAL_DIR).iterdir()) == sorted(f"{e.id}.json" for e in (first, second))
    remove_journal_entry(tmp_path, first.id)
    remove_journal_entry(tmp_path, first.id)  # gone already: nothing to do
    assert journal_entries(tmp_path) == [second]
    assert journal_entries(tmp_path / "nowhere") == []


def test_a_write_that_fails_midway_leaves_the_old_entry_whole(tmp_path, monkeypatch):
    entry = JournalEntry.new("run", "Train", "data.csv")
    write_journal_entry(tmp_path, entry)

    def half(obj, fh) -> None:
        fh.write(json.dumps(obj)[:20])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("attention_core.run_folders.json.dump", half)
    with pytest.raises(OSError, match="No space left"):
        write_journal_entry(tmp_path, entry.running())
    assert journal_entries(tmp_path) == [entry]  # the waiting entry, not half of the running one
    assert [p.name for p in (tmp_path / JOURNAL_DIR).iterdir()] == [f"{entry.id}.json"]  # no temporary file left


def test_files_that_are_not_readable_entries_are_skipped_without_a_crash(tmp_path):
    good = JournalEntry.new("good", "Train", "data.csv")
    write_journal_entry(tmp_path, good)
    folder = tmp_path / JOURNAL_DIR
    valid = asdict(JournalEntry.new("x", "Train", "d.csv"))
    bad = {
        "a" * 16: "",  # empty (a crash of another program mid-write)
        "b" * 16: '{"id": "bbbb',  # cut short
        "c" * 16: "[1, 2]",
        "d" * 16: json.dumps({**valid, "id": "d" * 16, "run_name": "../../etc"}),
        "e" * 16: json.dumps({**valid, "id": "e" * 16, "state": "finished"}),
        "f" * 16: json.dumps({**valid, "id": "f" * 16, "extra": 1}),
        "0" * 16: json.dumps({**valid, "id": "1" * 16}),  # names another entry than its file
        "2" * 16: json.dumps({k: v for k, v in {**valid, "id": "2" * 16}.items() if k != "page"}),
        "3" * 16: json.dumps({**valid, "id": "3" * 16, "submitted": "yesterday"}),
        "4" * 16: b"\xff\xfe not text",
    }
    for name, content in bad.items():
        (folder / f"{name}.json").write_bytes(content if isinstance(content, bytes) else content.encode())
    (folder / "notes.json").write_text(json.dumps(valid))  # not an entry's file name
    (folder / f"{'5' * 16}.json").mkdir()
    (folder / f"{'6' * 16}.json").symlink_to(folder / f"{good.id}.json")
    assert journal_entries(tmp_path) == [good]


def test_names_go_through_check_run_name_and_ids_are_never_paths(tmp_path):
    assert JournalEntry.new("../../etc/passwd", "Train", "x.csv").run_name == "etc-passwd"
    assert JournalEntry.new("x" * 200, "Train", "x.csv").run_name == "x" * 80
    entry = JournalEntry.new("run", "Train", "x.csv")
    for field, value, message in [("run_name", "../x", "cannot name a run"), ("run_name", "", "needs a name"),
                                  ("run_name", "x" * 81, "at most 80"), ("id", "../../x", "not a journal entry's id"),
                                  ("state", "done", "state is 'done'"), ("dataset", "d" * 201, "at most 200"),
                                  ("submitted", float("nan"), "times")]:
        with pytest.raises(RunError, match=message):
            replace(entry, **{field: value})
    (tmp_path / "victim.json").write_text("keep")
    for bad in ("../victim", "", "x" * 16 + "/..", None):
        with pytest.raises(RunError, match="not a journal entry's id"):
            remove_journal_entry(tmp_path / "runs", bad)
    assert (tmp_path / "victim.json").read_text() == "keep"


def put_run(runs_dir: Path, name: str, created: float) -> Path:
    shutil.copytree(BUNDLED, runs_dir / name)
    config = json.loads((runs_dir / name / "config.json").read_text())
    config["created"] = time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(created))
    (runs_dir / name / "config.json").write_text(json.dumps(config))
    return runs_dir / name


def test_the_journal_is_not_a_run_and_the_interrupted_run_is_the_one_saved_since_it_began(tmp_path):
    entry = replace(JournalEntry.new("mine", "Train", "x.csv"), state="running", started=time.time() - 60)
    write_journal_entry(tmp_path, entry)
    (tmp_path / JOURNAL_DIR / "config.json").write_text("{}")  # even so, not a run
    assert list_runs(tmp_path) == [] and interrupted_run(tmp_path, entry) is None
    put_run(tmp_path, "mine", entry.started - 3600)  # an older run of the same name: not this training's
    assert interrupted_run(tmp_path, entry) is None
    saved = put_run(tmp_path, "mine-2", entry.started + 30)  # saved as name-2, as save_new_run does
    put_run(tmp_path, "mine-other", entry.started + 40)  # another name
    assert interrupted_run(tmp_path, entry) == saved
    assert interrupted_run(tmp_path, replace(entry, state="waiting", started=None)) is None  # never began


# -- a page's job keeps its entry until it ends --------------------------------------------------------
def entries_of(runs: Path) -> dict[str, str]:
    return {e.run_name: e.state for e in journal_entries(runs)}


def test_a_job_is_journaled_while_it_waits_and_trains_and_leaves_nothing_however_it_ends(tmp_path):
    q, page = TrainingQueue(slots=1), {"page": "Train", "dataset": "tiny.csv"}
    first, cancelled, refused, second = (TrainingJob(tiny_spec(epochs), tmp_path, name) for epochs, name in
                                         ((100_000, "first"), (1, "cancelled"), (1, "refused"), (1, "second")))
    first.submit(q, "a", **page)
    cancelled.submit(q, "a", **page)
    with pytest.raises(QueueLimitError):  # "a" has one running and one waiting
        refused.submit(q, "a", **page)
    second.submit(q, "b", **page)
    assert entries_of(tmp_path) == {"first": "running", "cancelled": "waiting", "second": "waiting"}
    assert {e.id for e in journal_entries(tmp_path)} <= live_journal_ids()  # this server's: not interrupted
    assert journal_entries(tmp_path)[0].started is not None
    cancelled.stop()
    assert entries_of(tmp_path) == {"first": "running", "second": "waiting"}
    wait_for_epochs(first, 1)
    first.stop()  # stopped: its run is saved, and the next in line trains to its end
    second.join(120)
    first.join(10)
    assert (first.state, second.state) == ("stopped", "finished")
    assert journal_entries(tmp_path) == [] and not list((tmp_path / JOURNAL_DIR).iterdir())
    assert sorted(p.name for p in list_runs(tmp_path)) == ["first", "second"]


def test_a_job_not_submitted_by_a_page_writes_no_journal(tmp_path):
    job = TrainingJob(tiny_spec(1), tmp_path, "cli")
    job.submit(TrainingQueue(slots=1), "a")
    assert job.journal is None and journal_entries(tmp_path) == []
    job.join(120)
    assert not (tmp_path / JOURNAL_DIR).exists()


# -- the Train page after a restart -------------------------------------------------------------------------
def interrupted_entry(runs: Path, name: str, *, began: bool) -> JournalEntry:
    """An entry a server left behind when it stopped (no job of this server has it)."""
    entry = JournalEntry.new(name, "Train", "my reviews.csv")
    if began:
        entry = entry.running()
    write_journal_entry(runs, entry)
    return entry


def notes(at: AppTest) -> list[str]:
    return [w.value for w in at.warning if "not finished" in w.value]


def test_after_a_restart_the_train_page_lists_what_was_not_finished_and_dismiss_removes_it(runs_dir):
    began = interrupted_entry(runs_dir, "long one", began=True)
    put_run(runs_dir, "long-one", began.started + 1)  # what the training saved when the server went away
    waited = interrupted_entry(runs_dir, "queued", began=False)
    at = AppTest.from_file(str(ROOT / "pages" / "1_Train.py"), default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    said = notes(at)
    assert len(said) == 2
    assert said[0].startswith("Training “long-one” (`my reviews.csv`, ")
    assert "**not finished — start again**" in said[0] and "saved as run `long-one`" in said[0]
    assert "waiting in line, so nothing was trained" in said[1]
    at.button(key=f"train_dismiss_{waited.id}").click().run()
    assert not at.exception
    assert [e.id for e in journal_entries(runs_dir)] == [began.id] and len(notes(at)) == 1
    at.button(key=f"train_dismiss_{began.id}").click().run()
    assert journal_entries(runs_dir) == [] and not notes(at)
    assert (runs_dir / "long-one" / "config.json").is_file()  # the run stays


def test_a_training_of_this_server_is_no_note_and_leaves_no_entry_once_stopped_or_finished(runs_dir):
    at = AppTest.from_file(str(ROOT / "pages" / "1_Train.py"), default_timeout=TIMEOUT).run()
    start_small_training(at, 5000, "long")
    assert [e.run_name for e in journal_entries(runs_dir)] == ["long"] and not notes(at)  # live here: not interrupted
    wait_for_epochs(page_job(at), 1)
    at.button(key="train_stop").click().run()
    page_job(at).join(120)
    at.button(key="train_reset").click().run()
    assert journal_entries(runs_dir) == [] and not notes(at)
    start_small_training(at, 2, "normal")
    page_job(at).join(120)
    at.run()
    assert page_job(at).state == "finished"
    assert journal_entries(runs_dir) == [] and not notes(at)
    assert sorted(p.name for p in list_runs(runs_dir)) == ["long", "normal"]


def test_shared_a_workspace_never_sees_anothers_interrupted_training(runs_dir, monkeypatch):
    monkeypatch.setenv("ATTENTION_PLAYGROUND_SHARED", "1")
    store = WorkspaceStore(runs_dir, shared=True)
    mine, theirs = "M" * 22, "T" * 22
    interrupted_entry(store.for_token(theirs)[0].runs_dir, "their-run", began=False)
    interrupted_entry(store.for_token(mine)[0].runs_dir, "my-run", began=False)
    at = AppTest.from_file(str(ROOT / "pages" / "1_Train.py"), default_timeout=TIMEOUT)
    at.query_params["w"] = mine
    at.run()
    assert not at.exception, at.exception
    assert len(notes(at)) == 1 and "my-run" in notes(at)[0] and "their-run" not in " ".join(notes(at))
