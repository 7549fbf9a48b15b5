"""The Backpropagation and Seed-experiment pages: their core functions against autograd, and the pages in AppTest."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import streamlit as st
import torch
from streamlit.testing.v1 import AppTest

from attention_core import EmbeddingSource, Run, Trainer, load_dataset, load_embeddings, preset
from attention_core.backprop import gradient_report, post_code_comparison, post_forward, post_inputs, post_params_float64
from attention_core.errors import EmbeddingError, RunError
from tests.helpers.apptest import array, page_job
from tests.helpers.apptest import chart as figure

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 90
POST_ORDER = ["∂L/∂p", "∂L/∂f", "∂L/∂W", "∂L/∂b", "∂L/∂z", "∂L/∂v", "∂L/∂α", "∂α/∂e (softmax Jacobian)", "∂L/∂e", "∂L/∂q",
              "∂L/∂k", "∂L/∂Q", "∂L/∂K", "∂L/∂V", "∂L/∂Qb", "∂L/∂Kb", "∂L/∂Vb"]
SENTENCES = ["very sad as they both fail", "he loved that plug with good price", "terrible quality for this price",
             "i love this fantastic product", "easy to move around", "great"]


@pytest.fixture(scope="module")
def emb_10k():
    return load_embeddings(EmbeddingSource(limit=10_000))


@pytest.fixture(scope="module")
def seed_run(emb_10k) -> Run:
    """The seed preset after a few epochs on the post's small.csv (the page's model, shorter)."""
    data = load_dataset((ROOT / "data" / "small.csv").read_bytes(), name="small.csv", is_known=emb_10k.__contains__)
    return Trainer(*preset("seed", epochs=20), data, emb_10k).run()


def sharp_params(seed: int, d: int = 51, c: int = 3, size: float = 0.3) -> dict[str, torch.Tensor]:
    """Random float64 weights large enough for peaked attention (rows of α far from alike)."""
    g = torch.Generator().manual_seed(seed)
    shapes = {"Q": (d, d), "Qb": (d,), "K": (d, d), "Kb": (d,), "V": (d, d), "Vb": (d,), "W": (c, d), "b": (c,)}
    return {k: torch.randn(*s, generator=g, dtype=torch.float64) * size for k, s in shapes.items()}


# -- the core -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("sentence", "y"), [(s, i % 3) for i, s in enumerate(SENTENCES)])
@pytest.mark.parametrize("weights", ["trained", "sharp"])
def test_every_hand_written_gradient_matches_autograd(emb_10k, seed_run, sentence, y, weights):
    x = post_inputs(sentence, emb_10k).x
    params = post_params_float64(seed_run.model) if weights == "trained" else sharp_params(len(sentence))
    checks = gradient_report(x, y, params)
    assert [c.name for c in checks] == POST_ORDER
    n = x.shape[0]
    shapes = {c.name: c.shape for c in checks}
    assert shapes["∂α/∂e (softmax Jacobian)"] == (n, n, n) and shapes["∂L/∂f"] == (n, 3) and shapes["∂L/∂Q"] == (51, 51)
    for c in checks:
        assert c.hand.dtype == c.autograd.dtype == torch.float64, c.name
        assert c.hand.shape == c.autograd.shape, c.name
        assert c.max_abs_diff <= 1e-6, (c.name, c.max_abs_diff)
        assert c.max_abs_diff == pytest.approx(float((c.hand - c.autograd).abs().max())), c.name
    assert float(checks[0].hand.abs().sum()) > 0  # p − y is never all zero: the check is not vacuous


def test_seed_inputs_are_what_the_model_reads(emb_10k, seed_run):
    inp = post_inputs("Very sad as xqzzy they both fail", emb_10k)
    assert inp.tokens == ("very", "sad", "as", "they", "both", "fail") and inp.unknown == ("xqzzy",)
    assert inp.x.shape == (6, 51) and inp.x.dtype == torch.float64
    assert inp.x[:, -1].tolist() == [0, 1, 2, 3, 4, 5]
    # The page's forward pass gives the probabilities the trained model predicts.
    fw = post_forward(inp.x, 0, post_params_float64(seed_run.model))
    predicted = seed_run.predict("very sad as they both fail").probabilities
    assert fw.p.tolist() == pytest.approx(list(predicted.values()), abs=1e-5)
    with pytest.raises(EmbeddingError, match="none of the words"):
        post_inputs("xqzzy qqqzz", emb_10k)
    for empty in ("", "  "):
        with pytest.raises(EmbeddingError, match="the sentence is empty"):
            post_inputs(empty, emb_10k)


def test_the_posts_code_differs_from_the_correct_gradient(emb_10k):
    x = post_inputs("very sad as they both fail", emb_10k).x
    post = post_code_comparison(x, 0, sharp_params(1))
    a = {r.name: r for r in post.jacobian}
    assert a["∂L/∂e"].max_abs > 1e-6 and a["∂L/∂Q"].max_abs > 1e-6 and a["∂L/∂K"].max_abs > 1e-6
    assert a["∂L/∂V"].max_abs == 0.0  # values do not go through the softmax
    assert post.jacobians.shape == (6, 6, 6) and post.post_jacobian.shape == (6, 6)
    b = {r.name: r for r in post.scale_effect}
    assert post.scale == pytest.approx(1 / np.sqrt(51)) and post.post_scale == pytest.approx(1 / np.sqrt(51 * 6))
    assert b["α"].max_abs > 1e-3 and b["∂L/∂Q"].relative > 1e-3
    assert post.mean_largest_weight(post.post_alpha) < post.mean_largest_weight(post.alpha)  # flatter attention
    c = {r.name: r for r in post.backward_scale}
    assert c["∂L/∂V"].max_abs == 0.0 and c["∂L/∂Q"].norm_ratio > 5  # missing 1/√(d·n): far too large


def test_the_posts_code_agrees_where_it_must(emb_10k):
    one_word = post_inputs("great", emb_10k).x
    post = post_code_comparison(one_word, 2, sharp_params(2))
    for diff in post.jacobian + post.scale_effect + post.backward_scale:
        assert diff.max_abs == 0.0, diff.name  # α = [[1]]: its first column is its only row; √(d·1) = √d
    # Identical rows of α (zero queries: uniform attention): the first column's Jacobian is every row's.
    params = sharp_params(3)
    params["Q"], params["Qb"] = torch.zeros(51, 51, dtype=torch.float64), torch.zeros(51, dtype=torch.float64)
    post = post_code_comparison(post_inputs("very sad as they both fail", emb_10k).x, 1, params)
    assert max(d.max_abs for d in post.jacobian) <= 1e-15


# -- the pages ----------------------------------------------------------------------------------------






def test_backprop_page_checks_every_gradient(runs_dir):
    at = AppTest.from_file(str(ROOT / "pages" / "5_Backpropagation.py"), default_timeout=TIMEOUT).run()
    assert not at.exception and not at.error
    assert at.title[0].value == "Backpropagation through attention"
    assert at.text_input(key="backprop_text").value == "very sad as they both fail"
    assert at.radio(key="backprop_model").value == 1000
    assert at.selectbox(key="backprop_target").options == ["negative", "neutral", "positive"]
    table = at.dataframe[0].value
    assert list(table["gradient"]) == POST_ORDER
    assert (table["max |hand − autograd|"] <= 1e-6).all()
    assert figure(at, "backprop_hand")["data"][0]["y"] == ["very", "sad", "as", "they", "both", "fail"]
    post_tables = [d.value for d in at.dataframe[1:]]
    assert len(post_tables) == 3 and all((t["max |post − correct|"] >= 0).all() for t in post_tables)
    jacobian_effect = post_tables[0].set_index("quantity")
    assert jacobian_effect.loc["∂L/∂Q", "max |post − correct|"] > 0 and jacobian_effect.loc["∂L/∂V", "max |post − correct|"] == 0

    at.selectbox(key="backprop_gradient").set_value("∂α/∂e (softmax Jacobian)").run()
    at.selectbox(key="backprop_row").set_value(2).run()
    assert not at.exception
    jac = array(figure(at, "backprop_hand")["data"][0]["z"])
    assert jac.shape == (6, 6) and np.allclose(jac, jac.T) and np.allclose(jac.sum(1), 0, atol=1e-9)

    at.radio(key="backprop_model").set_value(0).run()
    at.selectbox(key="backprop_target").set_value("positive").run()
    at.text_input(key="backprop_text").input("i love this fantastic product").run()
    assert not at.exception
    assert (at.dataframe[0].value["max |hand − autograd|"] <= 1e-6).all()
    assert figure(at, "backprop_alpha")["data"][0]["x"] == ["i", "love", "this", "fantastic", "product"]


def test_backprop_page_all_unknown_sentence_is_an_error(runs_dir):
    at = AppTest.from_file(str(ROOT / "pages" / "5_Backpropagation.py"), default_timeout=TIMEOUT)
    at.session_state["backprop_model"] = 0
    at.run()
    at.text_input(key="backprop_text").input("xqzzy qqqzz").run()
    assert not at.exception
    assert "none of the words" in at.error[0].value
    assert not at.dataframe


def test_backprop_page_shows_the_seed_preset_from_the_bundled_runs_without_training(emb_10k, monkeypatch):
    """The page's three models are the seed preset's on small.csv (seed 0) before training, after 100 and after
    1000 epochs, as a fresh training makes them; the server loads them from data/seed_run and trains nothing."""
    data = load_dataset((ROOT / "data" / "small.csv").read_bytes(), name="small.csv", is_known=emb_10k.__contains__)
    x = post_inputs("very sad as they both fail", emb_10k).x
    expected = {}
    for epochs in (0, 100, 1000):
        trainer = Trainer(*preset("seed", epochs=max(epochs, 1)), data, emb_10k)
        params = post_params_float64(trainer.model if epochs == 0 else trainer.run().model)
        expected[epochs] = post_forward(x, 0, params)

    def no_training(self, *args, **kwargs):
        raise AssertionError("the page trained a model in the server")

    monkeypatch.setattr(Trainer, "run", no_training)
    st.cache_resource.clear()  # a model cached by an earlier test would hide training
    at = AppTest.from_file(str(ROOT / "pages" / "5_Backpropagation.py"), default_timeout=TIMEOUT).run()
    shown = {}
    for epochs in (0, 100, 1000):
        at.radio(key="backprop_model").set_value(epochs).run()
        assert not at.exception and not at.error, epochs
        shown[epochs] = figure(at, "backprop_probs")["data"][0]["x"]
        assert shown[epochs] == pytest.approx(expected[epochs].p.tolist(), abs=1e-6), epochs
        assert at.metric[0].value == f"{float(expected[epochs].loss):.4f}", epochs
    assert len({tuple(p) for p in shown.values()}) == 3  # three different models


def test_backprop_page_says_how_to_remake_a_missing_bundled_run(monkeypatch):
    import attention_core

    def missing(path, **kwargs):
        raise RunError(f"run directory not found: {path}", "train one first")

    monkeypatch.setattr(attention_core, "load_run", missing)
    st.cache_resource.clear()
    at = AppTest.from_file(str(ROOT / "pages" / "5_Backpropagation.py"), default_timeout=TIMEOUT).run()
    assert not at.exception
    assert "data/seed_run/1000_epochs" in at.error[0].value and "scripts/make_seed_run.sh" in at.error[0].value
    assert not at.dataframe
    st.cache_resource.clear()


def test_seed_experiment_trains_three_variants_and_shows_the_five_sentences(runs_dir):
    at = AppTest.from_file(str(ROOT / "pages" / "6_Seed_experiment.py"), default_timeout=TIMEOUT).run()
    assert not at.exception
    assert at.title[0].value == "The seed's experiment"
    assert not at.get("plotly_chart")
    at.number_input(key="seedexp_epochs").set_value(15)
    at.number_input(key="seedexp_default_epochs").set_value(3)
    at.button(key="seedexp_train").click().run()
    assert not at.exception
    seq = page_job(at, "seedexp_seq")
    assert list(seq.jobs) == ["frozen"] and seq.queued == ["head", "default"]  # one after the other
    # Each variant is started by the end of the one before, in the server: the page need not be open.
    assert seq.join(300)
    at.run()
    assert not at.exception
    jobs = seq.jobs
    assert list(jobs) == ["frozen", "head", "default"] and all(j.status().state == "finished" for j in jobs.values())
    assert [len(j.run.history.epochs) for j in jobs.values()] == [15, 15, 3]
    assert not jobs["frozen"].run.model.head.weight.requires_grad and jobs["head"].run.model.head.weight.requires_grad
    maps = [c for c in at.get("plotly_chart") if "-seedexp_map_" in c.proto.id]
    assert len(maps) == 15
    first = figure(at, "seedexp_map_0_frozen")["data"][0]
    assert first["x"] == ["very", "sad", "as", "they", "both", "fail"]
    rows = array(first["z"])
    assert rows.shape == (6, 6) and np.allclose(rows.sum(1), 1, atol=1e-3)
    assert len(at.metric) == 3 and all(float(m.value) > 0 for m in at.metric)
    assert not runs_dir.exists() or not any(runs_dir.iterdir())  # nothing saved to the user's runs unless asked
    at.button(key="seedexp_save_head").click().run()
    assert not at.exception
    assert [p.name for p in runs_dir.iterdir()] == ["seed-experiment-head"]
