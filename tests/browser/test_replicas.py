"""End to end in headless Chromium, beyond one server (issue 29): two app servers behind nginx with sticky sessions
(``deploy/nginx-replicas.conf``), one shared queue (a real redis-server, a worker as a process), one runs folder,
shared mode.

Alice opens the proxy's address, uploads a CSV and starts a long training, which the worker takes. The replica that
serves her is killed (as its machine dying would). Alice opens her link again: the proxy sends her to the other
replica, where her training is, still running; she stops it and finds her run saved. Bob, a learner of his own,
never sees anything of hers.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path

from tests.helpers.broker import RedisServer, Worker
from tests.helpers.browser import (
    E2E,
    ROOT,
    app_process,
    custom_without_patience,
    launch_chromium,
    learner_csv,
    learner_page,
    no_traceback,
    open_as_new_learner,
    screenshots_on_failure,
    shot,
    start_training,
    upload_csv,
)
from tests.helpers.proxy import replicas_behind_nginx

pytestmark = E2E
LONG = 5000  # epochs, patience off: far more than the test waits for
WAIT = 120_000  # ms


@contextlib.contextmanager
def shared_queue(tmp_path: Path, *, workers: int) -> Iterator[tuple[RedisServer, list[Worker], dict[str, str]]]:
    """A redis-server and ``workers`` workers of one slot, stopped at the end (with any the test adds to the list), and
    the app's environment for them: shared mode, that broker, a cache of its own."""
    broker, started = RedisServer(tmp_path), []
    try:
        started += [Worker(broker.url, tmp_path).wait_ready() for _ in range(workers)]
        yield broker, started, {"ATTENTION_PLAYGROUND_SHARED": "1", "ATTENTION_PLAYGROUND_BROKER": broker.url,
                                "ATTENTION_PLAYGROUND_CACHE": str(tmp_path / "cache")}
    finally:
        for worker in started:
            worker.stop()
        broker.stop()
        shutil.rmtree(tmp_path / "cache", ignore_errors=True)


def test_a_training_started_on_a_replica_that_dies_is_found_running_on_the_other(tmp_path):
    runs = tmp_path / "runs"
    from playwright.sync_api import sync_playwright

    with shared_queue(tmp_path, workers=1) as (_, _, env):
        with sync_playwright() as pw, launch_chromium(pw) as browser, \
                replicas_behind_nginx(runs, env, tmp_path) as (proxy, replicas):
            alice, bob = learner_page(browser), learner_page(browser)
            with screenshots_on_failure(tmp_path / "screenshots", {"alice": alice, "bob": bob}):
                first = alice.goto(f"{proxy}/Train").headers["x-replica"]
                link = open_as_new_learner(alice, proxy, "Train")
                assert alice.goto(link).headers["x-replica"] == first  # sticky: her browser, her replica
                big = tmp_path / "alice.csv"  # 3,000 rows, 0.2 MB: more than nginx keeps in memory (it must stream it)
                shutil.copyfile(ROOT / "data" / "uci_sentiment_sentences.csv", big)
                upload_csv(alice, big, LONG)
                custom_without_patience(alice, LONG)
                start_training(alice)
                alice.get_by_text(re.compile(rf"running · epoch \d+/{LONG}")).first.wait_for(timeout=WAIT)
                alice.get_by_text(re.compile(rf"running · epoch (\d\d+)/{LONG}")).first.wait_for(timeout=WAIT)

                replicas[first].send_signal(signal.SIGKILL)  # her replica dies with the page open
                replicas[first].wait(10)

                again = alice.goto(link.replace("/?", "/Train?", 1))  # her link, through the proxy: the other replica
                assert again.headers["x-replica"] != first
                main = alice.get_by_test_id("stMain")
                main.get_by_text(re.compile(rf"running · epoch \d+/{LONG}")).first.wait_for(timeout=WAIT)
                no_traceback(alice)
                shot(alice, "replica_b_finds_the_training")
                main.get_by_role("button", name="Stop").click()
                main.get_by_text(re.compile(rf"Training stopped after \d+ of {LONG} epochs\. Saved as run custom-alice\.")) \
                    .wait_for(timeout=WAIT)
                no_traceback(alice)

                open_as_new_learner(bob, proxy, "Train")  # another learner
                bob.get_by_test_id("stMain").get_by_text("Upload a CSV").wait_for()
                assert "alice" not in bob.inner_text("body")
        saved = [r.name for w in (runs / "workspaces").iterdir() for r in w.iterdir() if (r / "config.json").exists()]
        assert saved == ["custom-alice"]


def test_the_seed_experiment_goes_on_when_its_replica_dies(tmp_path):
    """The Seed experiment's three trainings go to the shared queue together, each after the one before: Eve's
    replica is killed while the first trains; her link on the other replica finds the experiment, which goes on
    to its results. Its runs are session-only: saved where the workers save (hidden in her runs folder), not listed."""
    runs = tmp_path / "runs"
    from playwright.sync_api import sync_playwright

    with shared_queue(tmp_path, workers=1) as (_, _, env):
        with sync_playwright() as pw, launch_chromium(pw) as browser, \
                replicas_behind_nginx(runs, env, tmp_path) as (proxy, replicas):
            eve = learner_page(browser)
            with screenshots_on_failure(tmp_path / "screenshots", {"eve": eve}):
                first = eve.goto(f"{proxy}/Seed_experiment").headers["x-replica"]
                link = open_as_new_learner(eve, proxy, "Seed_experiment").replace("/?", "/Seed_experiment?", 1)
                main = eve.get_by_test_id("stMain")
                # the post's 1000 epochs: ~7 s a seed variant here (at 150, ~1 s: it could end before it was seen)
                for label, epochs in (("Epochs, seed variants", "1000"), ("Epochs, default preset", "5")):
                    box = main.get_by_role("spinbutton", name=label)
                    box.fill(epochs)
                    box.press("Tab")
                main.get_by_role("button", name="Train all three").click()
                main.get_by_text(re.compile(r"running · epoch \d+/1000")).first.wait_for(timeout=WAIT)
                main.get_by_text("waiting for its turn").first.wait_for(timeout=WAIT)  # the two after it: in line
                shot(eve, "seed_experiment_on_the_shared_queue")

                replicas[first].send_signal(signal.SIGKILL)  # her replica dies mid-experiment
                replicas[first].wait(10)

                assert eve.goto(link).headers["x-replica"] != first
                main.get_by_text(re.compile(r"running · epoch|waiting for its turn")).first.wait_for(timeout=WAIT)
                main.get_by_text("finished · epoch 5/5").wait_for(timeout=3 * WAIT)  # the last of the three ended
                main.get_by_role("heading", name="Final training loss").wait_for(timeout=WAIT)
                main.get_by_role("heading", name="Time-lapse").wait_for(timeout=WAIT)
                assert main.get_by_text("finished · epoch 1000/1000").count() == 2  # and the two before it
                no_traceback(eve)
                shot(eve, "seed_experiment_found_on_replica_b")
        workspace = next((runs / "workspaces").iterdir())
        scratch = list((workspace / ".scratch").glob("seedexp-*/*/config.json"))
        assert sorted(p.parent.name for p in scratch) == ["default", "frozen", "head"]  # each trained once, saved once
        assert not [r for r in workspace.iterdir() if (r / "config.json").exists()]  # none in her runs list


def test_four_learners_two_replicas_two_workers_a_replica_and_a_worker_killed(tmp_path):
    """The class of issue 29: four learners in shared mode behind nginx, two replicas, two workers of one slot each
    (two train, two wait in line). The replica serving most of them is killed, and the worker training one of the
    others. Each learner reopens their link (the proxy sends them to the replica left), finds their training, stops
    it once it trains — the one whose worker died, once their page says it started again —, and keeps their run;
    nobody ever sees another's. (Stopping it while the page cannot know yet is tests/runner/test_distributed.py's.)"""
    runs, names = tmp_path / "runs", ("ann", "ben", "cat", "dan")
    from playwright.sync_api import sync_playwright

    with shared_queue(tmp_path, workers=2) as (broker, workers, env):
        with sync_playwright() as pw, launch_chromium(pw) as browser, \
                replicas_behind_nginx(runs, env, tmp_path) as (proxy, replicas):
            pages = {name: learner_page(browser) for name in names}
            with screenshots_on_failure(tmp_path / "screenshots", pages):
                links, served = {}, {}
                for name, page in pages.items():
                    served[name] = page.goto(f"{proxy}/Train").headers["x-replica"]
                    links[name] = open_as_new_learner(page, proxy, "Train")
                    upload_csv(page, learner_csv(tmp_path, name), LONG)
                    custom_without_patience(page, LONG)
                for page in pages.values():
                    start_training(page)
                for page in pages.values():  # two train on the two workers, two wait in line
                    page.get_by_text(re.compile(rf"running · epoch \d+/{LONG}|Waiting for a free slot")).first \
                        .wait_for(timeout=WAIT)
                training = [n for n, p in pages.items() if p.get_by_text(re.compile(r"running · epoch")).count()]
                assert len(training) <= 2

                doomed = max(replicas, key=lambda r: sum(s == r for s in served.values()))
                replicas[doomed].send_signal(signal.SIGKILL)
                replicas[doomed].wait(10)
                busy = [w for w in workers if w.names() and _horse_of(w)]
                assert busy, "a worker is training"
                lost = _learner_on(busy[0], broker.url)
                busy[0].kill()  # its machine dies: its training starts again on the other worker, later

                for name, page in pages.items():  # each reopens their link: the replica left
                    again = page.goto(links[name].replace("/?", "/Train?", 1))
                    assert again.headers["x-replica"] != doomed
                left, deadline, seen = set(names), time.monotonic() + 600, set()
                while left:  # whoever trains stops (their run saved), which lets the next in line train
                    assert time.monotonic() < deadline, f"still not stopped: {sorted(left)}"
                    for name in sorted(left):
                        page = pages[name]  # nothing of another learner: their runs, their CSVs
                        others = "|".join(rf"custom-{n}\b|\b{n}\.csv" for n in names if n != name)
                        main = page.get_by_test_id("stMain")
                        assert not re.search(others, page.inner_text("body")), name
                        no_traceback(page)
                        if not main.get_by_text(re.compile(rf"running · epoch \d+/{LONG}")).count():
                            continue
                        if name == lost:
                            if not main.get_by_text("started again from the beginning").count():
                                silent = main.get_by_text("No word from its worker for")
                                if silent.count() and "silent" not in seen:  # (its window is short: not asserted)
                                    seen.add("silent")
                                    silent.scroll_into_view_if_needed()
                                    shot(page, f"replicas_{name}_no_word_from_its_worker")
                                continue  # what it shows is from before its worker died: its page does not know yet
                            main.get_by_text("started again from the beginning").scroll_into_view_if_needed()
                            shot(page, f"replicas_{name}_started_again")
                        main.get_by_role("button", name="Stop").click()
                        main.get_by_text(re.compile(rf"Training stopped after \d+ of {LONG} epochs\. Saved as run "
                                                    rf"custom-{name}\.")).wait_for(timeout=WAIT)
                        left.discard(name)
                    pages[names[0]].wait_for_timeout(500)  # the pages redraw themselves meanwhile
        saved = sorted(r.name for w in (runs / "workspaces").iterdir() for r in w.iterdir() if (r / "config.json").exists())
        assert saved == [f"custom-{n}" for n in names]  # every learner's run, once, each in a workspace of its own
        assert len(list((runs / "workspaces").iterdir())) == 4


def _learner_on(worker: Worker, url: str) -> str:
    """The learner whose training ``worker`` runs (its run is named custom-<learner>)."""
    import redis
    from rq.job import Job
    from rq.registry import StartedJobRegistry

    from runner import distributed

    client = redis.Redis.from_url(url)
    try:
        jobs = Job.fetch_many(StartedJobRegistry(distributed.QUEUE, connection=client).get_job_ids(), connection=client)
        ours = [job for job in jobs if job is not None and job.worker_name in worker.names()]
        assert len(ours) == 1, ours
        return distributed.described(url, ours[0].args[0]).name.removeprefix("custom-")
    finally:
        client.close()


def _horse_of(worker: Worker) -> bool:
    """The worker has a work horse (a child process): it is training."""
    children = Path(f"/proc/{worker.process.pid}/task/{worker.process.pid}/children")
    return bool(children.exists() and children.read_text().split())


def test_with_no_worker_the_page_says_so_offers_cancel_and_trains_once_one_starts(tmp_path):
    """A shared queue no worker takes from: the learner is told their place and why nothing moves (not "your turn
    comes when a training ends": none will), with Cancel and no Pause; a worker started then trains it."""
    from playwright.sync_api import sync_playwright

    with shared_queue(tmp_path, workers=0) as (broker, workers, env), sync_playwright() as pw, \
            launch_chromium(pw) as browser, app_process(tmp_path / "runs", env=env) as (url, _):
        page = learner_page(browser)
        with screenshots_on_failure(tmp_path / "screenshots", {"learner": page}):
            open_as_new_learner(page, url, "Train")
            upload_csv(page, learner_csv(tmp_path, "eve"), LONG)
            custom_without_patience(page, LONG)
            start_training(page)
            main = page.get_by_test_id("stMain")
            info = main.get_by_text(re.compile(r"Waiting for a free slot: 1st in line\. No worker takes trainings"))
            info.wait_for(timeout=WAIT)
            assert "when a training ends" not in info.inner_text()
            main.get_by_role("button", name="Cancel").and_(page.locator(":enabled")).wait_for()
            assert main.get_by_role("button", name="Pause").is_disabled()
            workers.append(Worker(broker.url, tmp_path).wait_ready())
            main.get_by_text(re.compile(rf"running · epoch \d+/{LONG}")).first.wait_for(timeout=WAIT)
            main.get_by_role("button", name="Stop").click()
            main.get_by_text(re.compile(rf"Training stopped after \d+ of {LONG} epochs\. Saved as run custom-eve\.")) \
                .wait_for(timeout=WAIT)
            no_traceback(page)
