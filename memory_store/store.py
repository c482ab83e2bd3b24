"""Private LanceDB layer: the ``chunks`` and ``pages`` tables of one store. lancedb/pyarrow load lazily."""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .errors import StoreCorrupt, StoreWriteError

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

CHUNKS = "chunks"
PAGES = "pages"
CHUNK_FIELDS = [
    "id",
    "charter_id",
    "url",
    "selector",
    "text",
    "tokens",
    "split_algo",
    "last_updated",
    "created_at",
    "title",
    "also_seen_at",
]
PAGE_FIELDS = [
    "url",
    "requested_url",
    "title",
    "text",
    "selector",
    "last_updated",
    "last_updated_source",
    "fetched_at",
    "status",
    "content_type",
    "chunk_ids",
    "stored_at",
]


# Full-text index (LanceDB native FTS, BM25 scoring): lower-cased "simple" tokens (split on non-alphanumerics),
# ASCII folding, English Snowball stemming and stop-word removal.
FTS_STEM = True
FTS_REMOVE_STOP_WORDS = True
# Rows written after an index was built are searched by a scan until folded into it by optimize().
REINDEX_AFTER_ROWS = 1024
# B-tree indexes on the keys a write looks rows up by (chunks by id, pages by url): a write's filtered reads,
# merges and deletes then cost what it touches, not the size of the table (bench/store_write.py).
KEY_INDEXES = {"chunks": "id", "pages": "url"}
FTS_TIE_SLACK = 32  # rows past k a full-text search reads so that ties at the cut are broken by id
# Vector index: below this many chunks a flat exact scan is fast enough; from it on an IVF_HNSW_SQ index with
# exact re-ranking of refine_factor * k candidates (bench/vector_scale.py measures the trade-off).
VECTOR_INDEX_MIN_ROWS = 50_000
VECTOR_INDEX_TYPE = "IVF_HNSW_SQ"
VECTOR_NPROBES = 20
VECTOR_REFINE_FACTOR = 10


def _sql_str(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _in_list(column: str, values: Iterable[str]) -> str:
    return f"{column} IN ({', '.join(_sql_str(v) for v in values)})"


def chunk_schema(dim: int) -> Any:
    import pyarrow as pa

    return pa.schema(
        [
            ("id", pa.string()),
            ("charter_id", pa.string()),
            ("url", pa.string()),
            ("selector", pa.string()),
            ("text", pa.string()),
            ("tokens", pa.int32()),
            ("split_algo", pa.string()),
            ("last_updated", pa.string()),
            ("created_at", pa.string()),
            ("title", pa.string()),
            ("also_seen_at", pa.list_(pa.string())),
            ("embedding", pa.list_(pa.float32(), dim)),
        ]
    )


def page_schema() -> Any:
    import pyarrow as pa

    return pa.schema(
        [
            ("url", pa.string()),
            ("requested_url", pa.string()),
            ("title", pa.string()),
            ("text", pa.string()),
            ("selector", pa.string()),
            ("last_updated", pa.string()),
            ("last_updated_source", pa.string()),
            ("fetched_at", pa.string()),
            ("status", pa.int32()),
            ("content_type", pa.string()),
            ("chunk_ids", pa.list_(pa.string())),
            ("stored_at", pa.string()),
        ]
    )


_T = TypeVar("_T")


def _version_gone(exc: BaseException) -> bool:
    """Whether a LanceDB read failed because a data file of the version it read no longer exists."""
    return "Not found" in str(exc) and ".lance" in str(exc)


class LanceStore:
    """The two LanceDB tables in ``path/lance``. Callers hold the write lock around every write."""

    def __init__(
        self, path: Path, dim: int | None, *, uri: str | None = None, storage_options: dict[str, str] | None = None
    ) -> None:
        self.path = path  # the local folder (for a remote store, its working folder: messages only)
        self.dim = dim
        self.uri = uri  # the LanceDB database on object storage, else None (``path/lance``)
        self._storage_options = storage_options
        self._db: Any = None
        self._tables: dict[str, Any] = {}

    # --- plumbing ---------------------------------------------------------------------------------------
    def _connect(self) -> Any:
        if self._db is None:
            from ._lazy_imports import import_lancedb

            lancedb = import_lancedb()
            try:
                if self.uri:
                    self._db = lancedb.connect(self.uri, storage_options=self._storage_options)
                else:
                    self._db = lancedb.connect(str(self.path / "lance"))
            except Exception as exc:
                where = self.uri or self.path / "lance"
                raise StoreCorrupt(f"cannot open LanceDB database at {where}: {exc}") from exc
        return self._db

    def _table(self, name: str, create: bool = False) -> Any | None:
        table = self._tables.get(name)
        if table is not None:
            try:
                table.checkout_latest()
            except Exception:  # noqa: BLE001 - a stale handle is simply reopened
                self._tables.pop(name, None)
                table = None
        if table is not None:
            return table
        if self.uri:
            table = self._open_remote(name, create)
            if table is None:
                return None
        elif not (self.path / "lance" / f"{name}.lance").exists():
            if not create:
                return None
            schema = chunk_schema(self._need_dim()) if name == CHUNKS else page_schema()
            try:
                table = self._connect().create_table(name, schema=schema, exist_ok=True)
            except Exception as exc:
                raise StoreWriteError(f"cannot create table {name!r} in {self.path}: {exc}") from exc
        else:
            try:
                table = self._connect().open_table(name)
            except Exception as exc:
                versions = self.path / "lance" / f"{name}.lance" / "_versions"
                if not create and not any(versions.glob("*")):
                    return None  # another writer is creating the table right now: nothing committed yet
                table = self._open_committed(name, exc)
        self._tables[name] = table
        return table

    def _open_committed(self, name: str, first: Exception) -> Any:
        """Open a table whose first version another writer committed after our open failed (the open and the
        look at its versions race the creation); StoreCorrupt when it still cannot be opened."""
        time.sleep(0.05)
        try:
            return self._connect().open_table(name)
        except Exception:
            raise StoreCorrupt(f"cannot open table {name!r} in {self.path}: {first}") from first

    def _open_remote(self, name: str, create: bool) -> Any | None:
        """Open (or create) a table on object storage. Existence is decided by opening it: some stores (e.g.
        SeaweedFS) keep an empty "folder" after every object under it was deleted, which LanceDB lists as a
        table."""
        try:
            return self._connect().open_table(name)
        except Exception as exc:
            if "not found" not in str(exc).lower():
                raise StoreCorrupt(f"cannot open table {name!r} in {self.uri}: {exc}") from exc
        if not create:
            return None
        schema = chunk_schema(self._need_dim()) if name == CHUNKS else page_schema()
        try:  # no dataset there (open said so): "overwrite" only replaces an empty folder
            return self._connect().create_table(name, schema=schema, mode="overwrite")
        except Exception as exc:
            raise StoreWriteError(f"cannot create table {name!r} in {self.uri}: {exc}") from exc

    def _need_dim(self) -> int:
        if not self.dim:
            raise StoreCorrupt(f"embedding dimension unknown for store {self.path}")
        return self.dim

    def close(self) -> None:
        self._tables.clear()
        self._db = None

    # --- reads ------------------------------------------------------------------------------------------
    def _on_latest(self, name: str, what: str, run: Callable[[Any], _T], *, empty: _T) -> _T:
        """``run(table)`` (``empty`` when the table does not exist). When another process compacted away the
        version this handle reads and removed its files (``compact``, under the write lock, between our checkout
        and our read), once more on the latest version; any other error is StoreCorrupt(``what``)."""
        for attempt in (1, 2):
            table = self._table(name)
            if table is None:
                return empty
            try:
                return run(table)
            except Exception as exc:
                if attempt == 1 and _version_gone(exc):
                    self._tables.pop(name, None)
                    continue
                raise StoreCorrupt(f"{what} in {self.path}: {exc}") from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _read(self, name: str, columns: list[str] | None = None, where: str | None = None) -> Any:
        def read(table: Any) -> Any:
            query = table.search()
            if where:
                query = query.where(where)
            if columns:
                query = query.select(columns)
            return query.limit(None).to_arrow()

        return self._on_latest(name, f"cannot read table {name!r}", read, empty=None)

    def count(self, name: str) -> int:
        return self._on_latest(name, f"cannot count rows of {name!r}", lambda table: int(table.count_rows()), empty=0)

    def page_chunk_ids(self, urls: Iterable[str] | None = None) -> dict[str, list[str]]:
        """url -> chunk_ids for every page (only those of ``urls`` when given), in storage order."""
        if urls is None:
            data = self._read(PAGES, ["url", "chunk_ids", "stored_at"])
            rows = data.to_pylist() if data is not None else []
        else:
            rows = self._read_in(PAGES, ["url", "chunk_ids", "stored_at"], "url", urls)
        rows = sorted(rows, key=lambda r: r["stored_at"] or "")
        return {r["url"]: list(r["chunk_ids"] or []) for r in rows}

    def _read_in(self, name: str, columns: list[str], column: str, values: Iterable[str]) -> list[dict[str, Any]]:
        """The rows of ``name`` whose ``column`` is one of ``values`` (a filtered read: the cost of a write's
        reads follows what it touches, not the size of the store)."""
        values = list(dict.fromkeys(values))
        out: list[dict[str, Any]] = []
        for start in range(0, len(values), 500):
            data = self._read(name, columns, _in_list(column, values[start : start + 500]))
            if data is None:
                break
            out.extend(data.to_pylist())
        return out

    def pages(self, where: str | None = None) -> list[dict[str, Any]]:
        data = self._read(PAGES, PAGE_FIELDS, where)
        if data is None:
            return []
        return sorted(data.to_pylist(), key=lambda r: (r["stored_at"] or "", r["url"]))

    def page(self, url: str) -> dict[str, Any] | None:
        rows = self.pages(f"url = {_sql_str(url)}")
        return rows[0] if rows else None

    def chunk_meta(self, ids: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
        """id -> chunk row without text and embedding, for every chunk (only those of ``ids`` when given)."""
        cols = ["id", "url", "also_seen_at", "title", "last_updated", "selector"]
        if ids is not None:
            return {r["id"]: r for r in self._read_in(CHUNKS, cols, "id", ids)}
        data = self._read(CHUNKS, cols)
        if data is None:
            return {}
        return {r["id"]: r for r in data.to_pylist()}

    def chunk_ids_present(self, ids: Iterable[str]) -> set[str]:
        """Those of ``ids`` that the chunks table holds."""
        return {r["id"] for r in self._read_in(CHUNKS, ["id"], "id", ids)}

    def chunk_rows(self, ids: Iterable[str], include_vectors: bool = True) -> list[dict[str, Any]]:
        ids = list(ids)
        if not ids:
            return []
        cols = CHUNK_FIELDS + (["embedding"] if include_vectors else [])
        out: list[dict[str, Any]] = []
        for start in range(0, len(ids), 500):
            data = self._read(CHUNKS, cols, _in_list("id", ids[start : start + 500]))
            if data is not None:
                out.extend(self._rows(data, include_vectors))
        return out

    def iter_chunks(self, include_vectors: bool = True) -> Iterator[dict[str, Any]]:
        cols = CHUNK_FIELDS + (["embedding"] if include_vectors else [])
        data = self._read(CHUNKS, cols)
        if data is None:
            return
        data = data.sort_by([("created_at", "ascending"), ("id", "ascending")])
        for batch in data.to_batches(max_chunksize=256):
            yield from self._rows(batch, include_vectors)

    @staticmethod
    def _rows(data: Any, include_vectors: bool) -> list[dict[str, Any]]:
        rows = data.to_pylist()
        if include_vectors:
            for row in rows:
                emb = row.get("embedding")
                if emb is not None:
                    row["embedding"] = [float(x) for x in emb]
        return rows

    def search(
        self,
        vector: np.ndarray,
        k: int,
        only_ids: list[str] | None = None,
        *,
        with_vectors: bool = False,
    ) -> list[dict[str, Any]]:
        """The ``k`` nearest chunks by cosine distance (``_distance`` = 1 - cosine). Exact (flat) while the
        table has no vector index; past ``VECTOR_INDEX_MIN_ROWS`` rows it has one (see ``ensure_indexes``) and
        the search probes ``VECTOR_NPROBES`` partitions and re-ranks ``VECTOR_REFINE_FACTOR * k`` candidates
        by their exact distance."""
        cols = [*CHUNK_FIELDS, "_distance"] + (["embedding"] if with_vectors else [])

        def search(table: Any) -> list[dict[str, Any]]:
            query = table.search(vector.astype("float32"), vector_column_name="embedding").distance_type("cosine")
            if self.has_vector_index():
                query = query.nprobes(VECTOR_NPROBES)
                if VECTOR_REFINE_FACTOR:
                    query = query.refine_factor(VECTOR_REFINE_FACTOR)
            else:
                query = query.bypass_vector_index()
            query = query.select(cols).limit(k)
            if only_ids is not None:
                query = query.where(_in_list("id", only_ids), prefilter=True)
            rows = self._result_rows(query.to_arrow(), with_vectors)
            return sorted(rows, key=lambda r: (r["_distance"], r["id"]))  # equal distances: by id, not storage

        return self._on_latest(CHUNKS, "vector search failed", search, empty=[])

    def fts_search(
        self, text: str, k: int, only_ids: list[str] | None = None, *, with_vectors: bool = False
    ) -> list[dict[str, Any]]:
        """The ``k`` best chunks for ``text`` by BM25 over the native full-text index (``_score``, higher is
        better). Rows written after the index was built are searched too (unindexed rows are scanned), deleted
        rows never match. Returns [] when the query has no searchable term."""
        if not text.strip():
            return []
        cols = [*CHUNK_FIELDS, "_score"] + (["embedding"] if with_vectors else [])

        def search(table: Any) -> list[dict[str, Any]]:
            from lancedb.query import MatchQuery

            # a plain match query (OR of the analysed terms): the text is never parsed as query syntax
            # BM25 ties are common (pages of one template): the index returns them in no fixed order, so take
            # more than k and order equal scores by id; the same store then answers the same way every time
            query = table.search(MatchQuery(text, "text"), query_type="fts").select(cols).limit(k + FTS_TIE_SLACK)
            if only_ids is not None:
                query = query.where(_in_list("id", only_ids), prefilter=True)
            rows = self._result_rows(query.to_arrow(), with_vectors)
            return sorted(rows, key=lambda r: (-r["_score"], r["id"]))[:k]

        return self._on_latest(CHUNKS, "full-text search failed", search, empty=[])

    @staticmethod
    def _result_rows(data: Any, with_vectors: bool) -> list[dict[str, Any]]:
        """Arrow search result -> row dicts; ``embedding`` (when selected) as a float32 numpy row, not a list."""
        if not with_vectors or data.num_rows == 0:
            return data.to_pylist()
        import numpy as np

        emb = data.column("embedding").combine_chunks()
        mat = np.asarray(emb.values.to_numpy(zero_copy_only=False), dtype=np.float32).reshape(data.num_rows, -1)
        rows = data.drop_columns(["embedding"]).to_pylist()
        for row, vec in zip(rows, mat, strict=True):
            row["embedding"] = vec
        return rows

    # --- indexes ----------------------------------------------------------------------------------------
    def _index_types(self) -> dict[str, str]:
        table = self._table(CHUNKS)
        if table is None:
            return {}
        try:
            return {str(i.columns[0]): str(i.index_type) for i in table.list_indices() if i.columns}
        except Exception as exc:  # noqa: BLE001
            log.warning("cannot list indexes of %s: %s", self.path, exc)
            return {}

    def has_fts_index(self) -> bool:
        return self._index_types().get("text") == "FTS"

    def text_index_current(self) -> bool:
        """True when the full-text index exists and covers every row. BM25 statistics of rows scanned outside
        the index differ from indexed ones, so scores (and the order of ties) would depend on which write
        built the index: a search wants the index current."""
        return self.has_fts_index() and self._unindexed("text_idx") == 0

    def has_vector_index(self) -> bool:
        kind = self._index_types().get("embedding")
        return bool(kind) and kind != "FTS"

    def _ensure_key_index(self, name: str, *, fold: bool = True) -> None:
        """The B-tree index on table ``name``'s key (``KEY_INDEXES``): built once the table has rows, rows written
        since folded in past ``REINDEX_AFTER_ROWS`` with ``fold`` (the chunks table's are folded with its
        full-text index)."""
        column = KEY_INDEXES[name]
        table = self._table(name)
        if table is None or int(table.count_rows()) == 0:
            return
        kinds = {str(i.columns[0]): str(i.index_type) for i in table.list_indices() if i.columns}
        if column not in kinds:
            with warnings.catch_warnings():  # the older name still takes the index type as a string
                warnings.simplefilter("ignore")
                table.create_scalar_index(column, index_type="BTREE", replace=True)
        elif name == PAGES and fold:
            try:
                unindexed = int(table.index_stats(f"{column}_idx").num_unindexed_rows or 0)
            except Exception:  # noqa: BLE001
                unindexed = 0
            if unindexed > REINDEX_AFTER_ROWS:
                table.optimize()

    def ensure_indexes(self, *, fold_all: bool = False, in_write: bool = False) -> None:
        """Create what is missing: the full-text index on ``text`` (as soon as the table has rows), the B-tree
        indexes on the tables' keys, and the vector index on ``embedding`` (once it has
        ``VECTOR_INDEX_MIN_ROWS`` rows); fold rows written since
        into the existing indexes when more than ``REINDEX_AFTER_ROWS`` are unindexed. With ``fold_all`` (a
        search) every row is brought into the full-text index, so that its BM25 scores do not depend on the write
        history: up to ``REINDEX_AFTER_ROWS`` new rows by rebuilding that index alone, more by a fold. Caller
        holds the lock.

        ``in_write`` (after a page's write): only the full-text and key indexes a new table lacks; no fold and no
        vector index. A fold is LanceDB's ``optimize``, which compacts the table too, rewriting every row of a
        store below LanceDB's fragment size (minutes at 100,000 chunks): it runs at the end of a harvest
        (``Memory.compact``) and before a search after many writes, never in a page's write."""
        table = self._table(CHUNKS)
        if table is None:
            return
        try:
            rows = int(table.count_rows())
            if rows == 0:
                return
            kinds = self._index_types()
            unindexed = self._unindexed("text_idx") if kinds.get("text") == "FTS" and not in_write else 0
            if kinds.get("text") != "FTS":
                self._build_text_index(table)
                log.info("full-text index built over %d chunks in %s", rows, self.path)
            elif fold_all and 0 < unindexed <= REINDEX_AFTER_ROWS:
                # a search wants BM25 over every row; rebuilding the full-text index alone costs a fraction of a
                # fold, which compacts the table too (100,000 chunks: 6 s against 155 s); the vector and key
                # indexes scan their few new rows until compact() or the next fold
                self._build_text_index(table)
            elif unindexed > (0 if fold_all else REINDEX_AFTER_ROWS):
                table.optimize()
            self._ensure_key_index(CHUNKS, fold=not in_write)
            self._ensure_key_index(PAGES, fold=not in_write)
            if not in_write and rows >= VECTOR_INDEX_MIN_ROWS and not kinds.get("embedding"):
                with warnings.catch_warnings():  # the keyword form is deprecated in favour of config objects
                    warnings.simplefilter("ignore")
                    table.create_index(
                        metric="cosine",
                        vector_column_name="embedding",
                        index_type=VECTOR_INDEX_TYPE,
                        num_partitions=max(1, int(rows**0.5)),
                        replace=True,
                    )
                log.info("vector index %s built over %d chunks in %s", VECTOR_INDEX_TYPE, rows, self.path)
        except Exception as exc:  # noqa: BLE001 - search works without the indexes, only slower
            raise StoreWriteError(f"cannot build the search indexes of {self.path}: {exc}") from exc

    @staticmethod
    def _build_text_index(table: Any) -> None:
        """(Re)build the full-text index on ``text`` over every row of ``table``."""
        with warnings.catch_warnings():  # the older name still takes the native tokenizer options
            warnings.simplefilter("ignore")
            table.create_fts_index(
                "text",
                replace=True,
                use_tantivy=False,
                base_tokenizer="simple",
                language="English",
                lower_case=True,
                stem=FTS_STEM,
                remove_stop_words=FTS_REMOVE_STOP_WORDS,
                ascii_folding=True,
            )

    def _unindexed(self, name: str) -> int:
        table = self._table(CHUNKS)
        try:
            return int(table.index_stats(name).num_unindexed_rows or 0)
        except Exception:  # noqa: BLE001
            return 0

    # --- writes -----------------------------------------------------------------------------------------
    def upsert_chunks(self, rows: list[dict[str, Any]], vectors: np.ndarray) -> None:
        """Insert or replace chunk rows (matched on id); ``vectors[i]`` is ``rows[i]``'s embedding."""
        if not rows:
            return
        import pyarrow as pa

        dim = self._need_dim()
        schema = chunk_schema(dim)
        cols = {name: [r.get(name) for r in rows] for name in CHUNK_FIELDS}
        arrays = [pa.array(cols[f.name], type=f.type) for f in schema if f.name != "embedding"]
        flat = pa.array(vectors.astype("float32").reshape(-1), type=pa.float32())
        arrays.append(pa.FixedSizeListArray.from_arrays(flat, dim))
        data = pa.Table.from_arrays(arrays, schema=schema)
        table = self._table(CHUNKS, create=True)
        try:
            table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(data)
        except Exception as exc:
            raise StoreWriteError(f"cannot write chunks to {self.path}: {exc}") from exc

    def upsert_pages(self, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        import pyarrow as pa

        data = pa.Table.from_pylist([{k: r.get(k) for k in PAGE_FIELDS} for r in rows], schema=page_schema())
        table = self._table(PAGES, create=True)
        try:
            table.merge_insert("url").when_matched_update_all().when_not_matched_insert_all().execute(data)
        except Exception as exc:
            raise StoreWriteError(f"cannot write pages to {self.path}: {exc}") from exc

    def delete(self, name: str, column: str, values: Iterable[str]) -> None:
        values = list(values)
        table = self._table(name)
        if table is None or not values:
            return
        try:
            for start in range(0, len(values), 500):
                table.delete(_in_list(column, values[start : start + 500]))
        except Exception as exc:
            raise StoreWriteError(f"cannot delete from {name!r} in {self.path}: {exc}") from exc

    def compact(self) -> None:
        """Compact both tables and delete every version but the latest. The caller holds the write lock: no
        other writer can be mid-commit, so unverified files of older versions are safe to remove (a reader in
        another process still holding an older version finds a file gone and reads the latest: ``_read``)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "removes every version except the latest": intended
            for name in (CHUNKS, PAGES):
                table = self._table(name)
                if table is None:
                    continue
                try:
                    try:
                        table.optimize(cleanup_older_than=timedelta(seconds=0), delete_unverified=True)
                    except TypeError:  # older lancedb without delete_unverified
                        table.optimize(cleanup_older_than=timedelta(seconds=0))
                except Exception as exc:
                    raise StoreWriteError(f"cannot compact {name!r} in {self.path}: {exc}") from exc

    def index_coverage(self) -> list[tuple[str | None, int | None, str | None]]:
        """For each index of the chunks table, in order: (name, rows it covers (indexed + unindexed), None), or
        (name, None, the problem met reading it). For ``Memory.check``."""
        table = self._table(CHUNKS)
        if table is None:
            return []
        try:
            indices = list(table.list_indices())
        except Exception as exc:  # noqa: BLE001
            return [(None, None, f"cannot list indexes: {exc}")]
        out: list[tuple[str | None, int | None, str | None]] = []
        for index in indices:
            name = getattr(index, "name", None)
            try:
                stats = table.index_stats(name)
            except Exception as exc:  # noqa: BLE001
                out.append((name, None, f"cannot read index {name}: {exc}"))
                continue
            if stats is None:
                continue
            indexed = int(getattr(stats, "num_indexed_rows", 0) or 0)
            covered = indexed + int(getattr(stats, "num_unindexed_rows", 0) or 0)
            out.append((name, covered, None))
        return out
