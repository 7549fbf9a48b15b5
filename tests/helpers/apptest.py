"""Driving Streamlit's AppTest, shared by the page tests: reading plotly figures and widgets, following links
through the router (with the ``through_the_router`` fixture of tests/conftest.py), starting a small training."""

from __future__ import annotations

import base64
import json

import numpy as np
from streamlit.testing.v1 import AppTest


def chart(at: AppTest, key: str) -> dict:
    """The figure JSON of the plotly chart whose element id ends with ``key``."""
    found = [c for c in at.get("plotly_chart") if c.proto.id.endswith(f"-{key}")]
    assert found, f"no chart {key}"
    return json.loads(found[0].proto.spec)


def live_chart(at: AppTest, key: str) -> dict:
    """The figure JSON of the live chart (ui.live_chart) drawn with ``key``."""
    found = [c for c in at.get("bidi_component") if c.proto.id.endswith(f"-{key}")]
    assert found, f"no live chart {key}"
    return json.loads(json.loads(found[0].proto.json)["spec"])


def download_options(at: AppTest) -> dict[str, dict]:
    """Each chart's ``toImageButtonOptions`` (the name and title of its PNG and SVG: ui.chart_downloads) by its key:
    the st.plotly_charts' and the live charts' (ui.live_chart); {} for a chart without them."""
    charts = {c.proto.id.rsplit("-", 1)[-1]: json.loads(c.proto.config or "{}") for c in at.get("plotly_chart")}
    for c in at.get("bidi_component"):
        data = json.loads(c.proto.json or "{}")
        if "spec" in data:
            charts[c.proto.id.rsplit("-", 1)[-1]] = data.get("config") or {}
    return {key: config.get("toImageButtonOptions", {}) for key, config in charts.items()}


def array(value: list | dict) -> np.ndarray:
    """A plotly JSON array: a plain list, or plotly's typed array ``{"dtype", "bdata", "shape"}``."""
    if isinstance(value, dict):
        data = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        shape = [int(n) for n in str(value.get("shape", len(data))).split(",")]
        return data.reshape(shape)
    return np.asarray(value, dtype=float)


def widget(at: AppTest, key: str):
    """The widget with ``key``, whatever its kind."""
    for kind in ("radio", "slider", "select_slider", "toggle", "text_input", "number_input", "selectbox", "button"):
        for w in getattr(at, kind):
            if w.key == key:
                return w
    raise AssertionError(f"no widget with key {key}")


# -- a small training on the Train page (tests/pages/test_train.py) ---------------------------------------
def fill_small_training(at: AppTest, epochs: int, name: str) -> None:
    """Fill the Start form for a small training (not started yet) of exactly ``epochs`` epochs: patience off, so
    that a long one lasts until it is stopped (the default preset's patience would end it after a few epochs)."""
    at.radio(key="train_source").set_value(at.radio(key="train_source").options[1]).run()  # small.csv
    at.radio(key="train_preset").set_value("Custom").run()
    at.number_input(key="train_default_c_epochs").set_value(epochs)
    at.number_input(key="train_default_c_patience").set_value(0)
    at.number_input(key="train_default_c_layers").set_value(1)
    at.number_input(key="train_default_c_snaps").set_value(0)
    at.text_input(key="train_default_c_name_small.csv").set_value(name)


def start_small_training(at: AppTest, epochs: int, name: str) -> None:
    fill_small_training(at, epochs, name)
    at.button[0].click().run()  # the form's Start button
    assert not at.exception


# -- links through the router (tests/ui/test_navigation.py) ---------------------------------------------
def current_page(at: AppTest) -> str:
    """The url_path of the page the last run ended on ("" for Home, the router's default page)."""
    return at._registered_pages[at._finished_page_script_hash]["url_pathname"]


def follow(at: AppTest, page_hash: str) -> AppTest:
    """Run the page a link points to, as a browser does on a click (a rerun asking for the link's page hash)."""
    assert page_hash in at._registered_pages, f"the link's page {page_hash} is not one of the router's"
    at._page_hash = page_hash
    at.run()
    at._page_hash = ""  # later runs stay on the page the run ended on, as in the browser
    return at


def followed(at: AppTest) -> dict:
    """The jobs a session follows, by their page's job key: their entries in the server's registry
    (runner.registry, where a page's job is kept; the session keeps their numbers)."""
    from runner.registry import server_registry

    numbers = at.session_state.get("followed_jobs", {})
    by_number = {n: e for (_, n), e in server_registry()._entries.items()}
    return {key: by_number[n] for key, n in numbers.items() if n in by_number}


def page_job(at: AppTest, job_key: str = "train_job"):
    """The job a session's page follows (``job_key``: the page's), or None."""
    entry = followed(at).get(job_key)
    return entry.job if entry is not None else None


def track_jobs(at: AppTest, jobs: dict) -> None:
    """Register ``jobs`` (page job key → (job, label, url_path of its page)) for the local workspace, and
    make the session follow them, as a page that started them does."""
    from runner.registry import server_registry

    at.session_state["followed_jobs"] = {key: server_registry().register("local", key, job, label=label, page=page)
                                         for key, (job, label, page) in jobs.items()}


def ending_banners(at: AppTest) -> list[str]:
    """The banner that says how a training ended, its first paragraph: green, or a warning when the run learned
    nothing beyond always answering the majority class (its second paragraph says so: ui.train_views.finished). A
    small run of a test, on few validation rows, may well be one."""
    return [b.value.split("\n\n")[0] for b in (*at.success, *at.warning) if b.value.startswith("Training ")]
