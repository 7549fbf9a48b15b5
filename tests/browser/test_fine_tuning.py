"""End to end in headless Chromium, the pretrained encoder's flow (issue 28): pick all-MiniLM-L6-v2 on Home → its
untrained head said, its word pieces with [CLS] and [SEP] (hidden on request) → fine-tune it on the Train page for one
epoch within a time budget → the run opens on Inspect, named as fine-tuned from it. Screenshots go to
``$E2E_SCREENSHOTS`` when it is set."""

from __future__ import annotations

import re

from attention_core.presets import FINETUNE
from tests.helpers.browser import E2E, settled, shot
from ui.preview import PRETRAINED_NAME

pytestmark = E2E


def test_pick_the_pretrained_encoder_on_home_fine_tune_it_and_inspect_the_run(server):
    from tests.helpers.browser import browser_page

    with browser_page(width=1280, height=900) as page:
        page.set_default_timeout(120_000)
        page.goto(server)
        main, sidebar = page.get_by_test_id("stMain"), page.get_by_test_id("stSidebar")
        main.get_by_text("Prediction:").wait_for()
        sidebar.get_by_role("combobox", name="Model", exact=True).click()
        page.get_by_role("option", name=PRETRAINED_NAME).click()
        main.get_by_text("its classifier head is untrained, so the label and probabilities mean nothing yet").wait_for()
        heatmap = main.locator(".live-plotly-chart", has=page.locator("g.ytick text", has_text="[SEP]"))
        heatmap.first.wait_for()  # the map's rows: [CLS] … [SEP]
        assert main.get_by_text("[CLS]", exact=True).first.is_visible()  # a token chip
        shot(page, "pretrained_home")
        main.get_by_text("Hide [CLS] and [SEP]").click()
        main.get_by_text("[CLS] and [SEP] hidden").wait_for()
        heatmap.first.wait_for(state="detached")  # no map has a [SEP] row any more
        main.locator(".live-plotly-chart", has=page.locator("g.ytick text", has_text="good")).first.wait_for()

        page.get_by_test_id("stSidebarNav").get_by_role("link", name="Train").click()
        main.get_by_text("1 · Data").wait_for()
        main.get_by_test_id("stRadio").get_by_text(FINETUNE.label, exact=True).click()
        main.get_by_text("What trains").wait_for()
        for label, value in (("Epochs", "1"), ("Time budget (s, 0 = none)", "5"), ("Layers that train (of 6)", "1")):
            box = main.get_by_label(label, exact=True)
            box.fill(value)
            box.press("Tab")
        main.get_by_label("Run name", exact=True).fill("tuned")
        settled(page)
        main.get_by_role("button", name="Start training").click()
        main.get_by_text(re.compile(r"epoch 1/1")).first.wait_for()
        main.get_by_text(re.compile("Training (finished|reached its time budget)")).wait_for(timeout=300_000)
        main.get_by_text("Saved as run").first.wait_for()
        main.get_by_text("Validation accuracy", exact=True).wait_for()
        shot(page, "fine_tuned")

        page.get_by_test_id("stSidebarNav").get_by_role("link", name="Inspect").click()
        sidebar.get_by_text(re.compile(r"fine-tuned from all-MiniLM-L6-v2 \(top 1 of 6 layers\)")).wait_for()
        main.get_by_text("6 avg").first.wait_for()  # the 6 × 12 grid and its head averages
        assert not main.get_by_text("classifier head is untrained").count()
        shot(page, "fine_tuned_inspect")


def test_a_fine_tuned_run_over_the_csv_upload_limit_uploads_as_a_run(tmp_path):
    """A fine-tuned encoder's run zips to more than the 25 MB a CSV may have (server.maxUploadSize): its trained layers'
    weights and their snapshots. The run uploader has the run archive's own limit (run_folders.MAX_ZIP_BYTES); with
    the CSVs' limit the browser refused the file the app had just offered to download."""
    from attention_core import Trainer, dataset_from_lists, save_run
    from attention_core.data import MAX_FILE_BYTES
    from attention_core.presets import preset
    from attention_core.run_folders import run_to_zip
    from tests.helpers.browser import app_server, browser_page

    model_cfg, train_cfg = preset("finetune", epochs=2, max_tokens=16, batch_size=12)
    texts, labels = ["a great phone", "an awful phone", "great value", "awful value"] * 6, ["pos", "neg"] * 12
    run = Trainer(model_cfg, train_cfg, dataset_from_lists(texts, labels), None).run()
    archive = tmp_path / "tuned.zip"
    archive.write_bytes(run_to_zip(save_run(run, tmp_path / "made" / "tuned")))
    assert archive.stat().st_size > MAX_FILE_BYTES  # what made it a bug
    with app_server(tmp_path / "runs", env={"ATTENTION_PLAYGROUND_CACHE": str(tmp_path / "cache")}) as url, \
            browser_page() as page:
        page.set_default_timeout(120_000)
        page.goto(f"{url}/Train")
        main = page.get_by_test_id("stMain")
        main.get_by_text("Upload a run (.zip from 'Download run')").wait_for()
        page.locator("[data-testid=stFileUploaderDropzoneInput][accept*='.zip']").set_input_files(str(archive))
        main.get_by_text("Uploaded run 'tuned'.").wait_for()
        assert main.get_by_test_id("stFileChip").locator("[role=alert]").count() == 0  # no refusal on its chip
    assert (tmp_path / "runs" / "tuned" / "model.safetensors").is_file()
