"""A store's small side files (private to memory_store).

- ``meta.json``: format version, charter id, embedding model and dimension, the vectors' precision (and int8
  recipe), split algorithm, creation and last-write times, and the mark of a write under way (``write_pending``);
- ``events.jsonl``, the journal: JSON objects appended durably, read back in order."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from .clock import now
from .embeddings import resolve_model_name, vector_precision
from .errors import ModelMismatch, StoreCorrupt

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
META_FILE = "meta.json"
JOURNAL_FILE = "events.jsonl"
#: meta.json's mark of a write under way (``StoreMeta.begin_write``).
PENDING_WRITE = "write_pending"


class StoreMeta:
    """Reads and writes ``<store>/meta.json`` (writes are atomic; callers hold the write lock)."""

    def __init__(self, path: Path) -> None:
        self.file = path / META_FILE

    def read(self) -> dict[str, Any] | None:
        """The metadata, or None when the store does not exist (StoreCorrupt when it cannot be read)."""
        try:
            return json.loads(self.file.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise StoreCorrupt(f"cannot read {self.file}: {exc}") from exc

    def write(self, meta: dict[str, Any]) -> None:
        tmp = self.file.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(meta, indent=2, sort_keys=True))
        os.replace(tmp, self.file)

    def ensure(
        self,
        charter_id: str,
        model: str,
        dim: int | None = None,
        algo: str | None = None,
        precision: str | None = None,
        recipe: str | None = None,
    ) -> dict[str, Any]:
        """Create the store folder and meta.json if missing; fill in dim/split_algo/precision once known, and
        with an int8 precision its ``recipe`` (recorded with the precision only: a store that already holds
        vectors of an unrecorded recipe never claims one)."""
        self.file.parent.mkdir(parents=True, exist_ok=True)
        meta = self.read()
        changed = False
        if meta is None:
            meta = {
                "format_version": FORMAT_VERSION,
                "charter_id": charter_id,
                "model": model,
                "dim": None,
                "split_algo": None,
                "created_at": now("microseconds"),
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
            if precision == "int8" and recipe:
                meta["int8_recipe"] = recipe
            changed = True
        if changed:
            self.write(meta)
        return meta

    def touch(self) -> None:
        """Record the time of the last write."""
        meta = self.read()
        if meta is not None:
            meta["last_write"] = now("microseconds")
            self.write(meta)

    def pending_write(self) -> dict[str, Any] | None:
        """The write begun and never finished (a crash, a failed write): ``{"at", "pages"}``, else None."""
        meta = self.read()
        pending = meta.get(PENDING_WRITE) if meta else None
        return pending if isinstance(pending, dict) else {"at": None, "pages": 0} if pending else None

    def begin_write(self, pages: int) -> None:
        """Record, before a write changes any row, that one is under way (``finish_write`` clears it): a store
        whose meta still says so after a crash is repaired by a full reconcile at its next write."""
        meta = self.read()
        if meta is not None:
            meta[PENDING_WRITE] = {"at": now("microseconds"), "pages": int(pages)}
            self.write(meta)

    def finish_write(self, changed: bool) -> None:
        """The write is complete: clear the mark (and record the time of the write when it ``changed`` rows)."""
        meta = self.read()
        if meta is None or (not changed and PENDING_WRITE not in meta):
            return
        meta.pop(PENDING_WRITE, None)
        if changed:
            meta["last_write"] = now("microseconds")
        self.write(meta)


def embedder_fits(meta: dict[str, Any] | None, path: Path, model: str, embedder: Any) -> str | None:
    """Check ``embedder`` against a store's ``meta``: another model, precision or dimension is refused
    (ModelMismatch). Returns why its vectors still differ a little from the store's, when another int8 recipe
    made those (``int8_recipe``; a store without it was written before brt recorded the recipe), else None."""
    if resolve_model_name(embedder.name) != resolve_model_name(model):
        raise ModelMismatch(f"store {path} uses {model!r}, not {embedder.name!r}")
    precision = vector_precision(meta)
    if precision is not None and getattr(embedder, "precision", precision) != precision:
        raise ModelMismatch(f"store {path} holds {precision} vectors, not {embedder.precision}")
    if meta and meta.get("dim") and int(meta["dim"]) != int(embedder.dim):
        raise ModelMismatch(
            f"store {path} has {meta['dim']}-dimensional embeddings from {meta.get('model')!r}, but model "
            f"{embedder.name!r} produces {embedder.dim} dimensions"
        )
    stored, current = (meta or {}).get("int8_recipe"), getattr(embedder, "recipe", None)
    if precision != "int8" or stored == current:
        return None
    made = f"int8 recipe {stored!r}" if stored else "an earlier int8 recipe (not recorded)"
    return (
        f"its vectors come from {made}, queries and new pages now from {current!r}: "
        f"scores may shift a little (cosine about 0.996 between recipes); re-harvest into a new store for vectors "
        f"of one recipe"
    )


# -- the journal ------------------------------------------------------------------------------------------


def append_events(path: Path, events: list[dict[str, Any]]) -> None:
    """Append ``events`` to the journal of the store at ``path`` and fsync (the caller holds the write lock)."""
    lines = "".join(json.dumps(e, ensure_ascii=False, default=str) + "\n" for e in events)
    with open(path / JOURNAL_FILE, "a", encoding="utf-8") as fh:
        fh.write(lines)
        fh.flush()
        os.fsync(fh.fileno())


def read_events(path: Path) -> list[dict[str, Any]]:
    """The journal's events in order (a truncated last line is skipped)."""
    file = path / JOURNAL_FILE
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
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
                log.warning("skipping truncated last line of %s", file)
            else:
                log.warning("skipping unreadable line %d of %s", i + 1, file)
    return out
