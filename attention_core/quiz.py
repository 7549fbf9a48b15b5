"""Check yourself: multiple-choice questions about a learner's own model, answered by the model.

Every answer is computed from the run when the question is made, never stored text: which word a
head's query attends to most (the argmax of an attention row), which head's knock-out moves the
prediction most (:func:`attention_core.faithfulness.knock_out`), whether removing a word flips the
label (the sentence predicted again without it), which layer's attention is most spread out (mean
row entropy), how probable a label is, and which of two runs learned faster (their histories: only
between runs with the same labels, whose training losses measure the same thing, and never naming a
run that learned nothing beyond its majority class the winner).

A question is asked only when its answer is clear: the right option beats every other by a margin
(:data:`MARGINS`), so a rounding difference never decides it. Each question names the view that
shows why (:class:`View`: a page and its address parameters, as the pages read them) and has a key
of its own, by which a session never asks it twice.

Legend: T tokens, L layers, H heads, C classes.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlencode

import numpy as np
import torch

from attention_core.errors import ConfigError, EmbeddingError, RunError
from attention_core.faithfulness import knock_out
from attention_core.map_names import head_name, map_specs, map_words
from attention_core.metrics import run_verdict, same_labels
from attention_core.run_folders import read_history, read_label_names
from attention_core.runs import Run
from attention_core.sentence import SentenceOutput
from attention_core.text import TOKENIZERS
from attention_core.training import History

KINDS = ("attends_most", "knock_out", "remove_word", "most_spread", "probability", "learned_faster")
PREDICTION_KINDS = ("knock_out", "remove_word", "probability")  # about the label: not asked of an untrained head
MARGINS = {
    "attends_most": 0.05,  # the top word's weight over the next word's
    "knock_out": 0.01,  # the largest change in probability, and its lead over each other head shown
    "most_spread": 0.05,  # nats of mean entropy between the most spread layer and the next
    "probability": 0.02,  # distance of the probability from a range's edge
    "learned_faster": 0.05,  # relative difference of the two training losses
}
PROBABILITY_RANGES = ((0.0, 0.25), (0.25, 0.5), (0.5, 0.75), (0.75, 1.0))
EARLY_EPOCH = 3  # "learned faster": the training loss after this epoch (or the shorter run's last)
N_OPTIONS = 4  # choices per question, at most
YES, NO = "Yes", "No"
_MARKDOWN = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~$])")


def markdown_escape(text: str) -> str:
    """``text`` with Markdown's special characters backslash-escaped, to show a learner's word as typed."""
    return _MARKDOWN.sub(r"\\\1", text)


def _word(token: str) -> str:
    return f"*{markdown_escape(token)}*"


@dataclass(frozen=True)
class View:
    """The view that shows why: a page (its address, e.g. ``"Inspect"``) and its address parameters."""

    page: str
    params: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, page: str, **params: object) -> View:
        return cls(page, tuple((name, str(value)) for name, value in params.items()))

    def url(self) -> str:
        """``page?name=value&…``, relative to the app's address.

        Example:
            >>> View.of("Inspect", sentence="not good", layer=2, head=3).url()
            'Inspect?sentence=not+good&layer=2&head=3'
        """
        return f"{self.page}?{urlencode(self.params)}" if self.params else self.page


@dataclass(frozen=True)
class Question:
    """One question: its text (Markdown), the options, the right one, why, and where to see it."""

    key: str  # the same question gets the same key: a session asks each once
    kind: str  # one of KINDS
    text: str  # Markdown; words from the sentence escaped
    options: tuple[str, ...]  # plain text
    answer: str  # one of options
    explanation: str  # Markdown, with the numbers the answer was computed from
    view: View

    def __post_init__(self) -> None:
        assert self.kind in KINDS and self.answer in self.options and len(set(self.options)) == len(self.options)

    def is_right(self, choice: str | None) -> bool:
        return choice == self.answer


@dataclass(frozen=True)
class _Sentence:
    """What the questions about one sentence share: the model's output with every head on."""

    run: Run
    text: str
    out: SentenceOutput

    @property
    def tokens(self) -> tuple[str, ...]:
        return self.out.encoded.tokens

    @property
    def predicted(self) -> int:
        return int(self.out.probabilities.argmax())

    @property
    def label(self) -> str:
        return self.run.label_names[self.predicted]

    def view(self, page: str, **params: object) -> View:
        return View.of(page, sentence=self.text, **params)


def _distractors(rng: np.random.Generator, others: Sequence[str], n: int = N_OPTIONS - 1) -> list[str]:
    """Up to ``n`` of ``others`` at random, in their order of ``others`` (the caller shuffles)."""
    if len(others) <= n:
        return list(others)
    picked = sorted(rng.choice(len(others), size=n, replace=False).tolist())
    return [others[i] for i in picked]


def _shuffled(rng: np.random.Generator, answer: str, distractors: Sequence[str]) -> tuple[str, ...]:
    options = [answer, *distractors]
    return tuple(options[i] for i in rng.permutation(len(options)))


# --- the kinds of question ------------------------------------------------------------------------


def _attends_most(s: _Sentence, rng: np.random.Generator) -> list[Question]:
    """"In layer l, head h, which word does *q* attend to most?": the argmax of q's row."""
    tokens, cfg = s.tokens, s.run.model_config
    words = list(dict.fromkeys(tokens))  # W distinct words; a word twice counts by its larger weight
    if len(words) < 2:
        return []
    attention = s.out.attention[: cfg.n_layers].double().cpu().numpy()  # (L, H, T, T), without a pooling map
    at = np.array([[t == w for t in tokens] for w in words])  # (W, T)
    best = np.stack([attention[..., at[i]].max(-1) for i in range(len(words))], -1)  # (L, H, T, W)
    top2 = np.sort(best, -1)[..., -2:]  # (L, H, T, 2)
    clear = top2[..., 1] - top2[..., 0] >= MARGINS["attends_most"]  # (L, H, T)
    out, names = [], map_words(cfg)  # "layer 1", …
    for layer, head, q in zip(*np.nonzero(clear), strict=True):
        weight = dict(zip(words, best[layer, head, q].tolist(), strict=True))  # word → its weight in this row
        ranked = sorted(words, key=lambda w: -weight[w])
        answer, query = ranked[0], tokens[q]
        which = f"{_word(query)} (word {q + 1})" if tokens.count(query) > 1 else _word(query)
        options = _shuffled(rng, answer, _distractors(rng, ranked[1:]))
        shown = ", ".join(f"{_word(w)} {weight[w]:.2f}" for w in ranked if w in options and w != answer)
        out.append(Question(
            key=f"attends_most|{s.run.name}|{s.text}|{layer + 1}.{head + 1}|{q}",
            kind="attends_most",
            text=f"In {names[layer]}, head {head + 1}, which word does {which} attend to most?",
            options=options,
            answer=answer,
            explanation=(f"Row {which} of {names[layer]}, head {head + 1} gives {_word(answer)} "
                         f"{weight[answer]:.2f} of its attention; the other choices: {shown}."),
            view=s.view("Inspect", layer=layer + 1, head=head + 1, tab="model-view"),
        ))
    return _order(rng, out)


def _knock_out(s: _Sentence, rng: np.random.Generator) -> list[Question]:
    """"Which head, when knocked out, changes this prediction most?": each head switched off alone."""
    cfg = s.run.model_config
    p = float(s.out.probabilities[s.predicted])
    change = {}
    for layer in range(cfg.n_attention_maps):
        for head in range(cfg.n_heads):
            off = s.run.forward(s.text, edit_attention=knock_out([(layer, head)], cfg))
            change[head_name(layer, head, cfg)] = float(off.probabilities[s.predicted]) - p
    ranked = sorted(change, key=lambda h: -abs(change[h]))
    answer, margin = ranked[0], MARGINS["knock_out"]
    clear = [h for h in ranked[1:] if abs(change[answer]) - abs(change[h]) >= margin]
    if len(change) < 2 or abs(change[answer]) < margin or not clear:
        return []
    distractors = _distractors(rng, clear)
    options = _shuffled(rng, answer, distractors)
    lines = ", ".join(f"{h} → {p + change[h]:.3f} ({change[h]:+.3f})" for h in sorted(options))
    pooling = (f" ({map_specs(cfg)[-1]}.h: the {map_words(cfg)[-1]} attention's heads)"
               if cfg.n_attention_maps > cfg.n_layers else "")
    return [Question(
        key=f"knock_out|{s.run.name}|{s.text}",
        kind="knock_out",
        text=(f"The model says **{markdown_escape(s.label)}** (p = {p:.3f}). Which head, when knocked out "
              f"(its output removed), changes this prediction most? Heads are *layer.head*{pooling}."),
        options=options,
        answer=answer,
        explanation=f"p({markdown_escape(s.label)}) with each head off alone: {lines}. Head {answer} moves it most.",
        view=s.view("Faithfulness", tab="heads", off=answer),
    )]


def _remove_word(s: _Sentence, rng: np.random.Generator) -> list[Question]:
    """"Will removing *w* flip the label?": the sentence predicted again without the word."""
    run, out = s.run, []
    tokenize = TOKENIZERS.get(run.encoder.tokenizer, TOKENIZERS["glove"])  # a word-piece model's words: as GloVe's
    tokens = tokenize(s.text)
    for word in dict.fromkeys(t for t in tokens if any(c.isalpha() for c in t)):
        shorter = " ".join(t for t in tokens if t != word)
        if tokenize(shorter) != [t for t in tokens if t != word]:
            continue  # the tokens joined again would not read as the same words
        try:
            after = run.forward(shorter)
        except EmbeddingError:  # nothing left, or no word of the rest is known
            continue
        new = int(after.probabilities.argmax())
        p_before, p_after = float(s.out.probabilities[s.predicted]), float(after.probabilities[new])
        flips = new != s.predicted
        verdict = "the label flips" if flips else "the label stays"
        out.append(Question(
            key=f"remove_word|{run.name}|{s.text}|{word}",
            kind="remove_word",
            text=(f"The model says **{markdown_escape(s.label)}**. Will removing {_word(word)} "
                  f"from the sentence flip the label?"),
            options=(YES, NO),
            answer=YES if flips else NO,
            explanation=(f"With {_word(word)}: **{markdown_escape(s.label)}** (p = {p_before:.3f}). Without it "
                         f"(“{markdown_escape(shorter)}”): **{markdown_escape(run.label_names[new])}** "
                         f"(p = {p_after:.3f}): {verdict}."),
            view=View.of("Inspect", sentence=shorter, tab="model-view"),
        ))
    # Yes and No taking turns for as long as both last: most words flip nothing.
    flipping = _order(rng, [q for q in out if q.answer == YES])
    staying = _order(rng, [q for q in out if q.answer == NO])
    both = min(len(flipping), len(staying))
    return [q for pair in zip(flipping[:both], staying[:both], strict=True) for q in pair] + \
        flipping[both:] + staying[both:]


def row_entropy(attention: torch.Tensor) -> np.ndarray:
    """Mean entropy (nats) of the attention rows of each layer: (L, H, T, T) → (L,). 0 = every row on
    one word; ln T = spread evenly over the T words."""
    p = attention.double().clamp(min=1e-12)
    return (-(p * p.log()).sum(-1)).mean(dim=(1, 2)).cpu().numpy()


def _most_spread(s: _Sentence, rng: np.random.Generator) -> list[Question]:
    """"Which layer's attention is most spread out?": the layer of highest mean row entropy."""
    cfg = s.run.model_config
    if cfg.n_layers < 2 or len(s.tokens) < 2:
        return []
    entropy = row_entropy(s.out.attention[: cfg.n_layers])  # (L,)
    ranked = [int(i) for i in np.argsort(-entropy, kind="stable")]
    if entropy[ranked[0]] - entropy[ranked[1]] < MARGINS["most_spread"]:
        return []
    names = cfg.map_names()[: cfg.n_layers]  # the layers' maps, not a pooling attention's
    answer = names[ranked[0]]
    distractors = _distractors(rng, [names[i] for i in ranked[1:]])
    shown = ", ".join(f"{names[i].lower()} {entropy[i]:.2f}" for i in range(cfg.n_layers))
    return [Question(
        key=f"most_spread|{s.run.name}|{s.text}",
        kind="most_spread",
        text="In which layer is the attention most spread out over the words (on average over its heads and words)?",
        options=tuple(sorted([answer, *distractors], key=names.index)),
        answer=answer,
        explanation=(f"Mean entropy of the attention rows, in nats (0: each word looks at one word; "
                     f"ln {len(s.tokens)} = {math.log(len(s.tokens)):.2f}: spread evenly): {shown}."),
        view=s.view("Inspect", tab="model-view"),
    )]


def _range_name(low: float, high: float) -> str:
    return f"{low:.0%} – {high:.0%}"


def _probability(s: _Sentence, rng: np.random.Generator) -> list[Question]:
    """"What probability does the model give *label*?": one of four ranges. With two labels, one of them
    (the other's answer would follow from it)."""
    out = []
    names = [_range_name(*r) for r in PROBABILITY_RANGES]
    labels = list(enumerate(s.run.label_names))
    if len(labels) == 2:
        labels = [labels[int(rng.integers(2))]]
    for c, label in labels:
        p = float(s.out.probabilities[c])
        if any(abs(p - low) < MARGINS["probability"] for low, _ in PROBABILITY_RANGES[1:]):
            continue
        answer = next(name for name, (low, high) in zip(names, PROBABILITY_RANGES, strict=True) if low <= p <= high)
        out.append(Question(
            key=f"probability|{s.run.name}|{s.text}|{label}",
            kind="probability",
            text=f"What probability does the model give the label **{markdown_escape(label)}** for this sentence?",
            options=tuple(names),
            answer=answer,
            explanation=f"p({markdown_escape(label)}) = {p:.3f}; the model predicts **{markdown_escape(s.label)}**.",
            view=s.view("Inspect", tab="model-view"),
        ))
    return _order(rng, out)


@dataclass(frozen=True)
class ComparedRun:
    """What "which run learned faster" knows of one of the workspace's runs."""

    history: History
    label_names: tuple[str, ...]

    @property
    def learned_nothing(self) -> bool:
        """Whether its kept model did no better than always answering the majority class (False when unknown)."""
        verdict = run_verdict(self.history, self.label_names)
        return verdict is not None and not verdict.learned


def compared_runs(paths: Iterable[str | os.PathLike]) -> dict[str, ComparedRun]:
    """The runs at ``paths`` (folder name → :class:`ComparedRun`), read without their weights; a run whose
    history or labels cannot be read is left out."""
    out = {}
    for path in paths:
        try:
            out[os.path.basename(path)] = ComparedRun(read_history(path), read_label_names(path))
        except RunError:
            continue
    return out


def early_loss(history: History) -> tuple[int, float] | None:
    """(epoch, training loss) after epoch :data:`EARLY_EPOCH`, or after a shorter run's last; None without epochs."""
    if not history.epochs:
        return None
    record = history.epochs[min(EARLY_EPOCH, len(history.epochs)) - 1]
    return record.epoch, record.train_loss


def _learned_faster(runs: Mapping[str, ComparedRun], rng: np.random.Generator) -> list[Question]:
    """"Which of these two runs learned faster?": the lower training loss after the same early epoch.

    Asked of two runs with the same labels only: a cross-entropy loss starts near ln C (0.69 for 2
    classes, 1.39 for 4), so runs with different labels are not on one scale. And not when the run
    with the lower loss learned nothing beyond its majority class (it would be named the winner).
    """
    usable = {name: r for name, r in runs.items() if early_loss(r.history) is not None}
    names = sorted(usable)
    out = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            if not same_labels(usable[a].label_names, usable[b].label_names):
                continue
            epoch = min(early_loss(usable[a].history)[0], early_loss(usable[b].history)[0])
            loss = {n: usable[n].history.epochs[epoch - 1].train_loss for n in (a, b)}
            if not all(math.isfinite(v) for v in loss.values()):
                continue
            faster, slower = sorted((a, b), key=lambda n: loss[n])
            if loss[slower] - loss[faster] < MARGINS["learned_faster"] * max(abs(loss[slower]), 1e-12):
                continue
            if usable[faster].learned_nothing:
                continue
            out.append(Question(
                key=f"learned_faster|{a}|{b}",
                kind="learned_faster",
                text=f"Which of these two runs learned faster (the lower training loss after epoch {epoch})?",
                options=_shuffled(rng, faster, [slower]),
                answer=faster,
                explanation=(f"Training loss after epoch {epoch}: {markdown_escape(a)} {loss[a]:.3f}, "
                             f"{markdown_escape(b)} {loss[b]:.3f}."),
                view=View.of("Train", compare=f"{a},{b}"),
            ))
    return _order(rng, out)


def _order(rng: np.random.Generator, items: Sequence[Question]) -> list[Question]:
    return [items[i] for i in rng.permutation(len(items))]


# Each makes every question of its kind, in the order to ask them.
_SENTENCE_KINDS: dict[str, Callable[[_Sentence, np.random.Generator], list[Question]]] = {
    "attends_most": _attends_most,
    "knock_out": _knock_out,
    "remove_word": _remove_word,
    "most_spread": _most_spread,
    "probability": _probability,
}


def questions(
    run: Run, text: str, rng: np.random.Generator, *, runs: Mapping[str, ComparedRun] | None = None,
    kinds: Iterable[str] = KINDS,
) -> list[Question]:
    """Every question this run and sentence allow, kinds taking turns, in an order set by ``rng``.

    ``runs`` (the workspace's runs, :func:`compared_runs`) allows "which of two runs learned faster"
    when it has two or more with the same labels. The same ``rng`` state gives the same questions in the same order.
    A pretrained encoder whose classifier head is untrained (its history's status "pretrained") gets no question
    about its prediction (:data:`PREDICTION_KINDS`): its label means nothing. Raises ``EmbeddingError`` if ``text``
    is empty or no word of it is known.

    Example:
        >>> qs = questions(load_run("data/default_run"), "the food was not good", np.random.default_rng(0))
        >>> [(q.text, q.options, q.answer) for q in qs if q.kind == "remove_word"][0]
        ('The model says **negative**. Will removing *not* from the sentence flip the label?', ('Yes', 'No'), 'Yes')
    """
    kinds = list(kinds)
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ConfigError(f"unknown question kind(s) {unknown}", f"choose from {', '.join(KINDS)}")
    if run.history.status == "pretrained":  # attention_core.pretrained.pretrained_run: the head is untrained
        kinds = [k for k in kinds if k not in PREDICTION_KINDS]
    s = _Sentence(run, text, run.forward(text))
    by_kind: dict[str, list[Question]] = {}
    for kind in kinds:
        if kind == "learned_faster":
            by_kind[kind] = _learned_faster(runs or {}, rng)
        else:
            by_kind[kind] = _SENTENCE_KINDS[kind](s, rng)
    turns = [by_kind[k] for k in rng.permutation(kinds).tolist() if by_kind[k]]
    longest = max((len(t) for t in turns), default=0)
    return [t[i] for i in range(longest) for t in turns if i < len(t)]


def next_question(candidates: Sequence[Question], asked: Iterable[str]) -> Question | None:
    """The first of ``candidates`` whose key is not among ``asked``; None when every one was asked."""
    seen = set(asked)
    return next((q for q in candidates if q.key not in seen), None)
