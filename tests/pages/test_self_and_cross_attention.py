"""The explainer pages: their numbers against the seeds' printed values, the √d_k curves, masks, and both pages in AppTest.

Every number the pages show comes from :mod:`attention_core.examples`; the printed values are the
literals of ``tests/helpers/seed_documents.py`` (copied there from seeds 001 and 002).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from attention_core import examples as ex
from attention_core.embeddings import load_embeddings
from attention_core.errors import EmbeddingError, InputError
from tests.helpers import seed_documents as seed
from tests.helpers.apptest import array, chart, widget
from tests.helpers.seed_documents import assert_printed

ROOT = Path(__file__).resolve().parents[2]
SELF_PAGE = str(ROOT / "pages" / "3_Self_attention.py")
CROSS_PAGE = str(ROOT / "pages" / "4_Cross_attention_and_masks.py")


# --- section 1: self-attention, seed 001 ---------------------------------------------------------


def test_journey_inputs_are_the_seeds() -> None:
    x = ex.journey_inputs()
    assert x.dtype == torch.float32 and x.shape == (6, 3)
    assert x.tolist() == torch.tensor(seed.INPUTS).tolist()
    assert ex.JOURNEY_TOKENS == ("Your", "journey", "starts", "with", "one", "step")


def test_simple_self_attention_prints_the_seeds_numbers() -> None:
    steps = ex.simple_self_attention(ex.journey_inputs())  # the post does not scale in this part
    assert torch.equal(steps.scaled, steps.scores)
    assert_printed(steps.scores, seed.SCORES, 4)
    assert_printed(steps.weights, seed.WEIGHTS, 4)
    assert_printed(steps.output, seed.CONTEXT, 4)


def test_three_normalizations_and_the_naive_overflow() -> None:
    scores_2 = ex.simple_self_attention(ex.journey_inputs()).scores[1]
    norms = ex.normalizations(scores_2)
    assert_printed(norms.by_sum, [0.1455, 0.2278, 0.2249, 0.1285, 0.1077, 0.1656], 4)
    assert_printed(norms.naive_softmax, [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581], 4)
    torch.testing.assert_close(norms.stable_softmax, torch.softmax(scores_2, -1))
    for factor in (100, 1000):
        big = ex.normalizations(scores_2 * factor)
        assert torch.isnan(big.naive_softmax).any()  # exp(x) = inf for x > 88.7 in float32: inf / inf
        assert torch.isfinite(big.stable_softmax).all()
        assert big.stable_softmax.sum().item() == pytest.approx(1.0, abs=1e-6)
        torch.testing.assert_close(big.stable_softmax, torch.softmax(scores_2 * factor, -1))


def test_scaling_and_temperature() -> None:
    x = ex.journey_inputs()
    assert ex.effective_scale(3, scaled=True) == pytest.approx(1 / math.sqrt(3))
    assert ex.effective_scale(2, scaled=True, temperature=2.0) == pytest.approx(1 / (2 * math.sqrt(2)))
    plain = ex.simple_self_attention(x)
    scaled = ex.simple_self_attention(x, scaled=True)
    torch.testing.assert_close(scaled.scaled, plain.scores / math.sqrt(3))
    sharp = ex.simple_self_attention(x, temperature=0.1)
    flat = ex.simple_self_attention(x, temperature=5.0)
    assert (sharp.weights.amax(-1) > plain.weights.amax(-1)).all()
    assert (flat.weights.amax(-1) < plain.weights.amax(-1)).all()
    for steps in (sharp, flat, scaled):
        torch.testing.assert_close(steps.weights.sum(-1), torch.ones(6))
    with pytest.raises(ValueError, match="temperature"):
        ex.effective_scale(3, scaled=False, temperature=0.0)


def test_trainable_weights_print_the_seeds_numbers() -> None:
    before = torch.random.get_rng_state()
    sa = ex.trainable_self_attention(ex.journey_inputs())
    assert torch.equal(torch.random.get_rng_state(), before)  # the page never moves the global seed
    assert_printed(sa.w_query, seed.W_QUERY, 4)
    assert_printed(sa.w_key, seed.W_KEY, 4)
    assert_printed(sa.w_value, seed.W_VALUE, 4)
    assert_printed(sa.queries[1], [0.4306, 1.4551], 4)
    assert_printed(sa.keys.T, seed.KEYS_T, 4)
    assert_printed(sa.values, seed.VALUES, 4)
    assert sa.scale == pytest.approx(1 / math.sqrt(2))
    assert_printed(sa.steps.scores[1], [1.2705, 1.8524, 1.8111, 1.0795, 0.5577, 1.5440], 4)
    assert_printed(sa.steps.weights[1], [0.1500, 0.2264, 0.2199, 0.1311, 0.0906, 0.1820], 4)
    assert_printed(sa.steps.output[1], [0.3061, 0.8210], 4)
    assert_printed(sa.steps.output, seed.SA_V1, 4)  # V1 draws the same matrices
    unscaled = ex.trainable_self_attention(ex.journey_inputs(), scaled=False)
    assert not torch.allclose(unscaled.steps.weights, sa.steps.weights)


def test_self_attention_v1_and_v2() -> None:
    v = ex.compare_v1_v2(ex.journey_inputs())
    assert_printed(v.v1_output, seed.SA_V1, 4)
    assert_printed(v.v2_output, seed.SA_V2, 4)
    assert ((v.v1_w_query >= 0) & (v.v1_w_query < 1)).all()
    assert_printed(v.v1_w_query, seed.W_QUERY, 4)
    assert (v.v2_w_query.abs() <= 1 / math.sqrt(3)).all() and (v.v2_w_query < 0).any()
    assert v.v2_w_query.shape == (3, 2)


def test_init_spread_backs_the_paragraph() -> None:
    rows = {(r["input width"], r["initialisation"][:5]): r for r in ex.init_spread((3, 768))}
    assert rows[(768, "torch")]["largest weight per row (mean)"] > 0.9  # torch.rand: one-hot from the start
    assert rows[(768, "nn.Li")]["largest weight per row (mean)"] < 0.3  # nn.Linear: soft
    assert rows[(768, "torch")]["std of queries"] > 10 * rows[(768, "nn.Li")]["std of queries"]
    assert 0.3 < rows[(768, "nn.Li")]["std of queries"] < 1.0  # about the inputs' spread, at any width
    assert 0.3 < rows[(3, "nn.Li")]["std of queries"] < 1.0


# --- section 2: why divide by √d_k -------------------------------------------------------------


def test_norm_argument_of_seed_000() -> None:
    (d2, n2, r2), (d3, n3, r3) = ex.norm_of_constant(2.0, (2, 3))
    assert (d2, d3) == (2, 3)
    assert n2 == pytest.approx(2 * math.sqrt(2)) and r2 == pytest.approx(2 * math.sqrt(2))
    assert n3 == pytest.approx(2 * math.sqrt(3)) and r3 == pytest.approx(2 * math.sqrt(3))


def test_softmax_jacobian_matches_autograd() -> None:
    s = torch.randn(5, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    auto = torch.autograd.functional.jacobian(lambda t: torch.softmax(t, -1), s)
    torch.testing.assert_close(ex.softmax_jacobian(torch.softmax(s, -1)), auto)


def test_sqrt_dk_curves() -> None:
    c = ex.sqrt_dk_curves(n_keys=16)
    d = c.dims.astype(float)
    assert c.dims[0] == 2 and c.dims[-1] == 1024 and (np.diff(c.dims) > 0).all()
    np.testing.assert_allclose(c.dot_std_unscaled / np.sqrt(d), 1.0, atol=0.1)  # std of q·k grows as √d
    np.testing.assert_allclose(c.dot_std_scaled, 1.0, atol=0.1)  # scaled: about 1 at every d
    uniform = math.log(16)
    assert (c.entropy_scaled <= uniform).all() and (c.entropy_scaled > 2.0).all()
    assert np.ptp(c.entropy_scaled) < 0.2
    assert c.entropy_unscaled[-1] < 0.1 * c.entropy_unscaled[0] and c.entropy_unscaled[-1] < 0.2
    assert (np.diff(c.entropy_unscaled[::3]) < 0).all()  # falls steadily
    assert c.grad_norm_unscaled[-1] < 0.2 * c.grad_norm_scaled[-1]  # saturated softmax: vanishing gradient
    assert c.grad_norm_scaled.max() / c.grad_norm_scaled.min() < 1.2
    unscaled, scaled = ex.softmax_at_dim(1024)
    assert unscaled.max() > 0.9 and scaled.max() < 0.5
    assert unscaled.sum() == pytest.approx(1.0) and scaled.sum() == pytest.approx(1.0)


# --- section 3: cross-attention (seed 002), shapes (seed 004), masks -----------------------------


def test_one_hot_cross_attention_prints_the_seeds_numbers() -> None:
    state = np.random.get_state()[1].copy()
    oh = ex.one_hot_cross_attention()
    assert (np.random.get_state()[1] == state).all()  # private generators only
    assert oh.word_index == 0
    assert oh.input_sentence.tolist() == seed.INPUT_SENTENCE
    assert oh.output_sentence.shape == (13, 10)
    assert_printed(oh.query[:7].numpy(), np.reshape(seed.QUERIES[:70], (7, 10)), 8)
    s = oh.steps
    assert s.scores.dtype == torch.float64
    assert s.scores.shape == s.weights.shape == (13, 8) and s.output.shape == (13, 10)
    assert_printed(s.scores[0], seed.SCORES_WORD_0, 8)
    assert_printed(s.weights[0], seed.WEIGHTS_WORD_0, 8)
    assert s.scaled[0, 0].item() == pytest.approx(3.1707535631756056 / math.sqrt(10), rel=1e-15)
    assert_printed(s.output[:7], np.reshape(seed.ATTENTION[:70], (7, 10)), 8)
    assert_printed(s.output[7, :2], seed.ATTENTION[70:72], 8)
    shapes = {step.formula: step.shape for step in oh.shapes()}
    assert shapes["Q = X_out · W_Q"] == (13, 10) and shapes["K = X_in · W_K"] == (8, 10)
    assert shapes["Q · Kᵀ"] == (13, 8) and shapes["weights · V"] == (13, 10)


@pytest.mark.parametrize("l", [1, 5])
def test_cross_attention_shapes_of_seed_004(l: int) -> None:
    c = ex.cross_attention_shapes(l)
    got = [step.shape for step in c.shapes()]
    assert got == [(l, 10), (7, 13), (10, 15), (13, 15), (13, 25), (l, 15), (7, 15), (7, 25), (l, 7), (l, 7), (l, 25)]
    torch.testing.assert_close(c.steps.weights.sum(-1), torch.ones(l))
    torch.testing.assert_close(c.q, c.x @ c.w_q + (c.q - c.x @ c.w_q)[0])  # x W_Q plus one bias row
    assert torch.equal(ex.cross_attention_shapes(l).steps.output, c.steps.output)  # deterministic


@pytest.fixture(scope="module")
def sentences() -> tuple[ex.SentenceVectors, ex.SentenceVectors]:
    emb = load_embeddings()
    return (ex.sentence_vectors("the apple was sweet and fresh", emb),
            ex.sentence_vectors("we are eating xqzzy fruit for breakfast", emb))


def test_sentence_vectors_report_unknown_words(sentences) -> None:
    a, b = sentences
    assert a.known == a.tokens and a.vectors.shape == (6, 50)
    assert b.unknown == ["xqzzy"] and "xqzzy" not in b.known and b.vectors.shape == (6, 50)
    with pytest.raises(EmbeddingError, match="none of the words of sentence A"):
        ex.sentence_vectors("xqzzy qqqzz", load_embeddings(), what="sentence A")
    with pytest.raises(EmbeddingError, match="sentence B is empty"):
        ex.sentence_vectors("   ", load_embeddings(), what="sentence B")


@pytest.mark.parametrize("kind", ex.MASKS)
def test_masked_entries_are_exactly_zero_and_rows_sum_to_one(sentences, kind: str) -> None:
    a, b = sentences
    m = ex.glove_attention(a, b, n_pad=3, mask=kind)
    w = m.steps.weights
    assert w.shape == (6, 9) and m.key_tokens[-3:] == [ex.PAD] * 3
    assert (w[~m.mask] == 0.0).all() and m.n_masked_exactly_zero == m.n_masked
    torch.testing.assert_close(m.row_sums, torch.ones(6))
    assert (w >= 0).all() and not torch.isnan(w).any()
    assert m.steps.scaled[0, 0].item() == pytest.approx(m.steps.scores[0, 0].item() / math.sqrt(50))
    if kind == "none":
        assert m.n_masked == 0 and (m.pad_weight > 0).all()  # unmasked pads take weight
    if "padding" in kind:
        assert (m.pad_weight == 0).all()
    if "causal" in kind:
        assert (torch.triu(w, diagonal=1) == 0).all()
    if kind == "padding":
        assert m.n_masked == 6 * 3


def test_attention_mask_kinds() -> None:
    assert ex.attention_mask("none", 2, 3, 3).all()
    assert ex.attention_mask("padding", 2, 4, 3).tolist() == [[True, True, True, False]] * 2
    assert ex.attention_mask("causal", 3, 3, 3).tolist() == torch.ones(3, 3, dtype=torch.bool).tril().tolist()
    assert ex.attention_mask("padding + causal", 4, 4, 2).tolist() == [
        [True, False, False, False], [True, True, False, False], [True, True, False, False], [True, True, False, False]]
    with pytest.raises(InputError, match="unknown mask"):
        ex.attention_mask("diagonal", 2, 2, 2)


def test_fully_masked_row_is_zero_not_nan() -> None:
    fm = ex.fully_masked_row()
    assert (fm.weights[2] == 0).all() and (fm.output[2] == 0).all()
    assert not torch.isnan(fm.weights).any() and not torch.isnan(fm.output).any()
    assert torch.isnan(fm.plain_softmax[2]).all()  # what a plain softmax of −∞ gives
    torch.testing.assert_close(fm.weights[:2].sum(-1), torch.ones(2))


# --- the pages in AppTest --------------------------------------------------------------------------


def run_page(path: str) -> AppTest:
    at = AppTest.from_file(path, default_timeout=60).run()
    assert not at.exception, at.exception
    return at


def z(at: AppTest, key: str, trace: int = 0) -> np.ndarray:
    return array(chart(at, key)["data"][trace]["z"])


def highlighted_row(at: AppTest, key: str) -> float:
    shapes = chart(at, key)["layout"]["shapes"]
    return (shapes[0]["y0"] + shapes[0]["y1"]) / 2


def test_self_attention_page_renders_the_seeds_numbers_and_reacts() -> None:
    at = run_page(SELF_PAGE)
    assert not at.error
    for key in ("selfattn_query", "selfattn_temperature", "selfattn_scale_simple", "selfattn_scale", "selfattn_blowup",
                "selfattn_keys", "selfattn_dim", "selfattn_reset"):
        widget(at, key)
    assert [t.label for t in at.tabs] == ["1 · Without trainable weights", "2 · With trainable weights", "3 · Why divide by √d_k"]
    assert at.title[0].value.endswith("Self-attention step by step")
    assert [d.key for d in at.dataframe if str(d.key).startswith("selfattn_inputs")] == ["selfattn_inputs_0"]
    at.button(key="selfattn_reset").click().run()
    assert [d.key for d in at.dataframe if str(d.key).startswith("selfattn_inputs")] == ["selfattn_inputs_1"]
    assert_printed(z(at, "selfattn_scores"), seed.SCORES, 4)
    assert_printed(z(at, "selfattn_weights"), seed.WEIGHTS, 4)
    assert_printed(z(at, "selfattn_context"), seed.CONTEXT, 4)
    assert_printed(z(at, "selfattn_qk_context"), seed.SA_V1, 4)
    assert_printed(z(at, "selfattn_v2"), seed.SA_V2, 4)
    assert highlighted_row(at, "selfattn_weights") == 1  # "journey"
    assert any("[0.4419, 0.6515, 0.5683]" in e.value for e in at.latex)
    sqrt_before = chart(at, "selfattn_sqrt_dk")

    at.radio(key="selfattn_query").set_value("step").run()
    assert highlighted_row(at, "selfattn_weights") == 5
    assert_printed(z(at, "selfattn_query_scores"), [[s] for s in seed.SCORES[5]], 4)  # a column: ω_6j down the side

    weights_before = z(at, "selfattn_weights")
    at.slider(key="selfattn_temperature").set_value(0.2).run()
    sharp = z(at, "selfattn_weights")
    assert not np.allclose(sharp, weights_before) and (sharp.max(-1) > weights_before.max(-1)).all()

    at.toggle(key="selfattn_scale_simple").set_value(True).run()
    assert not np.allclose(z(at, "selfattn_weights"), sharp)

    at.select_slider(key="selfattn_blowup").set_value(100).run()
    table = chart(at, "selfattn_normalizations")["data"][0]["cells"]["values"]
    assert any("nan" in cell for column in table for cell in column)  # the naive softmax overflowed
    assert any("naive softmax broke" in c.value for c in at.caption)

    at.select_slider(key="selfattn_keys").set_value(64).run()
    assert chart(at, "selfattn_sqrt_dk") != sqrt_before
    assert not at.exception


def test_cross_attention_page_renders_the_seeds_numbers_and_reacts() -> None:
    at = run_page(CROSS_PAGE)
    assert not at.error
    for key in ("cross_output_word", "cross_len", "cross_query_text", "cross_context_text", "cross_mask",
                "cross_keys_from", "cross_pad"):
        widget(at, key)
    assert_printed(z(at, "cross_seed_scores")[0], seed.SCORES_WORD_0, 4)
    assert_printed(z(at, "cross_seed_weights")[0], seed.WEIGHTS_WORD_0, 4)
    assert_printed(z(at, "cross_seed_result")[:7], np.reshape(seed.ATTENTION[:70], (7, 10)), 4)
    assert highlighted_row(at, "cross_seed_weights") == 0
    at.selectbox(key="cross_output_word").set_value(4).run()
    assert highlighted_row(at, "cross_seed_weights") == 4

    diagram = json.dumps(chart(at, "cross_shape_diagram")["layout"]["annotations"], ensure_ascii=False)
    assert "1 × 10" in diagram and "7 × 13" in diagram and "1 × 25" in diagram
    at.slider(key="cross_len").set_value(4).run()
    diagram = json.dumps(chart(at, "cross_shape_diagram")["layout"]["annotations"], ensure_ascii=False)
    assert "4 × 10" in diagram and "4 × 7" in diagram and "4 × 25" in diagram

    masked = chart(at, "cross_masked")
    w = array(masked["data"][0]["z"])
    assert w.shape == (6, 8)  # 6 queries × (6 keys + 2 pads)
    assert (w[:, -2:] == 0.0).all()
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-6)
    assert [m.value for m in at.metric][:2] == ["12", "12"]

    at.radio(key="cross_mask").set_value("none").run()
    unmasked = chart(at, "cross_masked")
    assert len(unmasked["data"]) == 1 and (array(unmasked["data"][0]["z"])[:, -2:] > 0).all()
    at.radio(key="cross_mask").set_value("causal").run()
    at.radio(key="cross_keys_from").set_value("sentence A (self)").run()
    w = z(at, "cross_masked")
    assert (np.triu(w, 1) == 0).all()
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-6)
    assert not at.exception

    at.text_input(key="cross_query_text").input("xqzzy qqqzz").run()
    assert not at.exception
    assert any("none of the words of sentence A" in e.value for e in at.error)
