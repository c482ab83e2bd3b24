"""The output schemas of brt's MCP tools: what each tool's JSON document (its structured content) holds.

Each model names the fields a client can rely on; every model allows more (``extra="allow"``), so a field
added to a document later stays compatible. The MCP SDK publishes each as the tool's ``outputSchema`` and
checks every result against it before it leaves the server. Text taken from a page is a string between the
untrusted-content delimiters wherever it appears (see ``orchestrator/untrusted.py``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AddPageOut",
    "CatalogOut",
    "CharterInitOut",
    "CharterOut",
    "CheckOut",
    "CleanOut",
    "HarvestOut",
    "JobOut",
    "ReportOut",
    "ResolvePathOut",
    "RestoreOut",
    "SearchOut",
    "StatusOut",
    "SynthesisOut",
    "VerifyOut",
]


class Doc(BaseModel):
    """A tool's JSON document: the fields below, and possibly more."""

    model_config = ConfigDict(extra="allow")


class CharterOut(Doc):
    valid: bool
    path: str
    charter_id: str
    title: str
    goal: str | None = None
    notes: str | None = None
    allowed_domains: list[str]
    seeds: list[str]
    sections: list[str]
    harvest: dict[str, Any]


class JobOut(Doc):
    """A background job (``job_id``, ``state``, ``progress``, and once done its ``report``), or with no job id
    asked for, ``jobs``: every job of this server."""

    jobs: list[dict[str, Any]] | None = None
    job_id: str | None = None
    kind: str | None = None
    charter_id: str | None = None
    state: str | None = Field(None, description="running, done, failed or cancelled")
    progress: dict[str, Any] | None = None
    report: dict[str, Any] | None = None
    error: str | None = None


class HarvestOut(Doc):
    """At once: the new job (``job_id``, ``state`` running, ``next_step``); with ``wait``: the harvest report
    (``counts`` per outcome, ``events``: one per URL attempted) with its ``job_id``."""

    job_id: str
    charter_id: str
    state: str | None = None
    next_step: str | None = None
    counts: dict[str, int] | None = None
    pages_stored: int | None = None
    chunks_total: int | None = None
    nothing_stored: bool | None = Field(
        None, description="true: the harvest stored no page (every URL failed, was blocked or skipped); no store "
        "is kept, and the job's state is failed"
    )
    events: list[dict[str, Any]] | None = None


class AddPageOut(Doc):
    stored: bool
    charter_id: str
    url: str | None
    title: str | None = None
    last_updated: str | None = None
    chunks: int
    chunk_ids: list[str]
    text_preview: str | None = None


class SearchOut(Doc):
    charter_id: str
    query: str
    subtree: str | None = None
    hits: list[dict[str, Any]] = Field(description="id, url, last_updated, title, score, snippet, text (quoted)")


class ResolvePathOut(Doc):
    charter_id: str
    text: str
    path: str | None = None
    subtree: str | None = None


class SynthesisOut(Doc):
    """``brt synthesize --json``: per section its blocks (quote quoted, citation, URL, last_updated, score)
    and gaps; the acceptance verdicts, conflicts and agreements between sources; the paths written."""

    charter_id: str
    title: str
    sections: list[dict[str, Any]]
    acceptance: list[dict[str, Any]]
    acceptance_summary: dict[str, int]
    conflicts: list[dict[str, Any]]
    agreements: list[dict[str, Any]]
    answered: int
    gaps: int
    doc_path: str | None = None
    json_path: str | None = None


class CleanOut(Doc):
    charter_id: str
    snapshot_path: str
    har_path: str | None = None
    destroyed: bool
    counts: dict[str, Any]


class StatusOut(Doc):
    charter_id: str
    exists: bool
    path: str
    pages: int | None = None
    chunks: int | None = None
    job: dict[str, Any] | None = None


class VerifyOut(Doc):
    ok: bool
    verdict: str
    snapshot: str
    failures: list[dict[str, Any]]
    warnings: list[dict[str, Any]]


class RestoreOut(Doc):
    charter_id: str
    charter_path: str | None = None
    store_path: str
    pages: int
    chunks: int
    check_ok: bool | None = None


class ReportOut(Doc):
    charter_id: str
    origin: str = Field(description="store or snapshot")
    format: str
    path: str = Field(description="the file written (under $BRT_HOME/reports)")
    bytes: int
    sections: int | None = None
    blocks: int | None = None
    gaps: int | None = None
    check: dict[str, Any] | None = Field(None, description="with check_path: the verdict and rates of the check")


class CatalogOut(Doc):
    brt_home: str
    stores: list[dict[str, Any]]
    snapshots: list[dict[str, Any]]


class CharterInitOut(Doc):
    charter_id: str
    path: str | None = None
    text: str


class CheckOut(Doc):
    """``brt check --json``: per claim its line, text (quoted), verdict, citations, quotes, evidence and
    problems; the totals, ``citation_rate``, ``quote_accuracy``, ``supported_rate``; ``ok`` (exit 0)."""

    report: str
    charter_id: str
    checked_against: str = Field(description="store or snapshot")
    ok: bool
    verdict: str
    citation_rate: float | None
    quote_accuracy: float | None
    supported_rate: float | None
    totals: dict[str, Any]
    thresholds: dict[str, float]
    claims: list[dict[str, Any]]
