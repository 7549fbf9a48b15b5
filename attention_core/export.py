"""One sentence's attention weights for other tools: a CSV file (a row per weight, and the file's name), a JSON
file's content, and the arguments BertViz and CircuitsVis take.

BertViz (Vig, 2019, "A Multiscale Visualization of Attention in the Transformer Model", ACL demo) draws
``head_view`` / ``model_view`` from Hugging Face's ``output_attentions``: a tuple with one tensor per layer,
batch × heads × tokens × tokens. CircuitsVis (the viewer used with TransformerLens) draws ``attention_patterns`` from one
layer's heads × destination × source array. Neither library is imported here: the functions return plain
tensors and arrays in those shapes, in the order the tools take them, so ``head_view(*to_bertviz(...))``.

Legend: L layers, H heads, T tokens. Rows are queries (CircuitsVis's "destination", the token that looks),
columns are keys ("source", the token looked at), as everywhere in the app.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

import numpy as np
import torch

from attention_core.errors import InputError
from attention_core.text import file_stem  # noqa: F401 — the CSV's file name, here with the CSV

CSV_HEADER = ("layer", "head", "query_index", "query", "key_index", "key", "weight")


POOLING_QUERY = "pooling query"  # the CSV's query of a pooling attention's row: the label's learned query, no token


def attention_csv(tokens: Sequence[str], attention: np.ndarray, n_layers: int | None = None) -> str:
    """Every layer's and head's weights, one row per (layer, head, query, key): layers and heads count
    from 1, token positions from 0, weights to 6 significant digits.

    A model that pools by attention returns its pooling query's map after the ``n_layers`` layers' maps, as
    T identical rows (``ModelConfig.map_names``): with ``n_layers`` given, that map is written once per
    (head, key) as layer ``pooling``, its query ``pooling query`` at no position (:func:`split_pooling`).

    Shape: attention (L, H, T, T) or (L + 1, H, T, T) with a pooling attention's map, tokens (T,).

    Example:
        >>> attention_csv(["hi"], np.ones((1, 1, 1, 1))).splitlines()[1]
        '1,1,0,hi,0,hi,1'
        >>> attention_csv(["hi", "yo"], np.full((2, 1, 2, 2), 0.5), n_layers=1).splitlines()[-2:]
        ['pooling,1,,pooling query,0,hi,0.5', 'pooling,1,,pooling query,1,yo,0.5']
    """
    layers, pooling = split_pooling(attention, n_layers)
    rows = io.StringIO()
    writer = csv.writer(rows)
    writer.writerow(CSV_HEADER)
    for (layer, head, query, key), weight in np.ndenumerate(layers):
        writer.writerow([layer + 1, head + 1, query, tokens[query], key, tokens[key], f"{weight:.6g}"])
    if pooling is not None:
        for (head, key), weight in np.ndenumerate(pooling):  # each head's one row
            writer.writerow(["pooling", head + 1, "", POOLING_QUERY, key, tokens[key], f"{weight:.6g}"])
    return rows.getvalue()


def split_pooling(attention: np.ndarray, n_layers: int | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """The layers' maps, and a pooling attention's map as its one row per head (None without one).

    A model that pools by attention returns its pooling query's map after the ``n_layers`` layers' maps, as T
    identical rows (``ModelConfig.map_names``); without ``n_layers``, every map is taken for a layer's.

    Shape: attention (L, H, T, T) or (L + 1, H, T, T) → (L, H, T, T), and (H, T) or None.
    """
    weights = np.asarray(attention)
    if n_layers is not None and len(weights) == n_layers + 1:  # the last map is the pooling query's
        return weights[:n_layers], weights[-1, :, 0]
    return weights, None


def attention_json(run: str, text: str, tokens: Sequence[str], label: str, probabilities: dict[str, float],
                   attention: np.ndarray, n_layers: int | None = None) -> dict:
    """The Inspect page's JSON of one sentence (plain lists and numbers): the run's name, the sentence, its tokens,
    the prediction, and ``attention`` indexed [layer][head][query][key]; a pooling attention's map (see
    :func:`split_pooling`) as ``pooling``, indexed [head][key]: its one row per head, as the CSV writes it (its
    query is the label's, no token), not T copies of it under ``attention``.

    Shape: attention (L, H, T, T) or (L + 1, H, T, T) with a pooling attention's map, tokens (T,).

    Example:
        >>> out = attention_json("demo", "hi yo", ["hi", "yo"], "pos", {"pos": 1.0}, np.full((2, 1, 2, 2), 0.5), 1)
        >>> np.shape(out["attention"]), out["pooling"]
        ((1, 1, 2, 2), [[0.5, 0.5]])
    """
    layers, pooling = split_pooling(attention, n_layers)
    out = {"run": run, "text": text, "tokens": list(tokens), "label": label, "probabilities": probabilities,
           "attention": layers.tolist()}
    if pooling is not None:
        out["pooling"] = pooling.tolist()
    return out


def _checked(tokens: Sequence[str], attention: np.ndarray | torch.Tensor | list) -> torch.Tensor:
    """``attention`` as a float CPU tensor (L, H, T, T) that matches ``tokens``, else an ``InputError``."""
    weights = torch.as_tensor(attention, dtype=torch.float32).detach().cpu()
    if weights.dim() != 4 or weights.shape[-1] != weights.shape[-2]:
        raise InputError(f"attention has shape {tuple(weights.shape)}, not (layers, heads, tokens, tokens)",
                         "pass a SentenceOutput's or a Prediction's attention, e.g. run.forward(text).attention")
    if weights.shape[-1] != len(tokens):
        raise InputError(f"attention covers {weights.shape[-1]} tokens but {len(tokens)} tokens were given",
                         "pass the tokens of the same sentence, e.g. run.forward(text).encoded.tokens")
    return weights


def to_bertviz(tokens: Sequence[str], attention: np.ndarray | torch.Tensor | list) -> tuple[tuple[torch.Tensor, ...], list[str]]:
    """Every layer's attention as BertViz's ``head_view`` / ``model_view`` take it: (attention, tokens).

    Shape:
        attention (L, H, T, T), tokens (T,) → a tuple of L tensors (1, H, T, T) (batch of one, as Hugging
        Face's ``output_attentions``), and the tokens as a list.

    Example:
        >>> from bertviz import head_view
        >>> out = run.forward("the movie was great")
        >>> html = head_view(*to_bertviz(out.encoded.tokens, out.attention), html_action="return")
        >>> layers, tokens = to_bertviz(["hi", "there"], np.full((2, 4, 2, 2), 0.5))
        >>> len(layers), tuple(layers[0].shape), tokens
        (2, (1, 4, 2, 2), ['hi', 'there'])
    """
    weights = _checked(tokens, attention)
    return tuple(layer[None] for layer in weights), list(tokens)  # L × (1, H, T, T)


def to_circuitsvis(tokens: Sequence[str], attention: np.ndarray | torch.Tensor | list, layer: int = -1) -> tuple[list[str], np.ndarray]:
    """One layer's heads as CircuitsVis's ``attention_patterns`` (and ``attention_heads``) take them: (tokens, attention).

    ``layer`` counts the attention's maps from 0; the default, -1, is the last map: the last layer's, or
    for a model that pools by attention (``ModelConfig.map_names``), the pooling query's.

    Shape:
        attention (L, H, T, T), tokens (T,) → the tokens as a list, and layer ``layer``'s (H, T, T) float32
        array: heads × destination (query) × source (key).

    Example:
        >>> from circuitsvis.attention import attention_patterns
        >>> out = run.forward("the movie was great")
        >>> html = attention_patterns(*to_circuitsvis(out.encoded.tokens, out.attention)).local_src
        >>> tokens, heads = to_circuitsvis(["hi", "there"], np.full((2, 4, 2, 2), 0.5), layer=0)
        >>> tokens, heads.shape
        (['hi', 'there'], (4, 2, 2))
    """
    weights = _checked(tokens, attention)
    maps = weights.shape[0]  # one per layer, then the pooling query's if the model pools by attention
    if not -maps <= layer < maps:
        raise InputError(f"layer {layer} does not exist: the attention has {maps} maps (a model that pools by "
                         "attention has its pooling query's last)", f"choose 0 to {maps - 1} (or -1 for the last)")
    return list(tokens), weights[layer].numpy()  # (H, T, T)


SPECIAL_TOKENS = ("[CLS]", "[SEP]")  # a BERT tokenizer's sentence start and end (attention_core.pretrained)


def has_special_tokens(tokens: Sequence[str]) -> bool:
    """Whether ``tokens`` hold a BERT tokenizer's [CLS] or [SEP] (a small model's never do)."""
    return any(t in SPECIAL_TOKENS for t in tokens)


def without_special_tokens(attention: np.ndarray, tokens: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """BertViz's "Hide [CLS] and [SEP]": the maps without those tokens' rows and columns, each remaining row divided
    by what is left of it, so that it sums to 1 again (the weight a word gave [CLS] and [SEP] shared out in
    proportion to the rest). A row left with nothing (it attended only to them) stays 0.

    Shape: attention (…, T, T), tokens T → (…, T', T'), T' tokens (T' = T less the special ones).

    Example:
        >>> a = np.array([[0.5, 0.25, 0.25], [0.2, 0.4, 0.4], [0.6, 0.2, 0.2]])
        >>> kept, words = without_special_tokens(a, ["[CLS]", "hi", "there"])
        >>> words, kept.tolist()
        (['hi', 'there'], [[0.5, 0.5], [0.5, 0.5]])
    """
    attention = np.asarray(attention, dtype=float)
    if attention.shape[-2:] != (len(tokens), len(tokens)):
        raise InputError(f"attention {attention.shape} does not fit {len(tokens)} tokens",
                         "pass square maps with one row and column per token")
    keep = [i for i, t in enumerate(tokens) if t not in SPECIAL_TOKENS]
    kept = attention[..., keep, :][..., keep]
    sums = kept.sum(axis=-1, keepdims=True)
    return np.divide(kept, sums, out=np.zeros_like(kept), where=sums > 0), [tokens[i] for i in keep]
