"""Every link between pages (``st.page_link``, ``st.switch_page``) leads to its page through the router.

The server serves ``app.py``'s ``st.navigation`` (``ui.common.use_the_router``), where Home is a
function page and every other page is known by its ``url_path``. AppTest's stand-in runtime
serves a ``pages/`` folder the old way, where ``app.py`` is a page of its own: a link to
``"app.py"`` works there and fails in the browser (``StreamlitPageNotFoundError``). These tests
run AppTest through the router, as the browser is served, and follow each link by the page hash
it carries, as the browser does. A new link is found by the first test, and needs a test here.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from streamlit.testing.v1 import AppTest

from tests.helpers.apptest import current_page, follow, track_jobs

TIMEOUT = 90
ROOT = Path(__file__).resolve().parents[2]

# Every call that leads to another page, as (file, its target as written): the test that follows it.
FOLLOWED = {
    ("ui/home.py", "page_link", "'pages/1_Train.py'"): "test_home_links_lead_to_their_pages",
    ("ui/home.py", "page_link", "'pages/2_Inspect.py'"): "test_home_links_lead_to_their_pages",
    ("ui/background.py", "page_link", "pages[page]"): "test_sidebar_links_to_a_training_lead_to_its_page",
    ("ui/train_views.py", "switch_page", "home_page()"): "test_open_on_home_opens_the_run_on_home",
    ("ui/quiz_views.py", "page_link", "page.path"): "test_check_yourself_links_to_the_view_that_shows_why",
}


pytestmark = pytest.mark.usefixtures("runs_dir", "through_the_router")  # a runs root of its own, AppTest through the router (conftest)




def link_calls() -> set[tuple[str, str, str]]:
    """Every st.page_link / st.switch_page call in the app: (file, function, first argument as written)."""
    files = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py")), *sorted((ROOT / "ui").rglob("*.py"))]
    found = set()
    for file in files:
        for node in ast.walk(ast.parse(file.read_text(), str(file))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("page_link", "switch_page")):
                target = ast.unparse(node.args[0]) if node.args else ast.unparse(node.keywords[0].value)
                found.add((file.relative_to(ROOT).as_posix(), node.func.attr, target.replace('"', "'")))
    return found


def test_every_link_between_pages_has_a_test_that_follows_it():
    assert link_calls() == set(FOLLOWED), "a link was added or changed: follow it in a test here, and list it"
    assert all(name in globals() for name in FOLLOWED.values())


def test_home_links_lead_to_their_pages():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception  # a link to an unknown page fails the page that draws it
    assert current_page(at) == "" and at.title[0].value == "Attention Playground"
    links = {link.proto.label: link.proto.page_script_hash for link in at.get("page_link")}
    assert set(links) == {"Train your own model", "Inspect a model in depth"}
    for label, url_path, title in [("Train your own model", "Train", "Train a model"),
                                   ("Inspect a model in depth", "Inspect", ":material/biotech: Inspect a model")]:
        follow(at, links[label])
        assert not at.exception, at.exception
        assert current_page(at) == url_path and at.title[0].value == title
        follow(at, next(h for h, p in at._registered_pages.items() if p["url_pathname"] == ""))  # back home


class DoneJob(SimpleNamespace):
    """What ui.background asks of a tracked job (a TrainingJob or JobSequence)."""

    alive, done = False, True

    def status(self):
        return SimpleNamespace(state="finished", epoch=3, epochs=3, progress=1.0)

    def heartbeat(self):
        pass


def tracked_pages() -> set[str]:
    """The pages that train (they call ``ui.training_page.training_page``), by their router address."""
    from ui.navigation import page_of

    return {page_of(f).url_path for f in (ROOT / "pages").glob("*.py") if "training_page(" in f.read_text()}


def test_sidebar_links_to_a_training_lead_to_its_page():
    pages = tracked_pages()
    assert pages == {"Train", "Seed_experiment"}
    for page in sorted(pages):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
        track_jobs(at, {"job": (DoneJob(), "A training", page)})
        at.run()
        assert not at.exception, at.exception
        link = next(x for x in at.sidebar.get("page_link") if x.proto.label.startswith("Results on"))
        follow(at, link.proto.page_script_hash)
        assert not at.exception, at.exception
        assert current_page(at) == page


def test_open_on_home_opens_the_run_on_home(runs_dir):
    shutil.copytree(ROOT / "data" / "default_run", runs_dir / "mine")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run()
    at.switch_page("pages/1_Train.py").run()  # by the router's hash for that file
    assert current_page(at) == "Train"
    at._page_hash = ""  # (stay on the page the run ends on, as the browser does)
    at.selectbox(key="train_manage_pick").set_value("mine")
    at.button(key="train_open").click().run()
    assert not at.exception, at.exception  # was: Could not find page: `app.py`
    assert current_page(at) == "" and at.title[0].value == "Attention Playground"
    assert at.selectbox(key="home_run").value == "mine"


def test_check_yourself_links_to_the_view_that_shows_why():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.session_state["quiz_seed"] = 0
    at.run()
    at.switch_page("pages/8_Check_yourself.py").run()
    at._page_hash = ""
    followed = set()
    for _ in range(8):  # the sentence's questions, of every kind: follow one link to each page they lead to
        state = at.session_state["quiz_state"]
        at.radio(key=f"quiz_choice_{len(state.asked)}").set_value(state.current.answer).run()
        at.button(key="quiz_check").click().run()
        (link,) = at.get("page_link")
        target = state.current.view.page
        if target not in followed:
            follow(at, link.proto.page_script_hash)
            assert not at.exception, at.exception
            assert current_page(at) == target
            followed.add(target)
            at.switch_page("pages/8_Check_yourself.py").run()  # back: the same question, revealed
            at._page_hash = ""
        at.button(key="quiz_next").click().run()
    assert followed == {"Inspect", "Faithfulness"}
