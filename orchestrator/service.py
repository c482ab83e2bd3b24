"""The one service layer under the CLI (``cli.py``) and the MCP server (``mcp/server.py``): loading a charter,
opening its store, searching with the charter's retrieval defaults, status, and the JSON documents of hits,
sections, reports and snapshots. Both shells only parse arguments and render what these return, so a ``brt
search --json`` hit and an MCP ``search`` hit are the same object (the MCP server passes ``quote`` to wrap page
text as untrusted content)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .charter import load_charter
from .config import open_memory, require_memory, store_exists
from .evidence.rerank import RERANK_FACTOR, RERANK_MIN, rerank_hits

if TYPE_CHECKING:
    from memory_store import CheckResult, Hit, Memory

    from .audit.check import CheckReport
    from .charter import Charter
    from .clean import CleanResult
    from .evidence import SynthesisResult
    from .harvest.models import HarvestReport

__all__ = [
    "Quote",
    "StatusDoc",
    "check",
    "check_json",
    "clean_json",
    "harvest_json",
    "hit_json",
    "hit_score",
    "load",
    "open_store",
    "require_store",
    "search",
    "search_json",
    "section_json",
    "status",
    "synthesis_json",
    "judgements_json",
    "validate",
]

#: Wraps text taken from a page (``mcp.server.quote_untrusted``): (text, source URL) -> quoted text.
Quote = Callable[[str | None, str | None], str | None]
#: A URL as an agent may see it (``untrusted.safe_url``: WHATWG serialisation, no ``user:pass@``).
UrlView = Callable[[Any], str | None]


def _plain(text: str | None, _source: str | None = None) -> str | None:
    return text


def _same(url: Any) -> str | None:
    return url


def load(path: str | Path) -> Charter:
    """The charter at ``path`` (``~`` expanded); CharterError names the file and field when it is invalid."""
    return load_charter(Path(path).expanduser())


def validate(path: str | Path, *, allow_doc_anywhere: bool = False) -> Charter:
    """The charter at ``path`` checked for everything harvest and synthesize refuse (``charter validate``, and
    synthesize itself): the schema (``load``), then an ``outputs.doc`` that leaves the charter's folder unless
    ``allow_doc_anywhere`` (``safe_paths.charter_doc_path``). One CharterError, with the same message, either way."""
    from .safe_paths import charter_doc_path

    charter = load(path)
    charter_doc_path(charter, allow_anywhere=allow_doc_anywhere)  # security: no doc outside the folder unasked
    return charter


def require_store(charter: Charter, *, next_step: str | None = None) -> None:
    """Raise StoreNotFound when the charter has no store; ``next_step`` says how to make one (the CLI and the MCP
    server word it for their users)."""
    from memory_store.errors import StoreNotFound

    require_memory(charter)
    if not store_exists(charter):
        step = next_step or f"run `brt harvest {charter.source or 'CHARTER'}` first"
        raise StoreNotFound(f"charter {charter.id!r} has no store (never harvested, or cleaned): {step}")


def open_store(charter: Charter, *, next_step: str | None = None) -> Memory:
    """The charter's existing store (StoreNotFound, with ``next_step``, when it was never harvested)."""
    require_store(charter, next_step=next_step)
    return open_memory(charter, create=False)


def search(
    charter: Charter,
    query: str,
    *,
    k: int = 5,
    subtree: str | None = None,
    min_similarity: float | None = None,
    mode: str | None = None,
    rerank: bool | None = None,
    reranker_model: str | None = None,
    mmr_lambda: float | None = None,
    no_mmr: bool = False,
    memory: Memory | None = None,
    next_step: str | None = None,
) -> list[Hit]:
    """Search the charter's store; every option left out (None) takes the charter's ``retrieval:`` value (mode,
    candidates, rerank, reranker model, MMR lambda); ``no_mmr`` turns MMR off. A rerank without an external
    reranker model orders the hits by evidence (``orchestrator.evidence.rerank``: the scorer and its reader).
    The hits come best first by :func:`hit_score`."""
    mem = memory if memory is not None else open_store(charter, next_step=next_step)
    r = charter.retrieval
    rerank = r.rerank if rerank is None else rerank
    model = reranker_model or r.reranker_model
    by_evidence = rerank and not model
    hits = mem.search(
        query,
        k=max(k * RERANK_FACTOR, RERANK_MIN) if by_evidence else k,
        subtree=subtree,
        min_similarity=min_similarity,
        mode=mode or r.mode,
        candidates=r.candidates,
        rerank=rerank and not by_evidence,
        reranker_model=model,
        mmr_lambda=None if no_mmr or by_evidence else (r.mmr_lambda if mmr_lambda is None else mmr_lambda),
    )
    hits = rerank_hits(mem, query, hits, k) if by_evidence else hits
    return sorted(hits, key=lambda h: -hit_score(h))  # stable: ties keep retrieval's order


def hit_score(hit: Hit) -> float:
    """The score a search lists its hits by: the rerank score when the hits were reranked (by evidence or by a
    cross-encoder), else the cosine similarity (``Hit.score``). Retrieval chooses the hits (fusion, MMR); they
    are listed by this score, so the order reads the way the printed scores do."""
    rerank = (hit.metadata.get("retrieval") or {}).get("rerank_score")
    return float(rerank) if rerank is not None else float(hit.score)


# -- JSON documents -----------------------------------------------------------------------------------------


def hit_json(hit: Hit, quote: Quote | None = None, url: UrlView | None = None) -> dict[str, Any]:
    """One search hit: id, url, last_updated, title, score, snippet, text, matched_via (page text through
    ``quote``, the URL through ``url``)."""
    q = quote or _plain
    return {
        "id": hit.id,
        "url": (url or _same)(hit.url),
        "last_updated": hit.last_updated,
        "title": q(hit.title, hit.url),
        "score": round(float(hit.score), 6),
        "snippet": q(hit.snippet, hit.url),
        "text": q(hit.text, hit.url),
        "matched_via": hit.matched_via,
    }


def search_json(
    charter: Charter,
    query: str,
    hits: list[Hit],
    *,
    subtree: str | None = None,
    quote: Quote | None = None,
    url: UrlView | None = None,
) -> dict[str, Any]:
    """The result of a search: the charter, the query, the subtree and the hits, best first."""
    return {
        "charter_id": charter.id,
        "query": query,
        "subtree": subtree,
        "hits": [hit_json(h, quote, url) for h in hits],
    }


def synthesis_json(
    result: SynthesisResult, quote: Quote | None = None, url: UrlView | None = None
) -> dict[str, Any]:
    """A synthesis: the document written beside the Markdown (``SynthesisResult.to_json``: per section its
    blocks and gaps, the acceptance verdicts, conflicts and agreements) with each block's citation, the counts
    of answered sections and gaps, and the paths written. With ``quote`` every quote (a block's and its other
    sources', ``also_at``, and each side of a conflict) and every value or word taken from a page is wrapped
    as untrusted page text, the blocks' Markdown lines (which embed the quote) are left out, and the dates are
    escaped; ``url`` gives every URL as an agent may see it."""
    doc = result.to_json()
    doc["sections"] = [section_json(data, quote, url) for data in doc["sections"]]
    judgements_json(doc, quote, url)
    doc["answered"] = sum(1 for s in result.sections if s.blocks)
    doc["gaps"] = sum(len(s.gaps) for s in result.sections)
    doc["doc_path"] = str(result.doc_path) if result.doc_path else None
    doc["json_path"] = str(result.json_path) if result.json_path else None
    return doc


def section_json(data: dict[str, Any], quote: Quote | None = None, url: UrlView | None = None) -> dict[str, Any]:
    """One section of a synthesis document (as ``SynthesisResult.to_json`` or the store's recorded synthesis
    holds it) with each block's citation; ``quote`` and ``url`` as in :func:`synthesis_json`."""
    from .evidence import display_url
    from .evidence.results import origin_mark

    view = url or _same
    out = dict(data)
    out["blocks"] = []
    for block in data.get("blocks") or []:
        b = dict(block)
        date = str(b.get("last_updated") or "unknown")
        if quote is not None and not _is_date(date):
            date = quote(date, b.get("url")) or date
        cited = view(display_url(str(b.get("url") or "")))
        b["citation"] = (f"[{data.get('label')} Evidence #{b.get('n')}] — {cited} (last updated: {date})"
                         f"{origin_mark(b.get('origin'))}")  # a page added without a harvest says so
        if quote is not None and _is_date(date):  # the charter's label, a percent-encoded URL, a date
            from .untrusted import trusted

            b["citation"] = trusted(b["citation"])
        b["also_at"] = [dict(a) for a in b.get("also_at") or []]
        for source in b["also_at"]:
            source["url"] = view(source.get("url"))
            if quote is not None and source.get("quote") is not None:
                source["quote"] = quote(source["quote"], source.get("url"))
        if quote is not None:
            b["quote"] = quote(b.get("quote"), b.get("url"))
            b.pop("markdown", None)
        b["url"] = view(b.get("url"))
        out["blocks"].append(b)
    return out


def judgements_json(doc: dict[str, Any], quote: Quote | None = None, url: UrlView | None = None) -> None:
    """The acceptance verdicts, conflicts and agreements of a synthesis document, for an agent (in place): with
    ``quote``, each quote, value and context word taken from a page is wrapped as untrusted page text and
    each reason escaped; ``url`` gives every URL as an agent may see it."""
    view = url or _same
    q = quote or _plain
    words = "brt conflict detection (words from harvested pages)"
    for conflict in doc.get("conflicts") or []:
        for side in ("a", "b"):
            claim = conflict.get(side) or {}
            source = claim.get("url")
            claim.update(quote=q(claim.get("quote"), source), value=q(claim.get("value"), source), url=view(source))
        conflict["about"] = [q(w, words) for w in conflict.get("about") or []]
    for agreement in doc.get("agreements") or []:
        agreement["value"] = q(agreement.get("value"), words)
        agreement["about"] = [q(w, words) for w in agreement.get("about") or []]
        agreement["urls"] = [view(u) for u in agreement.get("urls") or []]
    for verdict in doc.get("acceptance") or []:
        if quote is not None:
            from .untrusted import escape_untrusted

            verdict["reason"] = escape_untrusted(str(verdict.get("reason") or ""))
        for support in verdict.get("support") or []:
            support["url"] = view(support.get("url"))


def _is_date(text: str) -> bool:
    import re

    return text == "unknown" or re.fullmatch(r"\d{4}(-\d{2}(-\d{2})?)?", text) is not None


def check(report: str | Path, *, charter: str | Path | None = None, snapshot: str | Path | None = None,
          har: bool = True, follow_links: bool = True) -> CheckReport:
    """``brt check``: the report at ``report`` checked against the charter's store, or against ``snapshot``
    (with ``charter`` too, its allowlist is the one checked), each verified first (``har``: the snapshot's HAR
    too); ``follow_links`` False refuses a report path that is a symlink (the MCP tool)."""
    from .audit.check import check_report

    loaded = load(charter) if charter else None
    if loaded is not None and snapshot is None:
        require_store(loaded, next_step="harvest it first, or check against its snapshot (after clean)")
    return check_report(report, charter=loaded, snapshot=snapshot, har=har, follow_links=follow_links)


def check_json(result: CheckReport, quote: Quote | None = None, url: UrlView | None = None) -> dict[str, Any]:
    """A check (``brt check --json``, MCP ``check_report``); ``quote`` wraps text from the report and the pages."""
    from .audit.check import report_json

    return report_json(result, quote, url)


def harvest_json(report: HarvestReport) -> dict[str, Any]:
    """A harvest report (``HarvestReport.to_json``) with its one-line summary."""
    doc = report.to_json()
    doc["summary"] = report.summary()
    return doc


def clean_json(charter: Charter, result: CleanResult) -> dict[str, Any]:
    """What ``clean`` did: the snapshot and HAR paths, whether the store was destroyed, the record counts."""
    return {
        "charter_id": charter.id,
        "snapshot_path": str(result.snapshot_path),
        "har_path": str(result.har_path) if result.har_path else None,
        "destroyed": result.destroyed,
        "counts": result.counts,
    }


@dataclass
class StatusDoc:
    """``brt status``: the store's report, the last harvest's summary table and (``check``) the store check."""

    report: Any  # clean.StatusReport
    summary: dict[str, Any] | None = None
    check: CheckResult | None = None

    def to_json(self) -> dict[str, Any]:
        doc = self.report.to_json()
        if self.summary is not None:
            doc["last_harvest_summary"] = self.summary
        if self.check is not None:
            doc["check"] = self.check.to_json()
        return doc


def status(charter: Charter, *, check: bool = False) -> StatusDoc:
    """Pages, chunks, model, disk size and last harvest of the charter's store, the last harvest's summary and,
    with ``check``, the store check (``Memory.check``)."""
    from .clean import status as store_status
    from .harvest.journal import last_summary

    doc = StatusDoc(store_status(charter))
    if doc.report.exists:
        mem = open_memory(charter, create=False)
        doc.summary = last_summary(mem)
        if check:
            doc.check = mem.check()
    return doc
