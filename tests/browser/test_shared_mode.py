"""End to end in headless Chromium, a class on one server (issue 14): learners in shared mode.

One ``streamlit run app.py`` with ``ATTENTION_PLAYGROUND_SHARED=1``, one training slot
(``ATTENTION_PLAYGROUND_MAX_TRAININGS=1``) and a teacher token; each learner is a browser context
of its own, so a workspace of its own. Alice trains; Carol, then Bob, press Start meanwhile and see
their places in line, then finish in turn. Bob never sees Alice's or Carol's run in any picker, list
or page. The server restarts on the same runs root and port: Alice's link opens her run again.
Alice, opening her link with the teacher token, publishes her run: Bob finds it in his picker and
opens it, and his runs list (rename, delete) still holds his own run alone.

On a failure, each learner's page is saved as a screenshot in the test's temporary folder (printed).
"""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

from tests.helpers.browser import (
    CHROMIUM,
    E2E,
    app_server,
    custom_without_patience,
    free_port,
    launch_chromium,
    learner_csv,
    learner_page,
    no_traceback,
    open_as_new_learner,
    picker_options,
    screenshots_on_failure,
    shot,
    start_training,
    upload_csv,
)
from ui.preview import PRETRAINED_NAME

pytestmark = E2E

BUNDLED = "Bundled: default model on UCI sentences"
PRETRAINED = PRETRAINED_NAME  # the pretrained encoder, listed after it
TEACHER = "teacher-token-of-the-test-0123456789"
LONG = 5000  # Alice's epochs, patience off: far more than the test waits for (she stops once the others are in line)
SHORT = 3  # Carol's and Bob's epochs
WAIT = 120_000  # ms: the deadline of a step that waits for a training (2 busy cores, shared with other jobs)


def runs_table(main) -> list[str]:
    """The run names in the Train page's runs table (Streamlit writes the grid's cells into an accessible table too)."""
    table = main.locator("[data-testid=stDataFrame] table:has(th:text-is('kept model'))")
    table.wait_for(state="attached")
    column = [th.inner_text() for th in table.locator("th").all()].index("run")
    return [tr.locator("td").nth(column).inner_text() for tr in table.locator("tbody tr").all()]


def manageable_runs(page) -> list[str]:
    """The runs this learner can open, rename, delete or compare on the Train page (which is open)."""
    main = page.get_by_test_id("stMain")
    main.get_by_role("heading", name="Runs").wait_for()
    listed = runs_table(main)
    assert picker_options(page, main.get_by_role("combobox", name="Run", exact=True)) == listed
    assert picker_options(page, main.get_by_role("combobox", name="Compare two runs", exact=True)) == listed
    return listed


def sees_only(page, link: str, own: list[str], others: list[str], published: tuple[str, ...] = ()) -> None:
    """This learner's pickers on Home and Inspect (also Compare's second model): the bundled model,
    ``own`` runs, then ``published`` ones; Train's runs list: ``own`` alone; no word of ``others``
    anywhere on these pages. Opens ``link`` (Home), then the others from the sidebar: Train is left open."""
    main, nav = page.get_by_test_id("stMain"), page.get_by_test_id("stSidebarNav")
    hidden = re.compile("|".join(map(re.escape, others)))

    page.goto(link)
    main.locator("g.ytick text").first.wait_for()  # Home's heatmap: drawn after the sidebar's picker
    assert picker_options(page) == [BUNDLED, PRETRAINED, *own, *published]
    assert not hidden.search(page.inner_text("body"))

    nav.get_by_role("link", name="Inspect").click()
    main.get_by_text("L1 · H1").first.wait_for()
    assert picker_options(page) == [BUNDLED, PRETRAINED, *own, *published]
    main.get_by_role("tab", name="Compare").click()
    main.get_by_text("Same sentence, two models").click()
    second = picker_options(page, main.get_by_role("combobox", name="Second model", exact=True))
    assert sorted(second) == sorted([PRETRAINED, *own, *published]), second  # all but the one open: the bundled model
    assert not hidden.search(page.inner_text("body"))
    no_traceback(page)

    nav.get_by_role("link", name="Train").click()
    assert manageable_runs(page) == own
    assert not hidden.search(page.inner_text("body"))
    no_traceback(page)


def test_two_learners_one_in_line_a_restart_and_a_published_run(tmp_path):
    assert shutil.which(CHROMIUM) or Path(CHROMIUM).exists(), "chromium is not installed"
    runs = tmp_path / "runs"
    env = {"ATTENTION_PLAYGROUND_SHARED": "1", "ATTENTION_PLAYGROUND_MAX_TRAININGS": "1",
           "ATTENTION_PLAYGROUND_TEACHER_TOKEN": TEACHER, "ATTENTION_PLAYGROUND_CACHE": str(tmp_path / "cache")}
    port = free_port()  # the same after the restart: the learners' links stay as they were
    t0 = time.monotonic()

    def step(what: str) -> None:  # printed with the failure: which step took how long
        print(f"{time.monotonic() - t0:6.1f} s  {what}")

    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw, launch_chromium(pw) as browser:
        learners = {name: learner_page(browser) for name in ("alice", "bob", "carol")}
        alice, bob, carol = learners.values()

        with app_server(runs, port=port, env=env, timeout=120) as url, \
                screenshots_on_failure(tmp_path / "screenshots-before-restart", learners):
            step("server up")
            links = {}
            for name, epochs in (("alice", LONG), ("carol", SHORT), ("bob", SHORT)):
                links[name] = open_as_new_learner(learners[name], url, "Train")
                upload_csv(learners[name], learner_csv(tmp_path, name), epochs)
            # Alice's training must last until the others are in line: patience off (the default preset's would
            # end it after a few epochs and free the slot). Carol's and Bob's 3 epochs end before any patience.
            custom_without_patience(alice, LONG)
            assert len(set(links.values())) == 3  # three private links
            assert f"{url}/Train?w=" in alice.get_by_test_id("stSidebar").get_by_test_id("stCode").inner_text()  # shown
            step("three learners opened their workspaces and uploaded a CSV")

            # Alice trains on the one slot; Carol's Start, then Bob's, wait in line, each told their place.
            start_training(alice)
            alice.get_by_text(re.compile(rf"running · epoch \d+/{LONG}")).first.wait_for(timeout=WAIT)
            start_training(carol)
            carol.get_by_text(re.compile(r"Waiting for a free slot: 1st in line")).wait_for(timeout=WAIT)
            assert carol.get_by_role("button", name="Cancel").is_enabled()
            start_training(bob)
            bob.get_by_text(re.compile(r"Waiting for a free slot: 2nd in line")).wait_for(timeout=WAIT)
            carol.get_by_text("Waiting for a free slot: 1st in line").wait_for(timeout=5_000)  # first in, first out
            alice.get_by_text(re.compile(rf"running · epoch \d+/{LONG}")).first.wait_for(timeout=5_000)  # all the while
            assert not re.search("alice|carol", bob.inner_text("body"))  # nothing of theirs on Bob's page or sidebar
            shot(bob, "shared_in_line")
            step("Carol 1st in line, Bob 2nd")
            alice.get_by_role("button", name="Stop").click()
            alice.get_by_text(re.compile(rf"Training stopped after \d+ of {LONG} epochs\. Saved as run custom-alice\.")) \
                .wait_for(timeout=WAIT)
            for name in ("carol", "bob"):  # each in turn: started by itself, finished, saved
                learners[name].get_by_text(re.compile(rf"Training finished.* Saved as run default-{name}\.")) \
                    .wait_for(timeout=WAIT)
                no_traceback(learners[name])
            step("Alice stopped; Carol, then Bob, finished")
            workspaces = list((runs / "workspaces").iterdir())
            saved = sorted(r.name for w in workspaces for r in w.iterdir() if (r / "config.json").exists())
            assert (len(workspaces), saved) == (3, ["custom-alice", "default-bob", "default-carol"])

            sees_only(bob, links["bob"], ["default-bob"], others=["alice", "carol"])
            step("Bob sees his run alone")
            carol.goto(links["carol"])
            assert picker_options(carol) == [BUNDLED, PRETRAINED, "default-carol"]

        with app_server(runs, port=port, env=env, timeout=120) as again, \
                screenshots_on_failure(tmp_path / "screenshots-after-restart", learners):
            assert again == url
            step("server restarted")
            sees_only(alice, links["alice"], ["custom-alice"], others=["bob", "carol"])  # her link: her run
            step("Alice's link opens her run")

            # Alice with the teacher token publishes her run; the token leaves the address.
            alice.goto(f"{links['alice']}&teacher={TEACHER}")
            sidebar = alice.get_by_test_id("stSidebar")
            sidebar.get_by_text("Teacher: publish runs").click()
            assert picker_options(alice, sidebar.get_by_role("combobox", name="One of your runs", exact=True)) \
                == ["custom-alice"]
            sidebar.get_by_role("button", name="Publish").click()
            published = sidebar.get_by_text(re.compile(r"Published: 📌 custom-alice — by .+"))
            published.wait_for()
            assert TEACHER not in alice.url
            pin = published.inner_text().removeprefix("Published: ")
            assert re.search(r"[?&]w=([\w-]+)", links["alice"])[1] not in pin  # the author's label, never a token
            shot(alice, "shared_teacher_published")
            step("Alice published her run as the teacher")

            # Bob: the published run beside his own in every picker, never in his runs list.
            sees_only(bob, links["bob"], ["default-bob"], others=["carol"], published=(pin,))
            main, bob_sidebar, nav = (bob.get_by_test_id(t) for t in ("stMain", "stSidebar", "stSidebarNav"))
            nav.get_by_role("link", name="Home").click()
            main.locator("g.ytick text").first.wait_for()
            bob_sidebar.get_by_role("combobox", name="Model", exact=True).click()
            bob.get_by_role("option", name=pin).click()
            bob_sidebar.get_by_text(re.compile(r"custom-alice · \d layers? × \d heads?")).wait_for()
            main.get_by_text("Prediction:").wait_for()
            no_traceback(bob)
            shot(bob, "shared_published_on_home")
            nav.get_by_role("link", name="Inspect").click()  # the published run stays open on every page
            bob_sidebar.get_by_text(re.compile(r"custom-alice · \d layers? × \d heads? · \w+ positions")).wait_for()
            main.locator("[role=tab][aria-selected=true]", has_text="Compare").wait_for()  # the tab he left Inspect on
            main.get_by_role("tab", name="Model view").click()
            main.get_by_text("L1 · H1").first.wait_for()
            assert bob_sidebar.get_by_role("combobox", name="Model", exact=True).input_value() == pin
            nav.get_by_role("link", name="Train").click()
            assert manageable_runs(bob) == ["default-bob"]  # nothing of the published run to rename or delete
            no_traceback(bob)
            step("Bob opened the published run; his runs list holds his own alone")
            assert (runs / "published" / "custom-alice" / "config.json").exists()
            assert (runs / "workspaces" / next(w.name for w in workspaces if (w / "custom-alice").exists())
                    / "custom-alice" / "config.json").exists()  # Alice's own run stays hers
