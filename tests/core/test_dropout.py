"""The core's dropout (attention_core.dropout): PyTorch's operation with a cheaper random mask."""

import pytest
import torch
from torch import nn

from attention_core.attention import MultiHeadAttention
from attention_core.dropout import LEVELS, Dropout, dropout
from attention_core.model import AttentionClassifier, ModelConfig
from attention_core.pretrained import BertClassifier, BertConfig


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_each_of_the_four_numbers_a_draw_gives_drops_its_share(p):
    torch.manual_seed(0)
    y = dropout(torch.ones(400_000), p)
    dropped = (y == 0).float().view(-1, 4).mean(0)  # elements 4k, 4k+1, … come from the same draws' 4 int16s
    assert torch.allclose(dropped, torch.full((4,), p), atol=0.005), dropped
    kept = y[y != 0]
    assert torch.allclose(kept, torch.full_like(kept, LEVELS / (LEVELS - round(p * LEVELS))))
    assert abs(float(y.mean()) - 1) < 0.01  # inverted dropout keeps the expectation


def test_the_gradient_is_the_mask_times_the_scale_and_the_seed_repeats_it():
    x = torch.randn(8, 12, 30, 30, requires_grad=True)
    torch.manual_seed(3)
    y = dropout(x, 0.1)
    y.backward(torch.ones_like(y))
    kept = y != 0
    assert torch.equal(x.grad != 0, kept) and torch.allclose(x.grad[kept], torch.tensor(LEVELS / (LEVELS - 6554)))
    torch.manual_seed(3)
    assert torch.equal(dropout(x, 0.1), y)
    assert not torch.equal(dropout(x, 0.1), y)  # the next draw is another mask


def test_off_in_eval_at_zero_and_like_torch_at_the_edges():
    x = torch.randn(5, 7)
    assert dropout(x, 0.3, training=False) is x and dropout(x, 0.0) is x
    assert torch.equal(dropout(x, 1.0), torch.zeros_like(x))  # p rounds to 1: F.dropout
    module = Dropout(0.3)
    assert module.eval()(x) is x and module.p == 0.3


def test_the_models_drop_out_through_it():
    """Both models' dropout layers are the core's (a plain nn.Dropout would draw PyTorch's slower masks)."""
    small = AttentionClassifier(ModelConfig(n_classes=2, vocab_size=10, embedding_dim=8, d_model=8, n_heads=2,
                                            dropout=0.1, embedding_dropout=0.1))
    bert = BertClassifier(BertConfig(vocab_size=10, hidden=8, n_layers=1, n_heads=2, intermediate=16,
                                     max_positions=16, n_classes=2))
    for model in (small, bert):
        drops = [m for m in model.modules() if isinstance(m, nn.Dropout)]
        assert drops and all(type(m) is Dropout for m in drops)


def test_attention_drops_its_weights_with_it(monkeypatch):
    calls = []
    import attention_core.attention as attention

    monkeypatch.setattr(attention, "dropout", lambda x, p, training=True: calls.append(p) or x)
    attn = MultiHeadAttention(8, 2, dropout=0.2).train()
    attn(torch.randn(2, 5, 8))
    assert calls == [0.2]
