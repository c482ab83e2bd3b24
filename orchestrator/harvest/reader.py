"""The seam between the crawl and the browser: a ``PageReader`` reads one URL at a time for the crawl, and the
crawl offers every reader the same ``CrawlHost`` (settings, limits, politeness and retries, robots.txt, the
hand-over to the store writer). A reader hands each page it read to the host as one ``PageRead``.

Two readers exist: ``readers.playwright`` (Playwright + Chromium: the static-first read of ``static.py``, HAR
recording and replay, crash recovery, fingerprints for ``--refresh``) and ``readers.devtools_mcp`` (brt as an
MCP client of chrome-devtools-mcp). A new reader implements ``PageReader``; the crawl, its limits and the events
stay as they are.

``ReadingHost`` is what every host shares, wherever the pages are read: settling an event, the attempts under a
host's politeness slot (retries with backoff, robots.txt first), and the tail of a page read (size cap, duplicate
check, extraction, hand-over). The crawl (``crawl.Crawl``, one machine) and a Ray worker's host
(``ray_worker.WorkerHost``) are both one: one pipeline, read in one process or fanned out.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .. import url_safety
from .extract import ExtractedPage, extract_page
from .net.politeness import MAX_RETRIES, Politeness, Robots, backoff_delay, retryable
from .workers import WorkLimit, in_worker

if TYPE_CHECKING:
    from memory_store import Memory

    from ..charter import Charter, Harvest
    from ..egress import EgressPolicy
    from .har import ReplayIndex
    from .models import HarvestEvent, HarvestReport, Outcome

__all__ = ["CrawlHost", "PageRead", "PageReader", "ReadAttempt", "ReadingHost", "RobotsFetch"]

logger = logging.getLogger(__name__)

#: The least time the reading of one page's content (extraction, links) may take, whatever ``timeout_s``.
WORK_MIN_S = 30.0

#: One try at one URL: returns (links to follow, whether the page went to the store writer).
ReadAttempt = Callable[[], Awaitable[tuple[list[str], bool]]]
#: The body of ``<origin>/robots.txt`` (None when there is none).
RobotsFetch = Callable[[str], Awaitable[str | None]]


@dataclass
class PageRead:
    """A page as a reader read it: the HTML its text is extracted from (the rendered DOM, or the document as
    served when the page was not rendered), and what the host needs to store it."""

    html: str
    final_url: str  # the URL the page is stored and cited under
    links: list[str]  # links found on it, from the same HTML as its text
    headers: dict[str, str]  # the document's response headers (Last-Modified dates the page)
    status: int | None
    content_type: str | None
    fetched_at: str
    selector: str | None = None  # the charter's selector for the host (None: the whole page)
    region_html: str | None = None  # the selector's region, when it matched
    #: The HTML the server sent for the document, read when the rendered page has no readable text.
    served: Callable[[], Awaitable[str | None]] | None = None
    #: Extracted already (a page read from its served HTML): the host does not extract it again.
    extracted: ExtractedPage | None = None


class CrawlHost(Protocol):
    """What the crawl offers a reader."""

    charter: Charter
    settings: Harvest
    egress: EgressPolicy  # the run's egress policy, built once from the charter and the settings
    memory: Memory
    replay: Path | None
    refresh: bool
    seen: set[str]  # canonical URLs attempted or read in this run
    final_seen: set[str]  # canonical final URLs read in this run (duplicates are skipped)
    resume_links: dict[str, list[str]]  # stored pages' links from the journal (a resume follows them)
    fingerprints: dict[str, dict[str, Any]]  # refresh: URL -> fingerprint of its stored page
    replay_index: ReplayIndex | None  # with --replay: the HAR's responses
    robots: Robots

    @property
    def work_limit_s(self) -> float: ...

    @property
    def max_page_bytes(self) -> int: ...

    def finish(self, event: HarvestEvent, outcome: Outcome, reason: str | None) -> None:
        """Settle ``event`` (logged at INFO when blocked or failed)."""

    async def skip_stored(self, event: HarvestEvent) -> list[str] | None:
        """Without ``refresh``: settle a URL already stored (and whose links are known) as skipped and return
        its links; None when it must be read."""
        ...

    async def attempts(
        self, event: HarvestEvent, read: ReadAttempt, *, robots: RobotsFetch | None = None, between: Any = None
    ) -> tuple[list[str], bool]:
        """``read()`` under the host's politeness slot, retried with backoff on retryable failures (``robots``:
        fetch the origin's robots.txt first; ``between``: awaited before each retry)."""
        ...

    async def extract_and_queue(self, event: HarvestEvent, read: PageRead) -> tuple[list[str], bool]:
        """Size cap, duplicate check, extraction (unless ``read.extracted``), max_pages and the hand-over to the
        writer of a page read. Returns (links to follow, whether the page went to the writer)."""
        ...

    async def queue_pdf(
        self,
        event: HarvestEvent,
        extracted: ExtractedPage,
        page_texts: list[str],
        status: int | None,
        content_type: str,
        url: str,
    ) -> tuple[list[str], bool]:
        """Duplicate check, max_pages and the hand-over to the writer of an extracted PDF."""
        ...


class PageReader(Protocol):
    """Reads pages for the crawl through one browser (for the whole harvest)."""

    name: str  # "playwright", "devtools-mcp": for logs

    def prepare(self, report: HarvestReport) -> None:
        """Before anything is recorded: raise when the reader cannot run (e.g. its program is missing); note
        in ``report`` what it will record (the HAR path)."""

    def open(self, host: CrawlHost) -> AbstractAsyncContextManager[Any]:
        """Start the browser for the crawl of ``host``; closed when the crawl ends."""
        ...

    def slots(self) -> list[Any]:
        """One slot per page read at a time (e.g. a browser tab, opened on first use): the crawl hands a free
        slot to each ``visit``."""
        ...

    @property
    def fatal(self) -> BaseException | None:
        """Set once the harvest cannot go on (e.g. the browser crashed too often); raised after the crawl."""
        ...

    async def visit(self, event: HarvestEvent, slot: Any) -> tuple[list[str], bool, Any]:
        """Read ``event.url`` (retries, crash recovery included) and settle ``event``, or hand the page to the
        writer. Returns (links found, whether it went to the writer, the slot to give back)."""
        ...

    def finish_report(self, report: HarvestReport) -> None:
        """After the crawl: what the browser side adds to the report (blocked requests, HARs, relaunches)."""


class ReadingHost:
    """The reader-facing half of a crawl host: ``charter``, ``settings``, per-host politeness and robots.txt, and
    the tail of a page read. A host says what a duplicate is (``is_duplicate``) and where a page goes
    (``hand_over``)."""

    charter: Charter
    settings: Harvest
    egress: EgressPolicy
    polite: Politeness
    robots: Robots

    def init_politeness(self) -> None:
        """Per-host slots and delays (``per_domain_concurrency``, ``min_delay_s``) and robots.txt rules."""
        self.polite = Politeness(
            per_domain=int(self.settings.per_domain_concurrency), min_delay_s=float(self.settings.min_delay_s)
        )
        self.robots = Robots(self.polite)

    @property
    def max_page_bytes(self) -> int:
        """The per-page cap on decoded content (HTML text read from the DOM, or PDF bytes)."""
        return int(self.settings.max_page_bytes)

    @property
    def work_limit_s(self) -> float:
        """How long the CPU-bound reading of one page's content may take (``workers.in_worker``)."""
        return max(float(self.settings.timeout_s), WORK_MIN_S)

    def finish(self, event: HarvestEvent, outcome: Outcome, reason: str | None) -> None:
        event.outcome = outcome
        event.reason = reason
        log = logger.info if outcome in ("blocked", "failed") else logger.debug
        log("%s %s: %s", outcome, event.url, reason)

    async def attempts(
        self, event: HarvestEvent, read: ReadAttempt, *, robots: RobotsFetch | None = None, between: Any = None
    ) -> tuple[list[str], bool]:
        """``read()`` under the host's politeness slot, retried (at most twice, with backoff) on the retryable
        statuses and network errors. Every attempt is listed in ``event.attempts``. ``robots`` fetches the
        origin's robots.txt first (its Crawl-delay must be known before the first slot); ``between()`` settles
        the reader before a retry."""
        host = (url_safety.hostname(event.url) or "").lower()
        if robots is not None and self.settings.obey_robots:
            await self.robots.ensure(event.url, robots)
        n = 0
        while True:
            n += 1
            t0 = time.monotonic()
            async with self.polite.slot(host):
                began = time.time()  # when the politeness slot let this attempt start
                links, queued = await read()
            if event.status is not None:
                self.polite.observe(host, event.status, event.retry_after)
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
            if between is not None:
                await between()

    async def extract_and_queue(self, event: HarvestEvent, read: PageRead) -> tuple[list[str], bool]:
        """The tail every way of reading a page shares: size cap, duplicate check, extraction (unless the page
        comes extracted), and the hand-over (``hand_over``). Returns (links to follow, whether the page went to
        the writer)."""
        if self.over_size(event, read.html):
            return [], False
        if self.is_duplicate(event, read.final_url):
            return read.links, False
        extracted = read.extracted if read.extracted is not None else await self.extract_read(event, read)
        if extracted is None:
            return read.links, False
        if event.fingerprint is not None and event.render is not None:
            event.fingerprint["render"] = event.render  # a refresh reads the page again when the setting changes
        return await self.hand_over(event, read, extracted)

    def is_duplicate(self, event: HarvestEvent, final_url: str) -> bool:
        """Settle ``event`` as skipped (and say True) when its final URL was read already (here: never)."""
        return False

    async def hand_over(
        self, event: HarvestEvent, read: PageRead, extracted: ExtractedPage
    ) -> tuple[list[str], bool]:
        """Where an extracted page goes (the store writer, or a Ray worker's driver)."""
        raise NotImplementedError

    def over_size(self, event: HarvestEvent, html: str) -> bool:
        """Settle ``event`` as skipped (and say True) when the page's content is over ``max_page_bytes``."""
        event.bytes_read = len(html.encode("utf-8", "replace"))
        if event.bytes_read > self.max_page_bytes:
            self.finish(event, "skipped", f"too large ({event.bytes_read} bytes of content)")
            return True
        return False

    async def extract_read(self, event: HarvestEvent, read: PageRead) -> ExtractedPage | None:
        """Extract a page read (its selector's region, else the whole page); None (``event`` settled) when
        nothing readable is left. ``read.served`` gives the HTML the server sent for the document: read when the
        rendered page has no readable text (a script blanked or replaced it: ad-block walls, a failed
        hydration), recorded as the event's ``text_from``."""
        selector, region_html, final_url = read.selector, read.region_html, read.final_url
        if selector and not region_html:
            logger.info("selector %r matched nothing on %s; extracting the whole page", selector, final_url)
            selector = None
        t1 = time.monotonic()
        # in a worker process: bounded in time and memory, and killed at a hard stop (max_duration_s)
        try:
            extracted = await in_worker(extract_page, read.html, final_url, headers=read.headers,
                                        region_html=region_html, selector=selector, limit_s=self.work_limit_s)
            if extracted is None and read.served is not None:
                source = await read.served()
                if source and source != read.html:
                    extracted = await in_worker(extract_page, source, final_url, headers=read.headers,
                                                region_html=None, selector=selector, limit_s=self.work_limit_s)
                    if extracted is not None:
                        logger.info("the rendered %s has no readable text; read the HTML it was served", final_url)
                        event.text_from = "served"
        except WorkLimit as exc:
            event.timings.extract_s += time.monotonic() - t1
            self.finish(event, "failed", f"extraction stopped: {exc}")
            return None
        event.timings.extract_s += time.monotonic() - t1
        if extracted is not None and extracted.lead_recovered:
            event.lead_recovered = extracted.lead_recovered
        if extracted is None:
            if event.partial is not None:  # a server that trickles: abandoned at the deadline
                self.finish(event, "failed", f"timed out: {event.partial}; nothing readable")
            else:
                self.finish(event, "skipped", "no readable text")
        return extracted
