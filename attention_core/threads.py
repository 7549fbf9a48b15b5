"""Pick torch's CPU thread count while training, by measuring.

On a small machine the best thread count depends on what else runs. On 2 cores with the
``default`` preset, 2 torch threads train faster than 1 when the machine is otherwise idle,
but several times *slower* as soon as something else needs a core (a busy process, another
training, a browser redrawing charts): OpenMP's threads wait for each other at every
operation, and one of them is often not running. :class:`ThreadTuner` does two things:

* it watches how much CPU *other* processes use (:class:`OtherProcessesCpu`, every quarter
  second) and never runs more threads than the cores they leave free, so a job started beside
  it makes it drop to fewer threads at its next reading, and it tries more threads only once
  that job has gone (a reading under ``BUSY_CORES - HYSTERESIS_CORES``);
* among the counts that fit, it tries each for a short window of training time, keeps the
  fastest for a while and tries again. While the same choice keeps winning it is checked less
  and less often (the hold doubles, up to ``max_hold``): trials cost something.

:func:`auto_threads` builds the tuner the command line uses when no ``--threads`` is given;
:class:`FollowFreeCores` applies the first point alone to the faithfulness commands.
The figures behind these choices are in ``benchmarks/README.md`` (section ``cli_threads``).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

import torch

# Other processes using more than this many cores take one core away from us: beside such a
# neighbour a second thread stops paying (benchmarks/README.md, cli_threads); below it, trials decide.
BUSY_CORES = 0.25
# The limit goes back up only when the neighbours use this much less (no flapping at the edge).
HYSTERESIS_CORES = 0.15
# Before adding threads, a reading older than this many seconds is taken again (a neighbour may
# have started since); shorter intervals are too few clock ticks to mean much.
FRESH_READING = 0.2
PROC_STAT = Path("/proc/stat")  # Linux: CPU time per CPU since boot


def usable_cores() -> list[int]:
    """The CPUs this process may run on (its affinity), or all of them where that is unknown."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def thread_limit(cores: int, others: float | None, busy: float = BUSY_CORES) -> int:
    """Threads that fit beside other processes using ``others`` cores: every core they use more
    than ``busy`` of is taken away (at least 1; all ``cores`` when ``others`` is unknown).

    Example:
        >>> thread_limit(2, 0.1), thread_limit(2, 0.9), thread_limit(2, 3.0), thread_limit(8, 1.2)
        (2, 1, 1, 7)
    """
    if others is None:
        return max(1, cores)
    return max(1, min(cores, cores - math.ceil(others - busy)))


def _busy_seconds(cpus: Collection[int] | None) -> float | None:
    """CPU seconds all processes have used on ``cpus`` (None: every CPU) since boot; None off Linux."""
    wanted = {"cpu"} if cpus is None else {f"cpu{c}" for c in cpus}
    total = 0
    try:
        for line in PROC_STAT.read_text().splitlines():
            name, _, rest = line.partition(" ")
            if name in wanted:
                user, nice, system, _idle, _iowait, irq, softirq, steal = ([int(x) for x in rest.split()] + [0] * 8)[:8]
                total += user + nice + system + irq + softirq + steal  # guest time is inside user
            elif not name.startswith("cpu"):
                break  # the cpu lines come first
    except (OSError, ValueError):
        return None
    return total / os.sysconf("SC_CLK_TCK")


class OtherProcessesCpu:
    """Cores used by *other* processes since the previous call (Linux ``/proc/stat`` for the
    CPUs we may run on, minus this process's own CPU time); None where that is unknown.

    Example:
        >>> others = OtherProcessesCpu()
        >>> others()  # doctest: +SKIP
        0.03
    """

    def __init__(self, cpus: Collection[int] | None = None) -> None:
        all_cpus = os.cpu_count() or 1
        chosen = usable_cores() if cpus is None else sorted(cpus)
        self.cpus = None if len(chosen) >= all_cpus else chosen  # None: the machine's total line
        self._last = self._sample()

    def _sample(self) -> tuple[float, float, float | None]:
        return time.monotonic(), time.process_time(), _busy_seconds(self.cpus)

    def __call__(self) -> float | None:
        (wall0, own0, busy0), (wall1, own1, busy1) = self._last, self._sample()
        self._last = (wall1, own1, busy1)
        if busy0 is None or busy1 is None or wall1 <= wall0:
            return None
        return max(0.0, (busy1 - busy0 - (own1 - own0)) / (wall1 - wall0))


class ThreadTuner:
    """Call :meth:`update` after every training step with the running totals.

    Args:
        choices: thread counts to try (the first is also the starting one).
        window: seconds of training per trial.
        hold: seconds to keep the winner before trying the choices again (doubled while the
            same choice keeps winning, up to ``max_hold``).
        max_hold: the longest hold.
        set_threads: how to apply a thread count (``torch.set_num_threads``; tests pass a fake).
        others: cores used by other processes since its previous call (an
            :class:`OtherProcessesCpu`; tests pass a fake). None: no such limit, trials only.
        cores: the cores we may use, for the limit (default: :func:`usable_cores`).
        check_every: wall seconds between calls of ``others``.
        clock: wall time for ``check_every`` (``time.monotonic``; tests pass a fake).

    Example:
        >>> tuner = auto_threads()  # doctest: +SKIP
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
        others: Callable[[], float | None] | None = None,
        cores: int | None = None,
        check_every: float = 0.25,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not choices or any(c < 1 for c in choices):
            raise ValueError(f"thread choices must be positive, got {choices!r}")
        self.choices, self.window, self._set = tuple(choices), window, set_threads
        self.min_hold, self.max_hold, self.hold = hold, max_hold, hold
        self._others, self.check_every, self._clock = others, check_every, clock
        self.cores = cores if cores is not None else len(usable_cores())
        self.limit = max(self.choices)  # most threads the other processes leave room for
        self.others_cores: float | None = None  # the latest reading of ``others``
        self.winner: int | None = None
        self.rates: dict[int, float] = {}  # examples/s of each choice in the latest round of trials
        self.current = self.choices[0]
        self._round = self._allowed()  # the choices tried in this round
        self._trial = 0  # index into _round while trying
        self._trying = len(self._round) > 1
        self._start: tuple[int, float] | None = None  # (examples, seconds) when this phase began
        self._checked = clock()
        self._set(self.current)

    def update(self, examples_seen: int, seconds: float) -> None:
        """Account for training so far (totals: examples and training seconds, pauses excluded)."""
        if self._start is None:
            self._start = (examples_seen, seconds)
            return
        if self._others is not None and self._clock() - self._checked >= self.check_every:
            self._check_others()
        if self._allowed() != self._round:  # a neighbour came or went: start a new round now
            self._new_round(examples_seen, seconds)
            return
        examples, elapsed = examples_seen - self._start[0], seconds - self._start[1]
        if self._trying and self._trial_over(examples, elapsed):
            self.rates[self.current] = examples / elapsed
            self._trial += 1
            if self._trial < len(self._round):
                self._switch(self._round[self._trial], examples_seen, seconds)
            else:  # every choice measured: keep the fastest for a while
                best = max(self.rates, key=self.rates.get)
                self.hold = min(self.hold * 2, self.max_hold) if best == self.winner else self.min_hold
                self.winner, self._trying = best, False
                self._switch(best, examples_seen, seconds)
        elif not self._trying and elapsed >= self.hold:
            self._new_round(examples_seen, seconds)

    def _check_others(self) -> None:
        self._checked = self._clock()
        self.others_cores = self._others() if self._others is not None else None
        self.limit = next_limit(self.limit, self.cores, self.others_cores)

    def _allowed(self) -> tuple[int, ...]:
        fits = tuple(c for c in self.choices if c <= self.limit)
        return fits or (min(self.choices),)

    def _new_round(self, examples_seen: int, seconds: float) -> None:
        self._round, self.rates, self._trial = self._allowed(), {}, 0
        if self.winner is not None and self.winner not in self._round:
            self.winner = None  # not a choice now: whatever wins next starts with a short hold
        self._trying = len(self._round) > 1
        if not self._trying:  # nothing to compare: run the one choice until the limit or the hold says otherwise
            self.hold = self.min_hold
        self._switch(self._round[0], examples_seen, seconds)

    def _trial_over(self, examples: int, elapsed: float) -> bool:
        if elapsed >= self.window:
            return True
        if elapsed < self.window / 5 or self._trial == 0:
            return False
        best_so_far = max(self.rates[c] for c in self._round[: self._trial])
        return examples / elapsed < 0.5 * best_so_far  # clearly slower: end it now (collapsed threads hurt everyone)

    def _switch(self, threads: int, examples_seen: int, seconds: float) -> None:
        if threads > self.current and self._others is not None and self._clock() - self._checked >= FRESH_READING:
            self._check_others()  # more threads only on a fresh reading: a neighbour may have started
            if threads > self.limit:
                self._new_round(examples_seen, seconds)
                return
        if threads != self.current:
            self._set(threads)
            self.current = threads
        self._start = (examples_seen, seconds)


def next_limit(limit: int, cores: int, others: float | None) -> int:
    """The thread limit after a reading of ``others`` (cores other processes used): down as soon as they need a
    core (:func:`thread_limit`), back up only once they use clearly less (``HYSTERESIS_CORES``: no flapping).

    Example:
        >>> next_limit(2, 2, 0.9), next_limit(1, 2, 0.2), next_limit(1, 2, 0.05)
        (1, 1, 2)
    """
    lower = thread_limit(cores, others)
    higher = thread_limit(cores, others, BUSY_CORES - HYSTERESIS_CORES)
    return lower if lower < limit else higher if higher > limit else limit


class FollowFreeCores:
    """torch's thread count for work that cannot be timed in steps of equal size (the faithfulness report: its
    sentences grow longer as it goes): as many threads as the cores other processes leave free, up to ``most``,
    re-read when called and ``check_every`` seconds have passed since the last reading. No trials: on 2 cores the
    report ran 1.5× faster on 2 threads than on 1 on a quiet machine, and 2 threads beside a busy neighbour are the
    collapse :class:`ThreadTuner` avoids (benchmarks/README.md, ``faithfulness``).

    Create it before the work's set-up (loading a run), so its first reading spans that time; call it then and as
    the work goes (each returns the thread count in force).

    Example:
        >>> follow = FollowFreeCores()  # doctest: +SKIP
        >>> follow()  # doctest: +SKIP
        2
    """

    def __init__(
        self,
        most: int | None = None,
        *,
        others: Callable[[], float | None] | None = None,
        cores: int | None = None,
        check_every: float = 0.5,
        set_threads: Callable[[int], None] = torch.set_num_threads,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        usable = usable_cores()
        self.cores = cores if cores is not None else len(usable)
        # Not torch.get_num_threads(): an earlier follower in this process may have left it at 1 (quality.py trains
        # set after set in one process; each would have been held to 1 thread for good).
        self.most = max(1, min(most if most is not None else self.cores, self.cores))
        self._others = others if others is not None else OtherProcessesCpu(usable)
        self.check_every, self._set, self._clock = check_every, set_threads, clock
        self.limit = self.most
        self.current: int | None = None
        self._checked: float | None = None

    def __call__(self) -> int:
        now = self._clock()
        if self._checked is None or now - self._checked >= self.check_every:
            self._checked = now
            self.limit = min(self.most, next_limit(self.limit, self.cores, self._others()))
            if self.limit != self.current:
                self._set(self.limit)
                self.current = self.limit
        assert self.current is not None
        return self.current


def thread_choices(most: int) -> tuple[int, ...]:
    """1, the powers of two below ``most``, and ``most``: ``thread_choices(6) == (1, 2, 4, 6)``."""
    return tuple(sorted({1, max(1, most), *(2**k for k in range(1, max(1, most).bit_length()) if 2**k < most)}))


def auto_threads(most: int | None = None) -> ThreadTuner:
    """The thread count to train with when none is given: up to ``most`` (default: torch's own
    count, one per core) while the other processes leave that many cores free, and 1 beside a
    busy neighbour — chosen by measuring while training. Pass :meth:`ThreadTuner.update` the
    trainer's steps (``on_step``)."""
    cores = usable_cores()
    most = min(most if most is not None else torch.get_num_threads(), len(cores))
    return ThreadTuner(thread_choices(most), others=OtherProcessesCpu(cores), cores=len(cores))


def training_threads(trainer: Any, most: int | None = None) -> Callable[[Any], object] | None:
    """How a training's thread count follows the machine, as the command line's ``train`` and the app's training
    jobs both choose it: a step callback (``Trainer.run``'s ``on_step``), or None when the count is fixed (the
    trainer's ``num_threads``, or not the CPU). Up to ``most`` threads (default: one per core).

    A pretrained encoder's fine-tuning takes one thread per core other processes leave free
    (:class:`FollowFreeCores`), without :class:`ThreadTuner`'s trials: its steps take ~0.2–1 s and vary 5× with the
    batch's length in word pieces, so a trial of 0.3 s timed one step of some length against another step of another
    (with the trials a 60 s fine-tuning read 2,208–3,200 of Subj's sentences, on 2 threads throughout 4,032:
    benchmarks/README.md, "Fine-tuning's quality"). The small model's steps are even: the tuner's trials."""
    if trainer.train_config.num_threads is not None or trainer.device.type != "cpu":
        return None
    if trainer.model_config.base is not None:
        follow = FollowFreeCores(most)
        follow()
        return lambda event: follow()
    tuner = auto_threads(most)
    return lambda event: tuner.update(event.examples_seen, event.seconds)
