"""The audit snapshot of a store (private to memory_store): JSONL, a manifest first (counts and the sha256 of
the rest), then every page, every chunk and the records the caller adds (journal events, concept index)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from .clock import now
from .embeddings import vector_precision
from .records import PageRecord

log = logging.getLogger(__name__)


_PAGE_KEYS = frozenset(
    {"type", "url", "final_url", "title", "last_updated", "last_updated_source", "selector", "fetched_at", "status",
     "content_type", "chunk_ids", "stored_at", "text"}
)


def _extra_fields(page: PageRecord, page_fields: Callable[[PageRecord], dict[str, Any]] | None) -> dict[str, Any]:
    if page_fields is None:
        return {}
    return {k: v for k, v in page_fields(page).items() if k not in _PAGE_KEYS}


def write_snapshot(
    path: str | os.PathLike[str],
    *,
    charter_id: str,
    model_name: str,
    read_meta: Callable[[], dict[str, Any] | None],
    lock: Callable[[], AbstractContextManager[None]],
    pages: Callable[[], Iterable[PageRecord]],
    chunks: Callable[[bool], Iterable[dict[str, Any]]],
    extra_records: Iterable[dict[str, Any]] = (),
    include_vectors: bool = True,
    tool_version: str = "0.1.0",
    page_fields: Callable[[PageRecord], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Write the audit snapshot (JSONL, manifest first) to ``path`` atomically; returns the manifest. The store
    is read under its write lock (when it exists), so the snapshot is one consistent state. ``page_fields(page)``
    adds the caller's fields to a page record (never replacing the store's own)."""
    out = Path(path).expanduser()
    out.parent.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {"page": 0, "chunk": 0}
    digest = hashlib.sha256()
    exists = read_meta() is not None
    held = lock() if exists else contextlib.nullcontext()
    body_fd, body_name = tempfile.mkstemp(prefix=".snapshot-body-", dir=out.parent)
    try:
        with held, os.fdopen(body_fd, "wb") as body:

            def emit(record: dict[str, Any]) -> None:
                data = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode("utf-8")
                digest.update(data)
                body.write(data)
                kind = str(record.get("type"))
                counts[kind] = counts.get(kind, 0) + 1

            meta = read_meta() or {}
            for page in pages():
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
                    | _extra_fields(page, page_fields)
                )
            for row in chunks(include_vectors):
                emit({"type": "chunk", **row})
            for record in extra_records:
                if "type" not in record:
                    raise ValueError(f"snapshot record without a 'type': {record!r}")
                emit(dict(record))
        manifest = {
            "type": "manifest",
            "charter_id": charter_id,
            "created_at": now("microseconds"),
            "tool_version": tool_version,
            "embedding_model": meta.get("model", model_name),
            "embedding_dim": meta.get("dim"),
            "embedding_precision": vector_precision(meta),
            "int8_recipe": meta.get("int8_recipe"),
            "split_algo": meta.get("split_algo"),
            "include_vectors": include_vectors,
            "counts": counts,
            "sha256": digest.hexdigest(),
        }
        # a new temporary name (O_EXCL: never a link planted beside the target), renamed over the target
        tmp_fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
        with os.fdopen(tmp_fd, "wb") as fh, open(body_name, "rb") as body_in:
            fh.write((json.dumps(manifest, ensure_ascii=False) + "\n").encode("utf-8"))
            shutil.copyfileobj(body_in, fh, 1 << 20)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, out)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(body_name)
    log.info("snapshot of %s written to %s (%s)", charter_id, out, counts)
    return manifest
