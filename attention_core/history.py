"""What a training records: an epoch record, a step event, the probe sentences' attention, a history.

The one record of a training, from the :class:`~attention_core.training.Trainer` to the chart: the
trainer appends to a :class:`History`; the training process sends its new parts as they come
(``runner.protocol``); the server's job keeps a ``History`` of its own with them, which the live
chart, the results and the sidebar draw; a saved run's ``history.json`` is the same object.
Torch-free (the home page and the runs list read it before torch is loaded).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

from attention_core.configs import TrainConfig


@dataclass
class EpochRecord:
    epoch: int
    train_loss: float
    train_accuracy: float
    val_loss: float | None
    val_accuracy: float | None
    seconds: float  # training seconds so far (pauses excluded)
    examples_per_second: float  # this epoch's throughput
    val_macro_f1: float | None = None  # macro-F1 on the validation rows (None without them, and in older runs)
    val_confusion: list[list[int]] | None = None  # (C, C) validation rows by true (row) and predicted label; as macro-F1
    share: float = 1.0  # of the epoch's steps taken: less when a Stop or the time budget ended it part-way

    @property
    def at(self) -> float:
        """Where it ends on an epoch axis: ``epoch`` for a whole epoch, 0.44 for the first 44 % of the first.

        Example:
            >>> EpochRecord(1, 0.6, 0.7, None, None, 30.0, 40.0, share=0.44).at, EpochRecord(3, 0.5, 0.8, None, None, 9.0, 40.0).at
            (0.44, 3.0)
        """
        return self.epoch - 1 + self.share


@dataclass
class StepEvent:
    epoch: int
    step: int  # global step, from 1
    steps_per_epoch: int
    loss: float
    examples_seen: int
    seconds: float

    @property
    def step_in_epoch(self) -> int:
        """This step's place in its epoch, from 1 (0 for an epoch without steps)."""
        return (self.step - 1) % self.steps_per_epoch + 1 if self.steps_per_epoch else 0


@dataclass(frozen=True)
class ProbeSentence:
    """One probe sentence as the model read it after an epoch."""

    text: str
    tokens: list[str]
    probabilities: list[float]  # (C,); empty in runs saved before they were recorded
    attention: list  # (M, H, T, T): every attention map (M = layers, + the pooling query's), rounded to 4 places


@dataclass(frozen=True)
class ProbeRecord:
    """The probe sentences' attention after ``epoch`` (0: before training)."""

    epoch: int
    sentences: list[ProbeSentence]

    @classmethod
    def from_dict(cls, data: dict) -> ProbeRecord:
        return cls(int(data["epoch"]), [ProbeSentence(s["text"], list(s["tokens"]), list(s.get("probabilities", [])),
                                                      s["attention"]) for s in data.get("sentences", [])])

    def sentence(self, text: str) -> ProbeSentence | None:
        """The probe ``text`` in this record, if it was recorded."""
        return next((s for s in self.sentences if s.text == text), None)


@dataclass
class History:
    """Everything a run recorded; JSON round-trips through ``to_dict`` / ``from_dict``."""

    epochs: list[EpochRecord] = field(default_factory=list)
    step_losses: list[float] = field(default_factory=list)
    probes: list[ProbeRecord] = field(default_factory=list)  # at epoch 0, then at most MAX_PROBE_RECORDS epochs
    kept_epoch: int | None = None  # the epoch whose weights the run keeps (best validation loss or macro-F1; else the last)
    status: str = "running"  # running | finished | stopped | diverged | time budget
    message: str = ""
    seconds: float = 0.0
    examples_seen: int = 0
    skipped_rows: int = 0  # training rows with no known word (dropped)

    @property
    def examples_per_second(self) -> float:
        return self.examples_seen / self.seconds if self.seconds > 0 else 0.0

    @property
    def kept_record(self) -> EpochRecord | None:
        """The record of the epoch whose weights the run keeps; None before the first epoch."""
        return next((e for e in self.epochs if e.epoch == self.kept_epoch), None)

    def summary(self) -> dict:
        """The figures ``train`` prints, of the epoch whose weights the run keeps."""
        rec = self.kept_record
        return {
            "status": self.status,
            "train_loss": rec.train_loss if rec else None,
            "val_loss": rec.val_loss if rec else None,
            "val_accuracy": rec.val_accuracy if rec else None,
            "best_epoch": self.kept_epoch,
            "epochs": len(self.epochs),
            "seconds": round(self.seconds, 3),
            "examples_per_second": round(self.examples_per_second, 1),
            "message": self.message,
        }

    def to_dict(self) -> dict:
        """Plain values for JSON; the kept epoch under ``best_epoch``, its name in run files; an epoch's ``share``
        only where it was cut short (the files of runs saved before it had none)."""
        data = {("best_epoch" if k == "kept_epoch" else k): v for k, v in asdict(self).items()}
        for e in data["epochs"]:
            if e["share"] == 1.0:
                del e["share"]
        return data

    @classmethod
    def from_dict(cls, data: dict) -> History:
        data = dict(data)
        data["epochs"] = epochs = [EpochRecord(**e) for e in data.get("epochs", [])]
        kept = data.pop("best_epoch", None)
        if epochs and (kept is None or epochs[-1].val_loss is None):
            kept = epochs[-1].epoch  # runs saved without validation rows named the lowest training loss, kept the last
        data["kept_epoch"] = kept
        data["probes"] = [ProbeRecord.from_dict(p) for p in data.get("probes", [])]
        return cls(**{k: v for k, v in data.items() if k in {f.name for f in fields(cls)}})


def patience_stop(status: str, epochs_trained: int, train_config: TrainConfig) -> str:
    """That a run's patience ended it, in a few words; "" for a run that its patience did not end.

    A run that finished before its planned last epoch was ended by its patience (a Stop, the time
    budget or a divergence give it another status). The trainer's ``History.message`` says why.

    Example:
        >>> patience_stop("finished", 12, TrainConfig(epochs=40, patience=4))
        'stopped by patience 4 after 12 of 40 planned epochs'
    """
    if status != "finished" or train_config.patience is None or not 0 < epochs_trained < train_config.epochs:
        return ""
    return f"stopped by patience {train_config.patience} after {epochs_trained} of {train_config.epochs} planned epochs"
