"""What defines each page's view, kept in the address: ``/Inspect?run=…&sentence=…&layer=2&head=3``.

The one owner of the page parameters (the names are listed in the README, "Links to a view"). A
page declares its parameters (:class:`Param`: a name in the address, how to read the view's
value and put one into it, how to parse and show it, its default) to a :class:`ViewLink`, then
calls :meth:`ViewLink.write`. On each run the link

* reads the address when it is one this page did not write: the first run of a link, a page
  opened with parameters (``st.page_link(query_params=…)``), the browser's Back and Forward
  (Streamlit reruns the page with the old address, ``is_history_navigation``). A page opened from
  the sidebar (no parameters) keeps the view it had. A parameter present in the address is put into the view
  (the widgets' keys and their ``ui.state.kept`` copies); on Back / Forward an absent one goes
  back to its default. A bad value (a run that does not exist or is private, a head out of
  range, a 10,000-character sentence, markup) leaves the view as it was and shows one short
  notice, the value as plain text;
* writes the view back: this page's non-default values and the global parameters (the private
  ``w`` token, ``projector``, ``hide``), nothing of other pages. Streamlit sends a change of
  ``st.query_params`` to the browser, which pushes it on its history without a reload (replaces
  it during a Back / Forward run): Back goes back to the view before the last change. Widgets'
  own ``bind="query-params"`` was not used: it replaces the history entry (Back would leave the
  page) and drops a bad value without a word. A page opened from the sidebar whose kept view is
  not its default takes two entries (Streamlit's bare page, then its view): Back from its view
  shows the bare page's defaults first.

Light (Streamlit only): the home page declares its parameters before torch is loaded. A parse
error is a :class:`BadParam` (a ``ValueError`` with what is wrong and how to fix it; not an
``InputError``, whose package would load torch here).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit, urlunsplit

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from ui import state
from ui.markup import escaped

GLOBAL = ("w", "projector", "hide")  # parameters of every page, kept as they are (w: ui.common.TOKEN_PARAM)
PRIVATE = ("w",)  # never in a link for someone else
MAX_TEXT = 500  # the pages' sentence boxes take as many characters
_MARKUP = re.compile(r"<\s*/?\s*[a-zA-Z!][^>]*>|javascript:|\]\(|[\x00-\x08\x0b-\x1f\x7f]")
_WRITTEN = "view_link_written"  # (page, address) the last page run's page wrote lately, newest last
_RECENT = 8  # a click's rerun may leave before the browser has applied the previous write
_PAGE = "view_link_page"  # the current page's link, for a fragment's rerun (refresh)


class BadParam(ValueError):
    """A parameter value that cannot be used: ``str(err)`` is ``"<what is wrong> — <how to fix it>"``."""

    def __init__(self, message: str, hint: str = "") -> None:
        self.message, self.hint = message, hint
        super().__init__(f"{message} — {hint}" if hint else message)


@dataclass(frozen=True)
class Param:
    """One parameter of a page's view.

    ``get`` returns the view's current value (the default when it holds none that fits), ``put``
    puts a value into the view (before its widget is drawn), ``parse`` turns the address's text
    into a value or raises :class:`BadParam`, ``show`` turns a value into the address's text.
    A value equal to ``default`` stays out of the address; ``written`` says whether the parameter
    belongs to the view at all now (e.g. ``val`` only while a validation row is shown).
    """

    name: str
    get: Callable[[], object]
    put: Callable[[object], None]
    parse: Callable[[str], object]
    show: Callable[[object], str] = str
    default: object = None
    written: Callable[[], bool] = lambda: True


class ViewLink:
    """A page's parameters: reads the address (when this session did not write it), writes the view.

    Example:
        >>> link = ViewLink("Inspect")  # doctest: +SKIP
        >>> link.add(choice("tab", "inspect_tab", TABS, default="model-view"))  # doctest: +SKIP
        >>> link.write()  # after every parameter is declared, before the page may stop  # doctest: +SKIP
    """

    def __init__(self, page: str) -> None:
        self.page = page
        self.params: dict[str, Param] = {}
        state.new_run()
        ctx = get_script_run_ctx()
        self.history = bool(ctx is not None and ctx.is_history_navigation)  # Back / Forward
        self.address = {k: st.query_params[k] for k in st.query_params}
        own = self._own(self.address)
        # An address with no parameters of a page, outside Back / Forward, is a page switch: the view
        # it had stays. One with parameters is read unless the last page run wrote it (lately: a
        # click's rerun may leave before the browser has applied the last write; or the previous
        # page's, carried over by a page switch).
        written = [address for _, address in st.session_state.get(_WRITTEN, [])]
        self.reading = self.history or bool(own) and _encoded(own) not in written
        self.notices = st.container()  # at the top of the page, where declarations put their notices
        self._left_out = False  # a parameter of the address was left out (a notice says why)
        if self.reading:
            known = set(GLOBAL)
            self._unknown = [k for k in self.address if k not in known]
        else:
            self._unknown = []
        st.session_state[_PAGE] = self

    @staticmethod
    def _own(query: Mapping[str, str]) -> dict[str, str]:
        return {k: v for k, v in query.items() if k not in GLOBAL}

    def add(self, *params: Param) -> None:
        """Declare ``params``: when reading, put the address's values into the view (notices for bad ones)."""
        for param in params:
            self.params[param.name] = param
            if param.name in self._unknown:
                self._unknown.remove(param.name)
            if not self.reading:
                continue
            if param.name in self.address:
                text = self.address[param.name]
                try:
                    value = param.parse(text)
                except BadParam as err:
                    self.notice(param.name, text, str(err))
                    continue
                param.put(value)
            elif self.history:
                param.put(param.default)

    def notice(self, name: str, text: str, why: str) -> None:
        """One short notice about a parameter that was left out, its value shown as plain text."""
        self._left_out = True
        self.notices.info(f"The link's `{_plain(name)}={_plain(text)}` was left out: {escaped(why)}",
                          icon=":material/link_off:")

    def query(self, *, private: bool = True) -> dict[str, str]:
        """The address of the view now: the global parameters (``private``: with the ``w`` token), then
        this page's values that are not their default."""
        out = {k: self.address[k] for k in GLOBAL if k in self.address and (private or k not in PRIVATE)}
        for param in self.params.values():
            if not param.written():
                continue
            value = param.get()
            if value != param.default and value is not None:
                out[param.name] = param.show(value)
        return out

    def write(self) -> None:
        """Put the view into the address (one history entry if it changed) and draw "Copy link to this view"."""
        if self.reading:
            for name in self._unknown:
                self.notice(name, self.address[name], f"{self.page} has no such parameter")
            self._unknown = []
        # A link just opened, all of it used, stays as it is even where it names a default: writing
        # the same view again would push a second history entry, and Back would return to the link
        # instead of the page it was followed from. One with a part left out is written, without it.
        self._write(keep=self.reading and not self.history and not self._left_out)
        with st.sidebar:
            copy_link(self.link())

    def _write(self, keep: bool = False) -> None:
        current = {k: st.query_params[k] for k in st.query_params}
        wanted = current if keep else self.query()
        written = st.session_state.setdefault(_WRITTEN, [])
        if written and written[-1][0] != self.page:
            written.clear()  # another page's: a link back to this page's earlier address is read again
        written.append((self.page, _encoded(self._own(wanted))))
        del written[:-_RECENT]
        if wanted != current:
            st.query_params.from_dict(wanted)
        self.address = {**wanted}

    def link(self) -> str:
        """This view's address for someone else: the page's URL and its parameters, without ``w``."""
        query = urlencode(self.query(private=False))
        page = urlsplit(st.context.url or "")
        return urlunsplit((page.scheme, page.netloc, page.path or ("/" if page.netloc else ""), query, ""))


def refresh() -> None:
    """Write the current page's view into the address again: for a fragment, whose rerun does not run the page."""
    link = st.session_state.get(_PAGE)
    if isinstance(link, ViewLink):
        link.address = {k: st.query_params[k] for k in st.query_params}
        link._write()


def copy_link(url: str) -> None:
    """The "Copy link to this view" control: the address in a code box, whose button copies it. On a
    shared server it says what the link does not carry (the workspace); on one's own, only what it does."""
    from ui.workspace_views import shared_mode  # (light: no torch)

    private = (" (not your workspace: a run of yours opens only for you, unless your teacher publishes it)"
               if shared_mode() else "")
    with st.popover("Copy link to this view", icon=":material/link:", width="stretch"):
        st.caption(f"Opens this page as you see it now{private}. Copy it with the button at its right.")
        st.code(url, language=None, wrap_lines=True)


def _plain(text: str) -> str:
    """A value as it can sit in a code span: no backticks or line breaks, at most 40 characters."""
    flat = re.sub(r"[`\r\n\t]", " ", text)
    return flat if len(flat) <= 40 else f"{flat[:40]}… ({len(text):,} characters)"


def _encoded(query: Mapping[str, str]) -> str:
    return urlencode(sorted(query.items()))


# -- parameters of the usual kinds -------------------------------------------------------------------


def state_getter(key: str, default: object, options: Sequence | None = None) -> Callable[[], object]:
    """The value of the widget ``key`` (or its kept copy, when the last run did not draw it); ``default``
    when it is not among ``options``."""
    def get() -> object:
        value = state.current(key, default)
        return value if options is None or value in options else default
    return get


def state_putter(key: str) -> Callable[[object], None]:
    return lambda value: state.put(key, value)


def choice(name: str, key: str, values: Mapping[str, object], default: str, *, what: str = "") -> Param:
    """A parameter whose address text is one of ``values`` (text → the widget's value), e.g. a tab."""
    shown = {v: k for k, v in values.items()}

    def parse(text: str) -> object:
        if text not in values:
            raise BadParam(f"there is no such {what or name}", f"use one of {', '.join(values)}")
        return values[text]

    return Param(name, state_getter(key, values[default], list(values.values())), state_putter(key), parse,
                 lambda value: shown[value], values[default])


def number(name: str, key: str, count: int, default: object, *, what: str,
           extra: Mapping[str, object] | None = None, value: Callable[[int], object] = lambda i: i,
           said: str | None = None) -> Param:
    """A parameter counted from 1 in the address (a layer, a head): the widget's value for ``i``
    (counted from 0) is ``value(i)``; ``extra`` names other values (``{"avg": …}``: the average of the heads).
    A bad value's notice says "this model has ``said``" (default: ``count`` and ``what``, plural past one; for a layer,
    :func:`attention_core.map_names.layers_said`)."""
    names = {str(i + 1): value(i) for i in range(count)} | dict(extra or {})
    hint = f"use 1–{count}" + "".join(f" or {k}" for k in extra or {})
    said = said or f"{count} {what}" + ("s" if count != 1 else "")

    def parse(text: str) -> object:
        if text.strip().lower() not in names:
            raise BadParam(f"this model has {said}", hint)
        return names[text.strip().lower()]

    shown = {v: k for k, v in names.items()}
    return Param(name, state_getter(key, default, list(names.values())), state_putter(key), parse,
                 lambda v: shown[v], default)


def tabs(key: str, labels: Sequence[str]) -> Sequence:
    """``st.tabs`` whose choice is a widget value (``key``): kept across pages, named in the address by
    a :func:`choice` of the same key. A switch reruns the page, so the address follows it."""
    state.kept_in_state(key, labels[0], labels)
    return st.tabs(list(labels), key=key, on_change="rerun")


def check_text(text: str) -> str:
    """A sentence from the address: plain text of at most :data:`MAX_TEXT` characters, else :class:`BadParam`."""
    if len(text) > MAX_TEXT:
        raise BadParam(f"it is {len(text):,} characters long", f"the box takes at most {MAX_TEXT}")
    if _MARKUP.search(text):
        raise BadParam("it holds markup or control characters", "a sentence is plain words")
    if not text.strip():
        raise BadParam("it is empty", "give the words, e.g. sentence=the+movie+was+great")
    return text


def text(name: str, key: str, default: str) -> Param:
    """A sentence (the page's text box, drawn with ``ui.state.kept`` or ``kept_in_state``)."""
    return Param(name, state_getter(key, default), state_putter(key), check_text, str, default)


def flag(name: str, key: str) -> Param:
    """An on/off switch: ``name=1`` when on."""
    def parse(value: str) -> bool:
        if value.strip().lower() not in ("1", "0", "true", "false", "on", "off"):
            raise BadParam("it is an on/off switch", f"use {name}=1 or leave it out")
        return value.strip().lower() in ("1", "true", "on")
    return Param(name, lambda: bool(state.current(key, False)), state_putter(key), parse, lambda _: "1", False)


def run() -> Param:
    """The model picker's run (shared by the pages): an own run's name, ``published:<name>``, absent
    for the bundled model. A run that is not there (deleted, or another workspace's private run)
    leaves the bundled model with a notice."""
    from ui.preview import BUNDLED_NAME

    def parse(value: str) -> str:
        from ui import common

        try:
            return common.run_from_link(value)
        except ValueError as err:  # attention_core's RunError: what is wrong — how to fix it
            raise BadParam(str(err)) from None

    def show(choice: object) -> str:
        from ui import common

        return common.run_link_name(str(choice)) or ""

    return Param("run", lambda: st.session_state.get("active_run", BUNDLED_NAME),
                 lambda choice: st.session_state.__setitem__("active_run", choice), parse, show, BUNDLED_NAME)
