"""Synthesis: each output section of a charter answered from its store with evidence blocks (verbatim quotes with
URL and last-updated date) or a Gap; the Markdown and JSON written beside each other. How evidence is chosen is
``orchestrator/evidence/``; this module runs it over a charter."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_store.clock import now

from .api import make_module_callable
from .evidence import (
    EvidenceBlock,
    Gap,
    QueryGenerator,
    SectionResult,
    Source,
    SynthesisCache,
    SynthesisResult,
    display_url,
    load_scorer,
    signature_queries,
    synthesize_section,
)
from .evidence.render import concept_diagram, render_markdown
from .evidence.scorer import evidence_threshold as resolve_threshold
from .formats import suffix
from .synthesis_record import Recorded

if TYPE_CHECKING:
    from memory_store import Memory

    from .charter import Charter

__all__ = [
    "EvidenceBlock", "Gap", "SectionResult", "Source", "SynthesisResult", "display_url", "evidence_threshold",
    "render_markdown", "signature_queries", "synthesize", "synthesize_section",
]

log = logging.getLogger(__name__)


def evidence_threshold(charter: Charter) -> float:
    """The bar a charter's sections' first blocks must reach (``orchestrator.evidence.scorer.evidence_threshold``
    of its ``retrieval.min_score``)."""
    return resolve_threshold(charter.retrieval.min_score)


# -- concept index routing ----------------------------------------------------------------------------------


def concept_routes(charter: Charter, memory: Memory) -> tuple[Any, dict[int, str | None]]:
    """When ``memory.use_concept_index`` is on and the store has a concept index: the concept path of each
    section (index -> path), from its ``concept`` hint or else the resolved path of its question. Sections
    without a route search the whole store; a routed section falls back to it when its subtree has nothing
    above the threshold (Memory.search)."""
    if not charter.memory.use_concept_index:
        return None, {}
    try:
        from concept_index import ConceptIndex

        ci = ConceptIndex(memory=memory)
        if len(ci) <= 1:
            return None, {}
        routes = {
            i: ci.resolve_path(s.concept or s.effective_question) for i, s in enumerate(charter.outputs.sections)
        }
    except Exception:  # the index only routes; the store stays authoritative
        log.exception("concept routing unavailable for %s", charter.id)
        return None, {}
    log.info("concept routes of %s: %s", charter.id, routes)
    return ci, routes


def synthesize(
    charter: Charter,
    *,
    out: str | Path | None = None,
    memory: Memory | None = None,
    query_generator: QueryGenerator | None = None,
    within: list[Path] | None = None,
) -> SynthesisResult:
    """Answer every output section of ``charter`` from its store; write the Markdown and the JSON beside it
    (``files.write_file``: a symlink at either path is replaced, never followed; ``within``: the folders an
    agent's path was confined to, no symlinked folder below them).

    Raises memory_store.StoreNotFound when the charter was never harvested."""
    from .config import open_memory

    started = time.perf_counter()
    mem = memory if memory is not None else open_memory(charter, create=False)
    scorer = load_scorer()
    min_score = resolve_threshold(charter.retrieval.min_score, scorer)
    ci, routes = concept_routes(charter, mem)
    cache = SynthesisCache.for_memory(mem)  # sentence vectors and page positions shared by all sections
    sections = [
        synthesize_section(
            mem,
            s,
            k=charter.retrieval.k,
            min_score=min_score,
            subtree=routes.get(i),
            retrieval=charter.retrieval,
            query_generator=query_generator,
            cache=cache,
            scorer=scorer,
        )
        for i, s in enumerate(charter.outputs.sections)
    ]
    result = SynthesisResult(
        charter_id=charter.id,
        title=charter.title,
        sections=sections,
        min_score=min_score,
        model=mem.model_name,
        generated_at=now(),
        t_synth_s=0.0,
    )
    from .evidence.judge.synthesis import audit_synthesis, mark_origins
    from .trail.hooks import after_synthesis

    mark_origins(result, mem)  # pages added without a harvest are marked wherever they are cited
    audit_synthesis(charter, result, mem, cache)  # acceptance verdicts, conflicts between sources
    result.markdown = render_markdown(charter, result) + concept_diagram(ci, routes)
    from .files import write_file

    doc = Path(out) if out is not None else charter.doc_path
    write_file(doc, result.markdown, within=within)
    result.t_synth_s = time.perf_counter() - started
    record = result.record()  # the one record: the JSON file, the store, the snapshot, the reports
    json_path = doc.with_suffix(suffix("json"))  # the JSON beside the Markdown (formats.SYNTHESIS_FORMATS)
    write_file(json_path, json.dumps(record.to_json(), indent=2, ensure_ascii=False) + "\n", within=within)
    result.doc_path, result.json_path = doc, json_path
    record.recorded = Recorded(doc_path=str(doc), json_path=str(json_path), markdown=result.markdown)
    after_synthesis(charter, record, mem, routes)  # the store keeps the record for /clean
    log.info("synthesized %d sections into %s", len(sections), doc)
    return result


make_module_callable(__name__, "synthesize")
