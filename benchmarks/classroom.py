"""A class on one server: N browser learners in shared mode, each with their own workspace.

One ``streamlit run app.py`` with ``ATTENTION_PLAYGROUND_SHARED=1`` on this machine; N learners
(Playwright browser contexts, 8 by default) open the app at once, each gets a private link, uploads
a CSV of their own (a different sample of the bundled UCI sentences, named after the learner) and
starts a training within a few seconds of the others. Measured in the same run:

* every learner's training finishes with a run saved in their own workspace (when: its folder appearing, seen from
  outside the browsers), and each learner's model picker lists their own run and no other learner's;
* how many waited in line (the page says "… in line"; with ``--engine`` the shared queue's line, sampled) and the
  places they were shown;
* ``/_stcore/health`` polled every 0.25 s from a process of its own, from the first Start to the
  last finish (p95, max);
* one more learner who does not train types sentences on the home page during the load, in a browser and a thread
  of their own (never held up by this script reading the others' pages): sentence → heatmap (p95);
* the server's memory (the Streamlit process and its training processes, resident, sampled each
  second: the largest sum), and the time from the first Start until the last training finished.

Learners per core, the method: the largest N of the runs made (``--learners``) for which every
training finished, health p95 < 100 ms and the typing learner's p95 ≤ 500 ms, divided by the cores.
Run: ``python benchmarks/classroom.py [--learners 8] [--rows 1000] [--epochs 10]``; prints a table
and a last JSON line. ``--quick``: a smoke run (2 learners, 120 rows, 2 epochs). ``--engine``: the same class
beyond one server, on this machine (issue 29): a redis-server, two workers of one slot, two replicas behind nginx;
memory and CPU then count every replica and worker.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import csv
import json
import os
import random
import re
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.app_latency import HealthProbe, launch_browser, type_sentences  # noqa: E402
from tests.helpers.browser import app_server, learner_page, open_as_new_learner, picker_options, upload_csv  # noqa: E402

HEALTH_P95_MS = 100.0
PACE = 3.0  # seconds between the typing learner's sentences: a person's pace (as the watch loop typed before)
TYPING_P95_MS = 500.0


def learner_csvs(folder: Path, n: int, rows: int) -> list[Path]:
    """n CSVs, each a different random sample of ``rows`` UCI sentences, named learner1.csv …"""
    with open(ROOT / "data" / "uci_sentiment_sentences.csv", newline="", encoding="utf-8") as f:
        table = list(csv.DictReader(f))
    paths = []
    for i in range(1, n + 1):
        sample = random.Random(i).sample(table, rows)
        path = folder / f"learner{i}.csv"
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=list(table[0]))
            w.writeheader()
            w.writerows(sample)
        paths.append(path)
    return paths


def _our_processes() -> set[int]:
    """The processes descending from this one (other servers on the machine are not counted)."""
    parents: dict[int, int] = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        parents[int(pid)] = int(stat.rsplit(")", 1)[1].split()[1])
    ours, grew = {os.getpid()}, True
    while grew:
        more = {pid for pid, parent in parents.items() if parent in ours} - ours
        ours |= more
        grew = bool(more)
    return ours - {os.getpid()}


def server_cpu_seconds() -> float:
    """CPU seconds (user + system) the Streamlit server processes have used so far (with ``--engine``: every
    replica's, summed), their training processes not counted: one Python process whose sessions share one
    interpreter lock, so near 1 core it is the bottleneck of every page."""
    tick, total, found = os.sysconf("SC_CLK_TCK"), 0.0, False
    for pid in _our_processes():
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            if "streamlit" in cmd and "runner.worker" not in cmd:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                total, found = total + (int(fields[11]) + int(fields[12])) / tick, True
        except OSError:
            continue
    return total if found else float("nan")


@contextlib.contextmanager
def serving(runs: Path, env: dict[str, str], folder: Path, engine: bool, replicas: int, workers: int, slots: int):
    """The app for the class: one server (as before), or with ``engine`` the shape beyond one server on this machine —
    a redis-server, ``workers`` workers of ``slots`` slots, ``replicas`` app servers behind nginx with sticky
    sessions (deploy/nginx-replicas.conf); yields the address the learners open and the broker's URL (None)."""
    if not engine:
        with app_server(runs, env=env, timeout=120) as url:
            yield url, None
        return
    from tests.helpers.broker import RedisServer, Worker
    from tests.helpers.proxy import replicas_behind_nginx

    broker = RedisServer(folder)
    started = []
    try:
        started = [Worker(broker.url, folder, "--slots", str(slots)) for _ in range(workers)]
        for w in started:
            w.wait_ready()
        env = {**env, "ATTENTION_PLAYGROUND_BROKER": broker.url}
        with replicas_behind_nginx(runs, env, folder, replicas) as (proxy, _):
            yield proxy, broker.url
    finally:
        for w in started:
            w.stop()
        broker.stop()


def resident_mb() -> float:
    """Resident memory of this benchmark's Streamlit server and its training processes, in MB."""
    total = 0
    for pid in _our_processes():
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            if "streamlit" not in cmd and "runner.worker" not in cmd and "runner worker" not in cmd:
                continue
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        m = re.search(r"VmRSS:\s+(\d+) kB", status)
        total += int(m.group(1)) if m else 0
    return total / 1024


class MemorySampler(threading.Thread):
    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak, self._halt = 0.0, threading.Event()

    def run(self) -> None:
        while not self._halt.wait(1.0):
            self.peak = max(self.peak, resident_mb())

    def stop(self) -> float:
        self._halt.set()
        self.join()
        return self.peak


class ServerSide(threading.Thread):
    """What the servers did, seen from outside the browsers (whose pages, at a low priority on a busy machine, are
    redrawn late): when each learner's run was saved (its folder's config.json appearing; learner i's run is named
    after learner{i}.csv), and with a shared queue the trainings seen waiting in its line. Polled every 0.25 s."""

    def __init__(self, runs: Path, broker_url: str | None) -> None:
        super().__init__(daemon=True)
        self.runs, self.saved_at, self.waited, self.most_waiting = runs, {}, set(), 0
        self._halt, self._t0 = threading.Event(), time.perf_counter()
        self._line = None
        if broker_url is not None:
            from rq import Queue

            from runner.distributed import QUEUE, connect

            client = connect(broker_url)
            key = Queue(QUEUE, connection=client).key
            self._line = lambda: [j.decode() for j in client.lrange(key, 0, -1)]

    def run(self) -> None:
        while not self._halt.wait(0.25):
            for config in self.runs.glob("workspaces/*/*/config.json"):
                m = re.search(r"learner(\d+)(?!\d)", config.parent.name)
                if m and int(m.group(1)) - 1 not in self.saved_at:
                    self.saved_at[int(m.group(1)) - 1] = time.perf_counter() - self._t0
            if self._line is not None:
                waiting = self._line()
                self.waited.update(waiting)
                self.most_waiting = max(self.most_waiting, len(waiting))

    def stop(self) -> None:
        self._halt.set()
        self.join()


class Typist(threading.Thread):
    """The learner who does not train: types sentences on the home page in a Chromium of their own (at the
    default priority), in a thread of their own, so that reading the other learners' pages never holds them up.
    Before the load (``ready``): ten sentences timed on the idle machine; from ``go`` until ``halt``: one every
    ``PACE`` seconds, each timed (Enter → its heatmap) with the server's answer to it (:class:`ServerAnswers`)."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url, self.ready, self.go, self.halt = url, threading.Event(), threading.Event(), threading.Event()
        self.idle: list[float] = []
        self.browser_ms = float("nan")
        self.typing: list[float] = []
        self.server_answers: list[float] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        from playwright.sync_api import sync_playwright

        try:
            with sync_playwright() as pw:
                browser = launch_browser(pw)
                page = learner_page(browser, timeout_ms=300_000)
                answers = ServerAnswers(page)
                page.goto(self.url)
                page.get_by_test_id("stMain").locator("g.ytick text", has_text="food").first.wait_for()
                # Its own browser's share of a sentence → heatmap, on this machine idle (as on the learner's own
                # computer): each sentence's round trip minus the server's answer to it.
                idle_sent = len(answers.sent)
                self.idle = [1000 * t for t in type_sentences(page, range(1000, 1010))]
                idle_answers = answers.answers_ms(answers.sent[idle_sent])
                self.browser_ms = statistics.median(t - a for t, a in zip(self.idle, idle_answers, strict=False))
                self.ready.set()
                self.go.wait()
                before = len(answers.sent)
                next_at = time.perf_counter()
                while not self.halt.is_set():  # a sentence every PACE seconds (or as soon as the last one drew)
                    self.typing += [1000 * t for t in type_sentences(page, [len(self.typing)])]
                    next_at += PACE
                    self.halt.wait(max(0.0, next_at - time.perf_counter()))
                self.server_answers = answers.answers_ms(answers.sent[before]) if len(answers.sent) > before else []
                browser.close()
        except BaseException as err:  # re-raised by the main thread
            self.error = err
            self.ready.set()


class ServerAnswers:
    """The server's answer time to each full page run a page asks for: from the browser sending the
    rerun (a ``BackMsg`` on the page's websocket) to its receiving the run's ``script_finished``, both
    timed by the browser's network stack (Chrome DevTools Protocol), so neither the page's drawing nor
    this script's polling is counted. What a class's server decides, wherever the browsers run."""

    def __init__(self, page) -> None:
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        self._back, self._forward = BackMsg, ForwardMsg
        self.sent: list[float] = []  # full reruns asked for (not a fragment's)
        self.finished: list[float] = []  # full runs finished
        self._cdp = page.context.new_cdp_session(page)
        self._cdp.on("Network.webSocketFrameSent", self._on_sent)
        self._cdp.on("Network.webSocketFrameReceived", self._on_received)
        self._cdp.send("Network.enable")

    def _payload(self, event: dict) -> bytes | None:
        frame = event.get("response", {})
        return base64.b64decode(frame.get("payloadData", "")) if frame.get("opcode") == 2 else None

    def _on_sent(self, event: dict) -> None:
        data = self._payload(event)
        if data:
            msg = self._back.FromString(data)
            if msg.WhichOneof("type") == "rerun_script" and not msg.rerun_script.fragment_id:
                self.sent.append(event["timestamp"])

    def _on_received(self, event: dict) -> None:
        data = self._payload(event)
        if data:
            msg = self._forward.FromString(data)
            if (msg.WhichOneof("type") == "script_finished"
                    and msg.script_finished == self._forward.ScriptFinishedStatus.FINISHED_SUCCESSFULLY):
                self.finished.append(event["timestamp"])

    def answers_ms(self, since: float = 0.0) -> list[float]:
        """For each full rerun sent after ``since`` (the browser's clock), ms until the next full run finished."""
        out = []
        for sent in (t for t in self.sent if t >= since):
            done = next((f for f in self.finished if f >= sent), None)
            if done is not None:
                out.append(1000 * (done - sent))
        return out


def p95(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=20, method="inclusive")[-1] if len(xs) >= 2 else (xs[0] if xs else float("nan"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--learners", type=int, default=8)
    ap.add_argument("--rows", type=int, default=1000, help="rows of each learner's CSV")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--max-trainings", type=int, default=None, help="ATTENTION_PLAYGROUND_MAX_TRAININGS (default: the app's)")
    ap.add_argument("--learner-browsers-nice", type=int, default=0, metavar="N",
                    help="run the training learners' Chromium at nice N (the typing learner's has its own, at 0): as "
                         "if the learners' browsers ran on their own machines, as in a class (default 0: every "
                         "browser at the default priority, everything on this machine's cores)")
    ap.add_argument("--engine", action="store_true",
                    help="beyond one server, on this machine: a redis-server, --workers workers of --slots slots, "
                         "--replicas app servers behind nginx (issue 29); the learners open nginx's address")
    ap.add_argument("--replicas", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--slots", type=int, default=1, help="each worker's trainings at once")
    ap.add_argument("--quick", action="store_true", help="a smoke run: 2 learners, 120 rows, 2 epochs")
    args = ap.parse_args()
    if args.quick:
        args.learners, args.rows, args.epochs = 2, 120, 2
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        runs = tmp / "runs"
        csvs = learner_csvs(tmp, args.learners, args.rows)
        env = {"ATTENTION_PLAYGROUND_SHARED": "1"}
        if args.max_trainings:
            env["ATTENTION_PLAYGROUND_MAX_TRAININGS"] = str(args.max_trainings)
        with serving(runs, env, tmp, args.engine, args.replicas, args.workers, args.slots) as (url, broker_url), \
                sync_playwright() as pw:
            browser = launch_browser(pw, nice=args.learner_browsers_nice)
            learners = [learner_page(browser, timeout_ms=300_000) for _ in range(args.learners)]
            links = []
            for p, c in zip(learners, csvs, strict=True):  # each a private link, then their CSV on Train
                links.append(open_as_new_learner(p, url, "Train"))
                upload_csv(p, c, args.epochs)
            typist = Typist(url)
            typist.start()
            typist.ready.wait()
            if typist.error is not None:
                raise typist.error

            memory = MemorySampler()
            memory.start()
            health = HealthProbe(url)
            server_side = ServerSide(runs, broker_url)
            server_side.start()
            cpu0 = server_cpu_seconds()
            t0 = time.perf_counter()
            typist.go.set()
            for p in learners:  # within a few seconds of each other, as a class told "press Start"
                p.get_by_test_id("stMain").get_by_role("button", name="Start training").click()
            places: list[str] = []
            shown_at: dict[int, float] = {}  # when each learner's page was seen saying its training ended
            rounds, looking = 0, 0.0  # the rounds reading the learners' pages, and their seconds
            while len(shown_at) < len(learners) and time.perf_counter() - t0 <= 900:
                rounds += 1
                look0 = time.perf_counter()
                for i, p in enumerate(learners):
                    if i in shown_at:
                        continue
                    main = p.get_by_test_id("stMain")
                    for text in main.get_by_text(re.compile(r"in line")).all_inner_texts():
                        places.append(f"learner{i + 1}: {text.strip()[:60]}")
                    if main.get_by_text(re.compile("Training (finished|stopped)")).count():
                        shown_at[i] = time.perf_counter() - t0
                looking += time.perf_counter() - look0
                if len(shown_at) < len(learners):
                    time.sleep(0.5)  # (pacing the reads of pages that change slowly, not waiting for anything)
            server_side.stop()
            typist.halt.set()
            typist.join()
            if typist.error is not None:
                raise typist.error
            server_cores = (server_cpu_seconds() - cpu0) / (time.perf_counter() - t0)
            checks = health.stop()
            peak_mb = memory.stop()
            finished_at = {i: server_side.saved_at[i] for i in shown_at if i in server_side.saved_at}
            last_finish = max(finished_at.values()) if finished_at else float("nan")
            typing, server_answers, idle, browser_ms = typist.typing, typist.server_answers, typist.idle, typist.browser_ms

            # Each learner sees their own run and nobody else's, in the model picker (Inspect's sidebar).
            own_only = True
            for i, (p, link) in enumerate(zip(learners, links, strict=True)):
                p.goto(link.replace("/?", "/Inspect?", 1))
                p.get_by_test_id("stMain").get_by_text("L1 · H1").first.wait_for()  # drawn after the sidebar's picker
                options = picker_options(p)
                mine = [o for o in options if f"learner{i + 1}" in o]
                others = [o for o in options if re.search(r"learner\d+", o) and f"learner{i + 1}" not in o]
                if not mine or others:
                    print(f"learner{i + 1} sees {options}", file=sys.stderr)
                    p.screenshot(path=str(ROOT / "benchmarks" / f"classroom-learner{i + 1}.png"))
                own_only &= bool(mine) and not others
            workspaces = sorted((runs / "workspaces").glob("*")) if (runs / "workspaces").exists() else []
            runs_per_workspace = [len([r for r in w.iterdir() if (r / "config.json").exists()]) for w in workspaces]
            browser.close()

    latencies = [ms for _, ms in checks]
    result = {
        "engine": {"replicas": args.replicas, "workers": args.workers, "slots": args.slots} if args.engine else None,
        "learners": args.learners, "learner_browsers_nice": args.learner_browsers_nice,
        "rows": args.rows, "epochs": args.epochs, "cores": os.cpu_count(),
        "all_finished": len(finished_at) == len(learners), "finished_at_s": sorted(round(v, 1) for v in finished_at.values()),
        "last_training_finished_s": round(last_finish, 1), "runs_per_workspace": runs_per_workspace,
        "each_sees_own_run_only": own_only,
        # the shared queue's own count where there is one (the pages', below, can miss a wait they were not redrawn in)
        "waited_in_line": len(server_side.waited) if broker_url else len({p.split(':')[0] for p in places}),
        "waited_in_line_pages": len({p.split(':')[0] for p in places}), "most_in_shared_line": server_side.most_waiting,
        "places_shown": sorted(set(places))[:20],
        "last_page_showed_the_end_s": round(max(shown_at.values()), 1) if shown_at else None,
        "page_reading_rounds": rounds, "page_reading_s": round(looking, 1), "typed_sentences": len(typing),
        "health_ms_p95": round(p95(latencies), 1), "health_ms_max": round(max(latencies), 1),
        "typing_ms_p95": round(p95(typing), 1), "typing_ms_median": round(statistics.median(typing), 1),
        "server_answer_ms_p95": round(p95(server_answers), 1),
        "server_answer_ms_median": round(statistics.median(server_answers), 1) if server_answers else None,
        "server_answers": len(server_answers),
        "idle_typing_ms_median": round(statistics.median(idle), 1), "browser_share_ms_idle": round(browser_ms, 1),
        "class_estimate_ms_p95": round(p95(server_answers) + browser_ms, 1),
        "server_memory_peak_mb": round(peak_mb), "server_process_cores": round(server_cores, 2),
    }
    served = result["all_finished"] and own_only and result["health_ms_p95"] < HEALTH_P95_MS
    ok = served and result["typing_ms_p95"] <= TYPING_P95_MS
    result["learners_per_core_held"] = round(args.learners / os.cpu_count(), 2) if ok else None
    # The same with the learners' browsers on their own computers, as in a class: the server's answer
    # under the load plus the typing learner's browser share measured idle.
    in_class = served and result["class_estimate_ms_p95"] <= TYPING_P95_MS
    result["learners_per_core_held_browsers_elsewhere"] = round(args.learners / os.cpu_count(), 2) if in_class else None
    rows = [
        ("every training finished, own workspace", f"{len(finished_at)}/{len(learners)}, runs {runs_per_workspace}"),
        ("each learner's picker: own run only", own_only),
        ("learners who waited in line", f"{result['waited_in_line']} ({'the shared queue seen; ' if broker_url else ''}"
                                        f"their pages said so: {result['waited_in_line_pages']})"),
        ("time until the last run was saved", f"{result['last_training_finished_s']} s (its page said so at "
                                              f"{result['last_page_showed_the_end_s']} s)"),
        ("learners' pages: rounds read, seconds", f"{rounds}, {result['page_reading_s']} s; typed {len(typing)} sentences"),
        ("health p95 / max", f"{result['health_ms_p95']} / {result['health_ms_max']} ms (goal p95 < {HEALTH_P95_MS:.0f})"),
        ("typing learner: sentence → heatmap p95", f"{result['typing_ms_p95']} ms (goal ≤ {TYPING_P95_MS:.0f})"),
        ("  of which the server's answer (p95, median)",
         f"{result['server_answer_ms_p95']} / {result['server_answer_ms_median']} ms ({len(server_answers)} page runs)"),
        ("  before the load: sentence → heatmap median", f"{result['idle_typing_ms_median']} ms, "
         f"the browser's share {result['browser_share_ms_idle']} ms"),
        ("  browsers elsewhere: server p95 + browser idle", f"{result['class_estimate_ms_p95']} ms (goal ≤ {TYPING_P95_MS:.0f})"),
        ("server + trainings, resident memory peak", f"{result['server_memory_peak_mb']} MB"),
        ("server process CPU during the load", f"{result['server_process_cores']} cores (one interpreter lock"
                                               f"{' each; replicas summed' if args.engine else ''})"),
        ("learners per core held (all on this machine)", result["learners_per_core_held"]),
        ("learners per core held (browsers elsewhere)", result["learners_per_core_held_browsers_elsewhere"]),
    ]
    for name, value in rows:
        print(f"{name:45} {value}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
