"""AppTest: the home page and the Train page render, react, train, and survive bad input."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from attention_core import load_embeddings, load_run
from tests.helpers.apptest import ending_banners, live_chart, page_job

TIMEOUT = 90
ROOT = Path(__file__).resolve().parents[2]


pytestmark = pytest.mark.usefixtures("runs_dir")  # every test on a runs root of its own (conftest)


def test_home_predicts_the_default_sentence_at_once():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run()
    assert not at.exception
    assert at.subheader[0].value.startswith("Prediction: ")
    heatmap = live_chart(at, "home_heatmap")["data"][0]
    assert heatmap["type"] == "heatmap" and heatmap["zmin"] == 0 and heatmap["zmax"] == 1
    assert heatmap["y"] == ["the", "food", "was", "not", "good", "at", "all"]
    assert at.selectbox(key="home_run").value.startswith("Bundled")


def test_home_new_sentence_new_heatmap_and_unknown_words_marked():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run()
    at.text_input(key="home_text").input("what a xqzzy great phone").run()
    assert not at.exception
    assert live_chart(at, "home_heatmap")["data"][0]["x"] == ["what", "a", "<unk>", "great", "phone"]
    assert any("xqzzy" in c.value for c in at.caption)
    at.radio(key="home_head").set_value("Head 2").run()
    assert live_chart(at, "home_heatmap")["layout"]["title"]["text"].startswith("Layer 1 · head 2")  # as Inspect writes it


def test_home_all_unknown_sentence_is_a_clear_error():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run()
    at.text_input(key="home_text").input("xqzzy qqqzz").run()
    assert not at.exception
    assert "none of the words" in at.error[0].value


def click(pills, option: str):
    """A click on ``option``, as in the browser: a pill already selected is deselected, another one selected."""
    return pills.unselect(option) if pills.value == option else pills.select(option)


def test_home_example_loads_in_one_click_and_is_highlighted_only_while_in_the_box(monkeypatch):
    """An example is highlighted while the box shows it, and only then: after a sentence of one's
    own, one click on an example loads it (a pill that stayed selected took two)."""
    from streamlit.elements.lib import policies

    from ui.preview import EXAMPLES

    monkeypatch.setattr(policies, "_shown_default_value_warning", False)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run()
    assert at.pills(key="home_example").value == EXAMPLES[0]  # the sentence shown at first
    click(at.pills(key="home_example"), EXAMPLES[1]).run()
    assert at.text_input(key="home_text").value == EXAMPLES[1] == at.pills(key="home_example").value
    at.text_input(key="home_text").input("the soup was cold").run()
    assert at.pills(key="home_example").value is None
    click(at.pills(key="home_example"), EXAMPLES[1]).run()  # the one clicked before: loaded by this one click
    assert at.text_input(key="home_text").value == EXAMPLES[1] == at.pills(key="home_example").value
    assert live_chart(at, "home_heatmap")["data"][0]["y"] == EXAMPLES[1].split()
    click(at.pills(key="home_example"), EXAMPLES[1]).run()  # the one shown: nothing changes
    assert at.text_input(key="home_text").value == EXAMPLES[1] == at.pills(key="home_example").value
    assert not at.exception
    assert not policies._shown_default_value_warning  # the box is not given both a value and a Session State value


def test_train_page_shows_the_data_report_and_form():
    at = AppTest.from_file(str(ROOT / "pages" / "1_Train.py"), default_timeout=TIMEOUT).run()
    assert not at.exception
    assert at.selectbox(key="train_text_uci_sentiment_sentences.csv").value == "text"
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Rows kept"] == "3,000" and metrics["Classes"] == "2"
    assert at.radio(key="train_preset").options == ["Default", "Seed (the Julia post)",
                                                    "Fine-tune all-MiniLM-L6-v2 (pretrained)", "Custom"]
    # The live view redraws every 0.4 s: its progress bar and fading elements are not animated in between.
    assert any("transition: none" in h.proto.body for h in at.get("html"))


BAD_CSVS = [
    ("empty.csv", b"", "empty"),
    ("header.csv", b"text,label\n", "no data rows|header"),
    ("one_class.csv", b"text,label\ngood,pos\nfine,pos\n", "only one"),
    ("binary.csv", b"PK\x03\x04" + bytes(range(256)) * 8, "binary"),
    ("numbers.csv", b"a,b\n1,2\n3,4\n5,6\n", "text column"),
]


@pytest.mark.parametrize(("name", "data", "message"), BAD_CSVS)
def test_bad_csv_shows_an_error_and_the_app_lives_on(name, data, message):
    import re

    at = AppTest.from_file(str(ROOT / "pages" / "1_Train.py"), default_timeout=TIMEOUT).run()
    at.session_state["train_upload_data"] = (name, data)
    at.radio(key="train_source").set_value("Upload a CSV").run()
    assert not at.exception
    assert at.error and re.search(message, at.error[0].value), [e.value for e in at.error]
    at.radio(key="train_source").set_value(at.radio(key="train_source").options[1]).run()  # still usable
    assert not at.exception and not at.error


def test_tiny_training_flow_completes_and_saves_a_run(runs_dir):
    at = AppTest.from_file(str(ROOT / "pages" / "1_Train.py"), default_timeout=TIMEOUT).run()
    at.radio(key="train_source").set_value(at.radio(key="train_source").options[1]).run()  # small.csv
    at.radio(key="train_preset").set_value("Custom").run()
    at.number_input(key="train_default_c_epochs").set_value(3)
    at.number_input(key="train_default_c_layers").set_value(1)
    at.number_input(key="train_default_c_snaps").set_value(2)
    at.number_input(key="train_default_c_edrop").set_value(0.15)  # the advanced settings reach the saved configs
    at.number_input(key="train_default_c_wd").set_value(0.05)
    at.selectbox(key="train_default_c_sampling").set_value("balanced")
    at.selectbox(key="train_default_c_keep").set_value("macro_f1")
    at.text_input(key="train_default_c_name_small.csv").set_value("tiny run")
    at.button[0].click().run()  # the form's Start button
    assert not at.exception
    job = page_job(at)
    job.join(120)
    assert job.done and job.state == "finished"
    at.run()
    assert not at.exception
    assert (runs_dir / "tiny-run" / "model.safetensors").is_file()
    saved = load_run(runs_dir / "tiny-run")
    assert saved.model_config.embedding_dropout == 0.15 and saved.train_config.weight_decay == 0.05
    assert (saved.train_config.sampling, saved.train_config.keep_by) == ("balanced", "macro_f1")
    assert saved.train_config.snapshots == 2  # the form's time-lapse moments: epochs 0 and 3, and the best one
    assert {0, 3} <= set(saved.snapshots) <= {0, 3, saved.history.kept_epoch}
    assert any(s.startswith("Training finished") for s in ending_banners(at))
    # the kept model is said to be the one the run kept it by (keep_by=macro_f1 above), not by its loss
    assert any("the one with the highest validation macro-F1" in c.value for c in at.caption)
    assert any(m.label == "Validation accuracy" for m in at.metric)
    assert at.get("download_button")
    curves = live_chart(at, "train_live_curves_chart")  # the live chart, now with the whole run
    assert {t["name"] for t in curves["data"]} >= {"train loss", "validation loss"}
    assert len(curves["data"][1]["x"]) == 3  # train loss after each of the 3 epochs


def test_train_on_your_own_word_vectors_file_with_clear_errors_for_a_bad_one(runs_dir, tmp_path):
    # A real word-vector file of another size: GloVe's 5,000 most frequent words, 8 numbers each, GloVe text format.
    emb = load_embeddings()
    words = [emb._words[i] for i in range(5000)]
    own = tmp_path / "own-8d.txt"
    own.write_text("".join(f"{w} {' '.join(f'{x:.5f}' for x in emb.vector(w)[:8])}\n" for w in words))
    (tmp_path / "broken.txt").write_bytes(b"the 0.1 0.2\ncat 0.3\n")
    at = AppTest.from_file(str(ROOT / "pages" / "1_Train.py"), default_timeout=TIMEOUT).run()
    at.radio(key="train_source").set_value(at.radio(key="train_source").options[1]).run()  # small.csv
    at.radio(key="train_vectors").set_value(at.radio(key="train_vectors").options[1]).run()
    assert not at.exception and "Type the path" in at.info[0].value
    for path, message in [(tmp_path / "missing.txt", "word-vector file not found"),
                          (tmp_path / "broken.txt", "line 2 of broken.txt has 1 number where the file's rows have 2")]:
        at.text_input(key="train_vectors_path").input(str(path)).run()
        assert not at.exception
        assert at.error[0].value.startswith(f"These word vectors cannot be used: {message}")
    at.text_input(key="train_vectors_path").input(str(own)).run()
    assert not at.exception and not at.error
    assert any(c.value.startswith("own-8d.txt: 5,000 words × 8 numbers") for c in at.caption)
    unknown = next(m for m in at.metric if m.label == "Unknown words")
    assert unknown.value != "–" and float(unknown.value.rstrip("%")) < 20  # small.csv's words are common ones
    at.radio(key="train_preset").set_value("Custom").run()
    at.number_input(key="train_default_c_epochs").set_value(2)
    at.number_input(key="train_default_c_layers").set_value(1)
    at.text_input(key="train_default_c_name_small.csv").set_value("own vectors")
    at.button[0].click().run()
    assert not at.exception
    job = page_job(at)
    job.join(120)
    assert job.state == "finished", job.message
    saved = load_run(runs_dir / "own-vectors")  # opened again through the path it remembers
    assert saved.model_config.embedding_dim == 8 and saved.encoder.embeddings.source.path == str(own)
    pred = saved.predict("very sad as they both fail")
    assert len(pred.tokens) == 6 and pred.tokens[0] == "very" and abs(sum(pred.probabilities.values()) - 1) < 1e-5


def test_a_run_whose_vectors_file_moved_asks_where_it_is_now(runs_dir, tmp_path):
    from attention_core import ModelConfig, TrainConfig, Trainer, dataset_from_lists, save_run
    from attention_core import embeddings as E
    from tests.helpers.tiny_data import LABELS, TEXTS, vectors_file

    first = vectors_file(tmp_path / "v8.txt", 8)
    emb = E.load_embeddings(E.EmbeddingSource("file", str(first)))
    result = Trainer(ModelConfig(n_layers=1, n_heads=2, d_model=8, d_ff=16), TrainConfig(epochs=2, batch_size=4),
                     dataset_from_lists(TEXTS, LABELS), emb).run(name="mine")
    save_run(result, runs_dir / "mine")
    moved = tmp_path / "moved-v8.txt"
    first.rename(moved)
    E._load_cached.cache_clear()  # the server was restarted since: the file is not in memory
    E._file_arrays.cache_clear()
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.session_state["active_run"] = "mine"
    at.run()
    assert not at.exception
    assert at.error[0].value.startswith("This run cannot be loaded: word-vector file not found")
    at.text_input(key="home_run_relink").input(str(tmp_path / "nope.txt")).run()
    assert "That file does not fit this run: word-vector file not found" in at.error[1].value
    at.text_input(key="home_run_relink").input(str(moved)).run()
    assert not at.exception
    assert "none of the words in 'the food was not good at all'" in at.error[0].value  # loaded: its file has a dozen words
    at.text_input(key="home_text").input("i love it").run()
    assert not at.exception and not at.error
    assert at.subheader[0].value.startswith("Prediction: ")
    assert load_run(runs_dir / "mine").encoder.embeddings.source.path == str(moved)


def test_a_diverging_run_stops_with_advice_and_the_same_name_never_overwrites(runs_dir):
    at = AppTest.from_file(str(ROOT / "pages" / "1_Train.py"), default_timeout=TIMEOUT).run()
    at.radio(key="train_source").set_value(at.radio(key="train_source").options[1]).run()
    at.radio(key="train_preset").set_value("Custom").run()
    at.number_input(key="train_default_c_epochs").set_value(30)
    at.number_input(key="train_default_c_lr").set_value(1e4)
    at.selectbox(key="train_default_c_opt").set_value("sgd")
    at.toggle(key="train_default_c_block").set_value(False)
    at.text_input(key="train_default_c_name_small.csv").set_value("hot")
    at.button[0].click().run()
    job = page_job(at)
    job.join(120)
    at.run()
    assert not at.exception
    assert job.state == "diverged"
    assert "lower learning rate" in at.error[0].value
    # Train again under the same name: the first run is kept, the second gets a new folder.
    at.button(key="train_reset").click().run()
    at.button[0].click().run()
    page_job(at).join(120)
    at.run()
    saved = sorted(p.name for p in runs_dir.iterdir() if not p.name.startswith("."))
    assert saved[:1] == ["hot"] and (len(saved) == 1 or saved[1] == "hot-2")


def test_an_impossible_setting_is_a_clear_error_not_a_crash():
    at = AppTest.from_file(str(ROOT / "pages" / "1_Train.py"), default_timeout=TIMEOUT).run()
    at.radio(key="train_preset").set_value("Custom").run()
    at.number_input(key="train_default_c_heads").set_value(3)
    at.button[0].click().run()
    assert not at.exception
    assert "divisible" in at.error[0].value and page_job(at) is None


def test_choices_survive_a_visit_to_another_page(monkeypatch, runs_dir):
    """Streamlit forgets a widget's value when a page run does not draw it: the pages keep them (ui.common.kept)."""
    from streamlit.elements.lib import policies

    monkeypatch.setattr(policies, "_shown_default_value_warning", False)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run()
    at.text_input(key="home_text").input("the soup was cold").run()
    at.radio(key="home_head").set_value("Head 2").run()
    at.switch_page("pages/1_Train.py").run()
    at.radio(key="train_source").set_value(at.radio(key="train_source").options[1]).run()  # small.csv
    at.radio(key="train_preset").set_value("Custom").run()
    at.number_input(key="train_default_c_epochs").set_value(2)
    at.number_input(key="train_default_c_layers").set_value(1)
    at.selectbox(key="train_default_c_pos").set_value("learned")
    at.text_input(key="train_default_c_name_small.csv").input("mine")
    at.button[0].click().run()  # Start: the form's values are the learner's from now on
    page_job(at).join(120)
    at.switch_page("pages/2_Inspect.py").run()
    at.text_input(key="inspect_text").input("a truly great film").run()
    at.selectbox(key="inspect_layer").set_value(0)
    at.selectbox(key="inspect_head").set_value(1).run()
    assert not at.exception

    at.switch_page("app.py").run()  # back home: the sentence and the head are the learner's
    assert at.text_input(key="home_text").value == "the soup was cold"
    assert at.radio(key="home_head").value == "Head 2"
    assert live_chart(at, "home_heatmap")["data"][0]["x"] == ["the", "soup", "was", "cold"]
    at.switch_page("pages/1_Train.py").run()  # the settings as they were left
    assert at.radio(key="train_source").value == at.radio(key="train_source").options[1]
    assert at.radio(key="train_preset").value == "Custom"
    assert at.number_input(key="train_default_c_epochs").value == 2
    assert at.number_input(key="train_default_c_layers").value == 1
    assert at.selectbox(key="train_default_c_pos").value == "learned"
    assert at.text_input(key="train_default_c_name_small.csv").value == "mine"
    assert any(s.startswith("Training finished") for s in ending_banners(at))
    assert (runs_dir / "mine" / "model.safetensors").is_file()
    at.switch_page("pages/2_Inspect.py").run()
    assert at.text_input(key="inspect_text").value == "a truly great film"
    assert (at.selectbox(key="inspect_layer").value, at.selectbox(key="inspect_head").value) == (0, 1)
    assert not at.exception
    assert not policies._shown_default_value_warning  # no widget got both a default and a Session State value


def test_runs_list_rename_compare_delete_reopen(runs_dir):
    """The runs list on the Train page: every saved run is listed, and can be renamed, compared and deleted."""
    import json
    import shutil

    for name in ("first", "second"):
        shutil.copytree(ROOT / "data" / "default_run", runs_dir / name)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run()
    at.switch_page("pages/1_Train.py").run()

    def listed() -> dict:
        table = next(d.value for d in at.dataframe if "run" in d.value.columns)
        return {row["run"]: row for row in table.to_dict("records")}

    assert set(listed()) == {"first", "second"}
    assert listed()["first"]["status"] == "finished"
    history = json.loads((runs_dir / "first" / "history.json").read_text())
    history["status"] = "stopped"  # a run whose files change is read again
    (runs_dir / "first" / "history.json").write_text(json.dumps(history))
    at.run()
    assert listed()["first"]["status"] == "stopped"

    at.multiselect(key="train_compare").set_value(["first", "second"]).run()
    chart = next(c for c in at.get("plotly_chart") if c.proto.id.endswith("train_compare_chart") or
                 "accuracy)" in c.proto.spec)
    names = {t["name"].split(" (")[0] for t in json.loads(chart.proto.spec)["data"]}
    assert names == {"first", "second"}  # both runs' curves in one chart
    at.multiselect(key="train_compare").set_value([]).run()

    at.selectbox(key="train_manage_pick").set_value("first").run()
    at.text_input(key="train_rename_to").input("renamed").run()
    at.button(key="train_rename").click().run()
    assert not at.exception
    assert set(listed()) == {"renamed", "second"} and (runs_dir / "renamed" / "model.safetensors").is_file()

    at.selectbox(key="train_manage_pick").set_value("second").run()
    at.button(key="train_delete").click().run()
    assert (runs_dir / "second").is_dir()  # not before it is confirmed
    at.button(key="train_delete_yes").click().run()
    assert set(listed()) == {"renamed"} and not (runs_dir / "second").exists()

    at.button(key="train_open").click().run()  # reopen: the home page, with that model
    assert not at.exception
    assert at.selectbox(key="home_run").value == "renamed"


def test_home_says_which_words_the_bundled_model_read_with_their_capitals():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run()
    at.text_input(key="home_text").input("the food was NOT good at all").run()
    assert not at.exception
    assert live_chart(at, "home_heatmap")["data"][0]["x"][3] == "not"  # GloVe's lower-case word, as the model reads it
    said = [c.value for c in at.caption if "capitals" in c.value]
    assert len(said) == 1 and said[0].endswith(": NOT")
    assert said[0].startswith("Read with capitals")
    at.text_input(key="home_text").input("the food was not good at all").run()
    assert not [c.value for c in at.caption if "capitals" in c.value]


def test_a_text_over_500_characters_is_cut_to_its_first_500_and_said(monkeypatch):
    """Streamlit's max_chars refused a longer paste in the browser and left the box as it was, without a word:
    the sentence boxes keep the first 500 characters and say so (ui.sentence_box), on Home and on a page whose
    box keeps its value across pages (Inspect), without Streamlit's warning about a widget's value set twice."""
    from streamlit.elements.lib import policies

    monkeypatch.setattr(policies, "_shown_default_value_warning", False)
    long_text = " ".join(["the film was good"] * 40)  # 719 characters
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run()
    at.text_input(key="home_text").input(long_text).run()
    assert not at.exception
    assert at.text_input(key="home_text").value == long_text[:500]
    assert [w.value for w in at.warning] == ["The text had 719 characters: the box keeps the first 500."]
    assert at.subheader[0].value.startswith("Prediction: ")
    at.text_input(key="home_text").input("a short one").run()  # the notice goes with the cut text
    assert not at.warning

    at.switch_page("pages/2_Inspect.py").run()
    at.text_input(key="inspect_text").input(long_text + " indeed").run()
    assert not at.exception
    assert at.text_input(key="inspect_text").value == long_text[:500]
    assert [w.value for w in at.warning] == ["The text had 726 characters: the box keeps the first 500."]
    at.switch_page("app.py").run()
    at.switch_page("pages/2_Inspect.py").run()  # kept across pages as cut
    assert at.text_input(key="inspect_text").value == long_text[:500]
    assert not policies._shown_default_value_warning
