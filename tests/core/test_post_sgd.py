"""The Julia post's hand-written SGD step (the trainer's fast path for the seed preset) against autograd."""

from __future__ import annotations

import copy
import math
import warnings
from dataclasses import replace

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attention_core import EmbeddingSource, Trainer, dataset_from_lists, load_dataset, load_embeddings, preset
from attention_core.attention import attention_steps
from attention_core.post_sgd import PostModelSGDStep, post_sgd_step_applies

REVIEWS = ["i love this speaker", "great product", "it broke after a day", "waste of money", "it meets my need"]
LABELS = ["positive", "positive", "negative", "negative", "neutral"]


@pytest.fixture(scope="module")
def emb10k():
    return load_embeddings(EmbeddingSource(limit=10_000))


@pytest.mark.parametrize("freeze_head", [True, False])
def test_post_sgd_step_matches_autograd_training(emb10k, freeze_head):
    ds = dataset_from_lists(REVIEWS, LABELS)
    model_cfg, train_cfg = preset("seed", epochs=15, freeze_head=freeze_head)
    fast = Trainer(model_cfg, train_cfg, ds, emb10k)
    slow = Trainer(model_cfg, replace(train_cfg, grad_clip=1e12), ds, emb10k)  # any clip disables the fast path
    assert post_sgd_step_applies(fast.model_config, fast.train_config, fast.device)
    assert not post_sgd_step_applies(slow.model_config, slow.train_config, slow.device)
    a, b = fast.run(), slow.run()
    assert a.history.step_losses == pytest.approx(b.history.step_losses, abs=1e-5)
    # Each epoch's probes read the model: the step's weights reach it after every epoch, not only at the end.
    assert [p.epoch for p in a.history.probes] == list(range(16))
    for pa, pb in zip(a.history.probes, b.history.probes, strict=True):
        for sa, sb in zip(pa.sentences, pb.sentences, strict=True):
            assert torch.allclose(torch.tensor(sa.attention), torch.tensor(sb.attention), atol=2e-4), pa.epoch
            assert sa.probabilities == pytest.approx(sb.probabilities, abs=2e-4), pa["epoch"]
    for (name, pa), pb in zip(a.model.state_dict().items(), b.model.state_dict().values(), strict=True):
        assert torch.allclose(pa, pb, atol=1e-5), name


def test_prepare_appends_ones():
    x = torch.randn(3, 51, dtype=torch.float64)
    x1 = PostModelSGDStep.prepare(x)
    assert x1.dtype == np.float64 and np.array_equal(x1[:, :-1], x.numpy()) and np.array_equal(x1[:, -1], np.ones(3))


@pytest.mark.parametrize("freeze_head", [True, False])
def test_in_float64_every_loss_and_weight_is_autograd_sgds(emb10k, freeze_head):
    """Three epochs on the post's 39 sentences with a learning rate that moves the weights: every step's loss and
    the weights written back equal autograd + torch.optim.SGD's to float64 rounding."""
    small = load_dataset("data/small.csv")
    trainer = Trainer(*preset("seed", epochs=1, freeze_head=freeze_head), small, emb10k)
    fast, slow = copy.deepcopy(trainer.model).double(), copy.deepcopy(trainer.model).double()
    before = {k: v.clone() for k, v in slow.state_dict().items()}
    lr = 0.05
    sgd = PostModelSGDStep(fast, lr=lr, train_head=not freeze_head)
    optimizer = torch.optim.SGD([p for p in slow.parameters() if p.requires_grad], lr=lr)
    batches = [trainer.encoder.encode_for_model(text)[1] for text in small.texts]
    with torch.no_grad():
        inputs = [sgd.prepare(fast.embed(batch.ids)[0]) for batch in batches]
    for _ in range(3):
        for x1, batch, y in zip(inputs, batches, small.labels, strict=True):
            loss, _ = sgd.step(x1, y)
            logits, _ = slow(batch.ids, batch.mask, batch.extra, need_weights=False)
            expected = F.cross_entropy(logits, torch.tensor([y]))
            optimizer.zero_grad()
            expected.backward()
            optimizer.step()
            assert loss == pytest.approx(expected.item(), abs=1e-9)
    sgd.write_back(fast)
    for (name, a), b in zip(fast.state_dict().items(), slow.state_dict().values(), strict=True):
        assert torch.allclose(a, b, rtol=0, atol=1e-9), name
    moved = {k for k, v in slow.state_dict().items() if not torch.equal(v, before[k])}
    head = {"head.weight", "head.bias"}
    assert (moved & head == set()) == freeze_head and float((slow.state_dict()["blocks.0.attn.q_proj.weight"]
                                                            - before["blocks.0.attn.q_proj.weight"]).abs().max()) > 1e-3


def test_its_attention_is_attention_steps_and_the_models_map(emb10k):
    trainer = Trainer(*preset("seed", epochs=1), dataset_from_lists(REVIEWS, LABELS), emb10k)
    model = trainer.model
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():  # sharper attention than at initialisation, far from uniform
        model.blocks[0].attn.q_proj.weight.normal_(0.0, 0.3, generator=g)
        model.blocks[0].attn.k_proj.weight.normal_(0.0, 0.3, generator=g)
    sgd = PostModelSGDStep(model, lr=0.001, train_head=False)
    _, batch = trainer.encoder.encode_for_model("he loved that plug with good price")
    with torch.no_grad():
        x = model.embed(batch.ids)[0]  # (n, d): word vectors and the position index
        _, maps = model(batch.ids, batch.mask, batch.extra)  # (L, B, H, T, T)
    q, k, v, alpha = (torch.from_numpy(t) / sgd.a for t in sgd.attention(sgd.prepare(x)))  # q, k, v come times a
    alpha = alpha * sgd.a
    n, d = x.shape
    attn = model.blocks[0].attn
    assert torch.allclose(q, attn.q_proj(x), atol=1e-5) and torch.allclose(v, attn.v_proj(x), atol=1e-5)
    assert alpha.shape == (n, n) and float(alpha.max(-1).values.mean()) > 2 / n
    # Float32 rounding apart (the array holds the weights times a): α of attention_steps and of the model's map.
    assert torch.allclose(alpha, attention_steps(q, k, v, scale=1 / math.sqrt(d)).weights, atol=1e-6)
    assert torch.allclose(alpha, maps[0, 0, 0], atol=1e-6)


def test_a_diverging_post_sgd_run_keeps_its_last_good_epoch(emb10k):
    """Weights that overflow at an epoch's last step are caught after the epoch: the model is the previous one."""
    two = dataset_from_lists(["a great movie", "a terrible movie"], ["pos", "neg"])
    model_cfg, train_cfg = preset("seed", epochs=300, freeze_head=False, lr=1e6)
    with warnings.catch_warnings(record=True) as caught:
        warnings.filterwarnings("always", category=RuntimeWarning, append=True)
        result = Trainer(model_cfg, train_cfg, two, emb10k).run()
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)]  # NumPy's overflow warnings: noise
    h = result.history
    assert h.status == "diverged"
    last = len(h.epochs)
    assert h.message == (f"weights became NaN/inf in epoch {last + 1} with learning rate 1e+06 — try a lower learning "
                         "rate, e.g. 100000; the last good weights are kept")
    assert last >= 1 and max(result.snapshots) == last
    same_epochs = Trainer(model_cfg, replace(train_cfg, epochs=last), two, emb10k).run()
    assert same_epochs.history.status == "finished"
    for name, weights in result.model.state_dict().items():
        assert torch.equal(weights, same_epochs.model.state_dict()[name]), name


def test_a_loss_that_overflows_mid_epoch_rolls_back_to_the_start(emb10k):
    model_cfg, train_cfg = preset("seed", epochs=30, freeze_head=False, lr=100.0)
    small = load_dataset("data/small.csv")
    trainer = Trainer(model_cfg, train_cfg, small, emb10k)
    untrained = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    result = trainer.run()
    h = result.history
    assert h.status == "diverged" and not h.epochs
    assert h.message.startswith(f"training diverged at epoch 1, step {len(h.step_losses) + 1} (loss = nan) with "
                                "learning rate 100 — try a lower learning rate, e.g. 10;")
    assert all(torch.equal(v, untrained[k]) for k, v in result.model.state_dict().items())
