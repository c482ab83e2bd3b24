"""Every model file is hash-checked on load (issue 41.7): the evidence reader's ONNX file and its tokenizer, the
embedder's cached ONNX export and the tokenizer beside the weights. A file whose bytes changed since its hash was
recorded (even behind an unchanged size and modification time, which the export cache's key trusts) is refused
with a clear error, never loaded; the bytes loaded are the bytes checked. Real files, real ONNX Runtime."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from memory_store.errors import EmbeddingModelError
from orchestrator.errors import EvidenceModelError


def _same_size_edit(path: Path, old: bytes, new: bytes) -> None:
    """Replace ``old`` with ``new`` (same length) in ``path`` and put its modification time back."""
    assert len(old) == len(new)
    st = path.stat()
    data = path.read_bytes()
    assert old in data
    path.write_bytes(data.replace(old, new, 1))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size


def _digest(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def reader_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the shipped reader with the sha256 of each file beside it, as BRT_EVIDENCE_READER."""
    from orchestrator.evidence import reader

    folder = tmp_path / "reader"
    (folder / "reader-tokenizer").mkdir(parents=True)
    shutil.copyfile(reader.READER_FILE, folder / "reader.onnx")
    shutil.copyfile(reader.TOKENIZER_FILE, folder / "reader-tokenizer" / "tokenizer.json")
    for f in (folder / "reader.onnx", folder / "reader-tokenizer" / "tokenizer.json"):
        f.with_name(f.name + ".sha256").write_text(_digest(f) + "\n")
    monkeypatch.setenv("BRT_EVIDENCE_READER", str(folder))
    reader._load.cache_clear()
    yield folder
    reader._load.cache_clear()


def test_the_shipped_reader_files_are_all_recorded() -> None:
    from orchestrator.evidence import reader
    from orchestrator.evidence.scorer import recorded_sha256

    for path in (reader.READER_FILE, reader.TOKENIZER_FILE):
        assert recorded_sha256(path) == _digest(path), path


def test_the_reader_loads_checked_files_and_refuses_a_changed_tokenizer(reader_folder: Path) -> None:
    from orchestrator.evidence import reader

    logits = reader.load_reader().logits("When was the lamp converted?", ["It was converted in 1953.", "No."])
    assert len(logits) == 2
    reader._load.cache_clear()
    tok = reader_folder / "reader-tokenizer" / "tokenizer.json"
    # one vocabulary entry renamed (the same size): a tokenizer that reads some texts differently
    _same_size_edit(tok, b'"lamp":', b'"lamb":')
    with pytest.raises(EvidenceModelError, match="tokenizer.*does not match the recorded"):
        reader.load_reader()


def test_the_reader_refuses_a_changed_onnx_file(reader_folder: Path) -> None:
    from orchestrator.evidence import reader

    onnx = reader_folder / "reader.onnx"
    data = bytearray(onnx.read_bytes())
    data[-1] ^= 0x01  # one bit of the last weight
    onnx.write_bytes(bytes(data))
    with pytest.raises(EvidenceModelError, match="reader.onnx: sha256 .* does not match the recorded"):
        reader.load_reader()


@pytest.fixture
def model_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: object) -> Path:
    """The bundled model's folder and its cached ONNX export, copied under a fresh BRT_MODEL_CACHE (the same
    files give the same cache key, so the copied export is the one found)."""
    from memory_store.embeddings import DEFAULT_MODEL, default_model_path
    from memory_store.model_export import export_folder, find_export

    source = default_model_path()
    found = find_export(DEFAULT_MODEL, source)
    if found is None:
        pytest.skip("the bundled model has no cached ONNX export (bash scripts/dev.sh setup makes it)")
    model = tmp_path / source.name
    shutil.copytree(source, model)
    cache = tmp_path / "cache"
    monkeypatch.setenv("BRT_MODEL_CACHE", str(cache))
    target = export_folder(DEFAULT_MODEL, model, cache)
    target.mkdir(parents=True)
    for name in ("manifest.json", found.fp32.name):
        shutil.copyfile(found.folder / name, target / name)
    return model


def _onnx_embedder(model: Path) -> object:
    from memory_store.embeddings import DEFAULT_MODEL, Embedder

    return Embedder(DEFAULT_MODEL, model, backend="onnx")


def test_the_embedder_loads_a_checked_export(model_copy: Path) -> None:
    emb = _onnx_embedder(model_copy)
    assert emb.embed_documents(["The lamp was converted in 1953."]).shape[0] == 1  # type: ignore[attr-defined]


def test_the_embedder_refuses_a_changed_export(model_copy: Path) -> None:
    from memory_store.model_export import find_export

    found = find_export("sentence-transformers/all-MiniLM-L6-v2", model_copy)
    assert found is not None
    data = bytearray(found.fp32.read_bytes())
    data[-1] ^= 0x01
    found.fp32.write_bytes(bytes(data))
    with pytest.raises(EmbeddingModelError, match="cached ONNX export .* does not match the recorded"):
        _onnx_embedder(model_copy)


def test_the_embedder_refuses_a_tokenizer_changed_behind_its_size_and_time(model_copy: Path) -> None:
    from memory_store.model_export import cache_root, model_key

    key = model_key(model_copy)  # records every file's hash (the cache then trusts size and time)
    tok = model_copy / "tokenizer.json"
    vocab = json.loads(tok.read_text(encoding="utf-8"))["model"]["vocab"]
    a, b = next((w, w[:-1] + chr(ord(w[-1]) + 1)) for w in vocab if w.isalpha() and len(w) > 4
                and w[:-1] + chr(ord(w[-1]) + 1) not in vocab)
    _same_size_edit(tok, json.dumps(a).encode(), json.dumps(b).encode())
    assert model_key(model_copy) == key  # the cache key did not see the change...
    assert (cache_root() / "file-hashes.json").is_file()
    with pytest.raises(EmbeddingModelError, match="tokenizer.json: sha256 .* does not match the recorded"):
        _onnx_embedder(model_copy)  # ...the load does
