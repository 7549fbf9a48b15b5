"""The app's pages after Home, once: their file, sidebar title and address.

The router (``app.py``) builds its ``st.navigation`` from this list, and a page that trains looks
its own entry up by its file (:func:`page_of`), so the "Watch on …" links in the sidebar lead to
the address the router gives it. Light (no Streamlit, no torch): the router imports it on the
home page's first run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class PageFile:
    path: str  # the page's script, from the app's folder
    title: str  # its label in the sidebar
    url_path: str  # its address, relative to the app's root URL


PAGE_FILES = (
    PageFile("pages/1_Train.py", "Train", "Train"),
    PageFile("pages/2_Inspect.py", "Inspect", "Inspect"),
    PageFile("pages/3_Self_attention.py", "Self attention", "Self_attention"),
    PageFile("pages/4_Cross_attention_and_masks.py", "Cross attention and masks", "Cross_attention_and_masks"),
    PageFile("pages/5_Backpropagation.py", "Backpropagation", "Backpropagation"),
    PageFile("pages/6_Seed_experiment.py", "Seed experiment", "Seed_experiment"),
    PageFile("pages/7_Faithfulness.py", "Faithfulness", "Faithfulness"),
    PageFile("pages/8_Check_yourself.py", "Check yourself", "Check_yourself"),
)


def page_of(script: str | Path) -> PageFile:
    """The entry of the page whose script is at ``script`` (pass the page's ``__file__``)."""
    path = Path(script).resolve()
    for page in PAGE_FILES:
        if (ROOT / page.path).resolve() == path:
            return page
    raise LookupError(f"{script} is not one of the app's pages: add it to ui.navigation.PAGE_FILES")
