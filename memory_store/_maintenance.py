"""Store housekeeping (private to memory_store): the consistency check behind ``brt status --check`` and the
per-chunk selector update (PDF pages). Compaction is ``LanceStore.compact``."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from .chunking import chunk_id
from .records import CheckResult, PageRecord
from .store import LanceStore


def check_store(
    store: LanceStore,
    pages: list[PageRecord],
    dim: int | None,
    rows: Iterable[dict[str, Any]],
    pending: dict[str, Any] | None = None,
) -> CheckResult:
    """Verify the store: chunk ids are the hash of their text, every chunk is held by a stored page and names
    exactly the pages that hold it, every page's chunks exist, no duplicate ids, every vector has the store's
    dimension (``dim``) and finite values, the full-text / vector indexes (where they exist) cover exactly the
    table's rows, and no write was left cut short (``pending``: meta.json's mark). ``rows`` are the chunk rows
    with their vectors."""
    result = CheckResult()
    if pending is not None:
        at = pending.get("at")
        result.add(f"a write begun at {at} was cut short: the next write (or repair) reconciles the store")
    page_urls = {p.url for p in pages}
    held: dict[str, list[str]] = {}
    for p in pages:
        if len(set(p.chunk_ids)) != len(p.chunk_ids):
            result.add(f"page {p.url} lists a chunk twice")
        for cid in p.chunk_ids:
            held.setdefault(cid, []).append(p.url)
    seen: set[str] = set()
    n_rows = 0
    for row in rows:
        n_rows += 1
        cid = row.get("id")
        if cid in seen:
            result.add(f"duplicate chunk id {cid}")
        seen.add(cid)
        for problem in _row_problems(row, page_urls, held, dim):
            result.add(problem)
    for cid, urls in held.items():
        if cid not in seen:
            result.add(f"page {urls[0]} lists chunk {cid}, which is missing")
    result.counts = {"pages": len(pages), "chunks": n_rows, "chunk_refs": sum(len(v) for v in held.values())}
    if n_rows:
        _check_indexes(store, n_rows, result)
    return result


def _row_problems(row: dict[str, Any], page_urls: set[str], held: dict[str, list[str]], dim: int | None) -> list[str]:
    """What is wrong with one chunk row: its id, its owner pages, its vector."""
    cid = row.get("id")
    out = []
    if chunk_id(row.get("text") or "") != cid:
        out.append(f"chunk {cid} does not match the hash of its text")
    owners = {row.get("url"), *(row.get("also_seen_at") or [])}
    if not owners & page_urls:
        out.append(f"chunk {cid} belongs to no stored page ({row.get('url')})")
    if cid not in held:
        out.append(f"chunk {cid} is listed by no page")
    elif owners & page_urls and owners != set(held[cid]):  # a write reads a chunk's holders from its row
        out.append(f"chunk {cid} names {sorted(u for u in owners if u)} as its pages, but {sorted(held[cid])} hold it")
    vector = row.get("embedding")
    if vector is None or (dim and len(vector) != dim):
        out.append(f"chunk {cid} has no {dim}-dimensional vector")
    elif not all(math.isfinite(float(x)) for x in vector):
        out.append(f"chunk {cid} has a non-finite vector")
    return out


def _check_indexes(store: LanceStore, n_rows: int, result: CheckResult) -> None:
    """Each index must cover the table's rows (indexed + unindexed == rows)."""
    for name, covered, problem in store.index_coverage():
        if problem is not None:
            result.add(problem)
            continue
        result.counts[f"index:{name}"] = covered or 0
        if covered != n_rows:
            result.add(f"index {name} covers {covered} rows, the table has {n_rows}")
    try:
        result.counts["fts_index"] = int(bool(store.has_fts_index()))
    except Exception:  # noqa: BLE001
        pass


def set_selectors(store: LanceStore, url: str, chunk_ids: list[str], selector_of: Callable[[str], str]) -> int:
    """Set ``selector_of(chunk text)`` as the selector of each chunk of page ``url`` whose primary page it is
    (a chunk whose primary page is another document keeps that page's selector); returns chunks updated. The
    caller holds the write lock."""
    import numpy as np

    rows = store.chunk_rows(chunk_ids, include_vectors=True)
    changed = []
    for row in rows:
        if row.get("url") != url:
            continue
        selector = selector_of(row["text"])
        if row.get("selector") != selector:
            row["selector"] = selector
            changed.append(row)
    if changed:
        vectors = np.asarray([r.pop("embedding") for r in changed], dtype=np.float32)
        store.upsert_chunks(changed, vectors)
    return len(changed)
