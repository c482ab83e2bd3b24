"""The unit tier: no browser, no model, the whole tier in seconds. Every test here runs with the embedding model
and Playwright refused, so a test that needs either fails loudly (it belongs in tests/integration, marked
``model`` or ``browser``)."""

from __future__ import annotations

import pytest


def _refuse(what: str):
    def refuse(*args, **kwargs):
        raise AssertionError(f"a unit test must not {what}: move it to tests/integration (and mark it)")

    return refuse


@pytest.fixture(autouse=True)
def no_model_no_browser(monkeypatch):
    import memory_store
    import memory_store.embeddings
    import memory_store.memory

    no_model = _refuse("load the embedding model")
    for module in (memory_store, memory_store.embeddings, memory_store.memory):
        monkeypatch.setattr(module, "get_embedder", no_model)
    monkeypatch.setattr(memory_store.embeddings, "_loaded", no_model)
    import playwright.async_api
    import playwright.sync_api

    monkeypatch.setattr(playwright.async_api, "async_playwright", _refuse("start a browser"))
    monkeypatch.setattr(playwright.sync_api, "sync_playwright", _refuse("start a browser"))


@pytest.fixture(scope="session")
def embedder():
    """Refused in the unit tier (the real model is for tests/integration)."""
    raise AssertionError("a unit test must not load the embedding model: move it to tests/integration")
