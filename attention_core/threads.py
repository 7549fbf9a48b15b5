"""Pick torch's CPU thread count while training, by measuring.

On a small machine the best thread count depends on what else runs. Measured on 2 cores
with the ``default`` preset: 2 torch threads train ~1.4x faster than 1 when the machine is
otherwise idle, but 3-5x *slower* as soon as something else needs a core now and then (a
browser redrawing charts, another training): OpenMP's two threads wait for each other at
every operation, and one of them is often not running. :class:`ThreadTuner` tries each
choice for a short window of training time, keeps the fastest for a while, and tries again,
so a job gets the second core when it is free and gives it back when it is not. Trials cost
something when a core is busy (a 2-thread trial beside three other trainings ran ~6x slower),
so while the same choice keeps winning it is checked less and less often (the hold doubles,
up to ``max_hold``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch


class ThreadTuner:
    """Call :meth:`update` after every training step with the running totals.

    Args:
        choices: thread counts to try (the first is also the starting one).
        window: seconds of training per trial.
        hold: seconds to keep the winner before trying the choices again (doubled while the
            same choice keeps winning, up to ``max_hold``).
        max_hold: the longest hold.
        set_threads: how to apply a thread count (``torch.set_num_threads``; tests pass a fake).

    Example:
        >>> tuner = ThreadTuner((1, 2))
        >>> trainer.run(on_step=lambda ev: tuner.update(ev.examples_seen, ev.seconds))  # doctest: +SKIP
    """

    def __init__(
        self,
        choices: Sequence[int] = (1, 2),
        *,
        window: float = 0.3,
        hold: float = 5.0,
        max_hold: float = 60.0,
        set_threads: Callable[[int], None] = torch.set_num_threads,
    ) -> None:
        if not choices or any(c < 1 for c in choices):
            raise ValueError(f"thread choices must be positive, got {choices!r}")
        self.choices, self.window, self._set = tuple(choices), window, set_threads
        self.min_hold, self.max_hold, self.hold = hold, max_hold, hold
        self.winner: int | None = None
        self.rates: dict[int, float] = {}  # examples/s of each choice in the latest round of trials
        self.current = self.choices[0]
        self._trial = 0  # index into choices while trying; None while holding the winner
        self._trying = True
        self._start: tuple[int, float] | None = None  # (examples, seconds) when this phase began
        self._set(self.current)

    def update(self, examples_seen: int, seconds: float) -> None:
        """Account for training so far (totals: examples and training seconds, pauses excluded)."""
        if self._start is None:
            self._start = (examples_seen, seconds)
            return
        examples, elapsed = examples_seen - self._start[0], seconds - self._start[1]
        if self._trying and self._trial_over(examples, elapsed):
            self.rates[self.current] = examples / elapsed
            self._trial += 1
            if self._trial < len(self.choices):
                self._switch(self.choices[self._trial], examples_seen, seconds)
            else:  # every choice measured: keep the fastest for a while
                best = max(self.rates, key=self.rates.get)
                self.hold = min(self.hold * 2, self.max_hold) if best == self.winner else self.min_hold
                self.winner, self._trying = best, False
                self._switch(best, examples_seen, seconds)
        elif not self._trying and elapsed >= self.hold:
            self._trying, self._trial = True, 0
            self._switch(self.choices[0], examples_seen, seconds)

    def _trial_over(self, examples: int, elapsed: float) -> bool:
        if elapsed >= self.window:
            return True
        if elapsed < self.window / 5 or self._trial == 0:
            return False
        best_so_far = max(self.rates[c] for c in self.choices[: self._trial])
        return examples / elapsed < 0.5 * best_so_far  # clearly slower: end it now (collapsed threads hurt everyone)

    def _switch(self, threads: int, examples_seen: int, seconds: float) -> None:
        if threads != self.current:
            self._set(threads)
            self.current = threads
        self._start = (examples_seen, seconds)
