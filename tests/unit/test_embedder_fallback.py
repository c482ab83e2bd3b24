"""Which engine loads when one cannot: the fallbacks of ``get_embedder`` and ``full_precision`` (pure logic: the
engines are stand-ins that fail on demand; the real engines are tested in tests/integration/test_onnx_backend.py)."""

from __future__ import annotations

import logging

import pytest

import memory_store.embeddings as embeddings
from memory_store.embeddings import DEFAULT_MODEL, full_precision
from memory_store.errors import EmbeddingModelError

# the unit tier's guard replaces these; with the stand-in engines below they load no model
_real_loaded = embeddings._loaded
REAL_GET = embeddings.get_embedder


@pytest.fixture
def engines(monkeypatch, tmp_path):
    """Stand-in engines: ``broken`` is the set of backends that fail to load; returns (broken, loads tried)."""
    broken: set[str] = set()
    tried: list[str] = []

    class Engine:
        def __init__(self, name, path, *, backend):
            tried.append(backend)
            if backend in broken:
                raise EmbeddingModelError(f"{backend} cannot load")
            self.name, self.backend, self.precision = name, backend, embeddings.PRECISIONS[backend]

    monkeypatch.setattr(embeddings, "Embedder", Engine)
    monkeypatch.setattr(embeddings, "_cache", {})
    monkeypatch.setattr(embeddings, "_loaded", _real_loaded)
    monkeypatch.setattr(embeddings, "_resolve_model_path", lambda name: tmp_path)
    monkeypatch.delenv("BRT_EMBED_BACKEND", raising=False)
    return broken, tried


def test_a_new_store_falls_back_from_fp32_onnx_to_flagembedding(engines, caplog):
    broken, tried = engines
    broken.add("onnx")
    with caplog.at_level(logging.WARNING, logger="memory_store.embeddings"):
        emb = REAL_GET()
    assert (emb.backend, tried) == ("flag", ["onnx", "flag"])
    assert any("onnx unavailable" in r.getMessage() for r in caplog.records)


def test_an_int8_default_would_fall_back_to_fp32_onnx_then_flagembedding(engines, monkeypatch):
    broken, tried = engines
    monkeypatch.setattr(embeddings, "DEFAULT_BACKEND", "onnx-int8")  # the switch docs/storage.md describes
    broken.add("onnx-int8")
    assert REAL_GET().backend == "onnx" and tried == ["onnx-int8", "onnx"]
    embeddings._cache.clear()
    broken.add("onnx")
    assert REAL_GET().backend == "flag"


def test_a_store_keeps_its_precision_when_its_engine_cannot_load(engines):
    broken, tried = engines
    broken.update({"onnx-int8", "onnx"})
    with pytest.raises(EmbeddingModelError, match="onnx-int8 cannot load"):
        REAL_GET(precision="int8")  # never fp32 vectors into an int8 store
    assert tried == ["onnx-int8"]
    assert REAL_GET(precision="fp32").backend == "flag"  # fp32 either way


def test_a_named_engine_is_never_replaced(engines, monkeypatch):
    broken, _ = engines
    broken.add("onnx-int8")
    monkeypatch.setenv("BRT_EMBED_BACKEND", "onnx-int8")
    with pytest.raises(EmbeddingModelError, match="onnx-int8 cannot load"):
        REAL_GET()
    with pytest.raises(EmbeddingModelError, match="onnx-int8 cannot load"):
        REAL_GET(backend="onnx-int8")


def test_full_precision_is_fp32_whatever_the_stores_engine(engines, monkeypatch):
    broken, _ = engines
    monkeypatch.setenv("BRT_EMBED_BACKEND", "onnx-int8")
    assert (full_precision().backend, full_precision().precision) == ("onnx", "fp32")
    embeddings._cache.clear()
    broken.add("onnx")
    assert full_precision().backend == "flag"
    monkeypatch.setenv("BRT_EMBED_BACKEND", "flag")
    assert full_precision(DEFAULT_MODEL).backend == "flag"
    assert full_precision("BAAI/bge-small-en-v1.5").backend == "flag"  # other models run on FlagEmbedding only
