"""What the pages say about the kind of model picked: a small model on word vectors, the pretrained encoder with
its untrained head, or a run fine-tuned from it (word pieces with [CLS] and [SEP]); and the switch that hides
[CLS] and [SEP] from the maps, as BertViz does."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import streamlit as st

from attention_core import Run
from attention_core.export import has_special_tokens, without_special_tokens
from attention_core.presets import FINETUNE
from ui.state import kept

UNTRAINED_HEAD = (
    "This is the pretrained encoder before fine-tuning: its attention is real, but its classifier head is untrained, "
    "so the label and probabilities mean nothing yet. Fine-tune it on the Train page (preset "
    f"“{FINETUNE.label}”)."
)
HIDE_SPECIAL = "Hide [CLS] and [SEP]"
HIDDEN_SAID = ("[CLS] and [SEP] hidden: each row is divided by what is left of it, so it sums to 1 again (the weight "
               "a word piece gave them is shared out in proportion to the rest).")


def head_untrained(run: Run) -> bool:
    """Whether ``run`` is a pretrained encoder whose classifier head was never trained (its predictions mean nothing)."""
    return run.history.status == "pretrained"


def untrained_notice(run: Run) -> None:
    """The info box that says the prediction means nothing, for a pretrained encoder before fine-tuning."""
    if head_untrained(run):
        st.info(UNTRAINED_HEAD, icon=":material/info:")


def base_title(run: Run) -> str | None:
    """The pretrained checkpoint ``run`` is (or was fine-tuned from), as said in a sentence; None for a small model."""
    if run.model_config.base is None:
        return None
    from attention_core.pretrained import base_title as title

    return title(run.model_config.base)


def inputs_said(run: Run) -> str:
    """What the model reads, in a few words: "GloVe 6B 50d", or "all-MiniLM-L6-v2's 30,522 word pieces"."""
    base = base_title(run)
    if base is None:
        return run.encoder.embeddings.source.describe()
    return f"{base}'s {run.encoder.vocab_size:,} word pieces"


def unknown_said(run: Run, tokens: Sequence[str]) -> str:
    """How the model read the words it does not know: a word piece model as [UNK], a small model as its
    learned ``<unk>`` vector or not at all."""
    if base_title(run) is not None:
        return "read as [UNK]"
    return "read as the learned `<unk>` vector" if "<unk>" in tokens else "dropped"


def hide_special_switch(tokens: Sequence[str], key: str) -> bool:
    """The "Hide [CLS] and [SEP]" switch, drawn only for tokens that have them; whether it is on."""
    if not has_special_tokens(tokens):
        return False
    return st.toggle(HIDE_SPECIAL, help="As BertViz's switch: [CLS] and [SEP] often draw much of the attention (a "
                     "resting place for a head with nothing to look for), which hides how the words attend to each "
                     "other.", **kept(key, False))


def shown_maps(attention: np.ndarray, tokens: Sequence[str], hide: bool) -> tuple[np.ndarray, list[str]]:
    """The maps and tokens to draw: without [CLS] and [SEP] (rows renormalised) when ``hide``, else as they are.
    Shape: (…, T, T) → (…, T', T')."""
    if not hide:
        return np.asarray(attention), list(tokens)
    return without_special_tokens(attention, tokens)
