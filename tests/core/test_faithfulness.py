"""Tests for attention_core.faithfulness: head knock-out, the methods, curves, ERASER, the run report."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from attention_core.errors import ConfigError, DataError, EmbeddingError
from attention_core.explain import attention_rollout
from attention_core.faithfulness import (
    METHODS,
    Keep,
    Method,
    SentenceContext,
    Shuffle,
    _ask,
    _evaluation,
    _KnockOutPasses,
    _permute_last_layer,
    attention_flow,
    available_methods,
    eraser_ks,
    knock_out,
    register,
    run_report,
    run_side_by_side,
    sentence_lab,
)
from attention_core.map_names import head_name, parse_heads
from attention_core.model import AttentionClassifier, ModelConfig
from attention_core.sentence import evaluating

TINY = {"vocab_size": 20, "embedding_dim": 8, "d_model": 8, "n_heads": 2, "n_layers": 2, "dropout": 0.0}
SENTENCE = "the food was not good at all but the staff were kind"


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # small batches: one thread is the fast setting (conftest)


def tiny_model(seed: int = 0, **overrides: object) -> AttentionClassifier:
    torch.manual_seed(seed)
    return AttentionClassifier(ModelConfig(**{**TINY, **overrides})).eval()


def padded_batch() -> tuple[torch.Tensor, torch.Tensor]:
    ids = torch.tensor([[2, 3, 4, 5], [6, 7, 0, 0]])
    return ids, ids != 0


# --- head knock-out ---------------------------------------------------------------------------


def test_no_head_knocked_out_is_no_edit_and_an_identity_edit_changes_no_bit():
    model = tiny_model()
    ids, mask = padded_batch()
    assert knock_out([], model.cfg) is None and knock_out([], model.cfg, "uniform") is None
    logits, attn = model(ids, mask)
    edited_logits, edited_attn = model(ids, mask, edit_attention=lambda layer, w, key_mask: w)
    assert torch.equal(logits, edited_logits) and torch.equal(attn, edited_attn)
    # knocking out a head of the other layer leaves this layer's path untouched too (same weights object)
    edit = knock_out([(1, 0)], model.cfg)
    w = torch.rand(2, 2, 4, 4)
    assert edit(0, w, mask[:, None, None, :]) is w


@pytest.mark.parametrize("mode", ["zero", "uniform"])
def test_knocking_out_every_head_changes_the_output(bundled, mode):
    cfg = bundled.model_config
    every = [(layer, head) for layer in range(cfg.n_layers) for head in range(cfg.n_heads)]
    plain = bundled.forward(SENTENCE)
    off = bundled.forward(SENTENCE, edit_attention=knock_out(every, cfg, mode))
    assert not torch.allclose(plain.probabilities, off.probabilities, atol=1e-3)


def test_zero_knock_out_removes_the_heads_output_before_the_output_projection():
    model = tiny_model(seed=3)
    ids, mask = padded_batch()
    edit = knock_out([(0, 1), (1, 0)], model.cfg, "zero")
    logits, attn = model(ids, mask, edit_attention=edit)
    assert torch.count_nonzero(attn[0, :, 1]) == 0 and torch.count_nonzero(attn[1, :, 0]) == 0  # (L, B, H, T, T)
    reference = tiny_model(seed=3)
    dh = model.cfg.model_dim // model.cfg.n_heads
    with torch.no_grad():  # the same model with those heads' columns of the output projection zeroed
        reference.blocks[0].attn.out_proj.weight[:, dh : 2 * dh] = 0
        reference.blocks[1].attn.out_proj.weight[:, 0:dh] = 0
    expected, _ = reference(ids, mask)
    assert torch.allclose(logits, expected, atol=1e-6)
    assert not torch.allclose(logits, model(ids, mask)[0], atol=1e-4)


def test_uniform_knock_out_attends_equally_to_the_real_tokens_only():
    model = tiny_model(seed=1)
    ids, mask = padded_batch()
    _, attn = model(ids, mask, edit_attention=knock_out([(1, 1)], model.cfg, "uniform"))
    head = attn[1, :, 1]  # (B, T, T)
    assert torch.allclose(head[0], torch.full((4, 4), 0.25))
    assert torch.allclose(head[1, :, :2], torch.full((4, 2), 0.5)) and torch.count_nonzero(head[1, :, 2:]) == 0
    _, plain = model(ids, mask)
    assert torch.equal(attn[1, :, 0], plain[1, :, 0])  # the other head of that layer is untouched


@pytest.mark.parametrize(
    ("spec", "message"),
    [("3.9", "head 3.9 does not exist"), ("1.5", "head 1.5 does not exist"), ("0.1", "does not exist"),
     ("x", "not LAYER.HEAD"), ("1", "not LAYER.HEAD"), ("1.2.3", "not LAYER.HEAD")],
)
def test_a_head_that_does_not_exist_is_a_clear_error(spec, message):
    with pytest.raises(ConfigError, match=message) as err:
        parse_heads(spec, ModelConfig())
    assert str(err.value).endswith("this model has heads 1–4 in layers 1–2: write them as LAYER.HEAD, e.g. 1.4")


def test_parse_heads_is_one_based_and_empty_means_none():
    assert parse_heads("1.2, 2.4,1.2", ModelConfig()) == [(0, 1), (1, 3)]
    assert parse_heads("", ModelConfig()) == [] and parse_heads(" , ", ModelConfig()) == []
    with pytest.raises(ConfigError, match="mode"):
        knock_out([(0, 0)], ModelConfig(), "half")


def test_the_run_report_names_the_pooling_heads_as_the_cli_takes_them(bundled):
    texts, labels = bundled.validation
    report = run_report(bundled.model, bundled.encoder, bundled.label_names, texts[:2], labels[:2],
                        methods=["leave_one_out"], n_permutations=0)
    assert sorted(report.pruning_order) == sorted(f"{m}.{h}" for m in (1, 2, "pooling") for h in (1, 2, 3, 4))
    heads = parse_heads(",".join(report.pruning_order), bundled.model_config)  # as the CLI's --knock-out takes them
    assert sorted(heads) == [(m, h) for m in range(3) for h in range(4)]


def test_a_pooling_attention_is_one_more_layer_of_heads_to_knock_out_and_to_shuffle():
    model = tiny_model(seed=2, pooling="attention")
    ids, mask = padded_batch()
    cfg = model.cfg
    assert parse_heads("pooling.2", cfg) == parse_heads("Pooling.2", cfg) == parse_heads("3.2", cfg) == [(2, 1)]
    assert head_name(2, 1, cfg) == "pooling.2" and head_name(1, 1, cfg) == "2.2"
    with pytest.raises(ConfigError, match=r"in layers 1–2 and in the pooling attention: .* \(pooling\.1 is also 3\.1\)"):
        parse_heads("4.1", cfg)
    with pytest.raises(ConfigError, match="not LAYER.HEAD"):
        parse_heads("pooling.2", ModelConfig())  # a model that pools by mean has no pooling map
    logits, attn = model(ids, mask)
    same, same_attn = model(ids, mask, edit_attention=lambda layer, w, key_mask: w)
    assert torch.equal(logits, same) and torch.equal(attn, same_attn)
    off, off_attn = model(ids, mask, edit_attention=knock_out([(2, 0), (2, 1)], cfg))
    assert torch.count_nonzero(off_attn[2]) == 0 and torch.equal(off_attn[:2], attn[:2])
    assert not torch.allclose(off, logits, atol=1e-4)
    order = torch.tensor([[3, 2, 1, 0], [1, 0, 2, 3]])  # the second row shuffles its 2 real tokens only
    _, shuffled = model(ids, mask, edit_attention=_permute_last_layer(order, cfg.n_attention_maps - 1))
    assert torch.equal(shuffled[:2], attn[:2])  # the layers are untouched; the pooling map is shuffled
    assert torch.equal(shuffled[2, 0, ..., 0], attn[2, 0, ..., 3]) and torch.equal(shuffled[2, 1, ..., 0], attn[2, 1, ..., 1])


# --- rollout and flow --------------------------------------------------------------------------

# Two layers, one head, two tokens (row = query, column = key), no residual:
A1 = [[1.0, 0.0], [0.5, 0.5]]
A2 = [[0.5, 0.5], [1.0, 0.0]]


def two_layers() -> torch.Tensor:
    return torch.tensor([[A1], [A2]])  # (L=2, H=1, T=2, T=2)


def test_rollout_and_flow_agree_with_a_hand_computed_two_layer_example():
    attention = two_layers()
    # rollout = A2 · A1 = [[0.5·1 + 0.5·0.5, 0.5·0 + 0.5·0.5], [1, 0]]
    rollout = attention_rollout(attention, residual=False)
    assert torch.allclose(rollout, torch.tensor([[0.75, 0.25], [1.0, 0.0]]))
    # flow to a mean-pooled output (sink edges 0.5 each). From token a: a0→a1 carries 1, and a1 feeds
    # a2 (0.5) and b2 (1): both sink edges fill, 1.0. From token b: only b0→b1 (0.5) → a2 (0.5): 0.5.
    flow = attention_flow(attention, torch.tensor([0.5, 0.5], dtype=torch.float64), residual=False)
    assert flow == pytest.approx([1.0, 0.5], abs=1e-5)
    # flow into the first token only (the paper's [CLS]): a: a1→a2 0.5 + a0→b1→a2 0.5 = 1; b: b0→b1→a2 = 0.5
    first = attention_flow(attention, torch.tensor([1.0, 0.0], dtype=torch.float64), residual=False)
    assert first == pytest.approx([1.0, 0.5], abs=1e-5)
    # rollout read the same way: mean of rows [0.875, 0.125], first row [0.75, 0.25] — flow differs
    assert (torch.tensor([0.5, 0.5]) @ rollout).tolist() == pytest.approx([0.875, 0.125])


def test_flow_matches_networkx_max_flow_on_random_attention():
    nx = pytest.importorskip("networkx")
    g = torch.Generator().manual_seed(4)
    attention = torch.softmax(torch.randn(3, 2, 4, 4, generator=g) * 2, dim=-1)
    readout = torch.full((4,), 0.25, dtype=torch.float64)
    got = attention_flow(attention, readout, residual=True)
    layers = [attention_rollout(attention[i : i + 1], residual=True) for i in range(3)]
    graph = nx.DiGraph()
    for layer, a in enumerate(layers):
        for i, j in itertools.product(range(4), range(4)):
            graph.add_edge((layer, j), (layer + 1, i), capacity=float(a[i, j]))
    for i in range(4):
        graph.add_edge((3, i), "sink", capacity=0.25)
    expected = [nx.maximum_flow_value(graph, (0, j), "sink") for j in range(4)]
    assert got == pytest.approx(expected, abs=1e-4)


def flow_one_call_per_token(attention: torch.Tensor, readout: torch.Tensor, residual: bool) -> np.ndarray:
    """attention_flow as it was first written: a dense capacity matrix and one scipy call per token."""
    from scipy.sparse import csr_array
    from scipy.sparse.csgraph import maximum_flow

    scale = 2**20
    n_layers, t = attention.shape[0], attention.shape[-1]
    n = (n_layers + 1) * t + 1
    cap = np.zeros((n, n), dtype=np.int64)
    for i in range(n_layers):
        a = attention_rollout(attention[i : i + 1], residual=residual).double()
        cap[i * t : i * t + t, (i + 1) * t : (i + 2) * t] = np.rint(a.numpy().T * scale)
    cap[n_layers * t : n_layers * t + t, n - 1] = np.rint(readout.numpy() * scale)
    graph = csr_array(cap.astype(np.int32))
    return np.array([maximum_flow(graph, j, n - 1).flow_value for j in range(t)], dtype=float) / scale


@pytest.mark.parametrize("nodes_per_call", [1, 40, 1024, 10**6])  # one copy per call … every token's copy in one
def test_flow_solves_several_tokens_per_call_to_the_numbers_of_one_call_each(monkeypatch, nodes_per_call):
    monkeypatch.setattr("attention_core.faithfulness._FLOW_NODES_PER_CALL", nodes_per_call)
    g = torch.Generator().manual_seed(nodes_per_call)
    for layers, t, sharpness, residual in [(1, 1, 1, True), (2, 3, 1, False), (2, 9, 4, True), (3, 17, 8, True),
                                           (2, 40, 2, True), (1, 12, 6, False)]:
        attention = torch.softmax(torch.randn(layers, 4, t, t, generator=g) * sharpness, dim=-1)
        for readout in (torch.full((t,), 1 / t, dtype=torch.float64), torch.eye(t, dtype=torch.float64)[0],
                        torch.softmax(torch.randn(t, generator=g, dtype=torch.float64) * sharpness, -1)):
            expected = flow_one_call_per_token(attention, readout, residual)
            assert np.array_equal(attention_flow(attention, readout, residual=residual), expected)  # the same integers


# --- the methods on one sentence ---------------------------------------------------------------


def context(run, text: str, seed: int = 0, **kwargs) -> SentenceContext:
    encoded, batch = run.encoder.encode_for_model(text)
    out = run.forward(text)
    with evaluating(run.model):
        features = run.model.embed(batch.ids, batch.extra)
    return SentenceContext(run.model, encoded, features, out.attention, out.probabilities,
                           int(out.probabilities.argmax()), np.random.default_rng(seed), **kwargs)


def test_integrated_gradients_are_complete_within_one_percent(bundled):
    lab = sentence_lab(bundled.model, bundled.encoder, bundled.label_names, SENTENCE, ig_steps=256,
                       methods=["integrated_gradients"])
    ctx = context(bundled, SENTENCE)
    e = bundled.model_config.embedding_dim
    baseline = ctx.features.clone()
    baseline[..., :e] = 0  # the zero word vectors IG starts from
    with evaluating(bundled.model):
        log_p = [torch.log_softmax(bundled.model.forward_features(x, need_weights=False)[0][0], -1)[ctx.target]
                 for x in (ctx.features, baseline)]
    difference = float(log_p[0] - log_p[1])
    assert abs(difference) > 0.1  # a real change to explain
    assert sum(lab.scores["integrated_gradients"]) == pytest.approx(difference, rel=0.01)


def exact_shapley_by_enumeration(ctx: SentenceContext) -> np.ndarray:
    """Shapley values from their definition, every subset's value asked on its own."""
    t = ctx.n_tokens
    subsets = torch.tensor(list(itertools.product([False, True], repeat=t)))  # (2^T, T)
    value = dict(zip(map(tuple, subsets.tolist()), ctx.target_probability(subsets), strict=True))
    exact = np.zeros(t)
    for s, v in value.items():
        for i in range(t):
            if not s[i]:
                with_i = tuple(True if k == i else s[k] for k in range(t))
                size = sum(s)
                exact[i] += math.factorial(size) * math.factorial(t - size - 1) / math.factorial(t) * (value[with_i] - v)
    return exact


def test_sampled_shapley_values_add_up_and_approach_the_exact_ones(bundled):
    ctx = context(bundled, "not good at all", shapley_permutations=4000, shapley_exact_tokens=0)  # sampled
    t = ctx.n_tokens
    got = METHODS["shapley"].score(ctx)
    full, empty = context(bundled, "not good at all").target_probability(torch.tensor([[True] * t, [False] * t]))
    assert got.sum() == pytest.approx(full - empty, abs=1e-6)  # every sampled order adds up (float32 batches)
    assert got == pytest.approx(exact_shapley_by_enumeration(context(bundled, "not good at all")), abs=0.02)


@pytest.mark.parametrize("text", ["good", "not good at all", "the food was not good at all but the staff were kind"])
def test_short_sentences_get_exact_shapley_values(bundled, text):
    ctx = context(bundled, text, shapley_permutations=2)
    assert ctx.n_tokens <= ctx.shapley_exact_tokens == 12
    got = METHODS["shapley"].score(ctx)
    assert got == pytest.approx(exact_shapley_by_enumeration(context(bundled, text)), abs=1e-6)
    sampled = METHODS["shapley"].score(context(bundled, text, shapley_permutations=2, shapley_exact_tokens=0))
    assert ctx.n_tokens == 1 or np.abs(sampled - got).max() > 1e-3  # two sampled orders are not the exact values


def test_the_lab_and_the_report_say_where_shapley_values_are_exact(bundled):
    short = sentence_lab(bundled.model, bundled.encoder, bundled.label_names, "not good at all", methods=["shapley"])
    assert short.shapley == "exact: every one of the 16 subsets of its 4 words"
    long = sentence_lab(bundled.model, bundled.encoder, bundled.label_names, SENTENCE + " and the room was clean",
                        methods=["shapley"], n_permutations=0)
    assert long.shapley.startswith(f"sampled: 16 random orders of its {len(long.tokens)} words (exact up to 12 words")
    assert sentence_lab(bundled.model, bundled.encoder, bundled.label_names, "good", methods=["attention"]).shapley == ""
    texts, labels = bundled.validation
    lengths = [len(bundled.encoder.encode(text).ids) for text in texts[:20]]
    report = run_report(bundled.model, bundled.encoder, bundled.label_names, texts[:20], labels[:20],
                        methods=["shapley"], n_permutations=0, shapley_exact_tokens=9)
    exact = sum(n <= 9 for n in lengths)
    assert 0 < exact < 20
    assert report.shapley == (f"exact (every subset of the words) in the {exact} of 20 sentences of up to 9 words, "
                              f"sampled (8 random orders) in the {20 - exact} longer ones")


def test_exact_or_sampled_shapley_leaves_the_other_random_draws_alone(bundled):
    """Sampled or exact, Shapley draws its orders: the random baseline and the shuffles after it are the same."""
    def lab(exact_tokens: int) -> dict:
        return sentence_lab(bundled.model, bundled.encoder, bundled.label_names, "not good at all", seed=5,
                            shapley_exact_tokens=exact_tokens).to_dict()

    exact, sampled = lab(12), lab(0)
    assert exact["scores"]["shapley"] != sampled["scores"]["shapley"]
    assert exact["deletion"]["random"] == pytest.approx(sampled["deletion"]["random"], abs=1e-9)
    assert exact["permutation_tvd"] == pytest.approx(sampled["permutation_tvd"], abs=1e-9)


def test_leave_one_out_is_the_probability_drop_without_each_token(bundled):
    ctx = context(bundled, "a great movie with bad music")
    t = ctx.n_tokens
    got = METHODS["leave_one_out"].score(ctx)
    for i in range(t):
        keep = torch.ones(1, t, dtype=torch.bool)
        keep[0, i] = False
        with evaluating(bundled.model):
            logits, _ = bundled.model.forward_features(ctx.features, keep, need_weights=False)
        assert got[i] == pytest.approx(float(ctx.probabilities[ctx.target] - torch.softmax(logits[0], -1)[ctx.target]),
                                       abs=1e-6)


def test_sentence_lab_curves_start_full_and_end_empty(bundled):
    lab = sentence_lab(bundled.model, bundled.encoder, bundled.label_names, SENTENCE)
    t = len(lab.tokens)
    full = lab.probabilities[lab.label]
    assert lab.methods == [m.name for m in available_methods(bundled.model)] == list(METHODS)  # it pools by attention
    assert "pooling_attention" not in [m.name for m in available_methods(tiny_model())]  # mean pooling: not offered
    assert set(lab.deletion) == {*lab.methods, "random"} == set(lab.comprehensiveness) == set(lab.sufficiency)
    for name in lab.deletion:
        assert len(lab.deletion[name]) == len(lab.insertion[name]) == t + 1
        assert lab.deletion[name][0] == pytest.approx(full, abs=1e-6)
        assert lab.insertion[name][-1] == pytest.approx(full, abs=1e-6)
        assert lab.deletion[name][-1] == pytest.approx(lab.insertion[name][0], abs=1e-9)  # nothing left
    m = len(lab.methods)
    assert len(lab.kendall) == m and all(lab.kendall[i][i] == pytest.approx(1.0) for i in range(m))
    assert all(len(lab.scores[name]) == t for name in lab.methods)
    assert lab.comprehensiveness["leave_one_out"] > lab.comprehensiveness["random"]


def test_identity_permutation_of_the_last_layer_moves_nothing(bundled):
    ctx = context(bundled, SENTENCE)
    order = torch.arange(ctx.n_tokens)[None]
    with evaluating(bundled.model):
        logits, _ = bundled.model.forward_features(ctx.features, edit_attention=_permute_last_layer(order, 2),
                                                   need_weights=False)
    assert torch.equal(torch.softmax(logits[0], -1), ctx.probabilities)


def test_the_same_seed_gives_the_same_numbers(bundled):
    def lab(seed: int) -> dict:
        return sentence_lab(bundled.model, bundled.encoder, bundled.label_names, SENTENCE, seed=seed).to_dict()

    first = lab(7)
    assert lab(7) == first
    assert lab(8)["scores"]["shapley"] == pytest.approx(first["scores"]["shapley"], abs=1e-9)  # 12 words: exact
    assert lab(8)["deletion"]["random"] != first["deletion"]["random"]
    texts, labels = bundled.validation
    reports = [run_report(bundled.model, bundled.encoder, bundled.label_names, texts[:15], labels[:15], seed=3).to_dict()
               for _ in range(2)]
    assert reports[0] == reports[1]


def test_a_method_can_be_added_for_models_that_have_it(bundled):
    extra = Method("first_word", "First word", "the first word only", lambda ctx: np.eye(ctx.n_tokens)[0],
                   available=lambda model: model.cfg.pooling == "first")
    try:
        register(extra)
        assert "first_word" not in [m.name for m in available_methods(bundled.model)]  # attention pooling: not offered
        assert "first_word" in [m.name for m in available_methods(tiny_model(pooling="first"))]
    finally:
        METHODS.pop("first_word", None)
    with pytest.raises(ConfigError, match="not known"):
        available_methods(bundled.model, ["attention", "lime"])


def test_a_pooling_attention_map_after_the_layers_is_read_as_the_pooling_and_kept_out_of_rollout():
    model = tiny_model()
    t = 3
    layers = torch.softmax(torch.randn(2, 2, t, t, generator=torch.Generator().manual_seed(0)), dim=-1)
    query = torch.tensor([[0.6, 0.3, 0.1], [0.2, 0.2, 0.6]])  # (H, T): each head's pooling weights
    stack = torch.cat([layers, query[None, :, None, :].expand(1, 2, t, t)])  # (L + 1, H, T, T)
    ctx = SentenceContext(model, None, torch.zeros(1, t, 8), stack, torch.tensor([0.5, 0.5]), 0,
                          np.random.default_rng(0))
    assert torch.equal(ctx.layers, layers)
    assert ctx.readout().tolist() == pytest.approx([0.4, 0.25, 0.35])  # the heads' mean
    assert METHODS["pooling_attention"].score(ctx) == pytest.approx([0.4, 0.25, 0.35])
    rollout = attention_rollout(layers, residual=True).double()
    assert METHODS["rollout"].score(ctx) == pytest.approx((ctx.readout() @ rollout).numpy())
    plain = SentenceContext(model, None, torch.zeros(1, t, 8), layers, torch.tensor([0.5, 0.5]), 0,
                            np.random.default_rng(0))
    assert plain.pooling_attention is None and plain.readout().tolist() == pytest.approx([1 / 3] * 3)


# --- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   ", "xqzzy qqqzz"])
def test_an_empty_or_all_unknown_sentence_is_a_clear_error(bundled, text):
    with pytest.raises(EmbeddingError):
        sentence_lab(bundled.model, bundled.encoder, bundled.label_names, text)


def test_labels_that_do_not_fit_the_run_are_a_clear_error(bundled):
    with pytest.raises(DataError, match=r"labels \['neutral'\] are not among the model's labels"):
        run_report(bundled.model, bundled.encoder, bundled.label_names, ["good", "bad"], ["positive", "neutral"])
    with pytest.raises(DataError, match="not classes of the run"):
        run_report(bundled.model, bundled.encoder, bundled.label_names, ["good", "bad"], [0, 5])
    with pytest.raises(EmbeddingError, match="no sentence"):
        run_report(bundled.model, bundled.encoder, bundled.label_names, ["xqzzy"], ["positive"])


# --- the whole run -------------------------------------------------------------------------------


def test_erasure_in_leave_one_out_order_beats_random_on_the_bundled_validation_set(bundled):
    texts, labels = bundled.validation
    seen = []
    report = run_report(bundled.model, bundled.encoder, bundled.label_names, texts, labels, methods=["leave_one_out"],
                        n_permutations=0, on_progress=seen.append)
    assert report.n + report.skipped == len(texts) == 600
    assert report.comprehensiveness["leave_one_out"] >= report.comprehensiveness["random"]
    assert report.sufficiency["leave_one_out"] <= report.sufficiency["random"]
    cfg = bundled.model_config
    assert cfg.n_attention_maps == cfg.n_layers + 1 == 3  # 2 layers and the pooling attention, knocked out as layer 3
    assert np.array(report.head_accuracy).shape == (cfg.n_attention_maps, cfg.n_heads)
    assert len(report.pruning_accuracy) == cfg.n_attention_maps * cfg.n_heads + 1
    assert report.pruning_accuracy[0] == report.accuracy
    assert sorted(report.pruning_order) == sorted(f"{m}.{h}" for m in (1, 2, "pooling") for h in (1, 2, 3, 4))
    stages = [p.stage for p in seen]
    assert stages.count("heads") == 2 * cfg.n_attention_maps * cfg.n_heads + 1 and stages.count("sentences") == report.n
    assert seen[-1].done == seen[-1].total


def test_run_report_permutation_test_and_histogram(bundled):
    texts, labels = bundled.validation
    report = run_report(bundled.model, bundled.encoder, bundled.label_names, texts[:20], labels[:20],
                        methods=["attention", "rollout"], knock_out_mode="uniform")
    assert len(report.permutation_tvd) == 20 and all(0 <= v <= 1 for v in report.permutation_tvd)
    assert sum(report.tvd_histogram["counts"]) == 20 and len(report.tvd_histogram["edges"]) == 11
    assert report.tvd_histogram["edges"][-1] >= max(report.permutation_tvd)
    assert report.knock_out_mode == "uniform" and report.methods == ["attention", "rollout"]
    assert report.kendall[0][1] == report.kendall[1][0]



def test_the_lab_and_the_report_read_a_model_that_pools_by_attention(bundled):
    model, cfg = bundled.model, bundled.model_config
    assert cfg.pooling == "attention"
    lab = sentence_lab(model, bundled.encoder, bundled.label_names, SENTENCE, n_permutations=5)
    assert "pooling_attention" in lab.methods and sum(lab.scores["pooling_attention"]) == pytest.approx(1.0)
    assert len(lab.permutation_tvd) == 5
    texts, labels = bundled.validation
    report = run_report(model, bundled.encoder, bundled.label_names, texts[:5], labels[:5], methods=["attention"])
    assert np.array(report.head_accuracy).shape == (cfg.n_layers + 1, cfg.n_heads)


# --- many sentences side by side -------------------------------------------------------------------


def differences(a, b, path: str = "") -> list[str]:
    """Where two reports' dicts differ: numbers by more than 1e-5, anything else at all."""
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        return [d for k in a for d in differences(a[k], b[k], f"{path}.{k}")]
    if isinstance(a, list):
        assert len(a) == len(b), path
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in differences(x, y, f"{path}[{i}]")]
    if isinstance(a, float) and isinstance(b, float):
        return [] if abs(a - b) <= 1e-5 else [f"{path}: {a} != {b}"]
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


def test_the_model_gives_a_padded_sentence_the_numbers_it_gives_it_alone(bundled):
    texts = ["good", "the food was not good at all", "a great movie with bad music, a dull story and NO plot"]
    batch = bundled.encoder.collate([bundled.encoder.encode(t) for t in texts])
    with evaluating(bundled.model):
        logits, attention = bundled.model(batch.ids, batch.mask, batch.extra, batch.casing)  # padded to the longest
    for i, text in enumerate(texts):
        alone = bundled.forward(text)
        t = len(alone.encoded.ids)
        assert torch.allclose(torch.softmax(logits[i], -1), alone.probabilities, atol=1e-5)
        assert torch.allclose(attention[:, i, :, :t, :t], alone.attention, atol=1e-5)


def test_sentences_side_by_side_get_the_numbers_they_get_alone(bundled):
    texts, labels = bundled.validation
    picked = sorted(range(len(texts)), key=lambda i: len(texts[i]))[::50]  # 12, from the shortest to the longest
    lengths = [len(bundled.encoder.encode(texts[i]).ids) for i in picked]
    assert max(lengths) >= 4 * min(lengths)  # padding, a lot of it
    args = (bundled.model, bundled.encoder, bundled.label_names, [texts[i] for i in picked], [labels[i] for i in picked])
    alone = run_report(*args, n_permutations=5, sentences_per_pass=1).to_dict()
    together = run_report(*args, n_permutations=5, sentences_per_pass=12).to_dict()
    assert differences(alone, together) == []
    assert together["n"] == 12 and len(together["permutation_tvd"]) == 12


def test_the_report_reads_erasers_bins_off_the_curves_as_the_whole_curves_have_them(bundled):
    """The report computes each curve at ERASER's bins alone: the same numbers as the lab's whole curves."""
    methods = available_methods(bundled.model, ["attention", "leave_one_out", "grad_x_input"])
    contexts = [context(bundled, SENTENCE, seed=4), context(bundled, SENTENCE, seed=4)]
    whole, bins = run_side_by_side(contexts, [_evaluation(contexts[0], methods, 5, 3),
                                              _evaluation(contexts[1], methods, 5, 3, whole_curves=False)])
    t = contexts[0].n_tokens
    ks = sorted(set(eraser_ks(t)))
    assert len(ks) < t + 1
    for name in whole["deletion"]:
        for curves in ("deletion", "insertion"):
            assert bins[curves][name][ks] == pytest.approx(whole[curves][name][ks], abs=1e-6)
            assert np.isnan(np.delete(bins[curves][name], ks)).all()  # never computed
        assert bins["comprehensiveness"][name] == pytest.approx(whole["comprehensiveness"][name], abs=1e-6)
        assert bins["sufficiency"][name] == pytest.approx(whole["sufficiency"][name], abs=1e-6)
    assert bins["permutation_tvd"] == pytest.approx(whole["permutation_tvd"], abs=1e-6)


def test_knock_out_passes_from_the_kept_hidden_states_are_whole_passes_to_the_bit(bundled):
    from attention_core.training import batches_probabilities, length_batches

    texts = bundled.validation[0][:70]
    cfg = bundled.model_config
    batches = length_batches(bundled.encoder, texts, 32)
    passes = _KnockOutPasses(bundled.model, batches, len(texts))
    for heads in ([], [(0, 1)], [(1, 2), (1, 0)], [(2, 3)], [(2, 0), (0, 3)], [(2, h) for h in range(4)]):
        for mode in ("zero", "uniform"):
            whole = batches_probabilities(bundled.model, batches, len(texts), edit_attention=knock_out(heads, cfg, mode))
            assert np.array_equal(passes.probabilities(heads, mode), whole)


def test_shuffles_run_the_maps_below_the_last_once_to_the_numbers_of_whole_passes(bundled):
    contexts = [context(bundled, SENTENCE), context(bundled, "not good at all")]
    orders = [torch.stack([torch.randperm(ctx.n_tokens, generator=torch.Generator().manual_seed(i)) for i in range(3)])
              for ctx in contexts]
    got = run_side_by_side(contexts, [_ask(Shuffle(o)) for o in orders])
    last = bundled.model_config.n_attention_maps - 1
    for ctx, o, answer in zip(contexts, orders, got, strict=True):
        with evaluating(bundled.model):
            logits, _ = bundled.model.forward_features(ctx.features.expand(3, -1, -1), need_weights=False,
                                                       edit_attention=_permute_last_layer(o, last))
        assert np.abs(answer.numpy() - torch.softmax(logits.double(), -1).numpy()).max() < 1e-6
        assert np.abs(answer.numpy() - ctx.probabilities.double().numpy()).max() > 1e-4  # the shuffles moved it


def test_a_masked_row_asked_again_is_answered_from_the_first_time(bundled, monkeypatch):
    ctx = context(bundled, SENTENCE)
    t = ctx.n_tokens
    first = torch.rand(6, t, generator=torch.Generator().manual_seed(1)) < 0.5
    again = torch.cat([first[2:4], ~torch.eye(t, dtype=torch.bool)[:3], first[:1]])  # two rows seen, three new, one seen
    ran = []
    enter_rows = bundled.model.enter_rows
    monkeypatch.setattr(bundled.model, "enter_rows", lambda f, s, m: ran.append(len(m)) or enter_rows(f, s, m))

    def steps():
        return (yield Keep(first)), (yield Keep(again))

    (got_first, got_again), = run_side_by_side([ctx], [steps()])
    assert ran == [len(torch.unique(first, dim=0)), 3]
    fresh = context(bundled, SENTENCE).target_probability(again)  # a new context: every row runs
    assert got_again == pytest.approx(fresh, abs=1e-6)
    assert got_again[0] == got_first[2] and got_again[-1] == got_first[0]
