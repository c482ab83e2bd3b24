"""The concept DAG: nodes, typed edges, O(depth) insertion, promotion with hysteresis, bottom-up centroids,
routing (``resolve_path``), micro-summaries and persistence in the charter's store."""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import networkx as nx
import numpy as np

from .text import Rarity, clip_words, content_tokens, norm_label, norm_path, specificity

if TYPE_CHECKING:
    from memory_store import Memory

log = logging.getLogger(__name__)

ROOT = "root"
IS_A = "is-a"
PART_OF = "part-of"
INFLUENCES = "influences"
EDGE_TYPES = (IS_A, PART_OF, INFLUENCES)
HIERARCHY = (IS_A, PART_OF)
GRAPH_FILE = Path("concepts") / "graph.json"
FORMAT_VERSION = 1

EmbedFn = Callable[[list[str]], np.ndarray]
MergeFn = Callable[[str, str], str]


@dataclass
class IndexConfig:
    """Tunables (defaults documented in README, "Concept index")."""

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


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _unit(v: np.ndarray) -> np.ndarray:
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


class CycleRefused(ValueError):
    """An edge that would make the concept graph cyclic."""


class ConceptIndex:
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
        self.memory = memory
        self.charter_id = memory.charter_id if memory is not None else charter_id
        self.config = config or IndexConfig()
        self.summary_merge = summary_merge  # optional LLM merge (existing, new) -> text; off by default
        self._embed_fn = embed
        self._vec_cache: dict[str, np.ndarray] = {}
        self.G = nx.DiGraph()
        self.events: list[dict[str, Any]] = []
        self.pending: list[dict[str, str]] = []  # promotion candidates {general, child, parent}
        self.pages: dict[str, str] = {}  # url -> signature of its chunk ids at the last update
        self.sections: list[dict[str, Any]] = []
        self.pointer_urls: list[str] = []  # pages that had pointer rows at the last update
        self.rarity = Rarity()
        self._add_root()
        if load and self.graph_file is not None and self.graph_file.is_file():
            self._load()

    # --- basics -----------------------------------------------------------------------------------------
    @property
    def graph_file(self) -> Path | None:
        return self.memory.path / GRAPH_FILE if self.memory is not None else None

    def embed(self, texts: list[str]) -> np.ndarray:
        """Normalised vectors of ``texts`` (cached per text, missing ones embedded in one batch)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        missing = [t for t in dict.fromkeys(texts) if t not in self._vec_cache]
        if missing:
            for t, v in zip(missing, self._embed_raw(missing), strict=True):
                self._vec_cache[t] = v
        return np.stack([self._vec_cache[t] for t in texts])

    def _embed_raw(self, texts: list[str]) -> np.ndarray:
        if self._embed_fn is not None:
            out = np.asarray(self._embed_fn(list(texts)), dtype=np.float32)
        else:
            if self.memory is not None:
                emb = self.memory.embedder
            else:
                from memory_store import get_embedder

                emb = get_embedder()
            out = emb.embed_documents(list(texts))
            # concept labels are not store chunks: keep the embedder's chunk counters (harvest reports) exact
            emb.texts_embedded -= len(texts)
            emb.batches -= -(-len(texts) // max(1, emb.batch_size))
        return np.stack([_unit(v) for v in out]).astype(np.float32)

    @property
    def dim(self) -> int:
        vec = self.G.nodes[ROOT].get("label_vec")
        for _, data in self.G.nodes(data=True):
            if data.get("label_vec") is not None:
                return len(data["label_vec"])
        return len(vec) if vec is not None else 0

    def _add_root(self) -> None:
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

    def log_event(
        self, action: str, from_: str | None, to: str | None, reason: str, scores: dict[str, Any] | None = None
    ) -> None:
        ev = ConceptEvent(_now(), action, from_, to, reason, _round(scores or {}))
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

    # --- structure --------------------------------------------------------------------------------------
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

    def _new_id(self, label: str) -> str:
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
        nid = self._new_id(label)
        if vector is None:
            vector = self.embed([context or label])[0]
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
            created_at=_now(),
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

    # --- insertion ---------------------------------------------------------------------------------------
    def compare_generality(self, concept: str, other: str) -> tuple[str, dict[str, float]]:
        """ "more_specific" | "more_general" | "same_level" of ``concept`` relative to ``other``, from token
        length, tf-idf rarity and noun-phrase count, with the hysteresis margin."""
        a, sa = specificity(concept, self.rarity)
        b, sb = specificity(other, self.rarity)
        diff = a - b
        scores = {"spec": round(a, 4), "other_spec": round(b, 4), "diff": round(diff, 4), **sa}
        if diff > self.config.generality_margin:
            return "more_specific", scores
        if diff < -self.config.generality_margin:
            return "more_general", scores
        return "same_level", scores

    def similarity(self, vec: np.ndarray, node_id: str) -> float:
        c = self.G.nodes[node_id].get("centroid")
        return float(np.dot(vec, c)) if c is not None else 0.0

    def is_related(self, vec: np.ndarray, node_id: str, parent_sim: float) -> tuple[bool, float]:
        sim = self.similarity(vec, node_id)
        return sim >= self.config.rel_min and sim >= parent_sim + self.config.rel_delta, sim

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
        """Insert ``concept`` below ``start_id`` in O(depth): descend into the related child while the
        concept is more specific than it; attach beside a same-level child; a more general concept is
        attached here and becomes a promotion candidate over that child; ambiguous -> tentative here.
        An existing label is merged (its support grows). Returns the node id."""
        existing = self.find(concept) if norm_label(concept) else None
        if existing is not None and existing != ROOT and norm_label(self.label(existing)) == norm_label(concept):
            self.G.nodes[existing]["support"].update(support)
            if pinned:
                self.G.nodes[existing]["pinned"] = True
            self.log_event("merge", None, existing, "same label already in the index")
            return existing
        if vector is None:
            vector = self.embed([context or concept])[0]
        node = start_id if start_id in self.G else ROOT
        parent_sim = 0.0 if node == ROOT else self.similarity(vector, node)
        cfg = self.config
        for _depth in range(64):
            kids = self.children(node)
            scored = sorted(((self.similarity(vector, c), c) for c in kids), reverse=True)
            if not scored:
                return self._attach(concept, node, vector, kind, context, pinned, support, "no children", {})
            best_sim, best = scored[0]
            related = best_sim >= cfg.rel_min and best_sim >= parent_sim + cfg.rel_delta
            runner = scored[1][0] if len(scored) > 1 else -1.0
            scores = {"sim": best_sim, "parent_sim": parent_sim, "runner_up": runner}
            if not related:  # near the decision boundary: ambiguous
                ambiguous = best_sim >= max(cfg.rel_min, parent_sim + cfg.rel_delta) - cfg.ambiguity
                why = f"not related to any child of {node} (best {best} {best_sim:.2f})"
                return self._attach(
                    concept, node, vector, kind, context, pinned, support, why, scores, ambiguous=ambiguous
                )
            verdict, gscores = self.compare_generality(concept, self.label(best))
            scores.update(gscores)
            tie = runner >= cfg.rel_min and best_sim - runner < cfg.ambiguity / 2
            if verdict == "more_specific":
                if tie:
                    why = f"ambiguous between {best} and {scored[1][1]}"
                    return self._attach(
                        concept, node, vector, kind, context, pinned, support, why, scores, ambiguous=True
                    )
                self.log_event("descend", node, best, f"more specific than {self.label(best)!r}", scores)
                node, parent_sim = best, best_sim
                continue
            if verdict == "same_level":
                why = f"same level as {self.label(best)!r}"
                return self._attach(concept, node, vector, kind, context, pinned, support, why, scores)
            nid = self._attach(
                concept,
                node,
                vector,
                kind,
                context,
                pinned,
                support,
                f"more general than {self.label(best)!r}: promotion candidate",
                scores,
                ambiguous=True,
            )
            self.pending.append({"general": nid, "child": best, "parent": node})
            self.handle_promotion(nid, best, node)
            return nid
        return self._attach(concept, node, vector, kind, context, pinned, support, "depth limit", {})

    def _attach(
        self,
        concept: str,
        parent: str,
        vector: np.ndarray,
        kind: str,
        context: str | None,
        pinned: bool,
        support: Iterable[str],
        reason: str,
        scores: dict[str, Any],
        *,
        ambiguous: bool = False,
    ) -> str:
        nid = self.add_node(
            concept,
            parent,
            kind=kind,
            context=context,
            vector=vector,
            pinned=pinned,
            ambiguous=ambiguous,
            reason=reason + (" (ambiguous: tentative)" if ambiguous else ""),
            scores=scores,
        )
        self.G.nodes[nid]["support"].update(support)
        self._refresh_up(nid)
        return nid

    def handle_promotion(self, general: str, child: str, parent: str) -> bool:
        """Move ``child`` under the more general ``general`` when ``general`` has support >= k and the
        child fits it better than its current parent by ``promote_gain``; otherwise keep it pending."""
        if not all(n in self.G for n in (general, child, parent)) or not self.G.has_edge(parent, child):
            return False
        g = self.G.nodes[general]
        support = len(g["support"])
        cvec = self.G.nodes[child]["centroid"]
        gain = self.similarity(cvec, general) - (self.similarity(cvec, parent) if parent != ROOT else 0.0)
        scores = {"support": support, "gain": gain}
        if support < self.config.k or gain < self.config.promote_gain:
            return False
        etype = self.G.edges[parent, child]["type"]
        if not self.add_edge(general, child, etype, "promotion", scores):
            return False
        self.G.remove_edge(parent, child)
        self.G.nodes[child]["primary"] = general
        self.log_event("promote", parent, general, f"{child} moved under the more general {general}", scores)
        self.pending = [p for p in self.pending if not (p["general"] == general and p["child"] == child)]
        self._refresh_up(child)
        return True

    # --- centroids, status -------------------------------------------------------------------------------
    def _compute_centroid(self, n: str) -> np.ndarray | None:
        data = self.G.nodes[n]
        parts = []
        if data.get("label_vec") is not None:
            parts.append(np.asarray(data["label_vec"], dtype=np.float32))
        if data.get("own_vec") is not None:
            parts.append(np.asarray(data["own_vec"], dtype=np.float32))
        kids = [self.G.nodes[c]["centroid"] for c in self.children(n) if self.G.nodes[c].get("centroid") is not None]
        if kids:
            parts.append(0.5 * _unit(np.mean(np.stack(kids), axis=0)))
        if not parts:
            return None
        return _unit(np.sum(np.stack(parts), axis=0)).astype(np.float32)

    def _refresh_up(self, node_id: str) -> None:
        """Recompute the centroids of a node and its ancestors (O(depth) along primary parents)."""
        cur: str | None = node_id
        guard = 0
        while cur is not None and guard < 100:
            self.G.nodes[cur]["centroid"] = self._compute_centroid(cur)
            cur = self.primary_parent(cur)
            guard += 1

    def recompute_centroids(self) -> None:
        """All centroids bottom-up (children before parents)."""
        for n in reversed(list(nx.topological_sort(self.hierarchy()))):
            self.G.nodes[n]["centroid"] = self._compute_centroid(n)

    def fit_margin(self, node_id: str) -> float:
        """How much better the node fits its primary parent than the best other possible parent (a node
        that is not its descendant, not already its parent, and not more specific than it)."""
        data = self.G.nodes[node_id]
        vec = data.get("centroid")
        if vec is None:
            return 0.0
        parent = self.primary_parent(node_id) or ROOT
        own = self.similarity(vec, parent) if parent != ROOT else self.config.rel_min
        spec, _ = specificity(data["label"], self.rarity)
        banned = self.descendants(node_id) | set(self.parents(node_id)) | {node_id, ROOT}
        best_other = 0.0
        for q in self.G.nodes:
            if q in banned:
                continue
            if specificity(self.label(q), self.rarity)[0] > spec:
                continue
            best_other = max(best_other, self.similarity(vec, q))
        return own - best_other

    def update_status(self, node_id: str) -> str:
        """tentative -> stable when support_docs >= k and the fit margin >= +margin; stable -> tentative
        only when support falls below k or the margin below -margin (hysteresis: no flip-flopping)."""
        data = self.G.nodes[node_id]
        if node_id == ROOT:
            return "stable"
        support = len(data["support"])
        margin = self.fit_margin(node_id)
        old = data["status"]
        new = old
        if old == "tentative" and support >= self.config.k and margin >= self.config.margin:
            new = "stable"
        elif old == "stable" and (support < self.config.k or margin < -self.config.margin):
            new = "tentative"
        if new != old:
            data["status"] = new
            if new == "stable":
                data["ambiguous"] = False
            self.log_event(
                "stabilize" if new == "stable" else "destabilize",
                old,
                node_id,
                f"support_docs {support} (k={self.config.k}), fit margin {margin:.3f} (±{self.config.margin})",
                {"support": support, "margin": margin},
            )
        return new

    def consolidate(self) -> None:
        """After a batch of changes: centroids bottom-up, pending promotions, statuses."""
        self.recompute_centroids()
        for p in list(self.pending):
            self.handle_promotion(p["general"], p["child"], p["parent"])
        self.pending = [
            p for p in self.pending if all(n in self.G for n in p.values()) and self.G.has_edge(p["parent"], p["child"])
        ]
        self.recompute_centroids()
        for n in list(self.G.nodes):
            self.update_status(n)

    # --- summaries ----------------------------------------------------------------------------------------
    def set_summary(self, node_id: str, summary: str) -> None:
        """Record a new extractive summary: keep the last N with support counts (a repeat adds support;
        beyond N the oldest with the lowest support goes); an optional merge callable may fuse it."""
        if not summary:
            return
        data = self.G.nodes[node_id]
        hist: list[dict[str, Any]] = data["summaries"]
        support = len(data["support"])
        for h in hist:
            if h["text"] == summary:
                h["support"] += 1  # the same summary produced again: one more confirmation
                h["support_docs"] = support
                h["at"] = _now()
                break
        else:
            hist.append({"text": summary, "support": 1, "support_docs": support, "at": _now()})
        while len(hist) > self.config.summaries_kept:
            low = min(range(len(hist) - 1), key=lambda i: (hist[i]["support"], i))
            hist.pop(low)
        merged = summary
        if self.summary_merge is not None and data["summary_50w"] and data["summary_50w"] != summary:
            try:
                merged = self.summary_merge(data["summary_50w"], summary) or summary
            except Exception as exc:  # noqa: BLE001 - the merge is optional; extractive stays
                log.warning("summary merge failed for %s: %s", node_id, exc)
        data["summary_50w"] = clip_words(merged, 50)

    # --- routing ------------------------------------------------------------------------------------------
    def resolve_path(self, text: str) -> str | None:
        """The best concept path for ``text`` (an exact path or label first, else the node whose label or
        centroid is most similar, with a small bonus for shared words); None when nothing reaches
        ``route_min``."""
        if not text or not text.strip() or len(self) <= 1:
            return None
        exact = self.find(text)
        if exact is not None and exact != ROOT:
            return self.path(exact)
        vec = self.embed([text])[0]
        words = set(content_tokens(text))
        best, best_score = None, -1.0
        for n, data in self.G.nodes(data=True):
            if n == ROOT:
                continue
            lv = data.get("label_vec")
            s = max(
                float(np.dot(vec, lv)) if lv is not None else 0.0,
                float(np.dot(vec, data["centroid"])) if data.get("centroid") is not None else 0.0,
            )
            lw = set(content_tokens(data["label"]))
            if words and lw:
                s += 0.15 * len(words & lw) / len(words | lw)
            if s > best_score:
                best, best_score = n, s
        if best is None or best_score < self.config.route_min:
            return None
        return self.path(best)

    # --- export -------------------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """``{"nodes": [{id, label, path, parents, support_docs, summary_50w, status}], "edges": [...]}``."""
        nodes = []
        for n in self._ordered_nodes():
            d = self.G.nodes[n]
            nodes.append(
                {
                    "id": n,
                    "label": d["label"],
                    "path": self.path(n),
                    "parents": self.parents(n),
                    "support_docs": len(d["support"]),
                    "summary_50w": d["summary_50w"],
                    "status": d["status"],
                }
            )
        edges = [{"source": u, "target": v, "type": d["type"]} for u, v, d in self.G.edges(data=True)]
        return {"nodes": nodes, "edges": edges}

    def _ordered_nodes(self) -> list[str]:
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

    def snapshot_records(self) -> list[dict[str, Any]]:
        """``concept``, ``edge`` and ``concept_event`` records for the /clean snapshot."""
        out: list[dict[str, Any]] = []
        for n in self._ordered_nodes():
            d = self.G.nodes[n]
            out.append(
                {
                    "type": "concept",
                    "id": n,
                    "label": d["label"],
                    "kind": d["kind"],
                    "path": self.path(n),
                    "parents": self.parents(n),
                    "children": self.children(n),
                    "support_docs": len(d["support"]),
                    "support_urls": sorted(d["support"]),
                    "summary_50w": d["summary_50w"],
                    "summaries": list(d["summaries"]),
                    "status": d["status"],
                    "centroid": _vec_out(d.get("centroid")),
                }
            )
        for u, v, d in self.G.edges(data=True):
            out.append({"type": "edge", "source": u, "target": v, "relation": d["type"]})
        for e in self.events:
            out.append({"type": "concept_event", **e})
        return out

    # --- persistence --------------------------------------------------------------------------------------
    def save(self) -> Path | None:
        """Write the graph to ``<store>/concepts/graph.json`` atomically (under the store's write lock)."""
        if self.memory is None or self.graph_file is None:
            return None
        doc = {
            "format_version": FORMAT_VERSION,
            "charter_id": self.charter_id,
            "saved_at": _now(),
            "config": asdict(self.config),
            "nodes": [
                {
                    "id": n,
                    **{k: v for k, v in d.items() if k not in ("label_vec", "own_vec", "centroid", "support")},
                    "support": sorted(d["support"]),
                    "label_vec": _vec_out(d.get("label_vec")),
                    "own_vec": _vec_out(d.get("own_vec")),
                    "centroid": _vec_out(d.get("centroid")),
                }
                for n, d in self.G.nodes(data=True)
            ],
            "edges": [{"source": u, "target": v, "type": d["type"]} for u, v, d in self.G.edges(data=True)],
            "events": self.events,
            "pending": self.pending,
            "pages": self.pages,
            "sections": self.sections,
            "pointer_urls": self.pointer_urls,
            "rarity": {"n": self.rarity.n, "df": dict(self.rarity.df)},
        }
        path = self.graph_file
        with self.memory.write_lock():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".json.tmp")
            tmp.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
            os.replace(tmp, path)
        return path

    def _load(self) -> None:
        assert self.graph_file is not None
        doc = json.loads(self.graph_file.read_text(encoding="utf-8"))
        self.G = nx.DiGraph()
        for nd in doc.get("nodes", []):
            nid = nd.pop("id")
            for key in ("label_vec", "own_vec", "centroid"):
                nd[key] = _vec_in(nd.get(key))
            nd["support"] = set(nd.get("support") or [])
            self.G.add_node(nid, **nd)
        if ROOT not in self.G:
            self._add_root()
        for e in doc.get("edges", []):
            self.G.add_edge(e["source"], e["target"], type=e["type"])
        self.events = list(doc.get("events", []))
        self.pending = list(doc.get("pending", []))
        self.pages = dict(doc.get("pages", {}))
        self.sections = list(doc.get("sections", []))
        self.pointer_urls = list(doc.get("pointer_urls", []))
        r = doc.get("rarity") or {}
        self.rarity.n = int(r.get("n", 0))
        self.rarity.df.update(r.get("df", {}))
        cfg = doc.get("config")
        if cfg:
            known = set(IndexConfig.__dataclass_fields__)
            self.config = IndexConfig(**{k: v for k, v in cfg.items() if k in known})


def _vec_out(v: Any) -> list[float] | None:
    if v is None:
        return None
    return [round(float(x), 5) for x in v]


def _vec_in(v: Any) -> np.ndarray | None:
    return None if v is None else np.asarray(v, dtype=np.float32)


def _round(scores: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in scores.items():
        if isinstance(v, (float, np.floating)):
            out[k] = round(float(v), 4)
        elif isinstance(v, np.integer):
            out[k] = int(v)
        else:
            out[k] = v
    return out
