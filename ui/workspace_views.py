"""The visitor's workspace in the sidebar (shared mode): the private link to come back, Sign in / Sign
out where ``[auth]`` in secrets.toml sets up Streamlit's sign-in, and the teacher's Publish /
Unpublish. Locally it draws nothing and imports nothing more: ``app.py`` runs it on every page, and
the home page's first answer comes before torch is loaded (``ui/preview.py``)."""

from __future__ import annotations

import os

import streamlit as st

SHARED_ENV = "ATTENTION_PLAYGROUND_SHARED"  # as attention_core.workspaces, which would load torch here


def shared_mode() -> bool:
    """Whether this server is shared: ``$ATTENTION_PLAYGROUND_SHARED`` (1, true, yes, on) or
    ``shared = true`` in secrets.toml (the same test as ``ui.common.workspace_store``)."""
    if os.environ.get(SHARED_ENV, "").strip().lower() in ("1", "true", "yes", "on"):
        return True
    try:
        return st.secrets.get("shared") is True
    except FileNotFoundError:  # no secrets file
        return False


def sidebar() -> None:
    """The private link and Sign in (or the signed-in label and Sign out), and the teacher's panel; a
    malformed setting is an error with its fix, and the page stops."""
    if not shared_mode():
        return
    from attention_core.errors import InputError
    from ui import common

    try:
        store = common.workspace_store()
        if not store.shared:
            return
        workspace = common.current_workspace()
        common.teacher_email_list()
    except InputError as err:
        st.error(f"The server's workspace settings are wrong: {err}")
        st.stop()
    token = common.workspace_token()
    providers = common.sign_in_providers()
    with st.sidebar:
        if token is None:  # signed in: the workspace is their identity
            st.caption(f"Signed in as **{workspace.label}**: your runs are kept under your account")
            if providers and st.button("Sign out", key="workspace_sign_out"):
                st.logout()
        else:
            remembered = _remember_me(token)
            st.caption(link_caption(empty=store.is_empty(workspace), remembered=remembered))
            st.code(private_link(st.context.url or "", token), language=None, wrap_lines=True)
            _remember_me_box()
            if providers:
                _sign_in(providers)
        if common.is_teacher_visitor():
            _teacher_panel()


def link_caption(*, empty: bool, remembered: bool) -> str:
    """What the sidebar says above the private link. A mistyped link opens a workspace as new as a fresh
    one (the server cannot tell them apart), so until the workspace holds something the caption says it
    is new and empty, and how to get back to one's runs."""
    if empty:
        return ("This link opens a **new, empty workspace** (no runs yet). If you expected your runs, check the "
                "link you were given: one wrong character opens an empty workspace like this one. Your own link "
                "(or a browser where you ticked Remember me) opens them. If you are new, keep this link: it will "
                "open the runs you train here.")
    return "keep this link: it opens your runs" + (
        " (this browser opens them in a new tab too)" if remembered else
        "; a new tab without this link opens a new, empty workspace")


def private_link(page_url: str, token: str) -> str:
    """The address of this page with ``token`` as its only parameter: ``http://host:8501/?w=…``
    (a site's root keeps its ``/``; the page's other parameters are left out)."""
    from urllib.parse import urlsplit, urlunsplit

    from ui import common

    parts = urlsplit(page_url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path or "/", f"{common.TOKEN_PARAM}={token}", ""))


def _remember_me(token: str) -> bool:
    """Whether this browser remembers ``token`` (the box is ticked), keeping its cookie in step: set
    while ticked, removed once unticked. Streamlit has no call that sets a cookie, so the page's
    script writes it; the server reads it (``st.context.cookies``) when the next tab connects."""
    from ui import common

    if "workspace_remember" not in st.session_state:  # a new tab: ticked if the browser remembers this workspace
        st.session_state["workspace_remember"] = common.remembered_token() == token
        st.session_state["workspace_cookie_set"] = st.session_state["workspace_remember"]
    name = common.REMEMBER_COOKIE
    if st.session_state["workspace_remember"]:
        st.session_state["workspace_cookie_set"] = True
        _script(f'document.cookie = "{name}={token}; Max-Age={common.REMEMBER_DAYS * 86400}; Path=/; SameSite=Strict"'
                ' + (location.protocol === "https:" ? "; Secure" : "");')
        return True
    if st.session_state["workspace_cookie_set"]:  # only this workspace's cookie: another tab may have set another's since
        _script(f'if (document.cookie.split("; ").includes("{name}={token}")) '
                f'document.cookie = "{name}=; Max-Age=0; Path=/; SameSite=Strict";')
    return False


def _remember_me_box() -> None:
    from ui import common

    st.checkbox("Remember me on this browser", key="workspace_remember",
                help=f"A new tab on this browser then opens your runs without the link, for {common.REMEMBER_DAYS} "
                     "days. Not on a shared computer: the next person there would see your runs. Untick to forget.")


def _script(code: str) -> None:
    """Run ``code`` in the page. The browser may run it again when the sidebar is redrawn: it must
    do the same each time."""
    st.html(f"<script>{code}</script>", unsafe_allow_javascript=True, width="content")


def _sign_in(providers: list[str | None]) -> None:
    """A Sign-in button per identity provider of ``[auth]`` (``st.login``); a server that cannot
    sign in (no Authlib, an incomplete ``[auth]``) says what to fix."""
    from streamlit.errors import StreamlitAuthError, StreamlitMissingAuthlibError

    st.caption("Or sign in: your runs are then kept under your account (those of this link stay with the link).")
    for provider in providers:
        label = "Sign in" if provider is None else f"Sign in with {provider}"
        if st.button(label, key=f"workspace_sign_in_{provider or ''}"):
            try:
                st.login(provider)
            except StreamlitMissingAuthlibError:
                st.error("This server cannot sign you in yet: it lacks Authlib — whoever runs it can install it "
                         "with `pip install -e '.[signin]'` and restart the app.")
            except StreamlitAuthError as err:
                st.error(f"This server cannot sign you in: {err} — check `[auth]` in `.streamlit/secrets.toml`.")


def _teacher_panel() -> None:
    from attention_core.run_folders import list_runs
    from ui import common

    store, workspace = common.workspace_store(), common.current_workspace()
    with st.expander("Teacher: publish runs", expanded=False):
        message = st.session_state.pop("workspace_message", None)
        if message:
            (st.error if message[0] == "error" else st.success)(message[1])
        own = [p.name for p in list_runs(workspace.runs_dir)]
        if own:
            name = st.selectbox("One of your runs", own, key="workspace_publish_pick")
            st.button("Publish", key="workspace_publish", on_click=_publish, args=(name,),
                      help="Every learner sees a read-only copy, labelled as the teacher's.")
        else:
            st.caption("Train a run first: your own runs can be published.")
        for run in store.published_runs():
            st.caption(run.choice)
            st.button("Unpublish", key=f"workspace_unpublish_{run.name}", on_click=_unpublish, args=(run.name,))


def _publish(name: str) -> None:
    from attention_core.errors import InputError
    from ui import common

    if not common.is_teacher_visitor():
        return
    try:
        run = common.workspace_store().publish(common.current_workspace(), name)
    except InputError as err:
        st.session_state["workspace_message"] = ("error", f"Not published: {err}")
    else:
        st.session_state["workspace_message"] = ("ok", f"Published: {run.choice}")


def _unpublish(name: str) -> None:
    from attention_core.errors import InputError
    from ui import common

    if not common.is_teacher_visitor():
        return
    try:
        common.workspace_store().unpublish(name)
    except InputError as err:
        st.session_state["workspace_message"] = ("error", f"Not unpublished: {err}")
    else:
        st.session_state["workspace_message"] = ("ok", f"Unpublished {name!r}: learners no longer see it.")
