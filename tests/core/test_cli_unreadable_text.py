"""Input that cannot teach anything, end to end: the command line and the app refuse a text column
the word vectors (almost) cannot read, warn about one they read poorly, and call an empty sentence empty. The
command line's refusal is tested once as a process ends (``cli_process``), the rest through its ``main`` in this
process (the ``cli`` fixture: tests.helpers.cli)."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from attention_core import load_embeddings
from tests.helpers.apptest import page_job
from tests.helpers.cli import cli_process

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 90
ENGLISH = ["the food was really good", "awful service and cold soup", "i love this phone", "the battery died in a day",
           "great value for the price", "it broke after a week", "friendly staff and tasty food", "a waste of money"]
FRENCH = ["Le service était très lent et la nourriture froide.", "J'adore ce téléphone, la batterie tient la journée.",
          "Le produit est arrivé cassé, je suis vraiment déçu.", "Très bon rapport qualité-prix, je le recommande.",
          "Le film était ennuyeux du début à la fin.", "Cet appareil ne fonctionne plus après deux semaines.",
          "Une expérience formidable, nous reviendrons bientôt.", "La livraison a pris trois semaines, inadmissible."]
CHINESE = ["服务很慢，食物也是冷的。", "我很喜欢这部手机，电池能用一整天。", "产品到的时候坏了，我非常失望。", "性价比很高，推荐购买。",
           "这部电影从头到尾都很无聊。", "这个设备用了两个星期就坏了。", "非常棒的体验，我们很快会再来。", "声音清晰有力，非常值得买。"]
LABELS = ["pos", "neg"] * 4
REFUSED = "holds almost no words that the word vectors know"
HINT = ("choose the column that holds the sentences, or for text in another language use word vectors for that "
        "language (command line: --text-col, --embeddings FILE)")
WARNED = "the word vectors know only"


def csv_bytes(texts: list[str], labels: list[str] = LABELS) -> bytes:
    """A CSV with an order number, the text and the label (texts quoted: they hold commas)."""
    rows = [f'{100_000 + 7_919 * i},"{t}",{y}\n' for i, (t, y) in enumerate(zip(texts, labels, strict=True))]
    return ("order,review,label\n" + "".join(rows)).encode()


TRAIN = ("--epochs", "1", "--layers", "1", "--heads", "2", "--threads", "1", "--quiet")


def test_cli_refuses_the_wrong_column_before_training_naming_it_and_two_values(tmp_path):
    (tmp_path / "shop.csv").write_bytes(csv_bytes(ENGLISH))
    r = cli_process("train", str(tmp_path / "shop.csv"), "--text-col", "order", "--out", str(tmp_path / "run"), *TRAIN)
    assert r.returncode == 2, r.stderr
    assert r.stderr.splitlines() == [
        f"error: column 'order' {REFUSED} (0.0% of its text; its values are like '100000', '107919') — {HINT}"]
    assert not (tmp_path / "run").exists() and r.stdout == ""


def test_cli_refuses_text_in_a_script_glove_cannot_read(cli, tmp_path):
    (tmp_path / "zh.csv").write_bytes(csv_bytes(CHINESE))
    r = cli("train", str(tmp_path / "zh.csv"), "--out", str(tmp_path / "run"), *TRAIN)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: column 'review' {REFUSED} (0.0% of its text; its values "
                                                   "are like '服务很慢，食物也是冷的。', '我很喜欢这部手机，电池能用一整天。')")
    assert not (tmp_path / "run").exists()


def test_cli_refuses_words_outside_the_seeds_vocabulary(cli, tmp_path):
    emb = load_embeddings()
    rare = [w for w in emb._words[60_000:60_200] if w.isalpha()][:16]  # GloVe knows them, its top 10,000 do not
    (tmp_path / "rare.csv").write_bytes(csv_bytes([f"{a} {b}" for a, b in zip(rare[::2], rare[1::2], strict=True)]))
    r = cli("train", str(tmp_path / "rare.csv"), "--preset", "seed", "--out", str(tmp_path / "run"), "--epochs", "1")
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith(f"error: column 'review' {REFUSED}")


def test_cli_warns_about_text_the_vectors_read_poorly_and_trains(cli, tmp_path):
    (tmp_path / "fr.csv").write_bytes(csv_bytes(FRENCH))
    r = cli("train", str(tmp_path / "fr.csv"), "--out", str(tmp_path / "run"), *TRAIN)
    assert r.returncode == 0, r.stderr
    warnings = [line for line in r.stderr.splitlines() if line.startswith(f"warning: {WARNED}")]
    assert len(warnings) == 1 and "of the text in column 'review'" in warnings[0], r.stderr
    assert (tmp_path / "run" / "model.safetensors").exists()


def test_cli_trains_on_english_without_a_word_about_it(cli, tmp_path):
    (tmp_path / "en.csv").write_bytes(csv_bytes(ENGLISH))
    r = cli("train", str(tmp_path / "en.csv"), "--out", str(tmp_path / "run"), *TRAIN)
    assert r.returncode == 0, r.stderr
    assert "(100.0% of the text's letters are in known words)" in r.stderr
    assert WARNED not in r.stderr and "have no word" not in r.stderr


@pytest.mark.parametrize("text", ["", "   "])
def test_cli_predict_of_an_empty_sentence_says_it_is_empty(cli, text):
    r = cli("predict", str(ROOT / "data" / "default_run"), text)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.splitlines() == ["error: the sentence is empty — type a sentence, e.g. 'the food was good'"]


# --- the app ---------------------------------------------------------------------------------------


def train_page(name: str, data: bytes) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / "1_Train.py"), default_timeout=TIMEOUT)
    at.session_state["train_upload_data"] = (name, data)  # what the page keeps of an upload
    at.run()
    return at.radio(key="train_source").set_value("Upload a CSV").run()


def test_train_page_refuses_a_column_the_vectors_cannot_read_and_warns_in_the_data_report(runs_dir):
    at = train_page("zh.csv", csv_bytes(CHINESE))
    assert not at.exception
    assert [e.value for e in at.error] == [
        f"column 'review' {REFUSED} (0.0% of its text; its values are like '服务很慢，食物也是冷的。', "
        f"'我很喜欢这部手机，电池能用一整天。') — {HINT}"]
    assert not at.metric  # no data report, no form
    at = train_page("fr.csv", csv_bytes(FRENCH))
    assert not at.exception and not at.error
    assert [w.value for w in at.warning if WARNED in w.value]  # the data report's warnings
    at = train_page("en.csv", csv_bytes(ENGLISH))
    assert not at.exception and not at.error
    assert not [w.value for w in at.warning if WARNED in w.value or "have no word" in w.value]


def test_train_page_start_refuses_text_the_presets_vocabulary_cannot_read(runs_dir):
    emb = load_embeddings()
    rare = [w for w in emb._words[60_000:60_200] if w.isalpha()][:16]  # GloVe knows them, its top 10,000 do not
    at = train_page("rare.csv", csv_bytes([f"{a} {b}" for a, b in zip(rare[::2], rare[1::2], strict=True)]))
    assert not at.exception and not at.error  # the whole of GloVe knows every word
    at.radio(key="train_preset").set_value("Seed (the Julia post)").run()
    at.button[0].click().run()  # Start: the seed reads GloVe's top 10,000 words only
    assert not at.exception
    assert [e.value for e in at.error if e.value.startswith("Cannot start")] == [
        f"Cannot start: column 'review' {REFUSED} (0.0% of its text; its values are like '{rare[0]} {rare[1]}', "
        f"'{rare[2]} {rare[3]}') — {HINT}"]
    assert page_job(at) is None  # no training process was asked to start
    assert not runs_dir.exists() or not any(runs_dir.iterdir())


def test_inspect_compares_with_an_empty_second_sentence_saying_it_is_empty(runs_dir):
    at = AppTest.from_file(str(ROOT / "pages" / "2_Inspect.py"), default_timeout=TIMEOUT).run()
    at.text_input(key="inspect_compare_text").input("  ").run()
    assert not at.exception
    assert [e.value for e in at.error] == ["the sentence is empty — type a sentence, e.g. 'the food was good'"]
    at.text_input(key="inspect_text").input(" ").run()  # the page's own sentence: it asks for one
    assert not at.exception and any("Type a sentence" in i.value for i in at.info)
