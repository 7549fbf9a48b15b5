"""Every benchmark still runs: each one's ``--quick`` smoke run, from the command line as a person would start it.

The figures themselves are measured by running the benchmarks (benchmarks/README.md); these runs check that the
code measuring them works and prints its JSON line, so a restructure cannot leave a benchmark broken unnoticed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.e2e  # whole programs, minutes each: in the full run (CI), not the quick one


def run_benchmark(*args: str, timeout: float = 900) -> dict:
    """Run ``python benchmarks/…`` from the project's folder; its last line, parsed as JSON."""
    out = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, (out.stdout[-2000:], out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_engine_benchmarks_run_quick(tmp_path):
    out = tmp_path / "results-quick.json"
    run_benchmark("benchmarks/run.py", "--quick", "--out", str(out))
    saved = json.loads(out.read_text())
    assert saved["meta"]["quick"] is True
    assert {"train_throughput", "predict_latency", "seed_vs_numpy"} <= set(saved["sections"])


def test_the_app_latency_benchmark_runs_quick():
    figures = run_benchmark("benchmarks/app_latency.py", "--quick")
    assert len(figures["cold_start_seconds"]) == 2  # one start with the sentence typed at a person's pace, one at once
    assert figures["first_typed_sentence_s"][0] > 0 and figures["warm_sentence_to_heatmap_ms_median"] > 0
    assert set(figures["goals_met"]) == {"first heatmap after `streamlit run` (median)",
                                         "first typed sentence, person's pace (median)", "warm sentence → heatmap (median)",
                                         "pick the pretrained encoder, warm server: maps (first pick)",
                                         "pick the pretrained encoder again (loaded; median)"}
    assert figures["pretrained_pick_first_s"] > 0 and figures["pretrained_pick_loaded_s_median"] > 0


def test_the_classroom_benchmark_runs_quick():
    figures = run_benchmark("benchmarks/classroom.py", "--quick")
    assert figures["learners"] == 2 and figures["all_finished"] and figures["each_sees_own_run_only"]
    assert len(figures["finished_at_s"]) == 2 and figures["typed_sentences"] >= 1  # saved runs seen; the typist typed


def test_the_quality_benchmark_runs_quick():
    figures = run_benchmark("benchmarks/quality.py", "--quick")
    assert figures["quick"] is True and set(figures["sets"]) == {"uci"}
    assert 0.5 < figures["sets"]["uci"]["tfidf_lr"]["accuracy"] <= 1 and len(figures["sets"]["uci"]["default"]) == 1


def test_the_quality_benchmark_runs_quick_on_the_pretrained_encoder():
    """--preset finetune: the encoder reads word pieces, so no GloVe is loaded and every row is kept."""
    figures = run_benchmark("benchmarks/quality.py", "--quick", "--preset", "finetune")
    (score,) = figures["sets"]["uci"]["finetune"]
    assert 0 < score["accuracy"] <= 1 and score["seconds"] < 120


def test_the_pretrained_encoder_benchmark_runs_quick():
    figures = run_benchmark("benchmarks/pretrained.py", "--quick")
    assert figures["quick"] is True and figures["cold_start"]["ours"]["maps"] == [6, 12]
    assert figures["ours"]["latency"]["maps"] == 72 and figures["ours"]["latency"]["2_threads"]["median_ms"] > 0
    assert all(tool["applies"] for tool in figures["ours"]["tools"].values())
    assert figures["ours"]["dropout"]["examples_per_s"]["torch"] > 0 and figures["ours"]["dropout"]["speedup"] > 0
    if figures["transformers_installed"]:  # a dev install has it (requirements-dev.txt)
        assert figures["transformers"]["tools"]["maps_equal_eager_max_abs_diff"] < 1e-5


def test_the_optimizer_benchmark_runs_quick():
    """The fused optimizer against PyTorch's loop, each preset training as the Trainer trains it."""
    figures = run_benchmark("benchmarks/optimizer.py", "--quick")
    assert figures["quick"] is True
    for name in ("default", "finetune"):
        assert len(figures[name]["rounds"]["fused"]) == len(figures[name]["rounds"]["loop"]) == 1
        assert min(figures[name]["examples_per_s"].values()) > 0 and figures[name]["speedup"] > 0


@pytest.mark.parametrize("script", sorted(p.name for p in (ROOT / "benchmarks").glob("*.py")
                                          if "__main__" in p.read_text()))
def test_every_benchmark_script_has_a_quick_run_that_a_test_runs(script):
    """A script a person can start (it has a ``__main__`` block) has ``--quick``, and a test above runs it."""
    assert '"--quick"' in (ROOT / "benchmarks" / script).read_text()
    assert f'run_benchmark("benchmarks/{script}", "--quick"' in Path(__file__).read_text()


def test_the_engine_benchmark_runs_quick():
    """The shared queue beside the local job host: a real redis-server and a worker, started and stopped by it."""
    figures = run_benchmark("benchmarks/engine.py", "--quick")
    assert figures["quick"] is True and figures["rounds"] == 2
    for backend in ("local", "shared_queue"):
        got = figures[backend]
        assert 0 < got["started_s"] <= got["first_step_s"] <= got["ended_s"], (backend, got)
    assert figures["shared_queue"]["report_latency_ms_median"] >= 0


def test_the_classroom_benchmark_runs_quick_through_the_engine():
    """--engine: two replicas behind nginx, a redis-server and two workers, all started and stopped by it."""
    figures = run_benchmark("benchmarks/classroom.py", "--quick", "--engine")
    assert figures["engine"] == {"replicas": 2, "workers": 2, "slots": 1}
    assert figures["learners"] == 2 and figures["all_finished"] and figures["each_sees_own_run_only"]
    assert figures["most_in_shared_line"] >= 0 and figures["typed_sentences"] >= 1


def test_the_quality_benchmark_alternates_its_configs_within_each_seed(monkeypatch):
    """A budgeted training's figure follows the machine's speed, which drifts within minutes: the configs compared
    take turns seed by seed (all of one config, then all of the next, compared different minutes of the machine)."""
    from benchmarks import quality

    trained: list[tuple[str, int]] = []

    def ours(train, test, embeddings, overrides, preset_name="default"):
        trained.append((overrides["name"], overrides["seed"]))
        return quality.Score(0.5, 0.5, 0.0)

    monkeypatch.setattr(quality, "ours", ours)
    result = quality.compare("uci", None, None, tune=True, configs=[("a", {"name": "a"}), ("b", {"name": "b"})],
                             seeds=[0, 1], report=lambda line: None, preset_name="finetune")
    assert trained == [("a", 0), ("b", 0), ("a", 1), ("b", 1)]
    assert sorted(result.ours) == ["a", "b"] and all(len(scores) == 2 for scores in result.ours.values())
