"""Writes to a store (private to memory_store): chunking and embedding pages outside the write lock, then
bringing the chunk rows in line with the pages table (``reconcile``), which also repairs what an interrupted
write left behind.

A write reads and changes only what it touches: the rows of the pages it stores or removes and of the chunks
those pages held or now hold (a chunk row's ``url`` and ``also_seen_at`` name every page that holds it), so its
cost does not grow with the store (``bench/store_write.py``). Before it changes a row it marks the store's
meta.json (``StoreMeta.begin_write``) and clears the mark when done: a write cut short (a crash, a full disk)
leaves the mark, and the next write first brings every chunk row in line with the pages table (the full
reconcile), which is also what ``Memory.repair`` runs."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ._meta import StoreMeta
from .chunking import Chunk, chunk_with
from .clock import now as clock_now
from .errors import WriteStopped
from .pointers import purge_urls
from .records import PageInput
from .store import CHUNKS, PAGES, LanceStore

if TYPE_CHECKING:
    import numpy as np

    from .embeddings import Embedder

log = logging.getLogger(__name__)

#: Texts embedded between two looks at a stop signal by an embedder that cannot look at it itself (``embed_new``;
#: brt's own embedder looks before each of its batches).
EMBED_SLICE = 1024


def collect_inputs(pages: Any) -> dict[str, PageInput]:
    """The pages to store by URL (a URL given twice: the last version wins); ValueError for a page without URL
    or text."""
    inputs: dict[str, PageInput] = {}
    for raw in pages:
        page = PageInput.from_any(raw)
        if not page.url:
            raise ValueError("page url must not be empty")
        if page.text is None:
            raise ValueError(f"page {page.url} has no text")
        inputs.pop(page.url, None)
        inputs[page.url] = page
    return inputs


def chunk_pages(emb: Embedder, inputs: dict[str, PageInput]) -> dict[str, list[Chunk]]:
    """Each page's chunks (a chunk repeated within one page kept once). An embedder that chunks where its
    tokenizer lives (a pool of workers, see ``Memory.use_embedder``) does it with its own ``chunk_pages``."""
    own = getattr(emb, "chunk_pages", None)
    if own is not None:
        return own(inputs)
    return chunk_locally(emb, inputs)


def chunk_locally(emb: Embedder, inputs: dict[str, PageInput]) -> dict[str, list[Chunk]]:
    """``chunk_pages`` with ``emb``'s tokenizer in this process."""
    chunked: dict[str, list[Chunk]] = {}
    for url, page in inputs.items():
        seen: set[str] = set()
        chunks = []
        for chunk in chunk_with(emb, page.text):
            if chunk.id not in seen:
                seen.add(chunk.id)
                chunks.append(chunk)
        chunked[url] = chunks
    return chunked


def embed_new(
    emb: Embedder, chunked: dict[str, list[Chunk]], known: set[str], *, stop: threading.Event | None = None
) -> dict[str, Any]:
    """Vectors of the chunks the store does not hold yet (``known``: its chunk ids), by chunk id. Done outside
    the write lock (the slow part): whatever another writer adds meanwhile is simply reused, whatever it removes
    is embedded under the lock by ``reconcile``. ``stop``: once set, the embedding ends at the model's next batch
    (a page of tens of thousands of chunks is not embedded to its end) with WriteStopped; the caller writes
    nothing."""
    todo: dict[str, str] = {}
    for chunks in chunked.values():
        for c in chunks:
            if c.id not in known:
                todo.setdefault(c.id, c.text)
    if not todo:
        return {}
    ids, texts = list(todo), list(todo.values())
    if stop is None:
        return dict(zip(ids, emb.embed_documents(texts), strict=True))
    if _takes_stop(emb):  # the embedder looks at it before each of its batches (WriteStopped)
        return dict(zip(ids, emb.embed_documents(texts, stop=stop), strict=True))
    out: dict[str, Any] = {}
    for start in range(0, len(texts), EMBED_SLICE):  # another embedder (Ray's pool): between slices
        if stop.is_set():
            raise WriteStopped("stopped while embedding")
        vecs = emb.embed_documents(texts[start : start + EMBED_SLICE])
        out.update(zip(ids[start : start + EMBED_SLICE], vecs, strict=True))
    return out


def _takes_stop(emb: Any) -> bool:
    import inspect

    try:
        params = inspect.signature(emb.embed_documents).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "stop" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def page_meta(store: LanceStore, url: str) -> dict[str, Any]:
    """The title, last_updated and selector of a stored page (chunk rows carry them)."""
    row = store.page(url) or {}
    return {
        "title": row.get("title"),
        "last_updated": row.get("last_updated"),
        "selector": row.get("selector"),
    }


@dataclass
class _RowPlan:
    """What ``reconcile`` writes: each page's chunk ids after the write, chunk rows to add, changes to rows
    already stored (by chunk id) and the ids of chunks no page holds any more."""

    new_pages: dict[str, list[str]]
    new_rows: list[dict[str, Any]] = field(default_factory=list)
    updates: dict[str, dict[str, Any]] = field(default_factory=dict)
    stale: list[str] = field(default_factory=list)


def reconcile(
    store: LanceStore,
    store_meta: StoreMeta,
    charter_id: str,
    embed: Callable[[list[str]], np.ndarray],
    inputs: dict[str, PageInput],
    chunked: dict[str, list[Chunk]],
    removed: set[str],
    algo: str | None,
    vectors: dict[str, Any] | None = None,
    after_mark: Callable[[], object] | None = None,
) -> None:
    """Bring chunk rows in line with the pages table after replacing ``inputs`` and removing ``removed``:
    only the rows they touch (``_plan_touched``), or, with neither (``Memory.repair``) or after a write that was
    cut short, every row (``_plan_rows``: orphan chunks deleted, url/also_seen_at fixed). ``after_mark`` runs
    once the store is marked as being written (a store on object storage pushes the mark).

    Order: chunk rows, then page rows, then deletions, so a crash never loses stored data.
    """
    full = not (inputs or removed) or store_meta.pending_write() is not None
    if full and (inputs or removed):
        log.warning("store %s: a write was cut short; bringing every chunk row in line with the pages", charter_id)
    planner = _plan_rows if full else _plan_touched
    plan = planner(store, charter_id, inputs, chunked, removed, algo)
    rows, row_vectors = _rows_with_vectors(store, plan, embed, vectors, charter_id)
    changes = bool(rows or inputs or removed or plan.stale)
    if changes:
        store_meta.begin_write(len(inputs) + len(removed))
        if after_mark is not None:
            after_mark()
    if rows:
        store.upsert_chunks(rows, row_vectors)
    if inputs:
        stored_at = clock_now("microseconds")
        page_rows = []
        for url, page in inputs.items():
            row = asdict(page)
            row["chunk_ids"] = plan.new_pages[url]
            row["stored_at"] = stored_at
            page_rows.append(row)
        store.upsert_pages(page_rows)
    if removed:
        store.delete(PAGES, "url", removed)
    if inputs or removed:  # closets rule: pointers of re-stored/removed pages are purged, then rebuilt
        purge_urls(store.path, [*inputs, *removed])
    if plan.stale:
        store.delete(CHUNKS, "id", plan.stale)
    store_meta.finish_write(changes)
    if rows or plan.stale:  # a new table's full-text and key indexes; folds and the vector index: Memory.compact
        store.ensure_indexes(in_write=True)
    log.info(
        "store %s: %d new chunks embedded, %d updated, %d deleted, %d page(s) written, %d removed",
        charter_id,
        len(plan.new_rows),
        len(plan.updates),
        len(plan.stale),
        len(inputs),
        len(removed),
    )


def _plan_rows(
    store: LanceStore,
    charter_id: str,
    inputs: dict[str, PageInput],
    chunked: dict[str, list[Chunk]],
    removed: set[str],
    algo: str | None,
) -> _RowPlan:
    """Compare what the pages will hold with the chunk rows stored: new rows, changed rows, stale ids."""
    meta = store.chunk_meta()
    new_pages: dict[str, list[str]] = {u: ids for u, ids in store.page_chunk_ids().items() if u not in removed}
    for url, chunks in chunked.items():
        new_pages[url] = [c.id for c in chunks]
    page_info = {
        url: {"title": page.title, "last_updated": page.last_updated, "selector": page.selector}
        for url, page in inputs.items()
    }
    chunk_by_id: dict[str, Chunk] = {}
    for chunks in chunked.values():
        for c in chunks:
            chunk_by_id.setdefault(c.id, c)
    holders: dict[str, list[str]] = {}
    for url, ids in new_pages.items():
        for cid in ids:
            lst = holders.setdefault(cid, [])
            if url not in lst:
                lst.append(url)

    plan = _RowPlan(new_pages)
    now = clock_now("microseconds")
    for cid, hs in holders.items():
        cur = meta.get(cid)
        if cur is not None:
            want = _wanted_holders(store, cur, hs, page_info)
            if any(cur.get(k) != v for k, v in want.items()):
                plan.updates[cid] = want
            continue
        chunk = chunk_by_id.get(cid)
        if chunk is None:
            log.warning("page(s) %s list chunk %s which is missing from %s", hs, cid, store.path)
            continue
        info = page_info.get(hs[0]) or page_meta(store, hs[0])
        plan.new_rows.append(_new_row(chunk, charter_id, hs, {hs[0]: info}, algo, now))
    plan.stale = [cid for cid in meta if cid not in holders]
    return plan


def _plan_touched(
    store: LanceStore,
    charter_id: str,
    inputs: dict[str, PageInput],
    chunked: dict[str, list[Chunk]],
    removed: set[str],
    algo: str | None,
) -> _RowPlan:
    """``_plan_rows`` for a store whose chunk rows are in line with its pages (no write was cut short), reading
    only the rows of the pages written or removed and of their chunks, old and new. A chunk's holders are those
    its row names, less the pages written or removed, plus the written pages that hold it now: in the order
    ``_plan_rows`` gives them (pages stored before by their storage order, then new ones in input order), so
    both plans write the same rows."""
    touched = set(inputs) | set(removed)
    old_lists = store.page_chunk_ids(touched)  # in storage order
    order = [u for u in old_lists if u in inputs] + [u for u in inputs if u not in old_lists]
    new_lists = {url: [c.id for c in chunked.get(url, [])] for url in order}
    ids = list(dict.fromkeys([cid for url in order for cid in new_lists[url]]
                             + [cid for lst in old_lists.values() for cid in lst]))
    meta = store.chunk_meta(ids)
    page_info = {
        url: {"title": page.title, "last_updated": page.last_updated, "selector": page.selector}
        for url, page in inputs.items()
    }
    chunk_by_id: dict[str, Chunk] = {}
    for chunks in chunked.values():
        for c in chunks:
            chunk_by_id.setdefault(c.id, c)
    new_holders: dict[str, list[str]] = {}
    for url in order:
        for cid in new_lists[url]:
            lst = new_holders.setdefault(cid, [])
            if url not in lst:
                lst.append(url)
    plan = _RowPlan(new_lists)
    now = clock_now("microseconds")
    for cid in ids:
        cur = meta.get(cid)
        if cur is None:
            chunk = chunk_by_id.get(cid)
            if chunk is None or cid not in new_holders:
                continue  # an old page listed a chunk the store lacks: nothing holds it now
            plan.new_rows.append(_new_row(chunk, charter_id, new_holders[cid], page_info, algo, now))
            continue
        kept = [u for u in [cur["url"], *(cur.get("also_seen_at") or [])] if u not in touched]
        hs = list(dict.fromkeys(kept + new_holders.get(cid, [])))
        if not hs:
            plan.stale.append(cid)
            continue
        want = _wanted_holders(store, cur, hs, page_info)
        if any(cur.get(k) != v for k, v in want.items()):
            plan.updates[cid] = want
    return plan


def _new_row(
    chunk: Chunk,
    charter_id: str,
    holders: list[str],
    page_info: dict[str, dict[str, Any]],
    algo: str | None,
    created_at: str,
) -> dict[str, Any]:
    """The row of a chunk the store does not hold yet (its first holder is a page being written)."""
    info = page_info[holders[0]]
    return {
        "id": chunk.id,
        "charter_id": charter_id,
        "url": holders[0],
        "selector": info.get("selector"),
        "text": chunk.text,
        "tokens": chunk.tokens,
        "split_algo": algo,
        "last_updated": info.get("last_updated"),
        "created_at": created_at,
        "title": info.get("title"),
        "also_seen_at": holders[1:],
    }


def _wanted_holders(
    store: LanceStore, cur: dict[str, Any], hs: list[str], page_info: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """A stored chunk's url, also_seen_at (and its primary page's metadata) once its holders are ``hs``: the
    primary page stays where it can, then an earlier holder takes over, else the first new one."""
    old_also = list(cur.get("also_seen_at") or [])
    if cur["url"] in hs:
        primary = cur["url"]
    else:
        primary = next((u for u in old_also if u in hs), hs[0])
    also = [u for u in old_also if u in hs and u != primary]
    also += [u for u in hs if u != primary and u not in also]
    want: dict[str, Any] = {"url": primary, "also_seen_at": also}
    info = page_info.get(primary)
    if info is not None:
        want.update(info)
    elif primary != cur["url"]:
        want.update(page_meta(store, primary))
    return want


def _rows_with_vectors(
    store: LanceStore,
    plan: _RowPlan,
    embed: Callable[[list[str]], np.ndarray],
    vectors: dict[str, Any] | None,
    charter_id: str,
) -> tuple[list[dict[str, Any]], np.ndarray | None]:
    """The chunk rows to upsert and their vectors: new rows (embedded here unless ``vectors`` has them), then
    the changed rows read back with their stored vectors."""
    import numpy as np

    new_vectors: list[np.ndarray] = []
    rows: list[dict[str, Any]] = []
    if plan.new_rows:
        pre = vectors or {}
        missing = [r for r in plan.new_rows if r["id"] not in pre]
        if missing:
            log.debug("embedding %d new chunks for %s", len(missing), charter_id)
            fresh = embed([r["text"] for r in missing])
            pre = {**pre, **dict(zip([r["id"] for r in missing], fresh, strict=True))}
        new_vectors.append(np.stack([pre[r["id"]] for r in plan.new_rows]).astype(np.float32))
        rows.extend(plan.new_rows)
    if plan.updates:
        existing = store.chunk_rows(plan.updates.keys(), include_vectors=True)
        for row in existing:
            row.update(plan.updates[row["id"]])
        if existing:
            new_vectors.append(np.asarray([r.pop("embedding") for r in existing], dtype=np.float32))
            rows.extend(existing)
    return rows, (np.concatenate(new_vectors, axis=0) if rows else None)
