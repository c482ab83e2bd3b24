"""The one clock of brt: UTC timestamps as ISO 8601 strings with a ``Z`` (records, journals, snapshots) and as
compact stamps for file names. Lives in the lowest layer so concept_index and orchestrator use it too."""

from __future__ import annotations

from datetime import datetime, timezone

__all__ = ["file_stamp", "now"]


def now(timespec: str = "seconds") -> str:
    """The current UTC time, e.g. ``2025-09-14T08:30:00Z`` (``timespec`` as in ``datetime.isoformat``:
    "seconds", "milliseconds", "microseconds")."""
    return datetime.now(timezone.utc).isoformat(timespec=timespec).replace("+00:00", "Z")


def file_stamp(*, micro: bool = False) -> str:
    """The current UTC time for file names, e.g. ``20250914T083000Z`` (``20250914T083000123456Z`` with
    ``micro``)."""
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ" if micro else "%Y%m%dT%H%M%SZ")
