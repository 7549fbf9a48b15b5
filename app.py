"""Attention Playground: the server's settings, and the router that lists every page in the sidebar, Home
(``ui/home.py``: type a sentence, see what the model predicts and where it looks) first."""

from __future__ import annotations

import streamlit as st

from ui import background, chart_downloads, projector, workspace_views
from ui.home import home
from ui.navigation import PAGE_FILES
from ui.server import configure_server

configure_server()  # process-wide settings of the server (switch interval, torch threads, frozen heap)

# The router: Home, then the pages of ui.navigation, with their labels in the sidebar (with a bare
# `pages/` folder Streamlit labels this page after its file, "app"). No icons: a page's icon is also its favicon, and
# Streamlit fetches a material icon's favicon from fonts.gstatic.com (the app runs offline),
# while an emoji needs an emoji font on the machine (boxes in Debian's headless Chromium). Each
# page sets an emoji favicon of its own (page_setup).
PAGES = [
    st.Page(home, title="Home", url_path="home", default=True),  # ui.train_views.HOME_URL_PATH switches to it
    *(st.Page(p.path, title=p.title, url_path=p.url_path) for p in PAGE_FILES),
]
page = st.navigation(PAGES)
projector.style_every_chart()  # once per process: charts in projector mode's style when a session has it on
projector.setup()  # ?projector=1 and ?hide=…: the sidebar's switch, the page's CSS
workspace_views.sidebar()  # shared mode: the private link to come back, the teacher's Publish (locally: nothing)
background.keep_alive({p.url_path: p for p in PAGES}, page.url_path)  # trainings going on while another page is read
chart_downloads.svg_buttons()  # every chart's toolbar saves an SVG beside the PNG
page.run()
