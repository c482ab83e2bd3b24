"""What a synthesis produces: evidence blocks (a verbatim quote, its URL and last-updated date,
and the other pages that state the same, ``also_at``), gaps, sections and the whole result with its JSON
document (docs/contracts.md, "Evidence blocks"). Plain records: no retrieval, no model."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..synthesis_record import SynthesisRecord
    from .judge.acceptance import Verdict
    from .judge.conflicts import Agreement, Conflict

__all__ = ["ADDED_MARK", "EvidenceBlock", "Gap", "SectionResult", "Source", "SynthesisResult", "acceptance_summary",
           "display_url", "origin_mark"]

#: What every evidence line, report and verdict says after a source that no server response proves: a page an
#: agent added with ``add_page`` (its ``origin`` is ``"add_page"``), not one a harvest read.
ADDED_MARK = "added without a harvest"


def origin_mark(origin: str | None) -> str:
    """`` (added without a harvest)`` for a page added with add_page, else empty."""
    return f" ({ADDED_MARK})" if origin == "add_page" else ""


@dataclass
class EvidenceBlock:
    label: str
    n: int
    quote: str
    url: str
    last_updated: str | None
    score: float  # the evidence scorer's probability that the quote answers the section's question
    chunk_id: str
    query: str
    heading: bool = False  # the quote is a heading or headline of the page that states the answer
    also_at: list[Source] = field(default_factory=list)  # other pages stating the same facts (merged blocks)
    origin: str = "harvest"  # how the cited page entered the store: "harvest" or "add_page" (marked)

    @property
    def markdown(self) -> str:
        from ..untrusted import evidence_line, markdown_escape  # security: quote escaped, one line one block

        line = evidence_line(self.label, self.n, self.quote, display_url(self.url), self.last_updated)
        line += origin_mark(self.origin)
        for src in self.also_at:
            line += (
                f"; also at {markdown_escape(display_url(src.url))}"
                f" (last updated: {markdown_escape(src.last_updated or 'unknown')}){origin_mark(src.origin)}"
            )
        return line


@dataclass
class Source:
    """Another page whose chunk states what a block's quote states (the block is printed once, with both)."""

    url: str
    last_updated: str | None
    chunk_id: str
    quote: str
    score: float
    origin: str = "harvest"  # as EvidenceBlock.origin


@dataclass
class Gap:
    label: str
    question: str
    searched_chunks: int
    searched_pages: int
    reason: str | None = None  # why nothing was evidence, when there is more to say than the threshold

    @property
    def markdown(self) -> str:
        from ..untrusted import gap_line

        return gap_line(self.label, self.question, self.searched_chunks, self.searched_pages)


@dataclass
class SectionResult:
    title: str
    label: str
    question: str
    queries: list[str]
    blocks: list[EvidenceBlock] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)

    @property
    def answered(self) -> bool:
        return bool(self.blocks)


@dataclass
class SynthesisResult:
    charter_id: str
    title: str
    sections: list[SectionResult]
    min_score: float
    model: str
    generated_at: str
    t_synth_s: float
    markdown: str = ""
    doc_path: Path | None = None
    json_path: Path | None = None
    # audit (issue 14): set by orchestrator.evidence.judge.synthesis.audit_synthesis
    acceptance: list[Verdict] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    agreements: list[Agreement] = field(default_factory=list)

    def record(self) -> SynthesisRecord:
        """The synthesis as its one typed record (``synthesis_record``): what its JSON, the store, the snapshot
        and every report are made of."""
        from ..synthesis_record import (
            AgreementRecord,
            BlockRecord,
            ConflictRecord,
            GapRecord,
            SectionRecord,
            SourceRecord,
            SynthesisRecord,
            VerdictRecord,
        )

        def block(b: EvidenceBlock) -> BlockRecord:
            also = [SourceRecord(a.url, a.last_updated, a.chunk_id, a.quote, round(a.score, 4), a.origin)
                    for a in b.also_at]
            return BlockRecord(b.n, b.chunk_id, b.url, b.last_updated, round(b.score, 4), b.quote, b.query, b.heading,
                               b.origin, also, b.markdown)

        sections = [
            SectionRecord(s.title, s.label, s.question, s.queries, [block(b) for b in s.blocks],
                          [GapRecord(g.label, g.question, g.searched_chunks, g.searched_pages, g.reason, g.markdown)
                           for g in s.gaps])
            for s in self.sections
        ]
        # the judgements (evidence/judge) write their own JSON; the record reads it, marks kept
        return SynthesisRecord(
            self.charter_id, self.title, self.generated_at, self.model, self.min_score, round(self.t_synth_s, 3),
            sections,
            [VerdictRecord.from_json(v.to_json()) for v in self.acceptance],
            acceptance_summary(self.acceptance),
            [ConflictRecord.from_json(c.to_json()) for c in self.conflicts],
            [AgreementRecord.from_json(a.to_json()) for a in self.agreements],
        )

    def to_json(self) -> dict[str, Any]:
        """The JSON ``brt synthesize --json`` prints and the synthesis writes beside its Markdown."""
        return self.record().to_json()


def acceptance_summary(acceptance: list[Any]) -> dict[str, int]:
    """How many acceptance criteria are covered, partly covered and not covered."""
    from ..untrusted import trusted

    out = {"covered": 0, "partial": 0, trusted("not covered"): 0}  # brt's own words (an agent reads them bare)
    for v in acceptance:
        out[v.verdict] = out.get(v.verdict, 0) + 1
    return out


def display_url(url: str) -> str:
    """A URL without its scheme and without userinfo (``user:pass@``), as evidence blocks print it."""
    from ..url_safety import display  # security: never cite credentials or a spoofed user@ name

    return display(url)
