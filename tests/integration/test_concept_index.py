"""Concept index: insertion, DAG guard, promotion hysteresis, pointers (closets rule), subtree search with
fallback, persistence and snapshot records. Real model and real LanceDB on the bundled demo site's pages."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from concept_index import ConceptIndex, CycleRefused, IndexConfig, SectionSpec, render, update_from_store
from memory_store import Memory
from memory_store import pointers as ptr

DEMO_SITE = Path(__file__).resolve().parent.parent / "orchestrator" / "demo_site"
SECTIONS = [
    SectionSpec(
        "LCP threshold", "What Largest Contentful Paint time counts as good?", "Performance > Core Web Vitals > LCP"
    ),
    SectionSpec("CLS mitigation", "How do I minimise cumulative layout shift?", "Performance > Core Web Vitals > CLS"),
    SectionSpec("Lab versus field", "Why can't a Lighthouse lab test measure INP?"),
]


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


# -- on a real store ------------------------------------------------------------------------------------------


def demo_pages() -> list[dict]:
    from orchestrator.extract import extract_page

    pages = []
    for f in sorted(DEMO_SITE.glob("*.html")):
        url = "http://127.0.0.1:8765/" + f.name
        e = extract_page(f.read_text(encoding="utf-8"), url)
        pages.append({"url": url, "text": e.text, "title": e.title, "last_updated": e.last_updated})
    return pages


@pytest.fixture(scope="module")
def built(tmp_path_factory, embedder):
    base = tmp_path_factory.mktemp("concepts") / "memory"
    mem = Memory("cidemo", basepath=base)
    mem.add_many(demo_pages())
    ci, rep = update_from_store(mem, SECTIONS)
    return mem, ci, rep


def test_build_from_store_is_bounded_and_typed(built):
    mem, ci, rep = built
    assert 10 <= len(ci) <= 80 and rep.pointers > 0
    import networkx as nx

    assert nx.is_directed_acyclic_graph(ci.G)
    types = {d["type"] for _, _, d in ci.G.edges(data=True)}
    assert "is-a" in types
    # the charter's hint chain exists as a path, and sections resolve through it
    assert ci.resolve_path("Performance > Core Web Vitals > CLS") == "Performance > Core Web Vitals > CLS"
    assert ci.find("CLS mitigation") is not None
    for n in ci.nodes():
        if n != "root":
            assert len(ci.node(n)["summary_50w"].split()) <= 50
            assert len(ci.node(n)["summaries"]) <= 5
    doc = json.loads(render(ci, "json"))
    assert set(doc) == {"nodes", "edges"}
    assert set(doc["nodes"][0]) == {"id", "label", "path", "parents", "support_docs", "summary_50w", "status"}
    assert doc["nodes"][0]["id"] == "root"
    assert set(doc["edges"][0]) == {"source", "target", "type"}
    assert render(ci, "mermaid").startswith("flowchart TD")
    assert render(ci, "dot").startswith("digraph")
    assert "Core Web Vitals" in render(ci, "tree")


def test_subtree_search_returns_only_chunks_under_the_subtree(built):
    mem, ci, _ = built
    path = "Performance > Core Web Vitals"
    under = set(ptr.chunk_ids_under(mem.path, path))
    assert under and len(under) < mem.count_chunks()
    hits = mem.search("How do I minimise cumulative layout shift?", k=50, subtree=path, min_score=0.0)
    assert hits and {h.id for h in hits} <= under
    assert {h.matched_via for h in hits} == {"concept"}
    # the node's descendants count: the CLS leaf's chunks are inside its ancestor's subtree
    assert set(ptr.chunk_ids_under(mem.path, path + " > CLS")) <= under
    # a node id works as well as a path
    assert set(ptr.chunk_ids_under(mem.path, ci.find(path))) == under


def test_fallback_is_taken_and_labelled(built):
    mem, _, _ = built
    plain = mem.search("What Largest Contentful Paint time counts as good?", k=3)
    none = mem.search("What Largest Contentful Paint time counts as good?", k=3, subtree="No such concept")
    assert [h.id for h in none] == [h.id for h in plain]
    assert {h.matched_via for h in none} == {"fallback"}


def test_fallback_when_the_subtree_has_nothing_above_the_threshold(brt_home, embedder):
    mem = Memory("fallback")
    mem.add_many(
        [
            {
                "url": "https://x.test/cls",
                "text": "Cumulative layout shift measures unexpected movement of "
                "visible page content; reserve space for images to keep it below 0.1.",
            },
            {
                "url": "https://x.test/cat",
                "text": "Cats sleep for most of the day and groom their fur with "
                "rough tongues; kittens play with string.",
            },
        ]
    )
    cat_chunk = mem.page("https://x.test/cat").chunk_ids[0]
    ptr.write_pointers(
        mem.path, [ptr.PointerRow("c_pets", "Pets", cat_chunk, "https://x.test/cat", ["c_pets"], ["Pets"])]
    )
    hits = mem.search("How do I reduce layout shift?", k=2, subtree="Pets", min_score=0.3)
    assert hits and hits[0].metadata["url"] == "https://x.test/cls"
    assert {h.matched_via for h in hits} == {"fallback"}
    inside = mem.search("Why do cats groom their fur?", k=2, subtree="Pets", min_score=0.3)
    assert [h.id for h in inside] == [cat_chunk] and inside[0].matched_via == "concept"


def test_reharvest_leaves_no_pointer_to_a_removed_chunk(brt_home, embedder):
    mem = Memory("closets")
    pages = demo_pages()
    mem.add_many(pages)
    update_from_store(mem, SECTIONS)
    cls = next(p for p in pages if p["url"].endswith("/lcp.html"))
    old_ids = set(mem.page(cls["url"]).chunk_ids)
    assert any(r.url == cls["url"] for r in ptr.read_pointers(mem.path))
    changed = dict(
        cls,
        text="Cumulative Layout Shift was rewritten.\n\nLayout stability now has a new "
        "guide: reserve space for every advert slot and never insert banners above content.",
    )
    mem.add_many([changed])
    # the closets rule: storing the page again purged its pointers at once ...
    assert not any(r.url == cls["url"] for r in ptr.read_pointers(mem.path))
    new_ids = set(mem.page(cls["url"]).chunk_ids)
    removed = old_ids - new_ids - {c for p in mem.pages() for c in p.chunk_ids}
    assert removed
    # ... and the next update rebuilds them from the current chunks only
    _, rep = update_from_store(mem, SECTIONS)
    assert rep.pages_changed == 1 and not rep.skipped
    rows = ptr.read_pointers(mem.path)
    live = {c for p in mem.pages() for c in p.chunk_ids}
    assert rows and {r.chunk_id for r in rows} <= live
    assert not {r.chunk_id for r in rows} & removed
    assert any(r.url == cls["url"] and r.chunk_id in new_ids for r in rows)


def test_graph_survives_reopening_and_appears_in_the_snapshot(built, tmp_path):
    mem, ci, _ = built
    again = ConceptIndex(memory=Memory("cidemo", basepath=mem.path.parent, create=False))
    assert set(again.nodes()) == set(ci.nodes())
    assert {(u, v, d["type"]) for u, v, d in again.G.edges(data=True)} == {
        (u, v, d["type"]) for u, v, d in ci.G.edges(data=True)
    }
    assert again.resolve_path("How do I minimise cumulative layout shift?") is not None
    # an unchanged store is not rebuilt
    _, rep = update_from_store(again.memory, SECTIONS)
    assert rep.skipped
    from concept_index import snapshot_records

    out = tmp_path / "snap.jsonl"
    manifest = mem.snapshot(out, extra_records=snapshot_records(mem), include_vectors=False)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    kinds = {r["type"] for r in records}
    assert {"concept", "edge", "concept_event"} <= kinds
    assert manifest["counts"]["concept"] == len(ci)
    ev = next(r for r in records if r["type"] == "concept_event")
    assert {"time", "action", "from", "to", "reason", "scores"} <= set(ev)


def test_cli_concepts_and_subtree_search(brt_home, embedder, tmp_path):
    from click.testing import CliRunner

    from orchestrator.cli import cli
    from orchestrator.config import memory_basepath

    charter = tmp_path / "c.yaml"
    charter.write_text(
        "id: clidemo\ntitle: CWV\nallowed_domains: [127.0.0.1]\nseeds: ['http://127.0.0.1:8765/index.html']\n"
        "outputs:\n  doc: out/r.md\n  sections:\n"
        "    - title: CLS mitigation\n      question: How do I minimise cumulative layout shift?\n"
        "      concept: Performance > Core Web Vitals > CLS\n"
        "    - title: HTTP/3 adoption\n"
    )
    mem = Memory("clidemo", basepath=memory_basepath())
    mem.add_many(demo_pages())
    runner = CliRunner()
    res = runner.invoke(cli, ["concepts", str(charter), "--format", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    paths = {n["path"] for n in doc["nodes"]}
    assert "Performance > Core Web Vitals > CLS" in paths
    for fmt, start in (("tree", "root"), ("mermaid", "flowchart TD"), ("dot", "digraph")):
        out = runner.invoke(cli, ["concepts", str(charter), "--format", fmt])
        assert out.exit_code == 0 and out.output.startswith(start)
    res = runner.invoke(
        cli,
        [
            "search",
            str(charter),
            "reserve space for images",
            "--subtree",
            "Performance > Core Web Vitals > CLS",
            "--json",
            "--min-score",
            "0.2",
        ],
    )
    assert res.exit_code == 0, res.output
    hits = json.loads(res.output)["hits"]
    under = set(ptr.chunk_ids_under(mem.path, "Performance > Core Web Vitals > CLS"))
    assert hits and all(h["matched_via"] == "concept" and h["id"] in under for h in hits)
    res = runner.invoke(
        cli, ["search", str(charter), "reserve space for images", "--subtree", "Nothing here", "--json"]
    )
    assert {h["matched_via"] for h in json.loads(res.output)["hits"]} == {"fallback"}
    # synthesize routes each section and draws the concepts it used
    from orchestrator.charter import load_charter
    from orchestrator.synthesize import synthesize

    result = synthesize(load_charter(charter), out=tmp_path / "r.md")
    assert "```mermaid" in result.markdown and "flowchart TD" in result.markdown
    assert result.sections[0].blocks
