"""Presets are defined once (attention_core/presets.py): the form, the CLI's help and the README read them."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from attention_core import presets
from attention_core.cli import main
from attention_core.errors import ConfigError
from attention_core.model import ModelConfig
from attention_core.presets import PRESETS, Preset, preset
from attention_core.training import TrainConfig

ROOT = Path(__file__).resolve().parents[2]
NUMBER_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}


def readme_section() -> tuple[str, str]:
    """The README's presets section: (the number word of its title, its text)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    title = re.search(r"^## The (\w+) presets?\n", readme, flags=re.MULTILINE)
    assert title, "the README has no section '## The … presets'"
    end = readme.find("\n## ", title.end())
    return title.group(1), readme[title.end(): end if end >= 0 else None]


def train_help(capsys: pytest.CaptureFixture[str]) -> str:
    """``train --help`` as the CLI prints it, its whitespace folded (argparse wraps lines)."""
    with pytest.raises(SystemExit) as exit_:
        main(["train", "--help"])
    assert exit_.value.code == 0
    return " ".join(capsys.readouterr().out.split())


def test_readme_section_is_the_registry() -> None:
    word, section = readme_section()
    assert word == NUMBER_WORDS[len(PRESETS)]
    assert presets.markdown_table() in section, (
        "README.md's presets table differs from attention_core/presets.py; paste the output of "
        "`python -m attention_core.presets`:\n" + presets.markdown_table()
    )
    for p in PRESETS.values():
        assert f"| `{p.name}` | {p.label} | {p.summary} |" in section
        assert f"**{p.name}**" in section  # the details below the table cover every preset


def test_cli_help_lists_every_preset(capsys: pytest.CaptureFixture[str]) -> None:
    text = train_help(capsys)
    for p in PRESETS.values():
        assert f"{p.name} = {p.summary}" in text, p.name
    assert f"one of {' | '.join(PRESETS)} (default: default)" in text


def test_the_form_reads_labels_and_captions_from_the_registry() -> None:
    from ui import forms

    assert list(forms.PRESET_LABELS) == [p.label for p in PRESETS.values()] + [forms.CUSTOM]
    for p in PRESETS.values():
        assert forms.PRESET_LABELS[p.label] == p.name and forms.PRESET_HELP[p.label] == p.help
    assert forms.PRESET_LABELS[forms.CUSTOM] == "default"


def test_a_new_entry_reaches_the_cli_help_and_the_table(monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    tiny = Preset("tiny", "Tiny", "one layer, one head, 50 % of the usual width", "A tiny model.",
                  ModelConfig(n_layers=1, n_heads=1, d_model=32), TrainConfig(epochs=2))
    monkeypatch.setitem(PRESETS, "tiny", tiny)
    assert preset("tiny") == (tiny.model, tiny.train)
    assert "| `tiny` | Tiny | one layer, one head, 50 % of the usual width |" in presets.markdown_table()
    assert "tiny = one layer, one head, 50 % of the usual width" in train_help(capsys)  # a % survives argparse


def test_unknown_preset_is_a_clear_error() -> None:
    with pytest.raises(ConfigError) as err:
        preset("huge")
    assert str(err.value) == "unknown preset 'huge' — choose one of default, seed, finetune"


def test_overrides_go_to_the_config_that_has_the_field() -> None:
    model, train = preset("seed", epochs=3, freeze_head=False)
    assert train == replace(PRESETS["seed"].train, epochs=3)
    assert model == replace(PRESETS["seed"].model, freeze_head=False)
    assert preset("default") == (PRESETS["default"].model, PRESETS["default"].train)
    with pytest.raises(ConfigError, match=r"unknown setting\(s\) \['n_hedas'\]"):
        preset("default", n_hedas=2)
    with pytest.raises(ConfigError, match="epochs"):
        preset("default", epochs=0)  # the configs still check their values


def test_presets_are_named_by_their_key() -> None:
    assert list(PRESETS) == ["default", "seed", "finetune"]  # the form's and the CLI's order; `default` is --preset's default
    for name, p in PRESETS.items():
        assert p.name == name and p.label and p.help
        assert "\n" not in p.summary and "|" not in p.summary  # one line, and a table cell
    assert len({p.label for p in PRESETS.values()}) == len(PRESETS)


def test_printing_the_table_is_quiet_on_stderr() -> None:
    """``python -m attention_core.presets`` (the README's command) prints the table and nothing else: no runpy
    warning, which would come if importing the package imported the presets module first."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-W", "default", "-m", "attention_core.presets"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stderr == ""
    assert out.stdout.strip() == presets.markdown_table()


def test_the_finetune_presets_sizes_are_the_bundled_checkpoints() -> None:
    from attention_core.pretrained import base_model_config

    p = PRESETS["finetune"].model
    assert p == base_model_config("minilm", frozen_layers=p.frozen_layers, freeze_embeddings=p.freeze_embeddings)


def test_the_finetune_preset_trains_every_layer_and_keeps_the_word_pieces_as_pretrained() -> None:
    """Chosen on the tuning sets' validation splits (benchmarks/README.md, "Fine-tuning's quality", second and third
    rounds): 2e-4 for up to 100 steps, lower for longer trainings."""
    model, train = PRESETS["finetune"].model, PRESETS["finetune"].train
    assert model.frozen_layers == 0 and model.freeze_embeddings and train.lr == 2e-4 and train.lr_reference_steps == 100


def test_the_finetune_preset_keeps_the_epoch_of_the_highest_validation_macro_f1_and_says_so() -> None:
    """Chosen on the tuning sets' validation splits (benchmarks/README.md, "Seventh round"): fine-tuning's validation
    loss rises after an epoch or two while its accuracy still rises. What the form and the CLI say agrees with it."""
    p = PRESETS["finetune"]
    assert p.train.keep_by == "macro_f1" and p.train.patience is None
    assert "highest validation macro-F1 kept" in p.summary and "highest validation macro-F1 kept" in p.help
    assert "lowest validation loss" not in p.summary + p.help
    assert PRESETS["default"].train.keep_by == "loss"  # the small model's stays (its patience waits on it)
