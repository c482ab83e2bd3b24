"""Harvest hardening, hooked into ``orchestrator/harvest.py`` by a few one-line calls: retries with backoff
and per-domain politeness (``politeness.py``), robots.txt rules, PDFs (``pdf.py``), events journaled as they
happen, resume links, the per-page byte cap, store compaction after a harvest and the summary table.

Every function takes the running ``_Harvest`` (``h``) as its first argument.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections import Counter
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .pdf import PDF_TYPES, extract_pdf, set_page_selectors
from .politeness import MAX_RETRIES, Politeness, RobotsRules, backoff_delay, parse_retry_after, should_retry

if TYPE_CHECKING:
    from memory_store import Memory

__all__ = ["RobotsRules", "format_summary", "summarize"]

logger = logging.getLogger(__name__)

#: Default per-page cap on decoded content (HTML text read from the DOM, or PDF bytes).
DEFAULT_MAX_PAGE_BYTES = 20_000_000
#: Links kept per stored page in its event (what a resume continues from).
MAX_LINKS = 2000
_GUARD_PREFIXES = ("internal address", "cannot resolve")
_NETWORK_ERRORS = re.compile(
    r"ERR_(CONNECTION_(REFUSED|RESET|CLOSED|ABORTED|FAILED|TIMED_OUT)|EMPTY_RESPONSE|TIMED_OUT|NETWORK_CHANGED|"
    r"INCOMPLETE_CHUNKED_ENCODING|CONTENT_LENGTH_MISMATCH|SOCKET_NOT_CONNECTED|HTTP2_PROTOCOL_ERROR|"
    r"NETWORK_IO_SUSPENDED|INVALID_CHUNKED_ENCODING)"
)


def _setting(h: Any, name: str, default: Any) -> Any:
    value = getattr(h.settings, name, None)
    return default if value is None else value


def max_page_bytes(h: Any) -> int:
    return int(_setting(h, "max_page_bytes", DEFAULT_MAX_PAGE_BYTES))


def init_state(h: Any) -> None:
    h.polite = Politeness(
        per_domain=int(_setting(h, "per_domain_concurrency", 2)),
        min_delay_s=float(_setting(h, "min_delay_s", 0.0)),
    )
    h.robots = {}
    h._robots_locks = {}
    h.resume_links = {}
    h.journaled_records = []
    h._journaled_ids = set()
    h._journal_pending = []
    h._journal_wake = None
    h._journal_task = None
    h._journal_closing = False


# -- journal: events recorded as they happen (a kill -9 loses at most the last fraction of a second) --------


async def start(h: Any) -> None:
    from .limits import CrawlBudget

    # max_pages counts the pages the store holds already (limits.py); the run's clock starts now
    stored = await asyncio.to_thread(_count_pages, h.memory)
    h.budget = CrawlBudget.for_settings(h.settings, pages_in_store=stored)
    events = await asyncio.to_thread(_journal_events, h.memory)
    h.resume_links = load_links(events)
    from .revalidate import ReplayIndex, load_fingerprints

    if h.refresh:  # a refresh first checks whether stored pages changed (orchestrator/revalidate.py)
        h.fingerprints = load_fingerprints(events)
    if h.replay is not None:  # the HAR's bodies: fingerprints without asking the browser for them
        h.replay_index = await asyncio.to_thread(ReplayIndex, h.replay)
    h._journal_wake = asyncio.Event()
    h._journal_task = asyncio.create_task(_flusher(h), name="brt-journal")


def _count_pages(memory: Memory) -> int:
    try:
        return memory.count_pages()
    except Exception as exc:  # an unreadable store counts as empty here; the writer will say more
        logger.warning("cannot count the pages of %s: %s", memory.charter_id, exc)
        return 0


def _journal_events(memory: Memory) -> list[dict[str, Any]]:
    try:
        return memory.events()
    except Exception as exc:  # an unreadable journal only costs refetches
        logger.warning("cannot read the journal of %s: %s", memory.charter_id, exc)
        return []


def load_links(events: list[dict[str, Any]]) -> dict[str, list[str]]:
    """URL (requested and final) -> outlinks, from the journal's stored (or found unchanged) pages' events
    (the newest wins)."""
    links: dict[str, list[str]] = {}
    for e in events:
        settled = e.get("outcome") == "stored" or e.get("unchanged")
        if e.get("type", "harvest_event") == "harvest_event" and settled and "links" in e:
            for key in (e.get("url"), e.get("final_url")):
                if key:
                    links[key] = list(e["links"] or [])
    return links


def journal(h: Any, event: Any) -> None:
    """Queue ``event``'s record for the store's journal (once; later calls are ignored)."""
    if id(event) in h._journaled_ids:
        return
    h._journaled_ids.add(id(event))
    record = dict(event.as_record(), run_id=h.run_id)
    h.journaled_records.append(record)
    h._journal_pending.append(record)
    if h._journal_wake is not None:
        h._journal_wake.set()


def unjournaled(h: Any) -> list[Any]:
    out = [e for e in h.events if id(e) not in h._journaled_ids]
    for e in out:
        h._journaled_ids.add(id(e))
    return out


async def _flusher(h: Any) -> None:
    while True:
        await h._journal_wake.wait()
        h._journal_wake.clear()
        batch, h._journal_pending = h._journal_pending, []
        if batch:
            try:
                await asyncio.to_thread(h.memory.record_events, batch)
            except Exception as exc:
                from .limits import is_disk_full

                if is_disk_full(exc):  # stop the run (limits.py); say so once, not once per event
                    if getattr(h, "budget", None) is not None and h.budget.stop_reason is None:
                        logger.error("disk full while writing the journal of %s; stopping the harvest", h.charter.id)
                        h.budget.stop(f"disk full while writing the journal ({exc})")
                else:
                    logger.exception("cannot record harvest events for %s", h.charter.id)
        if h._journal_closing and not h._journal_pending:
            return


async def stop(h: Any) -> None:
    """Flush the journal, then compact the store if this harvest wrote to it."""
    if h._journal_task is not None:
        h._journal_closing = True
        h._journal_wake.set()
        try:
            await h._journal_task
        except Exception:
            logger.exception("journal writer of %s failed", h.charter.id)
        h._journal_task = None
    if h.report.pages_stored:
        from .storecheck import compact_store

        try:
            await asyncio.to_thread(compact_store, h.memory)
        except Exception as exc:  # compaction is housekeeping: never fails the harvest
            logger.warning("cannot compact the store of %s: %s", h.charter.id, exc)


def finish_report(h: Any) -> None:
    """Journal the run's summary (read back by ``brt status``)."""
    budget = getattr(h, "budget", None)
    if budget is not None and budget.stop_reason:
        h.report.stopped = budget.stop_reason
    summary = summarize(h.report.events, h.report.elapsed_s)
    if h.report.stopped:
        summary["stopped"] = h.report.stopped
    h.report.summary_table = summary  # type: ignore[attr-defined]
    try:
        h.memory.record_events([{"type": "harvest_summary", "run_id": h.run_id, **summary}])
    except Exception as exc:
        from .limits import is_disk_full

        if is_disk_full(exc):
            logger.error("cannot record the harvest summary of %s: disk full", h.charter.id)
        else:
            logger.exception("cannot record the harvest summary of %s", h.charter.id)


# -- retries and politeness ----------------------------------------------------------------------------------


def retry_after(headers: dict[str, str]) -> float | None:
    for key, value in headers.items():
        if key.lower() == "retry-after":
            return parse_retry_after(value)
    return None


def is_network_error(reason: str | None) -> bool:
    return bool(reason) and bool(_NETWORK_ERRORS.search(reason or ""))


def retryable(event: Any) -> bool:
    if event.outcome != "failed":
        return False
    if event.status is not None:
        return should_retry(event.status)
    return is_network_error(event.reason)


def is_guard_reason(reason: str | None) -> bool:
    return bool(reason) and str(reason).startswith(_GUARD_PREFIXES)


async def attempts(h: Any, page: Any, event: Any, responses: list[Any]) -> tuple[list[str], bool]:
    """``h._visit_with`` under the host's politeness slot, retried (at most twice, with backoff) on the
    retryable statuses and network errors. Every attempt is listed in ``event.attempts``."""
    host = (urlsplit(event.url).hostname or "").lower()
    await ensure_robots(h, page, event.url)  # its Crawl-delay must be known before the first slot
    n = 0
    while True:
        n += 1
        responses.clear()
        t0 = time.monotonic()
        async with h.polite.slot(host):
            began = time.time()  # when the politeness slot let this attempt start
            links, queued = await h._visit_with(page, event, responses)
        if event.status is not None:
            h.polite.observe(host, event.status, event.retry_after)
        entry: dict[str, Any] = {
            "attempt": n,
            "at": round(began, 3),
            "status": event.status,
            "outcome": "fetched" if queued else event.outcome,
            "reason": event.reason,
            "s": round(time.monotonic() - t0, 3),
        }
        event.attempts.append(entry)
        if queued or n > MAX_RETRIES or not retryable(event):
            return links, queued
        wait = backoff_delay(n, event.retry_after)
        entry["retry_in_s"] = round(wait, 3)
        logger.info("retrying %s in %.1fs (attempt %d: %s)", event.url, wait, n, event.reason)
        event.start_over()
        await asyncio.sleep(wait)
        await _blank(page)


async def _blank(page: Any) -> None:
    """Settle a tab before it tries a URL again: after a failed navigation Chromium may still be committing its
    error page (or reloading from it), which would interrupt the next ``goto`` ("is interrupted by another
    navigation")."""
    from playwright.async_api import Error as PlaywrightError

    if page is None:
        return
    try:
        await page.goto("about:blank", wait_until="commit", timeout=5_000)
    except PlaywrightError as exc:
        logger.debug("cannot blank the tab before a retry: %s", exc)


async def ensure_robots(h: Any, page: Any, url: str) -> None:
    """Fetch the origin's robots.txt once (one fetch even when several tabs start on the origin at once)."""
    if not h.settings.obey_robots or page is None:  # no page: the caller's own visit checks robots.txt
        return
    parts = urlsplit(url)
    origin = f"{parts.scheme}://{parts.netloc}"
    if origin in h.robots:
        return
    lock = h._robots_locks.setdefault(origin, asyncio.Lock())
    async with lock:
        if origin not in h.robots:
            await h._robots_allow(page, url, time.monotonic() + float(h.settings.timeout_s))


# -- PDFs ------------------------------------------------------------------------------------------------------


def is_pdf_candidate(h: Any, event: Any) -> bool:
    if h.replay is not None or event.outcome != "skipped":
        return False
    reason = event.reason or ""
    if any(f"({t})" in reason for t in PDF_TYPES):
        return True
    path = urlsplit(event.final_url or event.url).path.lower()
    return reason == "unsupported content type (download)" and path.endswith(".pdf")


async def fetch_pdf(
    h: Any, event: Any, deadline: float, t0: float, fetched: Any = None
) -> tuple[list[str], bool]:
    """Fetch a PDF's bytes with the document fetcher (allowlist and SSRF checked on every redirect hop, the
    byte cap counted while the body streams in), extract it and hand it to the writer. ``fetched`` is the
    navigation's own fetch result when it holds the whole PDF already (then nothing is fetched again).
    Returns (links, queued) like ``_visit_with``."""
    from .harvest import _Fetched, _now  # noqa: PLC0415 - avoid an import cycle

    url = event.final_url or event.url
    cap = max_page_bytes(h)
    try:
        if fetched is not None and fetched.kind == "ok" and fetched.content_type in PDF_TYPES:
            result = fetched
        else:
            result = await h.session.fetcher.fetch(url, deadline=deadline, max_bytes=cap)
    finally:
        event.timings.fetch_s = time.monotonic() - t0
    event.final_url = result.url
    event.status = result.status
    if result.kind == "blocked":
        reason = result.reason or "blocked"
        h._finish(event, "blocked", f"final URL not on allowed_domains: {result.url}" if reason ==
                  "not on allowed_domains" else f"{reason}: {result.url}")
        return [], False
    if result.kind == "too large":
        h._finish(event, "skipped", result.reason)
        return [], False
    if result.kind != "ok":
        h._finish(event, "failed", f"cannot fetch the PDF: {result.reason}")
        return [], False
    if result.status is not None and result.status >= 400:
        event.retry_after = retry_after(dict(result.headers))
        h._finish(event, "failed", f"HTTP {result.status}")
        return [], False
    ctype = result.content_type or ""
    if ctype not in PDF_TYPES:
        h._finish(event, "skipped", f"unsupported content type ({ctype or 'none'})")
        return [], False
    data = result.body
    url = result.url
    event.bytes_read = len(data)
    if len(data) > cap:
        h._finish(event, "skipped", f"too large ({len(data)} bytes, cap {cap})")
        return [], False
    t1 = time.monotonic()
    try:
        extracted, page_texts = await asyncio.to_thread(extract_pdf, data, url)
    except ValueError as exc:
        h._finish(event, "skipped", str(exc))
        return [], False
    finally:
        event.timings.extract_s = time.monotonic() - t1
    if extracted is None:
        h._finish(event, "skipped", "no readable text (PDF)")
        return [], False
    from .urls import canonical_url

    canonical = canonical_url(url)
    if canonical in h.final_seen:
        h._finish(event, "skipped", f"duplicate of {canonical} (already harvested in this run)")
        return [], False
    h.final_seen.add(canonical)
    if not await h._room_for(event, url):  # max_pages is the store's total (limits.py)
        h._finish(event, "skipped", h.budget.max_pages_reason())
        return [], False
    h.accepted += 1
    event.links = []
    event.outcome, event.reason = "failed", None  # settled by the writer
    await h.queue.put(_Fetched(event, extracted, result.status, ctype, _now(), pdf_pages=page_texts))
    return [], True


def after_store(h: Any, batch: list[Any]) -> None:
    """In the writer's thread, right after ``add_many``: per-page selectors of stored PDFs."""
    for item in batch:
        pages = getattr(item, "pdf_pages", None)
        if pages:
            try:
                set_page_selectors(h.memory, item.extracted.url, pages)
            except Exception:
                logger.exception("cannot set the page selectors of %s", item.extracted.url)


# -- summary ---------------------------------------------------------------------------------------------------


def _reason_key(reason: str | None) -> str:
    """A reason without its URL-specific tail, for grouping ("HTTP 503", "blocked by robots.txt", ...)."""
    text = (reason or "unknown").strip()
    text = re.sub(r"https?://\S+", "", text)
    text = re.sub(r"\(\d+ bytes[^)]*\)", "", text)
    text = re.sub(r"internal address \((\S+) [^)]*\)", r"internal address (\1)", text)
    return text.rstrip(" :").strip() or "unknown"


def summarize(events: list[dict[str, Any]], elapsed_s: float) -> dict[str, Any]:
    """Counts of one harvest: stored, skipped/blocked/failed by reason, retried URLs and retries, bytes, time."""
    by: dict[str, Counter[str]] = {"skipped": Counter(), "blocked": Counter(), "failed": Counter()}
    stored = retried = retries = byte_total = 0
    for e in events:
        if e.get("type", "harvest_event") != "harvest_event":
            continue
        outcome = e.get("outcome")
        if outcome == "stored":
            stored += 1
        elif outcome in by:
            by[outcome][_reason_key(e.get("reason"))] += 1
        n = len(e.get("attempts") or [])
        if n > 1:
            retried += 1
            retries += n - 1
        byte_total += int(e.get("bytes") or 0)
    return {
        "stored": stored,
        "skipped": dict(by["skipped"]),
        "blocked": dict(by["blocked"]),
        "failed": dict(by["failed"]),
        "retried_urls": retried,
        "retries": retries,
        "bytes": byte_total,
        "elapsed_s": round(float(elapsed_s or 0.0), 3),
    }


def format_summary(summary: dict[str, Any]) -> str:
    """The summary as a small text table."""
    rows: list[tuple[str, str]] = [("stored", str(summary.get("stored", 0)))]
    for outcome in ("skipped", "blocked", "failed"):
        reasons = summary.get(outcome) or {}
        rows.append((outcome, str(sum(reasons.values()))))
        for reason, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])):
            rows.append((f"  {reason}", str(n)))
    rows.append(("retried", f"{summary.get('retried_urls', 0)} URLs, {summary.get('retries', 0)} retries"))
    rows.append(("bytes", _human_bytes(int(summary.get("bytes") or 0))))
    rows.append(("time", f"{float(summary.get('elapsed_s') or 0):.1f}s"))
    if summary.get("stopped"):
        rows.append(("stopped", str(summary["stopped"])))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)


def _human_bytes(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000  # type: ignore[assignment]
    return f"{n} B"


def last_summary(memory: Memory) -> dict[str, Any] | None:
    """The summary record of the store's last harvest (None before the first hardened harvest)."""
    try:
        events = memory.events()
    except Exception:  # noqa: BLE001
        return None
    for e in reversed(events):
        if e.get("type") == "harvest_summary":
            return {k: v for k, v in e.items() if k not in ("type",)}
    return None
