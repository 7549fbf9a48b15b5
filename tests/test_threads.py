"""ThreadTuner: try each thread count for a window, keep the fastest, try again later."""

from __future__ import annotations

import pytest

from attention_core.threads import ThreadTuner


class FakeMachine:
    """Training whose speed depends on the thread count: ``rates[threads]`` examples per second."""

    def __init__(self, rates: dict[int, float]) -> None:
        self.rates, self.threads, self.examples, self.seconds, self.calls = rates, None, 0.0, 0.0, []

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
