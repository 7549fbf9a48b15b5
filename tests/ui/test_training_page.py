"""ui.training_page: a page that trains is set up in one call, and its trainings are tracked under
the address the router gives the page (its entry in ui.navigation, found by its file, not typed by
hand), so the sidebar's link leads back to it."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from runner.registry import server_registry
from tests.helpers.apptest import followed, page_job, start_small_training
from ui.navigation import PAGE_FILES, page_of

TIMEOUT = 90
ROOT = Path(__file__).resolve().parents[2]


pytestmark = pytest.mark.usefixtures("runs_dir")  # every test on a runs root of its own (conftest)


def current_page(at: AppTest) -> str:
    """The url_path of the page the last run ended on."""
    return at._registered_pages[at._finished_page_script_hash]["url_pathname"]


def back_from_home(at: AppTest, label: str) -> str:
    """Go home, follow the sidebar's link starting with ``label`` as a browser does; the page it led to."""
    at.switch_page("app.py").run()
    assert not at.exception, at.exception
    link = next(x for x in at.sidebar.get("page_link") if x.proto.label.startswith(label))
    at._page_hash = link.proto.page_script_hash
    at.run()
    at._page_hash = ""
    assert not at.exception, at.exception
    return current_page(at)


def test_a_training_started_on_the_train_page_is_tracked_under_its_address_and_linked_back():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run()
    at.switch_page("pages/1_Train.py").run()
    start_small_training(at, 1, "tracked")
    job = page_job(at)
    entry = followed(at)["train_job"]
    tracked_job, label, url_path = entry.job, entry.label, entry.page
    assert tracked_job is job and label == "Training “tracked”"
    assert url_path == current_page(at) == "Train"
    job.join(120)
    assert job.status().state == "finished", job.status().message
    assert back_from_home(at, "Results on") == "Train"
    at.button(key="train_reset").click().run()  # Reset forgets it on the page and in the sidebar
    assert page_job(at) is None and "train_job" not in server_registry().entries("local")


def test_the_seed_experiment_is_tracked_under_its_address_and_linked_back():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run()
    at.switch_page("pages/6_Seed_experiment.py").run()
    at.number_input(key="seedexp_epochs").set_value(1)
    at.number_input(key="seedexp_default_epochs").set_value(1)
    at.button(key="seedexp_train").click().run()
    assert not at.exception, at.exception
    seq = page_job(at, "seedexp_seq")
    entry = followed(at)["seedexp_seq"]
    tracked_job, label, url_path = entry.job, entry.label, entry.page
    assert tracked_job is seq and label == "Seed experiment"
    assert url_path == current_page(at) == "Seed_experiment"
    assert seq.join(300)
    assert [j.status().state for j in seq.jobs.values()] == ["finished"] * 3
    assert back_from_home(at, "Results on") == "Seed_experiment"


def test_every_page_file_is_listed_once_and_a_page_finds_its_own_entry():
    listed = [p.path for p in PAGE_FILES]
    assert sorted(listed) == sorted(f"pages/{f.name}" for f in (ROOT / "pages").glob("*.py"))
    assert len({p.url_path for p in PAGE_FILES}) == len(PAGE_FILES)
    assert page_of(ROOT / "pages" / "6_Seed_experiment.py").url_path == "Seed_experiment"
    with pytest.raises(LookupError, match="add it to ui.navigation.PAGE_FILES"):
        page_of(ROOT / "app.py")


def test_the_time_left_never_reads_about_0_s():
    """Seen on the Seed experiment's fast variants: "epoch 101/150 · about 0 s left"."""
    from runner.jobs import JobStatus
    from ui.training_page import time_left

    assert time_left(JobStatus("running", 150, 0.6, eta_seconds=0.3)) == " · under 1 s left"
    assert time_left(JobStatus("running", 150, 0.6, eta_seconds=41.6)) == " · about 42 s left"
    assert time_left(JobStatus("running", 150, 0.6)) == ""  # its pace not known yet
    assert time_left(JobStatus("finished", 150, 1.0, eta_seconds=0.0, done=True)) == ""


def test_session_only_folders_on_shared_storage_remove_only_their_own_old_ones(tmp_path, monkeypatch):
    """With a shared queue the Seed experiment's runs go to <runs>/.scratch/seedexp-…; making one removes its own
    kind older than a day, never a learner's own files or folders there, nor a link's target."""
    import os
    import time

    from ui import common, training_page

    monkeypatch.setattr(training_page.distributed, "broker_url", lambda: "redis://127.0.0.1:1/0")
    monkeypatch.setattr(common, "runs_dir", lambda: tmp_path)
    root = tmp_path / training_page.SCRATCH
    old_ours, mine, my_file, target = root / "seedexp-old", root / "my-notes", root / "seedexp-note.txt", tmp_path / "t"
    named_like_ours = root / "seedexp-mine"  # a learner's own folder with our prefix, without our mark
    for folder in (old_ours, mine, target, named_like_ours):
        folder.mkdir(parents=True)
        (folder / "keep.txt").write_text("x")
    (old_ours / training_page.SCRATCH_MARK).write_text("")  # as scratch_folder leaves it
    (target / training_page.SCRATCH_MARK).write_text("")
    my_file.write_text("mine")
    (root / "seedexp-link").symlink_to(target)
    day_ago = time.time() - training_page.SCRATCH_KEPT - 60
    for path in (old_ours, mine, my_file, target, named_like_ours):
        os.utime(path, (day_ago, day_ago))
    made = training_page.scratch_folder("seedexp-")
    assert made.is_dir() and made.parent == root and made.name.startswith("seedexp-")
    assert (made / training_page.SCRATCH_MARK).is_file()
    assert not old_ours.exists()  # its own kind, a day old: removed
    assert (mine / "keep.txt").exists() and my_file.read_text() == "mine" and (target / "keep.txt").exists()
    assert (named_like_ours / "keep.txt").exists()
