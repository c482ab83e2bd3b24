"""brt's settings from the environment: every ``BRT_*`` variable is read here and nowhere else.

This module sits in the lowest package because the store reads variables of its own (``BRT_HOME``, the store's
URI, the embedding model, its locks) and ``memory_store`` never imports the other two. Each layer declares the
variables it owns next to its code and gets a typed record of those only: the store's are ``VARIABLES`` and
``Settings`` here; the orchestrator's (browser, chrome-devtools-mcp, resolver rules, evidence models, MCP, Ray)
are ``orchestrator.settings``, read through :func:`read_variables`. ``concept_index`` has none.

``settings()`` reads them into one typed, frozen ``Settings`` at the moment it is called (a process or a test
that changes its environment is seen at the next call; nothing is cached). An empty variable counts as unset. A
value brt cannot use is a ``SettingsError`` that names the variable.

The variables, their defaults and meanings are listed in the ``VARIABLES`` tables (the CLI reference shows them
all). The charter's own values come first where both exist: ``BRT_EMBED_MODEL`` and ``BRT_STORE_URI`` override
the charter's ``memory.embedding_model`` and ``memory.uri`` (``orchestrator.config`` applies that).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import SettingsError

__all__ = [
    "VARIABLES", "Settings", "SettingsError", "Variable", "brt_home", "path_value", "read_variables", "seconds_value",
    "settings", "switch_value",
]

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
             "engine of the bundled model: auto (a new store onnx, an existing one its precision), onnx (fp32), "
             "onnx-int8 or flag (FlagEmbedding on torch, fp32)"),
    Variable("BRT_TORCH_THREADS", "torch_threads", "0 (every core)", "CPU threads for embedding, any backend"),
    Variable("BRT_MODEL_CACHE", "model_cache", "<venv>/share/brt/models, else $BRT_HOME/models",
             "where the ONNX exports of the bundled model are cached"),
    Variable("BRT_LOCK_TIMEOUT", "lock_timeout_s", "600",
             "seconds a writer waits for a store's write lock before giving up"),
    Variable("BRT_LEASE_TTL", "lease_ttl_s", "60",
             "seconds after which a killed holder's lock on object storage expires"),
)


@dataclass(frozen=True)
class Settings:
    """The store's ``BRT_*`` settings, typed (None: unset)."""

    home: Path
    store_uri: str | None = None
    embed_model: str | None = None
    embed_backend: str | None = None  # checked against the known backends by ``embeddings.requested_backend``
    torch_threads: int = 0  # 0: every core
    model_cache: Path | None = None
    lock_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S
    lease_ttl_s: float = DEFAULT_LEASE_TTL_S

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """The settings ``environ`` (default ``os.environ``) gives; SettingsError names a bad value."""
        values = read_variables(VARIABLES, _PARSERS, environ)
        values["home"] = Path(values["home"] or DEFAULT_HOME).expanduser()
        return cls(**values)

    @property
    def cpu_threads(self) -> int:
        """Threads for embedding: ``torch_threads``, or every core when 0."""
        return max(1, self.torch_threads or (os.cpu_count() or 1))


Parser = Callable[[str, str], Any]


def read_variables(variables: Iterable[Variable], parsers: Mapping[str, Parser],
                   environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Field -> value of ``variables`` in ``environ`` (default ``os.environ``): brt's one read of a ``BRT_*``
    variable. An empty value is None; ``parsers`` (by field) type a set value, with SettingsError naming it."""
    env = os.environ if environ is None else environ
    table = list(variables)
    raw = {v.field: (env.get(v.name) or "").strip() or None for v in table}
    values: dict[str, Any] = {field: value for field, value in raw.items() if field not in parsers}
    for v in table:
        if v.field in parsers and raw[v.field] is not None:
            values[v.field] = parsers[v.field](v.name, raw[v.field])
    return values


def seconds_value(minimum: float) -> Parser:
    """A parser of a number of seconds of at least ``minimum``."""

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


def path_value(name: str, value: str) -> Path:
    """A path, ``~`` expanded."""
    return Path(value).expanduser()


def switch_value(name: str, value: str) -> bool:
    """On (1, true, yes, on) or off (0, false, no, off)."""
    lowered = value.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise SettingsError(f"{name}={value!r}: expected 1, true, yes, on or 0, false, no, off")


_PARSERS: dict[str, Parser] = {
    "torch_threads": _threads,
    "model_cache": path_value,
    "lock_timeout_s": seconds_value(0.0),
    "lease_ttl_s": seconds_value(0.001),
}


def settings() -> Settings:
    """The store's settings of this process's environment, read now."""
    return Settings.from_env()


def brt_home() -> Path:
    """``$BRT_HOME``, default ``~/.brt``."""
    return settings().home
