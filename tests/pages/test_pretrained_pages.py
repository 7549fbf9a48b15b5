"""The pretrained all-MiniLM-L6-v2 on every page (issue 28): in every model picker after the bundled model (absent,
without breaking anything, when its package is not installed), its untrained classifier head said wherever its
prediction shows, its word pieces shown as they are ([CLS], [SEP], ##) with BertViz's "Hide [CLS] and [SEP]", every
view of Inspect, Faithfulness and Check yourself working on it and on a run fine-tuned from it; the Train page's
fine-tuning preset."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from attention_core import Trainer, dataset_from_lists, save_run
from attention_core.errors import RunError
from attention_core.presets import FINETUNE, preset
from tests.helpers.apptest import array, chart, live_chart, page_job
from ui.common import BUNDLED_NAME, PRETRAINED_NAME

ROOT = Path(__file__).resolve().parents[2]
PAGES = {"app.py": "home_run", "pages/2_Inspect.py": "inspect_run", "pages/7_Faithfulness.py": "faith_run",
         "pages/8_Check_yourself.py": "quiz_run"}
UNTRAINED = "its classifier head is untrained"
TEXTS = ["a great phone", "an awful phone", "great value", "awful value", "i love it", "i hate it"] * 6
LABELS = ["pos", "neg", "pos", "neg", "pos", "neg"] * 6


def opened(page: str, choice: str = PRETRAINED_NAME) -> AppTest:
    """``page`` with ``choice`` picked in its sidebar's model picker."""
    at = AppTest.from_file(str(ROOT / page), default_timeout=240).run()
    at.selectbox(key=PAGES[page]).set_value(choice).run()
    assert not at.exception, at.exception
    return at


def texts(at: AppTest, kind: str) -> str:
    return " ".join(e.value for e in getattr(at, kind))


@pytest.fixture(scope="module")
def fine_tuned(emb):
    """A run fine-tuned from the pretrained encoder on a tiny data set (2 epochs, 3 time-lapse moments)."""
    model_cfg, train_cfg = preset("finetune", epochs=2, max_tokens=16, batch_size=12, probes=("a great phone",))
    return Trainer(model_cfg, train_cfg, dataset_from_lists(TEXTS, LABELS), emb).run()


@pytest.mark.parametrize("page", list(PAGES))
def test_every_model_picker_lists_it_after_the_bundled_model_and_says_its_head_is_untrained(runs_dir, page):
    at = opened(page)
    assert at.selectbox(key=PAGES[page]).options[:2] == [BUNDLED_NAME, PRETRAINED_NAME]
    assert UNTRAINED in texts(at, "info")
    assert "the classifier head is untrained" in texts(at, "caption")  # the sidebar's line about the model
    assert at.query_params["run"] == "minilm"  # its link


def test_without_its_package_the_choice_is_absent_and_its_link_says_why(runs_dir, monkeypatch):
    from attention_core import pretrained

    def missing():
        raise RunError("the bundled pretrained model (all-MiniLM-L6-v2) is not installed", "install it")

    monkeypatch.setattr(pretrained, "bundled_checkpoint", missing)
    at = AppTest.from_file(str(ROOT / "pages/2_Inspect.py"), default_timeout=240)
    at.query_params["run"] = "minilm"
    at.run()
    assert not at.exception and at.selectbox(key="inspect_run").options == [BUNDLED_NAME]
    assert "not installed" in texts(at, "warning") + texts(at, "info") + texts(at, "error")
    assert at.selectbox(key="inspect_run").value == BUNDLED_NAME


def test_a_link_opens_it_on_home(runs_dir):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=240)
    at.query_params["run"] = "minilm"
    at.run()
    assert not at.exception and at.selectbox(key="home_run").value == PRETRAINED_NAME


def test_home_shows_its_word_pieces_and_hides_cls_and_sep_on_request_rows_still_summing_to_one(runs_dir):
    at = opened("app.py")
    assert at.subheader[0].value.startswith("Prediction: class ")  # "class 1" or "class 2": a random head's
    chips = next(m.value for m in at.markdown if "-background[" in m.value)
    assert chips.startswith(r":gray-background[\[CLS\]]") and chips.endswith(r":gray-background[\[SEP\]]")
    shown = live_chart(at, "home_heatmap")["data"][0]
    assert shown["y"][0] == "[CLS]" and shown["y"][-1] == "[SEP]"
    at.toggle(key="home_hide_special").set_value(True).run()
    assert not at.exception
    hidden = live_chart(at, "home_heatmap")["data"][0]
    assert hidden["y"] == ["the", "food", "was", "not", "good", "at", "all"]
    np.testing.assert_allclose(array(hidden["z"]).sum(1), 1.0, atol=1e-6)
    assert "[CLS] and [SEP] hidden" in texts(at, "caption")
    assert "word pieces' vectors" in " ".join(m.value for m in at.markdown)  # "What am I looking at?": not GloVe
    bundled = opened("app.py", BUNDLED_NAME)  # a model without special tokens has no such switch
    assert "home_hide_special" not in [t.key for t in bundled.toggle]


def test_inspect_every_tab_works_and_says_true_things_about_it(runs_dir):
    at = opened("pages/2_Inspect.py")
    captions = texts(at, "caption")
    assert "GloVe" not in captions and "word vector" not in captions  # the input features are word pieces'
    assert "one row per word piece" in captions and "titled *layer.head*" in captions
    assert "no training here to replay" in texts(at, "info")  # the time-lapse
    assert "saliency bars explain a random head" in captions
    grid = chart(at, "inspect_grid")
    assert len(grid["layout"]["annotations"]) == 6 * 13
    at.toggle(key="inspect_hide_special").set_value(True).run()
    assert not at.exception
    zoom = chart(at, "inspect_zoom")["data"][0]
    assert zoom["x"] == ["the", "food", "was", "not", "good", "at", "all"]
    np.testing.assert_allclose(array(zoom["z"]).sum(1), 1.0, atol=1e-6)
    assert chart(at, "inspect_grid")["data"][0]["x"] == zoom["x"]
    at.selectbox(key="inspect_layer").set_value(0).run()  # any of the 72 heads zooms
    at.selectbox(key="inspect_head").set_value(11).run()
    assert not at.exception and "Layer 1 · head 12" in " ".join(m.value for m in at.markdown)


def test_faithfulness_knocks_out_any_of_its_72_heads_and_its_run_report_asks_for_a_fine_tuned_run(runs_dir):
    at = opened("pages/7_Faithfulness.py")
    assert "no labelled validation sentences" in texts(at, "info") and "Fine-tune it on the Train page" in texts(at, "info")
    heads = at.multiselect(key="faith_heads")
    assert len(heads.options) == 72 and heads.options[-1] == "6.12"
    heads.set_value(["6.12", "1.1"]).run()
    assert not at.exception and at.markdown and "6.12, 1.1 off" in " ".join(m.value for m in at.markdown)


def test_check_yourself_asks_it_about_attention_only(runs_dir):
    at = opened("pages/8_Check_yourself.py")
    assert "questions here are about its attention only" in texts(at, "info")
    kinds = {q.kind for q in at.session_state["quiz_candidates"][1]}
    assert kinds and kinds <= {"attends_most", "most_spread"}


def test_a_fine_tuned_run_on_every_page_names_its_base_and_its_report_fits_its_fewer_validation_rows(runs_dir,
                                                                                                    fine_tuned):
    save_run(fine_tuned, runs_dir / "tuned")
    at = opened("pages/2_Inspect.py", "tuned")
    assert "fine-tuned from all-MiniLM-L6-v2 (all 6 layers)" in texts(at, "caption")
    assert UNTRAINED not in texts(at, "info") and "moments of its training" in texts(at, "caption")  # its time-lapse
    faith = AppTest.from_file(str(ROOT / "pages/7_Faithfulness.py"), default_timeout=240).run()
    assert faith.number_input(key="faith_report_n").value == 600  # the bundled run's validation rows
    faith.selectbox(key="faith_run").set_value("tuned").run()
    assert not faith.exception  # was: "The value 600 is greater than the max_value 8"
    assert faith.number_input(key="faith_report_n").value == len(fine_tuned.validation[0])
    quiz = opened("pages/8_Check_yourself.py", "tuned")
    assert "attention only" not in texts(quiz, "info")


# -- the Train page ----------------------------------------------------------------------------------------------


def test_the_fine_tuning_form_shows_what_trains_and_maps_its_layers_to_frozen_layers(runs_dir):
    at = AppTest.from_file(str(ROOT / "pages/1_Train.py"), default_timeout=240).run()
    assert "train_vectors" in [r.key for r in at.radio] and not at.radio(key="train_vectors").disabled
    at.radio(key="train_preset").set_value(FINETUNE.label).run()
    assert not at.exception and at.radio(key="train_vectors").disabled
    assert "Word vectors do not apply" in texts(at, "caption") and "What trains" in texts(at, "caption")
    keys = {w.key for w in at.number_input}
    assert {"train_finetune_p_trained_layers", "train_finetune_p_max_pieces"} <= keys
    assert "train_finetune_p_layers" not in keys and "train_finetune_p_heads" not in keys  # the small model's
    assert at.number_input(key="train_finetune_p_trained_layers").value == 6  # the preset trains all 6
    at.radio(key="train_preset").set_value("Default").run()  # the small model's form is as it was
    assert not at.radio(key="train_vectors").disabled and "train_default_p_layers" in {w.key for w in at.number_input}


def test_the_data_check_for_fine_tuning_counts_word_pieces_not_the_words_glove_lacks(runs_dir):
    """The encoder reads every word in word pieces (as the CLI's train --preset finetune reads the data, without
    GloVe): no share of unknown words from GloVe, and the lengths are word pieces against the preset's cut."""
    from attention_core.pretrained import word_piece_lengths

    csv = "text,label\n" + "a great phone,pos\nan awful phone,neg\n" * 10 + "zxqvbn wqzzt,pos\n"
    at = AppTest.from_file(str(ROOT / "pages/1_Train.py"), default_timeout=240).run()
    at.radio(key="train_source").set_value("Upload a CSV").run()
    at.file_uploader(key="train_upload").upload("odd.csv", csv.encode(), "text/csv").run()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Unknown words"] == "3.2%"  # 2 of GloVe's 62 tokens: the row of words it lacks
    assert "sentence length (tokens)" in chart(at, "train_lengths")["layout"]["title"]["text"]
    at.radio(key="train_preset").set_value(FINETUNE.label).run()
    assert not at.exception, at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Rows kept"] == "21" and metrics["Unknown words"] == "–"
    lengths = chart(at, "train_lengths")
    assert "word pieces" in lengths["layout"]["title"]["text"]
    assert sorted(array(lengths["data"][0]["x"]).astype(int).tolist()) == sorted(
        word_piece_lengths(["a great phone", "an awful phone"] * 10 + ["zxqvbn wqzzt"]))


def test_fine_tuning_that_would_pass_the_disk_limit_is_refused_before_it_starts(runs_dir, monkeypatch):
    """A fine-tuned run takes tens of MB (its trained layers and their snapshots), not the small model's ~1 MB: the
    workspace's disk limit is checked against what it will take, before anything is trained."""
    from attention_core.pretrained import fine_tuned_run_bytes

    model_cfg, train_cfg = preset("finetune")
    assert 100e6 < fine_tuned_run_bytes(model_cfg, train_cfg.snapshots) < 160e6  # 6 layers: 43 MB, 4 snapshots
    monkeypatch.setenv("ATTENTION_PLAYGROUND_WORKSPACE_MB", "10")
    at = AppTest.from_file(str(ROOT / "pages/1_Train.py"), default_timeout=240).run()
    at.radio(key="train_preset").set_value(FINETUNE.label).run()
    at.button[0].click().run()  # the form's Start
    assert not at.exception, at.exception
    assert page_job(at) is None
    message = next(e.value for e in at.error if e.value.startswith("Cannot start"))
    assert "needs about" in message and "its limit is 10 MB" in message, message
    from attention_core.run_folders import list_runs

    assert not runs_dir.exists() or list_runs(runs_dir) == []  # nothing trained, nothing saved


def test_fine_tuning_on_the_uci_sentences_trains_saves_zips_and_opens_on_inspect(runs_dir):
    """One epoch within a time budget: the results, the runs list naming its base, a zip without the checkpoint
    that uploads back, the run in Inspect's picker."""
    at = AppTest.from_file(str(ROOT / "pages/1_Train.py"), default_timeout=240).run()
    at.radio(key="train_preset").set_value(FINETUNE.label).run()
    at.number_input(key="train_finetune_p_epochs").set_value(1)
    at.number_input(key="train_finetune_p_budget").set_value(5)
    at.number_input(key="train_finetune_p_trained_layers").set_value(1)
    at.number_input(key="train_finetune_p_max_pieces").set_value(32)
    at.number_input(key="train_finetune_p_snaps").set_value(0)
    at.text_input(key="train_finetune_p_name_uci_sentiment_sentences.csv").set_value("tuned")
    at.button[0].click().run()
    assert not at.exception and not at.error
    job = page_job(at)
    assert job.model_config.base == "minilm" and job.model_config.frozen_layers == 5  # 1 layer of 6 trains
    assert job.train_config.max_tokens == 32 and job.train_config.epochs == 1
    while job.alive:
        job.heartbeat()
        job.join(0.5)
    at.run()
    assert not at.exception
    assert any("Saved as run `tuned`" in b.value for b in (*at.success, *at.warning))
    assert "tuned" in next(d.value for d in at.dataframe if "run" in d.value.columns)["run"].tolist()  # the runs list
    assert "Fine-tuned from the pretrained **all-MiniLM-L6-v2**: its top 1 of 6 layers" in texts(at, "caption")
    path = runs_dir / "tuned"
    from attention_core.run_folders import run_from_zip, run_to_zip

    data = run_to_zip(path)
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    assert sorted(Path(n).name for n in names) == ["config.json", "history.json", "model.safetensors", "vocab.json"]
    assert len(data) < 0.3 * 90_000_000  # the top layer and the head, not the 90 MB checkpoint
    back = run_from_zip(data, runs_dir, "tuned")  # uploaded back: unpacked, and loaded on its base
    assert back.name == "tuned-2"
    from attention_core import pretrained

    def missing():
        raise RunError("the bundled pretrained model (all-MiniLM-L6-v2) is not installed", "install it")

    with pytest.MonkeyPatch.context() as m:
        m.setattr(pretrained, "bundled_checkpoint", missing)
        with pytest.raises(RunError, match="not installed"):
            run_from_zip(data, runs_dir, "no-base")  # its base is not here: refused, nothing kept
    assert not (runs_dir / "no-base").exists()
    inspect = opened("pages/2_Inspect.py", "tuned")
    assert "fine-tuned from all-MiniLM-L6-v2 (top 1 of 6 layers)" in texts(inspect, "caption")
