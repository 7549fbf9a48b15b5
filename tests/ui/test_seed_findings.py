"""The Seed experiment's text is computed from its results: each claim only where the numbers hold it up."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from attention_core import Run, TrainConfig, Trainer, dataset_from_lists, load_embeddings, preset
from ui.seed_findings import Focus, VariantSummary, focus_of, summarise, what_to_notice

TRUE = ["negative"] * 18 + ["positive"] * 13 + ["neutral"] * 8  # small.csv's 39 labels
TITLES = {"frozen": "Frozen", "head": "Head", "default": "Default"}


def focus(weight: float, t: int = 5, rho: float | None = 0.0, agree: bool = True) -> Focus:
    return Focus("a sentence", "word", weight, 1 / t, agree, rho)


def summary(right: int, predicted: dict[str, int], weights: list[float], rho: float | None = 0.0,
            loss: tuple[float, float] = (1.1, 0.9), steps: int = 39_000) -> VariantSummary:
    return VariantSummary(39, right, Counter(predicted), *loss, steps, tuple(focus(w, rho=rho) for w in weights))


def bullets(**summaries: VariantSummary) -> str:
    return "\n".join(what_to_notice(summaries, TITLES, TRUE))


def test_a_model_that_leans_on_the_common_label_is_not_said_to_give_it_to_every_review() -> None:
    """The learner's case: 59 % right, 32 of 39 called negative: not 'every sentence gets negative'."""
    text = bullets(frozen=summary(23, {"negative": 32, "positive": 7}, [0.3] * 5, rho=0.95))
    assert "labels 23 of the 39 reviews correctly (59%)" in text
    assert "32 of the 39 reviews get *negative*, which only 18 carry" in text
    assert "every review" not in text
    assert "later words receive more weight" in text and "+0.95" in text


def test_every_review_is_said_only_when_it_holds() -> None:
    text = bullets(frozen=summary(18, {"negative": 39}, [0.3] * 5))
    assert "every review gets the same label, *negative*, the most common label (18 of the 39 reviews carry it)" in text
    assert "labels 18 of the 39 reviews correctly (46%)" in text


def test_a_perfect_model_with_sharp_attention() -> None:
    text = bullets(head=summary(39, dict(Counter(TRUE)), [0.7, 0.8, 0.9, 0.5, 0.6], rho=-0.6, loss=(1.1, 0.04)))
    assert "labels all 39 reviews correctly (100%)" in text
    assert "gives each label to as many reviews as carry it (18 *negative*, 13 *positive*, 8 *neutral*)" in text
    assert "goes mostly to one word (*word*, *word*, *word*, *word*, *word*): it receives 70%" in text
    assert "in all 5 sentences every row looks most at that word" in text
    assert "position" not in text  # where sharp attention's words happen to stand is no finding


def test_even_attention_and_the_default_against_the_frozen_seed() -> None:
    frozen = summary(23, {"negative": 32, "positive": 7}, [0.3] * 5, loss=(1.1, 0.905))
    default = summary(36, {"negative": 19, "positive": 14, "neutral": 6}, [0.22] * 5, loss=(1.2, 0.329), steps=10)
    text = bullets(frozen=frozen, default=default)
    assert "In 10 steps the loss goes from 1.200 to 0.329, lower than the frozen seed's 0.905 after 39,000 steps" in text
    assert "gives 19 *negative*, 14 *positive*, 6 *neutral* (the reviews carry 18, 13, 8)" in text
    assert "stays close to even: the word looked at most receives 22% of a row's weight on average, an even spread 20%" in text
    assert "predict well without attending sharply" in text
    worse = summary(20, {"negative": 39}, [0.22] * 5, loss=(1.2, 1.0), steps=10)
    text = bullets(frozen=frozen, default=worse)
    assert "higher than the frozen seed's" in text and "predict well" not in text


@pytest.fixture(scope="module")
def tiny_run() -> Run:
    texts = ["a great movie", "i love it", "wonderful fun", "a terrible movie", "i hate it", "awful boring"] * 2
    labels = ["pos", "pos", "pos", "neg", "neg", "neg"] * 2
    model_cfg, _ = preset("default", n_layers=1, n_heads=2, d_model=16, d_ff=16)
    result = Trainer(model_cfg, TrainConfig(epochs=3, batch_size=4, val_fraction=0.0), dataset_from_lists(texts, labels),
                     load_embeddings()).run()
    return result


def test_summarise_counts_what_the_trained_model_says(tiny_run: Run) -> None:
    texts = ["a great movie", "a terrible movie", "wonderful fun", "xqzzy"]
    labels = ["pos", "neg", "neg", "pos"]
    s = summarise(tiny_run, texts, labels, ["a great movie", "xqzzy qqqzz", "i love it"])
    probs = tiny_run.predict_proba(texts[:3])
    said = [tiny_run.label_names[i] for i in probs.argmax(1)]
    assert s.rows == 4 and s.predicted == Counter(said)  # the unknown sentence gets no label
    assert s.right == sum(p == y for p, y in zip(said, labels, strict=False))
    assert s.steps == len(tiny_run.history.step_losses) == 9  # 3 epochs × 3 batches of 4
    assert (s.first_loss, s.last_loss) == (tiny_run.history.epochs[0].train_loss, tiny_run.history.epochs[-1].train_loss)
    assert [f.sentence for f in s.focus] == ["a great movie", "i love it"]  # no known word: no focus


def test_focus_is_the_most_received_word_of_the_last_layer(tiny_run: Run) -> None:
    f = focus_of(tiny_run, "a great movie")
    a = np.asarray(tiny_run.predict("a great movie").attention)[-1].mean(0)
    received = a.mean(0)
    assert f.word == ["a", "great", "movie"][int(received.argmax())]
    assert f.weight == pytest.approx(float(received.max())) and f.even == pytest.approx(1 / 3)
    assert f.rows_agree == bool((a.argmax(1) == received.argmax()).all())
