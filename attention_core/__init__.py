"""attention_core: the engine of Attention Playground (PyTorch; no UI imports).

Modules, in the order data flows through them:

* :mod:`~attention_core.embeddings` — GloVe 6B 50d (or a user's file) as gensim KeyedVectors
* :mod:`~attention_core.text` — GloVe-style tokenizer
* :mod:`~attention_core.data` — CSV reading, column detection, validation report
* :mod:`~attention_core.encoding` — tokens → ids of a run vocabulary, padding
* :mod:`~attention_core.attention` — ``attention_steps`` and ``MultiHeadAttention``
* :mod:`~attention_core.model` — ``ModelConfig`` and ``AttentionClassifier``
* :mod:`~attention_core.training` — ``TrainConfig``, ``Trainer``, ``History``
* :mod:`~attention_core.presets` — ``seed`` (the Julia post) and ``default``
* :mod:`~attention_core.runs` — run folders: save, load, list, rename, delete (safetensors + JSON); predict
"""

from attention_core.attention import AttentionSteps, MultiHeadAttention, attention_steps, causal_mask, padding_mask
from attention_core.data import DatasetReport, TextDataset, dataset_from_lists, load_dataset
from attention_core.embeddings import Embeddings, EmbeddingSource, load_embeddings
from attention_core.encoding import TextEncoder
from attention_core.errors import ConfigError, DataError, EmbeddingError, InputError, RunError
from attention_core.metrics import Metrics, classification_metrics
from attention_core.model import AttentionClassifier, ModelConfig
from attention_core.presets import PRESETS, preset
from attention_core.runs import Prediction, Run, list_runs, load_run, save_new_run, save_run
from attention_core.text import tokenize
from attention_core.training import EpochRecord, History, StepEvent, TrainConfig, Trainer, TrainResult, evaluate_model

__all__ = [
    "PRESETS", "AttentionClassifier", "AttentionSteps", "ConfigError", "DataError", "DatasetReport",
    "EmbeddingError", "EmbeddingSource", "Embeddings", "EpochRecord", "History", "InputError", "Metrics",
    "ModelConfig", "MultiHeadAttention", "Prediction", "Run", "RunError", "StepEvent", "TextDataset",
    "TextEncoder", "TrainConfig", "TrainResult", "Trainer", "attention_steps", "causal_mask",
    "classification_metrics", "dataset_from_lists", "evaluate_model", "list_runs", "load_dataset",
    "load_embeddings", "load_run", "padding_mask", "preset", "save_new_run", "save_run", "tokenize",
]
