"""Streamlit helpers shared by the pages: cached resources, the visitor's workspace and runs folder, the active run."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import streamlit as st

from attention_core import Embeddings, EmbeddingSource, Run, load_embeddings, load_run
from attention_core.errors import EmbeddingError, InputError, RunError
from attention_core.run_folders import check_run_name, list_runs, run_stamp
from attention_core.runs import relink_embeddings
from attention_core.workspaces import (
    TEACHER_EMAILS_ENV,
    TEACHER_ENV,
    TOKEN_PARAM,
    PublishedRun,
    Workspace,
    WorkspaceStore,
    is_teacher,
    is_teacher_email,
    is_token,
    teacher_emails,
)
from ui.preview import BUNDLED_NAME, DEFAULT_RUN, EXAMPLES, ROOT  # noqa: F401 — re-exported for the pages
from ui.state import kept  # noqa: F401 — re-exported for the pages

BUNDLED_DATA = {
    "UCI sentiment sentences (3,000 reviews: Amazon, IMDb, Yelp)": ROOT / "data" / "uci_sentiment_sentences.csv",
    "small.csv (the seed post's 39 product reviews)": ROOT / "data" / "small.csv",
}


TEACHER_PARAM = "teacher"  # the query parameter holding the teacher token
REMEMBER_COOKIE = "attention_playground_workspace"  # a browser's remembered workspace token (opt-in)
REMEMBER_DAYS = 30


def _secret(name: str) -> object | None:
    """``name`` from ``.streamlit/secrets.toml``, or None (also when there is no such file)."""
    try:
        return st.secrets.get(name)
    except FileNotFoundError:  # Streamlit's "no secrets file" error is one
        return None


def workspace_store() -> WorkspaceStore:
    """The workspaces under the runs root (``$ATTENTION_PLAYGROUND_RUNS`` or ``./runs``); shared mode
    by ``$ATTENTION_PLAYGROUND_SHARED=1`` or ``shared = true`` in secrets.toml. Raises
    ``WorkspaceError`` for a malformed ``$ATTENTION_PLAYGROUND_WORKSPACE_MB``."""
    return WorkspaceStore.from_env(ROOT / "runs", shared=_secret("shared") is True)


def sign_in_providers() -> list[str | None]:
    """The identity providers that ``[auth]`` in secrets.toml sets up for ``st.login``: None for the
    one configured in ``[auth]`` itself, then each ``[auth.<name>]``; empty without sign-in."""
    auth = _secret("auth")
    if not isinstance(auth, Mapping):
        return []
    named = [str(name) for name, value in auth.items() if isinstance(value, Mapping)]
    return ([None] if "client_id" in auth else []) + named


def _signed_in_claims() -> dict | None:
    """The identity claims (``iss``, ``sub``, ``name``, ``email``…) of a visitor signed in with
    ``st.login``, else None."""
    try:
        claims = st.user.to_dict()
    except (AttributeError, KeyError, RuntimeError):  # no sign-in configured
        return None
    return claims if claims.get("is_logged_in") is True and claims.get("iss") and claims.get("sub") else None


def _signed_in_user() -> tuple[str, str, str] | None:
    """(issuer, subject, name or e-mail) of a visitor signed in with ``st.login``, else None."""
    claims = _signed_in_claims()
    if claims is None:
        return None
    return str(claims["iss"]), str(claims["sub"]), str(claims.get("name") or claims.get("email") or "")


def remembered_token() -> str | None:
    """The token this browser keeps in the cookie ``REMEMBER_COOKIE`` ("Remember me on this browser",
    ``ui.workspace_views``), if it holds a well-formed one. Cookies are those of the tab's first request."""
    token = st.context.cookies.get(REMEMBER_COOKIE)
    return token if is_token(token) else None


def current_workspace() -> Workspace:
    """The visitor's workspace: the runs root locally; in shared mode the signed-in user's, or the
    one of the token in the address (``?w=…``), else the one this browser remembers, else a new one
    (put into the address)."""
    store = workspace_store()
    if not store.shared:
        return store.local()
    user = _signed_in_user()
    if user is not None:
        return store.for_user(*user)
    given = st.query_params.get(TOKEN_PARAM)
    if not is_token(given):  # none or malformed: this tab's own, else the remembered one, else a new one
        given = st.session_state.get("workspace_token") or remembered_token()
    workspace, token = store.for_token(given)
    st.session_state["workspace_token"] = token
    if st.query_params.get(TOKEN_PARAM) != token:
        st.query_params[TOKEN_PARAM] = token  # the private link: a reload opens the same workspace
    return workspace


def workspace_key() -> str:
    """'local' on one's own machine; the visitor's workspace key (a digest, not the token) when shared."""
    return current_workspace().key


def workspace_token() -> str | None:
    """The token of this tab's workspace (shared mode, not signed in), for its private link."""
    return st.session_state.get("workspace_token") if workspace_store().shared and _signed_in_user() is None else None


def is_teacher_visitor() -> bool:
    """Whether this tab is the teacher's: it holds the teacher token (``?teacher=…``, checked against
    ``$ATTENTION_PLAYGROUND_TEACHER_TOKEN`` or ``teacher_token`` in secrets.toml), or its visitor is
    signed in with a verified e-mail of :func:`teacher_email_list`. The token is taken out of the
    address once read (class screens are shared); the tab keeps the role."""
    if not workspace_store().shared:
        return False
    given = st.query_params.get(TEACHER_PARAM)
    if given is not None:
        expected = os.environ.get(TEACHER_ENV) or _secret("teacher_token")
        st.session_state["workspace_teacher"] = is_teacher(given, expected if isinstance(expected, str) else None)
        del st.query_params[TEACHER_PARAM]
    return bool(st.session_state.get("workspace_teacher", False)) or _signed_in_teacher()


def teacher_email_list() -> frozenset[str]:
    """The teachers' e-mails: ``$ATTENTION_PLAYGROUND_TEACHER_EMAILS`` (comma-separated) or
    ``teacher_emails = [...]`` in secrets.toml. Raises ``WorkspaceError`` for an entry that is no address."""
    return teacher_emails(os.environ.get(TEACHER_EMAILS_ENV) or _secret("teacher_emails"))


def _signed_in_teacher() -> bool:
    claims = _signed_in_claims()
    if claims is None:
        return False
    try:
        emails = teacher_email_list()
    except InputError:  # the sidebar shows the setting's error, and stops the page
        return False
    return is_teacher_email(claims, emails)


def runs_dir() -> Path:
    """Where the visitor's runs are saved: the runs root locally (created here), their workspace
    folder in shared mode (created when their first run is saved)."""
    workspace = current_workspace()
    if workspace_store().shared:
        return workspace.runs_dir
    workspace.runs_dir.mkdir(parents=True, exist_ok=True)
    return workspace.runs_dir


def check_room(adding: int = 0) -> None:
    """Raise a ``WorkspaceError`` (what to delete) if the visitor's workspace cannot take ``adding``
    more bytes (``ATTENTION_PLAYGROUND_WORKSPACE_MB``; no limit when unset). Called before anything
    is trained, uploaded or saved into it, so reaching the limit never loses a run."""
    workspace_store().check_space(current_workspace(), adding)


def published_runs() -> list[PublishedRun]:
    """Runs the teacher published (shared mode; none locally)."""
    store = workspace_store()
    return store.published_runs() if store.shared else []


def published_choice(run: PublishedRun) -> str:
    """A published run's name in the model picker (no run's own name can look like it)."""
    return f"📌 {run.name} — by {run.label}"


@st.cache_resource(show_spinner="Loading word vectors…")
def embeddings(limit: int | None = None, path: str | None = None) -> Embeddings:
    """The shared, read-only embedding table (one per server): GloVe 6B 50d, or the word2vec /
    GloVe file at ``path`` on the server's disk. Raises ``EmbeddingError`` for a file that
    cannot be read."""
    return load_embeddings(EmbeddingSource("file", path, limit=limit) if path else EmbeddingSource(limit=limit))


@st.cache_resource(show_spinner="Loading the bundled model…")
def default_run() -> Run:
    """The bundled run trained on the UCI sentences: shared read-only, never trained further."""
    return load_run(DEFAULT_RUN)


def run_choices() -> dict[str, Path]:
    """Display name → run directory: the bundled model first, then the visitor's runs, newest first,
    then the published runs (shared mode)."""
    choices = {BUNDLED_NAME: DEFAULT_RUN}
    for path in list_runs(runs_dir()):
        choices[f"{path.name}"] = path
    for run in published_runs():
        choices[published_choice(run)] = run.path
    return choices


PUBLISHED_LINK = "published:"  # a published run in a link: run=published:<name>


def run_link_name(choice: str) -> str | None:
    """The model picker's ``choice`` as a link's ``run``: an own run's folder name,
    ``published:<name>`` for a published run, None for the bundled model."""
    if choice == BUNDLED_NAME:
        return None
    for run in published_runs():
        if published_choice(run) == choice:
            return f"{PUBLISHED_LINK}{run.name}"
    return choice


def run_from_link(value: str) -> str:
    """The model picker's choice for a link's ``run``; a ``RunError`` (what is wrong, how to fix it)
    for a malformed name, a run that does not exist here, or another workspace's private run. The
    message quotes a name only once it is a run's name (letters, digits, '-', '_', '.')."""
    published = value.startswith(PUBLISHED_LINK)
    try:
        name = check_run_name(value[len(PUBLISHED_LINK):] if published else value)
    except RunError:
        raise RunError("that is not a run's name", "a run's name has letters, digits, '-', '_' and '.'") from None
    if published:
        for run in published_runs():
            if run.name == name:
                return published_choice(run)
        raise RunError(f"no published run is named {name!r}", "your teacher may have unpublished it")
    if name in run_choices() and name != BUNDLED_NAME:
        return name
    store = workspace_store()
    if store.shared and store.held_elsewhere(current_workspace(), name):
        raise RunError(f"the run {name!r} is private: it belongs to another workspace",
                       "its author can ask the teacher to publish it")
    raise RunError(f"there is no run named {name!r} here", "it may have been renamed or deleted; pick one in the sidebar")


def get_run(path: Path) -> Run:
    """Load a run once per session (keyed by path and modification time)."""
    if path == DEFAULT_RUN:
        return default_run()
    cache = st.session_state.setdefault("loaded_runs", {})
    key = run_stamp(path)
    if key not in cache:
        if len(cache) > 4:  # keep a session's memory bounded when it opens many runs
            cache.clear()
        cache[key] = load_run(path)
    return cache[key]


def _picked(key: str) -> None:
    st.session_state["active_run"] = st.session_state[key]  # the learner's choice, before the page runs


def active_run_picker(key: str, *, label: str = "Model") -> tuple[Path, Run] | None:
    """A selectbox of runs (shared choice across pages); shows an error and returns None if it fails."""
    choices = run_choices()
    names = list(choices)
    current = st.session_state.get("active_run")
    # The shared choice wins over this widget's own (chosen on another page, a training that ended).
    st.session_state[key] = current if current in names else names[0]
    name = st.selectbox(label, names, key=key, help="The bundled model, or any run you trained.",
                        on_change=_picked, args=(key,))
    st.session_state["active_run"] = name
    try:
        return choices[name], get_run(choices[name])
    except EmbeddingError as err:  # its word-vector file moved, or changed
        st.error(f"This run cannot be loaded: {err}")
        if choices[name] == DEFAULT_RUN:
            return None
        if choices[name].parent != runs_dir():  # a published run: read-only, its author relinks it
            st.info("This run was published by your teacher: ask them to publish it again with its word-vector file.")
            return None
        moved = st.text_input("Where is its word-vector file now?", key=f"{key}_relink",
                              help="The run keeps the path of the file it was trained with.").strip()
        if moved:
            try:
                relink_embeddings(choices[name], moved)
            except InputError as err2:
                st.error(f"That file does not fit this run: {err2}")
            else:
                st.rerun()
        return None
    except InputError as err:
        st.error(f"This run cannot be loaded: {err}")
        return None


def run_caption(run: Run) -> str:
    """The sidebar's line about the run: its name, size, positions and labels."""
    cfg = run.model_config
    size = f"{cfg.n_layers} layer{'s' * (cfg.n_layers != 1)} × {cfg.n_heads} head{'s' * (cfg.n_heads != 1)}"
    return f"**{run.name}** · {size} · {cfg.positional} positions · labels: {', '.join(run.label_names)}"


def sidebar_run(key: str) -> tuple[Path, Run]:
    """The sidebar's model picker and its run's caption; the page stops (the picker shows why) when
    the chosen run cannot be loaded."""
    with st.sidebar:
        picked = active_run_picker(key)
    if picked is None:
        st.stop()
    path, run = picked
    st.sidebar.caption(run_caption(run))
    return path, run


def page_setup(title: str, icon: str) -> None:
    """Every page's config. ``icon`` is an emoji: Streamlit fetches a ``:material/…:`` favicon from
    fonts.gstatic.com, and the app must not reach the internet."""
    use_the_router()
    st.set_page_config(page_title=f"{title} · Attention Playground", page_icon=icon, layout="wide")


def use_the_router() -> None:
    """Hand a page opened by its address on a freshly started server over to ``app.py``'s router.

    Until some session has run ``app.py`` (and its ``st.navigation``), Streamlit serves a
    ``pages/`` folder the old way: it runs the page alone and lists the folder in the sidebar
    itself, the first entry labelled "app" (cf. streamlit#9624), for as long as nobody opens
    the home page. A learner reloading ``/Train`` after the server restarted saw that. This
    switches the server to the router and runs the page again through it. It uses a Streamlit
    internal (``PagesManager.uses_pages_directory``); if that moves, nothing happens.
    """
    try:
        from streamlit.runtime import Runtime
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError:
        return
    if not Runtime.exists() or type(Runtime.instance()) is not Runtime:
        return  # AppTest (a stand-in runtime): it serves pages/ the old way on every run, and its tests expect that
    if getattr(PagesManager, "uses_pages_directory", None):
        PagesManager.uses_pages_directory = False
        st.rerun()


def still_live_views() -> None:
    """No animation between a live view's redraws (progress bars slide, re-run elements fade).

    A watched training redraws its view every 0.4 s, so those transitions ran nearly all the
    time, each frame drawn by the browser: ~0.08 of a core per watching tab here (software
    rendering, 2 cores shared with the trainings), for motion nobody needs 2.5 times a second.
    """
    st.html("<style>[data-testid='stProgress'] *, [data-testid='stElementContainer'] "
            "{ transition: none !important; }</style>")
