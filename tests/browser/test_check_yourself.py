"""In headless Chromium: the Check yourself page asks, reveals with the model's numbers, scores, and its
"See why" link opens the view's page with the question's parameters in the address, in the same session."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

from tests.helpers.browser import E2E, browser_page, shot
from ui.preview import EXAMPLES

pytestmark = E2E


def test_answer_reveal_score_and_follow_the_link_to_the_view(server):
    with browser_page() as page:
        outside = []  # the app runs offline: every request goes to its own server
        page.on("request", lambda r: outside.append(r.url) if not r.url.startswith((server, "data:", "blob:")) else None)
        page.goto(f"{server}/Check_yourself")
        main = page.get_by_test_id("stMain")
        main.get_by_text("Question 1.").wait_for(timeout=120_000)
        check = main.get_by_role("button", name="Check")
        assert check.is_disabled()  # nothing chosen yet
        main.get_by_test_id("stRadioOption").first.click()
        check.click()
        verdict = main.get_by_test_id("stAlertContentSuccess").or_(main.get_by_test_id("stAlertContentError"))
        verdict.first.wait_for()
        assert re.fullmatch(r"(Right: .+|Not quite: the answer is .+)\.", verdict.first.inner_text().strip())
        assert main.get_by_test_id("stMetricValue").inner_text() in ("0 of 1", "1 of 1")
        shot(page, "check_yourself")
        link = main.get_by_role("link", name=re.compile("^See why on"))
        target = link.inner_text().split("See why on ")[-1].strip()
        address = urlsplit(link.get_attribute("href"))  # the view's parameters (the page then keeps its non-defaults alone)
        link.click()
        page.wait_for_url(re.compile(r"/(Inspect|Faithfulness)\b"))
        assert address.path.strip("/") == target
        (sentence,) = parse_qs(address.query)["sentence"]  # the sentence, or it without a word ("will removing…")
        assert sentence and set(sentence.split()) <= set(EXAMPLES[0].split())
        assert not main.get_by_test_id("stException").count()
        page.go_back()  # the question stays revealed: the session kept it
        main.get_by_role("button", name="Next question").wait_for()
        main.get_by_role("button", name="Next question").click()
        main.get_by_text("Question 2.").wait_for()
        page.wait_for_load_state("networkidle")
        assert not outside, outside
