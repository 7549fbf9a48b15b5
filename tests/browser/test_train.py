"""End to end in headless Chromium, a learner's Train flow: train on small.csv, stop midway, read the
results and the runs list, rename the run (a bad name first), and open it on Home.

What AppTest cannot see: the page as the router serves it (a link to a page the router does not
know fails only here), and what the browser draws. Screenshots go to ``$E2E_SCREENSHOTS`` when set.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from tests.helpers.browser import CHROMIUM, E2E, app_server, browser_page, custom_without_patience, shot

pytestmark = E2E

EPOCHS = 300  # far more than the test waits for, patience off: it stops the training midway


def no_traceback(page) -> None:
    assert page.get_by_test_id("stException").count() == 0, page.get_by_test_id("stException").first.inner_text()


def runs_list(main) -> dict[str, dict[str, str]]:
    """The runs table as drawn: a grid on a canvas, whose cells Streamlit also writes into an accessible table."""
    table = main.locator("[data-testid=stDataFrame] table:has(th:text-is('kept model'))")
    table.wait_for(state="attached")
    header = [th.inner_text() for th in table.locator("th").all()]
    rows = [dict(zip(header, (td.inner_text() for td in tr.locator("td").all()), strict=True))
            for tr in table.locator("tbody tr").all()]
    return {r["run"]: r for r in rows}


def test_train_stop_midway_results_runs_list_rename_open_on_home(tmp_path):
    assert shutil.which(CHROMIUM) or Path(CHROMIUM).exists(), "chromium is not installed"
    runs = tmp_path / "runs"
    env = {"ATTENTION_PLAYGROUND_CACHE": str(tmp_path / "cache")}
    with app_server(runs, env=env) as url, browser_page() as page:
        page.goto(f"{url}/Train")
        main = page.get_by_test_id("stMain")
        main.get_by_text("small.csv (the seed").click()
        main.get_by_text("small.csv: utf-8").wait_for()
        custom_without_patience(page, EPOCHS)  # the default preset's patience could end it before the Stop
        main.get_by_role("button", name="Start training").click()
        main.get_by_text(re.compile(rf"running · epoch ([5-9]|\d\d+)/{EPOCHS}")).first.wait_for()
        main.get_by_role("button", name="Stop").click()

        done = main.get_by_text(re.compile(rf"Training stopped after \d+ of {EPOCHS} epochs\. Saved as run custom-small\."))
        done.wait_for(timeout=60_000)
        trained = int(re.search(r"after (\d+) of", done.inner_text())[1])
        assert 5 <= trained < EPOCHS
        bar = main.get_by_test_id("stProgress").get_by_role("progressbar")
        assert int(bar.get_attribute("aria-valuenow")) < 100  # where it stopped, not full
        kept = main.get_by_text(re.compile(rf"Kept model: epoch \d+ of {trained} \({EPOCHS} planned\)"))
        kept.scroll_into_view_if_needed()
        kept_epoch = int(re.search(r"epoch (\d+) of", kept.inner_text())[1])
        assert 1 <= kept_epoch <= trained
        assert main.get_by_text(re.compile(r"95% interval for this accuracy: \d+%–\d+% over \d+ validation rows")).count()
        accuracy = main.get_by_test_id("stMetric").filter(has_text="Validation accuracy") \
            .get_by_test_id("stMetricValue").inner_text()
        no_traceback(page)
        shot(page, "train_flow_results")

        # The runs list: the same accuracy, the kept epoch, how far the run went.
        main.get_by_role("heading", name="Runs").scroll_into_view_if_needed()
        row = runs_list(main)["custom-small"]
        assert (row["status"], row["epochs"], row["kept model"]) == ("stopped", f"{trained} of {EPOCHS}", f"epoch {kept_epoch}")
        assert row["val accuracy"] == accuracy  # one figure for the kept model, on the results and here

        rename_to = main.get_by_label("Rename to")
        rename_to.fill("../elsewhere")
        rename_to.press("Enter")
        main.get_by_role("button", name="Rename").click()
        main.get_by_text("Cannot rename 'custom-small': '../elsewhere' cannot name a run").wait_for()
        assert sorted(p.name for p in runs.iterdir() if not p.name.startswith(".")) == ["custom-small"]
        rename_to.fill("my-first-run")
        rename_to.press("Enter")
        main.get_by_role("button", name="Rename").click()
        main.get_by_text("Renamed 'custom-small' to 'my-first-run'.").wait_for()
        no_traceback(page)
        shot(page, "train_flow_runs")

        main.get_by_role("button", name="Open on Home").click()  # was: StreamlitPageNotFoundError
        main.get_by_text("Prediction:").or_(page.get_by_test_id("stException")).first.wait_for()
        no_traceback(page)
        home = urlsplit(page.url)  # the router's Home, at the root, its address naming the run opened
        assert home.path in ("", "/") and parse_qs(home.query) == {"run": ["my-first-run"]}
        sidebar = page.get_by_test_id("stSidebar")
        assert sidebar.get_by_role("combobox", name="Model").input_value() == "my-first-run"
        assert sidebar.get_by_text(re.compile(r"my-first-run · \d layers? × \d heads?")).count() == 1
        shot(page, "train_flow_home")


def test_a_csv_over_the_upload_limit_is_refused_with_the_reason_as_text(tmp_path):
    """The browser refuses a file over server.maxUploadSize itself; Streamlit wrote why only in a tooltip of the
    file's chip (its text visually hidden, 1 × 1 px): the Train page shows it as text under the chip."""
    big = tmp_path / "big.csv"
    row = b"a good film,1\n"
    big.write_bytes(b"text,label\n" + row * (26 * 1024 * 1024 // len(row)))  # 26 MB, over the 25 MB limit
    with app_server(tmp_path / "runs", env={"ATTENTION_PLAYGROUND_CACHE": str(tmp_path / "cache")}) as url, \
            browser_page() as page:
        page.goto(f"{url}/Train")
        main = page.get_by_test_id("stMain")
        main.get_by_text("Upload a CSV").click()
        main.get_by_text("CSV with a text column").wait_for()
        page.locator("[data-testid=stFileUploaderDropzoneInput][accept*='.csv']").set_input_files(str(big))
        reason = main.get_by_test_id("stFileChip").locator("[role=alert]")
        reason.wait_for()
        assert "File must be 25.0MB or smaller" in reason.inner_text()
        box, name = reason.bounding_box(), main.get_by_test_id("stFileChipName").bounding_box()
        assert box["width"] > 150 and box["height"] > 10, box  # a line of text one can read
        assert box["y"] >= name["y"] + name["height"]  # under the file's name, not on it
        no_traceback(page)
