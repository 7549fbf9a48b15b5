"""Fine-tuning a pretrained encoder: the trainer, the run it saves (only what training changed, its base named),
loading it back, and the pretrained encoder itself as a run with an untrained head."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

import pytest
import torch

from attention_core import TrainConfig, Trainer, dataset_from_lists, load_run, save_run
from attention_core.errors import ConfigError, RunError
from attention_core.presets import preset
from attention_core.pretrained import BUNDLED, UNTRAINED_LABELS, bundled_checkpoint, load_base
from attention_core.training import TrainerSpec
from tests.helpers.cli import cli_process

TEXTS = ["a great phone", "an awful phone", "great value", "awful value", "i love it", "i hate it"] * 6
LABELS = ["pos", "neg", "pos", "neg", "pos", "neg"] * 6


@pytest.fixture(scope="module")
def finetuned(emb):
    # The top 2 layers train (the preset trains all 6: frozen layers are what these tests look at)
    model_cfg, train_cfg = preset("finetune", epochs=2, max_tokens=16, batch_size=12, probes=("a great phone",),
                                  frozen_layers=4)
    run = Trainer(model_cfg, train_cfg, dataset_from_lists(TEXTS, LABELS), emb).run()
    return run


def test_only_the_top_layers_and_the_head_learn_the_rest_stays_as_pretrained(finetuned):
    base, _ = load_base(finetuned.model_config)
    before, after = base.state_dict(), finetuned.model.state_dict()
    changed = {k for k in after if not torch.equal(before[k], after[k])}
    assert changed and all(k.startswith(("blocks.4.", "blocks.5.", "head.")) for k in changed)
    assert {k.split(".")[1] for k in changed if k.startswith("blocks.")} == {"4", "5"}
    assert finetuned.model_config.base == BUNDLED and finetuned.label_names == ("neg", "pos")
    assert [r.epoch for r in finetuned.history.epochs] == [1, 2] and finetuned.history.status == "finished"
    probe = finetuned.history.probes[-1].sentences[0]
    assert probe.tokens == ["[CLS]", "a", "great", "phone", "[SEP]"]  # the word pieces, special tokens in place
    assert torch.tensor(probe.attention).shape == (6, 12, 5, 5)


def test_a_saved_run_holds_only_what_training_changed_and_predicts_the_same_when_loaded(finetuned, tmp_path):
    path = save_run(finetuned, tmp_path / "ft")
    from safetensors import safe_open

    with safe_open(str(path / "model.safetensors"), "pt") as f:
        stored = set(f.keys())
    trained = {k for k, p in finetuned.model.named_parameters() if p.requires_grad}
    assert stored == trained and all(k.startswith(("blocks.4.", "blocks.5.", "head.")) for k in stored)
    assert (path / "model.safetensors").stat().st_size < 0.25 * (bundled_checkpoint() / "model.safetensors").stat().st_size
    assert json.loads((path / "config.json").read_text())["model"]["base"] == BUNDLED
    loaded = load_run(path)
    for text in ("a great phone", "what an awful day"):
        a, b = finetuned.predict(text), loaded.predict(text)
        assert a.tokens == b.tokens and a.probabilities == b.probabilities
        assert torch.allclose(torch.tensor(a.attention), torch.tensor(b.attention))
    assert sorted(loaded.snapshots) == sorted(finetuned.snapshots)


def test_a_run_whose_base_folder_is_gone_says_so(finetuned, tmp_path):
    folder = shutil.copytree(bundled_checkpoint(), tmp_path / "my-bert")
    run = replace(finetuned, model_config=replace(finetuned.model_config, base=str(folder)))
    path = save_run(run, tmp_path / "ft-elsewhere")
    assert load_run(path).predict("great").probabilities == finetuned.predict("great").probabilities
    shutil.rmtree(folder)
    with pytest.raises(RunError) as err:
        load_run(path)
    assert "my-bert" in str(err.value)


def test_the_pretrained_encoder_is_a_run_with_an_untrained_head_the_same_on_every_load():
    run = load_run(BUNDLED)
    assert run.label_names == UNTRAINED_LABELS and run.history.status == "pretrained" and not run.history.epochs
    assert "untrained" in run.history.message and run.path is None
    p = run.predict("the food was good")
    assert p.tokens == ["[CLS]", "the", "food", "was", "good", "[SEP]"]
    assert len(p.attention) == 6 and len(p.attention[0]) == 12
    assert load_run(BUNDLED).predict("the food was good").probabilities == p.probabilities


def test_settings_are_checked_before_any_work(emb, tmp_path):
    data = dataset_from_lists(TEXTS, LABELS)
    model_cfg, train_cfg = preset("finetune")
    with pytest.raises(ConfigError, match="max_tokens = 600"):
        TrainerSpec(model_cfg, replace(train_cfg, max_tokens=600), data, emb).check()
    (tmp_path / "config.json").write_text('{"model_type": "gpt2"}')
    with pytest.raises(RunError, match="not a BERT-family one"):
        TrainerSpec(replace(model_cfg, base=str(tmp_path)), train_cfg, data, emb).check()


def test_the_cli_predicts_with_the_pretrained_encoder_by_its_short_name():
    r = cli_process("predict", "minilm", "the food was good")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["tokens"] == ["[CLS]", "the", "food", "was", "good", "[SEP]"]
    assert [len(layer) for layer in out["attention"]] == [12] * 6  # a heads × tokens × tokens array per layer
    assert set(out["probabilities"]) == set(UNTRAINED_LABELS)


def test_trainconfig_is_unchanged_by_the_preset():
    assert TrainConfig().max_tokens == 64  # (the small model's default; the preset sets its own)


def test_the_cli_fine_tunes_with_the_preset_and_refuses_what_does_not_apply(tmp_path):
    r = cli_process("train", "data/small.csv", "--preset", "finetune", "--epochs", "1", "--out", str(tmp_path / "ft"),
                    "--quiet")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["epochs"] == 1 and out["status"] == "finished" and out["verdict"] in ("learned", "nothing", "unclear")
    assert "unknown words" not in r.stderr  # a word-vector figure: it says nothing about word pieces
    assert load_run(tmp_path / "ft").model_config.base == BUNDLED
    r = cli_process("train", "data/small.csv", "--preset", "finetune", "--layers", "2", "--out", str(tmp_path / "x"))
    assert r.returncode == 2 and r.stderr.strip().splitlines()[-1].startswith("error: --layers do(es) not apply")


def test_the_time_lapse_starts_from_the_base_and_its_first_snapshot_keeps_only_the_new_head(finetuned, tmp_path):
    assert set(finetuned.snapshots[0]) == {"head.weight", "head.bias"}  # the rest is the base checkpoint's
    assert set(finetuned.snapshots[max(finetuned.snapshots)]) == {
        k for k, p in finetuned.model.named_parameters() if p.requires_grad}
    frames = load_run(save_run(finetuned, tmp_path / "ft")).forward_over_training("a great phone")
    assert [e for e, _ in frames] == sorted(finetuned.snapshots)
    before = load_run(BUNDLED).forward("a great phone").attention  # the pretrained encoder's own maps
    assert torch.allclose(frames[0][1].attention, before, atol=1e-6)
    kept = dict(frames)[finetuned.history.kept_epoch]  # the kept epoch's frame is the run's model
    assert torch.allclose(kept.attention, finetuned.forward("a great phone").attention, atol=2e-3)  # (float16)


def test_zipping_renaming_and_deleting_a_run_never_touch_its_base_folder_or_the_users_files(finetuned, tmp_path):
    from attention_core.run_folders import delete_run, rename_run, run_from_zip, run_to_zip

    base = shutil.copytree(bundled_checkpoint(), tmp_path / "my-bert")
    (base / "NOTES.txt").write_text("mine")
    before = sorted(p.name for p in base.iterdir())
    run = replace(finetuned, model_config=replace(finetuned.model_config, base=str(base)))
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "readme.txt").write_text("keep")
    path = save_run(run, runs / "ft")
    copy = run_from_zip(run_to_zip(path), runs, "ft")  # the name is taken: saved beside it
    assert copy.name == "ft-2" and "model.safetensors" in {p.name for p in copy.iterdir()}
    rename_run(runs, "ft-2", "ft-copy")
    delete_run(runs, "ft")
    delete_run(runs, "ft-copy")
    assert sorted(p.name for p in runs.iterdir()) == ["readme.txt"] and (runs / "readme.txt").read_text() == "keep"
    assert sorted(p.name for p in base.iterdir()) == before and (base / "NOTES.txt").read_text() == "mine"


@pytest.mark.parametrize(("frozen_layers", "freeze_embeddings", "freeze_head"),
                         [(4, True, False), (0, False, False), (3, True, True), (6, True, False)])
def test_the_disk_caps_count_of_trained_parameters_is_the_models(frozen_layers, freeze_embeddings, freeze_head):
    """pretrained.trained_parameters (a fine-tuning's room, before it starts) reads the sizes from tensor_names, the
    one list of the checkpoint's tensors: it equals what load_base leaves trainable."""
    from attention_core.pretrained import trained_parameters

    cfg = replace(preset("finetune")[0], frozen_layers=frozen_layers, freeze_embeddings=freeze_embeddings,
                  freeze_head=freeze_head)
    model, _ = load_base(cfg)
    assert trained_parameters(cfg) == sum(p.numel() for p in model.parameters() if p.requires_grad)
