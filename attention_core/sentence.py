"""One sentence through a model: its encoding, class probabilities and every attention map.

Prediction, the probes recorded during training, the time-lapse over snapshots and the
explanation (saliency starts from the features kept here) all read a sentence through
:func:`run_sentence` (or :func:`run_encoded` when the sentence is encoded already), so they
show the same numbers for the same weights.

Legend: T tokens, L layers, H heads, C classes, F the model's input features (``model.embed``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import Tensor

from attention_core.encoding import Batch, Encoded, TextEncoder
from attention_core.model import AttentionClassifier, AttentionEdit


@dataclass(frozen=True)
class SentenceOutput:
    """What the model made of one sentence.

    Shapes: probabilities (C,), attention (L, H, T, T), features (T, F) or None.
    """

    encoded: Encoded  # tokens as fed to the model, unknown words, notes
    probabilities: Tensor
    attention: Tensor
    features: Tensor | None = None  # the model's input (model.embed), when asked for: what saliency starts from


@contextmanager
def evaluating(model: AttentionClassifier) -> Iterator[None]:
    """Run ``model`` in eval mode without gradients, then give it back in the mode it had.

    A model in eval mode already is left alone (switching walks every module, a cost the
    faithfulness lab's hundreds of small batches per sentence would pay).
    """
    was_training = model.training
    if was_training:
        model.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        if was_training:
            model.train()


def run_encoded(
    model: AttentionClassifier, encoded: Encoded, batch: Batch, *, features: bool = False,
    edit_attention: AttentionEdit | None = None,
) -> SentenceOutput:
    """The model in eval mode, without gradients, on a batch of one; the model's mode is restored.

    The batch moves to the model's device; the outputs stay there. With ``features`` the
    output keeps the model's input features too; ``edit_attention`` intervenes on the attention
    weights (head knock-out: :func:`attention_core.faithfulness.knock_out`).
    """
    device = model.head.weight.device
    extra = batch.extra.to(device) if batch.extra is not None else None
    with evaluating(model):
        casing = batch.casing.to(device) if batch.casing is not None else None
        x = model.embed(batch.ids.to(device), extra, casing)  # (1, T, F)
        logits, attn = model.forward_features(x, batch.mask.to(device), edit_attention=edit_attention)
    return SentenceOutput(encoded, torch.softmax(logits[0], -1), attn[:, 0], x[0] if features else None)


def run_sentence(
    model: AttentionClassifier, encoder: TextEncoder, text: str, *, features: bool = False,
    edit_attention: AttentionEdit | None = None,
) -> SentenceOutput:
    """Encode ``text`` with the run's encoder and run it through ``model`` (see :func:`run_encoded`).

    Raises ``EmbeddingError`` if ``text`` is empty or no word of it is known.

    Example:
        >>> out = run_sentence(run.model, run.encoder, "a great movie")
        >>> out.encoded.tokens, out.probabilities.shape, out.attention.shape
        (('a', 'great', 'movie'), torch.Size([2]), torch.Size([2, 4, 3, 3]))
    """
    encoded, batch = encoder.encode_for_model(text)
    return run_encoded(model, encoded, batch, features=features, edit_attention=edit_attention)
