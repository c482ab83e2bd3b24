"""A store's ``meta.json`` (private to memory_store): format version, charter id, embedding model and
dimension, split algorithm, creation and last-write times."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .clock import now
from .errors import StoreCorrupt

FORMAT_VERSION = 1
META_FILE = "meta.json"


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
    ) -> dict[str, Any]:
        """Create the store folder and meta.json if missing; fill in dim/split_algo/precision once known."""
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
