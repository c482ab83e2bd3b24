"""``Memory``: one charter's evidence store (chunks + embeddings in LanceDB, pages, journal, snapshot).

A facade over private modules: ``_locks`` (write and harvest locks), ``_meta`` (meta.json and the journal),
``_writes`` (chunking, embedding, reconcile), ``retrieval`` (the search pipeline), ``_snapshot`` and
``_maintenance`` (check, selector updates); ``store`` is the LanceDB layer under all of them."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import _maintenance, _remote, _snapshot, _writes
from ._locks import StoreLocks
from ._meta import FORMAT_VERSION, StoreMeta, append_events, embedder_fits, read_events
from .chunking import split_algo, window_for
from .embeddings import (
    DEFAULT_MODEL,
    default_min_similarity,
    fp32_embedder,
    get_embedder,
    resolve_model_name,
    vector_precision,
)
from .errors import MemoryStoreError, ModelMismatch, StoreNotFound, WriteStopped
from .pointers import chunk_ids_under, purge_urls
from .records import CheckResult, Hit, PageInput, PageRecord, StoreStats, make_snippet
from .retrieval import search as run_search
from .settings import brt_home
from .store import CHUNKS, PAGES, LanceStore

if TYPE_CHECKING:
    from .embeddings import Embedder

log = logging.getLogger(__name__)

CHARTER_ID_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}\Z")


def default_basepath() -> Path:
    """Where stores live by default: ``$BRT_HOME/memory``."""
    return brt_home() / "memory"


def validate_charter_id(charter_id: str) -> str:
    """Return ``charter_id`` if it matches the charter id pattern, else raise ValueError."""
    if not isinstance(charter_id, str) or not CHARTER_ID_RE.match(charter_id):
        raise ValueError(f"invalid charter id {charter_id!r}: expected [a-z0-9][a-z0-9_-]{{0,63}}")
    return charter_id


def _local_base(basepath: str | os.PathLike[str] | None, uri: str | None) -> Path:
    """The folder stores live in: a local ``uri`` (a path or ``file://``) wins over ``basepath``."""
    if uri and not _remote.is_remote_uri(uri):
        return Path(uri[len("file://") :] if uri.startswith("file://") else uri).expanduser()
    return Path(basepath).expanduser() if basepath is not None else default_basepath()


class Memory:
    """The evidence store of one charter at ``<basepath>/<charter_id>/``, or at ``<uri>/<charter_id>/`` on
    object storage (``s3://bucket/prefix``; credentials and endpoint in ``storage_options`` or the standard
    AWS environment variables; see ``_remote``: a local working folder under ``basepath`` mirrors the small
    side files, a lease object keeps writers on different machines apart)."""

    def __init__(
        self,
        charter_id: str,
        basepath: str | os.PathLike[str] | None = None,
        *,
        model: str | None = None,
        create: bool = True,
        uri: str | None = None,
        storage_options: Mapping[str, str] | None = None,
    ) -> None:
        self.charter_id = validate_charter_id(charter_id)
        base = _local_base(basepath, uri)
        self._objects: _remote.ObjectDir | None = None
        self._mirror: _remote.FileMirror | None = None
        if _remote.is_remote_uri(uri):
            assert uri is not None
            self._objects = _remote.ObjectDir(uri, charter_id, storage_options)
            self._path = _remote.local_cache(base, uri, charter_id)
            self._mirror = _remote.FileMirror(self._objects, self._path)
            self._mirror.pull()
        else:
            self._path = base / charter_id
        self._create = create
        self._meta = StoreMeta(self._path)
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
        self._recipe_noted = False
        self._store_obj: LanceStore | None = None
        self._locks: Any = StoreLocks(self._path, charter_id)
        if self._objects is not None and self._mirror is not None:
            self._locks = _remote.RemoteLocks(self._locks, self._objects, self._mirror, charter_id)

    # --- properties -------------------------------------------------------------------------------------
    @classmethod
    def exists(
        cls,
        charter_id: str,
        basepath: str | os.PathLike[str] | None = None,
        *,
        uri: str | None = None,
        storage_options: Mapping[str, str] | None = None,
    ) -> bool:
        """True when a store exists for ``charter_id`` (under ``uri`` when given)."""
        validate_charter_id(charter_id)
        if _remote.is_remote_uri(uri):
            assert uri is not None
            return _remote.ObjectDir(uri, charter_id, storage_options).exists()
        return (_local_base(basepath, uri) / charter_id / "meta.json").is_file()

    @property
    def path(self) -> Path:
        """The store's folder (for a store on object storage: its local working folder)."""
        return self._path

    @property
    def location(self) -> str:
        """Where the store lives: its folder, or its URI on object storage (never with credentials)."""
        return _remote.redact(self._objects.uri) if self._objects is not None else str(self._path)

    @property
    def remote(self) -> bool:
        """True when the store lives on object storage."""
        return self._objects is not None

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def loaded_embedder(self) -> Embedder | None:
        """The embedder once something loaded it (None before: asking never loads the model)."""
        return self._embedder

    @property
    def embedder(self) -> Embedder:
        """The embedding model (loaded on first use; checked against the store's recorded dimension)."""
        if self._embedder is None:
            meta = self._read_meta()
            emb = get_embedder(self._model_name, precision=vector_precision(meta))
            self._check_embedder(meta, emb)
            self._embedder = emb
        return self._embedder

    @property
    def feature_embedder(self) -> Any:
        """The embedder of the features brt's fitted models read (evidence scorer, acceptance, claim support): the
        store's own when its vectors are fp32, else its model at fp32 (``embeddings.fp32_embedder``), since those
        models were fitted on fp32 vectors. Searching uses ``embedder``, of the store's precision."""
        return fp32_embedder(self.embedder)

    def _check_embedder(self, meta: dict[str, Any] | None, embedder: Any) -> None:
        """Refuse an embedder of another model, precision or dimension than the store's (ModelMismatch); warn once
        when its int8 recipe is not the one the store's vectors were made with."""
        problem = embedder_fits(meta, self._path, self._model_name, embedder)
        if problem and not self._recipe_noted:
            self._recipe_noted = True
            log.warning("store %s: %s", self._path, problem)

    @property
    def precision(self) -> str | None:
        """The precision of the store's vectors ("fp32", "int8"); None before the first write."""
        return vector_precision(self._read_meta())

    def use_embedder(self, embedder: Any) -> Any:
        """Embed (and chunk) with ``embedder`` from now on, e.g. a pool of workers that hold the model elsewhere
        (it has the ``Embedder`` attributes and methods; with ``chunk_pages(inputs)`` it chunks too); returns
        the embedder used so far (None: not loaded yet), to put back. None goes back to the local model.
        A model or dimension other than the store's is refused (ModelMismatch)."""
        if embedder is not None:
            self._check_embedder(self._read_meta(), embedder)
        previous, self._embedder = self._embedder, embedder
        return previous

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
    def default_min_similarity(self) -> float:
        """The store's documented default min_similarity for its model (0.35 for all-MiniLM-L6-v2)."""
        return default_min_similarity(self._model_name)

    @property
    def _store(self) -> LanceStore:
        if self._store_obj is None:
            meta = self._read_meta() or {}
            if self._objects is not None:
                self._store_obj = LanceStore(
                    self._path,
                    meta.get("dim"),
                    uri=self._objects.lance_uri,
                    storage_options=self._objects.storage_options,
                )
            else:
                self._store_obj = LanceStore(self._path, meta.get("dim"))
        return self._store_obj

    # --- meta -------------------------------------------------------------------------------------------
    def _read_meta(self) -> dict[str, Any] | None:
        return self._meta.read()

    def _ensure_created(
        self, dim: int | None = None, algo: str | None = None, precision: str | None = None, recipe: str | None = None
    ) -> dict[str, Any]:
        """Create the store folder and meta.json if missing; fill in dim/split_algo/precision (and the int8
        recipe) once known."""
        meta = self._meta.ensure(self.charter_id, self._model_name, dim, algo, precision, recipe)
        if dim and self._store_obj is not None and not self._store_obj.dim:
            self._store_obj.dim = dim
        return meta

    # --- locks ------------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def write_lock(self) -> Iterator[None]:
        """Exclusive lock around one write; waits for other writers ($BRT_LOCK_TIMEOUT s, default 600)."""
        with self._locks.write():
            yield

    @contextlib.contextmanager
    def harvest_lock(self) -> Iterator[None]:
        """Lock for a whole harvest; never waits: raises StoreLocked if another harvest holds it."""
        with self._locks.harvest():
            yield

    # --- writes -----------------------------------------------------------------------------------------
    def add(
        self, url: str, text: str, selector: str = "body", last_updated: str | None = None, **page_fields: Any
    ) -> list[str]:
        """Chunk, embed and store one page (replacing its previous version); returns its chunk ids."""
        page = PageInput.from_any(
            {"url": url, "text": text, "selector": selector, "last_updated": last_updated, **page_fields}
        )
        return self.add_many([page])

    def add_many(
        self, pages: Iterable[PageInput | dict[str, Any]], *, stop: threading.Event | None = None
    ) -> list[str]:
        """Store many pages in one embedding pass and few commits; returns all their chunk ids in order.
        ``stop``: once set, the chunking and embedding (the slow part) end within one slice of texts and
        WriteStopped is raised; nothing is written (a harvest's hard stop)."""
        inputs = _writes.collect_inputs(pages)
        if not inputs:
            return []
        emb = self.embedder
        algo = split_algo(*window_for(emb))
        chunked = _writes.chunk_pages(emb, inputs)
        wanted = [c.id for chunks in chunked.values() for c in chunks]
        known = self._store.chunk_ids_present(wanted) if self._read_meta() else set()
        pre = _writes.embed_new(emb, chunked, known, stop=stop)
        if stop is not None and stop.is_set():
            raise WriteStopped(f"stopped before writing {len(inputs)} page(s)")
        with self.write_lock():
            meta = self._ensure_created(emb.dim, algo, emb.precision, getattr(emb, "recipe", None))
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
        chunked: dict[str, list[Any]],
        removed: set[str],
        algo: str | None,
        vectors: dict[str, Any] | None = None,
    ) -> None:
        """``_writes.reconcile`` on this store (the caller holds the write lock)."""
        _writes.reconcile(
            self._store,
            self._meta,
            self.charter_id,
            lambda texts: self.embedder.embed_documents(texts),
            inputs,
            chunked,
            removed,
            algo,
            vectors,
            after_mark=self._mirror.push if self._mirror is not None else None,
        )

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
        min_similarity: float | None = None,
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
        ``hit.score`` is the cosine similarity of query and chunk on every path; ``min_similarity`` None means no
        filter, otherwise no hit below it, whichever side found it. ``hit.matched_via`` says which side."""
        if subtree is not None:  # concept routing: the subtree's chunks, else the whole store (labelled)
            return self._search_subtree(
                query,
                k,
                subtree,
                min_similarity,
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
        if mode in ("hybrid", "bm25"):
            self._ensure_text_index()
        return run_search(
            self._store,
            self.embedder,
            [query, *extra_queries],
            k=k,
            min_similarity=min_similarity,
            only_ids=ids,
            mode=mode,
            candidates=candidates,
            rerank=rerank,
            reranker_model=reranker_model,
            mmr_lambda=mmr_lambda,
        )

    def _ensure_text_index(self) -> None:
        """Make the full-text index cover every row before a BM25 search (takes the write lock): build it if a
        store written before it existed lacks it, fold in rows written since it was built. The same rows then
        get the same scores however they were written (a harvest on Ray batches its writes differently)."""
        store = self._store
        if store.text_index_current():
            return
        missing = not store.has_fts_index()
        try:
            with self.write_lock():
                store.ensure_indexes(fold_all=True)
        except (MemoryStoreError, OSError) as exc:
            if missing:
                raise
            # not writable here (read-only files, a writer holding the lock too long): search the index as it is
            log.warning("full-text index of %s not brought up to date before searching: %s", self.charter_id, exc)

    def _search_subtree(
        self,
        query: str,
        k: int,
        subtree: str,
        min_similarity: float | None,
        only_ids: Iterable[str] | None,
        **opts: Any,
    ) -> list[Hit]:
        """Search only the chunks the concept index points to under ``subtree`` (matched_via "concept");
        when none of them reaches the threshold, search the whole store (matched_via "fallback")."""
        allowed = set(only_ids) if only_ids is not None else None
        ids = [i for i in chunk_ids_under(self._path, subtree) if allowed is None or i in allowed]
        bar = min_similarity if min_similarity is not None else self.default_min_similarity
        found = self.search(query, k, None, min_similarity, only_ids=ids, **opts) if ids else []
        hits = [h for h in found if h.score >= bar]
        via = "concept"
        if not hits:
            hits, via = self.search(query, k, None, min_similarity, only_ids=only_ids, **opts), "fallback"
        for h in hits:
            h.matched_via = via
        return hits

    def purge_pointers(self, urls: Iterable[str]) -> int:
        """Delete the concept pointer rows of these pages (the closets rule: a re-stored page's pointers go
        first; the next concept-index update rebuilds them)."""
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
        if self._objects is not None:
            disk = self._objects.size()
        elif self._path.exists():
            for root, _dirs, files in os.walk(self._path):
                for name in files:
                    with contextlib.suppress(OSError):
                        disk += os.path.getsize(os.path.join(root, name))
        return StoreStats(
            charter_id=self.charter_id,
            path=self.location,
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
        with self.write_lock():
            self._ensure_created()
            append_events(self._path, events)

    def events(self) -> list[dict[str, Any]]:
        """The journal's events in order (a truncated last line is skipped)."""
        return read_events(self._path)

    # --- snapshot / reset -------------------------------------------------------------------------------
    def snapshot(
        self,
        path: str | os.PathLike[str],
        *,
        extra_records: Iterable[dict[str, Any]] = (),
        include_vectors: bool = True,
        tool_version: str = "0.1.0",
        page_fields: Callable[[PageRecord], dict[str, Any]] | None = None,
        pages: Iterable[PageRecord] | None = None,
    ) -> dict[str, Any]:
        """Write the audit snapshot (JSONL, manifest first) to ``path`` atomically; returns the manifest.
        ``page_fields(page)`` adds the caller's fields to each page record (the store's own are kept).
        ``pages``: pages kept without a store (a harvest with ``memory.enabled: false``), written instead of the
        store's, with no chunk."""
        kept = list(pages) if pages is not None else None
        return _snapshot.write_snapshot(
            path,
            charter_id=self.charter_id,
            model_name=self._model_name,
            read_meta=self._read_meta,
            lock=self.write_lock,
            pages=self.pages if kept is None else (lambda: kept),
            chunks=(lambda vectors: self.chunks(include_vectors=vectors)) if kept is None else (lambda _v: []),
            extra_records=extra_records,
            include_vectors=include_vectors,
            tool_version=tool_version,
            page_fields=page_fields,
        )

    # --- housekeeping -----------------------------------------------------------------------------------
    def check(self) -> CheckResult:
        """Verify the store (``brt status --check``): every chunk's id is the hash of its text, every chunk is
        held by a stored page and every page's chunks exist, no duplicate ids, every vector has the store's
        dimension and finite values, every LanceDB index covers exactly the table's rows."""
        pages = self.pages()
        dim = self.dim if self.count_chunks() else None
        return _maintenance.check_store(
            self._store, pages, dim, self.chunks(include_vectors=True), self._meta.pending_write()
        )

    def compact(self) -> None:
        """Compact both tables and remove every older version, under the write lock (bounded disk across
        re-harvests; a reader in another process holding an older version reads the latest instead); rows written
        since are folded into the indexes and, past its row count, the vector index is built (a harvest ends
        with this: a page's write never compacts)."""
        if not self._read_meta():
            return
        with self.write_lock():
            self._store.compact()
            self._store.ensure_indexes()  # the vector index once the store is big enough (never in a write)

    def set_selectors(self, url: str, selector_of: Callable[[str], str]) -> int:
        """Set ``selector_of(chunk text)`` as the selector of each chunk of the stored page ``url`` (e.g. PDF
        pages: ``pdf#page=N``); returns the chunks updated. A chunk whose primary page is another document keeps
        that page's selector."""
        record = self.page(url)
        if record is None or not record.chunk_ids:
            return 0
        with self.write_lock():
            return _maintenance.set_selectors(self._store, url, record.chunk_ids, selector_of)

    def load_rows(
        self,
        pages: list[dict[str, Any]],
        chunks: list[dict[str, Any]],
        vectors: Any,
        *,
        dim: int,
        split_algo: str | None = None,
        precision: str | None = None,
        recipe: str | None = None,
    ) -> None:
        """Write page and chunk rows exactly as given (the inverse of ``snapshot``: ids, dates, URLs and order
        kept; nothing chunked or embedded); ``vectors[i]`` is ``chunks[i]``'s embedding, of ``precision``
        ("fp32" or "int8", with its int8 ``recipe``; None: fp32). Only into an empty store: raises
        MemoryStoreError otherwise."""
        import numpy as np

        vecs = np.asarray(vectors, dtype=np.float32).reshape(len(chunks), dim) if chunks else None
        with self.write_lock():
            if self._read_meta() is not None and (self.count_chunks() or self.count_pages()):
                raise MemoryStoreError(f"store {self._path} is not empty: rows are loaded only into a new store")
            self._ensure_created(dim, split_algo, precision or "fp32", recipe)
            store = self._store
            store.dim = dim
            for start in range(0, len(chunks), 2000):
                store.upsert_chunks(chunks[start : start + 2000], vecs[start : start + 2000])  # type: ignore[index]
            store.upsert_pages(pages)
            if chunks:
                store.ensure_indexes()
            self._meta.touch()
        log.info("store %s: %d pages and %d chunks loaded", self.charter_id, len(pages), len(chunks))

    def reset(self) -> None:
        """Destroy the store: its whole folder is removed (on object storage: every object under its URI,
        then its local working folder). Refused while another process harvests it."""
        if self._objects is not None:
            self._reset_remote()
            return
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

    def _reset_remote(self) -> None:
        assert self._objects is not None and self._mirror is not None
        with self.harvest_lock(), self.write_lock():
            if self._store_obj is not None:
                self._store_obj.close()
                self._store_obj = None
            self._mirror.enabled = False  # nothing is pushed back when the locks are released
            locks = self._locks
            locks.write_lease.abandon()
            locks.harvest_lease.abandon()
            n = self._objects.delete_all()
            left = self._objects.list()
            if left:
                raise MemoryStoreError(f"cannot remove store {self.location}: {len(left)} object(s) remain")
            shutil.rmtree(self._path, ignore_errors=True)
        self._mirror.forget()  # the Memory may create the store afresh
        log.info("store of charter %s removed (%s, %d objects)", self.charter_id, self.location, n)


__all__ = [
    "DEFAULT_MODEL",
    "FORMAT_VERSION",
    "Memory",
    "brt_home",
    "default_basepath",
    "make_snippet",
    "validate_charter_id",
]
