"""Shared fixtures. The real embedding model is loaded once per test session (memory_store caches it per
process); every test gets its own BRT_HOME in a temp folder."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

pytest_plugins = ["tests.fixtures_site", "tests.fixtures_badserver"]


@pytest.fixture(scope="session")
def embedder():
    """The real bundled embedding model, loaded once for the whole session."""
    from memory_store.embeddings import get_embedder

    return get_embedder()


@pytest.fixture
def brt_home(tmp_path, monkeypatch):
    home = tmp_path / "brt_home"
    home.mkdir()
    monkeypatch.setenv("BRT_HOME", str(home))
    return home
