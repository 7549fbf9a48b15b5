"""Training: a :class:`Trainer` that knows nothing of any UI and reports through callbacks.

It batches sentences of similar length together (with padding masks), keeps the best
weights by validation loss (or macro-F1), stops a diverging run (NaN / inf loss) and rolls back to the
last good weights, honours a time budget, can be paused, resumed and stopped from another
thread, and records the attention maps of a few probe sentences as training goes, so the
app can replay how attention changed. Same seed, same data, same config → same history.
The ``seed`` preset steps with the Julia post's hand-written SGD step
(:mod:`attention_core.post_sgd`) where that computes what autograd would; anything else steps
through autograd and a torch optimizer.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import torch
import torch.nn.functional as F

from attention_core.configs import (  # noqa: F401 — TrainConfig and its choices, re-exported
    KEEP_BY,
    KEPT_BY_WORDS,
    LR_SCHEDULES,
    MAX_PROBE_RECORDS,
    MAX_SNAPSHOTS,
    OPTIMIZERS,
    SAMPLINGS,
    ModelConfig,
    TrainConfig,
    with_data,
)
from attention_core.data import TextDataset, check_known_words
from attention_core.embeddings import Embeddings, load_embeddings
from attention_core.encoding import Batch, Encoded, TextEncoder
from attention_core.errors import ConfigError, DataError, EmbeddingError
from attention_core.history import (  # noqa: F401 — re-exported
    EpochRecord,
    History,
    ProbeRecord,
    ProbeSentence,
    StepEvent,
    patience_stop,
)
from attention_core.metrics import classification_metrics
from attention_core.model import AttentionClassifier, AttentionEdit
from attention_core.post_sgd import PostModelSGDStep, post_sgd_step_applies
from attention_core.sentence import evaluating, run_encoded
from attention_core.text import TOKENIZERS

if TYPE_CHECKING:
    from attention_core.runs import Run

SKEWED_SHARE = 0.5  # sampling="auto" balances when the rarest class has under this share of an equal split's rows
CHECK_ROWS = 5_000  # rows check_settings tokenizes to see how much text the word vectors know (~0.1 s)
FUSED_DEVICES = ("cpu", "cuda")  # where PyTorch's SGD, Adam and AdamW have fused kernels (the CPU's since torch 2.4)


class EncodedRows(NamedTuple):
    """A split's rows as the Trainer feeds them: token ids, label indices, how each token was written."""

    ids: list[tuple[int, ...]]
    labels: list[int]
    casing: list[tuple[int, ...]]  # per row, as Encoded.casing (empty rows when the encoder has no casing)


class BatchTensors(NamedTuple):
    """One batch of :class:`EncodedRows`: ids (B, T), mask (B, T) or None (no padding), labels (B,), casing (B, T) or None."""

    ids: torch.Tensor
    mask: torch.Tensor | None
    labels: torch.Tensor
    casing: torch.Tensor | None


def snapshot_epochs(epochs: int, n: int) -> set[int]:
    """The epochs whose weights a run keeps: ``n`` evenly spread from 0 (before training) to ``epochs``.

    Example:
        >>> sorted(snapshot_epochs(10, 6))
        [0, 2, 4, 6, 8, 10]
    """
    if n <= 0:
        return set()
    if n == 1:
        return {epochs}
    return {round(i * epochs / (n - 1)) for i in range(n)}


def _trained_weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The weights training changes, in float16 (what a time-lapse needs; frozen ones are the run's own)."""
    return {k: p.detach().to("cpu", torch.float16, copy=True) for k, p in model.named_parameters() if p.requires_grad}


def _snapshot(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """A copy of the weights (cheaper than ``copy.deepcopy(state_dict())``)."""
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


# What a fine-tuning run chooses of a pretrained encoder's ModelConfig (its sizes are the checkpoint's)
BASE_CHOICES = ("pooling", "frozen_layers", "freeze_embeddings", "freeze_head", "dropout")


def training_vectors(embeddings: Embeddings, train_config: TrainConfig) -> Embeddings:
    """The word vectors training reads: the config's vocabulary limit decides, not the caller's table."""
    if train_config.vocab_limit != embeddings.source.limit:
        return load_embeddings(replace(embeddings.source, limit=train_config.vocab_limit))
    return embeddings


def check_settings(model_config: ModelConfig, train_config: TrainConfig, dataset: TextDataset,
                   embeddings: Embeddings | None) -> None:
    """Raise the :class:`~attention_core.errors.InputError` that ``Trainer(...)`` would for this combination,
    before its work.

    A bad setting is a :class:`ConfigError`; a text column that the word vectors training reads (with
    the config's vocabulary limit and tokenizer) almost cannot is a :class:`DataError`
    (:func:`~attention_core.data.check_known_words`, on at most :data:`CHECK_ROWS` rows spread over the
    data). No model is made: the app checks a Start here and builds the trainer in the training process.
    """
    if model_config.base is not None:  # a pretrained encoder reads word pieces: no word vectors to check
        from attention_core.pretrained import base_folder, read_checkpoint

        positions = read_checkpoint(base_folder(model_config.base)).config.max_positions  # RunError if it is not one
        if not 3 <= train_config.max_tokens <= positions:
            raise ConfigError(f"max_tokens = {train_config.max_tokens} is not valid",
                              f"use 3 to {positions} word pieces ([CLS] and [SEP] included), e.g. 64")
        return
    cfg = with_data(model_config, n_classes=len(dataset.label_names), vocab_size=1, embedding_dim=embeddings.dim)
    if cfg.positional in ("sinusoidal", "learned") and train_config.max_tokens > cfg.max_len:
        raise ConfigError(f"max_tokens = {train_config.max_tokens} exceeds the model's max_len", "lower max_tokens")
    tokenize = TOKENIZERS.get(train_config.tokenizer)
    if tokenize is None:
        raise ConfigError(f"unknown tokenizer {train_config.tokenizer!r}", f"choose one of {', '.join(TOKENIZERS)}")
    if dataset.texts:
        rows = dataset.texts[:: max(1, len(dataset.texts) // CHECK_ROWS)]
        vectors = training_vectors(embeddings, train_config)
        check_known_words(rows, dataset.report.text_column, vectors.__contains__, tokenize)


@dataclass(frozen=True)
class TrainerSpec:
    """A :class:`Trainer` described, to be built where it will train (:meth:`build`).

    Building one tokenizes and encodes the whole dataset and makes the model (~0.1 s for 3,000
    sentences); the app does that in the training process, not in its server. Pickles small:
    the embedding table travels as its source.
    """

    model_config: ModelConfig
    train_config: TrainConfig
    dataset: TextDataset
    embeddings: Embeddings | None  # None for a pretrained encoder (ModelConfig.base), which reads word pieces

    def check(self) -> None:
        """Raise the errors :meth:`build` would for the settings and the text (see :func:`check_settings`)."""
        check_settings(self.model_config, self.train_config, self.dataset, self.embeddings)

    def build(self, device: str = "cpu") -> Trainer:
        return Trainer(self.model_config, self.train_config, self.dataset, self.embeddings, device=device)


def lr_factor(schedule: str, warmup: float, steps: int, *, budget: float | None = None,
              clock: Callable[[], float] | None = None, reference_steps: int = 0) -> Callable[[int], float] | None:
    """The learning rate's multiplier after ``step`` steps of ``steps`` planned; None for a constant rate.

    With a time ``budget`` (seconds) and the training ``clock``, the schedule runs on whichever ends first: a step
    counts as far along as the time spent is along the budget when that is further (``clock() / budget × steps``),
    so a run the budget stops warms up over its first tenth and has decayed when it stops, not at a rate still near
    its peak (the pretrained encoder's 60 s on 8,000 sentences: 100 of 800 planned steps, 80 of them warming up).

    With ``reference_steps`` N (``TrainConfig.lr_reference_steps``), a training of more than N steps peaks lower, at
    √(N / its steps): its planned steps, or with a budget the steps its pace so far fits in the budget (from its 10th
    step: the first 10 are at the full peak, which the warm-up keeps small).

    Example:
        >>> f = lr_factor("linear", 0.1, 100)
        >>> [round(f(s), 2) for s in (0, 5, 10, 55, 100)]
        [0.09, 0.55, 1.0, 0.5, 0.0]
        >>> g = lr_factor("linear", 0.1, 100, budget=10.0, clock=lambda: 5.5)  # half the budget spent at step 5
        >>> round(g(5), 2), round(g(80), 2)
        (0.5, 0.22)
        >>> h = lr_factor("linear", 0.1, 400, reference_steps=100)  # 400 steps: a peak of √(100 / 400) = 0.5
        >>> round(h(40), 2), round(h(220), 2)
        (0.5, 0.25)
        >>> k = lr_factor("constant", 0.0, 4000, budget=10.0, clock=lambda: 2.5, reference_steps=100)
        >>> round(k(100), 2)  # 100 steps in a quarter of the budget: 400 fit in it, as above
        0.5
    """
    if schedule == "constant" and warmup == 0 and not reference_steps:
        return None
    warm = round(warmup * steps)

    def peak(step: int) -> float:
        total = steps
        if budget and clock is not None:  # the steps that fit in it, once its pace is known (until then, its peak)
            spent = min(1.0, clock() / budget)
            total = min(steps, step / spent) if step >= 10 and spent > 0 else 0
        return math.sqrt(reference_steps / total) if reference_steps and total > reference_steps else 1.0

    def factor(step: int) -> float:
        scale = peak(step)
        if budget and clock is not None:
            step = max(step, min(1.0, clock() / budget) * steps)
        if step < warm:
            return scale * (step + 1) / (warm + 1)
        done = min(1.0, (step - warm) / max(1, steps - warm))
        if schedule == "linear":
            return scale * (1.0 - done)
        if schedule == "cosine":
            return scale * 0.5 * (1.0 + math.cos(math.pi * done))
        return scale

    return factor


def resolved_sampling(labels: Sequence[int], sampling: str) -> str:
    """``sampling`` with ``auto`` decided from the class counts of ``labels`` (see ``TrainConfig.sampling``).

    Example:
        >>> resolved_sampling([0] * 90 + [1] * 10, "auto"), resolved_sampling([0] * 70 + [1] * 30, "auto")
        ('balanced', 'shuffle')
    """
    if sampling != "auto":
        return sampling
    counts = torch.bincount(torch.tensor(list(labels), dtype=torch.long))
    counts = counts[counts > 0]
    if len(counts) < 2:
        return "shuffle"
    return "balanced" if int(counts.min()) < SKEWED_SHARE * len(labels) / len(counts) else "shuffle"


def epoch_rows(labels: Sequence[int], sampling: str, generator: torch.Generator) -> list[int]:
    """One epoch's rows in random order, as many as there are rows (see ``TrainConfig.sampling``).

    ``sqrt`` and ``balanced`` give class c a share ∝ count_c^½ or ∝ 1 of the epoch; its rows fill
    that share with whole shuffled passes, then a random part of one more (or only a random part:
    a common class is subsampled, never a row twice).

    Example:
        >>> rows = epoch_rows([0] * 8 + [1] * 2, "balanced", torch.Generator().manual_seed(0))
        >>> len(rows), sum(r >= 8 for r in rows)
        (10, 5)
    """
    n = len(labels)
    sampling = resolved_sampling(labels, sampling)
    if sampling == "shuffle" or n == 0:
        return torch.randperm(n, generator=generator).tolist()
    y = torch.tensor(labels)
    classes, counts = torch.unique(y, return_counts=True)
    share = counts.double().pow(0.5 if sampling == "sqrt" else 0.0)
    share = share / share.sum()
    # Largest-remainder rounding: the class targets sum to n exactly.
    exact = share * n
    target = exact.floor().long()
    for i in torch.argsort(exact - target, descending=True)[: n - int(target.sum())].tolist():
        target[i] += 1
    rows: list[int] = []
    for c, count, want in zip(classes.tolist(), counts.tolist(), target.tolist(), strict=True):
        members = torch.nonzero(y == c).flatten()
        passes, rest = divmod(want, count)
        for _ in range(passes):
            rows += members[torch.randperm(count, generator=generator)].tolist()
        rows += members[torch.randperm(count, generator=generator)[:rest]].tolist()
    return [rows[i] for i in torch.randperm(len(rows), generator=generator).tolist()]


def make_batches(lengths: Sequence[int], batch_size: int, generator: torch.Generator,
                 order: Sequence[int] | None = None) -> list[list[int]]:
    """Shuffle (or take ``order``: the epoch's rows), group rows of similar length (less padding), shuffle the batches."""
    order = torch.randperm(len(lengths), generator=generator).tolist() if order is None else list(order)
    chunk = batch_size * 50
    batches = []
    for start in range(0, len(order), chunk):
        part = sorted(order[start : start + chunk], key=lambda i: lengths[i])
        batches += [part[i : i + batch_size] for i in range(0, len(part), batch_size)]
    perm = torch.randperm(len(batches), generator=generator).tolist()
    return [batches[i] for i in perm]


def _keep_cost(record: EpochRecord, keep_by: str) -> float | None:
    """The epoch's figure to minimise when choosing the kept epoch (None without validation rows)."""
    if record.val_loss is None:
        return None
    if keep_by == "macro_f1":  # ties (common on small sets) go to the lower loss
        return -(record.val_macro_f1 or 0.0) + 1e-9 * min(record.val_loss, 100.0)
    return record.val_loss


@dataclass
class _EpochTally:
    """What one epoch's steps add up to."""

    steps: int = 0
    planned: int = 0  # the epoch's batches
    seen: int = 0  # rows
    loss_sum: float = 0.0  # Σ loss × rows
    correct: int = 0
    seconds: float = 0.0  # training seconds of the epoch (pauses excluded)

    def add(self, loss: float, correct: int, rows: int) -> None:
        self.steps += 1
        self.seen += rows
        self.loss_sum += loss * rows
        self.correct += correct


class _TrainingClock:
    """Seconds spent training: the finished epochs plus the current one, pauses left out."""

    def __init__(self) -> None:
        self.elapsed = 0.0  # finished epochs
        self._epoch = 0.0  # the current epoch up to its last pause
        self._since = time.perf_counter()

    def start_epoch(self) -> None:
        self._epoch, self._since = 0.0, time.perf_counter()

    def pause(self) -> None:
        self._epoch += time.perf_counter() - self._since

    def resume(self) -> None:
        self._since = time.perf_counter()

    def epoch_seconds(self) -> float:
        return self._epoch + time.perf_counter() - self._since

    def now(self) -> float:
        return self.elapsed + self.epoch_seconds()

    def end_epoch(self) -> float:
        """The epoch's seconds, added to :attr:`elapsed`."""
        seconds = self.epoch_seconds()
        self.elapsed += seconds
        return seconds


class _KeptWeights:
    """The last good weights (a diverging run rolls back to them) and the best by a validation figure."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.last_good = _snapshot(model)
        self.best: dict[str, torch.Tensor] | None = None
        self.best_cost = math.inf

    def epoch_done(self, model: torch.nn.Module, cost: float | None) -> bool:
        """Keep the epoch's weights as the last good ones; True when their ``cost`` (lower is better) is the best so far."""
        self.last_good = _snapshot(model)
        if cost is not None and cost < self.best_cost:
            self.best_cost, self.best = cost, self.last_good
            return True
        return False


class _Snapshots:
    """Weight snapshots for the time-lapse: the planned epochs (:func:`snapshot_epochs`) and those a run ends on.

    A run can end before its planned last epoch (patience, a time budget, Stop), and then never
    reaches most planned epochs: the default preset plans 6 over 40 epochs and its patience ends it
    near epoch 12, where the planned ones alone would give the time-lapse 3 frames (0, the kept
    epoch, 12). So interim snapshots are kept too, every
    ``stride`` epochs and at most ``2 n`` of them (the stride doubles when they are more); a run
    that ends early keeps ``n`` of its snapshots spread evenly over the epochs it trained
    (:meth:`spread`), one that reaches its end the planned ones.
    """

    def __init__(self, planned: set[int], model: torch.nn.Module, n: int, *, from_base: bool = False) -> None:
        self.planned, self.n = planned, n
        self.weights: dict[int, dict[str, torch.Tensor]] = {}
        self.interim: dict[int, dict[str, torch.Tensor]] = {}
        self.stride = 1
        self.take_planned(0, model)
        if 0 in self.weights and from_base:
            # Before training, a fine-tuned encoder's weights are its base checkpoint's, which the run names: of
            # epoch 0 only the new head is kept (Run.forward_over_training reads the rest from the base).
            self.weights[0] = {k: v for k, v in self.weights[0].items() if k.startswith("head.")}

    def take_planned(self, epoch: int, model: torch.nn.Module) -> None:
        if epoch in self.planned:
            self.take(epoch, model)
        elif self.n > 1 and epoch % self.stride == 0:
            self.interim[epoch] = _trained_weights(model)
            if len(self.interim) > 2 * self.n:
                self.stride *= 2
                self.interim = {e: w for e, w in self.interim.items() if e % self.stride == 0}

    def spread(self, last: int) -> None:
        """Keep, of the snapshots taken up to ``last``, the nearest to each of ``n`` epochs spread evenly from 0 to
        ``last`` (for a run that ended early; the end and the kept epoch are added by :meth:`take`)."""
        taken = {**self.interim, **self.weights}
        if not taken:  # one snapshot: the last epoch's, which take adds
            return
        chosen = {min(taken, key=lambda e: (abs(e - target), e)) for target in snapshot_epochs(last, self.n)}
        self.weights, self.interim = {e: taken[e] for e in sorted(chosen)}, {}

    def take(self, epoch: int, model: torch.nn.Module) -> None:
        if epoch not in self.weights:
            self.weights[epoch] = _trained_weights(model)


class _AutogradStep:
    """A step on a batch through autograd and a torch optimizer (any model and settings)."""

    def __init__(self, model: AttentionClassifier, optimizer: torch.optim.Optimizer,
                 tensors: Callable[[Sequence[int]], BatchTensors],
                 loss_weight: torch.Tensor | None, grad_clip: float | None, *, label_smoothing: float = 0.0,
                 lr_factor: Callable[[int], float] | None = None, average_steps: float = 0.0) -> None:
        self.model, self.optimizer, self.tensors = model, optimizer, tensors
        self.loss_weight, self.grad_clip, self.label_smoothing = loss_weight, grad_clip, label_smoothing
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_factor) if lr_factor else None
        self.average_steps = average_steps
        self.average = [p.detach().clone() for p in self.params] if average_steps else None
        self.raw: list[torch.Tensor] | None = None  # the trained weights while the model holds the average
        self.steps = 0

    def __call__(self, rows: Sequence[int]) -> tuple[float, int]:
        """(loss, correct predictions) of the rows; the weights move only when the loss is finite."""
        if self.raw is not None:  # the epoch's end evaluated the average: train on from the trained weights
            with torch.no_grad():
                torch._foreach_copy_(self.params, self.raw)
            self.raw = None
        ids, mask, y, casing = self.tensors(rows)
        logits, _ = self.model(ids, mask, casing=casing, need_weights=False)
        loss = F.cross_entropy(logits, y, weight=self.loss_weight, label_smoothing=self.label_smoothing)
        loss_value = loss.item()
        correct = int((logits.argmax(-1) == y).sum())
        if math.isfinite(loss_value):
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if self.grad_clip:
                torch.nn.utils.clip_grad_norm_(self.params, self.grad_clip)
            self.optimizer.step()
            if self.scheduler is not None:
                self.scheduler.step()
            if self.average is not None:
                self.steps += 1
                # An exponential moving average; early on it weighs recent steps more (as TensorFlow's).
                keep = min(max(0.0, 1.0 - 1.0 / self.average_steps), (1 + self.steps) / (10 + self.steps))
                with torch.no_grad():
                    torch._foreach_lerp_(self.average, [p.detach() for p in self.params], 1.0 - keep)
        return loss_value, correct

    def end_epoch(self) -> None:
        """With weight averaging, the model holds the average until the next step (evaluated, kept, snapshotted)."""
        if self.average is not None:
            with torch.no_grad():
                self.raw = [p.detach().clone() for p in self.params]
                torch._foreach_copy_(self.params, self.average)

    def weights_finite(self) -> bool:
        return all(bool(torch.isfinite(p).all()) for p in self.params)


class _PostModelStep:
    """A step on one sentence with the post's hand-written SGD (:class:`PostModelSGDStep`), without autograd.

    The embeddings are frozen, so each sentence's input is computed once. The step trains copies
    of the weights; :meth:`end_epoch` writes them into the model.
    """

    def __init__(self, model: AttentionClassifier, ids: list[tuple[int, ...]], labels: list[int], lr: float,
                 train_head: bool) -> None:
        self.model, self.labels = model, labels
        self.sgd = PostModelSGDStep(model, lr, train_head)
        with torch.no_grad():
            self.inputs = [self.sgd.prepare(model.embed(torch.tensor([row]))[0]) for row in ids]  # (n, d+1) each

    def __call__(self, rows: Sequence[int]) -> tuple[float, int]:
        """(loss, correct prediction) of the one row in ``rows``."""
        row = rows[0]
        loss, predicted = self.sgd.step(self.inputs[row], self.labels[row])
        return loss, int(predicted == self.labels[row])

    def end_epoch(self) -> None:
        self.sgd.write_back(self.model)

    def weights_finite(self) -> bool:
        return self.sgd.weights_finite()


_Step = _AutogradStep | _PostModelStep  # called with a batch's rows: (loss, correct predictions)


class Trainer:
    """Train an :class:`AttentionClassifier` on a :class:`TextDataset`.

    ``run()`` trains in the calling thread; ``stop()``, ``pause()`` and ``resume()`` may be
    called from any other thread. Callbacks get a :class:`StepEvent` after every step and an
    :class:`EpochRecord` after every epoch; they run in the training thread, so keep them short.

    Example:
        >>> from attention_core.data import dataset_from_lists
        >>> dataset = dataset_from_lists(["a great phone", "an awful phone", "great value", "awful value"] * 5,
        ...                              ["pos", "neg", "pos", "neg"] * 5)
        >>> trainer = Trainer(ModelConfig(n_layers=1, n_heads=2), TrainConfig(epochs=3), dataset, load_embeddings())
        >>> def report(rec): print(f"epoch {rec.epoch}: validation accuracy {rec.val_accuracy:.0%}")
        >>> run = trainer.run(on_epoch=report)  # doctest: +ELLIPSIS
        epoch 1: validation accuracy ...%
        epoch 2: validation accuracy ...%
        epoch 3: validation accuracy ...%
        >>> run.label_names, len(trainer.train_set), len(run.validation[0])
        (('neg', 'pos'), 16, 4)
    """

    def __init__(
        self,
        model_config: ModelConfig,
        train_config: TrainConfig,
        dataset: TextDataset,
        embeddings: Embeddings | None,  # None for a pretrained encoder (ModelConfig.base)
        *,
        device: str = "cpu",
    ) -> None:
        self.train_config = tc = train_config
        self.device = torch.device(device)
        pretrained = model_config.base is not None  # fine-tune a pretrained encoder: its word pieces, not word vectors
        if not pretrained:
            embeddings = training_vectors(embeddings, tc)
        check_settings(model_config, tc, dataset, embeddings)
        self.train_set, self.val_set = dataset.split(tc.val_fraction, tc.seed)
        probes = list(tc.probes) or list(self.val_set.texts[:3] or self.train_set.texts[:3])
        if pretrained:
            from attention_core.pretrained import base_model_config, load_base

            choices = {name: getattr(model_config, name) for name in BASE_CHOICES}
            self.model_config = base_model_config(model_config.base, len(dataset.label_names), **choices)
            base_model, self.encoder = load_base(self.model_config, max_tokens=tc.max_tokens, seed=tc.seed)
        else:
            self.encoder = TextEncoder.build(
                embeddings,
                list(dataset.texts) + probes,
                tokenizer=tc.tokenizer,
                unknown=tc.unknown,
                max_tokens=tc.max_tokens,
                casing=model_config.casing,
            )
            self.model_config = with_data(
                model_config,
                n_classes=len(dataset.label_names),
                vocab_size=self.encoder.vocab_size,
                embedding_dim=embeddings.dim,
            )
        self.label_names = dataset.label_names
        self._probes = []  # (text, Encoded, Batch), encoded once; sentences with no known word are skipped
        for text in probes:
            try:
                self._probes.append((text, *self.encoder.encode_for_model(text)))
            except EmbeddingError:
                continue
        self.probes = [text for text, _, _ in self._probes]
        self._train = self._encode(self.train_set)
        self._train_lengths = [len(ids) for ids in self._train[0]]
        self._val = self._encode(self.val_set)
        if not self._train[0]:
            raise DataError(
                "no training row has a word the embedding table knows",
                "check that the text column holds English text, or use unknown='unk'",
            )
        torch.manual_seed(tc.seed)
        model = base_model if pretrained else AttentionClassifier(self.model_config, self.encoder.vectors())
        self.model = model.to(self.device)
        self.history = History(skipped_rows=len(self.train_set) - len(self._train[0]))
        self._stop = threading.Event()
        self._running = threading.Event()
        self._running.set()
        self._idle = threading.Event()  # set while the worker is actually waiting in a pause

    def __getstate__(self) -> dict:
        """A trainer that has not run yet pickles (the app trains it in another process); the
        thread controls do not travel, and the embedding table travels as its source."""
        state = self.__dict__.copy()
        for name in ("_stop", "_running", "_idle"):
            del state[name]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._stop, self._running, self._idle = threading.Event(), threading.Event(), threading.Event()
        self._running.set()

    @property
    def n_train_rows(self) -> int:
        """Training rows the model learns from (rows with no known word are left out)."""
        return len(self._train[0])

    def _encode(self, ds: TextDataset) -> EncodedRows:
        rows = EncodedRows([], [], [])
        for text, label in zip(ds.texts, ds.labels, strict=True):
            enc = self.encoder.encode(text)
            if enc.ids:  # a row whose words are all unknown (drop mode) has nothing to learn from
                rows.ids.append(enc.ids)
                rows.labels.append(label)
                rows.casing.append(enc.casing)
        return rows

    # -- control from other threads -------------------------------------------------------
    def stop(self) -> None:
        self._stop.set()
        self._running.set()

    def pause(self) -> None:
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    def wait_until_paused(self, timeout: float | None = None) -> bool:
        """Block until the training thread has stopped stepping after :meth:`pause`."""
        return self._idle.wait(timeout)

    # -- training ----------------------------------------------------------------------------
    def _tensors(self, rows: Sequence[int], encoded: EncodedRows) -> BatchTensors:
        ids, labels, casing = encoded
        t = max(len(ids[i]) for i in rows)
        batch = torch.zeros(len(rows), t, dtype=torch.long)
        kinds = torch.zeros(len(rows), t, dtype=torch.long) if self.encoder.casing else None
        for r, i in enumerate(rows):
            batch[r, : len(ids[i])] = torch.tensor(ids[i])
            if kinds is not None:
                kinds[r, : len(casing[i])] = torch.tensor(casing[i], dtype=torch.long)
        mask = batch != 0
        y = torch.tensor([labels[i] for i in rows])
        # No padding: let attention skip the mask (a faster path for batch size 1).
        dev = self.device
        return BatchTensors(batch.to(dev), None if bool(mask.all()) else mask.to(dev), y.to(dev),
                            None if kinds is None else kinds.to(dev))

    def _optimizer(self) -> torch.optim.Optimizer:
        tc = self.train_config
        table = self.model.embedding.weight
        rest = [p for p in self.model.parameters() if p.requires_grad and p is not table]
        params = [{"params": rest}]
        if table.requires_grad:
            params.append({"params": [table], "lr": tc.lr * tc.embedding_lr})
        # PyTorch's fused kernels where it has them (one pass over each tensor instead of a loop of operations per
        # update; the same update: the optimizer's step ~4× faster, fine-tuning ~6 % more examples/s on this machine's
        # CPU, the small model's gain within the machine's noise: benchmarks/README.md, "Fine-tuning's quality", fifth
        # round), else its multi-tensor loops.
        kind = {"fused": True} if self.device.type in FUSED_DEVICES else {"foreach": True}
        if tc.optimizer == "sgd":
            return torch.optim.SGD(params, lr=tc.lr, weight_decay=tc.weight_decay, **kind)
        if tc.optimizer == "adam":
            return torch.optim.Adam(params, lr=tc.lr, weight_decay=tc.weight_decay, **kind)
        return torch.optim.AdamW(params, lr=tc.lr, weight_decay=tc.weight_decay, **kind)

    def _class_weights(self) -> torch.Tensor | None:
        if not self.train_config.class_weights:
            return None
        counts = torch.bincount(torch.tensor(self._train[1]), minlength=len(self.label_names)).float()
        return counts.sum() / (len(counts) * counts.clamp(min=1))

    @torch.no_grad()
    def evaluate_encoded(self, encoded: EncodedRows, weight: torch.Tensor | None = None) -> tuple[float, float, list[int]]:
        """Mean loss, accuracy and predictions on encoded rows (``Trainer._encode``'s; eval mode, batches of 256)."""
        ids, labels, _ = encoded
        was_training = self.model.training
        self.model.eval()
        total, preds = 0.0, []
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        by_row: dict[int, int] = {}
        for start in range(0, len(order), 256):
            rows = order[start : start + 256]
            batch, mask, y, kinds = self._tensors(rows, encoded)
            logits, _ = self.model(batch, mask, casing=kinds, need_weights=False)
            total += float(F.cross_entropy(logits, y, weight=weight, reduction="sum"))
            by_row.update(zip(rows, logits.argmax(-1).tolist(), strict=True))
        self.model.train(was_training)
        preds = [by_row[i] for i in range(len(ids))]
        correct = sum(int(p == y) for p, y in zip(preds, labels, strict=True))
        return total / max(1, len(ids)), correct / max(1, len(ids)), preds

    def _record_probes(self, epoch: int) -> None:
        sentences = []
        for text, encoded, batch in self._probes:
            seen = run_encoded(self.model, encoded, batch)
            sentences.append(ProbeSentence(
                text, list(seen.encoded.tokens), [round(p, 4) for p in seen.probabilities.tolist()],
                torch.round(seen.attention, decimals=4).tolist(),  # (M, H, T, T)
            ))
        self.history.probes.append(ProbeRecord(epoch, sentences))

    def run(
        self,
        *,
        on_step: Callable[[StepEvent], None] | None = None,
        on_epoch: Callable[[EpochRecord], None] | None = None,
        name: str = "run",
    ) -> Run:
        """Train until the last epoch, a stop, the time budget or a divergence; the run named ``name`` (not saved)
        keeps the best weights."""
        tc, h, model = self.train_config, self.history, self.model
        if tc.num_threads:
            torch.set_num_threads(tc.num_threads)
        batch_order = torch.Generator().manual_seed(tc.seed)
        torch.manual_seed(tc.seed)  # dropout
        loss_weight = self._class_weights()
        sampling = resolved_sampling(self._train[1], tc.sampling)
        kept = _KeptWeights(model)
        clock, steps = _TrainingClock(), 0
        take_step = self._make_step(loss_weight, clock)
        self._record_probes(0)
        snapshots = _Snapshots(snapshot_epochs(tc.epochs, tc.snapshots), model, tc.snapshots,
                               from_base=self.model_config.base is not None)
        model.train()
        for epoch in range(1, tc.epochs + 1):
            order = epoch_rows(self._train[1], sampling, batch_order) if sampling != "shuffle" else None
            batches = make_batches(self._train_lengths, tc.batch_size, batch_order, order)
            tally = self._train_epoch(epoch, batches, take_step, clock, steps, kept, on_step)
            steps += tally.steps
            h.examples_seen += tally.seen
            h.seconds = clock.elapsed
            if h.status == "diverged" or tally.seen == 0:
                break
            take_step.end_epoch()
            if not take_step.weights_finite():  # caught before the epoch's weights are kept
                self._diverge(kept, f"weights became NaN/inf in epoch {epoch}")
                break
            record = self._epoch_record(epoch, tally, clock, loss_weight)
            h.epochs.append(record)
            cost = _keep_cost(record, tc.keep_by)
            if kept.epoch_done(model, cost) or kept.best is None:
                h.kept_epoch = epoch  # the best validation figure; without one (no validation rows), the last epoch
            if tc.patience and cost is not None and epoch - (h.kept_epoch or 0) >= tc.patience:
                h.status = "finished"
                what = "loss" if tc.keep_by == "loss" else "macro-F1"
                h.message = (f"stopped early after epoch {epoch}: validation {what} has not improved for "
                             f"{tc.patience} epochs (best at epoch {h.kept_epoch})")
            if self._probes_due(epoch):
                self._record_probes(epoch)
            snapshots.take_planned(epoch, model)
            if on_epoch is not None:
                on_epoch(record)
            if self._stop.is_set() or h.status != "running":
                break
        return self._finish(kept, snapshots, name)

    def _train_epoch(self, epoch: int, batches: list[list[int]], take_step: _Step,
                     clock: _TrainingClock, steps_before: int, kept: _KeptWeights,
                     on_step: Callable[[StepEvent], None] | None) -> _EpochTally:
        """One epoch's steps; it ends early on a stop, a non-finite loss or the time budget (``history.status``)."""
        h, tally, budget = self.history, _EpochTally(planned=len(batches)), self.train_config.time_budget
        clock.start_epoch()
        for rows in batches:
            if not self._running.is_set():  # paused
                self._wait_while_paused(clock)
            if self._stop.is_set():
                break
            loss, correct = take_step(rows)
            if not math.isfinite(loss):
                self._diverge(kept, f"training diverged at epoch {epoch}, step {steps_before + tally.steps + 1} "
                                    f"(loss = {loss})")
                break
            tally.add(loss, correct, len(rows))
            h.step_losses.append(loss)
            if on_step is not None:
                step = steps_before + tally.steps
                on_step(StepEvent(epoch, step, len(batches), loss, h.examples_seen + tally.seen, clock.now()))
            if budget and clock.now() >= budget:
                h.status, h.message = "time budget", f"stopped after the time budget of {budget:g} s"
                break
        tally.seconds = clock.end_epoch()
        return tally

    def _make_step(self, loss_weight: torch.Tensor | None, clock: _TrainingClock | None = None) -> _Step:
        """The post's hand-written SGD step where it computes what autograd would, else autograd and an optimizer."""
        ids, labels, _ = train = self._train
        if post_sgd_step_applies(self.model_config, self.train_config, self.device):
            return _PostModelStep(self.model, ids, labels, self.train_config.lr, not self.model_config.freeze_head)
        tc = self.train_config
        steps = tc.epochs * math.ceil(len(ids) / tc.batch_size)
        return _AutogradStep(self.model, self._optimizer(), lambda rows: self._tensors(rows, train),
                             loss_weight, tc.grad_clip, label_smoothing=tc.label_smoothing,
                             lr_factor=lr_factor(tc.lr_schedule, tc.warmup, steps, budget=tc.time_budget,
                                                 clock=None if clock is None else clock.now,
                                                 reference_steps=tc.lr_reference_steps),
                             average_steps=tc.average_epochs * steps / tc.epochs)

    def _wait_while_paused(self, clock: _TrainingClock) -> None:
        """Block until :meth:`resume` (or :meth:`stop`); the wait is not training time."""
        clock.pause()
        self._idle.set()
        self._running.wait()
        self._idle.clear()
        clock.resume()

    def _diverge(self, kept: _KeptWeights, what: str) -> None:
        """Roll back to the last good weights, and say what happened and what to try."""
        lr = self.train_config.lr
        self.model.load_state_dict(kept.last_good)
        self.history.status = "diverged"
        self.history.message = (f"{what} with learning rate {lr:g} — try a lower learning rate, e.g. {lr / 10:g}; "
                                 "the last good weights are kept")

    def _epoch_record(self, epoch: int, tally: _EpochTally, clock: _TrainingClock,
                      loss_weight: torch.Tensor | None) -> EpochRecord:
        val_loss, val_acc, val = None, None, None
        if self._val[0]:
            val_loss, val_acc, preds = self.evaluate_encoded(self._val, weight=loss_weight)
            val = classification_metrics(self._val[1], preds, self.label_names)
        return EpochRecord(epoch, tally.loss_sum / tally.seen, tally.correct / tally.seen, val_loss, val_acc,
                           round(clock.elapsed, 4), tally.seen / max(tally.seconds, 1e-9),
                           val.macro_f1 if val else None, val.confusion if val else None,
                           round(tally.steps / tally.planned, 4) if tally.planned else 1.0)

    def _probes_due(self, epoch: int) -> bool:
        """Whether to record the probes' attention after ``epoch``: at most MAX_PROBE_RECORDS times, and the end."""
        tc = self.train_config
        every = max(1, tc.epochs // MAX_PROBE_RECORDS)
        return epoch % every == 0 or epoch == tc.epochs or self._stop.is_set() or self.history.status != "running"

    def _finish(self, kept: _KeptWeights, snapshots: _Snapshots, name: str) -> Run:
        """Name how the run ended, load the weights it keeps, and hand them over on the CPU, as a run."""
        from attention_core.runs import Run  # (runs imports this module)

        tc, h, model = self.train_config, self.history, self.model
        if tc.snapshots and h.epochs:  # stopped or diverged early: the time-lapse reaches the last epoch
            if h.epochs[-1].epoch < tc.epochs:
                snapshots.spread(h.epochs[-1].epoch)
            snapshots.take(h.epochs[-1].epoch, model)  # (a diverged run's model is its last good epoch)
        if h.status == "running":
            h.status = "stopped" if self._stop.is_set() else "finished"
            if h.status == "stopped":
                h.message = f"stopped by the user after {len(h.epochs)} epoch(s)"
        if kept.best is not None:
            model.load_state_dict(kept.best)  # the best weights by validation loss (or macro-F1)
            if tc.snapshots:  # the time-lapse shows the kept model too
                snapshots.take(h.kept_epoch, model)
        model.zero_grad(set_to_none=True)
        model.eval().cpu()  # runs are saved and served from the CPU
        return Run(model, self.encoder, self.model_config, tc, tuple(self.label_names), h, name,
                   validation=(tuple(self.val_set.texts), tuple(self.val_set.labels)), snapshots=snapshots.weights)


def evaluate_model(model: AttentionClassifier, encoder: TextEncoder, dataset: TextDataset, label_names: Sequence[str]):
    """Predict every row of ``dataset`` (labels matched by name) and score it."""
    names = [dataset.label_names[y] for y in dataset.labels]
    return evaluate_texts(model, encoder, dataset.texts, names, label_names)


def predict_probabilities(
    model: AttentionClassifier, encoder: TextEncoder, texts: Sequence[str], batch_size: int = 256, *,
    edit_attention: AttentionEdit | None = None,
) -> np.ndarray:
    """Class probabilities of many texts at once, shape (N, C), in batches of similar length.

    A row with no known word is NaN: there is nothing to predict from (``Run.predict`` raises
    ``EmbeddingError`` for such a sentence). ``edit_attention``: as for ``model.forward``.
    """
    return batches_probabilities(model, length_batches(encoder, texts, batch_size), len(texts),
                                 edit_attention=edit_attention)


def length_batches(encoder: TextEncoder, texts: Sequence[str], batch_size: int = 256, *,
                   encoded: Sequence[Encoded] | None = None) -> list[tuple[list[int], Batch]]:
    """The texts that have a known word, encoded, sorted by length and collated: (their indices, the batch) each.
    Encoding once serves many passes over the same texts (the faithfulness report's head knock-outs); ``encoded``:
    the texts already encoded by ``encoder``."""
    encoded = [(i, enc) for i, enc in enumerate(encoded if encoded is not None else map(encoder.encode, texts))
               if enc.readable]
    encoded.sort(key=lambda ie: len(ie[1].ids))
    chunks = [encoded[start : start + batch_size] for start in range(0, len(encoded), batch_size)]
    return [([i for i, _ in chunk], encoder.collate([enc for _, enc in chunk])) for chunk in chunks]


@torch.no_grad()
def batches_probabilities(model: AttentionClassifier, batches: Sequence[tuple[list[int], Batch]], n: int, *,
                          edit_attention: AttentionEdit | None = None) -> np.ndarray:
    """Class probabilities (n, C) of :func:`length_batches`' batches, NaN for the rows they leave out."""
    out = np.full((n, model.cfg.n_classes), np.nan)
    with evaluating(model):  # as run_sentence runs one sentence: model.forward, in eval mode, mode given back
        for rows, batch in batches:
            logits, _ = model(batch.ids, batch.mask, batch.extra, batch.casing, need_weights=False,
                              edit_attention=edit_attention)
            out[rows] = torch.softmax(logits, -1).double().numpy()
    return out


def evaluate_texts(
    model: AttentionClassifier, encoder: TextEncoder, texts: Sequence[str], labels: Sequence[str], label_names: Sequence[str]
):
    """Accuracy, macro F1 and confusion of ``model`` on texts with their label names.

    Rows with no known word cannot be predicted and are left out.
    """
    index = {name: i for i, name in enumerate(label_names)}
    missing = sorted(set(labels) - set(index))
    if missing:
        raise DataError(
            f"labels {missing} are not among the model's labels {list(label_names)}",
            "evaluate on data with the same label names the model was trained on (or pick the right --label-col)",
        )
    probs = predict_probabilities(model, encoder, texts)
    return metrics_from_probabilities(probs, [index[y] for y in labels], label_names)


def metrics_from_probabilities(probs: np.ndarray, y_true: Sequence[int], label_names: Sequence[str]):
    """Accuracy, macro F1 and confusion of predicted probabilities (N, C) against label indices.

    NaN rows (no known word, see :func:`predict_probabilities`) are left out.
    """
    kept = ~np.isnan(probs).any(axis=1)
    truth = [y for y, k in zip(y_true, kept, strict=True) if k]
    return classification_metrics(truth, probs[kept].argmax(axis=1).tolist(), list(label_names))
