"""The neuron view: one head's query and keys, dimension by dimension, equal to what the model computed."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from attention_core.neuron import neuron_view
from attention_core.runs import load_run

BUNDLED = Path(__file__).resolve().parents[2] / "data" / "default_run"


@pytest.fixture(scope="module")
def bundled_run():
    return load_run(BUNDLED)  # 2 layers with a 3-word window before them, then the pooling attention


@pytest.mark.parametrize(("map_index", "head", "query"), [(0, 0, 0), (1, 3, 4), (2, 1, 0)])
def test_every_step_adds_up_to_the_row_of_the_map_the_pages_show(bundled_run, map_index, head, query):
    encoded, batch = bundled_run.encoder.encode_for_model("the food was not good at all")
    view = neuron_view(bundled_run.model, encoded, batch, map_index, head, query)
    t, dh = len(encoded.tokens), bundled_run.model_config.model_dim // bundled_run.model_config.n_heads
    assert view.q.shape == (dh,) and view.k.shape == view.products.shape == (t, dh)
    assert torch.allclose(view.products.sum(-1), view.scores) and view.scale == pytest.approx(1 / math.sqrt(dh))
    assert torch.allclose(view.scaled, view.scores * view.scale)
    assert torch.allclose(view.weights, torch.softmax(view.scaled, -1))
    assert torch.allclose(view.weights, view.map_row, atol=1e-6)  # the model's own attention, not a re-derivation
    assert view.tokens == tuple(encoded.tokens)


def test_the_vectors_are_the_layers_own_projections_of_its_input(bundled_run):
    """q and k are the second layer's projections of what entered it (after the first layer and its norm)."""
    encoded, batch = bundled_run.encoder.encode_for_model("a great movie")
    view = neuron_view(bundled_run.model, encoded, batch, 1, 2, 1)
    block = bundled_run.model.blocks[1]
    seen = {}
    hook = block.attn.register_forward_pre_hook(lambda m, args: seen.setdefault("x", args[0]))
    from attention_core.sentence import run_encoded

    run_encoded(bundled_run.model, encoded, batch)
    hook.remove()
    dh = view.head_dim
    with torch.no_grad():
        q = block.attn.q_proj(seen["x"])[0, 1, 2 * dh:3 * dh]
        k = block.attn.k_proj(seen["x"])[0, :, 2 * dh:3 * dh]
    assert torch.allclose(view.q, q) and torch.allclose(view.k, k)


def test_a_map_head_or_query_that_does_not_exist_is_refused(bundled_run):
    encoded, batch = bundled_run.encoder.encode_for_model("a great movie")
    for args, said in [((3, 0, 0), "map 3 does not exist"), ((0, 4, 0), "head 4 does not exist"),
                       ((0, 0, 3), "query 3 does not exist"), ((2, 0, 1), "this map has 1 query")]:
        with pytest.raises(ValueError, match=said):
            neuron_view(bundled_run.model, encoded, batch, *args)


def test_the_pretrained_encoders_heads_are_taken_apart_the_same_way():
    """all-MiniLM-L6-v2: 32 dimensions a head; the softmax is the map's row for a word-piece query."""
    minilm = load_run("minilm")
    encoded, batch = minilm.encoder.encode_for_model("the food was not good at all")
    view = neuron_view(minilm.model, encoded, batch, 3, 7, 4)
    assert view.tokens[0] == "[CLS]" and view.tokens[4] == "not" and view.head_dim == 32 and not view.pooling
    assert torch.allclose(view.weights, view.map_row, atol=1e-6)
    assert torch.allclose(view.weights, minilm.forward("the food was not good at all").attention[3, 7, 4], atol=1e-6)
