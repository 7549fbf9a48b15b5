"""The server's training queue: N at once, first in first out, per-owner limits, cancel, place and
wait estimate, sequences, caps — with fake trainings (tickets ended by the test), then with real jobs."""

from __future__ import annotations

import queue as stdlib_queue
import threading

import pytest

from attention_core import TrainConfig
from attention_core.errors import InputError
from attention_core.workspaces import LOCAL_KEY
from runner.jobs import JobSequence, TrainingJob
from runner.queue import CapError, QueueLimitError, Ticket, TrainingQueue, apply_caps, default_slots, ordinal
from tests.helpers.jobs import tiny_spec, wait_for_epochs


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def fake_queue(slots: int, clock: Clock | None = None) -> tuple[TrainingQueue, list[str]]:
    """A queue and the labels of the tickets it has launched, in order."""
    return TrainingQueue(slots=slots, clock=clock or Clock()), []


def submit(q: TrainingQueue, launched: list[str], owner: str, label: str | None = None, **kw) -> Ticket:
    return q.submit(owner, lambda t: launched.append(t.label), label=label or owner, **kw)


def test_first_in_first_out_with_at_most_n_running():
    q, launched = fake_queue(2)
    a, b, c, d = (submit(q, launched, owner) for owner in "abcd")
    assert launched == ["a", "b"] and [t.state for t in (a, b, c, d)] == ["running", "running", "waiting", "waiting"]
    assert (c.place, d.place, a.place) == (1, 2, None)
    b.done()  # the second ends first: the first in line takes its slot
    assert launched == ["a", "b", "c"] and d.place == 1 and len(q.running) == 2
    a.done()
    c.done()
    assert launched == ["a", "b", "c", "d"] and q.waiting == [] and q.running == [d]
    d.done()
    assert q.running == [] and {t.state for t in (a, b, c, d)} == {"ended"}


def test_an_owner_has_one_running_and_one_waiting_and_a_third_is_refused():
    q, launched = fake_queue(2)
    first, second = submit(q, launched, "x", "x1"), submit(q, launched, "x", "x2")
    assert first.state == "running" and second.state == "waiting"  # a slot is free, but x has one running
    with pytest.raises(QueueLimitError, match="you already have 1 training running and 1 waiting .* cancel it"):
        submit(q, launched, "x", "x3")
    other = submit(q, launched, "y")  # passes x's waiting ticket: its owner trains nothing
    assert launched == ["x1", "y"] and other.state == "running"
    assert isinstance(QueueLimitError("m"), InputError)  # shown as an error with its fix, never a traceback
    first.done()
    assert launched == ["x1", "y", "x2"]
    submit(q, launched, "x", "x3")  # one running, one waiting again: allowed


def test_on_ones_own_machine_only_the_slots_limit_trainings():
    """Local mode's one owner ('local') may run as many trainings as there are slots, and queue more, as
    before the queue (a Seed experiment started during a Train-page training runs beside it)."""
    q, launched = fake_queue(2)
    tickets = [submit(q, launched, LOCAL_KEY, f"l{i}") for i in range(4)]  # no QueueLimitError
    assert launched == ["l0", "l1"] and [t.state for t in tickets] == ["running", "running", "waiting", "waiting"]
    tickets[0].done()
    assert launched == ["l0", "l1", "l2"]


def test_a_cancelled_ticket_never_starts_and_those_behind_move_up():
    q, launched = fake_queue(1)
    running, b, c = (submit(q, launched, owner) for owner in "abc")
    assert b.cancel() and b.state == "cancelled" and c.place == 1
    assert not b.cancel() and not running.cancel()  # only a waiting ticket can leave the line
    running.done()
    assert launched == ["a", "c"]
    submit(q, launched, "b")  # the cancelled one no longer counts against its owner


def test_a_launch_that_fails_gives_its_slot_to_the_next():
    q, launched = fake_queue(1)

    def broken(_: Ticket) -> None:
        raise RuntimeError("the host is gone")

    bad = q.submit("a", broken, label="bad")
    after = submit(q, launched, "b")
    assert bad.state == "ended" and after.state == "running" and launched == ["b"]


def test_place_and_wait_estimate_from_the_running_jobs_and_recent_durations():
    clock = Clock()
    q, launched = fake_queue(1, clock)
    first, second = submit(q, launched, "a"), submit(q, launched, "b")
    assert second.wait_seconds is None  # nothing has ended yet and the running one has no pace: unknown
    clock.now = 40.0
    first.done()  # one training took 40 s
    third, fourth = submit(q, launched, "c", expected=100.0), submit(q, launched, "d")
    clock.now = 50.0  # the running one ("b") started 10 s ago: about 30 s left
    assert (third.place, fourth.place) == (1, 2)
    assert third.wait_seconds == pytest.approx(30.0)
    assert fourth.wait_seconds == pytest.approx(30.0 + 100.0)  # behind one whose time budget is 100 s
    assert second.wait_seconds is None  # running: no wait


def test_a_running_ticket_with_its_own_eta_and_two_slots():
    q, launched = fake_queue(2)
    left = {"a": 12.0, "b": 5.0}
    a = submit(q, launched, "a", remaining=lambda: left["a"])
    submit(q, launched, "b", remaining=lambda: left["b"])
    c, d = submit(q, launched, "c", expected=20.0), submit(q, launched, "d")
    assert c.wait_seconds == pytest.approx(5.0)  # the slot that frees first
    assert d.wait_seconds == pytest.approx(12.0)  # c takes b's slot until 25 s; a's frees at 12 s
    a.done()
    assert c.state == "running" and d.wait_seconds == pytest.approx(5.0)


def test_a_sequence_is_one_ticket_that_goes_back_to_the_end_of_the_line_after_each_job():
    q, launched = fake_queue(1)
    seq = submit(q, launched, "s", "seq")
    other = submit(q, launched, "t")
    seq.requeue()  # its first job ended: the next one waits behind "t"
    assert launched == ["seq", "t"] and seq.state == "waiting" and seq.place == 1 and seq.turns == 1
    with pytest.raises(QueueLimitError):  # the whole sequence counts once: a second may wait, not a third
        submit(q, launched, "s", "s2"), submit(q, launched, "s", "s3")
    other.done()
    assert launched == ["seq", "t", "seq"] and seq.turns == 2 and seq.state == "running"
    seq.done()
    assert launched == ["seq", "t", "seq", "s2"] and seq.state == "ended"


def test_tickets_ended_from_many_threads_never_exceed_the_slots():
    q, launched = fake_queue(3)
    started: stdlib_queue.Queue[Ticket | None] = stdlib_queue.Queue()
    most, ended, lock, all_ended = [0], [0], threading.Lock(), threading.Event()
    submitters, per_submitter = 4, 50

    def launch(t: Ticket) -> None:
        most[0] = max(most[0], len(q.running))
        started.put(t)

    def ender() -> None:  # ends each launched ticket; the one that ends the last says so
        while (t := started.get()) is not None:
            t.done()
            with lock:
                ended[0] += 1
                if ended[0] == submitters * per_submitter:
                    all_ended.set()

    enders = [threading.Thread(target=ender) for _ in range(4)]
    for t in enders:
        t.start()
    threads = [threading.Thread(target=lambda i=i: [q.submit(f"{i}-{k}", launch) for k in range(per_submitter)])
               for i in range(submitters)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all_ended.wait(60), f"{ended[0]} of {submitters * per_submitter} tickets ended"
    for _ in enders:
        started.put(None)
    for t in enders:
        t.join()
    assert 1 <= most[0] <= 3 and q.running == [] and q.waiting == []


def test_slots_default_to_the_cores_and_are_settable(monkeypatch):
    monkeypatch.delenv("ATTENTION_PLAYGROUND_MAX_TRAININGS", raising=False)
    monkeypatch.setattr("os.cpu_count", lambda: 6)
    assert default_slots() == 6
    monkeypatch.setenv("ATTENTION_PLAYGROUND_MAX_TRAININGS", "1")
    assert default_slots() == 1 and TrainingQueue().slots == 1
    for bad in ("0", "two"):
        monkeypatch.setenv("ATTENTION_PLAYGROUND_MAX_TRAININGS", bad)
        with pytest.raises(InputError, match="at least 1 — set it"):
            default_slots()
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101)] == \
        ["1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st"]


def test_caps_refuse_too_much_work_and_clamp_the_time_budget(monkeypatch):
    config = TrainConfig(epochs=1000)
    assert apply_caps(config, 39) == (config, None)  # no caps set: unchanged
    monkeypatch.setenv("ATTENTION_PLAYGROUND_MAX_WORK", "30000")
    with pytest.raises(CapError, match="39 rows × 1,000 epochs = 39,000 .* train at most 769 epochs on these rows"):
        apply_caps(config, 39)
    assert apply_caps(TrainConfig(epochs=10), 3000)[0].epochs == 10  # 30,000: at the cap is allowed
    with pytest.raises(CapError, match="use at most 30,000 rows"):
        apply_caps(TrainConfig(epochs=1), 40_000)
    monkeypatch.setenv("ATTENTION_PLAYGROUND_MAX_SECONDS", "120")
    capped, note = apply_caps(TrainConfig(epochs=10), 3000)
    assert capped.time_budget == 120 and "after 120 s" in note and "asked: none" in note
    assert apply_caps(TrainConfig(epochs=10, time_budget=60), 3000) == (TrainConfig(epochs=10, time_budget=60), None)
    monkeypatch.setenv("ATTENTION_PLAYGROUND_MAX_SECONDS", "-1")
    with pytest.raises(InputError, match="MAX_SECONDS='-1' is not a positive number"):
        apply_caps(config, 1)


# -- real jobs through a queue ------------------------------------------------------------------------


def test_a_waiting_job_shows_its_place_starts_when_the_slot_frees_and_can_be_cancelled(tmp_path):
    q = TrainingQueue(slots=1)
    first = TrainingJob(tiny_spec(100_000), tmp_path, "first")
    first.submit(q, "a")
    second, third = TrainingJob(tiny_spec(2), tmp_path, "second"), TrainingJob(tiny_spec(2), tmp_path, "third")
    second.submit(q, "b")
    third.submit(q, "c")
    snap = second.status()
    assert snap.state == "waiting" and snap.place == 1 and third.status().place == 2 and not snap.done
    assert second.alive and not second.done and first.alive
    third.stop()  # cancel: it leaves the line and never starts
    assert third.done and third.state == "cancelled" and "nothing was trained or saved" in third.message
    wait_for_epochs(first, 1)
    first.stop()  # stopping the running one frees its slot
    second.join(120)
    assert first.state == "stopped" and second.state == "finished" and third.pid is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["first", "second"]


@pytest.mark.parametrize("ending", ["finished", "failed", "orphaned while waiting"])
def test_a_job_ending_in_each_way_frees_its_slot(tmp_path, ending):
    q = TrainingQueue(slots=1)
    spec = tiny_spec(1, ["qzxv wvvq", "xqqz zzvk"] * 3) if ending == "failed" else tiny_spec(1)  # no known word
    first = TrainingJob(spec, tmp_path, "first")
    first.submit(q, "a")
    waiting = TrainingJob(tiny_spec(1), tmp_path, "waiting", orphan_after=0.0 if "orphaned" in ending else 90)
    waiting.submit(q, "b")
    after = TrainingJob(tiny_spec(1), tmp_path, "after")
    after.submit(q, "c")
    after.join(120)
    first.join(1)
    waiting.join(120)
    assert first.state == ("failed" if ending == "failed" else "finished")
    assert waiting.state == ("cancelled" if "orphaned" in ending else "finished")
    assert after.state == "finished" and q.running == [] and q.waiting == []


def test_a_sequence_waits_its_turn_for_each_of_its_jobs(tmp_path):
    q = TrainingQueue(slots=1)
    seq = JobSequence([("s1", tiny_spec(1)), ("s2", tiny_spec(1))], tmp_path / "seq")
    seq.submit(q, "s")
    other = TrainingJob(tiny_spec(100_000), tmp_path, "other")
    other.submit(q, "t")
    assert other.status().place == 1
    seq.jobs["s1"].join(120)
    seq.heartbeat()
    wait_for_epochs(other, 1)  # s1 ended: "other" trains, and the sequence waits behind it
    assert seq.waiting and seq.alive and seq.status().state == "waiting (2 of 2)" and list(seq.jobs) == ["s1"]
    other.stop()
    assert seq.join(120)
    assert [j.state for j in seq.jobs.values()] == ["finished", "finished"] and q.running == []


def test_a_waiting_sequence_can_be_cancelled(tmp_path):
    q = TrainingQueue(slots=1)
    first = TrainingJob(tiny_spec(100_000), tmp_path, "first")
    first.submit(q, "a")
    seq = JobSequence([("s1", tiny_spec(1))], tmp_path / "seq")
    seq.submit(q, "s")
    assert seq.status().state == "waiting (1 of 1)" and seq.alive
    seq.stop()
    assert seq.join(5) and seq.jobs == {} and q.waiting == []
    first.stop()
    first.join(60)


# -- what a waiting learner is told ---------------------------------------------------------------------
def test_a_rise_for_a_moment_is_not_told_but_one_that_lasts_is():
    """A running training's estimate jumps for a moment (a first guess before it has a pace): the waiting
    learner's estimate counts down instead of reading "about 27 s" among readings of 0–4 s."""
    clock = Clock()
    q, launched = fake_queue(1, clock)
    left: dict[str, float | None] = {"a": 4.0}
    submit(q, launched, "a", remaining=lambda: left["a"], expected=30.0)
    waiting = submit(q, launched, "b")
    told = []
    for now, eta in [(0, 4.0), (1, 3.0), (2, 2.0), (3, None), (4, 0.5)]:
        clock.now, left["a"] = now, eta
        told.append(waiting.wait_seconds)
    assert q.wait_seconds(waiting) == pytest.approx(0.5)
    assert told == pytest.approx([4.0, 3.0, 2.0, 1.0, 0.5])  # at 3 s the rule alone says 30 - 3 = 27
    for now, eta in [(5, 20.0), (7, 18.0)]:  # a rise that lasts (it slowed down): told once it has lasted
        clock.now, left["a"] = now, eta
        assert waiting.wait_seconds == 0.0
    clock.now, left["a"] = 10, 15.0
    assert waiting.wait_seconds == pytest.approx(15.0)
    clock.now, left["a"] = 11, 17.0  # a small rise is told at once
    assert waiting.wait_seconds == pytest.approx(17.0)


def test_a_job_just_started_has_no_pace_for_the_queue_until_it_has_trained_a_second(tmp_path):
    from attention_core.history import StepEvent
    from runner.protocol import Started, Stepped

    job = TrainingJob(tiny_spec(10), tmp_path, "fresh")
    job._take(Started(1, 100))
    job._take(Stepped(StepEvent(1, 1, 50, 0.7, 2, 0.2), []))  # two examples in its first 0.2 s (warm-up): 1000 examples left
    assert job._time_left() is None  # the queue guesses from its budget or recent durations instead of 100 s
    assert job.status().eta_seconds == pytest.approx(998 / 10)  # its own progress line still says it
    job._take(Stepped(StepEvent(1, 40, 50, 0.7, 400, 2.0), []))  # 2 s of training: its pace counts
    assert job._time_left() == pytest.approx(600 / 200)


def test_a_wait_of_a_few_seconds_reads_starting_soon():
    from runner.jobs import JobStatus
    from ui.train_views import in_line

    def said(place: int | None, wait: float | None) -> str:
        return in_line(JobStatus("waiting", 1, 0.0, place=place, wait_seconds=wait))

    assert said(1, 0.0) == "1st in line, starting soon"  # was "about 0 s" while the training ahead saved its run
    assert said(1, 4.6) == "1st in line, starting soon"
    assert said(2, 40.0) == "2nd in line, about 40 s"
    assert said(3, 600.0) == "3rd in line, about 10 min"
    assert said(1, None) == "1st in line — your turn comes when a training ends"
    # the page's message goes on "It starts by itself; …": the place never says it again
    assert not any("starts by itself" in said(p, w) for p in (1, 2, None) for w in (None, 0.0, 40.0))


def test_a_turn_comes_when_the_slots_have_taken_those_ahead():
    """The one rule of both queues' estimates (this server's, and the shared queue's in runner.distributed)."""
    from runner.queue import turn_comes

    assert turn_comes([], 2, []) == 0.0  # a free slot
    assert turn_comes([10.0, 4.0], 2, []) == 4.0  # the first busy slot to free
    assert turn_comes([10.0], 2, [30.0, 5.0]) == 15.0  # one ahead takes the free slot, the other the next at 10 s
    assert turn_comes([10.0, 20.0], 2, [5.0, 5.0, 5.0]) == 20.0  # 10→15→20, while the other slot frees at 20
