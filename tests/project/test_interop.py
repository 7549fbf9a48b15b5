"""attention_core.export's BertViz and CircuitsVis shapes, handed to the real libraries (dev requirements).

Both return HTML; no browser is needed. The network is cut for the whole test: neither may fetch anything
from Python (their HTML may name a CDN, which only the notebook viewer's browser would load).
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import numpy as np
import pytest
import torch

from attention_core.errors import InputError
from attention_core.export import to_bertviz, to_circuitsvis
from attention_core.runs import load_run

DEFAULT_RUN = Path(__file__).resolve().parents[2] / "data" / "default_run"
SENTENCE = "the movie was not good at all"


@pytest.fixture(scope="module")
def seen():
    """The bundled model's tokens and attention (L, H, T, T) for SENTENCE."""
    out = load_run(DEFAULT_RUN).forward(SENTENCE)
    return list(out.encoded.tokens), out.attention


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    def refuse(*args):
        raise AssertionError(f"network use from Python: {args}")

    for name in ("connect", "connect_ex"):
        monkeypatch.setattr(socket.socket, name, refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)  # a host's look-up, before any connection


def _bertviz_params(html: str) -> dict:
    """The data BertViz's page draws: the JSON that replaced its template marker ``const params = …;``."""
    start = html.index("const params = ") + len("const params = ")
    return json.JSONDecoder().raw_decode(html, start)[0]


def _circuitsvis_props(html: str) -> dict:
    """The data CircuitsVis's page draws: the JSON after ``CircuitsVis.render("<id>", CircuitsVis.<View>,``."""
    call = html.rindex("CircuitsVis.render(")
    return json.JSONDecoder().raw_decode(html, html.index("{", call))[0]


def test_the_network_is_cut():
    with pytest.raises(AssertionError, match="network use"):
        socket.create_connection(("127.0.0.1", 9), timeout=1)
    with pytest.raises(AssertionError, match="network use"):
        socket.create_connection(("unpkg.com", 443), timeout=1)


def test_bertviz_head_view_and_model_view_draw_our_export(seen):
    from bertviz import head_view, model_view

    tokens, attention = seen
    layers, bv_tokens = to_bertviz(tokens, attention)
    assert len(layers) == attention.shape[0] and all(t.shape == (1, *attention.shape[1:]) for t in layers)
    for view in (head_view, model_view):
        params = _bertviz_params(view(layers, bv_tokens, html_action="return").data)
        (drawn,) = params["attention"]  # one sentence: one attention set
        assert drawn["left_text"] == drawn["right_text"] == tokens
        np.testing.assert_allclose(drawn["attn"], attention.numpy(), rtol=1e-6)  # (L, H, T, T), as the model made it


def test_circuitsvis_attention_patterns_draws_our_export(seen):
    from circuitsvis.attention import attention_heads, attention_patterns

    tokens, attention = seen
    cv_tokens, heads = to_circuitsvis(tokens, attention, layer=0)
    assert heads.shape == attention.shape[1:] and cv_tokens == tokens
    for view in (attention_patterns, attention_heads):
        args = (cv_tokens, heads) if view is attention_patterns else (heads, cv_tokens)
        html = view(*args).local_src  # its JavaScript inline (str() would name the CDN; showing it pings google.com)
        props = _circuitsvis_props(html)
        assert props["tokens"] == tokens
        np.testing.assert_allclose(props["attention"], attention[0].numpy(), rtol=1e-6)  # heads × dest × src


def test_to_circuitsvis_takes_the_last_map_by_default_and_refuses_one_out_of_range(seen):
    tokens, attention = seen
    assert load_run(DEFAULT_RUN).model_config.map_names() == ["Layer 1", "Layer 2", "Pooling"]
    last = to_circuitsvis(tokens, attention)[1]  # the pooling query's: each head's one row, drawn T times
    np.testing.assert_array_equal(last, attention[-1].numpy())
    np.testing.assert_array_equal(last, np.broadcast_to(last[:, :1], last.shape))
    with pytest.raises(InputError, match=r"layer 3 does not exist: the attention has 3 maps \(a model that pools by "
                                         r"attention has its pooling query's last\) — choose 0 to 2"):
        to_circuitsvis(tokens, attention, layer=3)
    with pytest.raises(InputError, match=r"layer 2 does not exist: the attention has 2 maps"):
        to_circuitsvis(tokens, attention[:2], layer=2)


@pytest.mark.parametrize("convert", [to_bertviz, to_circuitsvis])
def test_exports_refuse_attention_that_does_not_fit_the_tokens(convert):
    attention = torch.full((2, 4, 3, 3), 1 / 3)
    with pytest.raises(InputError, match=r"covers 3 tokens but 2 tokens were given — pass the tokens of the same sentence"):
        convert(["a", "b"], attention)
    with pytest.raises(InputError, match=r"shape \(4, 3, 3\), not \(layers, heads, tokens, tokens\)"):
        convert(["a", "b", "c"], attention[0])


def test_exports_take_a_predictions_nested_lists(seen):
    tokens, attention = seen
    layers, _ = to_bertviz(tokens, attention.tolist())  # Prediction.attention is [layer][head][query][key]
    torch.testing.assert_close(torch.cat(layers), attention)
