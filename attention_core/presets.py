"""Named model + training configurations, each defined once: ``default`` and ``seed`` (the Julia post).

A :class:`Preset` holds everything that names and describes one: the Train page's label and
caption (``ui/forms.py``), the one-line summary in the CLI's ``--preset`` help and in the README's
table (:func:`markdown_table`; ``tests/core/test_presets.py`` keeps the README in step), and the two
configs. Adding a preset is adding one entry to :data:`PRESETS`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from attention_core.errors import ConfigError
from attention_core.model import ModelConfig
from attention_core.training import TrainConfig


@dataclass(frozen=True)
class Preset:
    """One named configuration and the words that present it."""

    name: str  # what the CLI's --preset and preset() take
    label: str  # the Train page's radio option
    summary: str  # one line: the CLI's --preset help and the README's table
    help: str  # the Train page's caption under the radio
    model: ModelConfig
    train: TrainConfig


DEFAULT = Preset(
    name="default",
    label="Default",
    summary="a small transformer encoder for a CPU: 2 layers × 4 heads, d=64, sinusoidal positions, a 3-word window "
    "before attention, fine-tuned GloVe that also reads capitals, attention pooling, dropout 0.1, AdamW, up to 40 epochs with patience 4",
    help="A small transformer encoder: each word's vector first mixed with its two neighbours' (a 3-word window), "
    "then 2 attention layers × 4 heads (model dim 64, sinusoidal positions, residuals, layer norm, feed-forward), and "
    "a pooling attention that weighs the words for the label (each word as it entered the layers). Fine-tuned GloVe "
    "vectors (plus a learned vector for a word "
    "written Capitalised, in CAPITALS or mIxed: GloVe's are lower-case), dropout 0.1 on words, vectors "
    "and layers, label smoothing 0.1, AdamW; stops when the validation loss has not improved for 4 epochs (at most "
    "40); rare classes shown more often. Learns the UCI set in ~10 s.",
    # Chosen on validation splits (benchmarks/README.md, "Model quality"): regularised and stopped by
    # patience instead of memorising the training set in a few epochs; the pooling attention
    # is the map that decides the label; the window (started at 0) reads word pairs as TF-IDF's bigrams do;
    # casing tells "What is BPH ?" (an abbreviation) from "What is a fungus ?"; the pooling query
    # compares the words as they entered the layers, so its map picks words.
    model=ModelConfig(dropout=0.1, word_dropout=0.1, embedding_dropout=0.1, pooling="attention", local_conv=3,
                      local_conv_zero_init=True, casing=True, pooling_keys="input"),
    train=TrainConfig(
        epochs=40,
        patience=4,
        label_smoothing=0.1,
        sampling="auto",
        probes=("the food was not good at all", "i love this fantastic product", "the battery died after a week"),
    ),
)

SEED = Preset(
    name="seed",
    label="Seed (the Julia post)",
    summary="the Julia post exactly: GloVe 50d + position index, 1 head, no residual/norm/FFN, frozen linear head, "
    "mean pooling, per-example SGD lr 0.001, 1000 epochs",
    help="Exactly the model of 'Attention from Scratch in Julia': GloVe 50d + the word's position "
    "index (51 features), one head with biases, no residual / norm / feed-forward, a frozen linear head, mean pooling, "
    "per-example SGD with learning rate 0.001 for 1000 epochs, top-10,000 GloVe words, unknown words dropped.",
    model=ModelConfig(
        n_classes=3,
        n_layers=1,
        n_heads=1,
        d_model=None,  # 50 GloVe dims + 1 position index = 51
        positional="index",
        residual=False,
        layer_norm=False,
        feed_forward=False,
        attention_out_proj=False,
        pooling="mean",
        dropout=0.0,
        freeze_embeddings=True,
        freeze_head=True,  # the post froze it to watch only Q, K and V learn
        init="seed",
    ),
    train=TrainConfig(
        epochs=1000,
        batch_size=1,
        lr=0.001,
        optimizer="sgd",
        weight_decay=0.0,
        val_fraction=0.0,  # the post trained on all 39 rows
        grad_clip=None,
        tokenizer="whitespace",
        unknown="drop",
        vocab_limit=10_000,
        probes=(  # the five sentences the post evaluates
            "very sad as they both fail",
            "he loved that plug with good price",
            "terrible quality for this price",
            "i love this fantastic product",
            "easy to move around",
        ),
    ),
)

FINETUNE = Preset(
    name="finetune",
    label="Fine-tune all-MiniLM-L6-v2 (pretrained)",
    summary="fine-tune the bundled pretrained encoder all-MiniLM-L6-v2 (6 layers × 12 heads, 384-d, WordPiece): "
    "all 6 layers and a new classifier head train, the word-piece embeddings stay as pretrained; mean pooling, AdamW "
    "lr 2e-4 (lower for trainings of over 100 steps) with warm-up and linear decay, batch 32, 64 word pieces, 4 epochs, "
    "the epoch of the highest validation macro-F1 kept",
    help="A real pretrained transformer (all-MiniLM-L6-v2: BERT's architecture, 6 layers × 12 heads, trained on "
    "a billion sentence pairs) with a new classifier head for your labels. The word-piece embeddings stay as "
    "pretrained; its 6 layers and the head learn from your data (AdamW, learning rate 2e-4 — for a training of more "
    "than 100 steps 2e-4 × √(100 / its steps): more steps, smaller ones — rising over the first 10 % of the steps, "
    "then falling to 0; batch 32; sentences cut to 64 word pieces; 4 epochs, the epoch with the highest validation "
    "macro-F1 kept: its validation loss often rises after an epoch as it grows confident, while it still gets more "
    "right). Slower than the small model: minutes on a CPU, not seconds; set a time budget to stop it sooner (the "
    "learning rate then rises and falls over the budget), or train fewer layers (the top ones) for faster steps.",
    # The sizes are the bundled checkpoint's (tests/core/test_presets.py checks them against it); the trainer
    # reads them from the checkpoint itself. All 6 layers train: chosen on the tuning sets' validation splits
    # (benchmarks/README.md, "Fine-tuning's quality").
    model=ModelConfig(n_layers=6, n_heads=12, d_model=384, embedding_dim=384, d_ff=1536, vocab_size=30522, max_len=512,
                      positional="learned", pooling="mean", dropout=0.1, base="minilm", frozen_layers=0,
                      freeze_embeddings=True),
    train=TrainConfig(
        epochs=4,
        batch_size=32,
        lr=2e-4,  # chosen on the tuning sets' validation splits at 60 s: better than 1e-4 on all four (benchmarks/README.md)
        # ... for up to 100 steps (60 s here); a longer training peaks at 2e-4 × √(100 / its steps): chosen on the
        # validation splits at 300 s (mean of the four sets 0.926 against 0.920; benchmarks/README.md, third round)
        lr_reference_steps=100,
        lr_schedule="linear",
        warmup=0.1,
        max_tokens=64,
        snapshots=3,
        sampling="auto",
        # Fine-tuning's validation loss rises after an epoch or two as it grows confident while its accuracy still
        # rises: keep the epoch of the highest validation macro-F1 (ties to the lower loss). Chosen on the tuning
        # sets' validation splits, seeds 0-2, at 60 s and 300 s (benchmarks/README.md, "Seventh round").
        keep_by="macro_f1",
        probes=DEFAULT.train.probes,
    ),
)

PRESETS: dict[str, Preset] = {p.name: p for p in (DEFAULT, SEED, FINETUNE)}


def get_preset(name: str) -> Preset:
    """The preset called ``name``; ``ConfigError`` naming the choices for any other name."""
    if name not in PRESETS:
        raise ConfigError(f"unknown preset {name!r}", f"choose one of {', '.join(PRESETS)}")
    return PRESETS[name]


def preset(name: str, **overrides: object) -> tuple[ModelConfig, TrainConfig]:
    """The named preset's configs with ``overrides`` applied to whichever config has each field.

    Example:
        >>> model_cfg, train_cfg = preset("default", n_layers=1, epochs=3)
    """
    chosen = get_preset(name)
    model_fields = {f.name for f in fields(ModelConfig)}
    train_fields = {f.name for f in fields(TrainConfig)}
    unknown = set(overrides) - model_fields - train_fields
    if unknown:
        raise ConfigError(f"unknown setting(s) {sorted(unknown)}", "see ModelConfig and TrainConfig for the names")
    model_cfg = replace(chosen.model, **{k: v for k, v in overrides.items() if k in model_fields})
    train_cfg = replace(chosen.train, **{k: v for k, v in overrides.items() if k in train_fields})
    return model_cfg, train_cfg


def cli_help() -> str:
    """The CLI's ``--preset`` help: every name with its one-line summary."""
    listed = "; ".join(f"{p.name} = {p.summary}" for p in PRESETS.values())
    return f"the configuration to start from, one of {' | '.join(PRESETS)} (default: default): {listed}".replace(
        "%", "%%")  # argparse formats help with %


def markdown_table() -> str:
    """The README's table of presets (``python -m attention_core.presets`` prints it)."""
    rows = [f"| `{p.name}` | {p.label} | {p.summary} |" for p in PRESETS.values()]
    return "\n".join(["| `--preset` | in the app | what it is |", "|---|---|---|", *rows])


if __name__ == "__main__":
    print(markdown_table())
