"""Concept index: insertion, DAG guard, promotion hysteresis, pointers (closets rule), subtree search with
fallback, persistence and snapshot records. Real model and real LanceDB on the bundled demo site's pages (the
detached DAG with hand-written vectors: tests/unit/test_concept_dag.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from concept_index import ConceptIndex, SectionSpec, render, update_from_store
from memory_store import Memory
from memory_store import pointers as ptr

DEMO_SITE = Path(__file__).resolve().parents[2] / "orchestrator" / "demo_site"
SECTIONS = [
    SectionSpec(
        "LCP threshold", "What Largest Contentful Paint time counts as good?", "Performance > Core Web Vitals > LCP"
    ),
    SectionSpec("CLS mitigation", "How do I minimise cumulative layout shift?", "Performance > Core Web Vitals > CLS"),
    SectionSpec("Lab versus field", "Why can't a Lighthouse lab test measure INP?"),
]


# -- on a real store ------------------------------------------------------------------------------------------


def demo_pages() -> list[dict]:
    from orchestrator.harvest.extract import extract_page

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
    hits = mem.search("How do I minimise cumulative layout shift?", k=50, subtree=path, min_similarity=0.0)
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
    hits = mem.search("How do I reduce layout shift?", k=2, subtree="Pets", min_similarity=0.3)
    assert hits and hits[0].metadata["url"] == "https://x.test/cls"
    assert {h.matched_via for h in hits} == {"fallback"}
    inside = mem.search("Why do cats groom their fur?", k=2, subtree="Pets", min_similarity=0.3)
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


def test_cli_concepts_and_subtree_search(brt_home, embedder, make_charter, tmp_path):
    from click.testing import CliRunner

    from orchestrator.cli import cli
    from orchestrator.config import memory_basepath

    charter = make_charter(
        ["http://127.0.0.1:8765/index.html"],
        path="c.yaml",
        charter_id="clidemo",
        title="CWV",
        goal=None,
        outputs={"doc": "out/r.md"},
        sections=[
            {
                "title": "CLS mitigation",
                "question": "How do I minimise cumulative layout shift?",
                "concept": "Performance > Core Web Vitals > CLS",
            },
            {"title": "HTTP/3 adoption"},
        ],
        memory={"use_concept_index": True},  # routing is opt-in since issue 10
        load=False,
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
            "--min-similarity",
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


def test_concept_labels_leave_the_embedders_counters_alone(tmp_path, embedder):
    """Concept labels are no store chunks: the texts and batches a harvest reports count chunks only, however the
    embedder batched the labels."""
    mem = Memory("cicount", basepath=tmp_path / "memory")
    mem.add_many(demo_pages()[:2])
    emb = mem.embedder
    before = (emb.texts_embedded, emb.batches)
    ci, _ = update_from_store(mem, SECTIONS)
    assert len(ci) > 3  # labels were embedded
    assert (emb.texts_embedded, emb.batches) == before
