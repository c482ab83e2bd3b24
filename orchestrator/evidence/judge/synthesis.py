"""The judgements of a finished synthesis, made before its Markdown is written:

- ``mark_origins``: which cited pages were added without a harvest (``add_page``);
- ``audit_synthesis``: acceptance verdicts, conflicts and agreements (their Markdown: ``evidence/render.py``).

``audit_synthesis`` raises on failure: a silent failure would hide a broken judge.
"""

from __future__ import annotations

from dataclasses import asdict, is_dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory_store import Memory

    from ...charter import Charter
    from ..results import SectionResult, SynthesisResult


def section_json(section: SectionResult) -> dict[str, Any]:
    """What the audit reads of a section result (robust to extra fields on blocks)."""
    return {
        "title": section.title,
        "label": section.label,
        "question": section.question,
        "blocks": [entry for b in section.blocks for entry in _block_entries(b)],
        "gaps": [asdict(g) if is_dataclass(g) else g for g in section.gaps],
    }


def _block_entries(block: Any) -> list[dict[str, Any]]:
    """A block, then each other page it cites (``also_at``: the same facts in that page's own words) under the
    block's number, so that agreement and conflicts count every page a block cites."""
    entries = [
        {
            "n": block.n,
            "quote": block.quote,
            "url": block.url,
            "last_updated": block.last_updated,
            "score": float(block.score),
            "chunk_id": block.chunk_id,
            "origin": getattr(block, "origin", "harvest"),
        }
    ]
    for source in getattr(block, "also_at", []) or []:
        entries.append(
            {
                "n": block.n,
                "quote": source.quote,
                "url": source.url,
                "last_updated": source.last_updated,
                "score": float(source.score),
                "chunk_id": source.chunk_id,
                "origin": getattr(source, "origin", "harvest"),
            }
        )
    return entries


def mark_origins(result: SynthesisResult, memory: Memory) -> None:
    """Set each block's and each ``also_at`` source's ``origin`` from the store's journal: a page an agent added
    with ``add_page`` (or one with no harvest on record) is ``"add_page"``, and every evidence line, report and
    verdict says so."""
    from ...harvest.journal import ADDED, HARVESTED, page_origins

    origins = page_origins(memory.events())
    for section in result.sections:
        for block in section.blocks:
            block.origin = HARVESTED if origins.get(block.url) == HARVESTED else ADDED
            for source in block.also_at:
                source.origin = HARVESTED if origins.get(source.url) == HARVESTED else ADDED


def audit_synthesis(charter: Charter, result: SynthesisResult, memory: Memory, cache: Any = None) -> None:
    """Judge the charter's acceptance criteria and find conflicts between sources (the blocks, and the other
    pages of the store that answer a section with a quantity its blocks state: ``counter.py``; ``cache``: the
    synthesis's ``SynthesisCache``, whose sentence vectors it reuses); sets ``result.acceptance``,
    ``result.conflicts`` and ``result.agreements``."""
    from .acceptance import judge_acceptance
    from .conflicts import SectionBlocks, find_conflicts, page_key
    from .counter import other_statements

    sections = [section_json(s) for s in result.sections]
    result.acceptance = judge_acceptance(
        list(charter.acceptance), sections, memory.feature_embedder, min_score=result.min_score
    )
    result.conflicts, result.agreements = find_conflicts(
        [
            SectionBlocks(s["title"], s["label"], s["blocks"], other_statements(
                memory, spec, s["blocks"], threshold=result.min_score, page_key=page_key, cache=cache))
            for spec, s in zip(charter.outputs.sections, sections, strict=True)
        ]
    )
    uncited = [claim for c in result.conflicts for claim in (c.a, c.b) if not claim.n]
    if uncited:  # a page no block cites (counter.py) is marked like a cited one when no harvest stored it
        from ...harvest.journal import ADDED, HARVESTED, page_origins

        origins = page_origins(memory.events())
        for claim in uncited:
            claim.origin = HARVESTED if origins.get(claim.url) == HARVESTED else ADDED
