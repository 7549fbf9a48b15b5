"""Classification metrics from predictions (accuracy, macro F1, confusion, per-class scores), and rank correlations."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np


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


def _average_ranks(v: np.ndarray) -> np.ndarray:
    """Ranks from 0.5 up (a shift does not change a correlation); tied values share their average rank."""
    s = np.sort(v)
    return (np.searchsorted(s, v, "left") + np.searchsorted(s, v, "right")) / 2
