"""End to end in headless Chromium: a link to any view (issue 17, ``ui/view_link.py``).

A widget changed, the address follows without a reload; Back and Forward bring the views back;
"Copy link to this view" (its copy button, read from the clipboard) opened in a second browser
context shows the same view. In shared mode, the link to a published run works for another
learner, the link to a private run shows them "private" and the bundled model, and no link
carries the author's workspace token.
"""

from __future__ import annotations

import re
import shutil
from urllib.parse import parse_qs, urlsplit

from tests.helpers.browser import E2E, ROOT, app_server, launch_chromium, open_as_new_learner, picker_options, shot
from ui.preview import PRETRAINED_NAME

pytestmark = E2E

BUNDLED = "Bundled: default model on UCI sentences"
PRETRAINED = PRETRAINED_NAME  # the pretrained encoder, listed after it
TIMEOUT = 60_000


def new_context_page(browser, url: str):
    """A page in a context of its own (another person's browser) that may use the clipboard."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=url)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    return page


def copy_link(page, picture: str | None = None) -> str:
    """Press "Copy link to this view" and its copy button; the link as the clipboard holds it
    (``picture``: a screenshot's name, with the box open, when ``$E2E_SCREENSHOTS`` is set)."""
    page.get_by_test_id("stSidebar").get_by_role("button", name=re.compile("Copy link to this view")).click()
    body = page.get_by_test_id("stPopoverBody")
    code = body.get_by_test_id("stCode")
    code.hover()
    body.get_by_role("button", name="Copy to clipboard").click()
    shown = code.inner_text().strip()
    deadline_ms, copied = 10_000, ""
    for _ in range(deadline_ms // 100):  # the clipboard is written asynchronously
        copied = page.evaluate("navigator.clipboard.readText()")
        if copied:
            break
        page.wait_for_timeout(100)
    assert copied == shown, (copied, shown)
    if picture:
        shot(page, picture)
    page.keyboard.press("Escape")
    return copied


def params(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


def test_the_address_follows_the_view_back_goes_back_and_a_copied_link_opens_it_elsewhere(tmp_path):
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=TIMEOUT)  # a busy machine: the page's first run takes seconds
    with app_server(tmp_path / "runs", timeout=120) as url, sync_playwright() as pw, launch_chromium(pw) as browser:
        page = new_context_page(browser, url)
        page.goto(f"{url}/?sentence=the+movie+was+great")
        main = page.get_by_test_id("stMain")
        expect(main.get_by_label("Your sentence")).to_have_value("the movie was great")
        expect(main.get_by_role("radio", name="Average of heads")).to_be_checked()

        main.get_by_text("Head 2", exact=True).click()
        page.wait_for_url(re.compile(r"[?&]head=2"))
        assert params(page.url) == {"sentence": "the movie was great", "head": "2"}
        main.get_by_text("Layer 2", exact=True).click()
        page.wait_for_url(re.compile(r"[?&]layer=2"))

        page.go_back()  # one step: the layer
        page.wait_for_url(lambda u: "layer=2" not in u)
        expect(main.get_by_role("radio", name="Layer 1")).to_be_checked()
        expect(main.get_by_role("radio", name="Head 2")).to_be_checked()
        page.go_back()  # and the head
        page.wait_for_url(lambda u: "head=2" not in u)
        expect(main.get_by_role("radio", name="Average of heads")).to_be_checked()
        expect(main.get_by_label("Your sentence")).to_have_value("the movie was great")
        page.go_forward()
        page.wait_for_url(re.compile(r"[?&]head=2"))
        expect(main.get_by_role("radio", name="Head 2")).to_be_checked()

        link = copy_link(page, "copy_link")
        assert params(link) == {"sentence": "the movie was great", "head": "2"}
        other = new_context_page(browser, url)  # someone else's browser
        other.goto(link)
        theirs = other.get_by_test_id("stMain")
        expect(theirs.get_by_label("Your sentence")).to_have_value("the movie was great")
        expect(theirs.get_by_role("radio", name="Head 2")).to_be_checked()

        # Inspect: a tab and a method, copied and opened elsewhere
        page.goto(f"{url}/Inspect?sentence=i+love+this+fantastic+product")
        main.get_by_role("tab", name="Rollout and saliency").click()
        page.wait_for_url(re.compile(r"[?&]tab=rollout"))
        page.go_back()
        page.wait_for_url(lambda u: "tab=rollout" not in u)
        expect(main.get_by_role("tab", name="Model view")).to_have_attribute("aria-selected", "true")
        page.go_forward()
        expect(main.get_by_role("tab", name="Rollout and saliency")).to_have_attribute("aria-selected", "true")
        link = copy_link(page)
        assert params(link) == {"sentence": "i love this fantastic product", "tab": "rollout"}
        other.goto(link)
        expect(theirs.get_by_role("tab", name="Rollout and saliency")).to_have_attribute("aria-selected", "true")
        expect(theirs.get_by_label("Your sentence")).to_have_value("i love this fantastic product")

        # Faithfulness: the knock-out block reruns alone (a fragment); the address follows it all the same
        page.goto(f"{url}/Faithfulness?tab=heads")
        expect(main.get_by_role("tab", name="Head knock-out")).to_have_attribute("aria-selected", "true")
        main.get_by_role("combobox", name=re.compile("Heads to switch off")).click()
        page.get_by_role("option", name="1.2", exact=True).click()
        page.wait_for_url(re.compile(r"[?&]off=1\.2"))
        page.keyboard.press("Escape")
        main.get_by_role("radiogroup", name="How").get_by_text("Make its attention uniform").click()
        page.wait_for_url(re.compile(r"[?&]mode=uniform"))
        assert params(page.url) == {"tab": "heads", "off": "1.2", "mode": "uniform"}
        assert not other.get_by_test_id("stException").count() and not page.get_by_test_id("stException").count()


def pick_model(page, name: str) -> None:
    """Choose ``name`` in the sidebar's model picker."""
    page.get_by_test_id("stSidebar").get_by_role("combobox", name="Model", exact=True).click()
    page.get_by_role("option", name=name, exact=True).click()


def test_shared_mode_links_to_published_and_private_runs(tmp_path):
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=TIMEOUT)  # a busy machine: the page's first run takes seconds
    from attention_core.workspaces import WorkspaceStore

    runs = tmp_path / "runs"
    store = WorkspaceStore(runs, shared=True)
    teacher, _ = store.for_token(None)
    teacher.runs_dir.mkdir(parents=True)
    shutil.copytree(ROOT / "data" / "default_run", teacher.runs_dir / "demo")
    published = store.publish(teacher, "demo").choice
    env = {"ATTENTION_PLAYGROUND_SHARED": "1", "ATTENTION_PLAYGROUND_CACHE": str(tmp_path / "cache")}

    with app_server(runs, env=env, timeout=120) as url, sync_playwright() as pw, launch_chromium(pw) as browser:
        alice, bob = new_context_page(browser, url), new_context_page(browser, url)
        alice_link = open_as_new_learner(alice, url)
        token = params(alice_link)["w"]
        own = store.for_token(token)[0].runs_dir
        own.mkdir(parents=True)
        shutil.copytree(ROOT / "data" / "default_run", own / "alice-run")
        alice.goto(alice_link)
        assert picker_options(alice) == [BUNDLED, PRETRAINED, "alice-run", published]

        pick_model(alice, published)
        alice.wait_for_url(re.compile(r"[?&]run=published%3Ademo"))
        link = copy_link(alice)
        assert params(link) == {"run": "published:demo"} and token not in link
        bob.goto(link)
        bob.wait_for_url(re.compile(r"[?&]w="))  # his own workspace, not Alice's
        assert params(bob.url)["w"] != token
        expect(bob.get_by_test_id("stSidebar").get_by_role("combobox", name="Model", exact=True)).to_have_value(published)
        expect(bob.get_by_test_id("stMain").locator("g.ytick text").first).to_be_attached()

        pick_model(alice, "alice-run")
        alice.wait_for_url(re.compile(r"[?&]run=alice-run"))
        link = copy_link(alice)
        assert params(link) == {"run": "alice-run"} and token not in link
        bob.goto(link)
        bob.get_by_text(re.compile(r"no run named 'alice-run' in this workspace")).wait_for()  # as if it did not exist
        expect(bob.get_by_test_id("stSidebar").get_by_role("combobox", name="Model", exact=True)).to_have_value(BUNDLED)
        assert "alice-run" not in picker_options(bob)
        alice.goto(f"{alice_link}&run=alice-run&head=3")  # her own link: her own run
        expect(alice.get_by_test_id("stMain").get_by_role("radio", name="Head 3")).to_be_checked()
        expect(alice.get_by_test_id("stSidebar").get_by_role("combobox", name="Model", exact=True)).to_have_value("alice-run")
        for page in (alice, bob):
            assert not page.get_by_test_id("stException").count()
