"""The home page's saved first picture (ui/preview.py): the bundled model's own answer, shown before torch loads."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tests.helpers.apptest import live_chart
from ui import preview

ROOT = Path(__file__).resolve().parents[2]


def test_the_saved_answer_is_what_the_bundled_model_says():
    """If the model is re-made, so must the preview be (scripts/make_default_run.sh does both)."""
    from attention_core import load_run

    saved = preview.load()
    assert saved is not None and saved.text == preview.EXAMPLES[0]
    run = load_run(preview.DEFAULT_RUN)
    live = run.predict(saved.text)
    assert (saved.label, saved.tokens, saved.unknown_tokens) == (live.label, live.tokens, live.unknown_tokens)
    assert saved.probabilities == pytest.approx(live.probabilities, abs=1e-6)
    np.testing.assert_allclose(saved.attention, live.attention, atol=1e-6)
    assert (saved.run_name, saved.n_layers, saved.n_heads, saved.label_names, saved.embeddings, saved.map_names) == (
        run.name, run.model_config.n_layers, run.model_config.n_heads, list(run.label_names),
        run.encoder.embeddings.source.describe(), run.model_config.map_names())


def test_the_preview_is_the_prediction_as_predict_gives_it_plus_the_runs_facts(tmp_path):
    """write() saves Prediction.to_dict() as it is (the fields are listed once, in Prediction), in the
    bundled file's flat layout; load() gives it back as ``prediction``, its fields readable as attributes."""
    import dataclasses

    from attention_core import Prediction, load_run

    run = load_run(preview.DEFAULT_RUN)
    written = preview.write(preview.DEFAULT_RUN, "a great phone", tmp_path / "p.json")
    data = json.loads((tmp_path / "p.json").read_text(encoding="utf-8"))
    live = run.predict("a great phone").to_dict()
    assert data == {"text": "a great phone", **live, "run_name": run.name, "n_layers": run.model_config.n_layers,
                    "n_heads": run.model_config.n_heads, "label_names": list(run.label_names),
                    "embeddings": run.encoder.embeddings.source.describe(), "map_names": run.model_config.map_names()}
    assert list(data) == list(json.loads(preview.PREVIEW.read_text(encoding="utf-8")))  # the bundled file's layout
    back = preview.load.__wrapped__(tmp_path / "p.json")
    assert back == written and back.prediction == live
    assert list(back.prediction) == [f.name for f in dataclasses.fields(Prediction)]
    assert (back.label, back.tokens, back.attention) == (live["label"], live["tokens"], live["attention"])
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        back.nothing  # noqa: B018


def test_a_field_added_to_prediction_reaches_the_preview_without_touching_it(tmp_path, monkeypatch):
    from attention_core import Run

    real = Run.predict

    class Wider:
        def __init__(self, prediction):
            self.prediction = prediction

        def to_dict(self):
            return {**self.prediction.to_dict(), "entropy": 0.25}

    monkeypatch.setattr(Run, "predict", lambda self, text: Wider(real(self, text)))
    preview.write(preview.DEFAULT_RUN, "a great phone", tmp_path / "p.json")
    back = preview.load.__wrapped__(tmp_path / "p.json")
    assert back is not None and back.entropy == 0.25 and back.prediction["entropy"] == 0.25


def test_a_missing_or_broken_preview_is_no_preview(tmp_path):
    assert preview.load.__wrapped__(tmp_path / "none.json") is None
    (tmp_path / "bad.json").write_text("{not json")
    assert preview.load.__wrapped__(tmp_path / "bad.json") is None
    (tmp_path / "list.json").write_text("[1, 2]")
    assert preview.load.__wrapped__(tmp_path / "list.json") is None
    saved = json.loads(preview.PREVIEW.read_text(encoding="utf-8"))
    (tmp_path / "old.json").write_text(json.dumps({k: v for k, v in saved.items() if k != "run_name"}))
    assert preview.load.__wrapped__(tmp_path / "old.json") is None  # a run fact missing


def test_home_shows_the_saved_answer_until_torch_is_there_then_computes_live(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTENTION_PLAYGROUND_RUNS", str(tmp_path))
    warmed = []
    monkeypatch.setattr(preview, "model_code_loaded", lambda: False)  # as in a server that just started
    monkeypatch.setattr(preview, "warm_up", lambda: warmed.append(1))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).run()
    assert not at.exception
    saved = preview.load()
    assert at.subheader[0].value == f"Prediction: {saved.label}"
    heatmap = live_chart(at, "home_heatmap")["data"][0]
    assert heatmap["y"] == saved.tokens
    z = heatmap["z"]  # plotly's typed-array JSON: base64 bytes, dtype and shape
    z = np.frombuffer(base64.b64decode(z["bdata"]), dtype=z["dtype"]).reshape(
        [int(n) for n in z["shape"].split(",")]) if isinstance(z, dict) else np.asarray(z)
    np.testing.assert_allclose(z, np.asarray(saved.attention)[0].mean(0), atol=1e-9)  # layer 1, head average
    assert warmed  # torch is being loaded meanwhile
    assert at.selectbox(key="home_run").value == preview.BUNDLED_NAME
    at.text_input(key="home_text").input("what a great phone").run()  # anything else: the live model
    assert not at.exception
    assert live_chart(at, "home_heatmap")["data"][0]["y"] == ["what", "a", "great", "phone"]


def test_a_fresh_server_process_takes_the_quick_path_and_loads_the_model_behind_it(tmp_path):
    """Behind the first page the bundled model is loaded, then the pretrained encoder: neither loads again when
    the learner's first sentence comes or the encoder is picked (``load_run`` is gone by then)."""
    code = (
        "import sys\n"
        "from streamlit.testing.v1 import AppTest\n"
        "at = AppTest.from_file('app.py', default_timeout=90).run()\n"
        "from ui import preview\n"
        "assert not at.exception, at.exception\n"
        "assert preview._warming is not None, 'the page did not start loading torch: it was loaded already'\n"
        # a daemon thread still inside torch when the process exits can abort it (SIGABRT, seen in the suite)
        "assert not preview._warming.daemon, 'the interpreter must wait for the warm-up at exit'\n"
        "preview._warming.join(120)\n"
        "import ui.common\n"
        "ui.common.load_run = None  # the bundled model was loaded behind the page: the next sentence loads nothing\n"
        "at.text_input(key='home_text').input('the waiter was friendly').run()\n"
        "assert not at.exception, at.exception\n"
        "print(at.subheader[0].value, 'torch' in sys.modules)\n"
        # and the pretrained encoder behind it (issue 28: its maps ≤ 1 s once picked on a warm server)
        "at.selectbox(key='home_run').set_value(preview.PRETRAINED_NAME).run()\n"
        "assert not at.exception, at.exception\n"
        "assert any('head is untrained' in e.value for e in at.info), [e.value for e in at.info]\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "ATTENTION_PLAYGROUND_RUNS": str(tmp_path)})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-1] == "True"  # the background import finished
    assert out.stdout.startswith("Prediction: ")


def test_a_user_with_saved_runs_gets_them_in_the_picker_on_a_cold_start(monkeypatch, tmp_path):
    """On one's own machine, the first page after a restart: the quick path's picker held the bundled
    model alone (until the next rerun), as if the user's runs were gone."""
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "my-run").mkdir()
    for f in preview.DEFAULT_RUN.iterdir():
        (runs / "my-run" / f.name).write_bytes(f.read_bytes())
    monkeypatch.setenv("ATTENTION_PLAYGROUND_RUNS", str(runs))
    monkeypatch.setattr(preview, "model_code_loaded", lambda: False)  # as in a server that just started
    monkeypatch.setattr(preview, "warm_up", lambda: None)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).run()
    assert not at.exception
    assert at.selectbox(key="home_run").options == [preview.BUNDLED_NAME, preview.PRETRAINED_NAME, "my-run"]
    assert at.subheader[0].value.startswith("Prediction:")  # computed by the model: the same page otherwise


def test_the_quick_first_page_lists_the_pretrained_encoder_without_loading_it_and_picking_it_loads_it(monkeypatch, tmp_path):
    """Issue 28: the quick path's picker (before torch) lists the bundled pretrained encoder by locating its package;
    picking it draws the page with it (its untrained head said)."""
    monkeypatch.setenv("ATTENTION_PLAYGROUND_RUNS", str(tmp_path))
    monkeypatch.setattr(preview, "model_code_loaded", lambda: False)  # as in a server that just started
    monkeypatch.setattr(preview, "warm_up", lambda: None)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).run()
    picker = at.selectbox(key="home_run")
    assert picker.options == [preview.BUNDLED_NAME, preview.PRETRAINED_NAME]
    assert at.subheader[0].value == f"Prediction: {preview.load().label}"  # the saved answer: the quick path
    picker.set_value(preview.PRETRAINED_NAME).run()
    assert not at.exception and at.selectbox(key="home_run").value == preview.PRETRAINED_NAME
    assert "classifier head is untrained" in " ".join(i.value for i in at.info)
    monkeypatch.setattr(preview, "pretrained_installed", lambda: False)  # its package not installed: not listed
    assert AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).run().selectbox(key="home_run").options == [
        preview.BUNDLED_NAME]
