"""The small hooks synthesis, harvest and clean call (each marked "audit" at its call site).

- ``mark_origins``: which cited pages were added without a harvest (``add_page``);
- ``audit_synthesis``: acceptance verdicts, conflicts and agreements of a finished synthesis;
- ``section_lines`` / ``acceptance_lines``: their Markdown;
- ``after_synthesis``: the store keeps the result (``trail.record_synthesis``);
- ``after_harvest_start``: the store keeps the charter a harvest uses (``trail.record_charter``);
- ``clean_records``: the audit trail's snapshot records (``trail.snapshot_records``).

None of them may stop the stage that calls it, except ``audit_synthesis``, whose failure would hide a broken
judge: it raises.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, is_dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory_store import Memory

    from ..charter import Charter
    from ..evidence import SectionResult, SynthesisResult

log = logging.getLogger(__name__)


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
    from ..harvest.journal import ADDED, HARVESTED, page_origins

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
        list(charter.acceptance), sections, memory.embedder, min_score=result.min_score
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
        from ..harvest.journal import ADDED, HARVESTED, page_origins

        origins = page_origins(memory.events())
        for claim in uncited:
            claim.origin = HARVESTED if origins.get(claim.url) == HARVESTED else ADDED


def section_lines(result: SynthesisResult, section: SectionResult) -> list[str]:
    """Markdown lines about conflicts and agreement between the section's sources (empty when none)."""
    from ..evidence.results import display_url, origin_mark
    from ..untrusted import markdown_escape as md  # values and quotes come from pages

    by_n = {b.n: b for b in section.blocks}
    lines: list[str] = []
    for c in getattr(result, "conflicts", []):
        if c.section != section.title:
            continue
        about = f" (about: {', '.join(md(w) for w in c.about)})" if c.about else ""
        sides = " vs ".join(f"{md(x.value)} (last updated: {md(x.last_updated or 'unknown')})" for x in (c.a, c.b))
        lines.append(f"[{section.label} Conflict] the sources disagree, newest first: {sides}{about}")
        for claim in (c.a, c.b):  # a block as printed above; a page no block cites: its sentence, URL and date
            block = by_n.get(claim.n) if claim.n else None
            date = md(claim.last_updated or "unknown")
            shown = block.markdown if block is not None else (
                f'"{md(claim.quote)}" — {md(display_url(claim.url))} (last updated: {date}){origin_mark(claim.origin)}'
            )
            lines.append(f"  - {shown}")
        lines.append("")
    agreements = [a for a in getattr(result, "agreements", []) if a.section == section.title]
    if agreements:
        said = "; ".join(
            f"{a.sources} sources agree on {md(a.value)} ({', '.join(f'#{n}' for n in a.blocks)})"
            for a in agreements
        )
        lines += [f"[{section.label} Agreement] {said}", ""]
    return lines


def acceptance_lines(charter: Charter, result: SynthesisResult) -> list[str]:
    """The "Acceptance criteria" section: each criterion with its verdict and the reason."""
    verdicts = getattr(result, "acceptance", [])
    if not charter.acceptance:
        return []
    lines = ["## Acceptance criteria", ""]
    if not verdicts:  # not judged (no audit hook ran)
        return lines + [f"- {a}" for a in charter.acceptance] + [""]
    for v in verdicts:
        lines.append(f"- **{v.verdict}**: {v.criterion} — {v.reason}")
    return lines + [""]


def after_synthesis(
    charter: Charter, result: SynthesisResult, memory: Memory, routes: dict[int, str | None] | None = None
) -> None:
    """Keep the synthesis in the store for /clean's snapshot; never fails the synthesis."""
    from .trail import record_synthesis

    try:
        record_synthesis(charter, result, memory, routes)
    except Exception:  # the outputs are written; only the snapshot's copy is missing
        log.exception("cannot keep the synthesis of %s in its store", charter.id)


def after_harvest_start(charter: Charter, memory: Memory) -> None:
    """Keep the charter a harvest uses in the store; never fails the harvest."""
    from .trail import record_charter

    try:
        record_charter(charter, memory, "harvest")
    except Exception:
        log.exception("cannot keep the charter of %s in its store", charter.id)


def clean_records(charter: Charter, memory: Memory, *, vectors: bool) -> list[dict[str, Any]]:
    from .trail import snapshot_records

    return snapshot_records(charter, memory, vectors=vectors)
