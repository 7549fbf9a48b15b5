"""Real training jobs that are over in a moment, for the tests of runner.jobs, runner.queue and the journal."""

from __future__ import annotations

from attention_core import ModelConfig, TrainConfig, dataset_from_lists, load_embeddings
from attention_core.training import TrainerSpec
from runner.jobs import TrainingJob

TEXTS = ["a great movie", "i love it", "wonderful fun", "a terrible movie", "i hate it", "awful boring"]
LABELS = ["pos", "pos", "pos", "neg", "neg", "neg"]
TINY = ModelConfig(n_layers=1, n_heads=2, d_model=16, d_ff=32, dropout=0.0)


def tiny_spec(epochs: int, texts: list[str] = TEXTS) -> TrainerSpec:
    return TrainerSpec(TINY, TrainConfig(epochs=epochs, batch_size=2, val_fraction=0.0, unknown="drop"),
                       dataset_from_lists(texts, LABELS[: len(texts)]), load_embeddings())


def wait_for_epochs(job: TrainingJob, n: int) -> None:
    while job.status().epochs_recorded < n:
        job.heartbeat()
        job.join(0.05)
