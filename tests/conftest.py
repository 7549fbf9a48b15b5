"""Shared test set-up."""

from __future__ import annotations

import pytest


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


@pytest.fixture(scope="session")
def emb():
    """The bundled word vectors (GloVe 6B 50d), loaded once for the test session."""
    from attention_core import load_embeddings

    return load_embeddings()


@pytest.fixture(scope="module")
def ds():
    """The tiny sentiment set (:func:`tests.tiny_data.tiny_sentiment`)."""
    from tests.tiny_data import tiny_sentiment

    return tiny_sentiment()
