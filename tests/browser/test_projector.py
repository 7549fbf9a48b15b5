"""Projector mode and ``?hide=`` in headless Chromium, measured in the page as the issue saw them at 1024 × 768:
the sidebar's share of the width, the charts' text size, labels cut short. Screenshots (``$E2E_SCREENSHOTS``):
the README's "Projector mode" pictures."""

from __future__ import annotations

import re
import time
import zipfile

import pytest

from tests.helpers.browser import E2E, ROOT, browser_page, settled, shot

pytestmark = E2E

# The smallest text of any chart shown on the page (plotly's SVG text; live charts sit in shadow roots). Charts
# in a tab not shown are left out: plotly.js does not lay out a hidden chart, so one updated while hidden
# (projector mode switched on in place) keeps its old text (see test_the_switch_turns_it_on_in_place).
CHART_FONT_MIN = """() => {
  const all = (root) => { const out = [...root.querySelectorAll('.js-plotly-plot text')];
    for (const el of root.querySelectorAll('*')) if (el.shadowRoot) out.push(...all(el.shadowRoot)); return out; };
  const shown = t => t.textContent.trim() && t.closest('.js-plotly-plot').checkVisibility();
  const sizes = all(document).filter(shown).map(t => parseFloat(getComputedStyle(t).fontSize));
  return sizes.length ? Math.min(...sizes) : null;
}"""
SIDEBAR_SHARE = """() => { const s = document.querySelector('[data-testid=stSidebar]');
  return s && s.checkVisibility() ? s.getBoundingClientRect().width / window.innerWidth : 0; }"""
# Whether an element's text is cut: wider than its box, or than the nearest box that hides overflow.
CUT = """el => {
  if (el.scrollWidth > el.clientWidth + 1) return true;
  const r = el.getBoundingClientRect();
  for (let a = el.parentElement; a; a = a.parentElement) {
    const o = getComputedStyle(a).overflowX;
    if (o === 'hidden' || o === 'clip') return r.right > a.getBoundingClientRect().right + 1;
  }
  return false;
}"""
SWITCHES = ["Residual + norm + feed-forward", "Freeze word vectors", "Freeze classifier head", "Class weights"]


# Charts on the page that plotly.js has not drawn yet (Streamlit's, and the live charts in their shadow roots), and
# elements still a placeholder (Streamlit's skeleton, while plotly.js loads): plotly.js loads after the page's text,
# and on a busy machine more than 1.5 s after the last element appeared.
UNDRAWN_CHARTS = """() => {
  const all = (root, sel) => { const out = [...root.querySelectorAll(sel)];
    for (const el of root.querySelectorAll('*')) if (el.shadowRoot) out.push(...all(el.shadowRoot, sel)); return out; };
  return all(document, '[data-testid=stPlotlyChart], .live-plotly-chart').filter(c => !c.querySelector('.main-svg')).length
    + document.querySelectorAll('[data-testid=stMain] [data-testid=stSkeleton]').length;  // (a chart not loaded yet)
}"""


def drawn(page, timeout: float = 90.0) -> None:
    """Wait until the page's script has finished, every chart on it is drawn and nothing new appeared for 1.5 s."""
    deadline = time.monotonic() + timeout
    last, quiet_since = -1, time.monotonic()
    while time.monotonic() < deadline:
        count = page.locator("[data-testid=stElementContainer], .js-plotly-plot").count()
        if count != last or page.get_by_test_id("stStatusWidget").is_visible() or page.evaluate(UNDRAWN_CHARTS):
            last, quiet_since = count, time.monotonic()
        elif time.monotonic() - quiet_since > 1.5:
            return
        time.sleep(0.25)
    raise TimeoutError(f"{page.url} was still drawing after {timeout} s")


def cut_labels(page) -> list[str]:
    """The labels the issue found cut at 1024 px that are cut on this page (Train's switches,
    Backpropagation's target label and loss)."""
    main = page.get_by_test_id("stMain")
    found = []
    for text in SWITCHES:
        label = main.get_by_text(text, exact=True)
        if label.count() and label.first.evaluate(CUT):
            found.append(text)
    for box in main.locator("[data-testid=stSelectbox] input").all():
        if box.evaluate(CUT):
            found.append(f"select: {box.input_value()}")
    for label in main.get_by_test_id("stMetricLabel").locator("p").all():
        if label.evaluate(CUT):
            found.append(label.inner_text())
    return found


@pytest.mark.parametrize("mode", ["", "?projector=1"], ids=["normal", "projector"])
def test_no_label_the_issue_named_is_cut_at_1024(server, mode):
    with browser_page(1024, 768) as page:
        page.goto(f"{server}/Train{mode}")
        main = page.get_by_test_id("stMain")
        main.get_by_text(SWITCHES[0], exact=True).wait_for(state="attached")
        drawn(page)
        assert main.get_by_text(SWITCHES[-1], exact=True).count() == 1
        assert cut_labels(page) == []
        page.goto(f"{server}/Backpropagation{mode}")
        main.get_by_test_id("stMetricLabel").first.wait_for()
        drawn(page)
        assert main.locator("[data-testid=stSelectbox] input").first.input_value() == "negative"
        assert cut_labels(page) == []
        page.goto(f"{server}/Seed_experiment{mode}")
        button = main.get_by_role("button", name="Train all three")
        button.wait_for()
        drawn(page)
        assert not button.locator("p").first.evaluate(CUT)  # was "Train all thr…" beside Stop at 1024 px


def test_projector_mode_at_1024_and_1920(server):
    with browser_page(1024, 768) as page:
        page.goto(server)
        page.get_by_test_id("stMain").get_by_text("Prediction:").first.wait_for()
        drawn(page)
        normal_font = page.evaluate(CHART_FONT_MIN)
        assert normal_font is not None and normal_font <= 12  # what the issue saw
        assert page.evaluate(SIDEBAR_SHARE) > 0.25

        page.goto(f"{server}/?projector=1")
        page.wait_for_url(re.compile(r"[?&]projector=1"))
        drawn(page)
        assert page.evaluate(CHART_FONT_MIN) >= 15
        assert page.evaluate(SIDEBAR_SHARE) == 0  # closed: the page gets the whole width
        text = page.get_by_test_id("stMain").locator("p").first
        assert text.evaluate("p => parseFloat(getComputedStyle(p).fontSize)") >= 18  # Streamlit: 14 px
        page.get_by_test_id("stMain").get_by_role("heading", name="Attention", exact=True).evaluate("h => h.scrollIntoView()")
        shot(page, "projector_home_1024")  # the heatmap, as a room sees it

        # Another page from the sidebar: the mode goes along in the address.
        page.get_by_test_id("stExpandSidebarButton").click()
        page.get_by_test_id("stSidebarNav").get_by_text("Inspect", exact=True).click()
        page.wait_for_url(re.compile(r"/Inspect\?(.*&)?projector=1"))
        page.get_by_test_id("stMain").get_by_text("Prediction:").first.wait_for()
        drawn(page)
        assert page.evaluate(CHART_FONT_MIN) >= 15
        assert page.get_by_test_id("stSidebar").get_by_role("switch", name="Projector mode").is_checked()
        sidebar = page.get_by_test_id("stSidebar")
        sidebar.hover()
        page.get_by_test_id("stSidebarCollapseButton").click()
        page.wait_for_function(f"() => ({SIDEBAR_SHARE})() === 0")  # closed again, for the picture
        page.get_by_test_id("stMain").get_by_role("tab", name="Model view").evaluate("t => t.scrollIntoView()")
        shot(page, "projector_inspect_1024")

        # Switched off from the sidebar: the address and the charts follow.
        page.get_by_test_id("stExpandSidebarButton").click()
        page.get_by_test_id("stSidebar").get_by_text("Projector mode", exact=True).click()
        page.wait_for_url(lambda url: "projector=" not in url)
        drawn(page)
        assert page.evaluate(CHART_FONT_MIN) <= 12

    with browser_page(1920, 1080) as page:
        page.goto(f"{server}/Backpropagation?projector=1")
        page.wait_for_url(re.compile(r"[?&]projector=1"))
        page.get_by_test_id("stMetricLabel").first.wait_for()
        drawn(page)
        assert page.evaluate(CHART_FONT_MIN) >= 15
        assert cut_labels(page) == []
        shot(page, "projector_backpropagation_1920")


def test_hide_leaves_out_what_it_names(server):
    with browser_page(1024, 768) as page:
        page.goto(f"{server}/Train?hide=sidebar,captions,advanced")
        main = page.get_by_test_id("stMain")
        epochs = main.get_by_label("Epochs", exact=True)
        epochs.wait_for()
        drawn(page)
        assert not page.get_by_test_id("stSidebar").is_visible()
        assert not page.get_by_test_id("stExpandSidebarButton").is_visible()
        assert main.get_by_label("Layers", exact=True).count() == 1 and not main.get_by_label("Layers", exact=True).is_visible()
        assert not main.get_by_text(SWITCHES[0], exact=True).is_visible()
        assert main.get_by_test_id("stCaptionContainer").count() > 0
        assert not any(c.is_visible() for c in main.get_by_test_id("stCaptionContainer").all())
        assert epochs.is_visible() and main.get_by_role("button", name="Start training").is_visible()
        main.get_by_role("heading", name="2 · Train").evaluate("h => h.scrollIntoView()")
        shot(page, "projector_hide_train_1024")  # the form without its advanced rows

        page.goto(f"{server}/Train?hide=sidebar,bogus")
        notice = main.get_by_test_id("stAlert").filter(has_text="hide=")
        notice.wait_for()
        assert "bogus" in notice.inner_text()
        main.get_by_label("Layers", exact=True).wait_for(state="visible")  # only what it names is hidden
        drawn(page)
        assert not page.get_by_test_id("stSidebar").is_visible()
        assert any(c.is_visible() for c in main.get_by_test_id("stCaptionContainer").all())


def test_the_switch_turns_it_on_in_place(server):
    with browser_page(1024, 768) as page:
        page.goto(f"{server}/Inspect")
        page.get_by_test_id("stMain").get_by_text("Prediction:").first.wait_for()
        drawn(page)
        assert page.evaluate(SIDEBAR_SHARE) > 0.25 and page.evaluate(CHART_FONT_MIN) <= 12
        page.get_by_test_id("stSidebar").get_by_text("Projector mode", exact=True).click()
        page.wait_for_url(re.compile(r"/Inspect\?(.*&)?projector=1"))  # a link to give the room
        drawn(page)
        assert page.evaluate(CHART_FONT_MIN) >= 15
        assert page.evaluate(SIDEBAR_SHARE) == 0  # the sidebar closes on the way
        # Known gap (README, "Projector mode"): a chart in a tab not shown when the mode is switched on in place may
        # keep its old text once its tab is opened; a reload draws it in projector style. Not asserted here.


# Every problem of layout on the page shown, as text: in each chart drawn (plotly's SVG text, live charts' in shadow
# roots), two texts whose boxes (turned with the text) overlap by more than 2 px, and a text reaching out of its chart; a formula
# or a field's text cut by a box it cannot be scrolled in; a table (HTML, or a dataframe's grid) wider than its box.
LAYOUT_PROBLEMS = """() => {
  const all = (root, sel) => { const out = [...root.querySelectorAll(sel)];
    for (const el of root.querySelectorAll('*')) if (el.shadowRoot) out.push(...all(el.shadowRoot, sel)); return out; };
  const seen = el => el.checkVisibility({opacityProperty: true, visibilityProperty: true});
  const say = t => JSON.stringify(t.textContent.trim().slice(0, 40));
  // A text's box on the screen as four corners: turned with the text (tick labels at an angle)
  const corners = t => { const b = t.getBBox(), m = t.getScreenCTM();
    return [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]]
      .map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]); };
  // How far two such boxes overlap: the least depth along the sides' normals (0 if apart)
  const overlap = (p, q) => { let depth = Infinity;
    for (const poly of [p, q]) for (let i = 0; i < 4; i++) {
      const [x1, y1] = poly[i], [x2, y2] = poly[(i + 1) % 4], len = Math.hypot(x2 - x1, y2 - y1) || 1;
      const n = [(y1 - y2) / len, (x2 - x1) / len], along = pts => pts.map(([x, y]) => x * n[0] + y * n[1]);
      const a = along(p), b = along(q);
      depth = Math.min(depth, Math.min(Math.max(...a), Math.max(...b)) - Math.max(Math.min(...a), Math.min(...b)));
    }
    return Math.max(depth, 0); };
  const problems = [];
  all(document, '.js-plotly-plot').filter(seen).forEach((chart, i) => {
    const box = chart.getBoundingClientRect();
    const title = chart.querySelector('.gtitle, .g-gtitle text')?.textContent.trim().slice(0, 30);
    const name = `chart ${i + 1}${title ? ` (${title})` : ''}`;
    const texts = [...chart.querySelectorAll('text')].filter(t => t.textContent.trim() && seen(t))
      .map(t => [t, t.getBoundingClientRect(), corners(t)]).filter(([, r]) => r.width > 0 && r.height > 0);
    for (const [t, r] of texts)
      if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1)
        problems.push(`${name}: ${say(t)} out of the chart`);
    for (let a = 0; a < texts.length; a++) for (let b = a + 1; b < texts.length; b++)
      if (overlap(texts[a][2], texts[b][2]) > 2) problems.push(`${name}: ${say(texts[a][0])} over ${say(texts[b][0])}`);
  });
  // Cut: reaching past the nearest box that hides overflow (before one that scrolls), or past the main area
  const cut = el => {
    const r = el.getBoundingClientRect();
    for (let a = el.parentElement; a; a = a.parentElement) {
      const edge = a.getBoundingClientRect();
      if (a.dataset.testid === 'stMain') return r.right > edge.right + 1;
      const o = getComputedStyle(a).overflowX;
      if (o === 'auto' || o === 'scroll') return false;
      if (o === 'hidden' || o === 'clip') return r.right > edge.right + 1 || r.left < edge.left - 1;
    }
    return false;
  };
  const main = document.querySelector('[data-testid=stMain]');
  for (const k of main.querySelectorAll('.katex')) if (seen(k) && cut(k)) problems.push(`formula cut: ${say(k)}`);
  for (const f of main.querySelectorAll('input[type=text], input:not([type]), textarea'))
    if (seen(f) && f.value && f.scrollWidth > f.clientWidth + 1) problems.push(`field cut: ${JSON.stringify(f.value)}`);
  for (const c of main.querySelectorAll('td, th')) if (seen(c) && (c.scrollWidth > c.clientWidth + 1 || cut(c)))
    problems.push(`table cell cut: ${say(c)}`);
  for (const g of main.querySelectorAll('[data-testid=stDataFrame] .dvn-scroller'))
    if (seen(g) && g.scrollWidth > g.clientWidth + 1)
      problems.push(`dataframe wider than its box: ${say(g.closest('[data-testid=stDataFrame]'))}`);
  // Streamlit's top bar (fixed) over the first text of the page
  const bar = document.querySelector('[data-testid=stHeader]');
  const first = [...main.querySelectorAll('[data-testid=stElementContainer]')].find(e => seen(e) && e.offsetHeight > 0);
  if (bar && first && seen(bar) && first.getBoundingClientRect().top < bar.getBoundingClientRect().bottom - 1
      && main.querySelector('[data-testid=stMainBlockContainer]').getBoundingClientRect().top > -1)
    problems.push(`under the top bar: ${say(first)}`);
  return problems;
}"""
PAGES = {  # page → text to wait for
    "Train": "Upload a CSV", "": "Prediction:", "Inspect": "Prediction:", "Self_attention": "Query token",
    "Cross_attention_and_masks": "Cross-attention and masks", "Backpropagation": "Target label y", "Seed_experiment": "Train all three",
    "Faithfulness": "Your sentence", "Check_yourself": "Your sentence",
}


def layout_problems(page, where: str) -> list[str]:
    settled(page)
    drawn(page)
    return [f"{where}: {p}" for p in page.evaluate(LAYOUT_PROBLEMS)]


def every_tab(page, where: str) -> list[str]:
    """The layout problems of the page, each of its tabs opened in turn."""
    main = page.get_by_test_id("stMain")
    settled(page)
    drawn(page)
    tabs = main.get_by_role("tab")
    problems = [] if tabs.count() else layout_problems(page, where)
    for i in range(tabs.count()):
        tab = tabs.nth(i)
        if tab.get_attribute("aria-selected") != "true":
            tab.click()
            main.get_by_role("tab", name=tab.inner_text(), exact=True).and_(page.locator("[aria-selected=true]")).wait_for()
        name = f"{where} › {tab.inner_text()}"
        if name == "Faithfulness › The whole run":  # the report, on a few sentences
            box = main.get_by_role("spinbutton", name=re.compile(r"Validation sentences"))
            box.fill("20")
            box.press("Tab")
            drawn(page)
            main.get_by_role("button", name="Run the report").click()
            main.get_by_text("Each head switched off alone").wait_for(timeout=180_000)
        problems += layout_problems(page, name)
        shot(page, f"layout_{where.lower().replace(' ', '_') or 'home'}_{i}")
    return problems


def test_no_chart_text_overlaps_and_nothing_is_cut_in_projector_mode_at_1024(server, tmp_path):
    run_zip = tmp_path / "demo.zip"
    with zipfile.ZipFile(run_zip, "w") as z:  # a saved run, for the Train page's runs table
        for f in (ROOT / "data" / "default_run").iterdir():
            z.write(f, f.name)
    problems = []
    with browser_page(1024, 768) as page:
        main = page.get_by_test_id("stMain")
        for path, wait_for in PAGES.items():
            page.goto(f"{server}/{path}?projector=1&hide=bogus")  # (the notice a name it does not know gives)
            main.get_by_text(wait_for).filter(visible=True).first.wait_for()
            if path == "Train":
                page.locator("[data-testid=stFileUploaderDropzoneInput][accept*='.zip']").set_input_files(str(run_zip))
                main.get_by_text("Uploaded run 'demo'").wait_for()
            problems += every_tab(page, path.replace("_", " ") or "Home")
    assert not problems, "\n".join(["", *problems])


def test_inspects_pooling_strip_of_a_long_sentence_is_readable_at_normal_width(server):
    sentence = "the staff were friendly but the food arrived cold and the room was noisy"  # 14 words
    with browser_page(1280, 800) as page:
        page.goto(f"{server}/Inspect?sentence={sentence.replace(' ', '+')}")
        page.get_by_test_id("stMain").get_by_text("Prediction:").first.wait_for()
        problems = layout_problems(page, "Inspect")  # Model view: the pooling strip of the grid
        for tab in ("Rollout and saliency", "Compare"):  # the pooling strip in half the page's width
            page.get_by_test_id("stMain").get_by_role("tab", name=tab).click()
            problems += layout_problems(page, f"Inspect › {tab}")
    assert not problems, "\n".join(["", *problems])
