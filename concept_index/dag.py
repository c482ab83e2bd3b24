"""The concept DAG itself: nodes, typed edges (is-a, part-of, influences) and the cycle guard, the structure
queries (parents, children, ancestors, label paths), node centroids and the decision log. Insertion, status,
routing and persistence work on a ``ConceptDag`` (``insertion.py``, ``status.py``, ``routing.py``,
``persistence.py``); ``graph.ConceptIndex`` is the public facade over all of them."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np

from memory_store.clock import now

from .errors import CycleRefused
from .text import Rarity, norm_label, norm_path

log = logging.getLogger(__name__)

ROOT = "root"
IS_A = "is-a"
PART_OF = "part-of"
INFLUENCES = "influences"
EDGE_TYPES = (IS_A, PART_OF, INFLUENCES)
HIERARCHY = (IS_A, PART_OF)

EmbedFn = Callable[[list[str]], np.ndarray]
MergeFn = Callable[[str, str], str]


@dataclass
class IndexConfig:
    """Tunables (defaults documented in docs/concept-index.md)."""

    k: int = 2  # support_docs needed before a node can become stable / a concept can be promoted
    margin: float = 0.05  # hysteresis on the parent-fit margin: stable at >= +margin, back at < -margin
    generality_margin: float = 0.15  # specificity difference that counts as more specific / more general
    rel_min: float = 0.35  # is_related: cosine to the child's centroid at least this ...
    rel_delta: float = 0.05  # ... and at least the parent's similarity plus this
    ambiguity: float = 0.05  # a best child within this below rel_min, or two children this close: ambiguous
    promote_gain: float = 0.05  # a child moves under a new general concept only if it fits it this much better
    route_min: float = 0.35  # resolve_path: best node score needed to route
    max_headings: int = 30
    max_phrases: int = 12
    assign_min: float = 0.30  # chunk -> node: cosine of the chunk to the node's label at least this ...
    assign_top: int = 3  # ... among the chunk's best nodes, plus lexical matches, at most 5 per chunk
    node_top: int = 6  # ... and each node gets its 6 best chunks with cosine >= assign_min
    summaries_kept: int = 5
    infl_min_count: int = 3  # influences: co-occurring in >= 3 chunks,
    infl_min_lift: float = 2.0  # observed / expected >= 2,
    infl_max_p: float = 0.01  # Poisson upper tail p < 0.01,
    infl_per_node: int = 2  # at most 2 influences edges out of a node (highest lift)


def unit(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


def _slug(label: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")
    return s[:40] or "concept"


@dataclass
class ConceptEvent:
    time: str
    action: str
    from_: str | None
    to: str | None
    reason: str
    scores: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "time": self.time,
            "action": self.action,
            "from": self.from_,
            "to": self.to,
            "reason": self.reason,
            "scores": self.scores,
        }


class ConceptDag:
    """The graph of one concept index. ``embed(texts)`` gives L2-normalised vectors (for nodes added without one)."""

    def __init__(self, config: IndexConfig | None = None, embed: EmbedFn | None = None) -> None:
        self.config = config or IndexConfig()
        self._embed_vectors = embed
        self.G = nx.DiGraph()
        self.events: list[dict[str, Any]] = []
        self.pending: list[dict[str, str]] = []  # promotion candidates {general, child, parent}
        self.rarity = Rarity()
        self.add_root()

    def vectors(self, texts: list[str]) -> np.ndarray:
        """The vectors of ``texts`` (through the ``embed`` function given)."""
        if self._embed_vectors is None:
            raise ValueError("this concept DAG has no embedding function")
        return self._embed_vectors(texts)


    def log_event(
        self, action: str, from_: str | None, to: str | None, reason: str, scores: dict[str, Any] | None = None
    ) -> None:
        ev = ConceptEvent(now(), action, from_, to, reason, round_scores(scores or {}))
        self.events.append(ev.as_dict())
        log.debug("concept %s %s -> %s: %s", action, from_, to, reason)

    def nodes(self) -> list[str]:
        return list(self.G.nodes)

    def node(self, node_id: str) -> dict[str, Any]:
        return self.G.nodes[node_id]

    def label(self, node_id: str) -> str:
        return self.G.nodes[node_id]["label"]

    def __len__(self) -> int:
        return self.G.number_of_nodes()

    def __contains__(self, node_id: object) -> bool:
        return node_id in self.G

    def edge_type(self, u: str, v: str) -> str | None:
        return self.G.edges[u, v]["type"] if self.G.has_edge(u, v) else None

    def children(self, node_id: str) -> list[str]:
        return [v for v in self.G.successors(node_id) if self.G.edges[node_id, v]["type"] in HIERARCHY]

    def parents(self, node_id: str) -> list[str]:
        ps = [u for u in self.G.predecessors(node_id) if self.G.edges[u, node_id]["type"] in HIERARCHY]
        primary = self.G.nodes[node_id].get("primary")
        if primary in ps:
            ps.remove(primary)
            ps.insert(0, primary)
        return ps

    def hierarchy(self) -> nx.DiGraph:
        return nx.subgraph_view(self.G, filter_edge=lambda u, v: self.G.edges[u, v]["type"] in HIERARCHY)

    def ancestors(self, node_id: str) -> set[str]:
        return nx.ancestors(self.hierarchy(), node_id)

    def descendants(self, node_id: str) -> set[str]:
        return nx.descendants(self.hierarchy(), node_id)

    def primary_parent(self, node_id: str) -> str | None:
        ps = self.parents(node_id)
        return ps[0] if ps else None

    def path_ids(self, node_id: str) -> list[str]:
        out = []
        cur: str | None = node_id
        guard = 0
        while cur is not None and cur != ROOT and guard < 100:
            out.append(cur)
            cur = self.primary_parent(cur)
            guard += 1
        return list(reversed(out))

    def path(self, node_id: str) -> str:
        """The node's label path from the root's child down, e.g. ``"Performance > CWV > CLS"``."""
        if node_id == ROOT:
            return "root"
        return " > ".join(self.label(n) for n in self.path_ids(node_id))

    def find(self, name: str) -> str | None:
        """A node by id, full label path or label (case-insensitive)."""
        if name in self.G:
            return name
        key = norm_path(name)
        for n in self.G.nodes:
            if n != ROOT and norm_path(self.path(n)) == key:
                return n
        lab = norm_label(name)
        for n in self.G.nodes:
            if n != ROOT and norm_label(self.label(n)) == lab:
                return n
        return None

    def add_edge(self, u: str, v: str, etype: str, reason: str = "", scores: dict[str, Any] | None = None) -> bool:
        """Add a typed edge; refused (logged, False) when it would create a cycle."""
        if etype not in EDGE_TYPES:
            raise ValueError(f"unknown edge type {etype!r}")
        if u == v or (v in self.G and u in self.G and nx.has_path(self.G, v, u)):
            self.log_event("refuse", u, v, f"{etype} edge would create a cycle", scores)
            log.info("concept edge %s -[%s]-> %s refused: it would create a cycle", u, etype, v)
            return False
        if self.G.has_edge(u, v):
            return True
        self.G.add_edge(u, v, type=etype)
        self.log_event("edge", u, v, f"{etype} {reason}".strip(), scores)
        return True

    def require_edge(self, u: str, v: str, etype: str) -> None:
        if not self.add_edge(u, v, etype):
            raise CycleRefused(f"edge {u} -[{etype}]-> {v} would create a cycle")

    def new_id(self, label: str) -> str:
        base = "c_" + _slug(label)
        nid, i = base, 2
        while nid in self.G:
            nid = f"{base}_{i}"
            i += 1
        return nid

    def add_node(
        self,
        label: str,
        parent: str = ROOT,
        *,
        etype: str = IS_A,
        kind: str = "concept",
        context: str | None = None,
        vector: np.ndarray | None = None,
        pinned: bool = False,
        ambiguous: bool = False,
        reason: str = "added",
        scores: dict[str, Any] | None = None,
    ) -> str:
        nid = self.new_id(label)
        if vector is None:
            vector = self.vectors([context or label])[0]
        self.G.add_node(
            nid,
            label=label,
            kind=kind,
            label_vec=np.asarray(vector, dtype=np.float32),
            own_vec=None,
            centroid=np.asarray(vector, dtype=np.float32),
            support=set(),
            summaries=[],
            summary_50w="",
            status="tentative",
            pinned=pinned,
            primary=parent,
            context=context or "",
            ambiguous=ambiguous,
            created_at=now(),
        )
        self.rarity.add(label)
        self.G.add_edge(parent, nid, type=etype)  # a new leaf never closes a cycle
        self.log_event("insert", parent, nid, reason, scores)
        return nid

    def remove_node(self, node_id: str, reason: str) -> None:
        """Remove a node; its children move to its primary parent."""
        if node_id == ROOT or node_id not in self.G:
            return
        parent = self.primary_parent(node_id) or ROOT
        for c in self.children(node_id):
            etype = self.G.edges[node_id, c]["type"]
            if len(self.parents(c)) == 1:
                self.G.remove_edge(node_id, c)
                self.add_edge(parent, c, etype, "reattached")
                self.G.nodes[c]["primary"] = parent
        self.G.remove_node(node_id)
        self.pending = [p for p in self.pending if node_id not in p.values()]
        self.log_event("remove", parent, node_id, reason)

    def similarity(self, vec: np.ndarray, node_id: str) -> float:
        c = self.G.nodes[node_id].get("centroid")
        return float(np.dot(vec, c)) if c is not None else 0.0

    def compute_centroid(self, n: str) -> np.ndarray | None:
        data = self.G.nodes[n]
        parts = []
        if data.get("label_vec") is not None:
            parts.append(np.asarray(data["label_vec"], dtype=np.float32))
        if data.get("own_vec") is not None:
            parts.append(np.asarray(data["own_vec"], dtype=np.float32))
        kids = [self.G.nodes[c]["centroid"] for c in self.children(n) if self.G.nodes[c].get("centroid") is not None]
        if kids:
            parts.append(0.5 * unit(np.mean(np.stack(kids), axis=0)))
        if not parts:
            return None
        return unit(np.sum(np.stack(parts), axis=0)).astype(np.float32)

    def refresh_up(self, node_id: str) -> None:
        """Recompute the centroids of a node and its ancestors (O(depth) along primary parents)."""
        cur: str | None = node_id
        guard = 0
        while cur is not None and guard < 100:
            self.G.nodes[cur]["centroid"] = self.compute_centroid(cur)
            cur = self.primary_parent(cur)
            guard += 1

    def recompute_centroids(self) -> None:
        """All centroids bottom-up (children before parents)."""
        for n in reversed(list(nx.topological_sort(self.hierarchy()))):
            self.G.nodes[n]["centroid"] = self.compute_centroid(n)

    def add_root(self) -> None:
        self.G.add_node(
            ROOT,
            label="root",
            kind="root",
            label_vec=None,
            own_vec=None,
            centroid=None,
            support=set(),
            summaries=[],
            summary_50w="",
            status="stable",
            pinned=True,
            primary=None,
            context="",
            ambiguous=False,
        )

    def ordered_nodes(self) -> list[str]:
        """Depth-first from the root along primary parents (children in insertion order), then the rest."""
        out: list[str] = []
        seen: set[str] = set()

        def walk(n: str) -> None:
            if n in seen:
                return
            seen.add(n)
            out.append(n)
            for c in self.children(n):
                if self.primary_parent(c) == n:
                    walk(c)

        walk(ROOT)
        out += [n for n in self.G.nodes if n not in seen]
        return out


def round_scores(scores: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in scores.items():
        if isinstance(v, (float, np.floating)):
            out[k] = round(float(v), 4)
        elif isinstance(v, np.integer):
            out[k] = int(v)
        else:
            out[k] = v
    return out
