"""``brt ls``: the charters with a store under ``$BRT_HOME/memory`` and the snapshots under
``$BRT_HOME/snapshots`` (snapshots written elsewhere with ``--snapshot PATH`` are not listed). A listing reads only
regular files of those folders: a symlink (to ``/dev/zero``, a FIFO, a file elsewhere) is listed as a problem,
never followed, and a manifest line longer than a manifest is not read."""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Catalog", "SnapshotEntry", "StoreEntry", "ls"]

log = logging.getLogger(__name__)


@dataclass
class StoreEntry:
    charter_id: str
    path: str
    pages: int
    chunks: int
    disk_bytes: int
    last_harvest: str | None  # when the last harvest started
    last_synthesis: str | None
    charter_source: str | None  # the charter file the last harvest read
    problem: str | None = None  # a store that cannot be read


@dataclass
class SnapshotEntry:
    id: str  # the file's stem, e.g. demo_cwv-20261123T002942Z
    path: str
    charter_id: str | None
    created_at: str | None
    pages: int
    chunks: int
    last_harvest: str | None
    size: int
    har: bool
    vectors: bool | None
    problem: str | None = None


@dataclass
class Catalog:
    home: str
    stores: list[StoreEntry] = field(default_factory=list)
    snapshots: list[SnapshotEntry] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"brt_home": self.home, "stores": [asdict(s) for s in self.stores],
                "snapshots": [asdict(s) for s in self.snapshots]}


def ls() -> Catalog:
    """Every store and snapshot under ``$BRT_HOME``."""
    from ..config import brt_home, memory_basepath, snapshots_dir

    catalog = Catalog(str(brt_home()))
    base = memory_basepath()
    if base.is_dir():
        for folder in sorted(p for p in base.iterdir() if not p.is_symlink() and (p / "meta.json").is_file()):
            catalog.stores.append(_store(folder))
    snaps = snapshots_dir()
    if snaps.is_dir():
        for path in sorted(snaps.glob("*.jsonl")):
            catalog.snapshots.append(_snapshot(path))
    return catalog


def _store(folder: Path) -> StoreEntry:
    from memory_store import Memory

    from ..trail.store import stored_charters, stored_synthesis

    entry = StoreEntry(folder.name, str(folder), 0, 0, 0, None, None, None)
    try:
        mem = Memory(folder.name, basepath=folder.parent, create=False)
        stats = mem.stats()
        entry.pages, entry.chunks, entry.disk_bytes = stats.pages, stats.chunks, stats.disk_bytes
        entry.last_harvest = _last_harvest(mem.events())
        syn = stored_synthesis(mem)
        entry.last_synthesis = syn.get("generated_at") if syn else None
        harvested = [c for c in stored_charters(mem) if c.get("role") == "harvest"]
        entry.charter_source = harvested[-1].get("source") if harvested else None
    except Exception as exc:  # noqa: BLE001 - one unreadable store must not hide the others
        entry.problem = f"{type(exc).__name__}: {exc}"
    return entry


def _last_harvest(events: list[dict[str, Any]]) -> str | None:
    starts = [str(e["started_at"]) for e in events
              if e.get("type", "harvest_event") == "harvest_event" and e.get("started_at")]
    return max(starts) if starts else None


def _snapshot(path: Path) -> SnapshotEntry:
    from ..files import FileRefused, open_regular
    from .snapshot import MAX_MANIFEST_BYTES

    har = path.with_suffix(".har")
    entry = SnapshotEntry(path.stem, str(path), None, None, 0, 0, None, path.lstat().st_size,
                          har.is_file() and not har.is_symlink(), None)
    try:
        events = []
        with open_regular(path, what="snapshot", follow_symlinks=False) as fh:
            manifest = json.loads(fh.readline(MAX_MANIFEST_BYTES))
            for raw in fh:
                if raw.startswith(b'{"type": "chunk"') or b"harvest_event" not in raw:
                    continue  # only harvest events are read (chunks are the bulk of the file)
                try:
                    rec = json.loads(raw)
                except ValueError:
                    continue
                events.append(rec)
        counts = manifest.get("counts") or {}
        entry.charter_id = manifest.get("charter_id")
        entry.created_at = manifest.get("created_at")
        entry.pages, entry.chunks = int(counts.get("page", 0)), int(counts.get("chunk", 0))
        entry.vectors = manifest.get("include_vectors")
        entry.last_harvest = _last_harvest(events)
    except (OSError, ValueError, AttributeError, FileRefused) as exc:
        entry.problem = f"not a readable snapshot: {exc}"
    return entry
