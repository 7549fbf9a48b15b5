"""Reading a sentence's words once (attention_core.encoding.look_up / read_sentence) for every reader of it."""

from __future__ import annotations

import pytest

from attention_core import encoding, load_embeddings
from attention_core.backprop import post_inputs
from attention_core.embeddings import EmbeddingSource
from attention_core.encoding import TextEncoder, look_up, read_sentence
from attention_core.errors import EmbeddingError
from attention_core.examples import sentence_vectors
from attention_core.text import tokenize, whitespace_tokenize


def test_look_up_marks_the_tokens_the_vectors_know(emb):
    words = look_up("The food wasn't xqzzy, at ALL!", emb.__contains__)
    assert list(words.tokens) == tokenize("The food wasn't xqzzy, at ALL!")
    assert words.unknown_tokens == ["xqzzy"] and words.known_tokens == [t for t in words.tokens if t != "xqzzy"]
    assert look_up("Very sad,  as", emb.__contains__, "whitespace").tokens == tuple(whitespace_tokenize("Very sad,  as"))


def test_every_reader_of_a_sentence_reads_its_words_through_look_up_once(emb, monkeypatch):
    calls = []
    real = encoding.look_up

    def spy(text, is_known, tokenizer="glove"):
        calls.append((text, tokenizer))
        return real(text, is_known, tokenizer)

    monkeypatch.setattr(encoding, "look_up", spy)
    text = "a great xqzzy movie"
    enc = TextEncoder.build(emb, ["a great movie"])  # the run's vocabulary is read the same way
    assert calls == [("a great movie", "glove")] and enc.words == ["a", "great", "movie"]
    calls.clear()
    enc.encode(text)
    enc.encode_for_model(text)
    sentence_vectors(text, emb)
    post_inputs(text, load_embeddings(EmbeddingSource(limit=10_000)))
    assert calls == [(text, "glove")] * 3 + [(text, "whitespace")]


def test_the_readers_agree_on_known_and_unknown_words(emb):
    text = "A great xqzzy movie , qqqzz fun"
    words = read_sentence(text, emb)
    enc = TextEncoder.build(emb, ["a great movie"], unknown="drop").encode(text)
    vec = sentence_vectors(text, emb)
    seed = post_inputs(text, emb)
    assert vec.known == words.known_tokens == list(enc.tokens) == ["a", "great", "movie", ",", "fun"]
    assert vec.unknown == words.unknown_tokens == list(enc.unknown) == ["xqzzy", "qqqzz"]
    assert enc.extra_words == (",", "fun")  # known to the vectors, not to the run: read through extra rows
    assert seed.tokens == ("a", "great", "movie", ",", "fun") and seed.unknown == ("xqzzy", "qqqzz")


def test_an_empty_or_unknown_sentence_gets_the_same_errors_everywhere(emb):
    vocab = emb.source.describe()
    enc = TextEncoder.build(emb, ["a great movie"])
    unknown = f"none of the words in 'xqzzy qqqzz' are in the vocabulary ({vocab}) — type an English sentence with common words"
    for read in (enc.encode_for_model, lambda t: post_inputs(t, emb), lambda t: read_sentence(t, emb)):
        with pytest.raises(EmbeddingError) as err:
            read("xqzzy qqqzz")
        assert str(err.value) == unknown
        with pytest.raises(EmbeddingError) as err:
            read("  ")
        assert str(err.value) == "the sentence is empty — type a sentence, e.g. 'the food was good'"
    with pytest.raises(EmbeddingError) as err:
        sentence_vectors("xqzzy qqqzz", emb, what="sentence A")
    assert str(err.value) == ("none of the words of sentence A has a GloVe vector ('xqzzy', 'qqqzz') — check the "
                              "spelling, or use more common English words")
    with pytest.raises(EmbeddingError, match=r"^sentence B is empty"):
        sentence_vectors(" ", emb, what="sentence B")
    long = "x" * 70
    with pytest.raises(EmbeddingError, match=f"none of the words in '{'x' * 57}…' are in"):
        enc.encode_for_model(long)


def test_a_model_that_reads_only_unknown_words_is_refused_whatever_comes_after(emb):
    """With <unk> kept, the model reads the first max_tokens tokens: all unknown there is an error; with
    unknown words dropped, a known word after them is read."""
    unk = TextEncoder.build(emb, ["good"], unknown="unk", max_tokens=2)
    with pytest.raises(EmbeddingError, match="none of the words"):
        unk.encode_for_model("xqzzy qqqzz good")
    drop = TextEncoder.build(emb, ["good"], unknown="drop", max_tokens=2)
    assert drop.encode_for_model("xqzzy qqqzz good")[0].tokens == ("good",)
    assert unk.encode_for_model("xqzzy good qqqzz")[0].tokens == ("<unk>", "good")


def test_a_run_word_the_vectors_no_longer_have_keeps_its_id(emb):
    """A run's own words read through their trained rows even where the word-vector file lacks them."""
    enc = TextEncoder(emb, ["good", "zzqxword"])
    got = enc.encode("good zzqxword xqzzy")
    assert got.ids == (2, 3, encoding.UNK) and got.unknown == ("xqzzy",)
