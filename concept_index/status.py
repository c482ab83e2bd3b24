"""Node status and summaries: stable / tentative with hysteresis on support and fit margin, the consolidation
after a batch of changes, and the extractive micro-summaries kept per node."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from memory_store.clock import now

from .dag import ROOT, ConceptDag
from .insertion import handle_promotion
from .text import clip_words, specificity

log = logging.getLogger(__name__)


def fit_margin(dag: ConceptDag, node_id: str) -> float:
    """How much better the node fits its primary parent than the best other possible parent (a node
    that is not its descendant, not already its parent, and not more specific than it)."""
    data = dag.G.nodes[node_id]
    vec = data.get("centroid")
    if vec is None:
        return 0.0
    parent = dag.primary_parent(node_id) or ROOT
    own = dag.similarity(vec, parent) if parent != ROOT else dag.config.rel_min
    spec, _ = specificity(data["label"], dag.rarity)
    banned = dag.descendants(node_id) | set(dag.parents(node_id)) | {node_id, ROOT}
    best_other = 0.0
    for q in dag.G.nodes:
        if q in banned:
            continue
        if specificity(dag.label(q), dag.rarity)[0] > spec:
            continue
        best_other = max(best_other, dag.similarity(vec, q))
    return own - best_other


def update_status(dag: ConceptDag, node_id: str) -> str:
    """tentative -> stable when support_docs >= k and the fit margin >= +margin; stable -> tentative
    only when support falls below k or the margin below -margin (hysteresis: no flip-flopping)."""
    data = dag.G.nodes[node_id]
    if node_id == ROOT:
        return "stable"
    support = len(data["support"])
    margin = fit_margin(dag, node_id)
    old = data["status"]
    new = old
    if old == "tentative" and support >= dag.config.k and margin >= dag.config.margin:
        new = "stable"
    elif old == "stable" and (support < dag.config.k or margin < -dag.config.margin):
        new = "tentative"
    if new != old:
        data["status"] = new
        if new == "stable":
            data["ambiguous"] = False
        dag.log_event(
            "stabilize" if new == "stable" else "destabilize",
            old,
            node_id,
            f"support_docs {support} (k={dag.config.k}), fit margin {margin:.3f} (±{dag.config.margin})",
            {"support": support, "margin": margin},
        )
    return new


def consolidate(dag: ConceptDag) -> None:
    """After a batch of changes: centroids bottom-up, pending promotions, statuses."""
    dag.recompute_centroids()
    for p in list(dag.pending):
        handle_promotion(dag, p["general"], p["child"], p["parent"])
    dag.pending = [
        p for p in dag.pending if all(n in dag.G for n in p.values()) and dag.G.has_edge(p["parent"], p["child"])
    ]
    dag.recompute_centroids()
    for n in list(dag.G.nodes):
        update_status(dag, n)


def set_summary(
    dag: ConceptDag, node_id: str, summary: str, merge: Callable[[str, str], str] | None = None
) -> None:
    """Record a new extractive summary: keep the last N with support counts (a repeat adds support;
    beyond N the oldest with the lowest support goes); an optional merge callable may fuse it."""
    if not summary:
        return
    data = dag.G.nodes[node_id]
    hist: list[dict[str, Any]] = data["summaries"]
    support = len(data["support"])
    for h in hist:
        if h["text"] == summary:
            h["support"] += 1  # the same summary produced again: one more confirmation
            h["support_docs"] = support
            h["at"] = now()
            break
    else:
        hist.append({"text": summary, "support": 1, "support_docs": support, "at": now()})
    while len(hist) > dag.config.summaries_kept:
        low = min(range(len(hist) - 1), key=lambda i: (hist[i]["support"], i))
        hist.pop(low)
    merged = summary
    if merge is not None and data["summary_50w"] and data["summary_50w"] != summary:
        try:
            merged = merge(data["summary_50w"], summary) or summary
        except Exception as exc:  # noqa: BLE001 - the merge is optional; extractive stays
            log.warning("summary merge failed for %s: %s", node_id, exc)
    data["summary_50w"] = clip_words(merged, 50)
