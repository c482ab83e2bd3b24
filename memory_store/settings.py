"""brt's settings from the environment: every ``BRT_*`` variable is read here and nowhere else.

``settings()`` reads them all into one typed, frozen ``Settings`` at the moment it is called (a process or a test
that changes its environment is seen at the next call; nothing is cached). An empty variable counts as unset. A
value brt cannot use is a ``SettingsError`` that names the variable, whichever setting the caller wanted.

The variables, their defaults and meanings are listed in ``VARIABLES`` (the configuration page of the docs shows
the same table). The charter's own values come first where both exist: ``BRT_EMBED_MODEL`` and ``BRT_STORE_URI``
override the charter's ``memory.embedding_model`` and ``memory.uri`` (``orchestrator.config`` applies that).

This module sits in the lowest package so that every package can read it (``memory_store`` never imports the
other two).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import SettingsError

__all__ = ["VARIABLES", "Settings", "SettingsError", "Variable", "brt_home", "settings"]

DEFAULT_HOME = "~/.brt"
DEFAULT_LOCK_TIMEOUT_S = 600.0
DEFAULT_LEASE_TTL_S = 60.0


@dataclass(frozen=True)
class Variable:
    """One environment variable: its name, the ``Settings`` field it fills, its default and its meaning."""

    name: str
    field: str
    default: str
    meaning: str


VARIABLES: tuple[Variable, ...] = (
    Variable("BRT_HOME", "home", DEFAULT_HOME, "brt's folder: stores under memory/, snapshots/, reports/, charters/"),
    Variable("BRT_STORE_URI", "store_uri", "unset (the local store under $BRT_HOME/memory)",
             "where stores live (s3://bucket/prefix, gs://, az://, or a folder); overrides the charter's memory.uri"),
    Variable("BRT_EMBED_MODEL", "embed_model", "unset (the bundled all-MiniLM-L6-v2)",
             "embedding model name or local path; overrides the charter's memory.embedding_model"),
    Variable("BRT_EMBED_BACKEND", "embed_backend", "auto",
             "engine of the bundled model: auto, onnx (fp32), onnx-int8 or flag (FlagEmbedding on torch, fp32)"),
    Variable("BRT_TORCH_THREADS", "torch_threads", "0 (every core)", "CPU threads for embedding, any backend"),
    Variable("BRT_MODEL_CACHE", "model_cache", "<venv>/share/brt/models, else $BRT_HOME/models",
             "where the ONNX exports of the bundled model are cached"),
    Variable("BRT_LOCK_TIMEOUT", "lock_timeout_s", "600",
             "seconds a writer waits for a store's write lock before giving up"),
    Variable("BRT_LEASE_TTL", "lease_ttl_s", "60",
             "seconds after which a killed holder's lock on object storage expires"),
    Variable("BRT_BROWSER", "browser", "unset (Playwright's Chromium, then chromium/chrome on PATH)",
             "the Chromium or Chrome binary harvests launch"),
    Variable("BRT_DEVTOOLS_MCP", "devtools_mcp", "unset (./node_modules, then npx)",
             "the chrome-devtools-mcp command or .js file for harvest --via devtools-mcp"),
    Variable("BRT_EVIDENCE_SCORER", "evidence_scorer", "unset (the shipped orchestrator/evidence/models/scorer.json)",
             "another evidence scorer weights file (a benchmark's held-out fold, an experiment)"),
    Variable("BRT_EVIDENCE_READER", "evidence_reader", "unset (the shipped orchestrator/evidence/models/reader.onnx)",
             "a folder holding another evidence reader: reader.onnx and reader-tokenizer/"),
    Variable("BRT_MCP_ALLOW_ATTACH", "mcp_allow_attach", "off",
             "1/true/yes/on: brt mcp lets harvest attach to a running browser (browser_url), as --allow-attach does"),
    Variable("BRT_HOST_RESOLVER_RULES", "host_resolver_rules", "unset",
             "Chromium host-resolver rules (MAP name 127.0.0.1, ...) for test sites on made-up names"),
    Variable("BRT_RAY_ADDRESS", "ray_address", "unset (a local Ray instance for each run)",
             "the Ray cluster a harvest on Ray joins: auto or ray://host:port (only the operator sets it: never a "
             "charter or an MCP argument)"),
)


@dataclass(frozen=True)
class Settings:
    """Every ``BRT_*`` setting, typed (None: unset)."""

    home: Path
    store_uri: str | None = None
    embed_model: str | None = None
    embed_backend: str | None = None  # checked against the known backends by ``embeddings.requested_backend``
    torch_threads: int = 0  # 0: every core
    model_cache: Path | None = None
    lock_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S
    lease_ttl_s: float = DEFAULT_LEASE_TTL_S
    browser: str | None = None
    devtools_mcp: str | None = None
    host_resolver_rules: str | None = None
    evidence_scorer: Path | None = None
    evidence_reader: Path | None = None
    mcp_allow_attach: bool = False
    ray_address: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """The settings ``environ`` (default ``os.environ``) gives; SettingsError names a bad value."""
        env = os.environ if environ is None else environ
        raw = {v.field: (env.get(v.name) or "").strip() or None for v in VARIABLES}
        values: dict[str, Any] = {field: value for field, value in raw.items() if field not in _PARSERS}
        for field, parse in _PARSERS.items():
            if raw[field] is not None:
                values[field] = parse(_name_of(field), raw[field])
        values["home"] = Path(raw["home"] or DEFAULT_HOME).expanduser()
        return cls(**values)

    @property
    def cpu_threads(self) -> int:
        """Threads for embedding: ``torch_threads``, or every core when 0."""
        return max(1, self.torch_threads or (os.cpu_count() or 1))


def _name_of(field: str) -> str:
    return next(v.name for v in VARIABLES if v.field == field)


def _seconds(minimum: float) -> Callable[[str, str], float]:
    def parse(name: str, value: str) -> float:
        try:
            seconds = float(value)
        except ValueError:
            raise SettingsError(f"{name}={value!r} is not a number of seconds") from None
        if not seconds >= minimum:  # also refuses nan
            raise SettingsError(f"{name}={value!r}: expected a number of seconds >= {minimum:g}")
        return seconds

    return parse


def _threads(name: str, value: str) -> int:
    try:
        threads = int(value)
    except ValueError:
        raise SettingsError(f"{name}={value!r} is not a whole number of threads") from None
    if threads < 0:
        raise SettingsError(f"{name}={value!r}: expected 0 (every core) or more")
    return threads


def _path(name: str, value: str) -> Path:
    return Path(value).expanduser()


def _switch(name: str, value: str) -> bool:
    lowered = value.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise SettingsError(f"{name}={value!r}: expected 1, true, yes, on or 0, false, no, off")


def _ray_address(name: str, value: str) -> str:
    if value in ("auto", "local") or (value.startswith("ray://") and len(value) > len("ray://")):
        return value
    raise SettingsError(f"{name}={value!r}: expected auto, local or a ray://host:port address")


_PARSERS: dict[str, Callable[[str, str], Any]] = {
    "mcp_allow_attach": _switch,
    "ray_address": _ray_address,
    "torch_threads": _threads,
    "model_cache": _path,
    "evidence_scorer": _path,
    "evidence_reader": _path,
    "lock_timeout_s": _seconds(0.0),
    "lease_ttl_s": _seconds(0.001),
}


def settings() -> Settings:
    """The settings of this process's environment, read now."""
    return Settings.from_env()


def brt_home() -> Path:
    """``$BRT_HOME``, default ``~/.brt``."""
    return settings().home
