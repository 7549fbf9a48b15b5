"""ModelConfig.casing: how each word was written (GloVe's vectors are lower-case) read as a learned vector —
the kinds, their alignment with the tokens, the encoder and batches, the model (lower case adds nothing),
every path that runs a sentence agreeing, training that learns from capitals alone, save → load, and the
presets and old runs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from attention_core import ModelConfig, TrainConfig, Trainer, load_run, save_run
from attention_core.data import dataset_from_lists
from attention_core.encoding import TextEncoder
from attention_core.explain import token_saliency
from attention_core.model import AttentionClassifier
from attention_core.post_sgd import post_sgd_step_applies
from attention_core.presets import preset
from attention_core.text import CASINGS, TOKENIZERS, casing_kind, token_casing, tokenize
from attention_core.training import predict_probabilities

ROOT = Path(__file__).resolve().parents[2]
SMALL = ModelConfig(n_layers=1, n_heads=2, d_model=16, d_ff=32, pooling="attention", casing=True)
LOWER, CAPITALISED, CAPITALS, MIXED = range(4)


@pytest.mark.parametrize(("written", "kind"), [
    ("the", "lower"), ("3.5", "lower"), ("?", "lower"), ("n't", "lower"), ("The", "capitalised"), ("I", "capitalised"),
    ("NASA", "capitals"), ("N'T", "capitals"), ("well-DONE", "mixed"), ("iPhone", "mixed"), ("McDonald", "mixed"),
])
def test_casing_kind(written, kind) -> None:
    assert CASINGS[casing_kind(written)] == kind


@pytest.mark.parametrize("text", [
    "What does NASA stand for ?", "I DON'T like it... at ALL!", "The \u201cBest\u201d pizza in NYC, 10:30 pm",
    "well-Known low-cost iPhone", "", "   ", "it's McDonald's", "WASN'T it?",
])
@pytest.mark.parametrize("tokenizer", sorted(TOKENIZERS))
def test_token_casing_gives_one_kind_per_token_read_from_the_text_as_written(text, tokenizer) -> None:
    tokens = TOKENIZERS[tokenizer](text)
    kinds = token_casing(text, tokens)
    assert len(kinds) == len(tokens)
    for token, kind in zip(tokens, kinds, strict=True):
        if not any(ch.isalpha() for ch in token):
            assert kind == LOWER


def test_token_casing_finds_each_token_where_it_was_written() -> None:
    text = "nasa said NASA isn't Nasa's"
    assert list(zip(tokenize(text), token_casing(text, tokenize(text)), strict=True)) == [
        ("nasa", LOWER), ("said", LOWER), ("nasa", CAPITALS), ("is", LOWER), ("n't", LOWER), ("nasa", CAPITALISED),
        ("'s", LOWER)]


def test_text_whose_length_lower_casing_changes_reads_as_lower_case() -> None:
    text = "İSTANBUL is BIG"  # "İ".lower() is two characters: the positions no longer line up
    assert len("İSTANBUL".lower()) != len("İSTANBUL")
    assert token_casing(text, tokenize(text)) == [LOWER] * len(tokenize(text))


def test_the_encoder_gives_a_kind_per_id_after_unknown_words_and_truncation(emb) -> None:
    text = "The XQZZY food was GREAT and Cheap"
    for unknown in ("unk", "drop"):
        enc = TextEncoder.build(emb, [text], unknown=unknown, casing=True)
        e = enc.encode(text)
        assert len(e.casing) == len(e.ids)
        expected = [CAPITALISED, CAPITALS, LOWER, LOWER, CAPITALS, LOWER, CAPITALISED]
        if unknown == "drop":
            expected.pop(1)
        assert list(e.casing) == expected
    short = TextEncoder.build(emb, [text], max_tokens=3, casing=True).encode(text)
    assert list(short.casing) == [CAPITALISED, CAPITALS, LOWER] and len(short.ids) == 3
    plain = TextEncoder.build(emb, [text]).encode(text)
    assert plain.casing == () and plain.ids == TextEncoder.build(emb, [text], casing=True).encode(text).ids


def test_batches_pad_the_kinds_with_lower_case(emb) -> None:
    texts = ["GOOD food", "The food was very GOOD"]
    enc = TextEncoder.build(emb, texts, casing=True)
    batch = enc.collate([enc.encode(t) for t in texts])
    assert batch.casing.tolist() == [[CAPITALS, LOWER, 0, 0, 0], [CAPITALISED, LOWER, LOWER, LOWER, CAPITALS]]
    assert TextEncoder.build(emb, texts).collate([enc.encode(t) for t in texts]).casing is None
    _, one = enc.encode_for_model("GOOD food")
    assert one.casing.tolist() == [[CAPITALS, LOWER]]


def _model(cfg: ModelConfig) -> AttentionClassifier:
    torch.manual_seed(0)
    cfg = replace(cfg, vocab_size=6, embedding_dim=8, n_classes=2)
    return AttentionClassifier(cfg, torch.randn(6, 8)).eval()


def test_lower_case_adds_nothing_and_capitals_add_their_learned_vector() -> None:
    with_casing, without = _model(SMALL), _model(replace(SMALL, casing=False))
    assert with_casing.casing.shape == (len(CASINGS) - 1, 8)
    assert torch.count_nonzero(with_casing.casing) == 0  # starts reading capitals as lower case
    without.load_state_dict({k: v for k, v in with_casing.state_dict().items() if k != "casing"})
    ids = torch.tensor([[2, 3, 4]])
    lower = torch.zeros_like(ids)
    with torch.no_grad():
        with_casing.casing.copy_(torch.randn(len(CASINGS) - 1, 8))
        reference, _ = without(ids)
        assert torch.equal(with_casing(ids, casing=lower)[0], reference)
        assert torch.equal(with_casing(ids)[0], reference)  # no casing given: all lower case
        shouted = with_casing(ids, casing=torch.tensor([[CAPITALS, LOWER, LOWER]]))[0]
        assert not torch.allclose(shouted, reference)
        assert torch.equal(without(ids, casing=torch.tensor([[CAPITALS, LOWER, LOWER]]))[0], reference)


def _shouting_data():
    words = ["good food", "nice day", "great service", "lovely room", "fine place", "bad film", "cold soup",
             "slow staff", "old car", "big house"]
    texts = [w.upper() for w in words] + words
    return dataset_from_lists(texts * 3, (["shout"] * len(words) + ["calm"] * len(words)) * 3)


def test_a_model_with_casing_learns_a_label_only_capitals_tell_and_every_path_reads_them(emb, tmp_path) -> None:
    cfg = replace(SMALL, dropout=0.0)
    train = TrainConfig(epochs=12, batch_size=8, lr=1e-2, val_fraction=0.2, seed=0)
    run = Trainer(cfg, train, _shouting_data(), emb).run(name="casing")
    unseen = ["WARM BREAD", "warm bread", "Quiet Street", "QUIET STREET"]
    assert [run.predict(t).label for t in unseen if t.isupper()] == ["shout", "shout"]
    assert run.predict("warm bread").label == "calm"
    # the same words without capitals read the same as the model without casing would: only case differs
    blind = Trainer(replace(cfg, casing=False), train, _shouting_data(), emb).run(name="blind")
    assert blind.predict("WARM BREAD").probabilities == blind.predict("warm bread").probabilities

    many = predict_probabilities(run.model, run.encoder, unseen)
    for row, text in zip(many, unseen, strict=True):
        said = run.predict(text).probabilities
        assert row.tolist() == pytest.approx([said[label] for label in run.label_names], abs=1e-6)
    _, batch = run.encoder.encode_for_model("WARM BREAD")
    with torch.no_grad():
        assert not torch.equal(run.model.embed(batch.ids, batch.extra, batch.casing), run.model.embed(batch.ids, batch.extra))
    assert token_saliency(run.model, batch, method="grad_norm").shape == (2,)

    save_run(run, tmp_path / "r")
    loaded = load_run(tmp_path / "r")
    assert loaded.model_config.casing and loaded.encoder.casing
    for text in unseen:
        a, b = run.predict(text), loaded.predict(text)
        assert a.probabilities == b.probabilities and a.attention == b.attention


def test_training_with_casing_is_deterministic(emb) -> None:
    train = TrainConfig(epochs=2, batch_size=8, seed=3)
    a, b = (Trainer(SMALL, train, _shouting_data(), emb).run().history for _ in range(2))
    assert [e.train_loss for e in a.epochs] == [e.train_loss for e in b.epochs]
    assert [e.val_loss for e in a.epochs] == [e.val_loss for e in b.epochs]


def test_presets_and_old_runs() -> None:
    assert preset("default")[0].casing and not preset("seed")[0].casing
    model_cfg, train_cfg = preset("seed")
    assert post_sgd_step_applies(model_cfg, train_cfg, torch.device("cpu"))
    assert not post_sgd_step_applies(replace(model_cfg, casing=True), train_cfg, torch.device("cpu"))
    seed_run = load_run(ROOT / "data" / "seed_run" / "100_epochs")  # saved before the option
    assert not seed_run.model_config.casing and not seed_run.encoder.casing
    assert seed_run.model.casing is None


def test_the_notes_say_which_words_were_read_with_capitals(emb) -> None:
    text = "The food was NOT good on my iPhone"
    read = TextEncoder.build(emb, [text], casing=True).encode(text).notes
    assert [n for n in read if "capitals" in n][0].endswith(": The, NOT, iphone (mIxed)")
    assert not [n for n in TextEncoder.build(emb, [text]).encode(text).notes if "capitals" in n]
