"""Classification metrics from predictions (accuracy, macro F1, confusion, per-class scores), whether a model
learned more than always answering the majority class (:class:`LearningVerdict`), and rank correlations."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from attention_core.history import History


@dataclass(frozen=True)
class Metrics:
    accuracy: float
    macro_f1: float
    n: int
    confusion: list[list[int]]  # rows = true label, columns = predicted label
    labels: list[str]
    precision: list[float]
    recall: list[float]
    f1: list[float]
    support: list[int]

    def to_dict(self) -> dict:
        return asdict(self)


def classification_metrics(y_true: Sequence[int], y_pred: Sequence[int], labels: Sequence[str]) -> Metrics:
    """Accuracy, macro F1 and the confusion matrix (rows true, columns predicted).

    Example:
        >>> classification_metrics([0, 1, 1], [0, 1, 0], ["neg", "pos"]).accuracy
        0.6666666666666666
    """
    k = len(labels)
    confusion = np.zeros((k, k), dtype=np.int64)
    np.add.at(confusion, (np.asarray(y_true, dtype=int), np.asarray(y_pred, dtype=int)), 1)
    tp = np.diag(confusion).astype(float)
    predicted, actual = confusion.sum(0), confusion.sum(1)
    precision = np.divide(tp, predicted, out=np.zeros(k), where=predicted > 0)
    recall = np.divide(tp, actual, out=np.zeros(k), where=actual > 0)
    f1 = np.divide(2 * precision * recall, precision + recall, out=np.zeros(k), where=(precision + recall) > 0)
    n = int(confusion.sum())
    present = actual > 0  # macro F1 over classes that occur, like scikit-learn's labels=present
    return Metrics(
        accuracy=float(tp.sum() / n) if n else 0.0,
        macro_f1=float(f1[present].mean()) if present.any() else 0.0,
        n=n,
        confusion=confusion.tolist(),
        labels=list(labels),
        precision=precision.tolist(),
        recall=recall.tolist(),
        f1=f1.tolist(),
        support=actual.astype(int).tolist(),
    )


Z_95 = 1.959963984540054  # the standard normal's 97.5 % quantile: two-sided 95 %


def wilson_interval(correct: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval (95 % by default) for an accuracy of ``correct`` out of ``n``.

    Wilson's rather than the textbook p ± z·√(p(1-p)/n): that one collapses to a width of 0 at
    12 of 12 right and leaves [0, 1] near the ends, while Wilson's stays inside [0, 1] and keeps
    close to its promised 95 % coverage even for a dozen rows (Brown, Cai & DasGupta 2001).

    Example:
        >>> [round(x, 3) for x in wilson_interval(10, 12)]
        [0.552, 0.953]
    """
    if n <= 0:
        raise ValueError(f"an interval needs at least one row, got n = {n}")
    if not 0 <= correct <= n:
        raise ValueError(f"correct must be between 0 and n = {n}, got {correct}")
    p, z2 = correct / n, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    # At 0 or n right the bound is exactly 0 or 1 (the formula gets there up to rounding).
    return (0.0 if correct == 0 else centre - half), (1.0 if correct == n else centre + half)


ONE_CLASS_SHARE = 0.95  # predicting one class for this share of the rows or more: "(almost) every sentence"
ADVICE = "Try more rows, more epochs, or another preset."
VERDICT_FIELDS = ("majority_label", "majority_share", "predicted_label", "predicted_share", "learned", "verdict")


@dataclass(frozen=True)
class LearningVerdict:
    """Did a model learn more than always answering the majority class? Read from its validation confusion.

    Always answering the most common class of the validation rows scores its share of them (the
    *majority share*) without reading a word. The model learned beyond that when the lower end of its
    accuracy's 95 % Wilson interval (:func:`wilson_interval`) is above the majority share. An interval
    rather than a fixed margin, because how far an accuracy can be trusted depends on the number of
    rows: on 12 rows one sentence moves it by 8 points (10 of 12 right against a majority of 7 is not
    yet a sign of learning), on 600 rows 3 points above the majority share are. The verdict is then
    ``"learned"``; ``"nothing"`` when the accuracy is no higher than the majority share, ``"unclear"``
    when it is higher but within the interval. Apart from that, a model that predicts one class for
    :data:`ONE_CLASS_SHARE` of the rows or more, where the labels are more mixed, is said to (``one_class``).

    Example:
        >>> v = learning_verdict([[0, 35], [0, 45]], ["negative", "positive"])  # every row said "positive"
        >>> v.verdict, v.majority_label, v.majority_share, v.one_class
        ('nothing', 'positive', 0.5625, True)
    """

    n: int  # validation rows predicted
    correct: int
    majority_label: str  # the most common true label of those rows
    majority_share: float  # its share of them: the accuracy of always answering it
    predicted_label: str  # the label the model predicted most
    predicted_share: float  # its share of the predictions
    row: str = "validation row"  # what the rows are, in the messages

    @property
    def accuracy(self) -> float:
        return self.correct / self.n

    @property
    def interval(self) -> tuple[float, float]:
        """The accuracy's 95 % Wilson interval."""
        return wilson_interval(self.correct, self.n)

    @property
    def verdict(self) -> str:
        """``"learned"``, ``"unclear"`` (above the majority share, within chance of it) or ``"nothing"``."""
        if self.accuracy <= self.majority_share:
            return "nothing"
        return "learned" if self.interval[0] > self.majority_share else "unclear"

    @property
    def learned(self) -> bool:
        return self.verdict == "learned"

    @property
    def one_class(self) -> bool:
        """Whether the model says one class for (almost) every row, where the labels are more mixed than that."""
        return self.predicted_share >= ONE_CLASS_SHARE > self.majority_share

    @property
    def warn(self) -> bool:
        """Whether a learner should be told that this run went wrong."""
        return not self.learned or self.one_class

    @property
    def word(self) -> str:
        """The verdict in a table cell narrow enough for a projector: "yes", "no", "unclear" (", one class"
        when it predicts one class); :attr:`message` says it in full."""
        word = {"learned": "yes", "nothing": "no", "unclear": "unclear"}[self.verdict]
        return f"{word}, one class" if self.one_class else word

    @property
    def message(self) -> str:
        """What the verdict means, in sentences with its numbers (and :data:`ADVICE` when it went wrong).

        Example:
            >>> learning_verdict([[40, 10], [8, 42]], ["neg", "pos"]).message  # doctest: +ELLIPSIS
            'The model learned more than always answering “neg” would: accuracy 82.0% vs majority 50.0% (95% interval 73%–88%...'
        """
        always = f"always answering “{self.majority_label}”"
        low, high = self.interval
        figures = f"accuracy {self.accuracy:.1%} vs majority {self.majority_share:.1%}"
        rows = f"{self.n:,} {self.row}{'s' * (self.n != 1)}"
        text = {
            "learned": f"The model learned more than {always} would: {figures} (95% interval {low:.0%}–{high:.0%} over {rows}).",
            "nothing": f"The model learned nothing beyond {always} (the label of {self.majority_share:.1%} of the "
                       f"{self.row}s): {figures}.",
            "unclear": f"The model shows no clear sign of learning beyond {always}: {figures}, and on {rows} its 95% "
                       f"interval ({low:.0%}–{high:.0%}) reaches down to the majority share.",
        }[self.verdict]
        if self.one_class:
            rows = f"every {self.row}" if self.predicted_share == 1 else f"{self.predicted_share:.0%} of the {self.row}s"
            text += f" It predicts “{self.predicted_label}” for {rows}."
        return f"{text} {ADVICE}" if self.warn else text

    def to_dict(self) -> dict:
        """The fields a summary in JSON gets (:data:`VERDICT_FIELDS`)."""
        return {name: getattr(self, name) for name in VERDICT_FIELDS}


def learning_verdict(confusion: Sequence[Sequence[int]] | None, label_names: Sequence[str], *,
                     row: str = "validation row") -> LearningVerdict | None:
    """The :class:`LearningVerdict` of a confusion matrix (rows true label, columns predicted); None without rows.
    ``row`` names a row in its messages.

    Shape: ``confusion`` (C, C), ``label_names`` (C,).
    """
    if not confusion:
        return None
    if len(confusion) != len(label_names) or any(len(row) != len(label_names) for row in confusion):
        raise ValueError(f"a confusion matrix of {len(label_names)} labels must be {len(label_names)}×{len(label_names)}, "
                         f"got {[len(row) for row in confusion]}")
    truth = [sum(row) for row in confusion]  # (C,)
    predicted = [sum(column) for column in zip(*confusion, strict=True)]  # (C,)
    n = sum(truth)
    if n == 0:
        return None
    majority = max(range(len(truth)), key=truth.__getitem__)  # the first of a tie
    top = max(range(len(predicted)), key=predicted.__getitem__)
    return LearningVerdict(n, sum(confusion[c][c] for c in range(len(truth))), label_names[majority],
                           truth[majority] / n, label_names[top], predicted[top] / n, row)


def run_verdict(history: History, label_names: Sequence[str]) -> LearningVerdict | None:
    """The verdict on the model a run keeps (its kept epoch's validation confusion); None without validation
    rows, and for a run saved before the confusion was recorded (nothing is guessed)."""
    record = history.kept_record
    return learning_verdict(record.val_confusion, label_names) if record is not None else None


def verdict_fields(verdict: LearningVerdict | None) -> dict:
    """:meth:`LearningVerdict.to_dict`, or the same keys with None where there is no verdict."""
    return verdict.to_dict() if verdict is not None else dict.fromkeys(VERDICT_FIELDS)


def same_labels(*label_sets: Sequence[str]) -> bool:
    """Whether runs were trained on one label set (in any order): only then are their losses on one scale (a
    cross-entropy starts near ln k for k labels) and their accuracies measured against one majority share."""
    return len({frozenset(names) for names in label_sets}) <= 1


def spearman(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float | None:
    """Spearman's rank correlation ρ: the Pearson correlation of the ranks, tied values sharing their average rank.

    None when either side has fewer than 2 values or is constant (ρ is undefined there).

    Example:
        >>> spearman([1, 2, 3], [1, 3, 2])
        0.5
    """
    xs, ys = np.asarray(x, dtype=float).ravel(), np.asarray(y, dtype=float).ravel()
    if len(xs) != len(ys):
        raise ValueError(f"spearman needs two sequences of the same length, got {len(xs)} and {len(ys)}")
    if len(xs) < 2:
        return None
    rx, ry = _average_ranks(xs), _average_ranks(ys)
    if np.ptp(rx) == 0 or np.ptp(ry) == 0:
        return None
    return float(np.corrcoef(rx, ry)[0, 1])


def kendall(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float | None:
    """Kendall's rank correlation τ-b: (concordant − discordant pairs) / √(pairs untied in x · pairs untied in y).

    The same number as ``scipy.stats.kendalltau`` (τ-b); None when either side has fewer than 2
    values or is constant. O(n²) memory: meant for one sentence's tokens.

    Example:
        >>> kendall([1, 2, 3], [1, 3, 2])
        0.3333333333333333
    """
    xs, ys = np.asarray(x, dtype=float).ravel(), np.asarray(y, dtype=float).ravel()
    if len(xs) != len(ys):
        raise ValueError(f"kendall needs two sequences of the same length, got {len(xs)} and {len(ys)}")
    if len(xs) < 2:
        return None
    sx = np.sign(xs[:, None] - xs[None, :])  # (n, n): every pair counted twice, which cancels in the ratio
    sy = np.sign(ys[:, None] - ys[None, :])
    untied = np.count_nonzero(sx) * np.count_nonzero(sy)
    if untied == 0:
        return None
    return float((sx * sy).sum() / np.sqrt(untied))


def kendall_matrix(scores: Sequence[Sequence[float] | np.ndarray]) -> list[list[float | None]]:
    """:func:`kendall` between every two of ``scores`` (M sequences of n values), the same numbers to the bit:
    each side's pair signs once, and every pair's sum of products in one matrix product (exact: small integers).

    Shape:
        M sequences of n → (M, M), None where τ is undefined (n < 2, or a constant sequence).
    """
    signs = []
    for x in scores:
        xs = np.asarray(x, dtype=float).ravel()
        signs.append(np.sign(xs[:, None] - xs[None, :]).ravel())  # (n²,)
    if len({len(s) for s in signs}) > 1:
        raise ValueError("kendall_matrix needs sequences of the same length")
    m = len(signs)
    if m == 0 or len(signs[0]) < 4:  # fewer than 2 values
        return [[None] * m for _ in range(m)]
    stacked = np.stack(signs)  # (M, n²)
    products = stacked @ stacked.T  # (M, M): Σ sx·sy over the pairs
    untied = [int(np.count_nonzero(s)) for s in signs]
    return [[None if untied[a] * untied[b] == 0 else float(products[a, b] / np.sqrt(untied[a] * untied[b]))
             for b in range(m)] for a in range(m)]


def _average_ranks(v: np.ndarray) -> np.ndarray:
    """Ranks from 0.5 up (a shift does not change a correlation); tied values share their average rank."""
    s = np.sort(v)
    return (np.searchsorted(s, v, "left") + np.searchsorted(s, v, "right")) / 2
