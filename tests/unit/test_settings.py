"""The settings objects: every BRT_* variable read in one place (memory_store.settings), typed, each layer's in a
record of its own (the store's ``Settings``, the orchestrator's ``RunSettings``), with clear errors for bad values."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_store import SettingsError
from memory_store.settings import VARIABLES, Settings, brt_home, settings
from orchestrator import config
from orchestrator.settings import ALL_VARIABLES, RunSettings


def test_defaults_with_an_empty_environment():
    s, r = Settings.from_env({}), RunSettings.from_env({})
    assert s.home == Path("~/.brt").expanduser()
    assert s.store_uri is None and s.embed_model is None and s.embed_backend is None
    assert s.torch_threads == 0 and s.cpu_threads >= 1
    assert s.lock_timeout_s == 600.0 and s.lease_ttl_s == 60.0 and s.model_cache is None
    assert r.browser is None and r.devtools_mcp is None and r.host_resolver_rules is None
    assert r.mcp_allow_attach is False and r.ray_address is None and r.evidence_scorer is None


def test_every_variable_fills_its_field(tmp_path):
    values = {
        "BRT_HOME": str(tmp_path / "home"),
        "BRT_STORE_URI": "s3://bucket/prefix",
        "BRT_EMBED_MODEL": "BAAI/bge-small-en-v1.5",
        "BRT_EMBED_BACKEND": "onnx-int8",
        "BRT_TORCH_THREADS": "3",
        "BRT_MODEL_CACHE": str(tmp_path / "models"),
        "BRT_LOCK_TIMEOUT": "1.5",
        "BRT_LEASE_TTL": "4",
        "BRT_BROWSER": "/usr/bin/chromium",
        "BRT_DEVTOOLS_MCP": "/opt/mcp.js",
        "BRT_HOST_RESOLVER_RULES": "MAP a.test 127.0.0.1",
        "BRT_EVIDENCE_SCORER": str(tmp_path / "scorer.json"),
        "BRT_EVIDENCE_READER": str(tmp_path / "reader"),
        "BRT_MCP_ALLOW_ATTACH": "yes",
        "BRT_RAY_ADDRESS": "ray://head.example:10001",
    }
    assert set(values) == {v.name for v in ALL_VARIABLES}  # the tables list every variable, once
    assert len(ALL_VARIABLES) == len(values) and set(VARIABLES) < set(ALL_VARIABLES)
    s, r = Settings.from_env(values), RunSettings.from_env(values)
    assert s.home == tmp_path / "home" and s.model_cache == tmp_path / "models"
    assert (s.store_uri, s.embed_model) == ("s3://bucket/prefix", "BAAI/bge-small-en-v1.5")
    assert s.embed_backend == "onnx-int8"
    assert (s.torch_threads, s.cpu_threads, s.lock_timeout_s, s.lease_ttl_s) == (3, 3, 1.5, 4.0)
    assert (r.browser, r.devtools_mcp) == ("/usr/bin/chromium", "/opt/mcp.js")
    assert (r.evidence_scorer, r.evidence_reader) == (tmp_path / "scorer.json", tmp_path / "reader")
    assert r.host_resolver_rules == "MAP a.test 127.0.0.1" and r.mcp_allow_attach is True
    assert r.ray_address == "ray://head.example:10001"


def test_empty_values_count_as_unset():
    env = {"BRT_HOME": "", "BRT_LOCK_TIMEOUT": "  ", "BRT_BROWSER": ""}
    s, r = Settings.from_env(env), RunSettings.from_env(env)
    assert s.home == Path("~/.brt").expanduser() and s.lock_timeout_s == 600.0 and r.browser is None


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("BRT_LOCK_TIMEOUT", "soon", "not a number of seconds"),
        ("BRT_LOCK_TIMEOUT", "-1", ">= 0"),
        ("BRT_LEASE_TTL", "0", ">= 0.001"),
        ("BRT_LEASE_TTL", "nan", ">= 0.001"),
        ("BRT_TORCH_THREADS", "two", "whole number"),
        ("BRT_TORCH_THREADS", "-2", r"0 \(every core\) or more"),
        ("BRT_RAY_ADDRESS", "10.0.0.5:6379", "ray://host:port"),
        ("BRT_RAY_ADDRESS", "ray://", "ray://host:port"),
    ],
)
def test_a_bad_value_names_the_variable(name, value, message):
    record = RunSettings if name in {v.name for v in ALL_VARIABLES} - {v.name for v in VARIABLES} else Settings
    with pytest.raises(SettingsError, match=message) as err:
        record.from_env({name: value})
    assert f"{name}={value!r}" in str(err.value)
    assert isinstance(err.value, ValueError)


def test_read_at_each_call_and_one_brt_home(monkeypatch, tmp_path):
    monkeypatch.setenv("BRT_HOME", str(tmp_path / "a"))
    assert settings().home == brt_home() == config.brt_home() == tmp_path / "a"
    assert config.memory_basepath() == tmp_path / "a" / "memory"
    monkeypatch.setenv("BRT_HOME", str(tmp_path / "b"))
    assert brt_home() == tmp_path / "b"


def test_charter_values_are_overridden_by_the_environment(monkeypatch):
    from orchestrator.charter import parse_charter

    charter = parse_charter(
        {
            "id": "over",
            "title": "t",
            "allowed_domains": ["example.org"],
            "seeds": ["https://example.org/"],
            "memory": {"embedding_model": "BAAI/bge-small-en-v1.5", "uri": "s3://from-charter/x"},
        },
        source="<test>",
    )
    monkeypatch.delenv("BRT_EMBED_MODEL", raising=False)
    monkeypatch.delenv("BRT_STORE_URI", raising=False)
    assert config.embedding_model(charter) == "BAAI/bge-small-en-v1.5"
    assert config.store_uri(charter) == "s3://from-charter/x"
    monkeypatch.setenv("BRT_EMBED_MODEL", "BAAI/bge-m3")
    monkeypatch.setenv("BRT_STORE_URI", "s3://from-env/y")
    assert config.embedding_model(charter) == "BAAI/bge-m3"
    assert config.store_uri(charter) == "s3://from-env/y"
