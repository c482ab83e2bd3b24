"""Private LanceDB layer: the ``chunks`` and ``pages`` tables of one store. lancedb/pyarrow load lazily."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import StoreCorrupt

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


class LanceStore:
    """The two LanceDB tables in ``path/lance``. Callers hold the write lock around every write."""

    def __init__(self, path: Path, dim: int | None) -> None:
        self.path = path
        self.dim = dim
        self._db: Any = None
        self._tables: dict[str, Any] = {}

    # --- plumbing ---------------------------------------------------------------------------------------
    def _connect(self) -> Any:
        if self._db is None:
            import lancedb

            try:
                self._db = lancedb.connect(str(self.path / "lance"))
            except Exception as exc:
                raise StoreCorrupt(f"cannot open LanceDB database at {self.path / 'lance'}: {exc}") from exc
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
        if not (self.path / "lance" / f"{name}.lance").exists():
            if not create:
                return None
            schema = chunk_schema(self._need_dim()) if name == CHUNKS else page_schema()
            try:
                table = self._connect().create_table(name, schema=schema, exist_ok=True)
            except Exception as exc:
                raise StoreCorrupt(f"cannot create table {name!r} in {self.path}: {exc}") from exc
        else:
            try:
                table = self._connect().open_table(name)
            except Exception as exc:
                raise StoreCorrupt(f"cannot open table {name!r} in {self.path}: {exc}") from exc
        self._tables[name] = table
        return table

    def _need_dim(self) -> int:
        if not self.dim:
            raise StoreCorrupt(f"embedding dimension unknown for store {self.path}")
        return self.dim

    def close(self) -> None:
        self._tables.clear()
        self._db = None

    # --- reads ------------------------------------------------------------------------------------------
    def _read(self, name: str, columns: list[str] | None = None, where: str | None = None) -> Any:
        table = self._table(name)
        if table is None:
            return None
        try:
            query = table.search()
            if where:
                query = query.where(where)
            if columns:
                query = query.select(columns)
            return query.limit(None).to_arrow()
        except Exception as exc:
            raise StoreCorrupt(f"cannot read table {name!r} in {self.path}: {exc}") from exc

    def count(self, name: str) -> int:
        table = self._table(name)
        if table is None:
            return 0
        try:
            return int(table.count_rows())
        except Exception as exc:
            raise StoreCorrupt(f"cannot count rows of {name!r} in {self.path}: {exc}") from exc

    def page_chunk_ids(self) -> dict[str, list[str]]:
        """url -> chunk_ids for every page, in storage order."""
        data = self._read(PAGES, ["url", "chunk_ids", "stored_at"])
        if data is None:
            return {}
        rows = sorted(data.to_pylist(), key=lambda r: r["stored_at"] or "")
        return {r["url"]: list(r["chunk_ids"] or []) for r in rows}

    def pages(self, where: str | None = None) -> list[dict[str, Any]]:
        data = self._read(PAGES, PAGE_FIELDS, where)
        if data is None:
            return []
        return sorted(data.to_pylist(), key=lambda r: (r["stored_at"] or "", r["url"]))

    def page(self, url: str) -> dict[str, Any] | None:
        rows = self.pages(f"url = {_sql_str(url)}")
        return rows[0] if rows else None

    def chunk_meta(self) -> dict[str, dict[str, Any]]:
        """id -> chunk row without text and embedding."""
        cols = ["id", "url", "also_seen_at", "title", "last_updated", "selector"]
        data = self._read(CHUNKS, cols)
        if data is None:
            return {}
        return {r["id"]: r for r in data.to_pylist()}

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

    def search(self, vector: np.ndarray, k: int, only_ids: list[str] | None = None) -> list[dict[str, Any]]:
        table = self._table(CHUNKS)
        if table is None:
            return []
        try:
            query = (
                table.search(vector.astype("float32"), vector_column_name="embedding")
                .distance_type("cosine")
                .bypass_vector_index()
                .select([*CHUNK_FIELDS, "_distance"])
                .limit(k)
            )
            if only_ids is not None:
                query = query.where(_in_list("id", only_ids), prefilter=True)
            return query.to_arrow().to_pylist()
        except Exception as exc:
            raise StoreCorrupt(f"vector search failed in {self.path}: {exc}") from exc

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
            raise StoreCorrupt(f"cannot write chunks to {self.path}: {exc}") from exc

    def upsert_pages(self, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        import pyarrow as pa

        data = pa.Table.from_pylist([{k: r.get(k) for k in PAGE_FIELDS} for r in rows], schema=page_schema())
        table = self._table(PAGES, create=True)
        try:
            table.merge_insert("url").when_matched_update_all().when_not_matched_insert_all().execute(data)
        except Exception as exc:
            raise StoreCorrupt(f"cannot write pages to {self.path}: {exc}") from exc

    def delete(self, name: str, column: str, values: Iterable[str]) -> None:
        values = list(values)
        table = self._table(name)
        if table is None or not values:
            return
        try:
            for start in range(0, len(values), 500):
                table.delete(_in_list(column, values[start : start + 500]))
        except Exception as exc:
            raise StoreCorrupt(f"cannot delete from {name!r} in {self.path}: {exc}") from exc

    def optimize(self) -> None:
        """Compact and drop old versions (kept 5 minutes for readers in other processes)."""
        for name in (CHUNKS, PAGES):
            table = self._table(name)
            if table is None:
                continue
            try:
                table.optimize(cleanup_older_than=timedelta(minutes=5))
            except Exception as exc:  # noqa: BLE001 - optimisation is best effort
                log.warning("optimize of %s in %s failed: %s", name, self.path, exc)
