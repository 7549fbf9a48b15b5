"""The fixtures every test folder shares, defined here once (tests/project/test_suite_layout.py checks that no
test module defines one again), and the e2e mark of the browser tests."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _own_vectors_cache(tmp_path_factory, monkeypatch):
    """Parsed word-vector files go to a folder of the test session's, not the user's ~/.cache."""
    monkeypatch.setenv("ATTENTION_PLAYGROUND_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.fixture(autouse=True)
def _own_job_registry(monkeypatch):
    """Each test its own registry of the server's jobs (runner.registry): every test's local workspace is
    'local', and a job one test left there would be re-attached by the next test's pages."""
    from runner import registry

    monkeypatch.setattr(registry, "_server_registry", registry.JobRegistry())


@pytest.fixture
def runs_dir(tmp_path, monkeypatch):
    """The app's runs root for this test: ``$ATTENTION_PLAYGROUND_RUNS`` in a temporary folder (not made yet)."""
    monkeypatch.setenv("ATTENTION_PLAYGROUND_RUNS", str(tmp_path / "runs"))
    return tmp_path / "runs"


@pytest.fixture
def shared(runs_dir, monkeypatch):
    """The app in shared mode (``$ATTENTION_PLAYGROUND_SHARED``) on the test's own runs root: its path."""
    monkeypatch.setenv("ATTENTION_PLAYGROUND_SHARED", "1")
    return runs_dir


@pytest.fixture
def cli(capsys):
    """The command line in this process: ``cli(*args, cwd=ROOT)`` runs ``attention_core.cli.main(args)`` and gives
    its exit status, stdout and stderr as a process would (tests.helpers.cli.cli_in_process; ``cli_process`` there
    starts a real one, for the process contract)."""
    from tests.helpers.cli import cli_in_process

    return lambda *args, cwd=ROOT: cli_in_process(capsys, *args, cwd=cwd)


@pytest.fixture(scope="session")
def emb():
    """The bundled word vectors (GloVe 6B 50d), loaded once for the test session."""
    from attention_core import load_embeddings

    return load_embeddings()


@pytest.fixture(scope="module")
def ds():
    """The tiny sentiment set (:func:`tests.helpers.tiny_data.tiny_sentiment`)."""
    from tests.helpers.tiny_data import tiny_sentiment

    return tiny_sentiment()


@pytest.fixture(scope="module")
def bundled():
    """The bundled run (data/default_run), loaded once per test module."""
    from attention_core import load_run

    return load_run(ROOT / "data" / "default_run")


@pytest.fixture(scope="module")
def one_torch_thread():
    """Torch on one thread for the module's tests (small batches: the fast setting, benchmarks/README.md)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def through_the_router(monkeypatch):
    """AppTest serves app.py through its st.navigation, as the server does (it resets the pages/
    folder mode before every run: this sets it back once the folder has been seen). A module asks for it
    with ``pytestmark = pytest.mark.usefixtures("through_the_router")``; tests.helpers.apptest.follow then
    follows a link as the browser does."""
    from streamlit.runtime.pages_manager import PagesManager

    init = PagesManager.__init__

    def router_only(self, *args, **kwargs):
        init(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    monkeypatch.setattr(PagesManager, "__init__", router_only)


@pytest.fixture(scope="module")
def server(request, tmp_path_factory):
    """``streamlit run app.py`` for the test module (tests.helpers.browser.app_server): its URL. Its runs root
    and its parsed word-vector files are folders of its own; a module adds to the server's environment with
    ``pytest.mark.server_env(NAME="value")`` in its ``pytestmark`` (e.g. shared mode)."""
    from tests.helpers.browser import CHROMIUM, app_server

    assert shutil.which(CHROMIUM) or Path(CHROMIUM).exists(), "chromium is not installed"
    marker = request.node.get_closest_marker("server_env")
    env = {"ATTENTION_PLAYGROUND_CACHE": str(tmp_path_factory.mktemp("cache")), **(marker.kwargs if marker else {})}
    with app_server(tmp_path_factory.mktemp("runs"), env=env) as url:
        yield url


def pytest_configure(config):
    """Under pytest-xdist (``-n 2``, the quick run), each worker and what it starts trains on one torch
    thread: two workers of two threads each on two cores oversubscribe them, and the run is slower."""
    if hasattr(config, "workerinput"):
        os.environ.setdefault("OMP_NUM_THREADS", "1")


def pytest_collection_modifyitems(config, items):
    """Every test under tests/browser/, and every test that starts a server, is an end-to-end test
    (``-m "not e2e"`` leaves them out)."""
    browser = ROOT / "tests" / "browser"
    for item in items:
        if item.path.is_relative_to(browser) or "server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.e2e)
