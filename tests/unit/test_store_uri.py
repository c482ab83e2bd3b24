"""Where a charter's store lives (memory.uri / BRT_STORE_URI) and the object-store helpers that need no server."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_store import is_remote_uri, redact_uri
from memory_store._remote import ObjectDir, local_cache
from orchestrator.charter import parse_charter
from orchestrator.config import storage_options, store_uri
from orchestrator.errors import CharterError

SECRET = "s3cr3t-never-printed"


def _charter(memory: dict) -> object:
    return parse_charter(
        {
            "id": "uri_test",
            "title": "t",
            "allowed_domains": ["example.org"],
            "seeds": ["https://example.org/"],
            "memory": memory,
        },
        source="<test>",
    )


def test_charter_uri_and_env_precedence(monkeypatch):
    monkeypatch.delenv("BRT_STORE_URI", raising=False)
    c = _charter({"uri": "s3://bucket/prefix", "storage_options": {"aws_secret_access_key": SECRET}})
    assert store_uri(c) == "s3://bucket/prefix"
    assert storage_options(c) == {"aws_secret_access_key": SECRET}
    monkeypatch.setenv("BRT_STORE_URI", "s3://other/p")
    assert store_uri(c) == "s3://other/p"
    assert store_uri(_charter({})) == "s3://other/p"
    monkeypatch.delenv("BRT_STORE_URI")
    assert store_uri(_charter({})) is None and storage_options(_charter({})) == {}


def test_storage_options_never_shown(monkeypatch):
    c = _charter({"uri": "s3://b/p", "storage_options": {"aws_secret_access_key": SECRET}})
    assert SECRET not in repr(c) and SECRET not in str(c.model_dump()) and SECRET not in c.model_dump_json()
    assert SECRET not in repr(ObjectDir("s3://b/p", "uri_test", {"aws_secret_access_key": SECRET}))


def test_bad_memory_fields_name_the_field():
    with pytest.raises(CharterError, match="memory.storage_options"):
        _charter({"storage_options": ["not", "a", "mapping"]})
    with pytest.raises(CharterError, match="memory.url"):
        _charter({"url": "s3://typo"})


def test_uri_helpers(tmp_path):
    assert is_remote_uri("s3://b/p") and is_remote_uri("gs://b") and is_remote_uri("az://c/p")
    assert not is_remote_uri(None) and not is_remote_uri("/data/stores") and not is_remote_uri("file:///x")
    assert not is_remote_uri("C:/stores")  # a Windows drive letter is a path
    assert redact_uri("s3://key:secret@bucket/p") == "s3://bucket/p"
    assert redact_uri("s3://bucket/p") == "s3://bucket/p"
    a, b = local_cache(tmp_path, "s3://b1/p", "c"), local_cache(tmp_path, "s3://b2/p", "c")
    assert a != b and a.name == "c" and a.parent.parent == tmp_path / ".remote"
    assert local_cache(tmp_path, "s3://b1/p/", "c") == a
    assert isinstance(a, Path)
