"""Every charter field does what it says, where its effect needs real components: a harvest (real Chromium when
a page is rendered, the real model, a real LanceDB), a search or a synthesis of a real store, a clean, the object
store, Ray. Each row changes one field from the test's base charter and shows that what the field governs
changes. The pure-logic fields, and the check that every field of the schema has a row, are in
tests/unit/test_charter_fields.py (``INTEGRATION`` there names the fields of this file).

``memory.enabled: false`` is walked in full here too: a harvest that keeps the pages' text in a snapshot and
writes no store, says so, is refused by what needs a store, and can be restored into one."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pytest

from orchestrator.config import open_memory, store_exists
from orchestrator.harvest import harvest
from tests.unit.test_charter_fields import INTEGRATION

pytestmark = [pytest.mark.browser, pytest.mark.model]

SECTION = {"title": "Lamp", "label": "LAMP", "question": "When was the lighthouse lamp converted to electricity?"}


def _path(url: str | None) -> str:
    return urlsplit(url or "").path.lstrip("/")


def _stored(report, mem, site=None) -> list[str]:
    return sorted(_path(e["final_url"] or e["url"]) for e in report.events if e["outcome"] == "stored")


def _outcome(path: str) -> Callable[[Any, Any, Any], str]:
    def observe(report, mem, site) -> str:
        return next((f"{e['outcome']}: {e['reason']}" for e in report.events if _path(e["url"]) == path), "none")

    return observe


def _peak_in_flight(report, mem, site) -> int:
    """The most page requests the slow site had in flight at once (each answers after ``delay_s``)."""
    with site.lock:
        starts = sorted(t for t, path in site.log if path.startswith("/page/"))
    return max(sum(1 for u in starts if t - site.delay_s * 0.9 < u <= t) for t in starts)


def _js_text(report, mem, site) -> bool:
    from tests.sites.js import MARKERS

    page = mem.page(site.url("script-text.html"))
    return page is not None and MARKERS["script-text.html"] in page.text


def _kept(report, mem, site) -> tuple[bool, bool]:
    return report.kept is not None, store_exists(report.charter)


def _concepts(report, mem, site) -> int:
    from concept_index import ConceptIndex

    return len(ConceptIndex(memory=mem))


@dataclass
class HarvestRow:
    """A harvest of ``site`` under the base charter (``base`` applied) and under one with ``field`` changed."""

    value: Any  # the other value (a callable of the site: a value that names its URLs)
    observe: Callable[[Any, Any, Any], Any]
    site: str = "pages"
    base: dict[str, Any] | None = None  # harvest: settings of both charters
    seeds: Callable[[Any], list[str]] | None = None
    site_options: dict[str, Any] | None = None


HARVEST: dict[str, HarvestRow] = {
    "seeds": HarvestRow(lambda s: [s.url("b.html")], _stored),
    "harvest.max_pages": HarvestRow(2, lambda r, m, s: len(_stored(r, m))),
    "harvest.max_depth": HarvestRow(0, _stored),
    "harvest.concurrency": HarvestRow(4, lambda r, m, s: _peak_in_flight(r, m, s) > 1, site="slow",
                                      base={"concurrency": 1, "per_domain_concurrency": 4},
                                      site_options={"pages": 6, "delay_s": 0.6}),
    "harvest.timeout_s": HarvestRow(1, _outcome("page/0.html"), site="slow", base={"timeout_s": 10},
                                    site_options={"pages": 1, "delay_s": 2.5}),
    "harvest.obey_robots": HarvestRow(False, _outcome("b.html")),
    "harvest.javascript": HarvestRow(False, _js_text, site="js", base={"max_depth": 0},
                                     seeds=lambda s: [s.url("script-text.html")]),
    "harvest.render": HarvestRow("always", lambda r, m, s: sorted(e["rendered"] for e in r.events),
                                 base={"max_depth": 0}),
    "harvest.block_resources": HarvestRow([], lambda r, m, s: r.aborted_requests,
                                          base={"max_depth": 0, "render": "always"},
                                          seeds=lambda s: [s.url("slow.html")]),
    "memory.enabled": HarvestRow(False, _kept, base={"max_depth": 0}),
    "memory.use_concept_index": HarvestRow(True, _concepts),
}


def _charter(make_charter, site, charter_id: str, row: HarvestRow, field: str, other: bool):
    harvest_opts = dict(row.base or {})
    memory: dict[str, Any] = {"use_concept_index": False}
    seeds = row.seeds(site) if row.seeds else None
    if other:
        value = row.value(site) if callable(row.value) else row.value
        section, key = field.split(".", 1) if "." in field else ("", field)
        if field == "seeds":
            seeds = value
        elif section == "harvest":
            harvest_opts[key] = value
        else:
            memory[key] = value
    return make_charter(site, seeds=seeds, charter_id=charter_id, memory=memory, **harvest_opts)


@pytest.mark.parametrize("field", sorted(HARVEST))
def test_a_harvest_field_changes_the_harvest(field, local_site, make_charter, brt_home, embedder):
    row = HARVEST[field]
    observed = []
    for other in (False, True):
        site = local_site(row.site, **(row.site_options or {}))
        if field == "harvest.obey_robots":
            site.write("robots.txt", "User-agent: *\nDisallow: /b.html\n")
        charter = _charter(make_charter, site, f"field_{'b' if other else 'a'}", row, field, other)
        report = harvest(charter)
        report.charter = charter  # for the observers that look the store up
        mem = open_memory(charter, create=False) if charter.memory.enabled else None
        observed.append(row.observe(report, mem, site))
        site.stop()
    assert observed[0] != observed[1], (field, observed)


# -- a store: search, synthesis, clean -------------------------------------------------------------------------


@pytest.fixture
def store(local_site, make_charter, brt_home, embedder):
    """A store of the pages site, and a factory of charters over it (the base one, or one with a field changed)."""
    site = local_site()

    def charter_with(field: str | None = None, value: Any = None, *, base: dict[str, Any] | None = None, **options):
        extra: dict[str, Any] = {}
        retrieval = dict((base or {}).get("retrieval", {}))
        memory = {"use_concept_index": bool(options.pop("concepts", False))}
        sections = [dict(SECTION)]
        acceptance = ["The year the lamp was electrified is cited"]
        goal = None
        if field is not None:
            where, key = field.split(".", 1) if "." in field else ("", field)
            if where == "retrieval":
                retrieval[key] = value
            elif where == "memory":
                memory[key] = value
            elif field.startswith("outputs.sections[]."):
                sections[0][field.rsplit(".", 1)[1]] = value
            elif field == "acceptance":
                acceptance = value
            elif field == "notes" and value is not None:
                extra["notes"] = value
        return make_charter(site, charter_id="field_store", goal=goal, sections=sections, memory=memory,
                            retrieval=retrieval, extra={"acceptance": acceptance, **extra}, **options)

    first = charter_with(concepts=True)
    harvest(first)
    return charter_with


def _synthesis(charter, tmp_path):
    from orchestrator.synthesize import synthesize

    result = synthesize(charter, out=tmp_path / f"{charter.id}.md")
    section = result.sections[0]
    return result, section


def _search(charter, query: str = "When was the lamp converted to electricity?", k: int = 3):
    from orchestrator.service import search

    try:
        hits = search(charter, query, k=k)
    except Exception as exc:  # noqa: BLE001 - a setting may make the search refuse: that is its behaviour too
        return f"{type(exc).__name__}: {exc}"
    return [(h.id, round(float(h.score), 4), h.metadata["retrieval"]["fused"]) for h in hits]


SEARCH: dict[str, tuple[Any, Any, dict[str, Any], Callable[[Any], Any]]] = {
    # field: (base value, other value, base retrieval settings of both, observe(charter))
    "retrieval.mode": ("hybrid", "bm25", {}, lambda c: _search(c, "beacon switched to mains power")),
    "retrieval.candidates": (20, 3, {"mmr_lambda": 0.3}, _search),  # the pool MMR picks from
    "retrieval.rerank": (False, True, {}, _search),
    "retrieval.reranker_model": (None, "no-such-org/no-such-reranker", {"rerank": True}, _search),
    # hits are listed by score: MMR shows in which ones a cut below the pool keeps
    "retrieval.mmr_lambda": (None, 0.0, {}, lambda c: _search(c, k=2)),
}


@pytest.mark.parametrize("field", sorted(SEARCH))
def test_a_retrieval_field_changes_the_search(field, store):
    base_value, value, base, observe = SEARCH[field]
    retrieval = dict(base)
    a = store(field, base_value, base={"retrieval": retrieval})
    b = store(field, value, base={"retrieval": retrieval})
    assert observe(a) != observe(b), field


SYNTHESIS: dict[str, tuple[Any, Any, Callable[[Any, Any], Any]]] = {
    # field: (base value, other value, observe(result, section)); min_score 0.01 lets every candidate through
    "retrieval.k": (5, 1, lambda r, s: len(s.blocks)),
    "retrieval.min_score": (0.01, 0.999, lambda r, s: s.answered),
    "outputs.sections[].title": ("Lamp", "Beacon", lambda r, s: r.markdown.splitlines()[4:6]),
    "outputs.sections[].label": ("LAMP", "BEACON", lambda r, s: [b.markdown.split("]")[0] for b in s.blocks]),
    "outputs.sections[].question": (SECTION["question"], "How far away can the lamp be seen?",
                                    lambda r, s: (s.queries, [b.quote for b in s.blocks])),
    "acceptance": (["The year the lamp was electrified is cited"], ["The tide tables are quoted", "A ferry is named"],
                   lambda r, s: [str(getattr(v, "criterion", v)) for v in r.acceptance]),
}


@pytest.mark.parametrize("field", sorted(SYNTHESIS))
def test_a_synthesis_field_changes_the_synthesis(field, store, tmp_path):
    base_value, value, observe = SYNTHESIS[field]
    retrieval = {"min_score": 0.01} if field != "retrieval.min_score" else {}
    observed = []
    for v in (base_value, value):
        charter = store(field, v, base={"retrieval": retrieval})
        observed.append(observe(*_synthesis(charter, tmp_path)))
    assert observed[0] != observed[1], (field, observed)


def test_a_section_concept_hint_changes_its_route(store):
    from orchestrator.synthesize import concept_routes

    routes = []
    for concept in (None, "Ferry"):
        charter = store("outputs.sections[].concept", concept, concepts=True)
        _, r = concept_routes(charter, open_memory(charter, create=False))
        routes.append(r)
    assert routes[0] and routes[0] != routes[1], routes


def test_notes_are_shown_in_the_report(store, tmp_path):
    """``notes``: free text for the charter's readers, printed under the goal in ``brt report`` (Markdown and
    HTML)."""
    from orchestrator.audit.report import report

    texts = []
    for i, notes in enumerate((None, "Checked against the harbour office's notice board.")):
        charter = store("notes", notes, path=f"notes_{i}.yaml")
        _synthesis(charter, tmp_path)
        texts.append((report(charter.source, fmt="md").text, report(charter.source, fmt="html").text))
    assert texts[0] != texts[1]
    assert "Notes: Checked against the harbour office" in texts[1][0] and "notice board" in texts[1][1]
    assert "Notes:" not in texts[0][0]


def test_persist_keeps_the_store_a_clean_would_destroy(store, tmp_path):
    from orchestrator.clean import clean

    kept = store("memory.persist", True)
    clean(kept, snapshot=tmp_path / "kept.jsonl")
    assert store_exists(kept)
    destroyed = store("memory.persist", False)
    clean(destroyed, snapshot=tmp_path / "gone.jsonl")
    assert not store_exists(destroyed)


def test_storage_options_reach_the_object_store(s3_server, s3_store, make_charter, brt_home, tmp_path):
    """The same store URI with the charter's storage_options and with another endpoint in them: the object store
    answers, or nothing does (the options are what the store connects with)."""
    from memory_store import MemoryStoreError

    uri, opts, _bucket, _prefix = s3_store
    seen = []
    for options in (opts, {**opts, "aws_endpoint": "http://127.0.0.1:9"}):
        charter = make_charter(["http://127.0.0.1:9/"], charter_id="field_s3",
                               memory={"uri": uri, "storage_options": options})
        try:
            seen.append(store_exists(charter))
        except (MemoryStoreError, OSError) as exc:
            seen.append(type(exc).__name__)
    assert seen[0] is False and seen[0] != seen[1], seen


def test_ray_embedders_start_that_many_embedding_workers(make_charter, brt_home, embedder):
    pytest.importorskip("ray")
    import asyncio

    from orchestrator.harvest.ray_engine import ray_session

    sizes = []
    for n in (1, 2):
        charter = make_charter(["http://127.0.0.1:9/"], charter_id=f"field_ray_{n}", engine="ray",
                               ray={"workers": 1, "embedders": n})
        mem = open_memory(charter)

        async def pool_size(charter=charter, mem=mem) -> int:
            async with ray_session(charter, mem, "local"):
                return len(mem.loaded_embedder.actors)

        sizes.append(asyncio.run(pool_size()))
    assert sizes == [1, 2]


def test_fields_of_this_file_are_the_unit_tables_integration_fields():
    here = set(HARVEST) | set(SEARCH) | set(SYNTHESIS) | {
        "outputs.sections[].concept", "notes", "memory.persist", "memory.storage_options", "harvest.ray.embedders"}
    assert here == set(INTEGRATION)


# -- memory.enabled: false, end to end ------------------------------------------------------------------------


def test_memory_disabled_keeps_the_pages_without_a_store(local_site, make_charter, brt_home, tmp_path):
    """No model loaded, no store written; the pages' text, the events and the HAR kept in a snapshot that
    ``brt verify`` passes; what needs a store says why it has none; ``brt restore`` builds one from the kept
    snapshot, and it answers searches."""
    from memory_store import embeddings
    from orchestrator.audit.restore import restore
    from orchestrator.audit.verify import verify
    from orchestrator.errors import MemoryDisabled
    from orchestrator.service import search
    from orchestrator.synthesize import synthesize

    site = local_site()
    charter = make_charter(site, charter_id="no_store", memory={"enabled": False, "use_concept_index": True})
    loaded_before = set(embeddings._cache)
    report = harvest(charter)
    assert set(embeddings._cache) == loaded_before  # nothing loaded the embedding model
    assert report.kept is not None and report.chunks_total == report.chunks_embedded == 0
    assert "memory disabled" in report.summary() and str(report.kept.snapshot) in report.summary()
    stored = [e for e in report.events if e["outcome"] == "stored"]
    assert len(stored) >= 4 and report.kept.pages == len(stored)
    assert not store_exists(charter) and not (brt_home / "memory" / "no_store").exists()
    assert not list((brt_home / "tmp").iterdir())  # the run's working folder is gone

    lines = [json.loads(x) for x in report.kept.snapshot.read_text().splitlines()]
    pages = {_path(r["final_url"]): r for r in lines if r["type"] == "page"}
    assert "1953" in pages["a.html"]["text"] and pages["a.html"]["chunk_ids"] == []
    assert lines[0]["counts"]["chunk"] == 0 and lines[0]["counts"]["harvest_event"] == len(report.events)
    assert report.kept.har is not None and report.kept.har.is_file()
    verdict = verify(report.kept.snapshot)
    assert verdict.ok, verdict.failures
    assert verdict.checked.get("provenance") == len(stored)  # each kept page against its record in the HAR
    assert not [w for w in verdict.warnings if w.check == "provenance"], verdict.warnings

    for call in (lambda: search(charter, "lamp"), lambda: synthesize(charter), lambda: open_memory(charter)):
        with pytest.raises(MemoryDisabled, match="memory.enabled: false"):
            call()

    restored = restore(report.kept.snapshot, new_id="no_store_restored", charter_out=tmp_path / "restored.yaml")
    assert restored.pages == len(stored) and restored.reembedded > 0
    from memory_store import Memory

    mem = Memory("no_store_restored", basepath=brt_home / "memory", create=False)
    hits = mem.search("When was the lighthouse lamp converted to electricity?", k=2)
    assert hits and _path(hits[0].url) in pages
