"""ThreadTuner: try each thread count for a window, keep the fastest, try again later; never
more threads than the other processes leave cores for. Measurements and load are injected."""

from __future__ import annotations

import types

import pytest
import torch

from attention_core import threads
from attention_core.threads import (
    FollowFreeCores,
    OtherProcessesCpu,
    ThreadTuner,
    auto_threads,
    next_limit,
    thread_choices,
    thread_limit,
)


class FakeMachine:
    """Training whose speed depends on the thread count: ``rates[threads]`` examples per second;
    ``others`` cores used by other processes (what the tuner's ``others`` reads); wall time =
    training time."""

    def __init__(self, rates: dict[int, float], others: float | None = 0.0) -> None:
        self.rates, self.threads, self.examples, self.seconds, self.calls = rates, None, 0.0, 0.0, []
        self.others = others

    def tuner(self, **kwargs) -> ThreadTuner:
        """A tuner that reads this machine's load, on 2 cores."""
        return ThreadTuner((1, 2), set_threads=self.set_threads, others=lambda: self.others, cores=2,
                           clock=lambda: self.seconds, **kwargs)

    def run(self, tuner: ThreadTuner, seconds: float, dt: float = 0.01) -> list[int]:
        """Train for ``seconds``; the thread count after each step."""
        used = []
        for _ in range(round(seconds / dt)):
            self.step(tuner, dt)
            used.append(self.threads)
        return used

    def set_threads(self, n: int) -> None:
        self.threads = n
        self.calls.append(n)

    def step(self, tuner: ThreadTuner, dt: float = 0.01) -> None:
        self.seconds += dt
        self.examples += self.rates[self.threads] * dt
        tuner.update(int(self.examples), self.seconds)


@pytest.mark.parametrize(("rates", "winner"), [({1: 3000.0, 2: 5000.0}, 2), ({1: 3000.0, 2: 1000.0}, 1)])
def test_the_faster_choice_is_kept_after_one_round_of_trials(rates, winner):
    m = FakeMachine(rates)
    tuner = ThreadTuner((1, 2), window=0.3, hold=5.0, set_threads=m.set_threads)
    for _ in range(100):  # 1 s: a 0.3 s trial of each, then holding the winner
        m.step(tuner)
    assert tuner.rates[1] == pytest.approx(rates[1], rel=0.02) and tuner.rates[2] == pytest.approx(rates[2], rel=0.02)
    assert m.threads == winner and tuner.current == winner


def test_trials_start_again_after_the_hold_and_follow_a_change_of_load():
    m = FakeMachine({1: 3000.0, 2: 5000.0})
    tuner = ThreadTuner((1, 2), window=0.3, hold=2.0, set_threads=m.set_threads)
    for _ in range(150):
        m.step(tuner)
    assert m.threads == 2
    m.rates[2] = 900.0  # something else now needs the second core
    for _ in range(300):
        m.step(tuner)
    assert m.threads == 1
    assert m.calls.count(1) >= 2  # it went back to trying


def test_a_winner_that_keeps_winning_is_checked_less_and_less_often():
    m = FakeMachine({1: 3000.0, 2: 1000.0})
    tuner = ThreadTuner((1, 2), window=0.3, hold=1.0, max_hold=8.0, set_threads=m.set_threads)
    holds = []
    for _ in range(6000):  # 60 s of training
        m.step(tuner)
        if not holds or holds[-1] != tuner.hold:
            holds.append(tuner.hold)
    assert holds == [1.0, 2.0, 4.0, 8.0]
    assert m.calls.count(2) <= 10  # rounds of trials in 60 s; ~37 with the hold fixed at 1 s
    m.rates[2] = 9000.0  # the second core is free again: found at the next round, hold back to the start
    holds = []
    for _ in range(1000):
        m.step(tuner)
        holds.append(tuner.hold)
    assert m.threads == 2 and 1.0 in holds


def test_a_clearly_slower_trial_ends_early():
    m = FakeMachine({1: 3000.0, 2: 300.0})
    tuner = ThreadTuner((1, 2), window=1.0, hold=5.0, set_threads=m.set_threads)
    seconds_on_2 = 0.0
    for _ in range(300):
        m.step(tuner)
        seconds_on_2 += 0.01 * (m.threads == 2)
    assert 0.15 <= seconds_on_2 <= 0.25  # a fifth of the window, not all of it
    assert tuner.current == 1


def test_a_single_choice_is_set_once_and_kept():
    m = FakeMachine({1: 3000.0})
    tuner = ThreadTuner((1,), window=0.3, hold=1.0, set_threads=m.set_threads)
    for _ in range(500):
        m.step(tuner)
    assert m.calls == [1] and tuner.current == 1


def test_bad_choices_are_refused():
    with pytest.raises(ValueError, match="positive"):
        ThreadTuner((0, 2), set_threads=lambda n: None)


@pytest.mark.parametrize(("cores", "others", "limit"), [
    (2, 0.0, 2), (2, 0.25, 2), (2, 0.26, 1), (2, 1.0, 1), (2, 4.0, 1), (2, None, 2), (8, 1.2, 7), (8, 2.6, 5), (1, 0.0, 1),
])
def test_thread_limit_leaves_the_cores_other_processes_use(cores, others, limit):
    assert thread_limit(cores, others) == limit


def test_beside_a_busy_neighbour_more_threads_are_never_tried():
    m = FakeMachine({1: 3000.0, 2: 5000.0}, others=1.0)  # even where 2 threads would measure faster
    tuner = m.tuner(check_every=1.0)  # the trial of 2 would come at 0.3 s: read before it, not a second later
    m.run(tuner, 120.0)
    assert m.calls == [1] and tuner.limit == 1 and tuner.others_cores == 1.0


def test_a_neighbour_starting_mid_run_takes_the_core_back_within_a_check():
    m = FakeMachine({1: 3000.0, 2: 5000.0})
    tuner = m.tuner(hold=5.0, max_hold=60.0, check_every=1.0)
    m.run(tuner, 100.0)
    assert m.threads == 2 and tuner.hold == 60.0  # quiet: 2 threads, checked only once a minute
    m.others, m.rates[2] = 1.0, 137.0  # another training starts
    used = m.run(tuner, 120.0)
    assert 2 not in used[110:]  # back to 1 thread within 1.1 s (a check), not at the end of the hold
    assert used[-1] == 1 and m.calls[-1] == 1


def test_when_the_neighbour_leaves_more_threads_are_tried_at_once():
    m = FakeMachine({1: 3000.0, 2: 5000.0}, others=1.0)
    tuner = m.tuner(hold=5.0, max_hold=60.0, check_every=1.0)
    m.run(tuner, 200.0)
    assert m.calls == [1]
    m.others = 0.05
    used = m.run(tuner, 2.0)
    assert used[-1] == 2 and tuner.rates[2] > tuner.rates[1]  # a round of trials right after the next check


def test_the_limit_does_not_flap_at_the_edge():
    m = FakeMachine({1: 3000.0, 2: 5000.0}, others=0.9)
    tuner = m.tuner(check_every=1.0)
    m.run(tuner, 5.0)
    m.others = 0.2  # less than BUSY_CORES, not clearly less
    assert set(m.run(tuner, 30.0)) == {1}
    m.others = 0.05
    assert m.run(tuner, 3.0)[-1] == 2
    m.others = 0.2
    assert set(m.run(tuner, 30.0)[-100:]) == {2}  # and back down only above BUSY_CORES


def test_without_a_reading_trials_decide_alone():
    m = FakeMachine({1: 3000.0, 2: 5000.0}, others=None)  # e.g. no /proc/stat
    tuner = m.tuner()
    assert m.run(tuner, 2.0)[-1] == 2 and tuner.limit == 2


def test_other_processes_cpu_leaves_out_our_own(monkeypatch, tmp_path):
    stat = tmp_path / "stat"
    clock = {"wall": 100.0, "own": 5.0}
    monkeypatch.setattr(threads, "PROC_STAT", stat)
    monkeypatch.setattr(threads, "time", types.SimpleNamespace(monotonic=lambda: clock["wall"],
                                                               process_time=lambda: clock["own"]))
    monkeypatch.setattr(threads.os, "sysconf", lambda name: 100)  # clock ticks per second

    def write(cpu0: int, cpu1: int) -> None:  # user ticks per CPU; the total line is their sum
        stat.write_text(f"cpu  {cpu0 + cpu1} 0 0 999 0 0 0 0 0 0\ncpu0 {cpu0} 0 0 500 0 0 0 0 0 0\n"
                        f"cpu1 {cpu1} 0 0 499 0 0 0 0 0 0\nintr 1 2 3\n")

    write(1000, 1000)
    both, second = OtherProcessesCpu([0, 1]), OtherProcessesCpu([1])
    write(1000 + 150, 1000 + 100)  # 2.5 CPU seconds in 1 s, 1.2 of them ours
    clock["wall"], clock["own"] = 101.0, 6.2
    assert both() == pytest.approx(2.5 - 1.2)
    assert second() == pytest.approx(0.0)  # 1.0 s on cpu1, less than our own 1.2 s: never negative
    stat.unlink()
    assert both() is None  # no /proc/stat: unknown, not 0


@pytest.mark.parametrize(("most", "choices"), [(1, (1,)), (2, (1, 2)), (4, (1, 2, 4)), (6, (1, 2, 4, 6))])
def test_thread_choices(most, choices):
    assert thread_choices(most) == choices


def test_auto_threads_starts_on_one_thread_and_tries_up_to_the_cores(monkeypatch):
    before = torch.get_num_threads()
    monkeypatch.setattr(threads, "usable_cores", lambda: [0, 1, 2, 3])
    try:
        tuner = auto_threads(most=8)
        assert tuner.choices == (1, 2, 4) and tuner.cores == 4  # no more threads than cores
        assert torch.get_num_threads() == 1 and tuner.current == 1
        assert isinstance(tuner._others, OtherProcessesCpu)
    finally:
        torch.set_num_threads(before)


# -- FollowFreeCores: the faithfulness commands' threads, the limit alone ------------------------------------


def test_follow_free_cores_uses_every_free_core_and_gives_one_back_to_a_neighbour():
    """The report's sentences grow longer as it goes, so no trials: the cores other processes leave free, re-read
    at most every check_every seconds, down at once when a neighbour starts, up only once it has clearly gone."""
    machine = FakeMachine({1: 1.0, 2: 1.0})
    follow = FollowFreeCores(2, others=lambda: machine.others, cores=2, check_every=0.5,
                             set_threads=machine.set_threads, clock=lambda: machine.seconds)
    assert follow() == 2 and machine.calls == [2]  # quiet: both cores
    machine.others, machine.seconds = 1.0, 0.2
    assert follow() == 2  # not re-read yet
    machine.seconds = 0.6
    assert follow() == 1 and machine.calls == [2, 1]  # a busy neighbour: one core left
    machine.others, machine.seconds = 0.2, 1.2
    assert follow() == 1  # under BUSY_CORES but not under it by the hysteresis: stays down
    machine.others, machine.seconds = 0.0, 1.8
    assert follow() == 2 and machine.calls == [2, 1, 2]
    assert next_limit(2, 2, None) == 2  # no reading (off Linux): every core


def test_follow_free_cores_never_exceeds_its_most_nor_sets_the_same_count_twice():
    calls: list[int] = []
    follow = FollowFreeCores(1, others=lambda: 0.0, cores=8, check_every=0.0, set_threads=calls.append,
                             clock=lambda: 0.0)
    assert [follow() for _ in range(3)] == [1, 1, 1] and calls == [1]


def test_a_new_follower_is_not_held_to_the_thread_count_an_earlier_one_left(monkeypatch):
    """quality.py fine-tunes set after set in one process: a follower that ended at 1 thread (a busy moment) left torch
    at 1, and the next follower took that as its most — every later set trained on one thread of two."""
    import torch

    previous = torch.get_num_threads()
    try:
        torch.set_num_threads(1)  # as an earlier follower leaves it
        follow = FollowFreeCores(others=lambda: 0.0, cores=2, check_every=0.0, set_threads=lambda n: None,
                                 clock=lambda: 0.0)
        assert follow.most == 2 and follow() == 2
    finally:
        torch.set_num_threads(previous)


def test_a_training_takes_the_thread_policy_the_command_line_and_the_app_jobs_share(monkeypatch):
    """Fine-tuning a pretrained encoder follows the free cores; the small model's steps take the tuner's trials; a
    fixed count is left alone. The app's jobs (runner.worker, threads 0) took the tuner for fine-tuning too."""
    from types import SimpleNamespace

    from attention_core import threads

    made: list[str] = []

    class Follow:
        def __init__(self, most=None):
            made.append(f"follow {most}")

        def __call__(self):
            made.append("followed")
            return 1

    class Tuner:
        def update(self, examples, seconds):
            made.append("tuned")

    monkeypatch.setattr(threads, "FollowFreeCores", Follow)
    monkeypatch.setattr(threads, "auto_threads", lambda most=None: made.append(f"tuner {most}") or Tuner())

    def trainer(base, num_threads=None, device="cpu"):
        return SimpleNamespace(model_config=SimpleNamespace(base=base), device=torch.device(device),
                               train_config=SimpleNamespace(num_threads=num_threads))

    event = SimpleNamespace(examples_seen=32, seconds=1.0)
    threads.training_threads(trainer("minilm"), most=2)(event)
    assert made == ["follow 2", "followed", "followed"]
    made.clear()
    threads.training_threads(trainer(None), most=2)(event)
    assert made == ["tuner 2", "tuned"]
    assert threads.training_threads(trainer("minilm", num_threads=1)) is None
    assert threads.training_threads(trainer(None, device="meta")) is None


def test_the_app_jobs_and_the_command_line_choose_threads_through_one_function():
    import inspect

    from attention_core import cli
    from runner import worker

    for code in (cli.run_trainer, worker):  # (the CLI's faithfulness report follows the free cores on its own)
        source = inspect.getsource(code)
        assert "training_threads(" in source and "auto_threads(" not in source and "FollowFreeCores(" not in source
