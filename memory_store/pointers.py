"""Pointer rows: which chunks sit under which concept (written by ``concept_index``, read here).

memory_store knows nothing of the concept DAG. Each row carries everything a subtree filter needs: the node's
id and path, the ids and label paths of the node and all its ancestors, the chunk id and the page URL the
chunk was assigned from. ``chunk_ids_under(path, "Performance > CWV")`` is then a plain scan.

Rows live in ``<store>/concept_pointers.jsonl`` and are replaced atomically. The closets rule: when a page
is stored again its rows are purged first (``purge_urls``) and rebuilt by the next concept-index update, so
no pointer to a removed chunk survives.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

POINTERS_FILE = "concept_pointers.jsonl"


@dataclass
class PointerRow:
    node_id: str
    path: str  # "Performance > CWV > CLS" (labels from the root's child down)
    chunk_id: str
    url: str
    ancestors: list[str] = field(default_factory=list)  # ids of the node and all its ancestors
    ancestor_paths: list[str] = field(default_factory=list)  # label paths of the node and all its ancestors


def _norm(text: str) -> str:
    return " > ".join(" ".join(p.lower().split()) for p in text.split(">") if p.strip())


def _file(store_path: str | os.PathLike[str]) -> Path:
    return Path(store_path) / POINTERS_FILE


def read_pointers(store_path: str | os.PathLike[str]) -> list[PointerRow]:
    """Every pointer row of the store (empty when the concept index never wrote any)."""
    path = _file(store_path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    rows = []
    for line in lines:
        if line.strip():
            try:
                rows.append(PointerRow(**json.loads(line)))
            except (ValueError, TypeError):
                continue
    return rows


def _write(store_path: str | os.PathLike[str], rows: Iterable[PointerRow]) -> None:
    path = _file(store_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".jsonl.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(asdict(r), ensure_ascii=False) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def write_pointers(
    store_path: str | os.PathLike[str], rows: Iterable[PointerRow], *, urls: Iterable[str] | None = None
) -> None:
    """Replace pointer rows: all of them (``urls`` None), or only those of ``urls`` (purged, then ``rows``
    added). The caller holds the store's write lock."""
    new = list(rows)
    if urls is None:
        _write(store_path, new)
        return
    drop = set(urls)
    kept = [r for r in read_pointers(store_path) if r.url not in drop]
    _write(store_path, kept + new)


def purge_urls(store_path: str | os.PathLike[str], urls: Iterable[str]) -> int:
    """Delete every pointer row of the given pages; returns how many were removed."""
    drop = set(urls)
    if not drop or not _file(store_path).exists():
        return 0
    rows = read_pointers(store_path)
    kept = [r for r in rows if r.url not in drop]
    if len(kept) != len(rows):
        _write(store_path, kept)
    return len(rows) - len(kept)


def clear(store_path: str | os.PathLike[str]) -> None:
    try:
        _file(store_path).unlink()
    except FileNotFoundError:
        pass


def matches(row: PointerRow, subtree: str) -> bool:
    """Whether ``row``'s chunk lies under ``subtree``: a node id, a full label path (case-insensitive), or
    the label of one node (the last element of one of its ancestor paths)."""
    sub = subtree.strip()
    if not sub:
        return False
    if sub in row.ancestors:
        return True
    key = _norm(sub)
    for p in row.ancestor_paths:
        np_ = _norm(p)
        if np_ == key or (" > " not in key and np_.rsplit(" > ", 1)[-1] == key):
            return True
    return False


def chunk_ids_under(store_path: str | os.PathLike[str], subtree: str) -> list[str]:
    """The chunk ids pointed to by the node named ``subtree`` and by its descendants (no duplicates)."""
    out: dict[str, None] = {}
    if re.fullmatch(r"\s*root\s*", subtree or ""):
        for r in read_pointers(store_path):
            out.setdefault(r.chunk_id, None)
        return list(out)
    for r in read_pointers(store_path):
        if matches(r, subtree):
            out.setdefault(r.chunk_id, None)
    return list(out)


__all__ = [
    "POINTERS_FILE",
    "PointerRow",
    "chunk_ids_under",
    "clear",
    "matches",
    "purge_urls",
    "read_pointers",
    "write_pointers",
]
