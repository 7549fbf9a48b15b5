"""Runs: a trained model with everything needed to load and explain it again.

A run is saved as a run folder (its files: :mod:`attention_core.run_folders`, which owns every
folder operation that needs no weights) plus, optionally, ``snapshots.safetensors``: the trained
weights at a few epochs, for the time-lapse of any sentence (tensors named
``epoch<N>/<parameter>``, float16).

Saving is atomic (:func:`attention_core.run_folders.write_run_folder`). Loading checks the format
tag, every file, the configs and the tensor names and shapes.
"""

from __future__ import annotations

import copy
import json
import os
import re
import time
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from attention_core.embeddings import EmbeddingSource, load_embeddings
from attention_core.encoding import TextEncoder
from attention_core.errors import ConfigError, InputError, RunError
from attention_core.model import AttentionClassifier, AttentionEdit, ModelConfig
from attention_core.run_folders import (
    FORMAT,
    RUN_FILES,
    SNAPSHOT_FILE,
    VERSION,
    claim_free_folder,
    missing_run_hint,
    read_json,
    write_run_folder,
)
from attention_core.sentence import SentenceOutput, run_encoded, run_sentence
from attention_core.training import History, TrainConfig, predict_probabilities


@dataclass
class Prediction:
    label: str
    probabilities: dict[str, float]
    tokens: list[str]  # as fed to the model
    unknown_tokens: list[str]
    attention: list  # [layer][head][query][key]
    notes: list[str]

    def to_dict(self) -> dict:
        return {
            "label": self.label,
            "probabilities": self.probabilities,
            "tokens": self.tokens,
            "unknown_tokens": self.unknown_tokens,
            "attention": self.attention,
            "notes": self.notes,
        }


@dataclass
class Run:
    """A trained model, its encoder, configs, labels and history: what ``Trainer.run()`` gives, and a run folder holds."""

    model: AttentionClassifier
    encoder: TextEncoder
    model_config: ModelConfig
    train_config: TrainConfig
    label_names: tuple[str, ...]
    history: History
    name: str = "run"
    path: Path | None = None
    validation: tuple[tuple[str, ...], tuple[int, ...]] = ((), ())  # texts, label ids
    snapshots: dict[int, dict[str, torch.Tensor]] = field(default_factory=dict)  # epoch → trained weights

    def forward_over_training(self, text: str) -> list[tuple[int, SentenceOutput]]:
        """``text`` through the model as it was at each snapshot epoch: [(epoch, what that model made
        of it)], oldest first (empty for a run without snapshots). The sentence is encoded once.

        Raises ``EmbeddingError`` if no word of ``text`` is known.
        """
        encoded, batch = self.encoder.encode_for_model(text)
        model = copy.deepcopy(self.model)
        base = None
        if self.model_config.base is not None and self.snapshots:  # what a snapshot leaves out is the base's
            from attention_core.pretrained import base_folder, read_checkpoint

            cfg = self.model_config
            trained = {k for weights in self.snapshots.values() for k in weights}
            left_out = trained - set(self.snapshots[min(self.snapshots)])  # epoch 0 keeps the new head alone
            base = read_checkpoint(base_folder(cfg.base), n_classes=cfg.n_classes, pooling=cfg.pooling).state_dict(
                only=left_out)
        out = []
        for epoch in sorted(self.snapshots):
            if base is not None:
                model.load_state_dict(base, strict=False)
            model.load_state_dict({k: v.float() for k, v in self.snapshots[epoch].items()}, strict=False)
            out.append((epoch, run_encoded(model, encoded, batch)))
        return out

    def forward(self, text: str, *, edit_attention: AttentionEdit | None = None) -> SentenceOutput:
        """Encode and run one sentence: its encoding, probabilities (C,) and attention (L, H, T, T).

        ``edit_attention`` intervenes on the attention (head knock-out:
        :func:`attention_core.faithfulness.knock_out`). Raises ``EmbeddingError`` if no word of
        ``text`` is known.
        """
        return run_sentence(self.model, self.encoder, text, edit_attention=edit_attention)

    def predict_proba(self, texts: Sequence[str], batch_size: int = 256) -> np.ndarray:
        """Class probabilities of many sentences at once, shape (N, C); NaN rows had no known word."""
        return predict_probabilities(self.model, self.encoder, texts, batch_size)

    def predict(self, text: str, *, edit_attention: AttentionEdit | None = None) -> Prediction:
        """Label, class probabilities, tokens and every attention map for one sentence.

        Raises ``EmbeddingError`` if no word of ``text`` is known.
        """
        out = self.forward(text, edit_attention=edit_attention)
        enc, p = out.encoded, out.probabilities.tolist()
        return Prediction(
            label=self.label_names[int(out.probabilities.argmax())],
            probabilities={name: round(v, 6) for name, v in zip(self.label_names, p, strict=True)},
            tokens=list(enc.tokens),
            unknown_tokens=list(enc.unknown),
            attention=out.attention.tolist(),
            notes=enc.notes,
        )


def _config_dict(run: Run, name: str) -> dict:
    return {
        "format": FORMAT,
        "version": VERSION,
        "name": name,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "labels": list(run.label_names),
        "model": run.model_config.to_dict(),
        "train": run.train_config.to_dict(),
    }


def save_run(run: Run, path: str | os.PathLike, *, overwrite: bool = False, name: str | None = None) -> Path:
    """Write ``run`` to the directory ``path`` atomically, named ``name`` (default: ``run.name``).

    ``path`` may be missing or an empty folder; a folder holding a run is replaced only with
    ``overwrite=True``. Anything else there (a file, a link, a folder with other files) is
    refused with a ``RunError``, before anything is written, and left as it was.
    """

    def write(folder: Path) -> None:
        (folder / "config.json").write_text(json.dumps(_config_dict(run, name or run.name), indent=2))
        (folder / "vocab.json").write_text(json.dumps(run.encoder.to_dict()))
        history = run.history.to_dict()
        history["validation"] = {"texts": list(run.validation[0]), "labels": list(run.validation[1])}
        (folder / "history.json").write_text(json.dumps(history))
        save_file(_weights_to_save(run), str(folder / "model.safetensors"), metadata={"format": FORMAT})
        if run.snapshots:
            snaps = {f"epoch{e}/{k}": v.contiguous() for e, weights in run.snapshots.items() for k, v in weights.items()}
            save_file(snaps, str(folder / SNAPSHOT_FILE), metadata={"format": FORMAT})

    run.path = write_run_folder(path, write, overwrite=overwrite)
    return run.path


def _weights_to_save(run: Run) -> dict[str, torch.Tensor]:
    """A run's weights file: every weight of a small model; of a fine-tuned pretrained encoder only the weights
    training changed (the others are its base checkpoint's, which the run names and never copies)."""
    if run.model_config.base is None:
        return {k: v.detach().contiguous() for k, v in run.model.state_dict().items()}
    return {k: p.detach().contiguous() for k, p in run.model.named_parameters() if p.requires_grad}


def save_new_run(run: Run, runs_dir: str | os.PathLike, name: str) -> Path:
    """Save under ``runs_dir / name``, or ``name-2``, ``name-3``… — never over anything. The run
    is then named after its folder."""
    path = claim_free_folder(Path(runs_dir), name)
    try:
        return save_run(run, path, name=path.name)  # replaces the empty claimed folder
    except BaseException:
        with suppress(OSError):
            path.rmdir()
        raise


def load_run(path: str | os.PathLike, *, embedding_file: str | None = None) -> Run:
    """Load and check a run directory. ``embedding_file`` overrides a moved word-vector file.

    ``path`` may also name a pretrained checkpoint (``"minilm"``, or a BERT-family checkpoint folder): its encoder
    with an untrained head (:func:`attention_core.pretrained.pretrained_run`).
    """
    from attention_core import pretrained

    if pretrained.is_checkpoint(path):
        return pretrained.pretrained_run(path)
    path = Path(path)
    if not path.is_dir():
        raise RunError(f"run directory not found: {path}", missing_run_hint(path))
    missing = [f for f in RUN_FILES if not (path / f).is_file()]
    if missing:
        raise RunError(f"{path} is not a complete run (missing {', '.join(missing)})", "re-train or re-download it")
    cfg = read_json(path / "config.json")
    if cfg.get("format") != FORMAT:
        raise RunError(f"{path / 'config.json'} is not an Attention Playground run", "point at a run directory")
    if cfg.get("version") != VERSION:
        raise RunError(f"run format version {cfg.get('version')!r} is not supported", f"this version reads {VERSION}")
    vocab = read_json(path / "vocab.json")
    try:
        model_config = ModelConfig.from_dict(cfg["model"])
        train_config = TrainConfig.from_dict(cfg["train"])
        labels = tuple(str(x) for x in cfg["labels"])
        if model_config.base is not None:
            return _load_fine_tuned(path, cfg, vocab, model_config, train_config, labels)
        source = EmbeddingSource.from_dict(vocab["embedding"])
        if embedding_file:
            source = EmbeddingSource("file", embedding_file, source.binary, source.limit)
        embeddings = load_embeddings(source)
        encoder = TextEncoder(
            embeddings, [str(w) for w in vocab["words"]],
            tokenizer=vocab["tokenizer"], unknown=vocab["unknown"], max_tokens=int(vocab["max_tokens"]),
            casing=model_config.casing,
        )
        history_data = read_json(path / "history.json")
        validation = history_data.pop("validation", {"texts": [], "labels": []})
        history = History.from_dict(history_data)
    except ConfigError as err:
        raise RunError(f"{path} has an invalid config: {err.message}", err.hint) from err
    except InputError:
        raise
    except (KeyError, TypeError, ValueError) as err:
        raise RunError(f"{path} has a malformed config ({type(err).__name__}: {err})", "re-train the run") from err
    if len(labels) != model_config.n_classes or encoder.vocab_size != model_config.vocab_size:
        raise RunError(f"{path}: labels/vocabulary do not match the model config", "re-train the run")
    if embeddings.dim != model_config.embedding_dim:
        raise RunError(
            f"the run needs {model_config.embedding_dim}-d word vectors but {source.describe()} has {embeddings.dim}",
            "load the run with the word vectors it was trained with",
        )
    try:
        state = load_file(str(path / "model.safetensors"))
    except Exception as err:  # safetensors raises its own error types
        raise RunError(f"{path / 'model.safetensors'} cannot be read ({err})", "re-train the run") from err
    model = AttentionClassifier(model_config)
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    got = {k: tuple(v.shape) for k, v in state.items()}
    if expected != got:
        diff = sorted(set(expected.items()) ^ set(got.items()))[:3]
        raise RunError(f"{path / 'model.safetensors'} does not fit the config (e.g. {diff})", "re-train the run")
    model.load_state_dict(state)
    model.eval()
    snapshots = _load_snapshots(path / SNAPSHOT_FILE, model) if (path / SNAPSHOT_FILE).is_file() else {}
    val = (tuple(validation.get("texts", [])), tuple(int(x) for x in validation.get("labels", [])))
    return Run(model, encoder, model_config, train_config, labels, history, str(cfg.get("name", path.name)), path, val,
               snapshots)


def _load_fine_tuned(path: Path, cfg: dict, vocab: dict, model_config: ModelConfig, train_config: TrainConfig,
                     labels: tuple[str, ...]) -> Run:
    """A run fine-tuned from a pretrained checkpoint: the checkpoint's weights, then the run's own (every weight
    training changed, and nothing else) over them."""
    from attention_core.pretrained import load_base

    if len(labels) != model_config.n_classes:
        raise RunError(f"{path}: labels do not match the model config", "re-train the run")
    model, encoder = load_base(model_config, max_tokens=int(vocab["max_tokens"]))
    try:
        state = load_file(str(path / "model.safetensors"))
    except Exception as err:  # safetensors raises its own error types
        raise RunError(f"{path / 'model.safetensors'} cannot be read ({err})", "re-train the run") from err
    expected = {k: tuple(p.shape) for k, p in model.named_parameters() if p.requires_grad}
    got = {k: tuple(v.shape) for k, v in state.items()}
    if expected != got:
        diff = sorted(set(expected.items()) ^ set(got.items()))[:3]
        raise RunError(f"{path / 'model.safetensors'} does not fit the config (e.g. {diff})", "re-train the run")
    model.load_state_dict(state, strict=False)
    model.eval()
    history_data = read_json(path / "history.json")
    validation = history_data.pop("validation", {"texts": [], "labels": []})
    history = History.from_dict(history_data)
    snapshots = _load_snapshots(path / SNAPSHOT_FILE, model) if (path / SNAPSHOT_FILE).is_file() else {}
    val = (tuple(validation.get("texts", [])), tuple(int(x) for x in validation.get("labels", [])))
    return Run(model, encoder, model_config, train_config, labels, history, str(cfg.get("name", path.name)), path, val,
               snapshots)


def relink_embeddings(path: str | os.PathLike, embedding_file: str) -> Run:
    """Point the run at ``path`` to its word-vector file's new place, once that file is checked
    to fit the run (loaded with it, as :func:`load_run` does); only ``vocab.json`` changes.

    Example:
        >>> run = relink_embeddings("runs/mine", "/data/vectors/glove.6B.100d.txt")  # doctest: +SKIP
    """
    path = Path(path)
    run = load_run(path, embedding_file=embedding_file)
    vocab = read_json(path / "vocab.json")
    vocab["embedding"] = run.encoder.embeddings.source.to_dict()  # its absolute path, the same limit
    tmp = path / ".vocab.json.relinking"
    tmp.write_text(json.dumps(vocab))
    os.replace(tmp, path / "vocab.json")
    return run


def _load_snapshots(file: Path, model: AttentionClassifier) -> dict[int, dict[str, torch.Tensor]]:
    """Read and check a run's weight snapshots: every tensor is one of the model's parameters, in shape."""
    try:
        tensors = load_file(str(file))
    except Exception as err:  # safetensors raises its own error types
        raise RunError(f"{file} cannot be read ({err})", "delete that file (the run loads without it) or re-train") from err
    params = {k: tuple(p.shape) for k, p in model.named_parameters()}
    snapshots: dict[int, dict[str, torch.Tensor]] = {}
    for key, tensor in tensors.items():
        match = re.fullmatch(r"epoch(\d+)/(.+)", key)
        if not match or match[2] not in params or tuple(tensor.shape) != params[match[2]] or not tensor.is_floating_point():
            raise RunError(f"{file} has a tensor {key!r} that does not fit the model",
                           "delete that file (the run loads without it) or re-train")
        snapshots.setdefault(int(match[1]), {})[match[2]] = tensor
    return snapshots

