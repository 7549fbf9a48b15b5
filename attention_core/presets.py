"""Named model + training configurations: ``seed`` (the Julia post) and ``default``."""

from __future__ import annotations

from dataclasses import fields, replace

from attention_core.errors import ConfigError
from attention_core.model import DEFAULT_MODEL, SEED_MODEL, ModelConfig
from attention_core.training import DEFAULT_TRAIN, SEED_TRAIN, TrainConfig

PRESETS: dict[str, tuple[ModelConfig, TrainConfig]] = {
    "default": (DEFAULT_MODEL, DEFAULT_TRAIN),
    "seed": (SEED_MODEL, SEED_TRAIN),
}

PRESET_DESCRIPTIONS = {
    "default": "a small transformer encoder for a CPU: 2 layers × 4 heads, d=64, sinusoidal positions, "
    "fine-tuned GloVe, no dropout, AdamW, 10 epochs",
    "seed": "the Julia post exactly: GloVe 50d + position index, 1 head, no residual/norm/FFN, "
    "frozen linear head, mean pooling, per-example SGD lr 0.001, 1000 epochs",
}


def preset(name: str, **overrides: object) -> tuple[ModelConfig, TrainConfig]:
    """The named preset with ``overrides`` applied to whichever config has each field.

    Example:
        >>> model_cfg, train_cfg = preset("default", n_layers=1, epochs=3)
    """
    if name not in PRESETS:
        raise ConfigError(f"unknown preset {name!r}", f"choose one of {', '.join(PRESETS)}")
    model_cfg, train_cfg = PRESETS[name]
    model_fields = {f.name for f in fields(ModelConfig)}
    train_fields = {f.name for f in fields(TrainConfig)}
    unknown = set(overrides) - model_fields - train_fields
    if unknown:
        raise ConfigError(f"unknown setting(s) {sorted(unknown)}", "see ModelConfig and TrainConfig for the names")
    model_cfg = replace(model_cfg, **{k: v for k, v in overrides.items() if k in model_fields})
    train_cfg = replace(train_cfg, **{k: v for k, v in overrides.items() if k in train_fields})
    return model_cfg, train_cfg
