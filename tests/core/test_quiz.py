"""Check yourself (attention_core.quiz): every revealed answer is what the model computes, recomputed
here from Run.predict, the attention maps and a knock-out; no repeats; the same seed, the same quiz."""

from __future__ import annotations

import doctest
import re
from dataclasses import replace
from pathlib import Path
from urllib.parse import parse_qs

import numpy as np
import pytest
import torch

import attention_core.quiz as quiz_module
from attention_core import AttentionClassifier, EpochRecord, History, load_run, save_run
from attention_core.errors import ConfigError, EmbeddingError
from attention_core.faithfulness import knock_out
from attention_core.map_names import parse_heads
from attention_core.quiz import (
    EARLY_EPOCH,
    MARGINS,
    NO,
    PROBABILITY_RANGES,
    YES,
    ComparedRun,
    Question,
    compared_runs,
    next_question,
    questions,
)
from attention_core.text import tokenize

ROOT = Path(__file__).resolve().parents[2]
SENTENCES = ["the food was not good at all", "a great movie with a terrible ending"]


@pytest.fixture(scope="module")
def quiz(bundled) -> dict[str, list[Question]]:
    return {text: questions(bundled, text, np.random.default_rng(0)) for text in SENTENCES}


def of_kind(quiz: dict[str, list[Question]], kind: str) -> list[tuple[str, Question]]:
    found = [(text, q) for text, qs in quiz.items() for q in qs if q.kind == kind]
    assert found, f"no {kind} question on {SENTENCES}"
    return found


def params(q: Question) -> dict[str, str]:
    return {name: value for name, value in q.view.params}


def head_label(layer: int, head: int, cfg) -> str:
    """How the Faithfulness page and the CLI name a head (0-based in): "1.2", the pooling query's "pooling.2"."""
    return f"{'pooling' if layer == cfg.n_layers else layer + 1}.{head + 1}"


def test_which_word_a_head_attends_to_most_is_the_argmax_of_its_row(bundled, quiz):
    for text, q in of_kind(quiz, "attends_most"):
        p = params(q)
        layer, head, query = int(p["layer"]) - 1, int(p["head"]) - 1, int(q.key.rsplit("|", 1)[1])
        pred = bundled.predict(p["sentence"])
        assert p["sentence"] == text and (q.view.page, p["tab"]) == ("Inspect", "model-view")
        row = np.asarray(pred.attention[layer][head][query])
        assert pred.tokens[int(row.argmax())] == q.answer
        assert f"*{pred.tokens[query]}*" in q.text and f"layer {layer + 1}, head {head + 1}" in q.text
        others = [w for i, w in enumerate(row) if pred.tokens[i] != q.answer]
        assert row.max() - max(others) >= MARGINS["attends_most"]  # a clear answer, not a rounding's
        assert set(q.options) <= set(pred.tokens) and len(q.options) == 4


def test_the_head_whose_knock_out_moves_the_prediction_most_is_the_answer(bundled, quiz):
    for text, q in of_kind(quiz, "knock_out"):
        cfg = bundled.model_config
        plain = bundled.predict(text)
        label = plain.label
        moved = {}
        for layer in range(cfg.n_attention_maps):
            for head in range(cfg.n_heads):
                off = bundled.predict(text, edit_attention=knock_out([(layer, head)], cfg))
                moved[head_label(layer, head, cfg)] = abs(off.probabilities[label] - plain.probabilities[label])
        assert max(moved, key=moved.get) == q.answer
        assert all(moved[q.answer] - moved[h] >= MARGINS["knock_out"] for h in q.options if h != q.answer)
        assert q.view.page == "Faithfulness" and params(q) == {"sentence": text, "tab": "heads", "off": q.answer}
        assert parse_heads(params(q)["off"], cfg)  # the view's parameter is a head the page accepts
    # the bundled model pools by attention: its pooling heads are offered by name, as the page and the CLI name them
    assert any(h.startswith("pooling.") for _, q in of_kind(quiz, "knock_out") for h in q.options)


def test_whether_removing_a_word_flips_the_label_is_the_prediction_without_it(bundled, quiz):
    answers = set()
    for text, q in of_kind(quiz, "remove_word"):
        word = q.key.rsplit("|", 1)[1]
        shorter = params(q)["sentence"]
        assert tokenize(shorter) == [t for t in tokenize(text) if t != word]
        flips = bundled.predict(shorter).label != bundled.predict(text).label
        assert q.answer == (YES if flips else NO) and q.options == (YES, NO)
        answers.add(q.answer)
    assert answers == {YES, NO}  # "not" flips the first sentence, most words flip nothing


def test_the_most_spread_layer_has_the_highest_mean_row_entropy(bundled, quiz):
    n_layers = bundled.model_config.n_layers
    assert bundled.model_config.map_names()[n_layers:] == ["Pooling"]  # the bundled model pools by attention
    for text, q in of_kind(quiz, "most_spread"):
        attention = np.asarray(bundled.predict(text).attention)[:n_layers]  # (L, H, T, T): the layers, not the pooling query
        entropy = [-(a * np.log(np.clip(a, 1e-12, None))).sum(-1).mean() for a in attention]
        assert q.answer == f"Layer {int(np.argmax(entropy)) + 1}" and "Pooling" not in q.options
        assert all(f"layer {i + 1} {e:.2f}" in q.explanation for i, e in enumerate(entropy))


def test_the_probability_range_holds_the_predicted_probability(bundled, quiz):
    for text, q in of_kind(quiz, "probability"):
        label = q.key.rsplit("|", 1)[1]
        p = bundled.predict(text).probabilities[label]
        (low, high), = [r for r, name in zip(PROBABILITY_RANGES, q.options, strict=True) if name == q.answer]
        assert low <= p <= high
        assert all(abs(p - edge) >= MARGINS["probability"] for edge in (0.25, 0.5, 0.75))  # never a rounding's answer
        assert f"{p:.3f}" in q.explanation


def history(*losses: float) -> History:
    return History(epochs=[EpochRecord(i + 1, loss, 0.5, None, None, float(i), 100.0) for i, loss in enumerate(losses)])


def compared(*losses: float, labels: tuple[str, ...] = ("neg", "pos"), confusion: list | None = None) -> ComparedRun:
    """A run with these training losses and labels; ``confusion``: its kept (last) epoch's validation confusion."""
    h = history(*losses)
    h.kept_epoch = len(losses)
    h.epochs[-1].val_confusion = confusion
    return ComparedRun(h, labels)


def test_which_run_learned_faster_compares_the_training_loss_after_the_same_early_epoch(bundled):
    runs = {"slow": compared(0.9, 0.8, 0.7, 0.1), "fast": compared(0.9, 0.5, 0.3, 0.29), "short": compared(0.6, 0.55)}
    qs = questions(bundled, SENTENCES[0], np.random.default_rng(0), runs=runs, kinds=["learned_faster"])
    found = {frozenset(q.options): q for q in qs}
    assert set(found) == {frozenset(("slow", "fast")), frozenset(("slow", "short")), frozenset(("fast", "short"))}
    for pair, q in found.items():
        epoch = min(EARLY_EPOCH, *(len(runs[n].history.epochs) for n in pair))
        assert q.answer == min(pair, key=lambda n: runs[n].history.epochs[epoch - 1].train_loss)
        assert f"after epoch {epoch}" in q.text
        assert q.view.page == "Train" and params(q)["compare"] in (",".join(sorted(pair)),)
    assert found[frozenset(("slow", "fast"))].answer == "fast"  # after epoch 3, though "slow" ends lower
    assert found[frozenset(("fast", "short"))].answer == "fast"  # epoch 2 of each: 0.5 against 0.55
    assert questions(bundled, SENTENCES[0], np.random.default_rng(0), runs={"slow": runs["slow"]},
                     kinds=["learned_faster"]) == []  # one run: nothing to compare
    even = {"a": compared(0.5, 0.4, 0.3), "b": compared(0.5, 0.4, 0.299)}
    assert questions(bundled, SENTENCES[0], np.random.default_rng(0), runs=even, kinds=["learned_faster"]) == []


def learned_faster(bundled, runs: dict[str, ComparedRun]) -> list[Question]:
    return questions(bundled, SENTENCES[0], np.random.default_rng(0), runs=runs, kinds=["learned_faster"])


def test_runs_with_other_labels_are_never_compared_by_their_training_loss(bundled):
    # The pair: a 2-class run's 0.674 against a 4-class run's 1.082 (a loss starts near ln C).
    four = ("anger", "fear", "joy", "sadness")
    two_and_four = {"two": compared(0.69, 0.68, 0.674), "four": compared(1.38, 1.2, 1.082, labels=four)}
    assert learned_faster(bundled, two_and_four) == []
    # The same labels (in another order) are compared, and a third run of four classes only with "four".
    same = {**two_and_four, "two-again": compared(0.69, 0.6, 0.5, labels=("pos", "neg")),
            "four-again": compared(1.38, 1.3, 1.25, labels=tuple(reversed(four)))}
    pairs = {frozenset(q.options): q.answer for q in learned_faster(bundled, same)}
    assert pairs == {frozenset(("two", "two-again")): "two-again", frozenset(("four", "four-again")): "four"}


def test_a_run_that_learned_nothing_is_never_named_the_one_that_learned_faster(bundled):
    nothing = [[0, 35], [0, 45]]  # every validation row said "pos"
    runs = {"learned-nothing": compared(0.69, 0.68, 0.674, confusion=nothing),
            "learned": compared(0.69, 0.75, 0.80, confusion=[[30, 5], [6, 39]])}
    assert learned_faster(bundled, runs) == []
    runs["learned"] = compared(0.69, 0.6, 0.5, confusion=[[30, 5], [6, 39]])  # the lower loss is the learning run's
    (q,) = learned_faster(bundled, runs)
    assert q.answer == "learned"


def test_runs_read_from_run_folders_give_the_same_question(bundled, tmp_path):
    for name, losses in {"a": (0.7, 0.6, 0.5), "b": (0.7, 0.4, 0.2)}.items():
        save_run(replace(bundled, history=history(*losses)), tmp_path / name)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "config.json").write_text("{")  # left out, not an error
    runs = compared_runs(sorted(tmp_path.iterdir()))
    assert sorted(runs) == ["a", "b"] and runs["a"].label_names == bundled.label_names
    assert [e.train_loss for e in runs["b"].history.epochs] == [0.7, 0.4, 0.2]
    (q,) = learned_faster(bundled, runs)
    assert q.answer == "b"


def test_the_same_seed_gives_the_same_questions_and_another_seed_another_order(bundled):
    def keys_and_options(seed: int) -> list[tuple[str, tuple[str, ...]]]:
        return [(q.key, q.options) for q in questions(bundled, SENTENCES[0], np.random.default_rng(seed))]

    assert keys_and_options(1) == keys_and_options(1)
    assert keys_and_options(1) != keys_and_options(2)
    assert sorted(keys_and_options(1))[0][0] == sorted(keys_and_options(2))[0][0]  # the same questions, reordered


def test_a_session_never_gets_a_question_twice(quiz):
    asked: list[str] = []
    for text in [*SENTENCES, SENTENCES[0]]:  # back to the first sentence: only what was not asked yet
        for _ in range(5):
            q = next_question(quiz[text], asked)
            assert q is not None and q.key not in asked
            asked.append(q.key)
    assert len(set(asked)) == len(asked) == 15
    every = [q.key for q in quiz[SENTENCES[1]]]
    assert len(set(every)) == len(every)
    assert next_question(quiz[SENTENCES[1]], every) is None  # all asked: none left, never a repeat


def test_kinds_take_turns(quiz):
    first = [q.kind for q in quiz[SENTENCES[0]][:5]]
    assert len(set(first)) == 5  # one of each kind of the sentence before any second of a kind


@pytest.mark.parametrize("text", ["xqzzyv blorfnik", "   "])
def test_a_sentence_the_model_cannot_read_is_a_clear_error(bundled, text):
    with pytest.raises(EmbeddingError, match="type"):
        questions(bundled, text, np.random.default_rng(0))


def test_words_of_a_sentence_are_escaped_in_the_markdown(bundled):
    text = "the *food* was [not](javascript:x) good"
    qs = questions(bundled, text, np.random.default_rng(0))
    assert qs
    for q in qs:
        for markdown in (q.text, q.explanation):
            assert re.search(r"(?<!\\)[\[\]<>]", markdown) is None, markdown  # no link, no tag: the words as typed
    assert quiz_module.markdown_escape("*a* [b](c) <i>") == r"\*a\* \[b\]\(c\) \<i\>"


def test_every_question_is_well_formed(quiz):
    for q in (q for qs in quiz.values() for q in qs):
        assert q.answer in q.options and len(set(q.options)) == len(q.options) >= 2
        page, query = q.view.url().split("?")
        assert q.explanation and page == q.view.page
        assert {k: v for k, (v,) in parse_qs(query).items()} == params(q)  # the address gives the values back


def test_a_model_that_pools_by_attention_has_its_pooling_heads_knocked_out_but_no_layer_questions_on_it(bundled):
    cfg = replace(bundled.model_config, pooling="attention")
    torch.manual_seed(0)
    model = AttentionClassifier(cfg)
    model.load_state_dict(bundled.model.state_dict(), strict=False)  # the bundled layers, a random pooling query
    run = replace(bundled, model=model.eval(), model_config=cfg)
    qs = questions(run, SENTENCES[0], np.random.default_rng(0))
    assert {q.kind for q in qs} >= {"attends_most", "knock_out", "remove_word"}
    assert all(int(params(q)["layer"]) <= cfg.n_layers for q in qs if q.kind == "attends_most")
    maps = cfg.n_attention_maps  # the layers, then the pooling query's heads
    for q in (q for q in qs if q.kind == "knock_out"):
        assert "(pooling.h: the pooling attention's heads)" in q.text
        plain = run.predict(SENTENCES[0])
        moved = {head_label(lay, h, cfg): abs(run.predict(SENTENCES[0], edit_attention=knock_out([(lay, h)], cfg))
                                              .probabilities[plain.label] - plain.probabilities[plain.label])
                 for lay in range(maps) for h in range(cfg.n_heads)}
        assert max(moved, key=moved.get) == q.answer


def test_an_unknown_kind_of_question_is_a_clear_error(bundled):
    with pytest.raises(ConfigError, match="unknown question kind.*choose from attends_most"):
        questions(bundled, SENTENCES[0], np.random.default_rng(0), kinds=["attends_most", "riddle"])


def test_the_modules_examples_run(monkeypatch):
    monkeypatch.chdir(ROOT)
    result = doctest.testmod(quiz_module, extraglobs={"load_run": load_run})
    assert result.failed == 0 and result.attempted == 3  # View.url's, and questions' on the bundled model


def test_the_untrained_pretrained_encoder_is_asked_about_its_attention_only_and_a_fine_tuned_one_about_its_words():
    """Its head is random: a question about its label, a knock-out's effect on it or a word that flips it would teach
    noise. (remove_word raised KeyError 'wordpiece' for a word-piece model.)"""
    from attention_core.pretrained import BUNDLED

    run = load_run(BUNDLED)
    asked = questions(run, "the food was not good at all", np.random.default_rng(0))
    assert asked and {q.kind for q in asked} <= {"attends_most", "most_spread"}
    fine_tuned = replace(run, history=replace(run.history, status="finished"))  # as if its head had been trained
    words = questions(fine_tuned, "the food was not good", np.random.default_rng(0), kinds=["remove_word"])
    assert {q.text.split("removing ")[1].split(" from")[0] for q in words} == {"*the*", "*food*", "*was*", "*not*", "*good*"}
