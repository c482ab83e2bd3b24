"""Clean: write the audit snapshot (JSONL) and the harvest HAR beside it, then destroy the charter's store;
and status, the read-only summary of a store."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_store import redact_uri

from . import __version__
from .api import make_module_callable
from .config import default_snapshot_path, memory_basepath, open_memory, store_exists, store_uri
from .harvest.har import har_files, merge_hars
from .harvest.journal import ADDED, page_origins, render_of_pages

if TYPE_CHECKING:
    from memory_store import Memory

    from .charter import Charter

log = logging.getLogger(__name__)


@dataclass
class CleanResult:
    snapshot_path: Path
    har_path: Path | None
    destroyed: bool
    counts: dict[str, int] = field(default_factory=dict)


def clean(
    charter: Charter,
    *,
    snapshot: str | Path | None = None,
    keep: bool | None = None,
    vectors: bool = True,
    memory: Memory | None = None,
    within: list[Path] | None = None,
) -> CleanResult:
    """Snapshot the charter's store to JSONL (with the harvest HAR beside it), then destroy the store unless
    ``keep`` or the charter's ``memory.persist`` says to keep it. ``within``: the folders an agent's snapshot
    path was confined to: both files are written in a folder of brt's own, then moved into place through the
    destination folder's handle, no symlinked folder followed below those roots (``files.move_file``).

    Raises memory_store.StoreNotFound when there is no store."""
    mem = memory if memory is not None else open_memory(charter, create=False)
    path = Path(snapshot) if snapshot is not None else default_snapshot_path(charter.id)
    keep_store = charter.memory.persist if keep is None else (keep or charter.memory.persist)
    from memory_store.errors import StoreLocked

    from .errors import HarvestBusy

    try:
        # held for the whole clean: a running harvest refuses the clean before any file is written
        lock = mem.harvest_lock()
        lock.__enter__()
    except StoreLocked as exc:
        raise HarvestBusy(f"cannot clean now, nothing was written: {exc}") from exc
    try:
        events = mem.events()
        extra = [dict(e, type=e.get("type", "harvest_event")) for e in events]
        extra.extend(_concept_records(charter, mem))
        from .trail.hooks import clean_records

        extra.extend(clean_records(charter, mem, vectors=vectors))  # audit: charter, synthesis, concepts
        manifest, har = _write(mem, path, extra, vectors, within, render_of_pages(events), page_origins(events))
        if not keep_store:
            mem.reset()
    finally:
        lock.__exit__(None, None, None)
    log.info("snapshot written to %s (store %s)", path, "kept" if keep_store else "destroyed")
    return CleanResult(path, har, destroyed=not keep_store, counts=dict(manifest.get("counts", {})))


def _write(mem: Memory, path: Path, extra: list[dict[str, Any]], vectors: bool,
           within: list[Path] | None, render: dict[str, dict[str, Any]],
           origins: dict[str, str]) -> tuple[dict[str, Any], Path | None]:
    """The snapshot and the merged HAR at ``path`` (see :func:`clean`'s ``within``); each page record says how
    the page entered the store (``origin``: harvest or add_page) and how it was read (``render``), both from the
    journal."""

    def page_fields(page: Any) -> dict[str, Any]:
        how = render.get(page.url) or render.get(page.requested_url or "") or {}
        return {**how, "origin": origins.get(page.url, ADDED)}

    if within is None:
        manifest = mem.snapshot(path, extra_records=extra, include_vectors=vectors, tool_version=__version__,
                                page_fields=page_fields)
        return manifest, merge_hars(har_files(mem), path.with_suffix(".har"))
    import shutil
    import tempfile

    from .config import brt_home
    from .files import move_file

    brt_home().mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".clean-", dir=brt_home()))
    try:
        staged = staging / path.name
        manifest = mem.snapshot(staged, extra_records=extra, include_vectors=vectors, tool_version=__version__,
                                page_fields=page_fields)
        har = merge_hars(har_files(mem), staged.with_suffix(".har"))
        if har is not None:
            har = move_file(har, path.with_suffix(".har"), within=within)
        move_file(staged, path, within=within)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return manifest, har


def _concept_records(charter: Charter, memory: Memory) -> list[dict[str, Any]]:
    """concept / edge / concept_event records, once the concept index exists for this store."""
    try:
        from concept_index import snapshot_records
    except ImportError:
        return []
    return list(snapshot_records(memory))


@dataclass
class StatusReport:
    charter_id: str
    exists: bool
    path: Path | str
    pages: int = 0
    chunks: int = 0
    model: str | None = None
    dim: int | None = None
    precision: str | None = None  # of the vectors: "fp32" or "int8"
    disk_bytes: int = 0
    last_harvest: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "charter_id": self.charter_id,
            "exists": self.exists,
            "path": str(self.path),
            "pages": self.pages,
            "chunks": self.chunks,
            "embedding_model": self.model,
            "embedding_dim": self.dim,
            "embedding_precision": self.precision,
            "disk_bytes": self.disk_bytes,
            "last_harvest": self.last_harvest,
        }


def status(charter: Charter) -> StatusReport:
    """What the charter's store holds: pages, chunks, model, disk size and the last harvest's outcomes."""
    if not store_exists(charter):
        uri = store_uri(charter)
        where = f"{redact_uri(uri).rstrip('/')}/{charter.id}" if uri else memory_basepath() / charter.id
        return StatusReport(charter.id, exists=False, path=where)
    mem = open_memory(charter, create=False)
    stats = mem.stats()
    report = StatusReport(
        charter.id,
        exists=True,
        path=mem.location,
        pages=stats.pages,
        chunks=stats.chunks,
        model=stats.model,
        dim=stats.dim,
        precision=mem.precision,
        disk_bytes=stats.disk_bytes,
    )
    events = [e for e in mem.events() if e.get("type", "harvest_event") == "harvest_event"]
    if events:
        run = events[-1].get("run_id")
        last = [e for e in events if e.get("run_id") == run] if run else events
        report.last_harvest = {
            "run_id": run,
            "started_at": min((e.get("started_at") or "") for e in last) or None,
            "urls_attempted": len(last),
            "outcomes": dict(Counter(e.get("outcome") for e in last)),
        }
    return report


make_module_callable(__name__, "clean")
