"""``Memory``: one charter's evidence store (chunks + embeddings in LanceDB, pages, journal, snapshot)."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .chunking import Chunk, chunk_with, split_algo, window_for
from .embeddings import DEFAULT_MODEL, default_min_score, get_embedder, resolve_model_name, vector_precision
from .errors import MemoryStoreError, ModelMismatch, StoreCorrupt, StoreLocked, StoreNotFound
from .records import Hit, PageInput, PageRecord, StoreStats
from .store import CHUNKS, PAGES, LanceStore

if TYPE_CHECKING:
    from .embeddings import Embedder

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
CHARTER_ID_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
SNIPPET_CHARS = 300
OPTIMIZE_AFTER_CHUNKS = 256
_WS = re.compile(r"\s+")


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def brt_home() -> Path:
    """``$BRT_HOME`` or ``~/.brt``."""
    return Path(os.environ.get("BRT_HOME") or "~/.brt").expanduser()


def default_basepath() -> Path:
    """Where stores live by default: ``$BRT_HOME/memory``."""
    return brt_home() / "memory"


def validate_charter_id(charter_id: str) -> str:
    """Return ``charter_id`` if it matches the charter id pattern, else raise ValueError."""
    if not isinstance(charter_id, str) or not CHARTER_ID_RE.match(charter_id):
        raise ValueError(f"invalid charter id {charter_id!r}: expected [a-z0-9][a-z0-9_-]{{0,63}}")
    return charter_id


def make_snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    """``text`` with whitespace collapsed, cut to about ``limit`` chars at a word boundary, with …."""
    flat = _WS.sub(" ", text).strip()
    if len(flat) <= limit:
        return flat
    cut = flat[:limit]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:.") + "…"


class Memory:
    """The evidence store of one charter at ``<basepath>/<charter_id>/``."""

    def __init__(
        self,
        charter_id: str,
        basepath: str | os.PathLike[str] | None = None,
        *,
        model: str | None = None,
        create: bool = True,
    ) -> None:
        self.charter_id = validate_charter_id(charter_id)
        base = Path(basepath).expanduser() if basepath is not None else default_basepath()
        self._path = base / charter_id
        self._create = create
        meta = self._read_meta()
        if meta is None and not create:
            raise StoreNotFound(f"no store for charter {charter_id} at {self._path}: run `brt harvest` first")
        recorded = meta.get("model") if meta else None
        if model is not None and recorded and resolve_model_name(model) != recorded:
            raise ModelMismatch(
                f"store {self._path} was built with embedding model {recorded!r} (dim {meta.get('dim')}); "
                f"it cannot be used with {resolve_model_name(model)!r}"
            )
        self._model_name = recorded or resolve_model_name(model)
        self._embedder: Embedder | None = None
        self._store_obj: LanceStore | None = None
        self._lock_depth = 0
        self._lock_fd: int | None = None
        self._harvest_fd: int | None = None
        self._rlock = threading.RLock()

    # --- properties -------------------------------------------------------------------------------------
    @classmethod
    def exists(cls, charter_id: str, basepath: str | os.PathLike[str] | None = None) -> bool:
        """True when a store exists for ``charter_id``."""
        base = Path(basepath).expanduser() if basepath is not None else default_basepath()
        return (base / validate_charter_id(charter_id) / "meta.json").is_file()

    @property
    def path(self) -> Path:
        return self._path

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def embedder(self) -> Embedder:
        """The embedding model (loaded on first use; checked against the store's recorded dimension)."""
        if self._embedder is None:
            meta = self._read_meta()
            emb = get_embedder(self._model_name, precision=vector_precision(meta))
            if meta and meta.get("dim") and int(meta["dim"]) != emb.dim:
                raise ModelMismatch(
                    f"store {self._path} has {meta['dim']}-dimensional embeddings "
                    f"from {meta.get('model')!r}, "
                    f"but model {emb.name!r} produces {emb.dim} dimensions"
                )
            self._embedder = emb
        return self._embedder

    @property
    def dim(self) -> int:
        meta = self._read_meta()
        if meta and meta.get("dim"):
            return int(meta["dim"])
        return self.embedder.dim

    @property
    def split_algo(self) -> str:
        meta = self._read_meta()
        if meta and meta.get("split_algo"):
            return str(meta["split_algo"])
        return split_algo(*window_for(self.embedder))

    @property
    def default_min_score(self) -> float:
        """The store's documented default min_score for its model (0.35 for all-MiniLM-L6-v2)."""
        return default_min_score(self._model_name)

    @property
    def _store(self) -> LanceStore:
        if self._store_obj is None:
            meta = self._read_meta() or {}
            self._store_obj = LanceStore(self._path, meta.get("dim"))
        return self._store_obj

    # --- meta -------------------------------------------------------------------------------------------
    def _read_meta(self) -> dict[str, Any] | None:
        path = self._path / "meta.json"
        try:
            return json.loads(path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise StoreCorrupt(f"cannot read {path}: {exc}") from exc

    def _write_meta(self, meta: dict[str, Any]) -> None:
        path = self._path / "meta.json"
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(meta, indent=2, sort_keys=True))
        os.replace(tmp, path)

    def _ensure_created(
        self, dim: int | None = None, algo: str | None = None, precision: str | None = None
    ) -> dict[str, Any]:
        """Create the store folder and meta.json if missing; fill in dim/split_algo/precision once known."""
        self._path.mkdir(parents=True, exist_ok=True)
        meta = self._read_meta()
        changed = False
        if meta is None:
            meta = {
                "format_version": FORMAT_VERSION,
                "charter_id": self.charter_id,
                "model": self._model_name,
                "dim": None,
                "split_algo": None,
                "created_at": _now(),
                "last_write": None,
            }
            changed = True
        if dim and not meta.get("dim"):
            meta["dim"] = dim
            changed = True
        if algo and not meta.get("split_algo"):
            meta["split_algo"] = algo
            changed = True
        if precision and not meta.get("embedding_precision"):
            meta["embedding_precision"] = precision
            changed = True
        if changed:
            self._write_meta(meta)
        if dim and self._store_obj is not None and not self._store_obj.dim:
            self._store_obj.dim = dim
        return meta

    def _touch(self) -> None:
        meta = self._read_meta()
        if meta is not None:
            meta["last_write"] = _now()
            self._write_meta(meta)

    # --- locks ------------------------------------------------------------------------------------------
    @staticmethod
    def _holder(fd: int) -> dict[str, Any]:
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            return json.loads(os.read(fd, 4096).decode() or "{}")
        except (OSError, ValueError):
            return {}

    @staticmethod
    def _set_holder(fd: int) -> None:
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, json.dumps({"pid": os.getpid(), "started_at": _now()}).encode())

    @contextlib.contextmanager
    def write_lock(self) -> Iterator[None]:
        """Exclusive lock around one write; waits for other writers ($BRT_LOCK_TIMEOUT s, default 600)."""
        with self._rlock:
            if self._lock_depth:
                self._lock_depth += 1
                try:
                    yield
                finally:
                    self._lock_depth -= 1
                return
            self._path.mkdir(parents=True, exist_ok=True)
            fd = os.open(self._path / ".write.lock", os.O_RDWR | os.O_CREAT, 0o644)
            timeout = float(os.environ.get("BRT_LOCK_TIMEOUT", "600"))
            start = time.monotonic()
            warned = False
            try:
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except OSError as exc:
                        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                            raise
                    waited = time.monotonic() - start
                    if waited >= timeout:
                        pid = self._holder(fd).get("pid", "?")
                        raise StoreLocked(
                            f"store of charter {self.charter_id} is locked by pid {pid}; "
                            f"gave up after {timeout:g} s"
                        )
                    if waited >= 1.0 and not warned:
                        log.info(
                            "waiting for lock held by pid %s on %s",
                            self._holder(fd).get("pid", "?"),
                            self._path,
                        )
                        warned = True
                    time.sleep(0.05)
            except BaseException:
                os.close(fd)
                raise
            self._set_holder(fd)
            self._lock_fd = fd
            self._lock_depth = 1
            try:
                yield
            finally:
                self._lock_depth = 0
                self._lock_fd = None
                try:
                    fcntl.flock(fd, fcntl.LOCK_UN)
                finally:
                    os.close(fd)

    @contextlib.contextmanager
    def harvest_lock(self) -> Iterator[None]:
        """Lock for a whole harvest; never waits: raises StoreLocked if another harvest holds it."""
        with self._rlock:
            held = self._harvest_fd is not None
            if not held:
                self._path.mkdir(parents=True, exist_ok=True)
                fd = os.open(self._path / ".harvest.lock", os.O_RDWR | os.O_CREAT, 0o644)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError as exc:
                    holder = self._holder(fd)
                    os.close(fd)
                    if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                        raise
                    raise StoreLocked(
                        f"charter {self.charter_id} is being harvested by pid {holder.get('pid', '?')} "
                        f"(started {holder.get('started_at', '?')}); wait for it to finish"
                    ) from None
                self._set_holder(fd)
                self._harvest_fd = fd
        if held:  # re-entered by the same Memory: the outer block releases it
            yield
            return
        try:
            yield
        finally:
            with self._rlock:
                self._harvest_fd = None
                try:
                    fcntl.flock(fd, fcntl.LOCK_UN)
                finally:
                    os.close(fd)

    # --- writes -----------------------------------------------------------------------------------------
    def add(
        self, url: str, text: str, selector: str = "body", last_updated: str | None = None, **page_fields: Any
    ) -> list[str]:
        """Chunk, embed and store one page (replacing its previous version); returns its chunk ids."""
        page = PageInput.from_any(
            {"url": url, "text": text, "selector": selector, "last_updated": last_updated, **page_fields}
        )
        return self.add_many([page])

    def add_many(self, pages: Iterable[PageInput | dict[str, Any]]) -> list[str]:
        """Store many pages in one embedding pass and few commits; returns all their chunk ids in order."""
        inputs: dict[str, PageInput] = {}
        for raw in pages:
            page = PageInput.from_any(raw)
            if not page.url:
                raise ValueError("page url must not be empty")
            if page.text is None:
                raise ValueError(f"page {page.url} has no text")
            inputs.pop(page.url, None)  # a URL given twice: the last version wins
            inputs[page.url] = page
        if not inputs:
            return []
        emb = self.embedder
        algo = split_algo(*window_for(emb))
        chunked: dict[str, list[Chunk]] = {}
        for url, page in inputs.items():
            seen: set[str] = set()
            chunks = []
            for chunk in chunk_with(emb, page.text):
                if chunk.id not in seen:
                    seen.add(chunk.id)
                    chunks.append(chunk)
            chunked[url] = chunks
        # embed outside the write lock (the slow part) what the store does not hold yet; whatever another
        # writer adds meanwhile is simply reused, whatever it removes is embedded under the lock
        known = set(self._store.chunk_meta()) if self._read_meta() else set()
        todo: dict[str, str] = {}
        for chunks in chunked.values():
            for c in chunks:
                if c.id not in known:
                    todo.setdefault(c.id, c.text)
        pre: dict[str, Any] = {}
        if todo:
            vecs = emb.embed_documents(list(todo.values()))
            pre = dict(zip(todo, vecs, strict=True))
        with self.write_lock():
            meta = self._ensure_created(emb.dim, algo, emb.precision)
            if meta.get("split_algo") and meta["split_algo"] != algo:
                log.warning("store %s was chunked with %s, now %s", self._path, meta["split_algo"], algo)
            self._reconcile(inputs, chunked, removed=set(), algo=algo, vectors=pre)
        ids: list[str] = []
        for url in inputs:
            ids.extend(c.id for c in chunked[url])
        return ids

    def delete_page(self, url: str) -> bool:
        """Remove a page and the chunks no other page holds; returns False if it was not stored."""
        if not self._read_meta():
            return False
        with self.write_lock():
            if self._store.page(url) is None:
                return False
            self._reconcile({}, {}, removed={url}, algo=None)
        return True

    def _reconcile(
        self,
        inputs: dict[str, PageInput],
        chunked: dict[str, list[Chunk]],
        removed: set[str],
        algo: str | None,
        vectors: dict[str, Any] | None = None,
    ) -> None:
        """Bring chunk rows in line with the pages table after replacing ``inputs`` and removing ``removed``.

        Also repairs leftovers of an interrupted write: orphan chunks are deleted, url/also_seen_at fixed.
        Order: chunk rows, then page rows, then deletions, so a crash never loses stored data.
        """
        store = self._store
        page_ids = store.page_chunk_ids()
        meta = store.chunk_meta()
        new_pages: dict[str, list[str]] = {u: ids for u, ids in page_ids.items() if u not in removed}
        for url, chunks in chunked.items():
            new_pages[url] = [c.id for c in chunks]
        page_info: dict[str, dict[str, Any]] = {}
        if inputs:
            for url, page in inputs.items():
                page_info[url] = {
                    "title": page.title,
                    "last_updated": page.last_updated,
                    "selector": page.selector,
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

        new_rows: list[dict[str, Any]] = []
        updates: dict[str, dict[str, Any]] = {}
        now = _now()
        for cid, hs in holders.items():
            cur = meta.get(cid)
            if cur is not None:
                old_also = list(cur.get("also_seen_at") or [])
                if cur["url"] in hs:
                    primary = cur["url"]
                else:
                    primary = next((u for u in old_also if u in hs), hs[0])
                also = [u for u in old_also if u in hs and u != primary]
                also += [u for u in hs if u != primary and u not in also]
                info = page_info.get(primary)
                want = {"url": primary, "also_seen_at": also}
                if info is not None:
                    want.update(info)
                elif primary != cur["url"]:
                    want.update(self._page_meta(primary))
                if any(cur.get(k) != v for k, v in want.items()):
                    updates[cid] = want
            else:
                chunk = chunk_by_id.get(cid)
                if chunk is None:
                    log.warning("page(s) %s list chunk %s which is missing from %s", hs, cid, self._path)
                    continue
                primary = hs[0]
                info = page_info.get(primary) or self._page_meta(primary)
                new_rows.append(
                    {
                        "id": cid,
                        "charter_id": self.charter_id,
                        "url": primary,
                        "selector": info.get("selector"),
                        "text": chunk.text,
                        "tokens": chunk.tokens,
                        "split_algo": algo,
                        "last_updated": info.get("last_updated"),
                        "created_at": now,
                        "title": info.get("title"),
                        "also_seen_at": hs[1:],
                    }
                )
        stale = [cid for cid in meta if cid not in holders]

        import numpy as np

        new_vectors: list[np.ndarray] = []
        rows: list[dict[str, Any]] = []
        if new_rows:
            pre = vectors or {}
            missing = [r for r in new_rows if r["id"] not in pre]
            if missing:
                log.debug("embedding %d new chunks for %s", len(missing), self.charter_id)
                fresh = self.embedder.embed_documents([r["text"] for r in missing])
                pre = {**pre, **dict(zip([r["id"] for r in missing], fresh, strict=True))}
            new_vectors.append(np.stack([pre[r["id"]] for r in new_rows]).astype(np.float32))
            rows.extend(new_rows)
        if updates:
            existing = store.chunk_rows(updates.keys(), include_vectors=True)
            for row in existing:
                row.update(updates[row["id"]])
            if existing:
                new_vectors.append(np.asarray([r.pop("embedding") for r in existing], dtype=np.float32))
                rows.extend(existing)
        if rows:
            store.upsert_chunks(rows, np.concatenate(new_vectors, axis=0))
        if inputs:
            stored_at = _now()
            page_rows = []
            for url, page in inputs.items():
                row = asdict(page)
                row["chunk_ids"] = new_pages[url]
                row["stored_at"] = stored_at
                page_rows.append(row)
            store.upsert_pages(page_rows)
        if removed:
            store.delete(PAGES, "url", removed)
        if inputs or removed:  # closets rule: pointers of re-stored/removed pages are purged, then rebuilt
            from .pointers import purge_urls

            purge_urls(self._path, [*inputs, *removed])
        if stale:
            store.delete(CHUNKS, "id", stale)
        if rows or inputs or removed or stale:
            self._touch()
        if len(new_rows) >= OPTIMIZE_AFTER_CHUNKS:
            store.optimize()
        if rows or stale:  # full-text index (and, past its row count, the vector index) current after writes
            store.ensure_indexes()
        log.info(
            "store %s: %d new chunks embedded, %d updated, %d deleted, %d page(s) written, %d removed",
            self.charter_id,
            len(new_rows),
            len(updates),
            len(stale),
            len(inputs),
            len(removed),
        )

    def _page_meta(self, url: str) -> dict[str, Any]:
        row = self._store.page(url) or {}
        return {
            "title": row.get("title"),
            "last_updated": row.get("last_updated"),
            "selector": row.get("selector"),
        }

    def repair(self) -> None:
        """Sweep leftovers of an interrupted write (orphan chunks, stale url/also_seen_at)."""
        if not self._read_meta():
            return
        with self.write_lock():
            self._reconcile({}, {}, removed=set(), algo=None)

    # --- reads ------------------------------------------------------------------------------------------
    def search(
        self,
        query: str,
        k: int = 5,
        subtree: str | None = None,
        min_score: float | None = None,
        *,
        only_ids: Iterable[str] | None = None,
        mode: str = "hybrid",
        rerank: bool = False,
        reranker_model: str | None = None,
        mmr_lambda: float | None = 0.7,
        candidates: int = 20,
        extra_queries: Iterable[str] = (),
    ) -> list[Hit]:
        """The ``k`` best chunks for ``query``, best first (pipeline in ``memory_store/retrieval.py``).

        ``mode``: "hybrid" (vector top-N ∪ BM25 top-N, reciprocal rank fusion), "vector" or "bm25";
        ``candidates``: N per side (at least ``k``); ``rerank``: cross-encoder rerank of the fused head with
        ``reranker_model`` (default BAAI/bge-reranker-base, local only); ``mmr_lambda``: MMR diversity (None =
        off); ``extra_queries``: more queries whose candidates are fused with ``query``'s (signature queries).
        ``hit.score`` is the cosine similarity of query and chunk on every path; ``min_score`` None means no
        filter, otherwise no hit below it, whichever side found it. ``hit.matched_via`` says which side."""
        if subtree is not None:  # concept routing: the subtree's chunks, else the whole store (labelled)
            return self._search_subtree(
                query,
                k,
                subtree,
                min_score,
                only_ids,
                mode=mode,
                rerank=rerank,
                reranker_model=reranker_model,
                mmr_lambda=mmr_lambda,
                candidates=candidates,
                extra_queries=tuple(extra_queries),
            )
        ids = list(only_ids) if only_ids is not None else None
        if k <= 0 or (ids is not None and not ids) or not self._read_meta() or self.count_chunks() == 0:
            return []
        from .retrieval import search as _pipeline

        return _pipeline(
            self,
            [query, *extra_queries],
            k=k,
            min_score=min_score,
            only_ids=ids,
            mode=mode,
            candidates=candidates,
            rerank=rerank,
            reranker_model=reranker_model,
            mmr_lambda=mmr_lambda,
        )

    def _ensure_text_index(self) -> None:
        """Build the full-text index if a store written before it existed lacks it (takes the write lock)."""
        store = self._store
        if store.has_fts_index():
            return
        with self.write_lock():
            store.ensure_indexes()

    def _search_subtree(
        self,
        query: str,
        k: int,
        subtree: str,
        min_score: float | None,
        only_ids: Iterable[str] | None,
        **opts: Any,
    ) -> list[Hit]:
        """Search only the chunks the concept index points to under ``subtree`` (matched_via "concept");
        when none of them reaches the threshold, search the whole store (matched_via "fallback")."""
        from .pointers import chunk_ids_under

        allowed = set(only_ids) if only_ids is not None else None
        ids = [i for i in chunk_ids_under(self._path, subtree) if allowed is None or i in allowed]
        bar = min_score if min_score is not None else self.default_min_score
        hits = (
            [h for h in self.search(query, k, None, min_score, only_ids=ids, **opts) if h.score >= bar]
            if ids
            else []
        )
        via = "concept"
        if not hits:
            hits, via = self.search(query, k, None, min_score, only_ids=only_ids, **opts), "fallback"
        for h in hits:
            h.matched_via = via
        return hits

    def purge_pointers(self, urls: Iterable[str]) -> int:
        """Delete the concept pointer rows of these pages (the closets rule: a re-stored page's pointers go
        first; the next concept-index update rebuilds them)."""
        from .pointers import purge_urls

        with self.write_lock():
            return purge_urls(self._path, urls)

    def pages(self) -> list[PageRecord]:
        """Every stored page, in storage order."""
        if not self._read_meta():
            return []
        return [PageRecord(**row) for row in self._store.pages()]

    def page(self, url: str) -> PageRecord | None:
        if not self._read_meta():
            return None
        row = self._store.page(url)
        return PageRecord(**row) if row else None

    def has_page(self, url: str) -> bool:
        return self.page(url) is not None

    def chunks(self, include_vectors: bool = True) -> Iterator[dict[str, Any]]:
        """Every chunk row as a dict (``embedding`` a list of floats unless include_vectors is False)."""
        if not self._read_meta():
            return iter(())
        return self._store.iter_chunks(include_vectors)

    def count_chunks(self) -> int:
        return self._store.count(CHUNKS) if self._read_meta() else 0

    def count_pages(self) -> int:
        return self._store.count(PAGES) if self._read_meta() else 0

    def stats(self) -> StoreStats:
        meta = self._read_meta() or {}
        disk = 0
        if self._path.exists():
            for root, _dirs, files in os.walk(self._path):
                for name in files:
                    with contextlib.suppress(OSError):
                        disk += os.path.getsize(os.path.join(root, name))
        return StoreStats(
            charter_id=self.charter_id,
            path=str(self._path),
            pages=self.count_pages(),
            chunks=self.count_chunks(),
            model=meta.get("model", self._model_name),
            dim=meta.get("dim"),
            disk_bytes=disk,
            last_write=meta.get("last_write"),
        )

    # --- journal ----------------------------------------------------------------------------------------
    def record_events(self, events: list[dict[str, Any]]) -> None:
        """Append events (JSON objects) to the store's journal ``events.jsonl``, durably."""
        if not events:
            return
        lines = "".join(json.dumps(e, ensure_ascii=False, default=str) + "\n" for e in events)
        with self.write_lock():
            self._ensure_created()
            with open(self._path / "events.jsonl", "a", encoding="utf-8") as fh:
                fh.write(lines)
                fh.flush()
                os.fsync(fh.fileno())

    def events(self) -> list[dict[str, Any]]:
        """The journal's events in order (a truncated last line is skipped)."""
        path = self._path / "events.jsonl"
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
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
                    log.warning("skipping truncated last line of %s", path)
                else:
                    log.warning("skipping unreadable line %d of %s", i + 1, path)
        return out

    # --- snapshot / reset -------------------------------------------------------------------------------
    def snapshot(
        self,
        path: str | os.PathLike[str],
        *,
        extra_records: Iterable[dict[str, Any]] = (),
        include_vectors: bool = True,
        tool_version: str = "0.1.0",
    ) -> dict[str, Any]:
        """Write the audit snapshot (JSONL, manifest first) to ``path`` atomically; returns the manifest."""
        out = Path(path).expanduser()
        out.parent.mkdir(parents=True, exist_ok=True)
        counts: dict[str, int] = {"page": 0, "chunk": 0}
        digest = hashlib.sha256()
        exists = self._read_meta() is not None
        lock = self.write_lock() if exists else contextlib.nullcontext()
        body_fd, body_name = tempfile.mkstemp(prefix=".snapshot-body-", dir=out.parent)
        try:
            with lock, os.fdopen(body_fd, "wb") as body:

                def emit(record: dict[str, Any]) -> None:
                    data = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode("utf-8")
                    digest.update(data)
                    body.write(data)
                    kind = str(record.get("type"))
                    counts[kind] = counts.get(kind, 0) + 1

                meta = self._read_meta() or {}
                for page in self.pages():
                    emit(
                        {
                            "type": "page",
                            "url": page.requested_url or page.url,
                            "final_url": page.url,
                            "title": page.title,
                            "last_updated": page.last_updated,
                            "last_updated_source": page.last_updated_source,
                            "selector": page.selector,
                            "fetched_at": page.fetched_at,
                            "status": page.status,
                            "content_type": page.content_type,
                            "chunk_ids": page.chunk_ids,
                            "stored_at": page.stored_at,
                            "text": page.text,
                        }
                    )
                for row in self.chunks(include_vectors=include_vectors):
                    emit({"type": "chunk", **row})
                for record in extra_records:
                    if "type" not in record:
                        raise ValueError(f"snapshot record without a 'type': {record!r}")
                    emit(dict(record))
            manifest = {
                "type": "manifest",
                "charter_id": self.charter_id,
                "created_at": _now(),
                "tool_version": tool_version,
                "embedding_model": meta.get("model", self._model_name),
                "embedding_dim": meta.get("dim"),
                "embedding_precision": vector_precision(meta),
                "split_algo": meta.get("split_algo"),
                "include_vectors": include_vectors,
                "counts": counts,
                "sha256": digest.hexdigest(),
            }
            tmp = out.with_name(out.name + ".tmp")
            with open(tmp, "wb") as fh, open(body_name, "rb") as body_in:
                fh.write((json.dumps(manifest, ensure_ascii=False) + "\n").encode("utf-8"))
                shutil.copyfileobj(body_in, fh, 1 << 20)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, out)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(body_name)
        log.info("snapshot of %s written to %s (%s)", self.charter_id, out, counts)
        return manifest

    def load_rows(
        self,
        pages: list[dict[str, Any]],
        chunks: list[dict[str, Any]],
        vectors: Any,
        *,
        dim: int,
        split_algo: str | None = None,
    ) -> None:
        """Write page and chunk rows exactly as given (the inverse of ``snapshot``: ids, dates, URLs and order
        kept; nothing chunked or embedded); ``vectors[i]`` is ``chunks[i]``'s embedding. Only into an empty
        store: raises MemoryStoreError otherwise."""
        import numpy as np

        vecs = np.asarray(vectors, dtype=np.float32).reshape(len(chunks), dim) if chunks else None
        with self.write_lock():
            if self._read_meta() is not None and (self.count_chunks() or self.count_pages()):
                raise MemoryStoreError(f"store {self._path} is not empty: rows are loaded only into a new store")
            self._ensure_created(dim, split_algo)
            store = self._store
            store.dim = dim
            for start in range(0, len(chunks), 2000):
                store.upsert_chunks(chunks[start : start + 2000], vecs[start : start + 2000])  # type: ignore[index]
            store.upsert_pages(pages)
            if chunks:
                store.ensure_indexes()
            self._touch()
        log.info("store %s: %d pages and %d chunks loaded", self.charter_id, len(pages), len(chunks))

    def reset(self) -> None:
        """Destroy the store: its whole folder is removed. Refused while another process harvests it."""
        if not self._path.exists():
            return
        with self.harvest_lock(), self.write_lock():
            if self._store_obj is not None:
                self._store_obj.close()
                self._store_obj = None
            try:
                shutil.rmtree(self._path)
            except OSError as exc:
                raise MemoryStoreError(f"cannot remove store {self._path}: {exc}") from exc
        log.info("store of charter %s removed (%s)", self.charter_id, self._path)


__all__ = ["DEFAULT_MODEL", "Memory", "brt_home", "default_basepath", "make_snippet", "validate_charter_id"]
