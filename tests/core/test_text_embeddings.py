"""Tokenizer, word vectors (GloVe and a user's own file), encoder, and the import rule."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from attention_core import EmbeddingSource, TextEncoder, load_embeddings, tokenize
from attention_core.data import known_words
from attention_core.errors import EmbeddingError
from attention_core.text import whitespace_tokenize

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("The food wasn't good... at ALL!", ["the", "food", "was", "n't", "good", "...", "at", "all", "!"]),
        ("I can't, it's 3.5 stars", ["i", "ca", "n't", ",", "it", "'s", "3.5", "stars"]),
        ("we’re happy—really", ["we", "'re", "happy", "-", "-", "really"]),
        ("minutes.MAJOR PROBLEMS!!", ["minutes", ".", "major", "problems", "!", "!"]),
        ("a well-made case", ["a", "well-made", "case"]),
    ],
)
def test_tokenizer_splits_like_glove(text, tokens):
    assert tokenize(text) == tokens


def test_glove_knows_the_tokenizers_pieces():
    emb = load_embeddings()
    for tok in ["n't", "'s", "'re", "ca", "wo", "...", "!", "3.5", "well-made"]:
        assert tok in emb, tok


def test_whitespace_tokenizer_is_the_seeds():
    assert whitespace_tokenize("i love  this Speaker ") == ["i", "love", "this", "speaker"]


def test_glove_loads_400k_words_and_limit_keeps_most_frequent():
    full = load_embeddings()
    assert full.size == 400_000 and full.dim == 50
    top = load_embeddings(EmbeddingSource(limit=10_000))
    assert top.size == 10_000 and "the" in top and "fantastic" in top
    rare = full.kv.index_to_key[200_000]
    assert rare in full and rare not in top
    assert load_embeddings() is full  # loaded once, shared


def test_users_own_vector_files(tmp_path):
    words = ["good", "bad", "movie"]
    vecs = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    glove = tmp_path / "vectors.txt"
    glove.write_text("".join(f"{w} {' '.join(map(str, v))}\n" for w, v in zip(words, vecs, strict=True)))
    w2v = tmp_path / "vectors.w2v.txt"
    w2v.write_text("3 4\n" + glove.read_text())
    from gensim.models import KeyedVectors

    kv = KeyedVectors(4)
    kv.add_vectors(words, vecs)
    binary = tmp_path / "vectors.bin"
    kv.save_word2vec_format(str(binary), binary=True)
    for path in (glove, w2v, binary):
        emb = load_embeddings(EmbeddingSource("file", str(path)))
        assert emb.dim == 4 and emb.size == 3
        np.testing.assert_allclose(emb.vector("bad"), vecs[1], rtol=1e-6)
    limited = load_embeddings(EmbeddingSource("file", str(glove), limit=2))
    assert "movie" not in limited and "bad" in limited


def test_bad_vector_files_are_clear_errors(tmp_path):
    with pytest.raises(EmbeddingError, match="not found"):
        load_embeddings(EmbeddingSource("file", str(tmp_path / "missing.txt")))
    bad = tmp_path / "bad.txt"
    bad.write_text("hello world\nthis is not vectors\n")
    with pytest.raises(EmbeddingError, match="line 1 of bad.txt is not a word followed by its numbers"):
        load_embeddings(EmbeddingSource("file", str(bad)))
    with pytest.raises(EmbeddingError, match="limit"):
        EmbeddingSource(limit=0)


def test_encoder_unknown_modes_and_truncation():
    emb = load_embeddings()
    drop = TextEncoder.build(emb, ["good movie"], unknown="drop", max_tokens=3)
    e = drop.encode("a good xqzzy movie night out")
    assert e.tokens == ("a", "good", "movie") and e.unknown == ("xqzzy",) and e.truncated == 2
    assert any("truncated" in n for n in e.notes) and any("dropped" in n for n in e.notes)
    unk = TextEncoder.build(emb, ["good movie"], unknown="unk")
    assert unk.encode("good xqzzy").tokens == ("good", "<unk>")
    assert unk.encode("good xqzzy").ids[1] == 1
    with pytest.raises(EmbeddingError, match="none of the words"):
        unk.encode_for_model("xqzzy qqqzz")


@pytest.mark.parametrize("text", ["", "   ", "\t\n "])
def test_an_empty_sentence_is_called_empty(text):
    enc = TextEncoder.build(load_embeddings(), ["good movie"])
    with pytest.raises(EmbeddingError) as err:
        enc.encode_for_model(text)
    assert str(err.value) == "the sentence is empty — type a sentence, e.g. 'the food was good'"


FRENCH = ["Le service était très lent et la nourriture froide.", "J'adore ce téléphone, la batterie tient toute la "
          "journée.", "Le produit est arrivé cassé, je suis vraiment déçu.", "Très bon rapport qualité-prix, je le "
          "recommande.", "Le film était ennuyeux du début à la fin.", "Une expérience formidable, nous reviendrons."]
CHINESE = ["服务很慢，食物也是冷的。", "我很喜欢这部手机，电池能用一整天。", "产品到的时候坏了，我非常失望。", "性价比很高，推荐购买。"]
RUSSIAN = ["Еда была холодной, а обслуживание медленным.", "Я люблю этот телефон, батарея держит весь день."]
IDS = [str(104_729 * i % 999_983 + 100_000) for i in range(1, 21)]
ENGLISH = ["So there is no way for me to plug it in here in the US unless I go by a converter.",
           "Good case, Excellent value.", "The food wasn't good... at ALL!", "Great for the jawbone."]


@pytest.mark.parametrize(("texts", "low", "high"), [
    (ENGLISH, 0.95, 1.0),  # real English: 98-100 % for every column measured
    (FRENCH, 0.05, 0.70),  # European languages: in GloVe's Wikipedia in part, a warning
    (CHINESE, 0.0, 0.0), (RUSSIAN, 0.0, 0.0), (IDS, 0.0, 0.0),  # nothing to read: refused
])
def test_how_much_glove_knows_of_english_another_language_and_ids(texts, low, high):
    assert low <= known_words(texts, load_embeddings().__contains__).share <= high


def test_known_tokens_would_not_tell_chinese_or_russian_apart():
    # The GloVe tokenizer keeps only the punctuation of Chinese or Russian, and GloVe knows it.
    tokens = [t for text in CHINESE + RUSSIAN for t in tokenize(text)]
    assert tokens and all(t in load_embeddings() for t in tokens)


def test_core_never_imports_streamlit():
    code = "import sys, attention_core, attention_core.cli, attention_core.backprop; print('streamlit' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    for path in (ROOT / "attention_core").rglob("*.py"):
        assert "import streamlit" not in path.read_text(), path


def test_glove_lookups_do_not_wait_for_gensim_but_kv_is_real_keyed_vectors():
    code = (
        "import sys, numpy as np\n"
        "from attention_core import load_embeddings\n"
        "e = load_embeddings(); v = e.vector('red')\n"
        "print('gensim' in sys.modules)\n"
        "from gensim.models import KeyedVectors\n"
        "print(isinstance(e.kv, KeyedVectors), np.array_equal(e.kv['red'], v), len(e.kv))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True", "True", "400000"]


def test_a_text_vectors_file_with_a_short_row_is_refused_with_its_line(tmp_path):
    # gensim alone would read "cat 0.3" as [0.3, 0.3].
    for name, text, line in [("glove.txt", "the 0.1 0.2\ncat 0.3\n", 2), ("w2v.txt", "2 2\nthe 0.1 0.2\ncat 0.3 0.1 0.9\n", 3)]:
        (tmp_path / name).write_text(text)
        with pytest.raises(EmbeddingError, match=f"line {line} of {name} has"):
            load_embeddings(EmbeddingSource("file", str(tmp_path / name)))


def test_a_vectors_file_is_read_once_whatever_the_vocabulary_limit(tmp_path):
    path = tmp_path / "v.txt"
    path.write_text("the 0.1 0.2\ncat 0.3 0.4\ndog 0.5 0.6\n")
    full = load_embeddings(EmbeddingSource("file", str(path)))
    top2 = load_embeddings(EmbeddingSource("file", str(path), limit=2))
    assert (full.size, top2.size) == (3, 2) and "dog" in full and "dog" not in top2
    assert top2._vectors is full._vectors  # one table in memory: the limit is a view of it


def test_a_parsed_vectors_file_is_kept_and_parsed_again_only_when_the_file_changes(tmp_path, monkeypatch):
    from attention_core import embeddings as E

    monkeypatch.setenv("ATTENTION_PLAYGROUND_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "v.txt"
    path.write_text("the 0.1 0.2\ncat 0.3 0.4\n")
    parsed = []
    real = E._read_vectors_file
    monkeypatch.setattr(E, "_read_vectors_file", lambda *a: parsed.append(a) or real(*a))

    def load() -> E.Embeddings:  # as a new process would: nothing in memory
        E._file_arrays.cache_clear()
        E._load_cached.cache_clear()
        return load_embeddings(EmbeddingSource("file", str(path)))

    first, again = load(), load()
    assert len(parsed) == 1  # the second load came from the cache
    assert isinstance(again._vectors, np.memmap) and again.vector("cat").tolist() == pytest.approx([0.3, 0.4])
    assert first._words == again._words == ["the", "cat"]
    path.write_text("the 0.5 0.6\ncat 0.7 0.8\ndog 0.9 1.0\n")  # the file changed
    changed = load()
    assert len(parsed) == 2 and changed.size == 3 and changed.vector("the").tolist() == pytest.approx([0.5, 0.6])


def test_a_cased_vectors_file_is_read_in_lower_case_where_it_lacks_the_word(tmp_path):
    path = tmp_path / "cased.txt"  # as word2vec's Google News vectors: cased, most frequent first
    path.write_text("Good 0.1 0.2\ngood 0.3 0.4\nMovie 0.5 0.6\nBAD 0.7 0.8\nBad 0.9 1.0\n")
    emb = load_embeddings(EmbeddingSource("file", str(path)))
    assert emb.vector("good").tolist() == pytest.approx([0.3, 0.4])  # its own lower-case row
    assert emb.vector("movie").tolist() == pytest.approx([0.5, 0.6])  # the cased row stands in
    assert emb.vector("bad").tolist() == pytest.approx([0.7, 0.8])  # the first casing in the file
    assert emb.vector("Good").tolist() == pytest.approx([0.1, 0.2]) and emb.size == 5
    top3 = load_embeddings(EmbeddingSource("file", str(path), limit=3))
    assert "movie" in top3 and "bad" not in top3  # the limit counts the file's rows
