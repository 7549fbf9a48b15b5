"""In headless Chromium, on a shared server: "Remember me on this browser" keeps the workspace token
in a cookie that the page's script writes, and a new tab without the link opens that workspace."""

from __future__ import annotations

import time

import pytest

from tests.helpers.browser import CHROMIUM_ARGS, E2E, chromium_executable

pytestmark = [*E2E, pytest.mark.server_env(ATTENTION_PLAYGROUND_SHARED="1")]  # the server fixture (conftest) in shared mode
COOKIE = "attention_playground_workspace"
BOX = "Remember me on this browser"


def token_of(page) -> str:
    """The token the app put into the tab's address (``?w=…``), once it has."""
    page.wait_for_url("**?w=*")
    return page.url.split("?w=")[1][:22]


def cookie(context) -> str | None:
    return next((c["value"] for c in context.cookies() if c["name"] == COOKIE), None)


def wait_for_cookie(context, page, wanted: str | None) -> str | None:
    deadline = time.monotonic() + 30
    while cookie(context) != wanted and time.monotonic() < deadline:
        page.wait_for_timeout(100)
    return cookie(context)


def new_tab(context, url: str):
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.goto(url)
    page.get_by_text(BOX).wait_for()
    return page


def test_remember_me_opens_the_workspace_in_a_new_tab_and_forgetting_gives_a_new_one(server):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_executable(), args=CHROMIUM_ARGS)
        try:
            context = browser.new_context()
            first = new_tab(context, server)
            token = token_of(first)
            assert token_of(new_tab(context, server)) != token  # not remembered: a new tab is a new workspace
            assert cookie(context) is None

            first.get_by_text(BOX).click()
            assert wait_for_cookie(context, first, token) == token
            sent = next(c for c in context.cookies() if c["name"] == COOKIE)
            assert sent["sameSite"] == "Strict" and sent["expires"] - time.time() > 29 * 86400

            second = new_tab(context, server)  # the bare address
            assert token_of(second) == token
            assert second.get_by_role("checkbox", name=BOX).is_checked()
            other = new_tab(context, f"{server}/?w={'B' * 22}")  # another workspace's link wins, and keeps the cookie
            assert token_of(other) == "B" * 22
            assert not other.get_by_role("checkbox", name=BOX).is_checked()
            other.wait_for_timeout(1000)
            assert cookie(context) == token

            second.get_by_text(BOX).click()  # forget
            assert wait_for_cookie(context, second, None) is None
            assert token_of(new_tab(context, server)) != token
        finally:
            browser.close()
