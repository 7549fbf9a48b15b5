"""attention_core.metrics.spearman and kendall against values worked out by hand (no scipy)."""

import math

import numpy as np
import pytest

from attention_core.metrics import kendall, spearman


def test_spearman_one_swap():
    # ranks (1,2,3) vs (1,3,2): d = (0,-1,1), Σd² = 2, ρ = 1 - 6·2 / (3·(9-1)) = 0.5
    assert spearman([1, 2, 3], [1, 3, 2]) == pytest.approx(0.5)


def test_spearman_uses_ranks_not_values():
    # monotone but far from linear: ρ = 1 (Pearson of the values would be ≈ 0.90) and −1 reversed
    assert spearman([1, 10, 100], [1, 2, 3]) == pytest.approx(1.0)
    assert spearman(np.array([1.0, 10.0, 100.0]), np.array([3.0, 2.0, 1.0])) == pytest.approx(-1.0)


def test_spearman_averages_tied_ranks():
    # x = (1, 2, 2, 3) ranks (1, 2.5, 2.5, 4), y ranks (1, 2, 3, 4), both mean 2.5:
    # deviations (−1.5, 0, 0, 1.5) and (−1.5, −0.5, 0.5, 1.5): cov 4.5, var 4.5 and 5 → ρ = 4.5 / √(4.5·5) = √0.9
    assert spearman([1, 2, 2, 3], [10, 20, 30, 40]) == pytest.approx(math.sqrt(0.9))
    # ties on both sides: x ranks (1.5, 1.5, 3), y ranks (1, 2.5, 2.5), both mean 2:
    # deviations (−0.5, −0.5, 1) and (−1, 0.5, 0.5): cov 0.75, var 1.5 and 1.5 → ρ = 0.5
    assert spearman([5, 5, 7], [0, 9, 9]) == pytest.approx(0.5)


@pytest.mark.parametrize("x, y", [([1, 1, 1], [1, 2, 3]), ([1, 2, 3], [4, 4, 4]), ([1], [2]), ([], [])])
def test_spearman_is_none_when_undefined(x, y):
    assert spearman(x, y) is None


def test_spearman_rejects_unequal_lengths():
    with pytest.raises(ValueError, match="same length, got 3 and 2"):
        spearman([1, 2, 3], [1, 2])


def test_kendall_counts_concordant_and_discordant_pairs():
    # pairs (1,2) and (1,3) agree, (2,3) is swapped: (2 − 1) / 3
    assert kendall([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)
    assert kendall([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)


def test_kendall_is_tau_b_with_ties():
    # x ties one pair: 2 concordant pairs over √(2 untied in x · 3 untied in y)
    assert kendall([1, 1, 2], [1, 2, 3]) == pytest.approx(2 / math.sqrt(6))
    assert kendall([1, 1, 1], [1, 2, 3]) is None and kendall([1], [2]) is None
    with pytest.raises(ValueError, match="same length"):
        kendall([1, 2], [1, 2, 3])
