"""Reading a snapshot (the JSONL ``/clean`` writes; docs/contracts.md, "Snapshot") back into typed parts.

``read_snapshot(path)`` keeps the manifest line as written, recomputes the sha256 of the rest of the file
and the count of each record type, and sorts the records by type. Lines that are not JSON objects with a
``type``, and records that do not fit their type's schema (``records.py``: a field of the wrong type), are kept
as problems naming the line and the field (``verify`` reports them) and left out, not raised. Only a regular
file is read (a FIFO or a device is refused at once).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import SnapshotError

# Record types a snapshot holds besides the store's journal events (harvest_event, harvest_summary, ...).
STORE_TYPES = frozenset(
    {"manifest", "page", "chunk", "concept", "edge", "concept_event", "charter", "synthesis", "concept_graph",
     "concept_pointer"}
)


@dataclass
class Snapshot:
    path: Path
    manifest: dict[str, Any]
    sha256: str  # recomputed over every line after the manifest
    counts: Counter[str] = field(default_factory=Counter)  # recomputed
    pages: list[dict[str, Any]] = field(default_factory=list)
    chunks: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> record
    chunk_order: list[str] = field(default_factory=list)
    duplicate_chunks: list[str] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)  # journal records, in order
    charters: list[dict[str, Any]] = field(default_factory=list)
    synthesis: dict[str, Any] | None = None
    concepts: list[dict[str, Any]] = field(default_factory=list)
    edges: list[dict[str, Any]] = field(default_factory=list)
    concept_events: list[dict[str, Any]] = field(default_factory=list)
    concept_graph: dict[str, Any] | None = None
    concept_pointers: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # unreadable lines and records that fail the schema
    vector_problems: list[str] = field(default_factory=list)
    size: int = 0

    @property
    def charter_id(self) -> str:
        return str(self.manifest.get("charter_id") or "")

    @property
    def har_path(self) -> Path:
        """Where ``/clean`` writes the HAR: beside the snapshot, same stem."""
        return self.path.with_suffix(".har")

    def harvest_charter(self) -> dict[str, Any] | None:
        """The charter record as the last harvest used it (else the last one recorded)."""
        harvested = [c for c in self.charters if "harvest" in (c.get("roles") or [])]
        chosen = harvested or self.charters
        return chosen[-1] if chosen else None

    def page_for(self, url: str) -> dict[str, Any] | None:
        for p in self.pages:
            if url in (p.get("final_url"), p.get("url")):
                return p
        return None


def read_snapshot(path: str | Path, *, keep_vectors: bool = False) -> Snapshot:
    """Read a snapshot file. Raises SnapshotError when the file cannot be read or its first line is not a
    manifest; every other problem is listed in ``problems``."""
    from ..files import FileRefused, open_regular

    p = Path(path).expanduser()
    try:
        fh = open_regular(p, what="snapshot")
    except FileRefused as exc:
        raise SnapshotError(str(exc)) from None
    except OSError as exc:
        raise SnapshotError(f"cannot read snapshot {p}: {exc.strerror or exc}") from None
    with fh:
        snap = Snapshot(path=p, manifest=_manifest(p, fh.readline(MAX_MANIFEST_BYTES)), sha256="")
        digest = hashlib.sha256()
        dim = snap.manifest.get("embedding_dim")
        for lineno, raw in enumerate(fh, start=2):
            digest.update(raw)
            rec = _record(snap, lineno, raw)
            if rec is not None:
                _file(snap, rec, rec["type"], dim, keep_vectors)
        snap.sha256 = digest.hexdigest()
        snap.size = os.fstat(fh.fileno()).st_size
    return snap


#: The longest manifest line read (a manifest is well under a kilobyte).
MAX_MANIFEST_BYTES = 1_000_000


def _manifest(path: Path, first: bytes) -> dict[str, Any]:
    """The manifest line as written; SnapshotError when it is not one, or a field has the wrong type."""
    from pydantic import ValidationError

    from .records import Manifest, problem_of

    try:
        manifest = json.loads(first)
    except (ValueError, RecursionError):
        raise SnapshotError(f"{path} is not a brt snapshot: its first line is not JSON") from None
    if not isinstance(manifest, dict) or manifest.get("type") != "manifest":
        raise SnapshotError(f"{path} is not a brt snapshot: its first line is not a manifest record")
    try:
        Manifest.model_validate(manifest)
    except ValidationError as exc:
        raise SnapshotError(f"{path}: line 1 (manifest): {problem_of(exc)}") from None
    return manifest


def _record(snap: Snapshot, lineno: int, raw: bytes) -> dict[str, Any] | None:
    """The record on line ``lineno`` (counted), or None with the problem noted."""
    from .records import validate_record

    try:
        rec = json.loads(raw)
    except (ValueError, RecursionError):
        snap.problems.append(f"line {lineno} is not JSON")
        return None
    if not isinstance(rec, dict) or not isinstance(rec.get("type"), str):
        snap.problems.append(f"line {lineno} is not a record with a type")
        return None
    snap.counts[rec["type"]] += 1
    problem = validate_record(rec)
    if problem is not None:
        snap.problems.append(f"line {lineno} ({rec['type']}): {problem}")
        return None
    return rec


def _file(snap: Snapshot, rec: dict[str, Any], kind: str, dim: Any, keep_vectors: bool) -> None:
    if kind == "page":
        snap.pages.append(rec)
    elif kind == "chunk":
        cid = str(rec.get("id"))
        emb = rec.get("embedding")
        if emb is not None:
            if dim and len(emb) != int(dim) or not all(isinstance(x, (int, float)) and math.isfinite(x) for x in emb):
                snap.vector_problems.append(cid)
            if not keep_vectors:
                rec = dict(rec, embedding=True)  # present (checked); the floats are not kept
        if cid in snap.chunks:
            snap.duplicate_chunks.append(cid)
        else:
            snap.chunk_order.append(cid)
        snap.chunks[cid] = rec
    elif kind == "charter":
        snap.charters.append(rec)
    elif kind == "synthesis":
        snap.synthesis = rec
    elif kind == "concept":
        snap.concepts.append(rec)
    elif kind == "edge":
        snap.edges.append(rec)
    elif kind == "concept_event":
        snap.concept_events.append(rec)
    elif kind == "concept_graph":
        snap.concept_graph = rec
    elif kind == "concept_pointer":
        snap.concept_pointers.append(rec)
    elif kind != "manifest":
        snap.events.append(rec)
