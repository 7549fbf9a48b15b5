"""attention_core.metrics: spearman and kendall against values worked out by hand (no scipy), and the verdict on
whether a model learned more than always answering the majority class (LearningVerdict), from confusions worked
out by hand and from real trainings."""

import math
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest

from attention_core import EpochRecord, History, ModelConfig, TrainConfig, Trainer, dataset_from_lists
from attention_core.metrics import ADVICE, kendall, kendall_matrix, learning_verdict, run_verdict, spearman, verdict_fields, wilson_interval
from tests.helpers.tiny_data import labels_without_meaning


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


def test_kendall_matrix_is_kendall_of_every_pair_to_the_bit():
    rng = np.random.default_rng(0)
    for n in (1, 2, 3, 7, 40):
        scores = [rng.normal(size=n), np.round(rng.normal(size=n), 1), np.zeros(n), rng.integers(0, 3, size=n),
                  -np.arange(n), rng.permutation(n).astype(float)]
        want = [[kendall(a, b) for b in scores] for a in scores]
        assert kendall_matrix(scores) == want  # None where undefined, else the same floats
    with pytest.raises(ValueError, match="same length"):
        kendall_matrix([[1, 2], [1, 2, 3]])


def test_kendall_is_tau_b_with_ties():
    # x ties one pair: 2 concordant pairs over √(2 untied in x · 3 untied in y)
    assert kendall([1, 1, 2], [1, 2, 3]) == pytest.approx(2 / math.sqrt(6))
    assert kendall([1, 1, 1], [1, 2, 3]) is None and kendall([1], [2]) is None
    with pytest.raises(ValueError, match="same length"):
        kendall([1, 2], [1, 2, 3])


# -- the verdict: learned, or nothing beyond the majority class ------------------------------------------
def test_a_constant_predictor_learned_nothing_and_predicts_one_class():
    v = learning_verdict([[0, 35], [0, 45]], ["negative", "positive"])  # every row said "positive"
    assert (v.n, v.correct, v.majority_label, v.majority_share) == (80, 45, "positive", 45 / 80)
    assert (v.predicted_label, v.predicted_share) == ("positive", 1.0)
    assert v.verdict == "nothing" and not v.learned and v.one_class and v.warn
    assert v.message == ("The model learned nothing beyond always answering “positive” (the label of 56.2% of the "
                         "validation rows): "
                         "accuracy 56.2% vs majority 56.2%. It predicts “positive” for every validation row. " + ADVICE)
    assert v.word == "no, one class"
    assert verdict_fields(v) == {"majority_label": "positive", "majority_share": 0.5625, "predicted_label": "positive",
                                 "predicted_share": 1.0, "learned": False, "verdict": "nothing"}


def test_a_mixed_predictor_below_the_majority_share_learned_nothing_either():
    v = learning_verdict([[10, 22], [14, 34]], ["negative", "positive"])  # 44 of 80 right; "positive" 48 of 80
    assert v.accuracy == pytest.approx(0.55) and v.majority_share == pytest.approx(0.6)
    assert v.verdict == "nothing" and not v.one_class  # 70 % "positive": not one class
    assert "It predicts" not in v.message and v.message.endswith(ADVICE)


def test_a_good_predictor_learned_and_is_not_warned():
    v = learning_verdict([[40, 10], [8, 42]], ["neg", "pos"])
    assert v.verdict == "learned" and v.learned and not v.warn and not v.one_class
    low, high = wilson_interval(82, 100)
    assert v.interval == (low, high) and low > v.majority_share == 0.5
    assert ADVICE not in v.message and f"95% interval {low:.0%}–{high:.0%} over 100 validation rows" in v.message
    assert v.word == "yes"


def test_on_a_tiny_validation_set_a_lead_within_chance_is_no_sign_of_learning():
    # 5 of 6 right against a majority of 4 of 6: 17 points above it, but one sentence is 17 points here.
    tiny = learning_verdict([[4, 0], [1, 1]], ["a", "b"])
    assert tiny.accuracy > tiny.majority_share and tiny.interval[0] <= tiny.majority_share
    assert tiny.verdict == "unclear" and tiny.warn
    assert "no clear sign of learning beyond always answering “a”" in tiny.message and "on 6 validation rows" in tiny.message
    assert tiny.word == "unclear"
    # The same shares on 600 rows: the interval is narrow enough for them to show learning.
    large = learning_verdict([[400, 0], [100, 100]], ["a", "b"])
    assert (large.accuracy, large.majority_share) == (tiny.accuracy, tiny.majority_share)
    assert large.verdict == "learned"


def test_predicting_one_class_is_said_only_where_the_labels_are_more_mixed():
    skewed = learning_verdict([[0, 3], [0, 97]], ["rare", "common"])  # the labels are 97 % one class themselves
    assert skewed.predicted_share == 1.0 and not skewed.one_class and skewed.verdict == "nothing"
    assert "It predicts" not in skewed.message
    mixed = learning_verdict([[1, 9], [0, 90]], ["rare", "common"])  # 90 % "common", 99 % predicted so
    assert mixed.predicted_share == 0.99 and mixed.one_class
    assert "It predicts “common” for 99% of the validation rows." in mixed.message


def test_no_rows_no_verdict_and_a_confusion_of_the_wrong_shape_is_an_error():
    assert learning_verdict(None, ["a", "b"]) is None and learning_verdict([[0, 0], [0, 0]], ["a", "b"]) is None
    assert verdict_fields(None) == dict.fromkeys(verdict_fields(learning_verdict([[1, 0], [0, 1]], ["a", "b"])))
    with pytest.raises(ValueError, match="must be 3×3"):
        learning_verdict([[1, 0], [0, 1]], ["a", "b", "c"])


def test_a_run_records_its_validation_confusion_and_one_on_meaningless_labels_learned_nothing(emb):
    texts, labels = labels_without_meaning()
    tc = TrainConfig(epochs=2, batch_size=8, val_fraction=0.4, snapshots=0)
    trainer = Trainer(ModelConfig(n_layers=1, n_heads=2, d_model=16, d_ff=32), tc, dataset_from_lists(texts, labels), emb)
    run = trainer.run()
    for record in run.history.epochs:  # the confusion is of the rows the accuracy was measured on
        confusion = np.array(record.val_confusion)
        assert confusion.sum() == 40 and np.trace(confusion) / 40 == pytest.approx(record.val_accuracy)
        assert confusion.sum(1).tolist() == [16, 24]  # "no", "yes": the validation rows' labels
    v = run_verdict(run.history, run.label_names)
    assert v.majority_label == "yes" and v.majority_share == 0.6 and not v.learned and v.warn
    assert History.from_dict(run.history.to_dict()).kept_record.val_confusion == run.history.kept_record.val_confusion


def test_a_run_saved_before_the_confusion_was_recorded_gets_no_verdict():
    old = asdict(EpochRecord(1, 0.5, 0.5, 0.4, 0.8, 1.0, 10.0, 0.7))
    del old["val_confusion"]
    history = History.from_dict({"epochs": [old], "best_epoch": 1})
    assert history.kept_record.val_confusion is None and run_verdict(history, ["a", "b"]) is None


def test_the_bundled_run_has_its_kept_epochs_confusion_and_it_is_the_saved_models():
    """data/default_run was trained before confusions were recorded; its kept epoch's was filled in from the saved
    (kept) model on the saved validation rows, so the runs list can say whether it learned (it did)."""
    from attention_core.runs import load_run
    from attention_core.training import evaluate_texts

    run = load_run(Path(__file__).resolve().parents[2] / "data" / "default_run")
    texts, labels = run.validation
    measured = evaluate_texts(run.model, run.encoder, texts, [run.label_names[y] for y in labels], run.label_names)
    kept = run.history.kept_record
    assert kept.val_confusion == measured.confusion and measured.accuracy == pytest.approx(kept.val_accuracy)
    v = run_verdict(run.history, run.label_names)
    assert v.learned and not v.warn
