"""Streamlit blocks the explainer pages share: a table of numbers, captioned charts side by side, the code behind them.

The figures themselves are built in :mod:`ui.explainer_figures` and :mod:`ui.figures`; the
per-page views are :mod:`ui.self_attention_views`, :mod:`ui.cross_attention_views` and
:mod:`ui.backprop_views`.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence

import pandas as pd
import plotly.graph_objects as go
import streamlit as st


def source(*objects: object, sep: str = "\n\n") -> str:
    """The source code of ``objects`` (functions, classes), one after the other."""
    return sep.join(inspect.getsource(o) for o in objects)


def code_expander(label: str, *sources: str) -> None:
    """A closed expander ``label`` holding one Python code block per entry of ``sources``."""
    with st.expander(label):
        for text in sources:
            st.code(text, language="python")


def numbers(data: pd.DataFrame | Mapping[str, Sequence], formats: Mapping[str, str] | None = None, *,
            helps: Mapping[str, str] | None = None, **kwargs) -> None:
    """``data`` as a table without its index, each column named in ``formats`` printed with its format (e.g. "%.4f").

    ``helps`` adds a column's tooltip; other keyword arguments go to ``st.dataframe`` (key, height).
    """
    helps = helps or {}
    config = {c: st.column_config.NumberColumn(format=f, help=helps.get(c)) for c, f in (formats or {}).items()}
    st.dataframe(pd.DataFrame(data), hide_index=True, column_config=config, **kwargs)


def charts_side_by_side(*charts: tuple[str | None, go.Figure, str, dict], gap: str = "large") -> None:
    """One column per ``(label, figure, key, config)``: the label (markdown, if any) above its figure, drawn with
    that plotly config (its downloads' name and title: :func:`ui.chart_downloads.config`)."""
    for col, (label, fig, key, config) in zip(st.columns(len(charts), gap=gap), charts, strict=True):
        if label is not None:
            col.markdown(label)
        col.plotly_chart(fig, key=key, config=config)
