"""The schema of a snapshot's records (docs/contracts.md, "Snapshot"), checked as each line is read (``snapshot.py``).

A snapshot is a file anyone can edit: every field brt reads is typed here, so a record whose field has the wrong
type (a list where a date belongs, a string where a count does) is reported with its line and field and left out,
never handed to ``verify``, ``restore`` or a report to crash on. Fields brt does not read are allowed (records
gain fields over versions); records of types brt does not know are kept as they are (journal records).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = ["RECORD_MODELS", "Manifest", "problem_of", "validate_record"]


class _Record(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


class Manifest(_Record):
    type: str
    charter_id: str
    created_at: str | None = None
    tool_version: str | None = None
    embedding_model: str | None = None
    embedding_dim: int | None = Field(None, ge=0, le=1_000_000)
    embedding_precision: str | None = None
    split_algo: str | None = None
    include_vectors: bool | None = None
    counts: dict[str, int] = Field(default_factory=dict)
    sha256: str | None = None


class _Page(_Record):
    url: str
    final_url: str | None = None
    title: str | None = None
    last_updated: str | None = None
    last_updated_source: str | None = None
    selector: str | None = None
    fetched_at: str | None = None
    status: int | None = None
    content_type: str | None = None
    chunk_ids: list[str] = Field(default_factory=list)
    stored_at: str | None = None
    text: str
    render: str | None = None  # harvest.render when it was stored
    rendered: bool | None = None  # whether the browser rendered it (False: read from the HTML as served)


class _Chunk(_Record):
    id: str
    charter_id: str | None = None
    url: str
    selector: str | None = None
    text: str
    tokens: int | None = None
    split_algo: str | None = None
    last_updated: str | None = None
    created_at: str | None = None
    title: str | None = None
    also_seen_at: list[str] = Field(default_factory=list)
    embedding: list[float] | None = None


class _Fingerprint(_Record):
    url: str | None = None
    final_url: str | None = None
    doc: str | None = None


class _HarvestEvent(_Record):
    url: str
    final_url: str | None = None
    depth: int | None = None
    outcome: str | None = None
    reason: str | None = None
    status: int | None = None
    started_at: str | None = None
    run_id: str | None = None
    fingerprint: _Fingerprint | None = None
    unchanged: bool = False
    links: list[str] | None = None
    attempts: list[dict[str, Any]] = Field(default_factory=list)
    bytes: int | None = None
    blocked_requests: list[str] = Field(default_factory=list)
    aborted_requests: dict[str, int] = Field(default_factory=dict)


class _HarvestSummary(_Record):
    run_id: str | None = None
    stored: int = 0
    skipped: dict[str, int] = Field(default_factory=dict)
    blocked: dict[str, int] = Field(default_factory=dict)
    failed: dict[str, int] = Field(default_factory=dict)
    bytes: int = 0
    elapsed_s: float = 0.0


class _CharterRecord(_Record):
    sha256: str
    text: str
    format: str = "yaml"
    source: str | None = None
    roles: list[str] = Field(default_factory=lambda: ["harvest"])
    recorded_at: str | None = None


class _Source(_Record):
    url: str
    last_updated: str | None = None
    chunk_id: str | None = None
    quote: str | None = None
    score: float | None = None


class _Block(_Record):
    n: int
    chunk_id: str
    url: str
    last_updated: str | None = None
    score: float | None = None
    quote: str
    also_at: list[_Source] = Field(default_factory=list)
    markdown: str | None = None


class _Gap(_Record):
    question: str | None = None
    searched_chunks: int = 0
    searched_pages: int = 0


class _Section(_Record):
    title: str
    label: str | None = None
    question: str | None = None
    blocks: list[_Block] = Field(default_factory=list)
    gaps: list[_Gap] = Field(default_factory=list)


class _Claim(_Record):
    n: int  # 0: a page no block cites (then chunk_id names the chunk its quote is a span of)
    url: str
    last_updated: str | None = None
    value: str | None = None
    quote: str
    chunk_id: str | None = None


class _Conflict(_Record):
    section: str
    label: str | None = None
    about: list[str] = Field(default_factory=list)
    a: _Claim
    b: _Claim


class _Agreement(_Record):
    section: str
    value: str | None = None
    sources: int = 0
    blocks: list[int] = Field(default_factory=list)


class _Verdict(_Record):
    criterion: str
    verdict: str
    reason: str | None = None


class _Synthesis(_Record):
    charter_id: str | None = None
    title: str | None = None
    generated_at: str | None = None
    embedding_model: str | None = None
    sections: list[_Section] = Field(default_factory=list)
    acceptance: list[_Verdict] = Field(default_factory=list)
    conflicts: list[_Conflict] = Field(default_factory=list)
    agreements: list[_Agreement] = Field(default_factory=list)
    charter_sha256: str | None = None
    markdown: str | None = None


class _ConceptGraph(_Record):
    vectors: bool = True
    graph: dict[str, Any] | None = None


class _ConceptPointer(_Record):
    model_config = ConfigDict(extra="forbid")  # restored as PointerRow(**fields): exactly its fields

    type: str
    node_id: str
    path: str
    chunk_id: str
    url: str
    ancestors: list[str] = Field(default_factory=list)
    ancestor_paths: list[str] = Field(default_factory=list)


class _Concept(_Record):
    id: str
    label: str | None = None


class _Edge(_Record):
    source: str
    target: str


#: The model of each record type brt reads; other types (journal records) are kept as written.
RECORD_MODELS: dict[str, type[BaseModel]] = {
    "manifest": Manifest,
    "page": _Page,
    "chunk": _Chunk,
    "harvest_event": _HarvestEvent,
    "harvest_summary": _HarvestSummary,
    "charter": _CharterRecord,
    "synthesis": _Synthesis,
    "concept_graph": _ConceptGraph,
    "concept_pointer": _ConceptPointer,
    "concept": _Concept,
    "edge": _Edge,
}


def problem_of(error: ValidationError, limit: int = 3) -> str:
    """The first few problems of a validation error, each as ``field.path: message``."""
    parts = []
    for e in error.errors()[:limit]:
        where = ".".join(str(p) for p in e["loc"]) or "(the record)"
        parts.append(f"{where}: {e['msg']}")
    more = error.error_count() - limit
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def validate_record(record: dict[str, Any]) -> str | None:
    """None when ``record`` fits its type's schema, else what is wrong (field paths and messages)."""
    model = RECORD_MODELS.get(str(record.get("type")))
    if model is None:
        return None
    try:
        model.model_validate(record)
    except ValidationError as exc:
        return problem_of(exc)
    except RecursionError:
        return "nested too deeply"
    return None
