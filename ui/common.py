"""Streamlit helpers shared by the pages: cached resources, the visitor's workspace and runs folder, the active run."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import streamlit as st

from attention_core import Embeddings, EmbeddingSource, ModelConfig, Run, load_embeddings, load_run
from attention_core.errors import EmbeddingError, InputError, RunError
from attention_core.run_folders import run_stamp
from attention_core.runs import relink_embeddings
from attention_core.workspaces import (
    TEACHER_EMAILS_ENV,
    TEACHER_ENV,
    TOKEN_PARAM,
    Workspace,
    WorkspaceStore,
    is_teacher,
    is_token,
    published_name,
    signed_in_user,
    teacher_emails,
)
from ui.preview import (  # noqa: F401 — re-exported for the pages
    BUNDLED_NAME,
    DEFAULT_RUN,
    EXAMPLES,
    PICKER_HELP,
    PRETRAINED_NAME,
    PRETRAINED_RUN,
    ROOT,
)
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
    """The identity claims of this visitor (``st.user``: ``is_logged_in``, ``iss``, ``sub``, ``name``,
    ``email``…), or None where no sign-in is configured."""
    try:
        return st.user.to_dict()
    except (AttributeError, KeyError, RuntimeError):  # no sign-in configured
        return None


def remembered_token() -> str | None:
    """The token this browser keeps in the cookie ``REMEMBER_COOKIE`` ("Remember me on this browser",
    ``ui.workspace_views``), if it holds a well-formed one. Cookies are those of the tab's first request."""
    token = st.context.cookies.get(REMEMBER_COOKIE)
    return token if is_token(token) else None


def current_workspace() -> Workspace:
    """The visitor's workspace (:meth:`WorkspaceStore.for_visitor`); a new token is put into the
    address: a reload opens the same workspace."""
    link = st.query_params.get(TOKEN_PARAM)
    workspace, token = workspace_store().for_visitor(
        claims=_signed_in_claims(), link_token=link, tab_token=st.session_state.get("workspace_token"),
        remembered_token=remembered_token())
    if token is not None:
        st.session_state["workspace_token"] = token
        if link != token:
            st.query_params[TOKEN_PARAM] = token
    return workspace


def workspace_key() -> str:
    """'local' on one's own machine; the visitor's workspace key (a digest, not the token) when shared."""
    return current_workspace().key


def workspace_token() -> str | None:
    """The token of this tab's workspace (shared mode, not signed in), for its private link."""
    shared, user = workspace_store().shared, signed_in_user(_signed_in_claims())
    return st.session_state.get("workspace_token") if shared and user is None else None


def is_teacher_visitor() -> bool:
    """Whether this tab is the teacher's (:meth:`WorkspaceStore.is_teacher_visitor`): it holds the
    teacher token (``?teacher=…``, checked against ``$ATTENTION_PLAYGROUND_TEACHER_TOKEN`` or
    ``teacher_token`` in secrets.toml), or its visitor is signed in with a verified e-mail of
    :func:`teacher_email_list`. The token is taken out of the address once read (class screens are
    shared); the tab keeps the role."""
    store = workspace_store()
    given = st.query_params.get(TEACHER_PARAM) if store.shared else None
    if given is not None:
        expected = os.environ.get(TEACHER_ENV) or _secret("teacher_token")
        st.session_state["workspace_teacher"] = is_teacher(given, expected if isinstance(expected, str) else None)
        del st.query_params[TEACHER_PARAM]
    try:
        emails = teacher_email_list()
    except InputError:  # the sidebar shows the setting's error, and stops the page
        emails = frozenset()
    return store.is_teacher_visitor(holds_teacher_token=bool(st.session_state.get("workspace_teacher", False)),
                                    claims=_signed_in_claims(), emails=emails)


def teacher_email_list() -> frozenset[str]:
    """The teachers' e-mails: ``$ATTENTION_PLAYGROUND_TEACHER_EMAILS`` (comma-separated) or
    ``teacher_emails = [...]`` in secrets.toml. Raises ``WorkspaceError`` for an entry that is no address."""
    return teacher_emails(os.environ.get(TEACHER_EMAILS_ENV) or _secret("teacher_emails"))


def runs_dir() -> Path:
    """Where the visitor's runs are saved (:meth:`WorkspaceStore.runs_folder`)."""
    return workspace_store().runs_folder(current_workspace())


def check_room(adding: int = 0) -> None:
    """Raise a ``WorkspaceError`` (what to delete) if the visitor's workspace cannot take ``adding``
    more bytes (``ATTENTION_PLAYGROUND_WORKSPACE_MB``; no limit when unset). Called before anything
    is trained, uploaded or saved into it, so reaching the limit never loses a run."""
    workspace_store().check_space(current_workspace(), adding)


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


@st.cache_resource(show_spinner="Loading the pretrained all-MiniLM-L6-v2…")
def pretrained_run() -> Run:
    """The bundled pretrained encoder with its untrained head (``attention_core.pretrained.pretrained_run``):
    shared read-only, loaded once per server when a page first shows it."""
    return load_run(str(PRETRAINED_RUN))


def pretrained_choice() -> dict[str, Path]:
    """The model picker's choice of the bundled pretrained encoder, {name: its path}; {} when its package is not
    installed (nothing is loaded to list it)."""
    from attention_core import pretrained

    try:
        pretrained.bundled_checkpoint()
    except RunError:
        return {}
    return {PRETRAINED_NAME: PRETRAINED_RUN}


def run_choices() -> dict[str, Path]:
    """Display name → run directory (:meth:`WorkspaceStore.run_choices`): the bundled model first, the bundled
    pretrained encoder next (when installed)."""
    return workspace_store().run_choices(current_workspace(), BUNDLED_NAME, DEFAULT_RUN, pretrained_choice())


def run_link_name(choice: str) -> str | None:
    """The model picker's ``choice`` as a link's ``run`` (:meth:`WorkspaceStore.run_link_name`)."""
    return workspace_store().run_link_name(choice, BUNDLED_NAME, PRETRAINED_NAME)


def run_from_link(value: str) -> str:
    """The model picker's choice for a link's ``run`` (:meth:`WorkspaceStore.run_from_link`), or its ``RunError``."""
    return workspace_store().run_from_link(current_workspace(), value, next(iter(pretrained_choice()), None))


def get_run(path: Path) -> Run:
    """Load a run once per session (keyed by path and modification time); the bundled ones once per server."""
    if path == DEFAULT_RUN:
        return default_run()
    if path == PRETRAINED_RUN:
        return pretrained_run()
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
    gone = published_name(current) if current not in names else None
    if gone is not None:  # the teacher unpublished it while this learner looked at it: say so, not switch silently
        st.warning(f"The run “{gone}” was unpublished by the teacher; showing **{names[0]}** instead.")
    # The shared choice wins over this widget's own (chosen on another page, a training that ended).
    st.session_state[key] = current if current in names else names[0]
    name = st.selectbox(label, names, key=key, help=PICKER_HELP,
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
    """The sidebar's line about the run: its name, size, positions (or its pretrained base) and labels."""
    from ui.model_notes import base_title, head_untrained

    cfg = run.model_config
    size = f"{cfg.n_layers} layer{'s' * (cfg.n_layers != 1)} × {cfg.n_heads} head{'s' * (cfg.n_heads != 1)}"
    base = base_title(run)
    if base is None:
        kind = f"{cfg.positional} positions"
    elif head_untrained(run):
        kind = "pretrained, word pieces"
    else:
        kind = f"fine-tuned from {base} ({layers_trained(cfg)})"
    untrained = " (the classifier head is untrained: they mean nothing yet)" if head_untrained(run) else ""
    return f"**{run.name}** · {size} · {kind} · labels: {', '.join(run.label_names)}{untrained}"


def layers_trained(cfg: ModelConfig, its: str = "") -> str:
    """Which of a fine-tuned encoder's layers trained, in words: "all 6 layers", "top 4 of 6 layers" (``its``: a
    word before "top", e.g. "its ")."""
    if cfg.frozen_layers == 0:
        return f"all {cfg.n_layers} layers"
    return f"{its}top {cfg.n_layers - cfg.frozen_layers} of {cfg.n_layers} layers"


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
    the home page (a learner reloading ``/Train`` after a server restart). This
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

    A watched training redraws its view several times a second, so those transitions would run
    nearly all the time, each frame drawn by the browser (their cost: benchmarks/README.md).
    """
    st.html("<style>[data-testid='stProgress'] *, [data-testid='stElementContainer'] "
            "{ transition: none !important; }</style>")
