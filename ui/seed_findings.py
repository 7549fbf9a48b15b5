"""What the Seed experiment page says about its results, computed from the trained runs.

Every number and every claim of the page's "What to notice" comes from :func:`summarise`
(the trained model on the 39 reviews and on the post's five sentences), so the text cannot
contradict the cards and maps beside it; a claim whose condition does not hold is left out.
No Streamlit here: the page places the text.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from attention_core import Run
from attention_core.errors import InputError
from attention_core.metrics import spearman

SHARP = 2.0  # a word "gets most of the attention" when it receives ≥ 2× an even share
EVEN = 1.3  # attention is "close to even" when the most-attended word gets < 1.3× an even share
ORDERED = 0.7  # attention "follows position" when |Spearman ρ(position, weight received)| ≥ 0.7


@dataclass(frozen=True)
class Focus:
    """Where one sentence's last-layer attention (average of heads) goes."""

    sentence: str
    word: str  # the word receiving the most weight, averaged over the rows (queries)
    weight: float  # that average weight
    even: float  # 1 / T: the weight of every word if attention were spread evenly
    rows_agree: bool  # every row gives its largest weight to that word
    position_rho: float | None  # Spearman ρ between a word's position and the weight it receives (None: T < 3)


@dataclass(frozen=True)
class VariantSummary:
    """A trained variant, as the page's text describes it."""

    rows: int  # training reviews
    right: int  # reviews the trained model labels correctly
    predicted: Counter[str]  # label → reviews the trained model gives it (rows without a known word left out)
    first_loss: float  # training loss of the first and the last epoch
    last_loss: float
    steps: int  # optimiser steps taken
    focus: tuple[Focus, ...]  # one per sentence of the post, in order

    @property
    def accuracy(self) -> float:
        return self.right / self.rows if self.rows else 0.0

    @property
    def sharpness(self) -> float:
        """The most-attended word's weight over an even share, averaged over the sentences."""
        return float(np.mean([f.weight / f.even for f in self.focus])) if self.focus else 1.0

    @property
    def position_rho(self) -> float | None:
        rhos = [f.position_rho for f in self.focus if f.position_rho is not None]
        return float(np.mean(rhos)) if rhos else None


def focus_of(run: Run, sentence: str) -> Focus | None:
    """Where ``sentence``'s last-layer attention goes (None if the run knows none of its words)."""
    try:
        pred = run.predict(sentence)
    except InputError:
        return None
    a = np.asarray(pred.attention)[-1].mean(0)  # (T, T): last layer, average of heads
    received = a.mean(0)  # (T,): the weight each word receives, averaged over the rows
    t = len(received)
    top = int(received.argmax())
    rho = spearman(np.arange(t, dtype=float), received) if t >= 3 else None
    return Focus(sentence, pred.tokens[top], float(received[top]), 1.0 / t, bool((a.argmax(1) == top).all()), rho)


def summarise(run: Run, texts: Sequence[str], labels: Sequence[str], sentences: Sequence[str]) -> VariantSummary:
    """The trained ``run`` on its training ``texts`` (true ``labels`` as names) and the post's ``sentences``."""
    probs = run.predict_proba(list(texts))  # (N, C); NaN rows: no known word
    known = ~np.isnan(probs).any(axis=1)
    predicted = [run.label_names[int(i)] if ok else None for i, ok in zip(np.nan_to_num(probs).argmax(1), known, strict=True)]
    h = run.history
    focus = tuple(f for s in sentences if (f := focus_of(run, s)) is not None)
    return VariantSummary(
        rows=len(texts), right=sum(p == y for p, y in zip(predicted, labels, strict=True)),
        predicted=Counter(p for p in predicted if p is not None),
        first_loss=h.epochs[0].train_loss, last_loss=h.epochs[-1].train_loss, steps=len(h.step_losses), focus=focus,
    )


def _labels_clause(s: VariantSummary, true_labels: Sequence[str]) -> str:
    """What the model calls the reviews, against the most common true label."""
    common, n_common = Counter(true_labels).most_common(1)[0]
    if not s.predicted:
        return ""
    top, n_top = s.predicted.most_common(1)[0]
    is_common = f", the most common label ({n_common} of the {s.rows} reviews carry it)" if top == common else ""
    if n_top == s.rows:
        return f"every review gets the same label, *{top}*{is_common}"
    if n_top >= 0.6 * s.rows and top == common:
        return f"it leans on the most common label: {n_top} of the {s.rows} reviews get *{top}*, which only {n_common} carry"
    if n_top >= 0.6 * s.rows:
        return f"{n_top} of the {s.rows} reviews get *{top}*"
    given = ", ".join(f"{s.predicted[label]} *{label}*" for label, _ in Counter(true_labels).most_common())
    if s.predicted == Counter(true_labels):
        return f"it gives each label to as many reviews as carry it ({given})"
    return f"it gives {given} (the reviews carry " + ", ".join(str(n) for _, n in Counter(true_labels).most_common()) + ")"


def _attention_clause(s: VariantSummary) -> str:
    """How the last-layer attention on the post's sentences looks, from the computed focus."""
    if not s.focus:
        return ""
    weight = np.mean([f.weight for f in s.focus])
    even = np.mean([f.even for f in s.focus])
    if s.sharpness >= SHARP:  # (position then says only where those words happen to stand)
        agree = sum(f.rows_agree for f in s.focus)
        n = len(s.focus)
        where = f"in all {n} sentences" if agree == n else f"in {agree} of the {n} sentences"
        rows = f"; {where} every row looks most at that word" if agree else ""
        words = ", ".join(f"*{f.word}*" for f in s.focus)
        return (f"each sentence's attention goes mostly to one word ({words}): it receives {weight:.0%} of a row's "
                f"weight on average, where an even spread would give {even:.0%}{rows}")
    parts = []
    if s.sharpness < EVEN:
        parts.append(f"its attention stays close to even: the word looked at most receives {weight:.0%} of a row's "
                     f"weight on average, an even spread {even:.0%}")
    rho = s.position_rho
    if rho is not None and abs(rho) >= ORDERED:
        later = "later" if rho > 0 else "earlier"
        alike = ", and every row looks most at the same word" if all(f.rows_agree for f in s.focus) else ""
        parts.append(f"attention follows position: {later} words receive more weight{alike} (rank correlation of a "
                     f"word's position with the weight it receives: {rho:+.2f}, averaged over the {len(s.focus)} "
                     "sentences)")
    return "; ".join(parts)


INTRO = {
    "frozen": "only Q, K and V learn: they choose which words get averaged, but a fixed random W reads the average.",
    "head": "W learns too, on the same data and steps.",
    "default": "Adam scales each weight's step, and residual connections carry each word's own, fine-tuned vector "
               "past attention.",
}


def what_to_notice(summaries: Mapping[str, VariantSummary], titles: Mapping[str, str],
                   true_labels: Sequence[str]) -> list[str]:
    """One markdown bullet per trained variant (keys of ``INTRO``), every figure taken from ``summaries``."""
    bullets = []
    frozen = summaries.get("frozen")
    for key, s in summaries.items():
        loss = f"in {s.steps:,} steps the loss goes from {s.first_loss:.3f} to {s.last_loss:.3f}"
        if key == "default" and frozen is not None:
            than = "lower" if s.last_loss < frozen.last_loss else "higher"
            loss += f", {than} than the frozen seed's {frozen.last_loss:.3f} after {frozen.steps:,} steps"
        right = f"all {s.rows}" if s.right == s.rows else f"{s.right} of the {s.rows}"
        facts = [loss, f"the trained model labels {right} reviews correctly ({s.accuracy:.0%})"]
        facts += [c for c in (_labels_clause(s, true_labels), _attention_clause(s)) if c]
        if key == "default" and s.accuracy >= 0.8 and s.sharpness < EVEN:
            facts.append("a model can predict well without attending sharply, so attention alone does not explain "
                         "a prediction")
        text = "; ".join(facts)
        bullets.append(f"- **{titles[key]}:** {INTRO.get(key, '')} {text[0].upper()}{text[1:]}.")
    return bullets
