"""The hand-written backward pass of the seed model (the Backpropagation page's) against autograd."""

from __future__ import annotations

import pytest
import torch

from attention_core.backprop import post_backward, post_forward

D, C = 51, 3


def params(seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    shapes = {"Q": (D, D), "Qb": (D,), "K": (D, D), "Kb": (D,), "V": (D, D), "Vb": (D,), "W": (C, D), "b": (C,)}
    return {k: (torch.randn(*s, generator=g, dtype=torch.float64) * 0.3).requires_grad_() for k, s in shapes.items()}


@pytest.mark.parametrize(("n", "y", "seed"), [(1, 0, 0), (4, 2, 1), (9, 1, 2)])
def test_hand_written_gradients_match_autograd(n, y, seed):
    p = params(seed)
    x = torch.randn(n, D, generator=torch.Generator().manual_seed(seed + 10), dtype=torch.float64)
    fw = post_forward(x, y, p)
    fw.loss.backward()
    grads = post_backward(fw, y, {k: v.detach() for k, v in p.items()})
    for name in ("Q", "Qb", "K", "Kb", "V", "Vb", "W", "b"):
        diff = (grads[f"dL/d{name}"] - p[name].grad).abs().max().item()
        assert diff <= 1e-6, (name, diff)


def test_julia_variant_differs_from_the_correct_gradient():
    p = params(3)
    x = torch.randn(5, D, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    fw = post_forward(x, 1, p)
    right = post_backward(fw, 1, p)
    julia = post_backward(fw, 1, p, julia=True)
    assert torch.equal(right["dL/dV"], julia["dL/dV"])  # values do not go through the Jacobian
    assert (right["dL/dQ"] - julia["dL/dQ"]).abs().max() > 1e-8  # queries do


def test_single_token_softmax_jacobian_is_zero():
    p = params(5)
    fw = post_forward(torch.randn(1, D, dtype=torch.float64), 0, p)
    g = post_backward(fw, 0, p)
    assert torch.count_nonzero(g["softmax Jacobian"]) == 0 and torch.count_nonzero(g["dL/dQ"]) == 0
