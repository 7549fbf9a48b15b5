"""The configurations of a model and of its training: frozen dataclasses saved as JSON with every run.

Torch-free, so that what only reads a run's settings (the runs list, the home page's saved
preview, the queue's caps, the forms) does not load torch: :mod:`attention_core.model` and
:mod:`attention_core.training` build and train from them.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace

from attention_core import map_names as naming
from attention_core.errors import ConfigError

POSITIONAL = ("none", "index", "sinusoidal", "learned")
POOLING = ("mean", "max", "first", "attention")
INIT = ("default", "seed")
LOCAL_CONV_KINDS = ("residual", "plain", "depthwise")
POOLING_KEYS = ("output", "input")
MAX_LOCAL_CONV = 9  # widest local window: wider is the attention layers' job
OPTIMIZERS = ("adamw", "adam", "sgd")
LR_SCHEDULES = ("constant", "linear", "cosine")
SAMPLINGS = ("shuffle", "sqrt", "balanced", "auto")
KEEP_BY = ("loss", "macro_f1")
MAX_PROBE_RECORDS = 100  # attention records per probe sentence a training keeps (after epoch 0)
KEPT_BY_WORDS = {"loss": "the lowest validation loss", "macro_f1": "the highest validation macro-F1"}  # for each KEEP_BY
MAX_SNAPSHOTS = 50  # weight snapshots a run may keep (each ~0.65 MB for the default model)


@dataclass(frozen=True)
class ModelConfig:
    """Architecture of an :class:`AttentionClassifier`; saved as JSON with every run."""

    n_classes: int = 2  # output classes (set from the data)
    vocab_size: int = 2  # run vocabulary incl. <pad>=0 and <unk>=1 (set from the data)
    embedding_dim: int = 50  # E, the word vectors' dim (GloVe 6B 50d: 50)
    n_layers: int = 2  # attention layers stacked
    n_heads: int = 4  # heads per layer; d_model must divide by it
    d_model: int | None = 64  # D; None = the input dim (E, or E+1 with the position index)
    positional: str = "sinusoidal"  # none | index (seed: append position 0,1,2… as a feature) | sinusoidal | learned
    residual: bool = True  # x + attention(x) rather than attention(x)
    layer_norm: bool = True  # pre-norm LayerNorm before attention / feed-forward, and at the end
    feed_forward: bool = True  # a position-wise MLP after each attention
    d_ff: int = 128  # hidden width of that MLP
    attention_bias: bool = True  # biases in the q/k/v (and out) projections
    attention_out_proj: bool = True  # an output projection after the heads (the seed has none)
    pooling: str = "mean"  # mean | max | first | attention (a learned query per head attends over the tokens)
    # With pooling="attention", what the label's query compares: each token's vector after the layers
    # (output), or as it entered them (input: word vector, position and window), taking the after-layers vector
    # either way. The layers gather the sentence on every token, so "output" keys are alike and the map even.
    # Read only with pooling="attention" (other poolings have no keys).
    pooling_keys: str = "output"
    dropout: float = 0.1  # on attention weights, block outputs and the pooled vector
    embedding_dropout: float = 0.0  # on the word vectors entering the model (training only)
    word_dropout: float = 0.0  # share of training tokens read as <unk>, so no single word carries a label
    freeze_embeddings: bool = False  # keep the pretrained word vectors fixed (default: fine-tune them)
    freeze_head: bool = False  # keep the classifier head fixed (the seed post did)
    max_len: int = 256  # longest sequence the positional encoding covers
    init: str = "default"  # default (PyTorch's) | seed (N(0,1)/100 weights, zero biases, V = K)
    local_conv: int = 0  # width of a 1-D convolution over neighbouring tokens before the first attention layer (0 = off)
    local_conv_kind: str = "residual"  # residual (x + conv) | plain (conv alone) | depthwise (x + one filter per feature)
    local_conv_zero_init: bool = False  # start the convolution at 0: a residual model begins as the one without it
    # Read how each word was written (Capitalised, CAPITALS, mIxed): a learned vector per kind added to
    # the lower-case word vector; lower case adds nothing, so all-lower-case text reads as without it.
    casing: bool = False
    # A pretrained BERT-family encoder instead of the small model over word vectors: "minilm" (the bundled
    # all-MiniLM-L6-v2) or a checkpoint folder's absolute path (attention_core.pretrained). Its layers' sizes are the
    # checkpoint's (n_layers, n_heads, d_model, d_ff, vocab_size, max_len are copied from it); a run names it and
    # stores only what training changed.
    base: str | None = None
    frozen_layers: int = 0  # the lowest layers kept as they are (fine-tuning trains the layers above them and the head)

    def __post_init__(self) -> None:
        def bad(name: str, value: object, hint: str) -> None:
            raise ConfigError(f"{name} = {value!r} is not valid", hint)

        if not 0 <= self.frozen_layers <= self.n_layers:
            bad("frozen_layers", self.frozen_layers, f"use 0 … {self.n_layers} (the model's layers)")
        if self.base is not None and (self.pooling not in ("mean", "first") or self.positional != "learned"):
            bad("pooling/positional", (self.pooling, self.positional),
                "a pretrained encoder has learned positions and pools by mean or its first token ([CLS])")

        if self.n_classes < 2:
            bad("n_classes", self.n_classes, "a classifier needs at least 2 classes")
        if self.d_model is not None and self.d_model < 1:
            bad("d_model", self.d_model, "use a positive model dim, or None for the input dim")
        for name in ("n_layers", "n_heads", "embedding_dim", "d_ff", "max_len"):
            if getattr(self, name) < 1:
                bad(name, getattr(self, name), "use a positive number")
        if self.n_layers > 12 or self.n_heads > 16:
            bad("n_layers/n_heads", (self.n_layers, self.n_heads), "live CPU training allows up to 12 layers × 16 heads")
        if self.positional not in POSITIONAL:
            bad("positional", self.positional, f"choose one of {', '.join(POSITIONAL)}")
        if self.pooling not in POOLING:
            bad("pooling", self.pooling, f"choose one of {', '.join(POOLING)}")
        if self.init not in INIT:
            bad("init", self.init, f"choose one of {', '.join(INIT)}")
        if not (self.local_conv == 0 or (1 <= self.local_conv <= MAX_LOCAL_CONV and self.local_conv % 2 == 1)):
            bad("local_conv", self.local_conv,
                f"use 0 (off) or an odd width from 1 to {MAX_LOCAL_CONV} (3 reads each word with one neighbour per side)")
        if self.pooling_keys not in POOLING_KEYS:
            bad("pooling_keys", self.pooling_keys, f"choose one of {', '.join(POOLING_KEYS)}")
        if self.local_conv_kind not in LOCAL_CONV_KINDS:
            bad("local_conv_kind", self.local_conv_kind, f"choose one of {', '.join(LOCAL_CONV_KINDS)}")
        if self.local_conv_zero_init and self.local_conv_kind == "plain":
            bad("local_conv_zero_init", self.local_conv_zero_init,
                "a plain convolution started at 0 passes nothing on: use it with residual or depthwise")
        for name in ("dropout", "embedding_dropout", "word_dropout"):
            if not 0.0 <= getattr(self, name) < 1.0:
                bad(name, getattr(self, name), "use a value in [0, 1)")
        if self.model_dim % self.n_heads:
            bad("n_heads", self.n_heads, f"model dim {self.model_dim} must be divisible by the number of heads")

    @property
    def input_dim(self) -> int:
        """Features per token entering the model: E, plus 1 for the seed's position index."""
        return self.embedding_dim + (1 if self.positional == "index" else 0)

    @property
    def model_dim(self) -> int:
        return self.input_dim if self.d_model is None else self.d_model

    @property
    def n_attention_maps(self) -> int:
        """Attention maps per head the forward pass returns: one per layer, plus the pooling query's."""
        return self.n_layers + (1 if self.pooling == "attention" else 0)

    def map_names(self) -> list[str]:
        """A name per attention map, in the forward pass's order: "Layer 1" … "Layer L", then "Pooling"
        for the pooling query's (map index ``n_layers``, one row: the label's query over the tokens):
        :func:`attention_core.map_names.map_names`."""
        return naming.map_names(self.n_layers, self.n_attention_maps > self.n_layers)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> ModelConfig:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ConfigError(f"unknown model setting(s) {sorted(unknown)}", f"known settings: {sorted(known)}")
        return cls(**data)


def with_data(cfg: ModelConfig, *, n_classes: int, vocab_size: int, embedding_dim: int) -> ModelConfig:
    """The config with the sizes that come from the data filled in."""
    return replace(cfg, n_classes=n_classes, vocab_size=vocab_size, embedding_dim=embedding_dim)


@dataclass(frozen=True)
class TrainConfig:
    """How to train; saved as JSON with every run."""

    epochs: int = 10  # passes over the training rows
    batch_size: int = 64  # rows per step; 1 = per-example SGD like the seed
    lr: float = 2e-3  # learning rate
    optimizer: str = "adamw"  # adamw | adam | sgd
    weight_decay: float = 0.01  # decoupled for adamw, L2 for the others
    embedding_lr: float = 1.0  # the word vectors' learning rate as a share of lr (lower: they drift less from GloVe)
    # constant | linear | cosine: decay to 0 over the planned steps (epochs × batches), or over the time budget when
    # it ends first (training.lr_factor)
    lr_schedule: str = "constant"
    warmup: float = 0.0  # share of the planned steps (or of the time budget, as above) over which the rate rises from 0
    # 0: lr is the peak rate. N > 0: lr is the peak for a training of N steps or fewer; a longer one peaks at
    # lr × √(N / its steps) — its planned steps, or with a time budget those its pace so far fits in it
    # (training.lr_factor): more steps, smaller ones (the rule of thumb fine-tuning follows).
    lr_reference_steps: int = 0
    label_smoothing: float = 0.0  # target mass spread over the other classes (less over-confident logits)
    average_epochs: float = 0.0  # > 0: evaluate and keep a moving average of the weights over about this many epochs
    patience: int | None = None  # stop when validation loss has not improved for this many epochs; None = never
    val_fraction: float = 0.2  # share of rows held out (stratified) for validation
    seed: int = 0  # same seed → same split, init, batches and history
    class_weights: bool = False  # weight the loss by inverse class frequency (imbalanced data)
    # Rows per class in an epoch: shuffle = each row once; sqrt = classes in proportion to √(their rows);
    # balanced = every class equally. A rare class's rows repeat, a common one's are subsampled; the epoch
    # keeps its length. Skewed classes: the rare ones are seen more often without reweighting the loss.
    # auto = balanced when the rarest class has under half of an equal split's rows (1/(2·classes) of the
    # data: TREC's 1.6 % ABBR of 6 classes), else shuffle (a mild skew, CR's 36 % of 2, is a prior worth keeping).
    sampling: str = "shuffle"
    # The validation figure that picks the kept epoch (and that patience waits on): loss, or macro-F1
    # (every class counts the same: a rare class's recall is not drowned by the common ones).
    keep_by: str = "loss"
    time_budget: float | None = None  # stop after this many seconds of training
    grad_clip: float | None = 1.0  # clip the gradient norm; None = off
    tokenizer: str = "glove"  # glove (punctuation and contractions split) | whitespace (the seed's)
    unknown: str = "unk"  # drop unknown words (the seed) or read them as a learned <unk>
    max_tokens: int = 64  # longer texts are truncated
    vocab_limit: int | None = None  # use only the N most frequent embedding words (seed: 10,000)
    probes: tuple[str, ...] = ()  # sentences whose attention is recorded during training
    snapshots: int = 6  # weight snapshots along training (epoch 0 … last, + the kept best epoch) for any sentence's time-lapse
    num_threads: int | None = None  # torch CPU threads; None = leave as is

    def __post_init__(self) -> None:
        def bad(name: str, hint: str) -> None:
            raise ConfigError(f"{name} = {getattr(self, name)!r} is not valid", hint)

        if self.epochs < 1 or self.epochs > 100_000:
            bad("epochs", "use 1 … 100000")
        if self.batch_size < 1:
            bad("batch_size", "use a positive number; 1 = per-example SGD")
        if not (0 < self.lr <= 1e6) or not math.isfinite(self.lr):
            bad("lr", "use a positive learning rate such as 0.001")
        if self.optimizer not in OPTIMIZERS:
            bad("optimizer", f"choose one of {', '.join(OPTIMIZERS)}")
        if not 0.0 <= self.val_fraction <= 0.9:
            bad("val_fraction", "use a share between 0 and 0.9, e.g. 0.2")
        if self.time_budget is not None and self.time_budget <= 0:
            bad("time_budget", "use a positive number of seconds")
        if self.weight_decay < 0:
            bad("weight_decay", "use 0 or more")
        if not 0.0 < self.embedding_lr <= 10.0:
            bad("embedding_lr", "use a share of the learning rate in (0, 10], e.g. 0.1; freeze the vectors for 0")
        if self.lr_schedule not in LR_SCHEDULES:
            bad("lr_schedule", f"choose one of {', '.join(LR_SCHEDULES)}")
        if not 0.0 <= self.warmup < 1.0:
            bad("warmup", "use a share of the steps in [0, 1), e.g. 0.05")
        if self.lr_reference_steps < 0:
            bad("lr_reference_steps", "use 0 (lr as set) or a number of steps")
        if not 0.0 <= self.label_smoothing < 0.5:
            bad("label_smoothing", "use a value in [0, 0.5), e.g. 0.1")
        if not 0.0 <= self.average_epochs <= 100.0:
            bad("average_epochs", "use 0 (off) or a number of epochs such as 2")
        if self.sampling not in SAMPLINGS:
            bad("sampling", f"choose one of {', '.join(SAMPLINGS)}")
        if self.keep_by not in KEEP_BY:
            bad("keep_by", f"choose one of {', '.join(KEEP_BY)}")
        if self.patience is not None and self.patience < 1:
            bad("patience", "use 1 or more epochs, or None to train every epoch")
        if not 0 <= self.snapshots <= MAX_SNAPSHOTS:
            bad("snapshots", f"use 0 … {MAX_SNAPSHOTS}")
        if self.num_threads is not None and self.num_threads < 1:
            bad("num_threads", "use 1 or more, or leave it unset for torch's default")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["probes"] = list(self.probes)
        return d

    @classmethod
    def from_dict(cls, data: dict) -> TrainConfig:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ConfigError(f"unknown training setting(s) {sorted(unknown)}", f"known settings: {sorted(known)}")
        data = dict(data)
        if "probes" in data:
            data["probes"] = tuple(data["probes"])
        return cls(**data)
