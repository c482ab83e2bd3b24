"""Store housekeeping for the harvest: compaction of old LanceDB versions (bounded disk across re-harvests)
and ``brt status --check`` (every chunk's page present, every id the hash of its text, indexes agree with
the rows)."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory_store import Memory

__all__ = ["CheckResult", "check_store", "compact_store"]

logger = logging.getLogger(__name__)


def compact_store(memory: Memory) -> None:
    """Compact both tables and delete every version but the latest, under the store's write lock (no other
    writer can be mid-commit, so unverified files of older versions are safe to remove)."""
    from memory_store.store import CHUNKS, PAGES

    if not memory.exists(memory.charter_id, memory.path.parent):
        return
    store = memory._store  # noqa: SLF001 - housekeeping on the store's own tables
    import warnings

    with memory.write_lock(), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "removes every version except the latest": intended
        for name in (CHUNKS, PAGES):
            table = store._table(name)  # noqa: SLF001
            if table is None:
                continue
            try:
                table.optimize(cleanup_older_than=timedelta(seconds=0), delete_unverified=True)
            except TypeError:  # older lancedb without delete_unverified
                table.optimize(cleanup_older_than=timedelta(seconds=0))


@dataclass
class CheckResult:
    ok: bool = True
    problems: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def add(self, problem: str) -> None:
        self.ok = False
        if len(self.problems) < 200:
            self.problems.append(problem)

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "problems": list(self.problems), "counts": dict(self.counts)}


def check_store(memory: Memory) -> CheckResult:
    """Verify the store: chunk ids are the hash of their text, every chunk is held by a stored page and every
    page's chunks exist, no duplicate ids, every vector has the store's dimension and finite values, and the
    full-text / vector indexes (where they exist) cover exactly the table's rows."""
    from memory_store.chunking import chunk_id
    from memory_store.store import CHUNKS

    result = CheckResult()
    pages = memory.pages()
    page_urls = {p.url for p in pages}
    held: dict[str, list[str]] = {}
    for p in pages:
        if len(set(p.chunk_ids)) != len(p.chunk_ids):
            result.add(f"page {p.url} lists a chunk twice")
        for cid in p.chunk_ids:
            held.setdefault(cid, []).append(p.url)
    dim = memory.dim if memory.count_chunks() else None
    seen: set[str] = set()
    rows = 0
    for row in memory.chunks(include_vectors=True):
        rows += 1
        cid = row.get("id")
        if cid in seen:
            result.add(f"duplicate chunk id {cid}")
        seen.add(cid)
        if chunk_id(row.get("text") or "") != cid:
            result.add(f"chunk {cid} does not match the hash of its text")
        owners = {row.get("url"), *(row.get("also_seen_at") or [])}
        if not owners & page_urls:
            result.add(f"chunk {cid} belongs to no stored page ({row.get('url')})")
        if cid not in held:
            result.add(f"chunk {cid} is listed by no page")
        vector = row.get("embedding")
        if vector is None or (dim and len(vector) != dim):
            result.add(f"chunk {cid} has no {dim}-dimensional vector")
        elif not all(math.isfinite(float(x)) for x in vector):
            result.add(f"chunk {cid} has a non-finite vector")
    for cid, urls in held.items():
        if cid not in seen:
            result.add(f"page {urls[0]} lists chunk {cid}, which is missing")
    result.counts = {"pages": len(pages), "chunks": rows, "chunk_refs": sum(len(v) for v in held.values())}

    # indexes: each one must cover the table's rows (indexed + unindexed == rows)
    table = memory._store._table(CHUNKS) if rows else None  # noqa: SLF001
    if table is not None:
        try:
            indices = list(table.list_indices())
        except Exception as exc:  # noqa: BLE001
            indices = []
            result.add(f"cannot list indexes: {exc}")
        for index in indices:
            name = getattr(index, "name", None)
            try:
                stats = table.index_stats(name)
            except Exception as exc:  # noqa: BLE001
                result.add(f"cannot read index {name}: {exc}")
                continue
            if stats is None:
                continue
            covered = int(getattr(stats, "num_indexed_rows", 0) or 0) + int(
                getattr(stats, "num_unindexed_rows", 0) or 0
            )
            result.counts[f"index:{name}"] = covered
            if covered != rows:
                result.add(f"index {name} covers {covered} rows, the table has {rows}")
        fts = getattr(memory._store, "has_fts_index", None)  # noqa: SLF001
        if callable(fts):
            try:
                result.counts["fts_index"] = int(bool(fts()))
            except Exception:  # noqa: BLE001
                pass
    return result
