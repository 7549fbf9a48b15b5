"""Read a user's sentiment CSV for live training, and say what was read.

:func:`load_dataset` reads a CSV (comma-, semicolon- or tab-separated; UTF-8, cp1252 or
latin-1), finds the text and label columns, drops unusable rows and returns a
:class:`TextDataset` whose :class:`DatasetReport` records every decision (encoding,
delimiter, why each column was chosen, dropped rows, warnings). Every problem a user can
cause is a :class:`~attention_core.errors.DataError` saying what is wrong and how to fix it.

Example:
    >>> ds = load_dataset(b"review,stars\\ngreat phone,5\\nawful,1\\nfine,3\\n", name="r.csv")
    >>> ds.label_names, ds.labels, ds.report.text_column_reason
    (('1', '3', '5'), (2, 0, 1), "named 'review'")
"""

from __future__ import annotations

import csv
import io
import math
import os
import random
import re
import warnings as _warnings
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, BinaryIO

import pandas as pd

from .errors import DataError
from .text import normalize
from .text import tokenize as _glove_tokenize

MAX_FILE_BYTES: int = 25 * 1024 * 1024
MAX_ROWS: int = 100_000
MAX_CLASSES: int = 100

_MB = 1024 * 1024
_DELIMITERS = ",;\t"
_DELIMITER_NAMES = {",": "comma", ";": "semicolon", "\t": "tab"}
TEXT_NAMES = ("text", "review", "reviews", "sentence", "content", "comment", "body", "message", "tweet",
              "cleaned_review", "review_text", "document", "utterance")
LABEL_NAMES = ("label", "labels", "sentiment", "sentiments", "class", "category", "target", "polarity",
               "rating", "stars", "y")
_MAGIC = ((b"PK\x03\x04", "zip; an .xlsx workbook is a zip file"), (b"\x1f\x8b", "gzip"),
          (b"\x89PNG", "PNG image"), (b"%PDF", "PDF"), (b"\xd0\xcf\x11\xe0", "old Excel .xls"),
          (b"\xff\xd8\xff", "JPEG image"), (b"GIF8", "GIF image"), (b"PAR1", "Parquet"))
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
Source = str | os.PathLike[str] | bytes | BinaryIO  # a path, the file's bytes, or an upload
_LABEL_HINT = "pass --label-col (label_col=...) to choose the column that holds the labels"

# Thresholds on known_words().share, between what the word vectors cannot read (numbers, IDs, dates, other scripts),
# other languages in Latin letters, and real English (the shares behind them: benchmarks/README.md).
MIN_KNOWN_SHARE = 0.05  # at most this known: refused (such a column trains to chance)
WARN_KNOWN_SHARE = 0.70  # below this: a warning (the model learns well short of what the same text fully known gives)
WARN_ROWS_WITHOUT_KNOWN = 0.05  # more rows than this with no known word: a warning (real text columns have far fewer)


@dataclass(frozen=True)
class DatasetReport:
    """What was read and every decision taken on the way (shown by the app, saved with a run)."""

    source: str
    encoding: str
    delimiter: str
    text_column: str
    label_column: str
    text_column_reason: str
    label_column_reason: str
    rows_read: int
    rows_kept: int
    dropped: dict[str, int]
    class_counts: dict[str, int]
    warnings: tuple[str, ...]
    unknown_rate: float | None
    token_lengths: tuple[int, ...]
    known_share: float | None = None  # share of the text's letters in words the vectors know (see known_words)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict (tuples become lists)."""
        d = asdict(self)
        d["warnings"], d["token_lengths"] = list(self.warnings), list(self.token_lengths)
        return d

    def summary(self) -> str:
        """A few human-readable lines.

        Example:
            >>> print(dataset_from_lists(["good", "bad", ""], ["p", "n", "p"]).report.summary())
            <memory>: 3 rows read, 2 kept
            text column 'text' (given as a list); label column 'label' (given as a list)
            classes: n 1, p 1
            dropped: 1 empty text
            warning: few rows in 2 classes: 'n' (1), 'p' (1); classes with fewer than 5 rows are hard to learn
        """
        how = f" ({self.encoding}, {_DELIMITER_NAMES.get(self.delimiter, self.delimiter)}-separated)"
        lines = [f"{self.source}: {self.rows_read:,} rows read, {self.rows_kept:,} kept"
                 + (how if self.delimiter else ""),
                 f"text column {self.text_column!r} ({self.text_column_reason}); "
                 f"label column {self.label_column!r} ({self.label_column_reason})",
                 "classes: " + ", ".join(f"{k} {v:,}" for k, v in self.class_counts.items())]
        if self.dropped:
            lines.append("dropped: " + ", ".join(f"{v:,} {k}" for k, v in self.dropped.items()))
        if self.unknown_rate is not None:
            known = f" ({self.known_share:.1%} of the text's letters are in known words)" \
                if self.known_share is not None else ""
            lines.append(f"unknown words: {self.unknown_rate:.1%} of tokens{known}")
        return "\n".join(lines + [f"warning: {w}" for w in self.warnings])


@dataclass(frozen=True)
class TextDataset:
    """Texts with integer labels (indices into ``label_names``) and the report of how they were read.

    Subsets made by :meth:`split` and :meth:`subset` keep the ``report`` of the whole file.
    """

    texts: tuple[str, ...]
    labels: tuple[int, ...]
    label_names: tuple[str, ...]
    report: DatasetReport

    def __post_init__(self) -> None:
        if len(self.texts) != len(self.labels):
            raise ValueError(f"{len(self.texts)} texts but {len(self.labels)} labels")
        bad = [y for y in self.labels if not 0 <= y < len(self.label_names)]
        if bad:
            raise ValueError(f"label index {bad[0]!r} out of range for {len(self.label_names)} label names")

    def __len__(self) -> int:
        return len(self.texts)

    def subset(self, indices: Iterable[int]) -> TextDataset:
        """The rows at ``indices`` (in that order).

        Example:
            >>> dataset_from_lists(["a b", "c d", "e f"], ["x", "y", "x"]).subset([2, 0]).texts
            ('e f', 'a b')
        """
        idx = [int(i) for i in indices]
        bad = [i for i in idx if not 0 <= i < len(self)]
        if bad:
            raise IndexError(f"index {bad[0]} out of range for a dataset of {len(self)} rows")
        return TextDataset(tuple(self.texts[i] for i in idx), tuple(self.labels[i] for i in idx),
                           self.label_names, self.report)

    def split(self, val_fraction: float, seed: int) -> tuple[TextDataset, TextDataset]:
        """A stratified ``(train, val)`` split, the same for the same ``seed``.

        Each class puts ``round(val_fraction * n)`` of its rows in ``val``, at least one when it has two
        or more rows, and always keeps one in ``train``. Both parts keep the original row order.

        Example:
            >>> ds = dataset_from_lists([f"text {i}" for i in range(10)], ["a", "b"] * 5)
            >>> [len(part) for part in ds.split(0.2, seed=0)]
            [8, 2]
        """
        if isinstance(val_fraction, bool) or not (0 <= val_fraction <= 0.9):
            raise DataError(f"val_fraction must be between 0 and 0.9, got {val_fraction!r}",
                            "use e.g. 0.2 to keep 20% of each class for validation")
        if val_fraction == 0:
            return self, self.subset([])
        by_class: list[list[int]] = [[] for _ in self.label_names]
        for i, y in enumerate(self.labels):
            by_class[y].append(i)
        rng, val = random.Random(seed), []
        for rows in by_class:
            rng.shuffle(rows)
            n_val = math.floor(val_fraction * len(rows) + 0.5)
            val += rows[: max(1, min(len(rows) - 1, n_val)) if len(rows) >= 2 else 0]
        val_set = set(val)
        return self.subset(i for i in range(len(self)) if i not in val_set), self.subset(sorted(val))


def _mb(n: int) -> str:
    return f"{n / _MB:.1f} MB" if n % _MB else f"{n // _MB} MB"


def _source_name(source: object, name: str | None) -> str:
    if name is not None:
        return name
    if isinstance(source, (str, os.PathLike)):
        return os.path.basename(os.fspath(source))
    return str(getattr(source, "name", "<upload>"))


def _read_bytes(source: Source, name: str) -> bytes:
    if isinstance(source, (bytes, bytearray)):
        raw = bytes(source)
    elif hasattr(source, "read"):  # a file-like upload (e.g. Streamlit's UploadedFile)
        raw = source.read()
    else:
        path = os.fspath(source)
        if os.path.isdir(path):
            raise DataError(f"{path!r} is a folder, not a file", "give the path of a CSV file")
        if not os.path.isfile(path):
            raise DataError(f"file not found: {path!r}", "check the spelling, or give an absolute path")
        size = os.path.getsize(path)
        if size > MAX_FILE_BYTES:
            raise DataError(f"{name!r} is {_mb(size)}; live training takes at most {_mb(MAX_FILE_BYTES)}",
                            "use a sample of the rows")
        with open(path, "rb") as f:
            raw = f.read()
    if len(raw) > MAX_FILE_BYTES:
        raise DataError(f"{name!r} is {_mb(len(raw))}; live training takes at most {_mb(MAX_FILE_BYTES)}",
                        "use a sample of the rows")
    return raw


def _decode(raw: bytes, name: str) -> tuple[str, str, list[str]]:
    head = raw[:8192]
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise DataError(f"{name!r} is UTF-16 text", "save it as 'CSV UTF-8 (comma delimited)' and try again")
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            raise DataError(f"{name!r}: this looks like a binary file ({kind}), not a CSV text file",
                            "open it in a spreadsheet program and export it as CSV (UTF-8)")
    if b"\x00" in head:
        raise DataError(f"{name!r}: this looks like a binary file (NUL bytes), not a CSV text file",
                        "export it as CSV (UTF-8)")
    bom = raw.startswith(b"\xef\xbb\xbf")
    try:
        return raw[3 * bom:].decode("utf-8"), "utf-8-sig" if bom else "utf-8", []
    except UnicodeDecodeError:
        raw = raw[3 * bom:]
    try:
        text, encoding = raw.decode("cp1252"), "cp1252"
    except UnicodeDecodeError:
        text, encoding = raw.decode("latin-1"), "latin-1"
    warning = f"file is not UTF-8; read as {encoding} — check accented characters in the preview"
    return text, encoding, [warning]


def _sniff_delimiter(text: str) -> str:
    header = re.split(r"\r\n|\r|\n", text, maxsplit=1)[0]
    sample = text[:8192]
    if len(text) > 8192 and "\n" in sample:
        sample = sample[: sample.rindex("\n")]
    try:
        sniffed = csv.Sniffer().sniff(sample, delimiters=_DELIMITERS).delimiter
        if sniffed in header:  # a delimiter the header line does not contain is a misreading
            return sniffed
    except csv.Error:
        pass
    counts = {d: header.count(d) for d in _DELIMITERS}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] else ","


def read_table(source: Source, *, name: str | None = None
               ) -> tuple[pd.DataFrame, str, str, list[str]]:
    """Read a CSV into a frame of strings: ``(df, encoding, delimiter, warnings)``.

    ``source`` is a path, the file's bytes, or a binary file-like object. Empty cells are ``""``;
    texts like ``"NA"`` or ``"None"`` are kept as written.

    Example:
        >>> df, enc, sep, warns = read_table(b"text;label\\nNA;pos\\n")
        >>> df.to_dict("list"), enc, sep, warns
        ({'text': ['NA'], 'label': ['pos']}, 'utf-8', ';', [])
    """
    name = _source_name(source, name)
    raw = _read_bytes(source, name)
    text, encoding, warns = _decode(raw, name)
    if not text.strip():
        raise DataError(f"{name!r} is empty", "choose a CSV file with a header line and rows")
    delimiter = _sniff_delimiter(text)
    try:
        with _warnings.catch_warnings():
            _warnings.simplefilter("ignore", pd.errors.ParserWarning)
            df = pd.read_csv(io.StringIO(text), sep=delimiter, dtype=str, keep_default_na=False,
                             index_col=False, nrows=MAX_ROWS + 1)
    except pd.errors.EmptyDataError as e:
        raise DataError(f"{name!r} is empty", "choose a CSV file with a header line and rows") from e
    except pd.errors.ParserError as e:
        msg = str(e)
        if m := re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", msg):
            where = f"line {m[2]} has {m[3]} fields but the header has {m[1]}"
        elif m := re.search(r"EOF inside string starting at row (\d+)", msg):
            where = f"a quote opened in record {int(m[1]) + 1} (counting the header) is never closed"
        else:
            where = msg.removeprefix("Error tokenizing data. C error: ").strip()
        sep = _DELIMITER_NAMES[delimiter]
        raise DataError(f"cannot parse {name!r} as {sep}-separated CSV: {where}",
                        f"fields that contain a {sep} or a line break must be in double quotes") from e
    if len(df) > MAX_ROWS:
        raise DataError(f"{name!r} has more than {MAX_ROWS:,} rows; live training takes at most {MAX_ROWS:,}",
                        "use a sample of the rows")
    if len(df) == 0:
        raise DataError(f"{name!r} has a header line but no data rows", "add rows below the header")
    df.columns = [str(c) for c in df.columns]
    return df.fillna(""), encoding, delimiter, warns


def _values(df: pd.DataFrame, col: str) -> pd.Series:
    s = df[col].fillna("").astype(str).str.strip()
    return s[s != ""]


def _match_column(columns: list[str], wanted: str, what: str) -> str:
    if wanted in columns:
        return wanted
    folded = [c for c in columns if c.strip().lower() == wanted.strip().lower()]
    if len(folded) == 1:
        return folded[0]
    raise DataError(f"no {what} column {wanted!r} in the file",
                    "available columns: " + ", ".join(repr(c) for c in columns))


def detect_columns(df: pd.DataFrame, text_col: str | None = None, label_col: str | None = None
                   ) -> tuple[str, str, str, str]:
    """Choose the text and label columns: ``(text_col, label_col, text_reason, label_reason)``.

    Given names win; then well-known names (``review``, ``sentiment``, ...); then content: the label
    column has the fewest different values for its rows, the text column the longest values. A label
    column of numbers found so gives way to a column of words that names them one for one
    (``label_name``: 0 = negative, 1 = positive).

    Example:
        >>> detect_columns(pd.DataFrame({"a": ["so good", "so bad", "meh ok"], "b": ["1", "0", "1"]}))
        ('a', 'b', 'longest text on average (2.0 words)', 'fewest different values (2 in 3 rows)')
    """
    columns = [str(c) for c in df.columns]
    if len(columns) < 2:
        raise DataError(f"need a text column and a label column; found only {columns[0]!r}" if columns
                        else "need a text column and a label column; found no columns",
                        "is the delimiter right? The file must be comma-, semicolon- or tab-separated")
    text_reason = label_reason = ""
    if text_col is not None:
        text_col, text_reason = _match_column(columns, text_col, "text"), "given as text column"
    if label_col is not None:
        label_col, label_reason = _match_column(columns, label_col, "label"), "given as label column"
    if text_col is not None and text_col == label_col:
        raise DataError(f"the text column and the label column are both {text_col!r}",
                        "choose two different columns: " + ", ".join(repr(c) for c in columns))
    by_name = {c.strip().lower().replace(" ", "_").replace("-", "_"): c for c in reversed(columns)}
    if label_col is None:
        label_col = next((by_name[n] for n in LABEL_NAMES if by_name.get(n) not in (None, text_col)), None)
        label_reason = f"named {label_col!r}" if label_col else ""
    if text_col is None:
        text_col = next((by_name[n] for n in TEXT_NAMES if by_name.get(n) not in (None, label_col)), None)
        text_reason = f"named {text_col!r}" if text_col else ""
    if label_col is None:
        stats = []
        for c in columns:
            if c != text_col and len(v := _values(df, c)):
                k = v.nunique()
                stats.append((not 2 <= k <= MAX_CLASSES, k / len(v), v.str.len().mean(), c, k, len(v)))
        if not stats:
            raise DataError("no label column found: the other columns are empty", _LABEL_HINT)
        *_, label_col, k, n = min(stats)
        label_reason = f"fewest different values ({k:,} in {n:,} rows)"
    if not label_reason.startswith("given") and (words := _words_for_numbers(df, label_col, columns, text_col)):
        label_col, label_reason = words
    if text_col is None:
        stats = []
        for c in columns:
            v = _values(df, c)
            if c == label_col or not len(v):
                continue
            looks_like_text = v.str.contains(r"[^\W\d_]", regex=True).mean() >= 0.5
            looks_like_text &= v.str.fullmatch(_NUMBER.pattern).mean() < 0.5 and v.str.len().mean() >= 3
            stats.append((looks_like_text, v.str.split().str.len().mean(), v.str.len().mean(), c))
        if not stats or not max(stats)[0]:
            others = [repr(c) for c in columns if c != label_col]
            what = f"column {others[0]} holds" if len(others) == 1 else f"columns {', '.join(others)} hold"
            raise DataError(f"no usable text column: {what} numbers, codes or nothing, not sentences",
                            "pass --text-col (text_col=...) to choose the column that holds the text")
        _, words, _, text_col = max(stats)
        text_reason = f"longest text on average ({words:.1f} words)"
    return text_col, label_col, text_reason, label_reason


def _words_for_numbers(df: pd.DataFrame, label_col: str, columns: list[str], text_col: str | None
                       ) -> tuple[str, str] | None:
    """A column of words beside a numeric label column that names its values one for one (``label_name``
    beside ``label``, 0 = negative and 1 = positive): ``(column, reason)``, or None. A column of sentences
    (three words or more on average) is not one."""
    rows = df[label_col].fillna("").astype(str).str.strip()
    if not len(_values(df, label_col)) or not rows[rows != ""].str.fullmatch(_NUMBER.pattern).all():
        return None
    for c in columns:
        if c in (label_col, text_col):
            continue
        words = df[c].fillna("").astype(str).str.strip()
        labelled = rows != ""
        if (words[labelled] == "").any() or (words[~labelled] != "").any():
            continue  # not a word on every labelled row alone
        words = words[labelled]
        if words.str.fullmatch(_NUMBER.pattern).any() or words.str.split().str.len().mean() >= 3:
            continue  # numbers, or sentences
        pairs = pd.DataFrame({"number": rows[labelled], "word": words}).drop_duplicates()
        if len(pairs) < 2 or not pairs["number"].is_unique or not pairs["word"].is_unique:
            continue  # not one word per number and one number per word
        pairs = sorted(zip(pairs["number"], pairs["word"], strict=True), key=lambda pair: float(pair[0]))
        named = ", ".join(f"{number} = {word}" for number, word in pairs[:3]) + (", …" if len(pairs) > 3 else "")
        return c, f"names the numbers of {label_col!r} one for one ({named})"
    return None


def _normalise_labels(labels: list[str]) -> tuple[list[str], list[str]]:
    """Labels with numbers written alike (``"1.0"`` → ``"1"``), and the label names in order."""
    if all(_NUMBER.fullmatch(y) for y in labels):
        values = [float(y) for y in labels]
        labels = [str(int(v)) if v.is_integer() and abs(v) < 1e15 else repr(v) for v in values]
        return labels, sorted(set(labels), key=float)
    return labels, sorted(set(labels))


@dataclass(frozen=True)
class KnownWords:
    """How much of a text column the word vectors can read (see :func:`known_words`)."""

    share: float  # share of the text's letters that are in known tokens; 0 for a column without letters
    rows_without: tuple[int, ...]  # rows with no known word (none of their letters is in a known token)


def _letters(text: str) -> int:
    return sum(map(str.isalpha, text))


def known_words(texts: Sequence[str], is_known: Callable[[str], bool],
                tokenize: Callable[[str], list[str]] = _glove_tokenize, *,
                tokens: Sequence[Sequence[str]] | None = None) -> KnownWords:
    """The share of ``texts`` the word vectors know, counted in letters, and the rows with no known word.

    Letters, not tokens: punctuation and numbers are tokens the vectors know but teach little (a column
    of IDs or dates is all of them), and a tokenizer may skip what it cannot read (the GloVe tokenizer
    keeps only ASCII words, so Chinese text is left with its punctuation). Letters that are in no known
    token, skipped ones included, count as unknown; a long word weighs more than a short one.
    ``tokens`` are the texts as ``tokenize`` split them, when the caller has them already.

    Example:
        >>> k = known_words(["good food!", "zzzz", "42"], {"good", "food", "!"}.__contains__)
        >>> round(k.share, 3), k.rows_without
        (0.667, (1, 2))
    """
    letters = known = 0
    rows_without = []
    for i, text in enumerate(texts):
        n = _letters(normalize(text))
        words = tokenize(text) if tokens is None else tokens[i]
        k = min(n, sum(_letters(w) for w in words if is_known(w)))  # NFKC may add a letter (ﬁ → fi)
        letters, known = letters + n, known + k
        if not k:
            rows_without.append(i)
    return KnownWords(known / letters if letters else 0.0, tuple(rows_without))


def _shown(text: str, width: int = 40) -> str:
    return repr(text if len(text) <= width else text[: width - 1] + "…")


def check_known_words(texts: Sequence[str], column: str, is_known: Callable[[str], bool],
                      tokenize: Callable[[str], list[str]] = _glove_tokenize, *,
                      tokens: Sequence[Sequence[str]] | None = None) -> tuple[KnownWords, list[str]]:
    """Refuse a text column the word vectors (almost) cannot read; warn about one they read poorly.

    Raises :class:`DataError` when at most :data:`MIN_KNOWN_SHARE` of the text is known (a wrong
    column, another language, IDs or codes); returns what :func:`known_words` found and the
    warnings (below :data:`WARN_KNOWN_SHARE`, or more than :data:`WARN_ROWS_WITHOUT_KNOWN` of the
    rows with no known word).

    Example:
        >>> check_known_words(["10432", "22107"], "id", {"10432", "the"}.__contains__)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        attention_core.errors.DataError: column 'id' holds almost no words that the word vectors know (0.0% ...
    """
    known = known_words(texts, is_known, tokenize, tokens=tokens)
    examples = ", ".join(_shown(t) for t in list(dict.fromkeys(texts[:100]))[:2])  # two different values
    if known.share <= MIN_KNOWN_SHARE:
        raise DataError(
            f"column {column!r} holds almost no words that the word vectors know ({known.share:.1%} of its text; "
            f"its values are like {examples})",
            "choose the column that holds the sentences, or for text in another language use word vectors for that "
            "language (command line: --text-col, --embeddings FILE)")
    warns = []
    if known.share < WARN_KNOWN_SHARE:
        warns.append(f"the word vectors know only {known.share:.0%} of the text in column {column!r} (values like "
                     f"{examples}): the model cannot read the rest; is this the text column, and is the text in "
                     "the word vectors' language? Word vectors for its language would help (command line: --embeddings FILE)")
    if len(known.rows_without) > WARN_ROWS_WITHOUT_KNOWN * len(texts):
        n = len(known.rows_without)
        warns.append(f"{n:,} rows ({n / len(texts):.0%}) have no word that the word vectors know, e.g. "
                     f"{', '.join(_shown(texts[i]) for i in known.rows_without[:2])}; they teach the model nothing")
    return known, warns


def _build(texts: Sequence[Any], labels: Sequence[Any], *, source: str, encoding: str, delimiter: str,
           columns: tuple[str, str, str, str], warns: list[str], is_known: Callable[[str], bool] | None,
           tokenize: Callable[[str], list[str]]) -> TextDataset:
    text_col, label_col, text_reason, label_reason = columns
    if len(texts) != len(labels):
        raise DataError(f"{len(texts):,} texts but {len(labels):,} labels", "give one label per text")
    if len(texts) > MAX_ROWS:
        raise DataError(f"{len(texts):,} rows; live training takes at most {MAX_ROWS:,}", "use a sample")
    kept_texts, kept_labels, dropped = [], [], Counter[str]()
    for t, y in zip(texts, labels, strict=True):
        t, y = ("" if t is None else str(t)).strip(), ("" if y is None else str(y)).strip()
        if not t:
            dropped["empty text"] += 1
        elif not y:
            dropped["missing label"] += 1
        else:
            kept_texts.append(t)
            kept_labels.append(y)
    if not texts:
        raise DataError(f"no rows in {source!r}", "give at least two rows with a text and a label each")
    if not kept_texts:
        why = ", ".join(f"{v:,} {k}" for k, v in dropped.items()) or "no rows"
        raise DataError(f"no usable rows in {source!r}: all {len(texts):,} rows were dropped ({why})",
                        f"check that {text_col!r} holds the text and {label_col!r} the labels")
    kept_labels, names = _normalise_labels(kept_labels)
    counts = Counter(kept_labels)
    if len(names) > MAX_CLASSES:
        raise DataError(f"found {len(names):,} different labels in column {label_col!r}; live training takes "
                        f"at most {MAX_CLASSES}", "is that the text column? " + _LABEL_HINT)
    if len(names) < 2:
        raise DataError(f"found only one label {names[0]!r} in column {label_col!r} "
                        f"({len(kept_texts):,} rows)",
                        "a classifier needs at least two classes; check the label column or add other rows")
    warns = list(warns)
    if few := [f"{n!r} ({counts[n]})" for n in names if counts[n] < 5]:
        warns.append(f"few rows in {len(few)} class{'es' * (len(few) > 1)}: {', '.join(few[:5])}"
                     f"{', …' * (len(few) > 5)}; classes with fewer than 5 rows are hard to learn")
    big, small = max(names, key=counts.__getitem__), min(names, key=counts.__getitem__)
    if counts[big] > 5 * counts[small]:
        warns.append(f"imbalanced: {big!r} has {counts[big]:,} rows, {small!r} only {counts[small]:,} "
                     f"({counts[big] / counts[small]:.1f}x); consider class weights")
    if dups := len(kept_texts) - len(set(zip(kept_texts, kept_labels, strict=True))):
        warns.append(f"{dups:,} duplicate rows (same text and label); duplicates can end up in both "
                     "training and validation")
    label_sets: dict[str, set[str]] = {}
    for t, y in zip(kept_texts, kept_labels, strict=True):
        label_sets.setdefault(t, set()).add(y)
    if conflicts := sum(len(s) > 1 for s in label_sets.values()):
        warns.append(f"{conflicts:,} texts appear with different labels")
    if len({n.lower() for n in names}) < len(names):
        warns.append("some labels differ only in upper/lower case; they are different classes")
    tokens = [tokenize(t) for t in kept_texts]
    if no_tokens := sum(not tok for tok in tokens):
        warns.append(f"{no_tokens:,} rows have no tokens after tokenizing")
    unknown_rate = known_share = None
    if is_known is not None:
        total = sum(len(tok) for tok in tokens)
        unknown_rate = sum(not is_known(w) for tok in tokens for w in tok) / total if total else 0.0
        known, known_warns = check_known_words(kept_texts, text_col, is_known, tokenize, tokens=tokens)
        known_share = known.share
        warns += known_warns
    report = DatasetReport(
        source=source, encoding=encoding, delimiter=delimiter, text_column=text_col, label_column=label_col,
        text_column_reason=text_reason, label_column_reason=label_reason, rows_read=len(texts),
        rows_kept=len(kept_texts), dropped=dict(dropped), class_counts={n: counts[n] for n in names},
        warnings=tuple(warns), unknown_rate=unknown_rate, token_lengths=tuple(len(tok) for tok in tokens),
        known_share=known_share)
    index = {n: i for i, n in enumerate(names)}
    return TextDataset(tuple(kept_texts), tuple(index[y] for y in kept_labels), tuple(names), report)


def load_dataset(source: Source, *, text_col: str | None = None,
                 label_col: str | None = None, name: str | None = None,
                 is_known: Callable[[str], bool] | None = None,
                 tokenize: Callable[[str], list[str]] = _glove_tokenize) -> TextDataset:
    """Read, check and clean a sentiment CSV (see the module docstring); raises :class:`DataError`.

    ``is_known(token)`` (e.g. "is this word in the GloVe vocabulary") fills ``report.unknown_rate`` and
    ``report.known_share``, and refuses a text column the vectors (almost) cannot read
    (:func:`check_known_words`).

    Example:
        >>> ds = load_dataset(b"text,label\\nnice one,pos\\n,neg\\ndull,neg\\n")
        >>> ds.texts, ds.label_names, ds.report.dropped
        (('nice one', 'dull'), ('neg', 'pos'), {'empty text': 1})
    """
    name = _source_name(source, name)
    df, encoding, delimiter, warns = read_table(source, name=name)
    columns = detect_columns(df, text_col, label_col)
    return _build(df[columns[0]].tolist(), df[columns[1]].tolist(), source=name, encoding=encoding,
                  delimiter=delimiter, columns=columns, warns=warns, is_known=is_known, tokenize=tokenize)


def dataset_from_lists(texts: Sequence[str], labels: Sequence[str | int], *, name: str = "<memory>",
                       is_known: Callable[[str], bool] | None = None,
                       tokenize: Callable[[str], list[str]] = _glove_tokenize) -> TextDataset:
    """A :class:`TextDataset` from in-memory lists, checked and cleaned like a CSV.

    The report's ``encoding`` and ``delimiter`` are ``""`` and the columns are called ``text`` and ``label``.

    Example:
        >>> ds = dataset_from_lists(["good", "bad", "ok"], [1, 0, 1.0])
        >>> ds.labels, ds.label_names
        ((1, 0, 1), ('0', '1'))
    """
    columns = ("text", "label", "given as a list", "given as a list")
    return _build(texts, labels, source=name, encoding="", delimiter="", columns=columns, warns=[],
                  is_known=is_known, tokenize=tokenize)
