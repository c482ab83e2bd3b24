"""One record of a synthesis (docs/contracts.md, "Evidence blocks"): its header facts, sections with their evidence
blocks and gaps, the acceptance verdicts, the conflicts and agreements between sources, and what the store keeps
beside them (``Recorded``: the charter's sha256, the concept routes, the files written, the Markdown).

The synthesis makes it (``evidence.SynthesisResult.record``), writes its JSON beside the Markdown and keeps it in
the store (``trail.store``); the snapshot carries that JSON, and every report reads it back with
:meth:`SynthesisRecord.from_json`. ``to_json`` writes the document ``brt synthesize --json`` prints, key for key;
``from_json`` reads one back (a snapshot's records are whatever its file says: a missing or mistyped field is read
as empty, never raises), and ``from_json(r.to_json()) == r``.

Strings keep their type: a verdict marked as brt's own words (``untrusted.trusted``) stays marked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "AgreementRecord", "BlockRecord", "ClaimRecord", "ConflictRecord", "GapRecord", "Recorded", "SectionRecord",
    "SourceRecord", "SupportRecord", "SynthesisRecord", "VerdictRecord",
]


def _str(value: Any) -> str | None:
    """A text field: None stays None; a string keeps its type (a ``Trusted`` mark); anything else as text."""
    if value is None or isinstance(value, str):
        return value
    return str(value)


def _text(value: Any) -> str:
    return _str(value) or ""


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return 0


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return 0.0


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _strs(value: Any) -> list[str]:
    return [_text(v) for v in _list(value)]


@dataclass
class SourceRecord:
    """Another page a block cites (``also_at``): it states the same facts in its own words."""

    url: str
    last_updated: str | None
    chunk_id: str | None
    quote: str
    score: float
    origin: str = "harvest"  # "add_page": added without a harvest

    def to_json(self) -> dict[str, Any]:
        return {"url": self.url, "last_updated": self.last_updated, "chunk_id": self.chunk_id, "quote": self.quote,
                "score": self.score, "origin": self.origin}

    @classmethod
    def from_json(cls, doc: Any) -> SourceRecord:
        d = _dict(doc)
        return cls(_text(d.get("url")), _str(d.get("last_updated")), _str(d.get("chunk_id")), _text(d.get("quote")),
                   _float(d.get("score")), _text(d.get("origin", "harvest")))


@dataclass
class BlockRecord:
    """An evidence block: a verbatim quote, its page and date; ``markdown`` its line as the synthesis wrote it."""

    n: int
    chunk_id: str | None
    url: str
    last_updated: str | None
    score: float
    quote: str
    query: str | None = None
    heading: bool = False
    origin: str = "harvest"
    also_at: list[SourceRecord] = field(default_factory=list)
    markdown: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"n": self.n, "chunk_id": self.chunk_id, "url": self.url, "last_updated": self.last_updated,
                "score": self.score, "quote": self.quote, "query": self.query, "heading": self.heading,
                "origin": self.origin, "also_at": [a.to_json() for a in self.also_at], "markdown": self.markdown}

    @classmethod
    def from_json(cls, doc: Any) -> BlockRecord:
        d = _dict(doc)
        return cls(_int(d.get("n")), _str(d.get("chunk_id")), _text(d.get("url")), _str(d.get("last_updated")),
                   _float(d.get("score")), _text(d.get("quote")), _str(d.get("query")), bool(d.get("heading")),
                   _text(d.get("origin", "harvest")),
                   [SourceRecord.from_json(a) for a in _list(d.get("also_at")) if isinstance(a, dict)],
                   _str(d.get("markdown")))


@dataclass
class GapRecord:
    """A section (or a part of it) with no evidence above the threshold."""

    label: str | None
    question: str | None
    searched_chunks: int
    searched_pages: int
    reason: str | None = None
    markdown: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "question": self.question, "searched_chunks": self.searched_chunks,
                "searched_pages": self.searched_pages, "reason": self.reason, "markdown": self.markdown}

    @classmethod
    def from_json(cls, doc: Any) -> GapRecord:
        d = _dict(doc)
        return cls(_str(d.get("label")), _str(d.get("question")), _int(d.get("searched_chunks")),
                   _int(d.get("searched_pages")), _str(d.get("reason")), _str(d.get("markdown")))


@dataclass
class SectionRecord:
    title: str | None
    label: str | None
    question: str | None
    queries: list[str] = field(default_factory=list)
    blocks: list[BlockRecord] = field(default_factory=list)
    gaps: list[GapRecord] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"title": self.title, "label": self.label, "question": self.question, "queries": self.queries,
                "blocks": [b.to_json() for b in self.blocks], "gaps": [g.to_json() for g in self.gaps]}

    @classmethod
    def from_json(cls, doc: Any) -> SectionRecord:
        d = _dict(doc)
        return cls(_str(d.get("title")), _str(d.get("label")), _str(d.get("question")), _strs(d.get("queries")),
                   [BlockRecord.from_json(b) for b in _list(d.get("blocks")) if isinstance(b, dict)],
                   [GapRecord.from_json(g) for g in _list(d.get("gaps")) if isinstance(g, dict)])


@dataclass
class SupportRecord:
    """A block that supports an acceptance criterion, with the match's parts."""

    section: str | None
    label: str | None
    n: int
    url: str
    match: float
    cosine: float
    keywords: float

    def to_json(self) -> dict[str, Any]:
        return {"section": self.section, "label": self.label, "n": self.n, "url": self.url, "match": self.match,
                "cosine": self.cosine, "keywords": self.keywords}

    @classmethod
    def from_json(cls, doc: Any) -> SupportRecord:
        d = _dict(doc)
        return cls(_str(d.get("section")), _str(d.get("label")), _int(d.get("n")), _text(d.get("url")),
                   _float(d.get("match")), _float(d.get("cosine")), _float(d.get("keywords")))


@dataclass
class VerdictRecord:
    """An acceptance criterion's verdict: covered, partial or not covered, and why."""

    criterion: str | None
    verdict: str | None
    reason: str | None
    kind: str | None = None  # evidence | gap
    subjects: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    support: list[SupportRecord] = field(default_factory=list)
    gap_sections: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"criterion": self.criterion, "verdict": self.verdict, "reason": self.reason, "kind": self.kind,
                "subjects": self.subjects, "missing": self.missing, "support": [s.to_json() for s in self.support],
                "gap_sections": self.gap_sections}

    @classmethod
    def from_json(cls, doc: Any) -> VerdictRecord:
        d = _dict(doc)
        return cls(_str(d.get("criterion")), _str(d.get("verdict")), _str(d.get("reason")), _str(d.get("kind")),
                   _strs(d.get("subjects")), _strs(d.get("missing")),
                   [SupportRecord.from_json(s) for s in _list(d.get("support")) if isinstance(s, dict)],
                   _strs(d.get("gap_sections")))


@dataclass
class ClaimRecord:
    """One side of a conflict: a block's statement (``n``) or a sentence of a page no block cites (``n`` 0)."""

    n: int
    url: str
    last_updated: str | None
    value: str | None
    quote: str | None
    origin: str = "harvest"
    chunk_id: str | None = None  # written only when set

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"n": self.n, "url": self.url, "last_updated": self.last_updated, "value": self.value,
                               "quote": self.quote, "origin": self.origin}
        if self.chunk_id is not None:
            doc["chunk_id"] = self.chunk_id
        return doc

    @classmethod
    def from_json(cls, doc: Any) -> ClaimRecord:
        d = _dict(doc)
        return cls(_int(d.get("n")), _text(d.get("url")), _str(d.get("last_updated")), _str(d.get("value")),
                   _str(d.get("quote")), _text(d.get("origin", "harvest")), _str(d.get("chunk_id")))


@dataclass
class ConflictRecord:
    section: str | None
    label: str | None
    kind: str | None
    about: list[str]
    a: ClaimRecord
    b: ClaimRecord

    def to_json(self) -> dict[str, Any]:
        return {"section": self.section, "label": self.label, "kind": self.kind, "about": self.about,
                "a": self.a.to_json(), "b": self.b.to_json()}

    @classmethod
    def from_json(cls, doc: Any) -> ConflictRecord:
        d = _dict(doc)
        return cls(_str(d.get("section")), _str(d.get("label")), _str(d.get("kind")), _strs(d.get("about")),
                   ClaimRecord.from_json(d.get("a")), ClaimRecord.from_json(d.get("b")))


@dataclass
class AgreementRecord:
    """Pages of one section that state the same value (``sources`` of them, cited by ``blocks``)."""

    section: str | None
    label: str | None
    kind: str | None
    value: str | None
    about: list[str] = field(default_factory=list)
    sources: int = 0
    blocks: list[int] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"section": self.section, "label": self.label, "kind": self.kind, "value": self.value,
                "about": self.about, "sources": self.sources, "blocks": self.blocks, "urls": self.urls}

    @classmethod
    def from_json(cls, doc: Any) -> AgreementRecord:
        d = _dict(doc)
        return cls(_str(d.get("section")), _str(d.get("label")), _str(d.get("kind")), _str(d.get("value")),
                   _strs(d.get("about")), _int(d.get("sources")), [_int(n) for n in _list(d.get("blocks"))],
                   _strs(d.get("urls")))


#: The keys the store adds to a synthesis's JSON (``Recorded``), in their order.
RECORDED_KEYS = ("charter_sha256", "routes", "doc_path", "json_path", "markdown")


@dataclass
class Recorded:
    """What the store keeps beside a synthesis's JSON: the sha256 of the charter it answered, each section's
    concept route, the files it wrote and its Markdown."""

    charter_sha256: str | None = None
    routes: dict[str, str | None] = field(default_factory=dict)
    doc_path: str | None = None
    json_path: str | None = None
    markdown: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"charter_sha256": self.charter_sha256, "routes": self.routes, "doc_path": self.doc_path,
                "json_path": self.json_path, "markdown": self.markdown}

    @classmethod
    def from_json(cls, doc: Any) -> Recorded:
        d = _dict(doc)
        routes = {_text(k): _str(v) for k, v in _dict(d.get("routes")).items()}
        return cls(_str(d.get("charter_sha256")), routes, _str(d.get("doc_path")), _str(d.get("json_path")),
                   _str(d.get("markdown")))


@dataclass
class SynthesisRecord:
    """A whole synthesis: the header facts, the sections, the judgements; ``recorded`` once the store keeps it."""

    charter_id: str | None
    title: str | None
    generated_at: str | None
    embedding_model: str | None
    min_score: float
    t_synth_s: float
    sections: list[SectionRecord] = field(default_factory=list)
    acceptance: list[VerdictRecord] = field(default_factory=list)
    acceptance_summary: dict[str, int] = field(default_factory=dict)
    conflicts: list[ConflictRecord] = field(default_factory=list)
    agreements: list[AgreementRecord] = field(default_factory=list)
    recorded: Recorded | None = None

    def to_json(self) -> dict[str, Any]:
        doc = {
            "charter_id": self.charter_id,
            "title": self.title,
            "generated_at": self.generated_at,
            "embedding_model": self.embedding_model,
            "min_score": self.min_score,
            "t_synth_s": self.t_synth_s,
            "sections": [s.to_json() for s in self.sections],
            "acceptance": [v.to_json() for v in self.acceptance],
            "acceptance_summary": self.acceptance_summary,
            "conflicts": [c.to_json() for c in self.conflicts],
            "agreements": [a.to_json() for a in self.agreements],
        }
        if self.recorded is not None:
            doc.update(self.recorded.to_json())
        return doc

    @classmethod
    def from_json(cls, doc: Any) -> SynthesisRecord:
        d = _dict(doc)
        summary = {_text(k): _int(v) for k, v in _dict(d.get("acceptance_summary")).items()}
        return cls(
            _str(d.get("charter_id")),
            _str(d.get("title")),
            _str(d.get("generated_at")),
            _str(d.get("embedding_model")),
            _float(d.get("min_score")),
            _float(d.get("t_synth_s")),
            [SectionRecord.from_json(s) for s in _list(d.get("sections")) if isinstance(s, dict)],
            [VerdictRecord.from_json(v) for v in _list(d.get("acceptance")) if isinstance(v, dict)],
            summary,
            [ConflictRecord.from_json(c) for c in _list(d.get("conflicts")) if isinstance(c, dict)],
            [AgreementRecord.from_json(a) for a in _list(d.get("agreements")) if isinstance(a, dict)],
            Recorded.from_json(d) if any(k in d for k in RECORDED_KEYS) else None,
        )
