"""Audits you can check, replay and read: verify, restore, report, ls, charter init, and the
acceptance and conflict judgements of a synthesis. The CLI commands and MCP tools of the same names are thin
wrappers over these functions. Importing this package is cheap (no model, no browser, no LanceDB)."""

from .acceptance import Verdict, judge_acceptance
from .catalog import Catalog, ls
from .conflicts import Agreement, Conflict, find_conflicts
from .errors import AuditError, ReportError, RestoreError, SnapshotError
from .report import ReportResult, report
from .restore import RestoreResult, restore
from .snapshot import Snapshot, read_snapshot
from .starter import charter_init
from .verify import VerifyReport, verify, verify_store

__all__ = [
    "Agreement",
    "AuditError",
    "Catalog",
    "Conflict",
    "ReportError",
    "ReportResult",
    "RestoreError",
    "RestoreResult",
    "Snapshot",
    "SnapshotError",
    "Verdict",
    "VerifyReport",
    "charter_init",
    "find_conflicts",
    "judge_acceptance",
    "ls",
    "read_snapshot",
    "report",
    "restore",
    "verify",
    "verify_store",
]
