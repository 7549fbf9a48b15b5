"""Every chart's toolbar saves an SVG as well as a PNG, each titled and named after what the chart shows.

plotly.js's camera saves one format (``toImageButtonOptions``); a second button needs a click function, which
``st.plotly_chart``'s config (JSON) cannot carry. So the router mounts this once per page: a Streamlit v2
component (``chart_downloads/svg_button.js``, in the page itself) that puts an SVG button beside the camera of
every plotly chart on the page, ``st.plotly_chart``'s and the live charts' alike. plotly.js makes the file in the
browser; nothing is fetched.

A file for a slide says what it shows: :func:`config` (a chart's plotly config) names the file after the model,
the sentence, the layer and the head, and gives the picture a title naming them, added above the chart's own
title in the file only (the page shows them around the chart). A chart without one is named after the page and
its own title, and a chart without a title gets the page's name as one.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from attention_core.text import file_stem

SVG_TITLE = "Download plot as an SVG"  # the button's tooltip (svg_button.js)
_JS = (Path(__file__).with_name("chart_downloads") / "svg_button.js").read_text(encoding="utf-8")
_component = st.components.v2.component("attention_playground.svg_download_buttons", js=_JS, isolate_styles=False)


def svg_buttons() -> None:
    """Mount the page's SVG buttons (draws nothing of its own)."""
    _component(key="chart_downloads_svg_buttons")


def title(what: str, *, model: str | None = None, sentence: str | None = None, layer: str | None = None,
          head: str | None = None, detail: str | None = None) -> str:
    """A chart's title in an exported file: "Attention · default model · “the food was good” · Layer 2 · head 1"
    (a sentence over 60 characters is cut with "…"), then ``detail`` if given."""
    quoted = f"“{sentence if len(sentence) <= 60 else sentence[:59].rstrip() + '…'}”" if sentence else None
    return " · ".join(part for part in (what, model, quoted, layer, head, detail) if part)


def filename(what: str, *, model: str | None = None, sentence: str | None = None, layer: str | None = None,
             head: str | None = None, detail: str | None = None) -> str:
    """A chart's file name, without its extension: what it shows, the model, the sentence (its first 40
    characters), the layer, the head and the detail, each as lower-case letters, digits and "-", joined by "_".

    Example:
        >>> filename("Attention", model="demo", sentence="It's GREAT!", layer="Layer 2", head="head 1")
        'attention_demo_it-s-great_layer-2_head-1'
    """
    parts = ((what, 30), (model, 30), (sentence, 40), (layer, 20), (head, 20), (detail, 40))
    return "_".join(file_stem(part, limit).strip("-") for part, limit in parts if part)


def config(what: str, *, model: str | None = None, sentence: str | None = None, layer: str | None = None,
           head: str | None = None, detail: str | None = None) -> dict:
    """A chart's plotly config: its toolbar's PNG and SVG are saved as :func:`filename` with :func:`title` on
    top (``toImageButtonOptions``: plotly.js reads ``filename`` and ``format``; ``title`` is read by
    ``chart_downloads/svg_button.js``). ``what`` says what the chart is ("Attention", "Probabilities"…); the
    model is the run's name (or what stands for it: a data set, a page's example); the layer and head are as the
    page names them ("Layer 2", "Pooling", "head 1", "average of heads"); ``detail`` is anything else the chart
    depends on ("query “journey”", "heads 1.2 off")."""
    view = {"model": model, "sentence": sentence, "layer": layer, "head": head, "detail": detail}
    return {"toImageButtonOptions": {"format": "png", "filename": filename(what, **view), "title": title(what, **view)}}
