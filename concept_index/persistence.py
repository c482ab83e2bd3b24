"""Persistence and export: the graph as ``<store>/concepts/graph.json`` (atomic, under the store's write lock),
as JSON for ``brt concepts --format json``, and as snapshot records (``concept``, ``edge``, ``concept_event``)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import asdict
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from memory_store.clock import now

from .dag import ROOT, ConceptDag, IndexConfig

GRAPH_FILE = Path("concepts") / "graph.json"
FORMAT_VERSION = 1


def to_json(dag: ConceptDag) -> dict[str, Any]:
    """``{"nodes": [{id, label, path, parents, support_docs, summary_50w, status}], "edges": [...]}``."""
    nodes = []
    for n in dag.ordered_nodes():
        d = dag.G.nodes[n]
        nodes.append(
            {
                "id": n,
                "label": d["label"],
                "path": dag.path(n),
                "parents": dag.parents(n),
                "support_docs": len(d["support"]),
                "summary_50w": d["summary_50w"],
                "status": d["status"],
            }
        )
    edges = [{"source": u, "target": v, "type": d["type"]} for u, v, d in dag.G.edges(data=True)]
    return {"nodes": nodes, "edges": edges}


def snapshot_records(dag: ConceptDag) -> list[dict[str, Any]]:
    """``concept``, ``edge`` and ``concept_event`` records for the /clean snapshot."""
    out: list[dict[str, Any]] = []
    for n in dag.ordered_nodes():
        d = dag.G.nodes[n]
        out.append(
            {
                "type": "concept",
                "id": n,
                "label": d["label"],
                "kind": d["kind"],
                "path": dag.path(n),
                "parents": dag.parents(n),
                "children": dag.children(n),
                "support_docs": len(d["support"]),
                "support_urls": sorted(d["support"]),
                "summary_50w": d["summary_50w"],
                "summaries": list(d["summaries"]),
                "status": d["status"],
                "centroid": vec_out(d.get("centroid")),
            }
        )
    for u, v, d in dag.G.edges(data=True):
        out.append({"type": "edge", "source": u, "target": v, "relation": d["type"]})
    for e in dag.events:
        out.append({"type": "concept_event", **e})
    return out


def save_graph(
    dag: ConceptDag,
    path: Path,
    *,
    charter_id: str | None,
    bookkeeping: dict[str, Any],
    lock: Callable[[], AbstractContextManager[Any]],
) -> Path:
    """Write the graph (with the index's ``bookkeeping``: pages, sections, pointer_urls) to ``path`` atomically,
    under ``lock()`` (the store's write lock)."""
    doc = {
        "format_version": FORMAT_VERSION,
        "charter_id": charter_id,
        "saved_at": now(),
        "config": asdict(dag.config),
        "nodes": [
            {
                "id": n,
                **{k: v for k, v in d.items() if k not in ("label_vec", "own_vec", "centroid", "support")},
                "support": sorted(d["support"]),
                "label_vec": vec_out(d.get("label_vec")),
                "own_vec": vec_out(d.get("own_vec")),
                "centroid": vec_out(d.get("centroid")),
            }
            for n, d in dag.G.nodes(data=True)
        ],
        "edges": [{"source": u, "target": v, "type": d["type"]} for u, v, d in dag.G.edges(data=True)],
        "events": dag.events,
        "pending": dag.pending,
        "pages": bookkeeping.get("pages", {}),
        "sections": bookkeeping.get("sections", []),
        "pointer_urls": bookkeeping.get("pointer_urls", []),
        "rarity": {"n": dag.rarity.n, "df": dict(dag.rarity.df)},
    }
    with lock():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, path)
    return path


def load_graph(dag: ConceptDag, path: Path) -> dict[str, Any]:
    """Read the graph at ``path`` into ``dag`` (nodes, edges, events, pending promotions, rarity, config);
    returns the index's bookkeeping (pages, sections, pointer_urls)."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    dag.G = nx.DiGraph()
    for nd in doc.get("nodes", []):
        nid = nd.pop("id")
        for key in ("label_vec", "own_vec", "centroid"):
            nd[key] = vec_in(nd.get(key))
        nd["support"] = set(nd.get("support") or [])
        dag.G.add_node(nid, **nd)
    if ROOT not in dag.G:
        dag.add_root()
    for e in doc.get("edges", []):
        dag.G.add_edge(e["source"], e["target"], type=e["type"])
    dag.events = list(doc.get("events", []))
    dag.pending = list(doc.get("pending", []))
    r = doc.get("rarity") or {}
    dag.rarity.n = int(r.get("n", 0))
    dag.rarity.df.update(r.get("df", {}))
    cfg = doc.get("config")
    if cfg:
        known = set(IndexConfig.__dataclass_fields__)
        dag.config = IndexConfig(**{k: v for k, v in cfg.items() if k in known})
    return {
        "pages": dict(doc.get("pages", {})),
        "sections": list(doc.get("sections", [])),
        "pointer_urls": list(doc.get("pointer_urls", [])),
    }


def vec_out(v: Any) -> list[float] | None:
    if v is None:
        return None
    return [round(float(x), 5) for x in v]


def vec_in(v: Any) -> np.ndarray | None:
    return None if v is None else np.asarray(v, dtype=np.float32)
