"""Exceptions of the audit tools (verify, restore, report, ls, charter init).

    BrtError (orchestrator.errors)
    └── AuditError            an audit command could not run
        ├── SnapshotError     a snapshot file is missing, unreadable or not a brt snapshot
        ├── RestoreError      a snapshot cannot be restored (a store of that id exists, a bad id, ...)
        └── ReportError       a report cannot be built (no synthesis recorded yet, unknown format)

A snapshot that reads fine but fails its checks is not an error: ``verify`` returns a report listing the
failures. The CLI maps AuditError to exit 1.
"""

from __future__ import annotations

from ..errors import BrtError


class AuditError(BrtError):
    """Base class of the audit tools' errors."""


class SnapshotError(AuditError):
    pass


class RestoreError(AuditError):
    pass


class ReportError(AuditError):
    pass
