"""``ConceptIndex``: a charter's concept DAG with its embedding and its place in the charter's store.

The public facade over the seams of the package: the DAG and its cycle guard (``dag.py``), insertion and
promotion (``insertion.py``), status and summaries (``status.py``), routing (``routing.py``) and persistence
(``persistence.py``)."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memory_store.embeddings import TextVectors

from . import insertion, persistence, routing, status
from .dag import (
    EDGE_TYPES,
    HIERARCHY,
    INFLUENCES,
    IS_A,
    PART_OF,
    ROOT,
    ConceptDag,
    ConceptEvent,
    EmbedFn,
    IndexConfig,
    MergeFn,
    unit,
)
from .errors import CycleRefused
from .persistence import FORMAT_VERSION, GRAPH_FILE

if TYPE_CHECKING:
    from memory_store import Memory

log = logging.getLogger(__name__)

__all__ = [
    "EDGE_TYPES",
    "FORMAT_VERSION",
    "GRAPH_FILE",
    "HIERARCHY",
    "INFLUENCES",
    "IS_A",
    "PART_OF",
    "ROOT",
    "ConceptEvent",
    "ConceptIndex",
    "CycleRefused",
    "EmbedFn",
    "IndexConfig",
    "MergeFn",
]


class ConceptIndex(ConceptDag):
    """A charter's concept DAG. ``ConceptIndex(charter_id)`` opens (or starts) the index in that charter's
    store; ``ConceptIndex(memory=mem)`` uses an open Memory; ``ConceptIndex(embed=fn)`` is a detached index
    (tests) whose ``fn(texts)`` returns L2-normalised vectors."""

    def __init__(
        self,
        charter_id: str | None = None,
        basepath: str | os.PathLike[str] | None = None,
        *,
        memory: Memory | None = None,
        embed: EmbedFn | None = None,
        config: IndexConfig | None = None,
        summary_merge: MergeFn | None = None,
        load: bool = True,
    ) -> None:
        if memory is None and charter_id is not None:
            from memory_store import Memory

            memory = Memory(charter_id, basepath=basepath)
        super().__init__(config, self.embed)
        self.memory = memory
        self.charter_id = memory.charter_id if memory is not None else charter_id
        self.summary_merge = summary_merge  # optional LLM merge (existing, new) -> text; off by default
        self._embed_fn = embed
        self._vectors = TextVectors(self._embed_raw, lambda: self.dim)
        self.pages: dict[str, str] = {}  # url -> signature of its chunk ids at the last update
        self.sections: list[dict[str, Any]] = []
        self.pointer_urls: list[str] = []  # pages that had pointer rows at the last update
        if load and self.graph_file is not None and self.graph_file.is_file():
            self._load()

    # --- embedding --------------------------------------------------------------------------------------
    @property
    def graph_file(self) -> Path | None:
        return self.memory.path / GRAPH_FILE if self.memory is not None else None

    def embed(self, texts: list[str]) -> np.ndarray:
        """Normalised vectors of ``texts`` (cached per text, missing ones embedded in one batch)."""
        return self._vectors(texts)

    def _embed_raw(self, texts: list[str]) -> np.ndarray:
        if self._embed_fn is not None:
            out = np.asarray(self._embed_fn(list(texts)), dtype=np.float32)
        else:
            if self.memory is not None:
                emb = self.memory.embedder
            else:
                from memory_store import get_embedder

                emb = get_embedder()
            batches = emb.batches
            out = emb.embed_documents(list(texts))
            # concept labels are not store chunks: keep the embedder's chunk counters (harvest reports) exact
            emb.texts_embedded -= len(texts)
            emb.batches = batches
        return np.stack([unit(v) for v in out]).astype(np.float32)

    @property
    def dim(self) -> int:
        vec = self.G.nodes[ROOT].get("label_vec")
        for _, data in self.G.nodes(data=True):
            if data.get("label_vec") is not None:
                return len(data["label_vec"])
        return len(vec) if vec is not None else 0

    # --- insertion (insertion.py) -------------------------------------------------------------------------
    def compare_generality(self, concept: str, other: str) -> tuple[str, dict[str, float]]:
        """ "more_specific" | "more_general" | "same_level" of ``concept`` relative to ``other``."""
        return insertion.compare_generality(self, concept, other)

    def is_related(self, vec: np.ndarray, node_id: str, parent_sim: float) -> tuple[bool, float]:
        return insertion.is_related(self, vec, node_id, parent_sim)

    def insert(
        self,
        concept: str,
        start_id: str = ROOT,
        *,
        kind: str = "concept",
        context: str | None = None,
        vector: np.ndarray | None = None,
        pinned: bool = False,
        support: Iterable[str] = (),
    ) -> str:
        """Insert ``concept`` below ``start_id`` in O(depth) (see ``insertion.insert``); returns the node id."""
        return insertion.insert(
            self, concept, start_id, kind=kind, context=context, vector=vector, pinned=pinned, support=support
        )

    def handle_promotion(self, general: str, child: str, parent: str) -> bool:
        """Move ``child`` under the more general ``general`` when that is earned (``insertion.handle_promotion``)."""
        return insertion.handle_promotion(self, general, child, parent)

    # --- status and summaries (status.py) -------------------------------------------------------------------
    def fit_margin(self, node_id: str) -> float:
        return status.fit_margin(self, node_id)

    def update_status(self, node_id: str) -> str:
        """tentative <-> stable with hysteresis (``status.update_status``)."""
        return status.update_status(self, node_id)

    def consolidate(self) -> None:
        """After a batch of changes: centroids bottom-up, pending promotions, statuses."""
        status.consolidate(self)

    def set_summary(self, node_id: str, summary: str) -> None:
        """Record a new extractive summary (``status.set_summary``; merged by ``summary_merge`` when given)."""
        status.set_summary(self, node_id, summary, self.summary_merge)

    # --- routing (routing.py) -----------------------------------------------------------------------------
    def resolve_path(self, text: str) -> str | None:
        """The best concept path for ``text``, or None when nothing reaches ``route_min``."""
        return routing.resolve_path(self, text)

    # --- export and persistence (persistence.py) ------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """``{"nodes": [{id, label, path, parents, support_docs, summary_50w, status}], "edges": [...]}``."""
        return persistence.to_json(self)

    def snapshot_records(self) -> list[dict[str, Any]]:
        """``concept``, ``edge`` and ``concept_event`` records for the /clean snapshot."""
        return persistence.snapshot_records(self)

    def save(self) -> Path | None:
        """Write the graph to ``<store>/concepts/graph.json`` atomically (under the store's write lock)."""
        if self.memory is None or self.graph_file is None:
            return None
        bookkeeping = {"pages": self.pages, "sections": self.sections, "pointer_urls": self.pointer_urls}
        return persistence.save_graph(
            self, self.graph_file, charter_id=self.charter_id, bookkeeping=bookkeeping, lock=self.memory.write_lock
        )

    def _load(self) -> None:
        assert self.graph_file is not None
        bookkeeping = persistence.load_graph(self, self.graph_file)
        self.pages = bookkeeping["pages"]
        self.sections = bookkeeping["sections"]
        self.pointer_urls = bookkeeping["pointer_urls"]
