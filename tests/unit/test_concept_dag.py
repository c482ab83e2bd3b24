"""The concept DAG on its own (no store, no model): insertion, the cycle guard, status hysteresis and promotion,
with hand-written vectors."""

from __future__ import annotations

import numpy as np
import pytest

from concept_index import ConceptIndex, CycleRefused, IndexConfig

# -- a detached index with hand-written vectors ---------------------------------------------------------------


def _unit(*pairs: tuple[int, float]) -> np.ndarray:
    v = np.zeros(8, dtype=np.float32)
    for i, x in pairs:
        v[i] = x
    return v / np.linalg.norm(v)


HAND = {  # axes: 0 performance, 1 security, 2 vitals, 3 layout, 4 loading, 5 certificates
    "Performance": _unit((0, 1)),
    "Web vitals": _unit((0, 0.8), (2, 0.6)),
    "Layout shift metric": _unit((0, 0.6), (2, 0.5), (3, 0.62)),
    "Loading speed": _unit((0, 0.8), (4, 0.6)),
    "Security": _unit((1, 1)),
    "Certificate expiry warnings": _unit((1, 0.7), (5, 0.71)),
}


def hand_index(**cfg) -> ConceptIndex:
    return ConceptIndex(embed=lambda texts: np.stack([HAND[t] for t in texts]), config=IndexConfig(**cfg))


def test_insertion_builds_the_expected_hierarchy():
    ci = hand_index()
    ids = {label: ci.insert(label) for label in HAND}
    parent = {label: ci.primary_parent(nid) for label, nid in ids.items()}
    assert parent == {
        "Performance": "root",
        "Web vitals": ids["Performance"],
        "Layout shift metric": ids["Web vitals"],
        "Loading speed": ids["Performance"],  # same level as Web vitals: a sibling
        "Security": "root",
        "Certificate expiry warnings": ids["Security"],
    }
    assert ci.path(ids["Layout shift metric"]) == "Performance > Web vitals > Layout shift metric"
    assert all(ci.edge_type(ci.primary_parent(n), n) == "is-a" for n in ids.values())
    assert ci.resolve_path("layout shift metric") == "Performance > Web vitals > Layout shift metric"
    # every insertion is in the event log with its scores; descending is logged too
    acts = [e["action"] for e in ci.events]
    assert acts.count("insert") == 6 and "descend" in acts
    assert all({"time", "action", "from", "to", "reason", "scores"} <= set(e) for e in ci.events)
    # inserting an existing label merges instead of duplicating
    assert ci.insert("web vitals") == ids["Web vitals"] and len(ci) == 7
    # the centroid of a parent moved toward its children (recomputed bottom-up)
    perf = ci.node(ids["Performance"])["centroid"]
    assert float(perf @ HAND["Performance"]) < 0.999


def test_a_cycle_is_refused_and_logged():
    ci = hand_index()
    ids = {label: ci.insert(label) for label in HAND}
    perf, leaf = ids["Performance"], ids["Layout shift metric"]
    assert ci.add_edge(leaf, perf, "part-of") is False
    assert ci.events[-1]["action"] == "refuse" and "cycle" in ci.events[-1]["reason"]
    with pytest.raises(CycleRefused):
        ci.require_edge(leaf, perf, "influences")
    assert ci.add_edge(perf, perf, "is-a") is False
    # a second parent is fine (multi-parent DAG)
    assert ci.add_edge(ids["Security"], leaf, "part-of") is True
    assert set(ci.parents(leaf)) == {ids["Web vitals"], ids["Security"]}
    assert ci.parents(leaf)[0] == ids["Web vitals"]  # the primary parent (path) is unchanged
    import networkx as nx

    assert nx.is_directed_acyclic_graph(ci.G)


def test_tentative_becomes_stable_only_past_k_and_the_margin():
    ci = hand_index(k=2)
    ids = {label: ci.insert(label) for label in HAND}
    leaf = ids["Layout shift metric"]
    node = ci.node(leaf)
    fit = ci.fit_margin(leaf)
    assert fit > 0.05  # it fits its parent clearly better than any other candidate parent
    node["support"] = {"https://a.example/1"}
    assert ci.update_status(leaf) == "tentative"  # support 1 < k
    node["support"].add("https://a.example/2")
    ci.config.margin = fit + 0.05
    assert ci.update_status(leaf) == "tentative"  # support k reached, but the fit margin is not past the margin
    ci.config.margin = fit - 0.05
    assert ci.update_status(leaf) == "stable"
    assert ci.events[-1]["action"] == "stabilize"
    ci.config.margin = fit + 0.05  # hysteresis: a stable node only goes back below -margin (or support < k)
    assert ci.update_status(leaf) == "stable"
    node["support"] = {"https://a.example/1"}
    assert ci.update_status(leaf) == "tentative"


def test_promotion_needs_support_k():
    vecs = {
        "Metrics": _unit((0, 1), (2, 0.9)),
        "Largest contentful paint timing": _unit((0, 0.5), (2, 0.8), (6, 0.3)),
    }
    ci = ConceptIndex(embed=lambda t: np.stack([vecs[x] for x in t]), config=IndexConfig(k=2))
    child = ci.insert("Largest contentful paint timing")
    general = ci.insert("Metrics")  # more general than the child: attached beside it, a promotion candidate
    assert ci.primary_parent(child) == "root" and ci.pending
    ci.consolidate()
    assert ci.primary_parent(child) == "root"  # support 0 < k: no promotion
    ci.node(general)["support"] = {"u1", "u2"}
    ci.consolidate()
    assert ci.primary_parent(child) == general
    assert any(e["action"] == "promote" for e in ci.events)
