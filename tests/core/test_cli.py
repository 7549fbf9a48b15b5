"""The command line end to end: train → predict → evaluate, and bad input. What a real process gives back (the
exit status, one ``error:`` line on stderr, the JSON line on stdout, the program's name) is tested in a subprocess
(``cli_process``); what each command does, through ``attention_core.cli.main`` in this process (the ``cli`` fixture,
tests.helpers.cli: the same exit status, stdout and stderr, without importing torch again for every case)."""

from __future__ import annotations

import contextlib
import json
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from attention_core.run_folders import list_runs
from attention_core.runs import load_run
from attention_core.workspaces import WorkspaceStore
from tests.helpers.cli import cli_process
from tests.helpers.tiny_data import labels_without_meaning

ROOT = Path(__file__).resolve().parents[2]


def last_json(out: str) -> dict:
    return json.loads(out.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("runs") / "small"
    r = cli_process("train", "data/small.csv", "--out", str(out), "--epochs", "3", "--layers", "1", "--heads", "2",
            "--batch-size", "8", "--seed", "1", "--val-fraction", "0.2", "--time-budget", "120", "--threads", "1")
    assert r.returncode == 0, r.stderr
    summary = last_json(r.stdout)
    assert summary["epochs"] == 3 and summary["status"] == "finished"
    for key in ("train_loss", "val_loss", "val_accuracy", "seconds", "examples_per_second"):
        assert isinstance(summary[key], float | int), key
    assert "Traceback" not in r.stderr and "epoch" in r.stderr  # progress goes to stderr
    return out


def test_train_writes_a_run(trained):
    assert sorted(p.name for p in trained.iterdir()) == ["config.json", "history.json", "model.safetensors", "snapshots.safetensors",
                                                          "vocab.json"]
    assert json.loads((trained / "config.json").read_text())["train"]["num_threads"] == 1  # --threads is recorded


def test_predict_prints_label_probabilities_tokens_attention(trained):
    r = cli_process("predict", str(trained), "the food was not good at all")
    assert r.returncode == 0, r.stderr
    out = last_json(r.stdout)
    assert out["label"] in out["probabilities"]
    assert set(out["probabilities"]) == {"negative", "neutral", "positive"}
    assert out["tokens"] == ["the", "food", "was", "not", "good", "at", "all"]
    attn = out["attention"]
    # one layer of 2 heads, then the default preset's pooling query (its one row drawn T times)
    assert load_run(trained).model_config.map_names() == ["Layer 1", "Pooling"]
    assert (len(attn), len(attn[0]), len(attn[0][0]), len(attn[0][0][0])) == (2, 2, 7, 7)
    assert all(row == attn[1][h][0] for h in range(2) for row in attn[1][h])


def test_predict_with_no_head_knocked_out_is_exactly_the_plain_prediction(cli, trained):
    plain = cli("predict", str(trained), "the food was not good at all")
    none = cli("predict", str(trained), "the food was not good at all", "--knock-out", "")
    bare = cli("predict", str(trained), "the food was not good at all", "--knock-out")
    assert plain.returncode == none.returncode == bare.returncode == 0, none.stderr + bare.stderr
    assert none.stdout == plain.stdout == bare.stdout


@pytest.mark.parametrize("mode", ["zero", "uniform"])
def test_predict_with_heads_knocked_out(cli, trained, mode):
    plain = last_json(cli("predict", str(trained), "the food was not good at all").stdout)
    # every head of every map: layer 1's and the pooling query's, named "pooling" (or 2, its number, as before)
    r = cli("predict", str(trained), "the food was not good at all", "--knock-out", "1.1,1.2,pooling.1,2.2",
            "--knock-out-mode", mode)
    assert r.returncode == 0, r.stderr
    out = last_json(r.stdout)
    assert out["knocked_out"] == ["1.1", "1.2", "pooling.1", "pooling.2"] and out["knock_out_mode"] == mode
    assert out["probabilities"] != plain["probabilities"]
    how = "output removed" if mode == "zero" else "attending equally to every word"
    assert f"heads knocked out ({mode}: {how}): 1.1, 1.2, pooling.1, pooling.2" in r.stderr  # layer 1's too
    if mode == "zero":
        assert "Pooling, the word each head attends to most:\n  head 1: knocked out\n  head 2: knocked out" in r.stderr
        assert not np.any(out["attention"])
    else:
        assert np.allclose(out["attention"], 1 / 7)  # every head attends equally to the 7 words


def test_predict_with_the_first_layer_knocked_out_leaves_the_pooling_map_on(cli, trained):
    r = cli("predict", str(trained), "the food was not good at all", "--knock-out", "1.1,1.2")
    assert r.returncode == 0, r.stderr
    attention = np.asarray(last_json(r.stdout)["attention"])  # (maps, H, T, T)
    assert not np.any(attention[0]) and np.allclose(attention[1].sum(-1), 1)
    assert "Pooling, the word each head attends to most:" in r.stderr and ": knocked out" not in r.stderr
    assert "heads knocked out (zero: output removed): 1.1, 1.2\n" in r.stderr


def test_explain_prints_every_method_and_how_faithful_it_is(cli, trained):
    r = cli("explain", str(trained), "the food was not good at all", "--seed", "2", "--threads", "1")
    assert r.returncode == 0, r.stderr
    out = last_json(r.stdout)
    assert out["tokens"] == ["the", "food", "was", "not", "good", "at", "all"]
    methods = out["methods"]
    assert {"attention", "rollout", "flow", "grad_x_input", "integrated_gradients", "leave_one_out", "shapley"} <= set(methods)
    assert all(len(out["scores"][m]) == 7 for m in methods) and len(out["kendall"]) == len(methods)
    assert set(out["comprehensiveness"]) == set(out["sufficiency"]) == {*methods, "random"}
    assert all(len(out["deletion"][m]) == 8 for m in out["deletion"])
    assert "comprehensiveness" in r.stderr and "Leave-one-out" in r.stderr
    assert last_json(cli("explain", str(trained), "the food was not good at all", "--seed", "2", "--threads", "1")
                     .stdout) == out  # same seed and threads, same numbers to the bit
    # without --threads the count follows the free cores: the same numbers to float32's rounding, not to the bit
    free = last_json(cli("explain", str(trained), "the food was not good at all", "--seed", "2").stdout)
    for name in out["methods"]:
        assert np.allclose(free["scores"][name], out["scores"][name], rtol=1e-5, atol=1e-6), name
    assert free["comprehensiveness"] == pytest.approx(out["comprehensiveness"], rel=1e-5, abs=1e-6)


def test_faithfulness_reports_on_the_runs_validation_set_by_default(cli, trained, tmp_path):
    r = cli("faithfulness", str(trained))
    assert r.returncode == 0, r.stderr
    out = last_json(r.stdout)
    validation = load_run(trained).validation[0]
    assert out["n"] + out["skipped"] == len(validation) > 0
    assert np.array(out["head_accuracy"]).shape == (2, 2)  # (maps: layer 1 and the pooling query, heads)
    assert set(out["comprehensiveness"]) == set(out["sufficiency"]) == {*out["methods"], "random"}
    assert "sentences:" in r.stderr and "knock-out passes:" in r.stderr  # the progress bars
    csv = tmp_path / "other.csv"
    csv.write_text("review,stars\n" + "".join(f"{t},{y}\n" for t, y in [("i love it", "positive"),
                   ("it broke at once", "negative"), ("it is fine", "neutral")]))
    r = cli("faithfulness", str(trained), str(csv), "--text-col", "review", "--label-col", "stars", "--quiet")
    assert r.returncode == 0, r.stderr
    assert last_json(r.stdout)["n"] == 3 and "sentences:" not in r.stderr
    # the accuracy's yardstick beside it: 1 of the 3 rows is each label, so always answering one scores 1/3
    assert re.search(r"accuracy \d\.\d{3}, always answering “(negative|neutral|positive)” would score 0\.333", r.stderr)


def test_predict_summary_for_a_person_on_stderr(trained):
    r = cli_process("predict", str(trained), "the food was not zorblaxian at all")
    assert r.returncode == 0, r.stderr
    out = last_json(r.stdout)  # stdout keeps its one JSON line
    assert len(r.stdout.strip().splitlines()) == 1
    lines = r.stderr.strip().splitlines()
    assert lines[0].startswith(out["label"]) and f"{out['label']} {out['probabilities'][out['label']]:.1%}" in lines[0]
    assert lines[1] == "tokens: " + " ".join(out["tokens"])
    assert "unknown words" in r.stderr and "zorblaxian" in r.stderr
    heads = [line for line in lines if line.startswith("  head ")]
    last = np.asarray(out["attention"][-1])  # (H, T, T)
    assert len(heads) == last.shape[0]
    for line, head in zip(heads, last, strict=True):  # the word that receives the most attention, averaged over queries
        assert f": {out['tokens'][int(head.mean(0).argmax())]} (" in line


def test_usage_errors_name_the_program_once(trained):
    r = cli_process("evaluat")
    assert r.returncode == 2
    assert r.stderr.strip().endswith("see `python -m attention_core --help`"), r.stderr
    r = cli_process("train", "data/small.csv")
    assert r.returncode == 2 and "see `python -m attention_core train --help`" in r.stderr, r.stderr


def test_evaluate_with_other_column_names(cli, trained, tmp_path):
    csv = tmp_path / "other.csv"
    csv.write_text("stars;review\npositive;i love this speaker\nnegative;it broke after a day\nneutral;it is ok\n")
    r = cli("evaluate", str(trained), str(csv), "--text-col", "review", "--label-col", "stars")
    assert r.returncode == 0, r.stderr
    out = last_json(r.stdout)
    assert out["n"] == 3 and 0.0 <= out["accuracy"] <= 1.0 and 0.0 <= out["macro_f1"] <= 1.0
    assert sum(map(sum, out["confusion"])) == 3
    assert out["left_out"] == 0 and "left out" not in r.stderr


def test_evaluate_says_how_many_rows_it_left_out_and_why(cli, trained, tmp_path):
    csv = tmp_path / "some_unreadable.csv"
    csv.write_text("text,label\ni love this speaker,positive\nxqzzy blorfl,negative\nit is ok,neutral\n"
                   "qqzzx,positive\n")
    r = cli("evaluate", str(trained), str(csv))
    assert r.returncode == 0, r.stderr
    out = last_json(r.stdout)
    assert out["n"] == 2 and out["left_out"] == 2 and sum(map(sum, out["confusion"])) == 2
    assert "scored 2 of 4 rows: 2 left out, with no word the run knows" in r.stderr
    assert "'xqzzy blorfl'; 'qqzzx'" in r.stderr  # which ones, for the user to look at


def test_every_option_of_every_command_says_what_it_does():
    from attention_core.cli import _parser

    commands = next(a for a in _parser()._actions if a.dest == "command").choices
    silent = [f"{name} {option}" for name, command in commands.items() for action in command._actions
              for option in action.option_strings[:1] if not action.help]
    assert silent == []


def test_a_missing_run_points_to_the_bundled_run_and_the_installed_command(cli, tmp_path):
    from attention_core.run_folders import BUNDLED_RUN

    r = cli("predict", "data/default_run", "the food was good", cwd=tmp_path)  # the README's path, from elsewhere
    assert r.returncode == 2
    assert f"run directory not found: data/default_run — the bundled run is {BUNDLED_RUN};" in r.stderr
    assert "`attention-playground train CSV --out DIR`" in r.stderr
    assert cli("predict", str(BUNDLED_RUN), "the food was good", cwd=tmp_path).returncode == 0  # and it is there


def test_a_run_that_learned_nothing_says_so_in_the_summary_and_evaluate_too(cli, tmp_path):
    texts, labels = labels_without_meaning()  # 60 % "yes" at random: nothing in the words to learn
    csv = tmp_path / "meaningless.csv"
    pd.DataFrame({"text": texts, "label": labels}).to_csv(csv, index=False)
    r = cli("train", str(csv), "--out", str(tmp_path / "run"), "--epochs", "2", "--layers", "1", "--heads", "2",
            "--batch-size", "8", "--val-fraction", "0.4", "--threads", "1", "--quiet")
    assert r.returncode == 0, r.stderr
    summary = last_json(r.stdout)
    assert summary["majority_label"] == "yes" and summary["majority_share"] == 0.6  # 24 of the 40 validation rows
    assert summary["learned"] is False and summary["verdict"] in ("nothing", "unclear")
    assert summary["val_accuracy"] <= 0.6 or summary["verdict"] == "unclear"
    assert "beyond always answering “yes”" in r.stderr and "Try more rows, more epochs, or another preset." in r.stderr

    r = cli("evaluate", str(tmp_path / "run"), str(csv))
    assert r.returncode == 0, r.stderr
    out = last_json(r.stdout)
    assert out["n"] == 100 and out["majority_label"] == "yes" and out["majority_share"] == 0.6
    assert out["learned"] == (out["verdict"] == "learned") and "always answering “yes”" in r.stderr
    assert "100 rows" in r.stderr or "of the rows" in r.stderr  # the evaluated rows, not "validation rows"


BAD_INPUT = [
    (("train", "missing.csv", "--out", "{tmp}/x"), "not found"),
    (("train", "{tmp}/empty.csv", "--out", "{tmp}/x"), "empty"),
    (("train", "{tmp}/header.csv", "--out", "{tmp}/x"), "no data rows|header"),
    (("train", "{tmp}/one_class.csv", "--out", "{tmp}/x"), "only one"),
    (("train", "{tmp}/binary.csv", "--out", "{tmp}/x"), "binary"),
    (("train", "{tmp}/numbers.csv", "--out", "{tmp}/x"), "text column"),
    (("train", "{tmp}/many.csv", "--out", "{tmp}/x", "--label-col", "review", "--text-col", "stars"),
     "is that the text column"),
    (("train", "{tmp}/huge.csv", "--out", "{tmp}/x"), "25 MB"),
    (("train", "data/small.csv", "--out", "{tmp}/x", "--text-col", "nope"), "nope"),
    (("train", "data/small.csv", "--out", "{tmp}/x", "--preset", "huge"), "unknown preset"),
    (("train", "data/small.csv", "--out", "{tmp}/x", "--heads", "3"), "divisible"),
    (("train", "data/small.csv", "--out", "{tmp}/x", "--device", "cuda"), "cuda|CUDA"),
    (("train", "data/small.csv", "--out", "{tmp}/x", "--epochs", "many"), "invalid int"),
    (("train", "data/small.csv", "--out", "{tmp}/x", "--threads", "0"), "num_threads"),
    (("predict", "{tmp}/no_run", "hello"), "not found"),
    (("predict", "RUN", "xqzzy qqqzz"), "none of the words"),
    (("evaluate", "RUN", "{tmp}/one_class.csv", "--label-col", "label"), "only one"),
    (("predict", "RUN", "good", "--knock-out", "3.9"),
     r"head 3\.9 does not exist — this model has heads 1–2 in layer 1 and in the pooling attention: write them as "
     r"LAYER\.HEAD or pooling\.HEAD, e\.g\. 1\.2,pooling\.1 \(pooling\.1 is also 2\.1\)"),
    (("predict", "RUN", "good", "--knock-out", "pooling.3"), "head pooling.3 does not exist"),
    (("predict", "RUN", "good", "--knock-out", "1,2"), "not LAYER.HEAD"),
    (("predict", "RUN", "good", "--knock-out", "1.1", "--knock-out-mode", "half"), "invalid choice"),
    (("explain", "RUN", ""), "empty"),
    (("explain", "RUN", "xqzzy qqqzz"), "none of the words"),
    (("faithfulness", "RUN", "{tmp}/other_labels.csv"), r"labels \['great', 'poor'\] are not among"),
    (("faithfulness", "RUN", "data/small.csv", "--text-col", "nope"), "nope"),
    (("faithfulness", "RUN", "--label-col", "label"), "go with a CSV"),
]


def _check_bad_input(cli, trained: Path, tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    (tmp_path / "empty.csv").write_bytes(b"")
    (tmp_path / "header.csv").write_text("text,label\n")
    (tmp_path / "one_class.csv").write_text("text,label\ngood,pos\nnice,pos\n")
    (tmp_path / "binary.csv").write_bytes(b"PK\x03\x04" + bytes(range(256)) * 4)
    (tmp_path / "numbers.csv").write_text("a,b\n1,2\n3,4\n5,6\n")
    (tmp_path / "other_labels.csv").write_text("text,label\ngood food,great\nbad food,poor\nnice place,great\n")
    (tmp_path / "many.csv").write_text("review,stars\n" + "".join(f"sentence number {i},{i % 2}\n" for i in range(150)))
    if "huge.csv" in " ".join(args):
        with open(tmp_path / "huge.csv", "wb") as f:
            f.write(b"text,label\n")
            f.truncate(26 * 1024 * 1024)
    args = [a.replace("{tmp}", str(tmp_path)).replace("RUN", str(trained)) for a in args]
    r = cli(*args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert "Traceback" not in r.stderr
    import re

    assert re.search(message, lines[0]), lines[0]


@pytest.mark.parametrize(("args", "message"), BAD_INPUT)
def test_bad_input_exits_2_with_one_line_error(cli, trained, tmp_path, args, message):
    _check_bad_input(cli, trained, tmp_path, args, message)


@pytest.mark.parametrize(("args", "message"), [
    case for case in BAD_INPUT
    if (case[0][0], case[1]) in {("train", "not found"), ("train", "invalid int"), ("predict", "none of the words")}
])
def test_bad_input_exits_2_with_one_line_error_from_a_process(trained, tmp_path, args, message):
    """A data error, a usage error (argparse's) and a run's error, as a process ends: status 2, one line, no traceback."""
    _check_bad_input(cli_process, trained, tmp_path, args, message)


def _tree(root: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize(
    ("out", "message"),
    [
        ("{tmp}/mine", "is a folder with other files in it .notes.txt, photos"),
        ("{tmp}/mine/notes.txt", "is a file"),
        (".", "'.' is not a name for a new run folder"),
        ("/", "'/' is not a name for a new run folder"),
        ("RUN", "already holds a run"),
        ("{tmp}/mine/notes.txt/run", "cannot write a run to"),
        ("{tmp}/" + "n" * 300, "cannot write a run to .*too long"),
    ],
)
def test_train_refuses_an_output_path_before_training_and_touches_nothing(cli, trained, tmp_path, out, message):
    mine = tmp_path / "mine"
    (mine / "photos").mkdir(parents=True)
    (mine / "notes.txt").write_text("a user's notes")
    (mine / "photos" / "cat.jpg").write_bytes(bytes(range(256)) * 8)
    before, run_before = _tree(tmp_path), _tree(trained)
    r = cli("train", "data/small.csv", "--out", out.replace("{tmp}", str(tmp_path)).replace("RUN", str(trained)),
            "--epochs", "1", cwd=mine if out == "." else ROOT)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr  # nothing else: no data report, no progress — training never began
    import re

    assert re.search(f"^error: .*{message}", lines[0]), lines[0]
    if "cannot write" not in message:
        assert lines[0].endswith(" — choose a new folder, or --overwrite to replace an earlier run"), lines[0]
    assert _tree(tmp_path) == before and _tree(trained) == run_before  # byte for byte


def test_overwrite_replaces_a_run_but_never_other_files(cli, tmp_path):
    out = tmp_path / "run"
    args = ("train", "data/small.csv", "--out", str(out), "--epochs", "1", "--layers", "1", "--heads", "1",
            "--threads", "1", "--quiet")
    assert cli(*args).returncode == 0
    first = (out / "model.safetensors").read_bytes()
    assert cli(*args).returncode == 2  # the run is there: --overwrite is needed
    r = cli(*args, "--overwrite", "--seed", "7")
    assert r.returncode == 0, r.stderr
    assert (out / "model.safetensors").read_bytes() != first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # no temporary or replaced folders left
    (out / "keep-me.txt").write_text("mine")
    r = cli(*args, "--overwrite")
    assert r.returncode == 2 and "--overwrite only replaces a run" in r.stderr
    assert (out / "keep-me.txt").read_text() == "mine"


def test_a_failed_training_leaves_no_empty_output_folder(cli, tmp_path):
    (tmp_path / "one_class.csv").write_text("text,label\ngood,pos\nnice,pos\n")
    r = cli("train", str(tmp_path / "one_class.csv"), "--out", str(tmp_path / "new" / "run"))
    assert r.returncode == 2 and "only one" in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one_class.csv"]


def test_train_into_an_empty_folder(cli, tmp_path):
    (tmp_path / "empty").mkdir()
    r = cli("train", "data/small.csv", "--out", str(tmp_path / "empty"), "--epochs", "1", "--layers", "1", "--heads", "1",
            "--threads", "1", "--quiet")
    assert r.returncode == 0, r.stderr
    assert last_json(r.stdout)["run"] == str(tmp_path / "empty")
    assert (tmp_path / "empty" / "model.safetensors").is_file()


def test_a_run_is_not_lost_when_its_folder_fills_up_during_training(tmp_path, monkeypatch, capsys):
    from attention_core import cli as cli_module
    from attention_core.training import Trainer

    out = tmp_path / "run"
    real_run = Trainer.run

    def run_while_the_user_saves_a_file_there(self, *args, **kwargs):
        result = real_run(self, *args, **kwargs)
        (out / "draft.txt").write_text("saved there while training")
        return result

    monkeypatch.setattr(Trainer, "run", run_while_the_user_saves_a_file_there)
    monkeypatch.chdir(ROOT)
    code = cli_module.main(["train", "data/small.csv", "--out", str(out), "--epochs", "1", "--layers", "1",
                            "--heads", "1", "--threads", "1", "--quiet"])
    assert code == 0
    summary = last_json(capsys.readouterr().out)
    assert summary["run"] == str(tmp_path / "run-2")
    assert (out / "draft.txt").read_text() == "saved there while training"
    assert (tmp_path / "run-2" / "model.safetensors").is_file()


def test_the_default_thread_count_is_chosen_while_training_and_threads_n_fixes_it(tmp_path, monkeypatch):
    """One torch thread per core collapsed beside any other work (137 examples/s beside another training):
    without --threads the CLI trains with attention_core.threads.auto_threads, which watches the other processes."""
    from attention_core import cli as cli_module
    from attention_core import threads

    updates: list[tuple[int, float]] = []

    class Watching:
        def update(self, examples: int, seconds: float) -> None:
            updates.append((examples, seconds))

    monkeypatch.setattr(threads, "auto_threads", lambda *a, **k: Watching())
    monkeypatch.chdir(ROOT)
    args = ["train", "data/small.csv", "--epochs", "2", "--layers", "1", "--heads", "1", "--quiet"]
    assert cli_module.main([*args, "--out", str(tmp_path / "auto")]) == 0
    assert len(updates) >= 2 and updates[-1][0] > updates[0][0]  # told of every step's progress
    updates.clear()
    assert cli_module.main([*args, "--out", str(tmp_path / "fixed"), "--threads", "1"]) == 0
    assert updates == []



def test_fine_tuning_follows_the_free_cores_without_the_tuners_trials(tmp_path, monkeypatch):
    """A fine-tuning step takes ~0.2–1 s and varies 5× with its batch's length: the tuner's 0.3 s trials timed one
    step against another. Without --threads, train --preset finetune follows the free cores, read every step."""
    from attention_core import cli as cli_module
    from attention_core import threads

    reads: list[str] = []
    monkeypatch.setattr(threads, "FollowFreeCores", lambda *a, **k: lambda: reads.append("read") or 1)
    monkeypatch.setattr(threads, "auto_threads", lambda *a, **k: pytest.fail("the tuner's trials for a fine-tuning"))
    monkeypatch.chdir(ROOT)
    assert cli_module.main(["train", "data/small.csv", "--preset", "finetune", "--epochs", "1", "--batch-size", "16",
                            "--quiet", "--out", str(tmp_path / "tuned")]) == 0
    assert len(reads) >= 3  # before the first step, then at every step (39 rows less the held-out: 2 or more)


def test_the_faithfulness_commands_follow_the_free_cores_unless_threads_n_fixes_them(trained, monkeypatch):
    """One torch thread made the report 1.5× slower on a quiet 2-core machine, two collapse beside a busy
    neighbour: without --threads, explain and faithfulness follow the cores other processes leave free
    (attention_core.threads.FollowFreeCores), read again as the report goes."""
    from attention_core import cli as cli_module
    from attention_core import threads

    calls: list[str] = []

    class Following:
        def __call__(self) -> int:
            calls.append("read")
            return 1

    monkeypatch.setattr(threads, "FollowFreeCores", lambda *a, **k: Following())
    assert cli_module.main(["faithfulness", str(trained), "--quiet"]) == 0
    assert len(calls) > 2  # after loading, then as the report went
    calls.clear()
    assert cli_module.main(["explain", str(trained), "the food was good"]) == 0
    assert calls == ["read"]
    calls.clear()
    assert cli_module.main(["faithfulness", str(trained), "--quiet", "--threads", "1"]) == 0
    assert calls == []

# -- a shared server's workspace (--workspace): the runs a learner sees in the app -------------------------

TINY = ("--epochs", "1", "--layers", "1", "--heads", "1", "--threads", "1", "--quiet")


@pytest.fixture(scope="module")
def workspace_run(tmp_path_factory) -> tuple[Path, str]:
    """A run 'cli-run' trained with --workspace <private link> into a shared runs root (the root from
    $ATTENTION_PLAYGROUND_RUNS, as the app takes it); returns (root, token)."""
    from attention_core.workspaces import new_token

    root, token = tmp_path_factory.mktemp("shared") / "runs", new_token()
    env = {**os.environ, "ATTENTION_PLAYGROUND_RUNS": str(root)}
    r = cli_process("train", "data/small.csv", "--workspace", f"http://localhost:8501/?w={token}", "--name", "cli-run",
                    *TINY, env=env)
    assert r.returncode == 0, r.stderr
    return root, token


def test_train_into_a_workspace_saves_where_the_app_lists_it(workspace_run):
    root, token = workspace_run
    store = WorkspaceStore(root, shared=True)
    workspace = store.for_token(token)[0]
    assert [p.name for p in list_runs(workspace.runs_dir)] == ["cli-run"]
    assert [p.relative_to(root).as_posix() for p in root.iterdir()] == ["workspaces"]
    assert [p.name for p in (root / "workspaces").iterdir()] == [workspace.key]  # a digest: the token is not on disk
    assert token not in "".join(str(p) for p in root.rglob("*"))
    assert list(load_run(workspace.runs_dir / "cli-run").label_names) == ["negative", "neutral", "positive"]
    assert not list_runs(store.for_token(None)[0].runs_dir)  # another visitor's workspace does not hold it


def test_predict_and_evaluate_read_a_run_by_name_from_a_workspace(workspace_run, monkeypatch, capsys):
    from attention_core import cli as cli_module

    root, token = workspace_run
    monkeypatch.chdir(ROOT)
    assert cli_module.main(["predict", "--workspace", token, "--runs-root", str(root), "cli-run", "a fine phone"]) == 0
    by_name = last_json(capsys.readouterr().out)
    path = WorkspaceStore(root, shared=True).for_token(token)[0].runs_dir / "cli-run"
    assert cli_module.main(["predict", str(path), "a fine phone"]) == 0
    assert last_json(capsys.readouterr().out) == by_name
    monkeypatch.setenv("ATTENTION_PLAYGROUND_RUNS", str(root))
    assert cli_module.main(["evaluate", "cli-run", "data/small.csv", "--workspace", f"https://class.example/Train?w={token}"]) == 0
    assert last_json(capsys.readouterr().out)["n"] == 39


@pytest.mark.parametrize("args, message", [
    (["--workspace", "abc", "--name", "r"], "'abc' is neither a workspace token nor a private link"),
    (["--workspace", "http://localhost:8501/", "--name", "r"], "neither a workspace token nor a private link"),
    (["--workspace", "http://localhost:8501/?w=../../etc/passwd", "--name", "r"], "neither a workspace token"),
    (["--workspace", "{token}", "--name", "../x"], "'../x' cannot name a run"),
    (["--workspace", "{token}", "--name", "x" * 81], "the name is 81 characters long"),
    (["--workspace", "{token}"], "--workspace needs --name"),
    (["--workspace", "{token}", "--name", "cli-run"], "this workspace has a run named 'cli-run' already"),
    (["--workspace", "{token}", "--name", "r", "--out", "elsewhere"], "not allowed with argument"),
])
def test_train_into_a_workspace_refuses_bad_input_before_training_and_writes_nothing(workspace_run, monkeypatch, capsys,
                                                                                      args, message):
    from attention_core import cli as cli_module

    root, token = workspace_run
    monkeypatch.setenv("ATTENTION_PLAYGROUND_RUNS", str(root))
    monkeypatch.chdir(ROOT)
    before = _tree(root)
    with pytest.raises(SystemExit) if "not allowed" in message else contextlib.nullcontext():
        code = cli_module.main(["train", "data/small.csv", *(a.format(token=token) for a in args), *TINY])
        assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and " — " in err and "Traceback" not in err, err
    assert _tree(root) == before


def test_a_workspace_needs_a_runs_root_and_keeps_its_disk_limit(workspace_run, monkeypatch, capsys):
    from attention_core import cli as cli_module

    root, token = workspace_run
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("ATTENTION_PLAYGROUND_RUNS", raising=False)
    assert cli_module.main(["train", "data/small.csv", "--workspace", token, "--name", "r", *TINY]) == 2
    assert "--runs-root" in capsys.readouterr().err
    monkeypatch.setenv("ATTENTION_PLAYGROUND_WORKSPACE_MB", "0.01")  # the run there is larger
    before = _tree(root)
    assert cli_module.main(["train", "data/small.csv", "--workspace", token, "--runs-root", str(root), "--name", "r", *TINY]) == 2
    err = capsys.readouterr().err
    assert "its limit is" in err and "'cli-run'" in err
    assert _tree(root) == before


def test_predict_from_a_workspace_sees_only_that_workspace(workspace_run, monkeypatch, capsys):
    from attention_core import cli as cli_module
    from attention_core.workspaces import new_token

    root, token = workspace_run
    monkeypatch.setenv("ATTENTION_PLAYGROUND_RUNS", str(root))
    assert cli_module.main(["predict", "--workspace", new_token(), "cli-run", "a fine phone"]) == 2
    err = capsys.readouterr().err
    assert "this workspace has no run named 'cli-run'" in err and "holds no runs yet" in err
    assert cli_module.main(["predict", "--workspace", token, "nope", "a fine phone"]) == 2
    assert "its runs: cli-run" in capsys.readouterr().err
    assert cli_module.main(["predict", "--workspace", token, "../../workspaces", "a fine phone"]) == 2
    assert "cannot name a run" in capsys.readouterr().err


def test_a_workspace_token_that_begins_with_a_dash_is_read_as_the_token(workspace_run, monkeypatch, capsys):
    """1 token in 64 begins with "-": argparse took it for an option ("expected one argument", exit 2
    without the error line), so the test above failed now and then with a random token."""
    from attention_core import cli as cli_module

    root, _ = workspace_run
    monkeypatch.setenv("ATTENTION_PLAYGROUND_RUNS", str(root))
    assert cli_module.main(["predict", "--workspace", "-" + "A" * 21, "cli-run", "a fine phone"]) == 2
    assert "this workspace has no run named 'cli-run'" in capsys.readouterr().err
