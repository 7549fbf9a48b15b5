"""Reading plotly figures out of Streamlit's AppTest, shared by the page tests."""

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
