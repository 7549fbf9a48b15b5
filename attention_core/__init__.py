"""attention_core: the engine of Attention Playground (PyTorch; no UI imports).

Modules, in the order data flows through them:

* :mod:`~attention_core.configs` — ``ModelConfig``, ``TrainConfig`` (torch-free)
* :mod:`~attention_core.history` — ``History``, ``EpochRecord``: what a training records (torch-free)
* :mod:`~attention_core.map_names` — the names of attention maps and heads ("Layer 1", "pooling.1") (torch-free)
* :mod:`~attention_core.embeddings` — GloVe 6B 50d (or a user's file) as gensim KeyedVectors
* :mod:`~attention_core.text` — GloVe-style tokenizer
* :mod:`~attention_core.data` — CSV reading, column detection, validation report
* :mod:`~attention_core.encoding` — tokens → ids of a run vocabulary, padding
* :mod:`~attention_core.attention` — ``attention_steps`` and ``MultiHeadAttention``
* :mod:`~attention_core.model` — ``ModelConfig`` and ``AttentionClassifier``
* :mod:`~attention_core.training` — ``TrainConfig``, ``Trainer``, ``History``
* :mod:`~attention_core.presets` — ``seed`` (the Julia post) and ``default``
* :mod:`~attention_core.run_folders` — run folders without torch: list, summaries, rename, delete, zip, journal
* :mod:`~attention_core.runs` — ``Run``: save and load a trained model (safetensors + JSON); predict

Importing the package imports none of them: each name below is imported from its module when
first used (PEP 562), so ``import attention_core.history`` does not load torch, and the home
page can draw its saved preview before torch is loaded.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_WHERE = {  # name → the module that defines it
    **dict.fromkeys(["AttentionSteps", "MultiHeadAttention", "attention_steps", "causal_mask", "padding_mask"], "attention"),
    **dict.fromkeys(["DatasetReport", "TextDataset", "dataset_from_lists", "load_dataset"], "data"),
    **dict.fromkeys(["Embeddings", "EmbeddingSource", "load_embeddings"], "embeddings"),
    "TextEncoder": "encoding",
    **dict.fromkeys(["ConfigError", "DataError", "EmbeddingError", "InputError", "RunError"], "errors"),
    **dict.fromkeys(["Metrics", "classification_metrics"], "metrics"),
    **dict.fromkeys(["ModelConfig", "TrainConfig"], "configs"),
    **dict.fromkeys(["EpochRecord", "History", "StepEvent"], "history"),
    "AttentionClassifier": "model",
    **dict.fromkeys(["PRESETS", "preset"], "presets"),
    **dict.fromkeys(["Prediction", "Run", "load_run", "save_new_run", "save_run"], "runs"),
    "list_runs": "run_folders",
    "tokenize": "text",
    **dict.fromkeys(["Trainer", "evaluate_model"], "training"),
}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'attention_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"attention_core.{module}"), name)
    globals()[name] = value  # the next lookup does not come here
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])


if TYPE_CHECKING:  # for type checkers and editors: the same names, imported eagerly
    from attention_core.attention import AttentionSteps, MultiHeadAttention, attention_steps, causal_mask, padding_mask
    from attention_core.configs import ModelConfig, TrainConfig
    from attention_core.data import DatasetReport, TextDataset, dataset_from_lists, load_dataset
    from attention_core.embeddings import Embeddings, EmbeddingSource, load_embeddings
    from attention_core.encoding import TextEncoder
    from attention_core.errors import ConfigError, DataError, EmbeddingError, InputError, RunError
    from attention_core.history import EpochRecord, History, StepEvent
    from attention_core.metrics import Metrics, classification_metrics
    from attention_core.model import AttentionClassifier
    from attention_core.presets import PRESETS, preset
    from attention_core.run_folders import list_runs
    from attention_core.runs import Prediction, Run, load_run, save_new_run, save_run
    from attention_core.text import tokenize
    from attention_core.training import Trainer, evaluate_model
