"""A store's journal, ``events.jsonl`` (private to memory_store): JSON objects appended durably, read back in
order."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

JOURNAL_FILE = "events.jsonl"


def append_events(path: Path, events: list[dict[str, Any]]) -> None:
    """Append ``events`` to the journal of the store at ``path`` and fsync (the caller holds the write lock)."""
    lines = "".join(json.dumps(e, ensure_ascii=False, default=str) + "\n" for e in events)
    with open(path / JOURNAL_FILE, "a", encoding="utf-8") as fh:
        fh.write(lines)
        fh.flush()
        os.fsync(fh.fileno())


def read_events(path: Path) -> list[dict[str, Any]]:
    """The journal's events in order (a truncated last line is skipped)."""
    file = path / JOURNAL_FILE
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    out = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except ValueError:
            if i == len(lines) - 1:
                log.warning("skipping truncated last line of %s", file)
            else:
                log.warning("skipping unreadable line %d of %s", i + 1, file)
    return out
