"""Tests for attention_core.data: reading, checking and splitting sentiment CSVs."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attention_core import data
from attention_core.data import (
    MAX_CLASSES,
    MIN_KNOWN_SHARE,
    WARN_KNOWN_SHARE,
    DatasetReport,
    TextDataset,
    dataset_from_lists,
    detect_columns,
    known_words,
    load_dataset,
    read_table,
)
from attention_core.errors import DataError
from attention_core.text import tokenize

DATA = Path(__file__).resolve().parents[2] / "data"
GOOD = b"text,label\nreally good film,pos\nawful plot,neg\nloved it,pos\nboring,neg\n"


def write(tmp_path: Path, content: bytes, name: str = "in.csv") -> Path:
    path = tmp_path / name
    path.write_bytes(content)
    return path


def many(n: int = 6) -> bytes:
    """A clean two-class CSV with n rows per class (no warnings)."""
    rows = [f"good movie number {i},pos\nbad movie number {i},neg\n" for i in range(n)]
    return ("text,label\n" + "".join(rows)).encode()


# --- the bundled files ------------------------------------------------------------------------


def test_small_csv() -> None:
    ds = load_dataset(DATA / "small.csv")
    r = ds.report
    assert (r.source, r.encoding, r.delimiter) == ("small.csv", "utf-8", ",")
    assert (r.text_column, r.label_column) == ("cleaned_review", "sentiments")
    assert r.text_column_reason == "named 'cleaned_review'"
    assert ds.label_names == ("negative", "neutral", "positive")
    assert len(ds) == r.rows_read == r.rows_kept == 39
    with open(DATA / "small.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert r.class_counts == {n: Counter(row["sentiments"] for row in rows)[n] for n in ds.label_names}
    assert ds.texts[0] == rows[0]["cleaned_review"].strip()
    assert [ds.label_names[y] for y in ds.labels] == [row["sentiments"] for row in rows]
    assert len(r.token_lengths) == 39 and all(n > 0 for n in r.token_lengths)
    assert r.dropped == {} and r.unknown_rate is None


def test_uci_csv() -> None:
    ds = load_dataset(str(DATA / "uci_sentiment_sentences.csv"))
    with open(DATA / "uci_sentiment_sentences.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert (ds.report.text_column, ds.report.label_column) == ("text", "label")
    assert ds.label_names == ("negative", "positive")
    assert ds.report.class_counts == dict(sorted(Counter(r["label"] for r in rows).items()))
    assert ds.report.class_counts == {"negative": 1500, "positive": 1500}
    assert ds.texts == tuple(r["text"].strip() for r in rows)
    dups = len(rows) - len({(r["text"].strip(), r["label"]) for r in rows})
    assert any(w.startswith(f"{dups} duplicate rows") for w in ds.report.warnings)


# --- encodings, delimiters, quoting -----------------------------------------------------------


def test_utf8_bom(tmp_path: Path) -> None:
    ds = load_dataset(write(tmp_path, b"\xef\xbb\xbf" + GOOD))
    assert ds.report.encoding == "utf-8-sig"
    assert ds.report.text_column == "text"  # the BOM is not part of the first column name
    assert not any("UTF-8" in w for w in ds.report.warnings)


def test_plain_utf8_with_accents_has_no_warning() -> None:
    ds = load_dataset("text,label\ncafé très bon,pos\nnul,neg\n".encode())
    assert ds.report.encoding == "utf-8" and ds.texts[0] == "café très bon"
    assert not any("UTF-8" in w for w in ds.report.warnings)


def test_cp1252_fallback_warns(tmp_path: Path) -> None:
    ds = load_dataset(write(tmp_path, b"text,label\ncaf\xe9 ok \x93quoted\x94,pos\nbad,neg\n"))
    assert ds.report.encoding == "cp1252"
    assert ds.texts[0] == "café ok \u201cquoted\u201d"
    warning = "file is not UTF-8; read as cp1252 — check accented characters in the preview"
    assert warning in ds.report.warnings


def test_latin1_fallback_when_not_cp1252() -> None:
    ds = load_dataset(b"text,label\nx\x81y \xe9,pos\nbad,neg\n")  # 0x81 is undefined in cp1252
    assert ds.report.encoding == "latin-1" and ds.texts[0] == "x\x81y é"
    assert any("read as latin-1" in w for w in ds.report.warnings)


@pytest.mark.parametrize("sep", [";", "\t"])
def test_semicolon_and_tab(tmp_path: Path, sep: str) -> None:
    content = f"review{sep}sentiment\nnot bad, really{sep}pos\nworse, much worse{sep}neg\n".encode()
    df, encoding, delimiter, warns = read_table(write(tmp_path, content))
    assert (delimiter, encoding, warns) == (sep, "utf-8", [])
    assert list(df.columns) == ["review", "sentiment"]
    assert df["review"].tolist() == ["not bad, really", "worse, much worse"]


def test_comma_file_whose_texts_are_full_of_semicolons() -> None:
    content = b"text,label\n" + b"a; b; c; d,pos\n" * 3 + b"e; f; g; h,neg\n" * 3
    df, _, delimiter, _ = read_table(content)
    assert delimiter == "," and df.shape == (6, 2)


def test_quoted_commas_newlines_and_quotes() -> None:
    content = b'text,label\n"good, very good",pos\n"line one\nline two",neg\n"she said ""meh""",neg\n'
    ds = load_dataset(content)
    assert ds.texts == ("good, very good", "line one\nline two", 'she said "meh"')
    assert [ds.label_names[y] for y in ds.labels] == ["pos", "neg", "neg"]


def test_file_like_upload() -> None:
    upload = io.BytesIO(GOOD)
    upload.name = "upload.csv"
    ds = load_dataset(upload)
    assert ds.report.source == "upload.csv" and len(ds) == 4


def test_na_and_none_texts_are_kept() -> None:
    ds = load_dataset(b"text,label\nNA,pos\nNone,neg\nnull,pos\n")
    assert ds.texts == ("NA", "None", "null") and ds.report.dropped == {}


# --- labels -----------------------------------------------------------------------------------


def test_numeric_labels_are_normalised_and_sorted_numerically() -> None:
    ds = load_dataset(b"text,label\na b,1.0\nc d,0\ne f, 1 \ng h,10\ni j,2\n")
    assert ds.label_names == ("0", "1", "2", "10")
    assert ds.labels == (1, 0, 1, 3, 2)
    assert ds.report.class_counts == {"0": 1, "1": 2, "2": 1, "10": 1}


def test_string_labels_sorted_alphabetically_and_stripped() -> None:
    ds = dataset_from_lists(["a", "b", "c"], [" positive", "neutral ", "negative"])
    assert ds.label_names == ("negative", "neutral", "positive")
    assert ds.labels == (2, 1, 0)


def test_int_labels_from_lists() -> None:
    ds = dataset_from_lists(["a", "b", "c"], [1, 0, 1])
    assert ds.label_names == ("0", "1") and ds.labels == (1, 0, 1)


# --- column detection -------------------------------------------------------------------------


def test_detect_by_name_case_insensitive_and_stripped() -> None:
    df = pd.DataFrame({"ID": ["1", "2"], " Review ": ["nice", "bad"], "Stars": ["5", "1"]})
    assert detect_columns(df) == (" Review ", "Stars", "named ' Review '", "named 'Stars'")


def test_detect_by_content() -> None:
    df = pd.DataFrame({"a": ["this film was great fun", "dull", "not my taste at all", "loved it"],
                       "b": ["x", "y", "y", "x"], "c": ["id1", "id2", "id3", "id4"]})
    text, label, text_reason, label_reason = detect_columns(df)
    assert (text, label) == ("a", "b")
    assert text_reason.startswith("longest text on average")
    assert label_reason == "fewest different values (2 in 4 rows)"


def test_detect_label_by_name_text_by_content() -> None:
    df = pd.DataFrame({"n": ["1", "2", "3"], "words": ["so very good", "so bad", "ok then"],
                       "label": ["p", "n", "p"]})
    assert detect_columns(df)[:2] == ("words", "label")


def test_a_column_of_words_naming_the_numeric_labels_one_for_one_is_the_label_column(tmp_path: Path) -> None:
    """``label_name`` (negative, positive) beside ``label`` (0, 1): the words are the labels, the numbers stay
    a choice; a column that does not map one for one, a given column or sentences leave the numbers."""
    content = (b"text,label,label_name,source\n"
               b"so good,1,positive,amazon\nso bad,0,negative,imdb\nfine then,1,positive,yelp\nawful,0,negative,imdb\n")
    ds = load_dataset(write(tmp_path, content))
    assert ds.report.label_column == "label_name" and ds.label_names == ("negative", "positive")
    assert ds.report.label_column_reason == "names the numbers of 'label' one for one (0 = negative, 1 = positive)"
    assert load_dataset(content, label_col="label").label_names == ("0", "1")  # a given column wins
    df = pd.DataFrame({"text": ["so good", "so bad", "fine", "awful"], "label": ["1", "0", "1", "0"],
                       "label_name": ["positive", "negative", "positive", "bad"]})  # 0 is two words
    assert detect_columns(df)[1] == "label"
    df = pd.DataFrame({"label": ["1", "0", "2"], "note": ["what a good film", "a bad one, sadly", "it was fine ok"],
                       "text": ["good film indeed so", "bad film it was", "ok film i guess"]})  # sentences, not names
    assert detect_columns(df)[1] == "label"


def test_overrides(tmp_path: Path) -> None:
    content = (b"text,label,notes,mood\n"
               b"id1,pos,great stuff here,happy\nid2,neg,awful,sad\nid3,pos,fine,happy\n")
    ds = load_dataset(write(tmp_path, content), text_col="notes", label_col="mood")
    assert (ds.report.text_column, ds.report.label_column) == ("notes", "mood")
    assert ds.report.text_column_reason == "given as text column"
    assert ds.texts == ("great stuff here", "awful", "fine") and ds.label_names == ("happy", "sad")
    assert load_dataset(content, text_col="NOTES", label_col="Mood").report.text_column == "notes"


def test_wrong_override_lists_columns() -> None:
    with pytest.raises(DataError, match=r"no label column 'stars'.*available columns: 'text', 'label'"):
        load_dataset(GOOD, label_col="stars")
    with pytest.raises(DataError, match=r"no text column 'body'"):
        load_dataset(GOOD, text_col="body")


def test_same_column_twice() -> None:
    with pytest.raises(DataError, match="both 'text'"):
        load_dataset(GOOD, text_col="text", label_col="text")


# --- errors -----------------------------------------------------------------------------------


def test_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="file not found: .*nope.csv"):
        load_dataset(tmp_path / "nope.csv")
    with pytest.raises(DataError, match="is a folder"):
        load_dataset(tmp_path)


@pytest.mark.parametrize("content", [b"", b"  \n\n \t\n", b"\xef\xbb\xbf"])
def test_empty_file(tmp_path: Path, content: bytes) -> None:
    with pytest.raises(DataError, match=r"'in.csv' is empty — choose a CSV file"):
        load_dataset(write(tmp_path, content))


def test_header_only() -> None:
    with pytest.raises(DataError, match="header line but no data rows"):
        load_dataset(b"text,label\n\n")


@pytest.mark.parametrize(("content", "kind"), [
    (b"PK\x03\x04\x14\x00rest", "zip"), (b"\x1f\x8b\x08\x00", "gzip"),
    (b"\x89PNG\r\n\x1a\n", "PNG"), (b"%PDF-1.7\n", "PDF"), (b"text,label\nab\x00cd,1\n", "NUL bytes"),
])
def test_binary_files(content: bytes, kind: str) -> None:
    with pytest.raises(DataError, match=rf"binary file \({kind}.*export it as CSV"):
        load_dataset(content)


def test_utf16_file() -> None:
    with pytest.raises(DataError, match="UTF-16.*CSV UTF-8"):
        load_dataset(GOOD.decode().encode("utf-16"))


def test_file_too_large(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    with open(path, "wb") as f:  # a sparse file: its size is checked before it is read
        f.truncate(int(31.2 * 1024 * 1024))
    with pytest.raises(DataError, match=r"'big.csv' is 31.2 MB; live training takes at most 25 MB — use a"):
        load_dataset(path)


def test_bytes_too_large(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(data, "MAX_FILE_BYTES", 20)
    with pytest.raises(DataError, match="live training takes at most"):
        load_dataset(GOOD)


def test_too_many_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(data, "MAX_ROWS", 3)
    with pytest.raises(DataError, match="more than 3 rows; live training takes at most 3"):
        load_dataset(GOOD)
    assert len(load_dataset(GOOD.rsplit(b"\n", 2)[0] + b"\n")) == 3


def test_only_one_column() -> None:
    with pytest.raises(DataError, match="found only 'x' — is the delimiter right"):
        load_dataset(b"x\nhello, world\nfoo\n")
    with pytest.raises(DataError, match=r"found only 'text\|label'"):
        load_dataset(b"text|label\nhello|pos\nbye|neg\n")


def test_no_usable_text_column() -> None:
    with pytest.raises(DataError, match=r"no usable text column: column 'a' holds numbers.*--text-col"):
        load_dataset(b"a,b\n1.5,0\n2,1\n3,0\n")
    with pytest.raises(DataError, match=r"no usable text column: columns 'a', 'c' hold"):
        load_dataset(b"a,b,c\n1,x,2\n2,y,3\n3,x,4\n")


def test_only_one_label_after_dropping() -> None:
    with pytest.raises(DataError, match=r"found only one label 'positive' in column 'label' \(2 rows\)"):
        load_dataset(b"text,label\ngreat,positive\nawesome,positive\n,negative\n")


def test_too_many_labels() -> None:
    rows = "".join(f"sentence number {i},{'pos' if i % 2 else 'neg'},{i}\n" for i in range(200))
    content = ("text,label,label_id\n" + rows).encode()
    with pytest.raises(DataError, match=r"found 200 different labels in column 'text'.*"
                                        r"is that the text column\? pass --label-col"):
        load_dataset(content, label_col="text")
    with pytest.raises(DataError, match=rf"200 different labels in column 'label_id'; .* {MAX_CLASSES}"):
        load_dataset(content, label_col="label_id")
    assert len(load_dataset(content).label_names) == 2


def test_no_rows_left() -> None:
    with pytest.raises(DataError, match=r"all 3 rows were dropped \(2 empty text, 1 missing label\)"):
        load_dataset(b"text,label\n,pos\n  ,neg\nsomething,\n")
    with pytest.raises(DataError, match="no rows"):
        dataset_from_lists([], [])


def test_parse_errors_give_line_numbers() -> None:
    with pytest.raises(DataError, match=r"cannot parse .*: line 3 has 3 fields but the header has 2 — "):
        load_dataset(b"text,label\ngood,pos\nbad, really,neg\n")
    with pytest.raises(DataError, match=r"quote opened in record 3 .* never closed"):
        load_dataset(b'text,label\n"a,b\nc",x\n"unterminated,y\nmore,z\n')


def test_lists_of_different_lengths() -> None:
    with pytest.raises(DataError, match="2 texts but 1 labels"):
        dataset_from_lists(["a", "b"], ["x"])


# --- report -----------------------------------------------------------------------------------


def test_dropped_rows_and_reasons() -> None:
    content = many() + b",pos\n   ,neg\nno label here,\nboth missing would be empty text, \n,\n"
    ds = load_dataset(content)
    assert ds.report.rows_read == 17 and ds.report.rows_kept == 12 == len(ds)
    assert ds.report.dropped == {"empty text": 3, "missing label": 2}


def test_warnings_few_imbalanced_duplicates() -> None:
    texts = [f"good {i}" for i in range(30)] + ["bad one", "bad one", "bad two", "good 0"]
    labels = ["pos"] * 30 + ["neg"] * 4
    warns = " | ".join(dataset_from_lists(texts, labels).report.warnings)
    assert "few rows in 1 class: 'neg' (4)" in warns
    assert "imbalanced: 'pos' has 30 rows, 'neg' only 4 (7.5x); consider class weights" in warns
    assert "1 duplicate rows" in warns
    assert "1 texts appear with different labels" in warns
    clean = dataset_from_lists([f"t{i}" for i in range(20)], ["a", "b"] * 10)
    assert clean.report.warnings == ()


def test_unknown_rate_and_token_lengths() -> None:
    vocab = {"good", "movie", "bad"}
    ds = load_dataset(b"text,label\nGood movie!,pos\nbad zzz,neg\n", is_known=vocab.__contains__)
    assert ds.report.token_lengths == (3, 2)
    assert ds.report.unknown_rate == pytest.approx(2 / 5)  # "!" and "zzz"
    ds = load_dataset(b"text,label\na b,pos\nc,neg\n", tokenize=str.split, is_known=lambda w: True)
    assert ds.report.token_lengths == (2, 1) and ds.report.unknown_rate == 0.0


def test_report_to_dict_and_summary() -> None:
    ds = load_dataset(many() + b",pos\n", name="mine.csv", is_known=lambda w: w != "movie")
    d = json.loads(json.dumps(ds.report.to_dict()))
    assert d["source"] == "mine.csv" and d["dropped"] == {"empty text": 1}
    assert d["class_counts"] == {"neg": 6, "pos": 6} and len(d["token_lengths"]) == 12
    assert DatasetReport(**{**d, "warnings": tuple(d["warnings"]),
                            "token_lengths": tuple(d["token_lengths"])}) == ds.report
    summary = ds.report.summary()
    assert "mine.csv: 13 rows read, 12 kept (utf-8, comma-separated)" in summary
    assert "classes: neg 6, pos 6" in summary and "dropped: 1 empty text" in summary
    assert "unknown words: 25.0% of tokens" in summary


# --- text the word vectors cannot read -----------------------------------------------------------

VOCAB = {"the", "food", "was", "good", "bad", "really", "service", "great", "awful", "movie", "phone",
         ",", ".", "!", "。", "12345"}
KNOWN_WARNING = "the word vectors know only"
ROWS_WARNING = "have no word that the word vectors know"


def test_known_words_counts_letters_so_numbers_punctuation_and_skipped_scripts_do_not_pass() -> None:
    texts = ["the food was good!", "12345 !!", "服务很慢，食物也是冷的。", "good 服务"]
    k = known_words(texts, VOCAB.__contains__)
    # Letters: 14 (all known), 0, 10 (the GloVe tokenizer keeps only "," and "。"), 4 of 6 known.
    assert k.share == pytest.approx(18 / 30)
    assert k.rows_without == (1, 2)
    assert known_words(["12345", "!"], VOCAB.__contains__).share == 0.0  # no letters at all: nothing to read
    # Tokens alone would call the Chinese row readable: every token it has is known.
    assert all(t in VOCAB for t in tokenize(texts[2]))


def reviews_with_ids() -> bytes:
    rows = [("SKU-48213-XL", "the food was really good", "pos"), ("SKU-50132-M", "awful service", "neg"),
            ("SKU-61077-S", "great phone", "pos"), ("SKU-70101-L", "bad movie", "neg")] * 3
    return ("id,review,label\n" + "".join(f"{i}-{n},{t} {'!' * n},{y}\n" for n, (i, t, y) in enumerate(rows))).encode()


def test_a_wrong_column_is_refused_naming_it_and_two_of_its_values(tmp_path: Path) -> None:
    path = write(tmp_path, reviews_with_ids(), "shop.csv")
    with pytest.raises(DataError) as err:
        load_dataset(path, text_col="id", is_known=VOCAB.__contains__)
    message = str(err.value)
    assert message.startswith("column 'id' holds almost no words that the word vectors know (0.0% of its text; "
                              "its values are like 'SKU-48213-XL-0', 'SKU-50132-M-1')")
    assert message.endswith("— choose the column that holds the sentences, or for text in another language use word "
                            "vectors for that language (command line: --text-col, --embeddings FILE)")
    ds = load_dataset(path, is_known=VOCAB.__contains__)  # the detected column: the reviews, read in full
    assert ds.report.text_column == "review" and ds.report.known_share == 1.0
    assert ds.report.warnings == ()
    assert load_dataset(path, text_col="id").report.known_share is None  # without word vectors: no check


def test_text_in_another_script_is_refused() -> None:
    rows = ["服务很慢，食物也是冷的。", "我很喜欢这部手机。", "产品到的时候坏了。", "性价比很高，推荐购买。"] * 2
    with pytest.raises(DataError, match=r"column 'text' holds almost no words .* \(0\.0% of its text; its values "
                                        r"are like '服务很慢，食物也是冷的。', '我很喜欢这部手机。'\)"):
        dataset_from_lists(rows, ["pos", "neg"] * 4, is_known=VOCAB.__contains__)


def rows_with_share(known: int, unknown: int, n: int = 10) -> list[str]:
    """n different rows, each ``known`` letters of a known word and ``unknown`` letters of an unknown one."""
    return ["k" * known + " " + c * unknown for c in "bcdefghijlmnopqrstuvwxyz"[:n]]


def is_k(word: str) -> bool:
    return word.startswith("k")


@pytest.mark.parametrize(("known", "refused", "warned"), [
    (5, True, None), (6, False, True), (69, False, True), (70, False, False), (100, False, False)])
def test_thresholds_refuse_at_most_five_percent_known_and_warn_below_seventy(known, refused, warned) -> None:
    assert (MIN_KNOWN_SHARE, WARN_KNOWN_SHARE) == (0.05, 0.70)
    texts, labels = rows_with_share(known, 100 - known), ["pos", "neg"] * 5
    if refused:
        with pytest.raises(DataError, match=rf"almost no words .* \({known}\.0% of its text"):
            dataset_from_lists(texts, labels, is_known=is_k)
        return
    report = dataset_from_lists(texts, labels, is_known=is_k).report
    assert report.known_share == pytest.approx(known / 100)
    found = [w for w in report.warnings if KNOWN_WARNING in w]
    assert len(found) == warned
    if warned:
        assert found[0].startswith(f"the word vectors know only {known}% of the text in column 'text' (values like "
                                   f"'{texts[0][:39]}…', '{texts[1][:39]}…'): the model cannot read the rest; is this "
                                   "the text column, and is the text in the word vectors' language?")
    assert f"warning: {KNOWN_WARNING} {known}%" in report.summary() if warned else KNOWN_WARNING not in report.summary()


def test_many_rows_with_no_known_word_are_a_warning() -> None:
    texts = [f"good food {i}" for i in range(18)] + ["服务很慢", "zzzz qqqq"]  # 2 of 20 rows: 10%
    report = dataset_from_lists(texts, ["pos", "neg"] * 10, is_known=VOCAB.__contains__).report
    assert report.known_share > WARN_KNOWN_SHARE
    assert [w for w in report.warnings if ROWS_WARNING in w] == [
        "2 rows (10%) have no word that the word vectors know, e.g. '服务很慢', 'zzzz qqqq'; they teach the model nothing"]
    one = dataset_from_lists(texts[:18] + ["good", "zzzz qqqq"], ["pos", "neg"] * 10, is_known=VOCAB.__contains__)
    assert not any(ROWS_WARNING in w for w in one.report.warnings)  # 1 of 20 (5%): not more than 5%


def test_a_normal_csv_passes_silently_and_says_how_much_is_known() -> None:
    ds = load_dataset(many(), is_known={"good", "bad", "movie", "number"}.__contains__)
    assert ds.report.warnings == () and ds.report.known_share == 1.0  # the numbers are no words, known or not
    assert "unknown words: 25.0% of tokens (100.0% of the text's letters are in known words)" in ds.report.summary()


# --- split / subset ---------------------------------------------------------------------------


def test_split_stratified_and_deterministic() -> None:
    ds = load_dataset(DATA / "small.csv")
    train, val = ds.split(0.2, seed=0)
    again_train, again_val = ds.split(0.2, seed=0)
    assert (train.texts, val.texts) == (again_train.texts, again_val.texts)
    assert {ds.split(0.2, seed=s)[1].texts for s in range(5)} != {val.texts}
    assert len(train) + len(val) == len(ds)
    counts = Counter(ds.labels)
    for c, n in counts.items():
        assert Counter(val.labels)[c] == max(1, round(0.2 * n))
    # no overlap, union is everything (small.csv has no duplicate texts)
    assert not set(train.texts) & set(val.texts) and set(train.texts) | set(val.texts) == set(ds.texts)
    assert train.label_names == val.label_names == ds.label_names and val.report is ds.report


def test_split_every_class_with_two_rows_gets_a_val_row() -> None:
    ds = dataset_from_lists([f"t{i}" for i in range(23)], ["a"] * 20 + ["b", "b", "c"])
    train, val = ds.split(0.05, seed=3)
    assert sorted(ds.label_names[y] for y in val.labels) == ["a", "b"]
    assert Counter(train.labels) == {0: 19, 1: 1, 2: 1}
    train, val = ds.split(0.9, seed=3)
    assert Counter(train.labels) == {0: 2, 1: 1, 2: 1}


def test_split_zero_and_bad_fractions() -> None:
    ds = dataset_from_lists(["a", "b", "c", "d"], ["x", "y", "x", "y"])
    train, val = ds.split(0, seed=1)
    assert train is ds and len(val) == 0 and val.label_names == ds.label_names
    for bad in (-0.1, 0.95, 1, float("nan"), True):
        with pytest.raises(DataError, match=rf"val_fraction must be between 0 and 0.9, got {bad!r}"):
            ds.split(bad, seed=0)


def test_subset() -> None:
    ds = dataset_from_lists(["a", "b", "c"], ["x", "y", "x"])
    sub = ds.subset([2, 1])
    assert isinstance(sub, TextDataset) and sub.texts == ("c", "b") and sub.labels == (0, 1)
    with pytest.raises(IndexError, match="index 3 out of range"):
        ds.subset([3])


def test_dataset_checks_its_fields() -> None:
    report = dataset_from_lists(["a", "b"], ["x", "y"]).report
    with pytest.raises(ValueError, match="label index 2 out of range"):
        TextDataset(("a",), (2,), ("x", "y"), report)


# --- property: a CSV written by pandas reads back unchanged --------------------------------------

_chars = st.one_of(st.characters(categories=["L", "N", "P", "Zs"]), st.sampled_from(',;\t"\n\''))
_LABELS = st.sampled_from(["pos", "neg", "Mixed", "ok"])
_texts = st.text(alphabet=_chars, min_size=1, max_size=40).filter(lambda t: t.strip() != "")


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(_texts, _LABELS), min_size=1, max_size=9),
       sep=st.sampled_from([",", ";", "\t"]), bom=st.booleans())
def test_roundtrip_through_pandas_csv(rows: list[tuple[str, str]], sep: str, bom: bool) -> None:
    rows = rows + [("extra", "neg" if rows[0][1] != "neg" else "pos")]  # at least two labels
    texts, labels = zip(*rows, strict=True)
    csv_text = pd.DataFrame({"text": texts, "label": labels}).to_csv(index=False, sep=sep)
    ds = load_dataset(csv_text.encode("utf-8-sig" if bom else "utf-8"))
    assert ds.report.delimiter == sep and ds.report.encoding == ("utf-8-sig" if bom else "utf-8")
    assert ds.texts == tuple(t.strip() for t in texts)
    assert tuple(ds.label_names[y] for y in ds.labels) == labels
    assert ds.label_names == tuple(sorted(set(labels)))


def test_a_dataset_is_tokenized_once_for_its_report_and_its_known_words_check() -> None:
    """Every kept row goes through the tokenizer once (the known-words check tokenized them again), and the
    report is what tokenizing twice gave: the same lengths, unknown rate and known share."""
    from attention_core import load_embeddings

    emb = load_embeddings()
    texts = ["a great movie", "xqzzy qqqzz", "", "i hated it , sadly", "wonderful fun"] * 3
    labels = ["pos", "neg", "neg", "neg", "pos"] * 3
    calls: list[str] = []

    def counting(text: str) -> list[str]:
        calls.append(text)
        return tokenize(text)

    ds = dataset_from_lists(texts, labels, is_known=emb.__contains__, tokenize=counting)
    assert Counter(calls) == Counter(ds.texts)  # once per kept row (the empty rows are dropped before)
    kept = list(ds.texts)
    known = data.known_words(kept, emb.__contains__)
    n_tokens = sum(len(tokenize(t)) for t in kept)
    assert ds.report.known_share == known.share
    assert ds.report.unknown_rate == sum(w not in emb for t in kept for w in tokenize(t)) / n_tokens
    assert ds.report.token_lengths == tuple(len(tokenize(t)) for t in kept)
    assert data.known_words(kept, emb.__contains__, tokens=[tokenize(t) for t in kept]) == known
