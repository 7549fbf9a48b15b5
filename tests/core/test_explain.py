"""Tests for attention_core.explain: rollout, the feature-level forward, saliency, top-k, explain()."""

from __future__ import annotations

import copy
import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from attention_core import ModelConfig, Run, TrainConfig, Trainer, dataset_from_lists, load_embeddings
from attention_core.encoding import Batch
from attention_core.explain import (
    Explanation,
    attention_rollout,
    explain,
    token_saliency,
    top_k_mask,
)
from attention_core.map_names import rollout_maps
from attention_core.model import AttentionClassifier
from attention_core.presets import SEED
from attention_core.runs import load_run

TINY = {"vocab_size": 20, "embedding_dim": 8, "d_model": 8, "n_heads": 2, "n_layers": 2, "dropout": 0.0}


def tiny_model(seed: int = 0, **overrides: object) -> AttentionClassifier:
    torch.manual_seed(seed)
    return AttentionClassifier(ModelConfig(**{**TINY, **overrides}))


def random_attention(*shape: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.softmax(torch.randn(*shape, generator=g) * 2, dim=-1)


def distinct_ids(t: int, seed: int = 0, vocab: int = 20) -> torch.Tensor:
    """(1, T) ids without repeats, <pad> or <unk>: each table row maps to one position."""
    g = torch.Generator().manual_seed(seed)
    return (torch.randperm(vocab - 2, generator=g)[:t] + 2)[None]


# --- attention rollout -----------------------------------------------------------------------


def test_rollout_matches_hand_computation_for_two_layers() -> None:
    layer1 = [[[1.0, 0.0], [0.0, 1.0]], [[0.0, 1.0], [1.0, 0.0]]]  # heads average to all 0.5
    layer2 = [[[1.0, 0.0], [1.0, 0.0]], [[1.0, 0.0], [1.0, 0.0]]]  # everyone looks at token 0
    attn = torch.tensor([layer1, layer2])  # (L=2, H=2, T=2, T=2)
    # Â1 = 0.5·[[.5,.5],[.5,.5]] + 0.5·I = [[.75,.25],[.25,.75]]; Â2 = [[1,0],[.5,.5]]
    # rollout = Â2 · Â1 = [[.75, .25], [.5, .5]]  (Â1 · Â2 would be [[.875,.125],[.625,.375]])
    expected = torch.tensor([[0.75, 0.25], [0.5, 0.5]])
    assert torch.allclose(attention_rollout(attn), expected, atol=1e-6)
    no_res = attention_rollout(attn, residual=False)  # A2 · A1 = [[.5,.5],[.5,.5]]
    assert torch.allclose(no_res, torch.full((2, 2), 0.5), atol=1e-6)


def test_rollout_matches_matrix_product_for_random_maps() -> None:
    attn = random_attention(3, 4, 5, 5, seed=1)
    eye = torch.eye(5)
    hats = [0.5 * attn[i].mean(0) + 0.5 * eye for i in range(3)]
    assert torch.allclose(attention_rollout(attn), hats[2] @ hats[1] @ hats[0], atol=1e-6)


def test_one_layer_without_residual_is_the_head_average() -> None:
    attn = random_attention(1, 3, 6, 6, seed=2)
    assert torch.allclose(attention_rollout(attn, residual=False), attn[0].mean(0), atol=1e-6)


@pytest.mark.parametrize("fusion", ["mean", "max", "min"])
@pytest.mark.parametrize("residual", [True, False])
def test_rollout_rows_sum_to_one(fusion: str, residual: bool) -> None:
    attn = random_attention(3, 2, 4, 7, 7, seed=3)  # (L, B, H, T, T)
    roll = attention_rollout(attn, residual=residual, head_fusion=fusion)
    assert roll.shape == (2, 7, 7)
    assert torch.allclose(roll.sum(-1), torch.ones(2, 7), atol=1e-5)
    assert (roll >= 0).all()
    for b in range(2):  # batched = one at a time
        single = attention_rollout(attn[:, b], residual=residual, head_fusion=fusion)
        assert torch.allclose(roll[b], single, atol=1e-6)


def test_identity_attention_gives_identity_rollout() -> None:
    attn = torch.eye(5).expand(3, 2, 5, 5)
    for residual in (True, False):
        assert torch.allclose(attention_rollout(attn, residual=residual), torch.eye(5))


def test_max_fusion_takes_the_largest_head() -> None:
    attn = torch.tensor([[[[0.9, 0.1], [0.5, 0.5]], [[0.2, 0.8], [0.4, 0.6]]]])  # (1, 2, 2, 2)
    fused = torch.tensor([[0.9, 0.8], [0.5, 0.6]])
    expected = fused / fused.sum(-1, keepdim=True)
    assert torch.allclose(attention_rollout(attn, residual=False, head_fusion="max"), expected, atol=1e-6)


def test_rollout_mask_ignores_padding() -> None:
    attn = random_attention(2, 2, 4, 4, seed=4)
    mask = torch.tensor([True, True, True, False])
    roll = attention_rollout(attn, mask=mask)
    assert torch.all(roll[:, 3] == 0) and torch.all(roll[3] == 0)
    assert torch.allclose(roll[:3].sum(-1), torch.ones(3), atol=1e-6)


def test_rollout_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="median"):
        attention_rollout(random_attention(1, 1, 3, 3), head_fusion="median")
    with pytest.raises(ValueError, match=r"\(3, 3\)"):
        attention_rollout(torch.ones(3, 3))
    with pytest.raises(ValueError, match="square"):
        attention_rollout(torch.ones(1, 1, 3, 4))
    with pytest.raises(ValueError, match="mask shape"):
        attention_rollout(random_attention(1, 1, 3, 3), mask=torch.ones(4, dtype=torch.bool))


# --- forward from features -------------------------------------------------------------------

CONFIGS = [
    {"positional": "none"},
    {"positional": "index"},
    {"positional": "sinusoidal"},
    {"positional": "learned"},
    {"positional": "sinusoidal", "residual": False},
    {"positional": "learned", "residual": False, "layer_norm": False, "feed_forward": False},
    {"positional": "none", "pooling": "max"},
    {"positional": "learned", "pooling": "first"},
    {"positional": "sinusoidal", "freeze_embeddings": True, "freeze_head": True},
    {"positional": "index", "d_model": None, "n_heads": 3, "attention_out_proj": False, "freeze_embeddings": True},
]


@pytest.mark.parametrize("overrides", CONFIGS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
def test_forward_features_from_embed_reproduces_the_model(overrides: dict) -> None:
    model = tiny_model(seed=5, n_classes=3, **overrides).eval()
    g = torch.Generator().manual_seed(6)
    ids = torch.randint(1, 20, (3, 7), generator=g)
    ids[1, 5:] = 0  # padding
    ids[2, 3:] = 0
    extra = torch.randn(2, 8, generator=g)
    ids[0, 2], ids[1, 1] = 20, 21  # words outside the run vocabulary, read from `extra`
    mask = ids != 0
    logits, attn = model(ids, mask, extra)
    got_logits, got_attn = model.forward_features(model.embed(ids, extra), mask)
    assert torch.equal(got_logits, logits)
    assert torch.equal(got_attn, attn)
    assert model.forward_features(model.embed(ids, extra), mask, need_weights=False)[1] is None


def test_forward_features_rejects_wrong_feature_width() -> None:
    model = tiny_model()
    with pytest.raises(ValueError, match=r"\(1, 3, 5\)"):
        model.forward_features(torch.zeros(1, 3, 5))


# --- saliency --------------------------------------------------------------------------------


def manual_grad_x_input(model: AttentionClassifier, ids: torch.Tensor, target: int) -> torch.Tensor:
    """grad × input of log p(target) through the model's own forward, via the gradient of the embedding table."""
    table = model.embedding.weight
    was = table.requires_grad
    table.requires_grad_(True)
    try:
        logits, _ = model(ids)
        (grad_table,) = torch.autograd.grad(torch.log_softmax(logits, -1)[0, target], table)
    finally:
        table.requires_grad_(was)
    rows = ids[0]  # distinct ids: the table gradient of row ids[t] is the gradient at position t
    return (grad_table[rows] * table.detach()[rows]).sum(-1)


@pytest.mark.parametrize("overrides", [{}, {"freeze_embeddings": True}, {"positional": "learned", "pooling": "max"}])
def test_grad_x_input_matches_manual_autograd(overrides: dict) -> None:
    model = tiny_model(seed=7, n_classes=3, **overrides).double().eval()
    ids = distinct_ids(6, seed=8)
    batch = Batch(ids, ids != 0)
    for target in range(3):
        got = token_saliency(model, batch, target=target)
        assert got.shape == (6,)
        assert torch.allclose(got, manual_grad_x_input(model, ids, target), rtol=1e-9, atol=1e-12)
    assert model.embedding.weight.requires_grad == (not overrides.get("freeze_embeddings", False))


def test_default_target_is_the_predicted_class() -> None:
    model = tiny_model(seed=9, n_classes=3).eval()
    ids = distinct_ids(5, seed=10)
    predicted = int(model(ids)[0].argmax())
    batch = Batch(ids, ids != 0)
    assert torch.equal(token_saliency(model, batch), token_saliency(model, batch, target=predicted))


def test_grad_norm_is_the_gradient_length() -> None:
    model = tiny_model(seed=11).double().eval()
    ids = distinct_ids(5, seed=12)
    table = model.embedding.weight
    logits, _ = model(ids)
    (grad_table,) = torch.autograd.grad(torch.log_softmax(logits, -1)[0, 1], table)
    got = token_saliency(model, Batch(ids, ids != 0), target=1, method="grad_norm")
    assert torch.allclose(got, grad_table[ids[0]].norm(dim=-1), rtol=1e-9)
    assert (got >= 0).all()


@pytest.mark.parametrize("overrides", [{}, {"positional": "index", "freeze_embeddings": True}, {"pooling": "max"}])
def test_integrated_gradients_completeness(overrides: dict) -> None:
    model = tiny_model(seed=13, n_classes=3, **overrides).double().eval()
    with torch.no_grad():  # larger vectors, so the logit moves a lot between baseline and input
        model.embedding.weight.mul_(3.0)
    ids = distinct_ids(6, seed=14)
    mask = ids != 0
    target = 2
    attributions = token_saliency(model, Batch(ids, mask), target=target, method="integrated_gradients", steps=256)
    x = model.embed(ids).detach()
    baseline = x.clone()
    baseline[..., : model.cfg.embedding_dim] = 0.0  # zero word vectors; the position index is kept
    with torch.no_grad():
        log_p = [torch.log_softmax(model.forward_features(f, mask)[0], -1)[0, target] for f in (x, baseline)]
    diff = log_p[0] - log_p[1]  # completeness: the attributions add up to log p(x) − log p(baseline)
    assert abs(float(diff)) > 0.05
    assert float(attributions.sum()) == pytest.approx(float(diff), rel=0.02, abs=1e-4)


def word_pusher() -> AttentionClassifier:
    """A hand-built model whose prediction is a linear function of the mean word vector.

    Words: 2 = "great" (2, 0), 3 = "movie" (0, 1). Attention adds nothing (V = 0, residual
    only), so pooled = mean of the vectors and logits = W · pooled with W = [[-3, 0], [-1, 0]]
    (neg, pos). "great" raises p(pos), yet it *lowers* the raw pos logit (−1 per unit of
    pooled[0]): every logit falls, neg's three times faster. "movie" changes nothing.
    """
    cfg = ModelConfig(vocab_size=4, embedding_dim=2, d_model=None, n_layers=1, n_heads=1, positional="none",
                      layer_norm=False, feed_forward=False, attention_out_proj=False, dropout=0.0)
    model = AttentionClassifier(cfg, torch.tensor([[0.0, 0.0], [0.0, 0.0], [2.0, 0.0], [0.0, 1.0]])).double().eval()
    with torch.no_grad():
        model.blocks[0].attn.v_proj.weight.zero_()
        model.blocks[0].attn.v_proj.bias.zero_()
        model.head.weight.copy_(torch.tensor([[-3.0, 0.0], [-1.0, 0.0]]))
        model.head.bias.zero_()
    return model


def test_a_word_that_raises_the_class_probability_gets_positive_saliency() -> None:
    """The sign means what the Inspect page says: + pushes towards the class, even where its raw logit falls."""
    model = word_pusher()
    ids = torch.tensor([[2, 3]])  # "great movie": pooled (1, 0.5), logits (−3, −1)
    batch = Batch(ids, ids != 0)
    logits, _ = model(ids)
    assert torch.allclose(logits, torch.tensor([[-3.0, -1.0]], dtype=torch.float64))
    p_pos = float(torch.softmax(logits.detach(), -1)[0, 1])  # σ(2) = 0.881: predicted pos
    # ∂log p(pos)/∂x_great = (1 − p)·(W_pos − W_neg)/T = (1 − p)·(1, 0); × x_great (2, 0)
    sal = token_saliency(model, batch)  # the predicted class by default
    assert sal.tolist() == pytest.approx([2 * (1 - p_pos), 0.0], abs=1e-12)
    # integrated gradients along α·x: log p(pos) = log σ(2α), all of it from "great"
    ig = token_saliency(model, batch, method="integrated_gradients", steps=256)
    assert ig.tolist() == pytest.approx([math.log(p_pos / 0.5), 0.0], rel=1e-4, abs=1e-12)
    # explaining the other class flips the sign: "great" pushes away from neg, (1 − p_neg)·(−1, 0) · (2, 0)
    assert float(token_saliency(model, batch, target=0)[0]) == pytest.approx(-2 * p_pos, rel=1e-9)


def test_saliency_ignores_what_all_logits_share() -> None:
    """Adding one vector to every row of the head leaves the probabilities, and so the saliency, unchanged."""
    model = tiny_model(seed=21, n_classes=3).double().eval()
    ids = distinct_ids(5, seed=22)
    batch = Batch(ids, ids != 0)
    shifted = copy.deepcopy(model)
    target = int(model(ids)[0].argmax())
    with torch.no_grad():
        shifted.head.weight.sub_(2 * model.head.weight[target])  # the target's raw logit becomes minus itself
    assert torch.allclose(torch.softmax(shifted(ids)[0], -1), torch.softmax(model(ids)[0], -1), atol=1e-12)
    for method in ("grad_x_input", "integrated_gradients", "grad_norm"):
        assert torch.allclose(token_saliency(shifted, batch, method=method), token_saliency(model, batch, method=method),
                              rtol=1e-9, atol=1e-12)


def test_seed_position_index_feature_is_not_attributed() -> None:
    cfg = replace(SEED.model, vocab_size=20, embedding_dim=8)
    torch.manual_seed(15)
    model = AttentionClassifier(cfg, torch.randn(20, 8)).double().eval()
    ids = distinct_ids(4, seed=16)
    features = model.embed(ids)
    assert features.shape == (1, 4, 9)
    assert torch.equal(features[0, :, -1], torch.arange(4, dtype=torch.float64))
    got = token_saliency(model, Batch(ids, ids != 0), target=0)
    assert torch.allclose(got, manual_grad_x_input(model, ids, 0), rtol=1e-9, atol=1e-12)


def test_saliency_restores_training_flag_and_leaves_no_grads() -> None:
    model = tiny_model(seed=17, dropout=0.3).train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    ids = distinct_ids(5, seed=18)
    batch = Batch(ids, ids != 0)
    for method in ("grad_x_input", "integrated_gradients", "grad_norm"):
        a = token_saliency(model, batch, method=method, target=0, steps=8)
        b = token_saliency(model, batch, method=method, target=0, steps=8)
        assert torch.equal(a, b)  # eval mode inside: dropout is off, results are deterministic
        assert not a.requires_grad
    assert model.training
    assert all(p.grad is None for p in model.parameters())
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())


def test_saliency_under_no_grad_and_with_padding() -> None:
    model = tiny_model(seed=19).eval()
    ids = torch.tensor([[2, 3, 4, 0, 0]])
    with torch.no_grad():
        got = token_saliency(model, Batch(ids, ids != 0), target=1)
    assert got.shape == (5,) and torch.all(got[3:] == 0) and torch.any(got[:3] != 0)


def test_saliency_rejects_bad_arguments() -> None:
    model = tiny_model()
    ids = torch.tensor([[2, 3, 4]])
    batch = Batch(ids, ids != 0)
    with pytest.raises(ValueError, match=r"\(2, 3\)"):
        token_saliency(model, Batch(ids.repeat(2, 1), ids.repeat(2, 1) != 0))
    with pytest.raises(ValueError, match="lime"):
        token_saliency(model, batch, method="lime")
    with pytest.raises(ValueError, match="target = 5"):
        token_saliency(model, batch, target=5)
    with pytest.raises(ValueError, match="steps = 0"):
        token_saliency(model, batch, method="integrated_gradients", steps=0)


# --- top-k filter ----------------------------------------------------------------------------


def test_top_k_mask_keeps_exactly_k_per_row() -> None:
    w = random_attention(2, 3, 6, 6, seed=20)
    out = top_k_mask(w, k=2)
    assert out.shape == w.shape
    assert torch.equal((out != 0).sum(-1), torch.full((2, 3, 6), 2))
    kept_min = out.masked_fill(out == 0, float("inf")).amin(-1)
    dropped_max = w.masked_fill(out != 0, float("-inf")).amax(-1)
    assert (kept_min >= dropped_max).all()
    assert torch.equal(out[out != 0], w[out != 0])  # kept weights unchanged


def test_top_k_mask_ties_and_large_k() -> None:
    w = torch.full((3, 4), 0.25)
    assert torch.equal((top_k_mask(w, k=1) != 0).sum(-1), torch.ones(3, dtype=torch.long))
    assert torch.equal(top_k_mask(w, k=10), w)


def test_top_k_mask_threshold_and_both() -> None:
    w = torch.tensor([[0.5, 0.3, 0.15, 0.05], [0.26, 0.25, 0.25, 0.24]])
    assert torch.equal(top_k_mask(w, threshold=0.25), torch.tensor([[0.5, 0.3, 0.0, 0.0], [0.26, 0.25, 0.25, 0.0]]))
    assert torch.equal(top_k_mask(w, k=1, threshold=0.3), torch.tensor([[0.5, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]))
    assert torch.equal(top_k_mask(w), w)


@pytest.mark.parametrize(("k", "threshold", "shown"), [(0, None, "k = 0"), (-2, None, "k = -2"), (None, 1.5, "1.5"), (None, -0.1, "-0.1")])
def test_top_k_mask_rejects_bad_arguments(k: int | None, threshold: float | None, shown: str) -> None:
    with pytest.raises(ValueError, match=shown):
        top_k_mask(torch.ones(2, 2), k=k, threshold=threshold)


# --- explain() on a real run -----------------------------------------------------------------

TEXTS = ["a great movie", "i love it", "wonderful fun", "a terrible movie", "i hate it", "awful boring"] * 2
LABELS = ["pos", "pos", "pos", "neg", "neg", "neg"] * 2


@pytest.fixture(scope="module")
def explained_run() -> Run:
    cfg = ModelConfig(n_layers=2, n_heads=2, d_model=16, d_ff=32)
    train = TrainConfig(epochs=2, batch_size=4, val_fraction=0.0)
    result = Trainer(cfg, train, dataset_from_lists(TEXTS, LABELS), load_embeddings()).run()
    return result


@pytest.mark.parametrize("method", ["grad_x_input", "integrated_gradients", "grad_norm"])
def test_explain_shapes_are_consistent(explained_run: Run, method: str) -> None:
    ex = explain(explained_run, "a great xqzzy movie", method=method)
    assert isinstance(ex, Explanation)
    t, layers, heads = 4, 2, 2
    assert ex.tokens == ["a", "great", "<unk>", "movie"] and ex.unknown_tokens == ["xqzzy"]
    assert ex.attention.shape == (layers, heads, t, t)
    assert ex.head_average.shape == (layers, t, t)
    assert ex.rollout.shape == (t, t) and ex.saliency.shape == (t,) and ex.attention_to_token.shape == (t,)
    assert isinstance(ex.input_features, np.ndarray) and ex.input_features.shape == (t, explained_run.model_config.input_dim)
    assert torch.allclose(ex.rollout.sum(-1), torch.ones(t), atol=1e-5)
    assert float(ex.attention_to_token.sum()) == pytest.approx(1.0, abs=1e-5)
    assert torch.allclose(ex.head_average, ex.attention.mean(1))
    assert ex.saliency_method == method and ex.notes


def test_a_pooling_attention_reads_the_rollout_of_the_layers_and_is_not_one_of_them() -> None:
    bundled = load_run("data/default_run")  # 2 layers, then the pooling attention
    ex = explain(bundled, "the food was not good at all")
    assert ex.attention.shape[0] == 3 and bundled.model_config.residual
    layers = attention_rollout(ex.attention[:2], residual=True)  # (T, T): Abnar & Zuidema's, over the layers
    assert torch.allclose(ex.rollout, layers)  # was: the pooling map multiplied in as a third layer, with a residual
    pooling_row = ex.attention[2].mean(0)[0]  # (T,): its one row, heads averaged
    assert torch.allclose(ex.attention_to_token, pooling_row @ layers)  # as the faithfulness tab's rollout reads it
    assert float(ex.attention_to_token.sum()) == pytest.approx(1.0, abs=1e-5)


def test_the_rollout_s_maps_are_named_from_the_models_map_names() -> None:
    assert rollout_maps(ModelConfig(n_layers=2, pooling="attention")) == "layers 1–2 and the pooling attention"
    assert rollout_maps(ModelConfig(n_layers=2, pooling="attention"), pooling=False) == "layers 1–2"
    assert rollout_maps(ModelConfig(n_layers=1, pooling="attention")) == "layer 1 and the pooling attention"
    assert rollout_maps(ModelConfig(n_layers=3, pooling="mean")) == "layers 1–3"


def test_explain_agrees_with_predict(explained_run: Run) -> None:
    text = "i love a wonderful movie"
    ex, pred = explain(explained_run, text), explained_run.predict(text)
    assert ex.label == pred.label and ex.probabilities == pred.probabilities and ex.tokens == pred.tokens
    assert torch.allclose(ex.attention, torch.tensor(pred.attention), atol=1e-6)
    assert ex.target == explained_run.label_names.index(pred.label)
    other = 1 - ex.target
    assert explain(explained_run, text, target=other).target == other
    assert len(ex.to_dict()["saliency"]) == len(ex.tokens)


def test_explain_leaves_the_model_untouched(explained_run: Run) -> None:
    model = explained_run.model
    before = {k: v.clone() for k, v in model.state_dict().items()}
    flags = {k: p.requires_grad for k, p in model.named_parameters()}
    grads = {k: None if p.grad is None else p.grad.clone() for k, p in model.named_parameters()}  # training leaves some
    model.train()
    try:
        explain(explained_run, "a terrible boring movie", method="integrated_gradients")
        assert model.training
    finally:
        model.eval()
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    for k, p in model.named_parameters():  # .grad neither set nor changed
        assert (p.grad is None) if grads[k] is None else torch.equal(p.grad, grads[k])
    assert {k: p.requires_grad for k, p in model.named_parameters()} == flags


def test_explain_seed_like_run_shows_position_index() -> None:
    cfg = replace(SEED.model, n_classes=2)
    train = TrainConfig(epochs=1, batch_size=4, val_fraction=0.0)
    seed_run = Trainer(cfg, train, dataset_from_lists(TEXTS, LABELS), load_embeddings()).run()
    ex = explain(seed_run, "a great movie")
    assert ex.input_features.shape == (3, 51)
    assert ex.input_features[:, -1].tolist() == [0.0, 1.0, 2.0]
    assert torch.allclose(ex.rollout, ex.head_average[0], atol=1e-6)  # 1 layer, no residual


def explain_the_long_way(explained_run: Run, text: str, method: str, target: int | None) -> dict:
    """explain() spelled out as it was written before it read one run_sentence: its own encoding, its own
    forward from model.embed, and token_saliency from the batch (which embeds the sentence again)."""
    model = explained_run.model
    enc, batch = explained_run.encoder.encode_for_model(text)
    with torch.no_grad():
        features = model.embed(batch.ids, batch.extra)
        logits, attn = model.forward_features(features, batch.mask)
    probs = torch.softmax(logits[0], dim=-1)
    cls = int(probs.argmax()) if target is None else target
    return {"tokens": list(enc.tokens), "label": explained_run.label_names[int(probs.argmax())], "target": cls,
            "probabilities": {n: round(float(p), 6) for n, p in zip(explained_run.label_names, probs.tolist(), strict=True)},
            "attention": attn[:, 0], "features": features[0].numpy(),
            "saliency": token_saliency(model, batch, target=cls, method=method, steps=8)}


@pytest.mark.parametrize("method", ["grad_x_input", "integrated_gradients", "grad_norm"])
def test_explain_on_the_bundled_run_equals_the_spelled_out_forward_and_saliency_to_the_bit(method: str) -> None:
    from attention_core import load_run
    from ui.preview import DEFAULT_RUN, EXAMPLES

    bundled = load_run(DEFAULT_RUN)
    for text, target in [(EXAMPLES[0], None), (EXAMPLES[2], 1), ("a xqzzy , wonderful film !", None), (EXAMPLES[4], 0)]:
        want, ex = explain_the_long_way(bundled, text, method, target), explain(bundled, text, method=method, target=target,
                                                                               steps=8)
        assert (ex.tokens, ex.label, ex.target, ex.probabilities) == (want["tokens"], want["label"], want["target"],
                                                                      want["probabilities"])
        assert torch.equal(ex.attention, want["attention"]) and torch.equal(ex.saliency, want["saliency"])
        assert np.array_equal(ex.input_features, want["features"])


def test_explain_runs_the_sentence_through_the_model_once(explained_run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    """One run_sentence gives explain its probabilities, attention and the features saliency starts from:
    the sentence is encoded and embedded once (it was encoded once and embedded twice)."""
    embeds, encodes = [], []
    real_embed, real_encode = explained_run.model.embed, explained_run.encoder.encode_for_model
    monkeypatch.setattr(explained_run.model, "embed", lambda *a, **k: embeds.append(1) or real_embed(*a, **k))
    monkeypatch.setattr(explained_run.encoder, "encode_for_model", lambda *a, **k: encodes.append(1) or real_encode(*a, **k))
    ex = explain(explained_run, "a great movie", method="integrated_gradients")
    assert (len(encodes), len(embeds)) == (1, 1)
    from attention_core.sentence import run_sentence

    seen = run_sentence(explained_run.model, explained_run.encoder, "a great movie", features=True)
    assert seen.features is not None and np.array_equal(ex.input_features, seen.features.numpy())
    assert run_sentence(explained_run.model, explained_run.encoder, "a great movie").features is None  # only when asked for
    assert torch.equal(ex.attention, seen.attention)


def test_explain_refuses_a_target_that_is_not_a_class(explained_run: Run) -> None:
    with pytest.raises(ValueError, match="target = 5 is not a class index"):
        explain(explained_run, "a great movie", target=5)
