"""A run that ends before its planned last epoch (patience, Stop) still keeps its time-lapse moments spread over the
epochs it trained, not only the planned ones it reached (attention_core.training._Snapshots)."""

from __future__ import annotations

import torch

from attention_core import ModelConfig, TrainConfig, Trainer, dataset_from_lists, load_embeddings
from attention_core.training import _Snapshots, snapshot_epochs

TEXTS = ["a great movie", "i love it", "wonderful fun", "a terrible movie", "i hate it", "awful boring"] * 4
LABELS = ["pos", "pos", "pos", "neg", "neg", "neg"] * 4


def test_a_run_ended_by_patience_keeps_its_moments_spread_over_the_epochs_it_trained():
    ds = dataset_from_lists(TEXTS + ["not great at all", "not bad really", "i did not love it", "fun but awful"],
                            LABELS + ["neg", "pos", "neg", "neg"])
    train = TrainConfig(epochs=400, batch_size=2, val_fraction=0.25, lr=0.05, patience=8, snapshots=6)
    result = Trainer(ModelConfig(n_layers=1, n_heads=2, d_model=16, d_ff=32), train, ds, load_embeddings()).run()
    h = result.history
    last = h.epochs[-1].epoch
    assert last < 400 and h.message.startswith("stopped early")  # the case this is about
    assert last > 6  # enough epochs for 6 moments (patience 8: at least 9 epochs, whatever the random draws)
    kept = sorted(result.snapshots)
    assert {0, h.kept_epoch, last} <= set(kept) and len(kept) >= 6
    spread = sorted(snapshot_epochs(last, 6))
    stride = 1  # the interim snapshots' spacing by then: at most 2 × 6 of them were kept (_Snapshots.take_planned)
    while last // stride + 1 > 2 * 6:
        stride *= 2
    assert all(min(abs(e - target) for e in kept) <= max(1, stride // 2) for target in spread), (kept, spread)


def test_a_run_that_reaches_its_end_keeps_the_planned_moments_and_interim_ones_stay_few():
    model = torch.nn.Linear(2, 2)
    snaps = _Snapshots(snapshot_epochs(1000, 6), model, 6)
    for epoch in range(1, 1001):
        snaps.take_planned(epoch, model)
        assert len(snaps.interim) <= 2 * 6  # memory: the stride doubles rather than keep every epoch
    assert sorted(snaps.weights) == sorted(snapshot_epochs(1000, 6))
    snaps.spread(1000)  # (as if it had ended there early: every target has a snapshot near it)
    assert sorted(snaps.weights) == [0, 200, 400, 600, 800, 1000]
