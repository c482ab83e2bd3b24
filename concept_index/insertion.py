"""Insertion of concepts into the DAG in O(depth), and promotion with hysteresis: a concept more general than
an existing child is attached beside it and becomes a promotion candidate; the child moves under it only once
the general concept has support and the child fits it better."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from .dag import ROOT, ConceptDag
from .text import norm_label, specificity


def compare_generality(dag: ConceptDag, concept: str, other: str) -> tuple[str, dict[str, float]]:
    """ "more_specific" | "more_general" | "same_level" of ``concept`` relative to ``other``, from token
    length, tf-idf rarity and noun-phrase count, with the hysteresis margin."""
    a, sa = specificity(concept, dag.rarity)
    b, sb = specificity(other, dag.rarity)
    diff = a - b
    scores = {"spec": round(a, 4), "other_spec": round(b, 4), "diff": round(diff, 4), **sa}
    if diff > dag.config.generality_margin:
        return "more_specific", scores
    if diff < -dag.config.generality_margin:
        return "more_general", scores
    return "same_level", scores


def is_related(dag: ConceptDag, vec: np.ndarray, node_id: str, parent_sim: float) -> tuple[bool, float]:
    sim = dag.similarity(vec, node_id)
    return sim >= dag.config.rel_min and sim >= parent_sim + dag.config.rel_delta, sim


def insert(
    dag: ConceptDag,
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
    existing = dag.find(concept) if norm_label(concept) else None
    if existing is not None and existing != ROOT and norm_label(dag.label(existing)) == norm_label(concept):
        dag.G.nodes[existing]["support"].update(support)
        if pinned:
            dag.G.nodes[existing]["pinned"] = True
        dag.log_event("merge", None, existing, "same label already in the index")
        return existing
    if vector is None:
        vector = dag.vectors([context or concept])[0]
    node = start_id if start_id in dag.G else ROOT
    parent_sim = 0.0 if node == ROOT else dag.similarity(vector, node)
    cfg = dag.config
    for _depth in range(64):
        kids = dag.children(node)
        scored = sorted(((dag.similarity(vector, c), c) for c in kids), reverse=True)
        if not scored:
            return attach(dag, concept, node, vector, kind, context, pinned, support, "no children", {})
        best_sim, best = scored[0]
        related = best_sim >= cfg.rel_min and best_sim >= parent_sim + cfg.rel_delta
        runner = scored[1][0] if len(scored) > 1 else -1.0
        scores = {"sim": best_sim, "parent_sim": parent_sim, "runner_up": runner}
        if not related:  # near the decision boundary: ambiguous
            ambiguous = best_sim >= max(cfg.rel_min, parent_sim + cfg.rel_delta) - cfg.ambiguity
            why = f"not related to any child of {node} (best {best} {best_sim:.2f})"
            return attach(
                dag, concept, node, vector, kind, context, pinned, support, why, scores, ambiguous=ambiguous
            )
        verdict, gscores = compare_generality(dag, concept, dag.label(best))
        scores.update(gscores)
        tie = runner >= cfg.rel_min and best_sim - runner < cfg.ambiguity / 2
        if verdict == "more_specific":
            if tie:
                why = f"ambiguous between {best} and {scored[1][1]}"
                return attach(
                    dag, concept, node, vector, kind, context, pinned, support, why, scores, ambiguous=True
                )
            dag.log_event("descend", node, best, f"more specific than {dag.label(best)!r}", scores)
            node, parent_sim = best, best_sim
            continue
        if verdict == "same_level":
            why = f"same level as {dag.label(best)!r}"
            return attach(dag, concept, node, vector, kind, context, pinned, support, why, scores)
        nid = attach(
            dag,
            concept,
            node,
            vector,
            kind,
            context,
            pinned,
            support,
            f"more general than {dag.label(best)!r}: promotion candidate",
            scores,
            ambiguous=True,
        )
        dag.pending.append({"general": nid, "child": best, "parent": node})
        handle_promotion(dag, nid, best, node)
        return nid
    return attach(dag, concept, node, vector, kind, context, pinned, support, "depth limit", {})


def attach(
    dag: ConceptDag,
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
    nid = dag.add_node(
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
    dag.G.nodes[nid]["support"].update(support)
    dag.refresh_up(nid)
    return nid


def handle_promotion(dag: ConceptDag, general: str, child: str, parent: str) -> bool:
    """Move ``child`` under the more general ``general`` when ``general`` has support >= k and the
    child fits it better than its current parent by ``promote_gain``; otherwise keep it pending."""
    if not all(n in dag.G for n in (general, child, parent)) or not dag.G.has_edge(parent, child):
        return False
    g = dag.G.nodes[general]
    support = len(g["support"])
    cvec = dag.G.nodes[child]["centroid"]
    gain = dag.similarity(cvec, general) - (dag.similarity(cvec, parent) if parent != ROOT else 0.0)
    scores = {"support": support, "gain": gain}
    if support < dag.config.k or gain < dag.config.promote_gain:
        return False
    etype = dag.G.edges[parent, child]["type"]
    if not dag.add_edge(general, child, etype, "promotion", scores):
        return False
    dag.G.remove_edge(parent, child)
    dag.G.nodes[child]["primary"] = general
    dag.log_event("promote", parent, general, f"{child} moved under the more general {general}", scores)
    dag.pending = [p for p in dag.pending if not (p["general"] == general and p["child"] == child)]
    dag.refresh_up(child)
    return True
