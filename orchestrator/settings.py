"""The orchestrator's ``BRT_*`` settings: the browser a harvest launches, chrome-devtools-mcp, Chromium's
resolver rules, the evidence models, the MCP server's attach opt-in and the Ray cluster. They are declared here,
next to the code that uses them, and read by ``memory_store.settings`` (brt's one reader of ``BRT_*``
variables, in the lowest layer because the store has variables of its own); ``run_settings()`` reads them now,
nothing is cached."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from memory_store.errors import SettingsError
from memory_store.settings import VARIABLES as STORE_VARIABLES
from memory_store.settings import Parser, Variable, path_value, read_variables, switch_value

__all__ = ["ALL_VARIABLES", "VARIABLES", "RunSettings", "run_settings"]

#: The orchestrator's variables (the store's are ``memory_store.settings.VARIABLES``).
VARIABLES: tuple[Variable, ...] = (
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
#: Every ``BRT_*`` variable of brt, the store's first (the CLI reference's table).
ALL_VARIABLES: tuple[Variable, ...] = (*STORE_VARIABLES, *VARIABLES)


def _ray_address(name: str, value: str) -> str:
    if value in ("auto", "local") or (value.startswith("ray://") and len(value) > len("ray://")):
        return value
    raise SettingsError(f"{name}={value!r}: expected auto, local or a ray://host:port address")


_PARSERS: dict[str, Parser] = {
    "mcp_allow_attach": switch_value,
    "ray_address": _ray_address,
    "evidence_scorer": path_value,
    "evidence_reader": path_value,
}


@dataclass(frozen=True)
class RunSettings:
    """The orchestrator's ``BRT_*`` settings, typed (None: unset)."""

    browser: str | None = None
    devtools_mcp: str | None = None
    host_resolver_rules: str | None = None
    evidence_scorer: Path | None = None
    evidence_reader: Path | None = None
    mcp_allow_attach: bool = False
    ray_address: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RunSettings:
        """The settings ``environ`` (default ``os.environ``) gives; SettingsError names a bad value."""
        values = read_variables(VARIABLES, _PARSERS, environ)
        return cls(**{k: v for k, v in values.items() if v is not None})


def run_settings() -> RunSettings:
    """The orchestrator's settings of this process's environment, read now."""
    return RunSettings.from_env()
