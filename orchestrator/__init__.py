"""brt: a browser-research orchestrator with a per-charter evidence cache.

Public surface (the CLI and the MCP server are thin shells over these):

    load_charter(path) -> Charter
    harvest(charter, ...) -> HarvestReport
    synthesize(charter, ...) -> SynthesisResult
    clean(charter, ...) -> CleanResult
    status(charter) -> StatusReport
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "load_charter": ("orchestrator.charter", "load_charter"),
    "Charter": ("orchestrator.charter", "Charter"),
    "harvest": ("orchestrator.harvest", "harvest"),
    "synthesize": ("orchestrator.synthesize", "synthesize"),
    "clean": ("orchestrator.clean", "clean"),
    "status": ("orchestrator.clean", "status"),
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    # Heavy modules load on first use, so `brt --help` stays instant.
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'orchestrator' has no attribute {name!r}")
