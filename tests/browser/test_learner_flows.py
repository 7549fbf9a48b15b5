"""End to end in headless Chromium: the flows a learner takes, as a learner takes them.

Home → type a sentence → a heatmap appears; Train → upload small.csv → Start → the loss
chart updates → training ends → Inspect shows the layer × head grid. Screenshots go to
``$E2E_SCREENSHOTS`` when it is set (the README's pictures are made this way).
"""

from __future__ import annotations

import json
import re
import time
import zipfile
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from attention_core.presets import DEFAULT
from attention_core.text import tokenize
from tests.helpers.browser import E2E, SHOTS, app_server, browser_page, custom_without_patience, shot

ROOT = Path(__file__).resolve().parents[2]
ORPHAN_AFTER = 12  # the test server's: a job nobody asks after for that long stops itself (90 s in use)


# E2E, and the server fixture (conftest) with a short orphan time
pytestmark = [*E2E, pytest.mark.server_env(ATTENTION_PLAYGROUND_ORPHAN_AFTER=str(ORPHAN_AFTER))]


def test_home_sentence_to_heatmap(server):
    with browser_page() as page:
        page.goto(server)
        main = page.get_by_test_id("stMain")
        main.get_by_text("Prediction:").wait_for()
        # The first example's heatmap drawn (plotly.js loads after the page's text: typing before that
        # left the chart only the last figure to draw, and the in-place check below had nothing to count).
        main.locator("g.ytick text", has_text="food").first.wait_for()
        box = main.get_by_label("Your sentence")
        box.fill("the service was slow and the staff rude")
        box.press("Enter")
        main.locator("g.ytick text", has_text="rude").first.wait_for()  # the heatmap's rows are the new tokens
        assert main.locator(".js-plotly-plot").count() >= 2
        # The home page's charts are live charts drawn by the plotly.js the app serves (no st.plotly_chart
        # on the page brings Streamlit's), and the new sentence was drawn into the same chart.
        assert page.evaluate("() => !!document.querySelector('script[src$=\"/plotly.min.js\"]')")
        heatmap = main.locator(".live-plotly-chart", has=page.locator("g.ytick text", has_text="rude"))
        assert int(heatmap.get_attribute("data-updates")) >= 2
        shot(page, "home")
        # A narrower column (as when the sidebar is shown) without a window resize: the chart follows it.
        page.evaluate("() => { document.querySelector('[data-testid=stMainBlockContainer]').style.maxWidth = '700px' }")
        page.wait_for_function("c => Math.abs(c.querySelector('.main-svg').getBoundingClientRect().width - c.offsetWidth) < 2",
                               arg=heatmap.element_handle(), timeout=10_000)
        assert heatmap.evaluate("c => c.offsetWidth") < 700


def test_train_upload_start_watch_finish_then_inspect(server):
    with browser_page() as page:
        page.goto(f"{server}/Train")
        main = page.get_by_test_id("stMain")
        main.get_by_text("Upload a CSV").click()
        main.get_by_text("CSV with a text column").wait_for()  # the uploader is there after the rerun
        # the CSV's box: the runs list's zip box may still be on the page from the run before
        page.locator("[data-testid=stFileUploaderDropzoneInput][accept*='.csv']").set_input_files(str(ROOT / "data" / "small.csv"))
        main.get_by_text("small.csv: utf-8").wait_for()  # the report is about the upload now
        # 400 epochs, all of them: the default preset's patience would end it after a few (and before the Pause below)
        custom_without_patience(page, 400)
        main.get_by_role("button", name="Start training").click()
        progress = main.get_by_text(re.compile(r"epoch \d+/400"))
        progress.first.wait_for()
        first = progress.first.inner_text()
        curves = main.locator(".live-plotly-chart").first
        curves.get_by_text("loss", exact=True).wait_for()  # the live curves' subplot title
        # The live chart is updated in place: the same plotly graph, drawn again with new data.
        curves.evaluate("c => { c.__mark = 1 }")
        start = int(curves.get_attribute("data-updates"))
        page.wait_for_function(f"c => +c.dataset.updates >= {start + 3}", arg=curves.element_handle(), timeout=60_000)
        assert curves.evaluate("c => c.__mark") == 1
        shot(page, "train_live")
        page.wait_for_function(
            "t => !document.body.innerText.includes(t)", arg=first.split(" · ")[1], timeout=60_000
        )  # the progress line moved on: the page updates while training runs
        nav = page.get_by_test_id("stSidebarNav")  # switch pages in the same session: training goes on
        nav.get_by_role("link", name="Home").click()
        main.get_by_text("Prediction:").wait_for()
        nav.get_by_role("link", name="Train").click()
        main.get_by_text("small.csv: utf-8").wait_for()  # back on Train: still the uploaded data, not the default
        assert main.get_by_label("Epochs", exact=True).input_value() == "400"  # and the settings being trained with
        main.get_by_text(re.compile(r"epoch \d+/400")).first.wait_for()
        # Paused, and left for longer than a job waits for its page: the other pages keep it alive,
        # show it in the sidebar and link back to it.
        main.get_by_role("button", name="Pause").click()
        main.get_by_text(re.compile(r"paused · epoch \d+/400")).first.wait_for()
        nav.get_by_role("link", name="Self attention").click()
        main.get_by_role("heading", name=re.compile("Self-attention step by step")).wait_for()
        sidebar = page.get_by_test_id("stSidebar")
        status = sidebar.get_by_text(re.compile(r"Training “.+”: paused · epoch \d+/400"))
        status.wait_for()
        page.wait_for_timeout((ORPHAN_AFTER + 4) * 1000)  # away for longer than ORPHAN_AFTER: the point of this step
        shot(page, "background")
        assert status.is_visible() and not sidebar.get_by_text("stopped").count()
        sidebar.get_by_role("link", name="Watch on Train").click()
        main.get_by_role("button", name="Resume").click()
        main.get_by_text(re.compile("Training (finished|stopped)")).wait_for(timeout=180_000)
        assert main.get_by_text("Training finished: all 400 epochs.").count() == 1  # not stopped as orphaned
        main.get_by_text("Validation accuracy", exact=True).wait_for()
        if SHOTS:  # the README's picture of the results: scrolled to them
            main.get_by_text("3 · Results").scroll_into_view_if_needed()
        shot(page, "train_done")
        with page.expect_download() as download:  # the run's zip is made when the button is clicked
            main.get_by_role("button", name=re.compile("Download run")).click()
        with zipfile.ZipFile(download.value.path()) as z:
            assert {"model.safetensors", "config.json", "history.json"} <= set(z.namelist())
            trained = json.loads(z.read("config.json"))["train"]
            model = json.loads(z.read("config.json"))["model"]
        # Trained with what the form showed: the epochs typed, patience off, the default preset's values for the
        # rest (a form widget given its value through the Session State was once submitted with its minimum instead).
        assert (trained["epochs"], trained["patience"]) == (400, None)
        assert (trained["lr"], trained["val_fraction"]) == (DEFAULT.train.lr, DEFAULT.train.val_fraction)
        assert (model["pooling"], model["local_conv"]) == (DEFAULT.model.pooling, DEFAULT.model.local_conv)
        page.goto(f"{server}/Inspect")
        main = page.get_by_test_id("stMain")
        main.get_by_text("L1 · H1").first.wait_for()
        shot(page, "inspect")
        # The time-lapse replays the inspected sentence through the weights the run kept while training.
        main.get_by_role("tab", name="Time-lapse").click()
        main.get_by_text("at every kept epoch").wait_for()
        assert main.locator(".js-plotly-plot", has_text="▶ Play").locator(".gtitle").filter(
            has_text=re.compile(r"Epoch \d+ · prediction:")).count() == 1


def test_train_on_a_word_vector_file_of_your_own(server, tmp_path):
    (tmp_path / "short-row.txt").write_text("good 0.1 0.2 0.3\nbad 0.4\n")
    own = tmp_path / "own-3d.txt"
    own.write_text("".join(f"{w} {i / 10} {-i / 10} {i / 20}\n" for i, w in enumerate(["the", "good", "bad", "food"])))
    with browser_page() as page:
        page.goto(f"{server}/Train")
        main = page.get_by_test_id("stMain")
        main.get_by_text("My own word2vec / GloVe file").click()
        box = main.get_by_label("Path of the word-vector file", exact=True)
        box.fill(str(tmp_path / "short-row.txt"))
        box.press("Enter")
        main.get_by_text("These word vectors cannot be used: line 2 of short-row.txt has 1 number").wait_for()
        box.fill(str(own))
        box.press("Enter")
        main.get_by_text("own-3d.txt: 4 words × 3 numbers each.").wait_for()
        # Four words know almost nothing of the 3,000 sentences: nothing to learn from, refused.
        main.get_by_text("holds almost no words that the word vectors know").wait_for()
        # The 50 most frequent words read a quarter of it: the data report shows it, with a warning.
        counts = Counter(t for text in pd.read_csv(ROOT / "data" / "uci_sentiment_sentences.csv")["text"] for t in tokenize(text))
        fifty = tmp_path / "own-50.txt"
        fifty.write_text("".join(f"{w} {i / 10} {-i / 10} {i / 20}\n" for i, (w, _) in enumerate(counts.most_common(50))))
        box.fill(str(fifty))
        box.press("Enter")
        main.get_by_text("own-50.txt: 50 words × 3 numbers each.").wait_for()
        unknown = main.get_by_test_id("stMetric").filter(has_text="Unknown words").get_by_test_id("stMetricValue")
        assert float(unknown.inner_text().rstrip("%")) > 40
        main.get_by_text("the word vectors know only").wait_for()
        assert not main.get_by_test_id("stException").count()


COLD_STARTS = 3  # a fresh server each: the race is there only while a server imports on first use


def test_home_on_a_cold_server_opened_twice_at_once_shows_no_traceback(tmp_path):
    """Two visitors open Home on a server that has just started, and the first reloads at once.

    Each page run of a cold server imports pandas on first use (Streamlit does, for a chart's
    data), while plotly reads ``sys.modules["pandas"]`` without importing it: a second session
    building its figures meanwhile got the half-imported module (``AttributeError: partially
    initialized module 'pandas' has no attribute 'Series'``) in place of its heatmap.
    """
    with browser_page() as first:
        for start in range(COLD_STARTS):
            with app_server(tmp_path / f"runs-{start}") as url:
                second = first.context.new_page()
                for page in (first, second):
                    page.goto(url, wait_until="commit")
                first.get_by_test_id("stMain").get_by_text("Prediction:").wait_for()  # its run is drawing the charts
                first.reload(wait_until="commit")
                for page in (first, second):
                    main = page.get_by_test_id("stMain")
                    heatmap = main.locator("g.ytick text", has_text="food").first
                    error = main.get_by_test_id("stException")
                    heatmap.or_(error).first.wait_for()
                    assert not error.count(), f"cold start {start + 1}: {error.first.inner_text()}"
                    assert heatmap.is_visible()
                second.close()


PAGES = ["Train", "Inspect", "Self_attention", "Cross_attention_and_masks", "Backpropagation", "Seed_experiment",
         "Faithfulness"]


@pytest.mark.parametrize("name", ["", *PAGES])
def test_every_page_opens_with_its_first_figure_and_fetches_nothing_from_outside(server, name):
    with browser_page() as page:
        outside = []  # the app runs offline: every request goes to its own server
        page.on("request", lambda r: outside.append(r.url) if not r.url.startswith((server, "data:", "blob:")) else None)
        page.goto(f"{server}/{name}")
        main = page.get_by_test_id("stMain")
        if name == "Seed_experiment":  # its figures are the experiment's: run it
            main.get_by_role("button", name="Train all three").click()
        main.locator(".js-plotly-plot").first.wait_for(timeout=120_000)
        assert not main.get_by_test_id("stException").count()
        page.wait_for_load_state("networkidle")
        assert not outside, outside
        shot(page, f"page_{name or 'home'}")


def test_stopping_the_server_mid_training_keeps_the_run(tmp_path):
    """The server goes down (SIGTERM) while a training runs: the training process stops and saves.

    The page is opened by its address on a fresh server, as by a learner reloading it after a
    restart: before any session had run app.py's router, Streamlit served pages/ the old way
    ("app" first in the sidebar, until someone opened the home page).
    """
    with app_server(tmp_path) as url, browser_page() as page:
        page.goto(f"{url}/Train")
        main = page.get_by_test_id("stMain")
        main.get_by_text("uci_sentiment_sentences.csv: utf-8").wait_for()
        nav = page.get_by_test_id("stSidebarNav")
        nav.get_by_role("link", name="Home").wait_for(timeout=20_000)
        assert not nav.get_by_role("link", name="app").count()
        assert page.url.endswith("/Train") and not page.get_by_role("dialog").count()  # no "page not found"
        box = main.get_by_label("Epochs", exact=True)
        box.fill("500")
        box.press("Tab")
        main.get_by_role("button", name="Start training").click()
        main.get_by_text(re.compile(r"running · epoch [3-9]/500")).first.wait_for(timeout=120_000)
    # app_server has stopped the server. The job sees its connection close and saves within a second;
    # if that signal were missed, the heartbeat timeout (90 s) still stops and saves it.
    deadline = time.monotonic() + 150
    while not list(tmp_path.glob("*/history.json")) and time.monotonic() < deadline:
        time.sleep(0.1)
    (saved,) = list(tmp_path.glob("*/history.json"))
    history = json.loads(saved.read_text())
    assert history["status"] == "stopped" and 2 <= len(history["epochs"]) < 500

