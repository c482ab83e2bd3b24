"""Audits you can check, replay and read: verify, restore, report, check and ls. The CLI commands and MCP tools
of the same names are thin wrappers over these functions (``charter_init`` is ``orchestrator.charter_starter``'s,
named here too for the Python API). Importing this package is cheap (no model, no browser, no LanceDB)."""

from ..charter_starter import charter_init
from .catalog import Catalog, ls
from .errors import AuditError, ReportError, RestoreError, SnapshotError
from .report import ReportResult, report
from .restore import RestoreResult, restore
from .snapshot import Snapshot, read_snapshot
from .verify import VerifyReport, verify, verify_store

__all__ = [
    "AuditError",
    "Catalog",
    "ReportError",
    "ReportResult",
    "RestoreError",
    "RestoreResult",
    "Snapshot",
    "SnapshotError",
    "VerifyReport",
    "charter_init",
    "ls",
    "read_snapshot",
    "report",
    "restore",
    "verify",
    "verify_store",
]
