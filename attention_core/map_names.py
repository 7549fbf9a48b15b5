"""Names of attention maps and heads, as the app, the CLI and links write them (torch-free).

A model's forward pass returns one attention map per layer, then, for a model that pools by
attention, the pooling query's (map index ``n_layers``). They are named:

* a map: ``"Layer 1"`` … ``"Layer L"``, then ``"Pooling"`` (:func:`map_names`); in a grid's small
  titles ``"L1"`` … and ``"Pooling"`` (:func:`short_map_name`), a head's ``"L1 · H2"`` (:func:`grid_title`);
* a head, as the CLI and links take it: ``"1.2"`` (map.head, 1-based), a pooling head
  ``"pooling.1"`` (:func:`head_name`), read back by :func:`parse_heads` (which also reads the
  pooling map's number, ``3.1`` after 2 layers, as old links wrote it);
* what a rollout multiplies: ``"layers 1–2 and the pooling attention"`` (:func:`rollout_maps`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from attention_core.errors import ConfigError

if TYPE_CHECKING:
    from attention_core.configs import ModelConfig

POOLING = "Pooling"  # the pooling attention's map


def map_names(n_layers: int, pooling: bool) -> list[str]:
    """A name per attention map, in the forward pass's order: "Layer 1" … "Layer L", then "Pooling"
    for a pooling attention's query (``pooling``).

    Example:
        >>> map_names(2, True)
        ['Layer 1', 'Layer 2', 'Pooling']
    """
    return [f"Layer {i + 1}" for i in range(n_layers)] + [POOLING] * pooling


def map_words(cfg: ModelConfig) -> list[str]:
    """``cfg.map_names()`` as a sentence writes them: "layer 1" …, "pooling"."""
    return [name.lower() for name in cfg.map_names()]


def short_map_name(index: int, n_layers: int) -> str:
    """Map ``index`` in a grid's small titles: "L1" … for a layer, "Pooling" for the map after the layers."""
    return POOLING if index == n_layers else f"L{index + 1}"


def grid_title(index: int, head: int, n_layers: int, n_heads: int) -> str:
    """A grid's small title for head ``head`` of map ``index`` (head ``n_heads``: their average).

    Example:
        >>> [grid_title(0, 1, 2, 4), grid_title(2, 4, 2, 4)]
        ['L1 · H2', 'Pooling · avg']
    """
    return f"{short_map_name(index, n_layers)} · {'avg' if head == n_heads else f'H{head + 1}'}"


def map_specs(cfg: ModelConfig) -> list[str]:
    """How a head's map is written before the dot, per map of ``cfg.map_names()``: "1" … "L", then "pooling"."""
    return [name.removeprefix("Layer ").lower() for name in cfg.map_names()]


def head_name(layer: int, head: int, cfg: ModelConfig | None = None) -> str:
    """0-based (map, head) → ``"map.head"`` 1-based, as the CLI takes it; with ``cfg``, the pooling
    attention's heads are named ``"pooling.head"`` (:func:`map_specs`)."""
    return f"{map_specs(cfg)[layer] if cfg is not None else layer + 1}.{head + 1}"


def head_names(cfg: ModelConfig) -> list[str]:
    """Every head of ``cfg`` (:func:`head_name`): "layer.head" from 1, then the pooling query's "pooling.head"."""
    return [head_name(layer, h, cfg) for layer in range(cfg.n_attention_maps) for h in range(cfg.n_heads)]


def head_choice(head: int, n_heads: int) -> str:
    """A head picker's option: "head 1" …, and head ``n_heads`` the "average of heads"."""
    return "average of heads" if head == n_heads else f"head {head + 1}"


def parse_heads(spec: str, cfg: ModelConfig) -> list[tuple[int, int]]:
    """``"1.2,2.4"`` (map.head, 1-based) → ``[(0, 1), (1, 3)]`` (0-based); ``""`` → ``[]``.

    A map is a layer's number, or ``pooling`` for the pooling attention (:func:`map_specs`);
    the pooling map's number (``n_layers + 1``) is taken too. Raises ``ConfigError`` naming a head
    the model does not have or a malformed item.

    Example:
        >>> from attention_core.configs import ModelConfig
        >>> parse_heads("1.2, 2.4", ModelConfig())
        [(0, 1), (1, 3)]
        >>> parse_heads("pooling.3", ModelConfig(n_layers=1, pooling="attention"))
        [(1, 2)]
    """
    names = map_specs(cfg)
    heads: list[tuple[int, int]] = []
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        layer, dot, head = item.partition(".")
        layer = layer.strip().lower()
        if not dot or not (layer.isdigit() or layer in names) or not head.isdigit():
            raise ConfigError(f"head {item!r} is not LAYER.HEAD", heads_hint(cfg))
        l, h = (names.index(layer) + 1 if layer in names else int(layer)), int(head)
        if not (1 <= l <= cfg.n_attention_maps and 1 <= h <= cfg.n_heads):
            raise ConfigError(f"head {item} does not exist", heads_hint(cfg))
        if (l - 1, h - 1) not in heads:
            heads.append((l - 1, h - 1))
    return heads


def heads_hint(cfg: ModelConfig) -> str:
    """How to write ``cfg``'s heads, for an error about one."""
    layers = "layer 1" if cfg.n_layers == 1 else f"layers 1–{cfg.n_layers}"
    hint = f"this model has heads 1–{cfg.n_heads} in {layers}"
    if cfg.n_attention_maps == cfg.n_layers:
        return f"{hint}: write them as LAYER.HEAD, e.g. 1.{cfg.n_heads}"
    pooling = map_specs(cfg)[-1]
    return (f"{hint} and in the pooling attention: write them as LAYER.HEAD or {pooling}.HEAD, e.g. "
            f"1.{cfg.n_heads},{pooling}.1 ({pooling}.1 is also {cfg.n_attention_maps}.1)")


def rollout_maps(cfg: ModelConfig, *, pooling: bool = True) -> str:
    """The maps that ``attention_core.explain.explain``'s rollout multiplies, in words from
    ``cfg.map_names()``: "layer 1", "layers 1–2", and with ``pooling`` a pooling attention's too,
    "layers 1–2 and the pooling attention" (``Explanation.attention_to_token``).

    Example:
        >>> from attention_core.configs import ModelConfig
        >>> rollout_maps(ModelConfig(n_layers=2, pooling="attention"))
        'layers 1–2 and the pooling attention'
    """
    names = cfg.map_names()
    words = names[0].lower() if cfg.n_layers == 1 else f"layers 1–{cfg.n_layers}"
    return words + "".join(f" and the {name.lower()} attention" for name in names[cfg.n_layers :] if pooling)


def layers_said(n_layers: int, n_maps: int) -> str:
    """A model's attention maps as a notice counts them: its layers, and the pooling attention's map
    (it comes last, so a link's ``layer=`` takes it as one more number).

    Example:
        >>> layers_said(2, 3)
        '2 layers and a pooling attention as layer 3'
    """
    layers = f"{n_layers} layer" + ("s" if n_layers != 1 else "")
    return layers if n_maps == n_layers else f"{layers} and a pooling attention as layer {n_maps}"
