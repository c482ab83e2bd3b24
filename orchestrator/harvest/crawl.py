"""The crawl of a harvest: the breadth-first frontier from the charter's seeds (``max_depth`` hops, at most
``max_pages`` stored pages), politeness and retries per host, robots.txt, the extraction of what a reader read
and its hand-over to the store writer, and the journal of events. Pages are read by a ``PageReader``
(``reader.py``) that the crawl drives; every URL attempted gets exactly one ``HarvestEvent``."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from memory_store.clock import now

from .extract import ExtractedPage, extract_page
from .har import ReplayIndex
from .journal import Journal, load_links, read_events
from .limits import CrawlBudget, is_disk_full
from .models import Fetched, HarvestEvent, HarvestReport, Outcome
from .net.politeness import MAX_RETRIES, Politeness, Robots, backoff_delay, retryable
from .net.urls import canonical_url, filter_links
from .reader import PageReader, ReadAttempt, RobotsFetch
from .revalidate import load_fingerprints
from .summary import summarize
from .writer import Writer

if TYPE_CHECKING:
    from memory_store import Memory

    from ..charter import Charter
    from ..progress import ProgressSink

__all__ = ["MAX_LINKS", "Crawl"]

logger = logging.getLogger(__name__)

#: Links kept per stored page in its event (what a resume continues from).
MAX_LINKS = 2000


class Crawl:
    """One harvest run of ``charter`` into ``memory``, reading pages with ``reader``. The crawl is the
    ``CrawlHost`` its reader works with (``reader.py``)."""

    def __init__(
        self,
        charter: Charter,
        memory: Memory,
        progress: ProgressSink,
        reader: PageReader,
        *,
        replay: Path | None,
        refresh: bool,
    ) -> None:
        self.charter = charter
        self.memory = memory
        self.progress = progress
        self.reader = reader
        self.replay = replay
        self.refresh = refresh
        self.settings = charter.harvest
        self.report = HarvestReport(charter_id=charter.id, replay=replay)
        self.run_id = now()  # groups this harvest's events in the store's journal
        self.events: list[HarvestEvent] = []
        self.seen: set[str] = set()
        self.accepted = 0  # pages handed to the writer in this run
        self.budget = CrawlBudget.for_settings(self.settings)  # max_pages/attempts/duration, disk (limits.py)
        self.final_seen: set[str] = set()
        self.fingerprints: dict[str, dict[str, Any]] = {}  # refresh: URL -> fingerprint of its stored page
        self.replay_index: ReplayIndex | None = None  # with replay: the HAR's responses (har.ReplayIndex)
        self.resume_links: dict[str, list[str]] = {}
        self.polite = Politeness(
            per_domain=int(self.settings.per_domain_concurrency), min_delay_s=float(self.settings.min_delay_s)
        )
        self.robots = Robots(self.polite)
        self.journal = Journal(memory, self.run_id, on_disk_full=self.budget.stop)
        self.writer = Writer(
            memory,
            self.report,
            progress,
            self.journal,
            finish=self.finish,
            release=self._release,
            accepted=lambda: self.accepted,
        )

    @property
    def max_page_bytes(self) -> int:
        """The per-page cap on decoded content (HTML text read from the DOM, or PDF bytes)."""
        return int(self.settings.max_page_bytes)

    def _release(self, event: HarvestEvent) -> None:
        self.accepted -= 1
        self.budget.release(event.replaces)

    async def run(self) -> HarvestReport:
        self.reader.prepare(self.report)  # e.g. a missing program: stop before anything is recorded
        started = time.monotonic()
        embedded_before = self.texts_embedded()
        self.progress.start("fetch", total=None)
        self.progress.start("embed", total=None)
        await self.start()
        try:
            async with self.reader.open(self):
                writer = asyncio.create_task(self.writer.run(), name="brt-writer")
                try:
                    await self.breadth_first()
                finally:
                    await self.writer.queue.put(None)
                    await writer
            fatal = self.reader.fatal
            if fatal is not None:
                fatal.report = self.report  # type: ignore[attr-defined]  # completed by the finally below
                raise fatal
        finally:
            self.reader.finish_report(self.report)
            self.report.elapsed_s = round(time.monotonic() - started, 3)
            self.report.chunks_embedded = max(0, self.texts_embedded() - embedded_before)
            await self.stop()
            self.record_events()
        counts = self.report.counts()
        logger.info(
            "harvest of %s via %s: %d stored, %d skipped, %d blocked, %d failed in %.1fs",
            self.charter.id,
            self.reader.name,
            counts["stored"],
            counts["skipped"],
            counts["blocked"],
            counts["failed"],
            self.report.elapsed_s,
        )
        return self.report

    async def start(self) -> None:
        """Read the journal (resume links; fingerprints for a refresh), index the replay HAR, start the journal
        writer."""
        # max_pages counts the pages the store holds already (limits.py); the run's clock starts now
        stored = await asyncio.to_thread(_count_pages, self.memory)
        self.budget = CrawlBudget.for_settings(self.settings, pages_in_store=stored)
        self.journal.on_disk_full = self.budget.stop
        self.writer.budget = self.budget
        events = await asyncio.to_thread(read_events, self.memory)
        self.resume_links = load_links(events)
        if self.refresh:  # a refresh first checks whether stored pages changed (revalidate.py)
            self.fingerprints = load_fingerprints(events)
        if self.replay is not None:  # the HAR's bodies: fingerprints without asking the browser for them
            self.replay_index = await asyncio.to_thread(ReplayIndex, self.replay)
        self.journal.start()

    async def stop(self) -> None:
        """Flush the journal, then compact the store if this harvest wrote to it."""
        await self.journal.close()
        if self.report.pages_stored:
            try:
                await asyncio.to_thread(self.memory.compact)
            except Exception as exc:  # compaction is housekeeping: never fails the harvest
                logger.warning("cannot compact the store of %s: %s", self.charter.id, exc)

    # -- the frontier -------------------------------------------------------------------------------------------

    async def breadth_first(self) -> None:
        """Seeds first, then the links found one hop further, level by level up to ``max_depth`` and
        ``max_pages``; each level is read ``len(reader.slots())`` pages at a time."""
        slots: asyncio.Queue[Any] = asyncio.Queue()
        for slot in self.reader.slots():
            slots.put_nowait(slot)
        frontier = self.new_urls(self.charter.seeds)
        for depth in range(self.settings.max_depth + 1):
            if not frontier:
                break
            if self.budget.closed(refresh=self.refresh):  # limits.py
                self.report.not_attempted += len(frontier)
                break
            self.progress.advance("fetch", 0, total=len(self.events) + len(frontier))
            results = await asyncio.gather(*(self.visit(slots, url, depth) for url in frontier))
            if depth == self.settings.max_depth:
                break
            frontier = self.new_urls(link for links in results for link in links)

    def new_urls(self, urls: Iterable[str]) -> list[str]:
        out = []
        for url in filter_links(urls, self.charter.allowed_domains):
            key = canonical_url(url)  # fetched as written, de-duplicated by the canonical form
            if key not in self.seen:
                self.seen.add(key)
                out.append(url)
        return out

    async def visit(self, slots: asyncio.Queue[Any], url: str, depth: int) -> list[str]:
        """Read one URL with a free reader slot; returns the allowed links found on it."""
        slot = await slots.get()
        if self.reader.fatal is not None or self.budget.start(refresh=self.refresh) is not None:
            self.report.not_attempted += 1
            slots.put_nowait(slot)
            return []
        event = HarvestEvent(url=url, depth=depth, started_at=now())
        self.events.append(event)
        links: list[str] = []
        queued = False
        try:
            links, queued, slot = await self.reader.visit(event, slot)
        except asyncio.CancelledError:  # the harvest was cancelled (Ctrl-C, an MCP job's cancel): still recorded
            if not queued:
                self.finish(event, "failed", "cancelled")
            raise
        except Exception as exc:  # one page never stops the harvest
            logger.exception("unexpected error harvesting %s", url)
            self.finish(event, "failed", f"internal error: {type(exc).__name__}: {exc}")
        finally:
            slots.put_nowait(slot)
            if not queued:  # queued pages advance when stored
                self.progress.advance("fetch")
                self.journal.add(event)
        return links

    # -- what readers call ----------------------------------------------------------------------------------------

    async def skip_stored(self, event: HarvestEvent) -> list[str] | None:
        """Without ``refresh``: a URL already in the store is not fetched again (skipped, "already stored") and
        a resume continues the breadth-first crawl from its recorded links. A stored page whose links never
        reached the journal (killed in between) is fetched again for them (None)."""
        if self.refresh or not await asyncio.to_thread(self.memory.has_page, event.url):
            return None
        known = self.resume_links.get(event.url)
        if known is None and self.replay is None:
            return None
        self.budget.refund()  # no request made: not an attempt (limits.py)
        self.finish(event, "skipped", "already stored (refresh to fetch it again)")
        return list(known or [])

    async def attempts(
        self, event: HarvestEvent, read: ReadAttempt, *, robots: RobotsFetch | None = None, between: Any = None
    ) -> tuple[list[str], bool]:
        """``read()`` under the host's politeness slot, retried (at most twice, with backoff) on the retryable
        statuses and network errors. Every attempt is listed in ``event.attempts``. ``robots`` fetches the
        origin's robots.txt first (its Crawl-delay must be known before the first slot); ``between()`` settles
        the reader before a retry."""
        host = (urlsplit(event.url).hostname or "").lower()
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

    async def extract_and_queue(
        self,
        event: HarvestEvent,
        html: str,
        final_url: str,
        links: list[str],
        headers: dict[str, str],
        selector: str | None,
        region_html: str | None,
        status: int | None,
        content_type: str | None,
        fetched_at: str,
    ) -> tuple[list[str], bool]:
        """The tail every way of reading a page shares: size cap, duplicate check, extraction, max_pages, and
        the hand-off to the writer. Returns (links to follow, whether the page went to the writer)."""
        canonical_final = canonical_url(final_url)
        event.bytes_read = len(html.encode("utf-8", "replace"))
        if event.bytes_read > self.max_page_bytes:
            self.finish(event, "skipped", f"too large ({event.bytes_read} bytes of content)")
            return [], False
        if canonical_final in self.final_seen:
            self.finish(event, "skipped", f"duplicate of {canonical_final} (already harvested in this run)")
            return links, False
        self.final_seen.add(canonical_final)
        if selector and not region_html:
            logger.info("selector %r matched nothing on %s; extracting the whole page", selector, final_url)
            selector = None
        t1 = time.monotonic()
        extracted = await asyncio.to_thread(
            extract_page, html, final_url, headers=headers, region_html=region_html, selector=selector
        )
        event.timings.extract_s = time.monotonic() - t1
        if extracted is not None and extracted.lead_recovered:
            event.lead_recovered = extracted.lead_recovered
        if extracted is None:
            if event.partial is not None:  # a server that trickles: abandoned at the deadline
                self.finish(event, "failed", f"timed out: {event.partial}; nothing readable")
            else:
                self.finish(event, "skipped", "no readable text")
            return links, False
        if not await self._room_for(event, final_url):  # max_pages is the store's total (limits.py)
            self.finish(event, "skipped", self.budget.max_pages_reason())
            return links, False
        if self.budget.stop_reason and self.budget.stop_reason.startswith("disk full"):
            self.budget.release(event.replaces)
            self.finish(event, "failed", f"not stored: the harvest stopped ({self.budget.stop_reason})")
            return [], False
        self.accepted += 1
        event.links = filter_links(links, self.charter.allowed_domains)[:MAX_LINKS]
        await self.writer.queue.put(Fetched(event, extracted, status, content_type or "text/html", fetched_at))
        return links, True

    async def queue_pdf(
        self,
        event: HarvestEvent,
        extracted: ExtractedPage,
        page_texts: list[str],
        status: int | None,
        content_type: str,
        url: str,
    ) -> tuple[list[str], bool]:
        """The tail of a PDF read (``pdf.fetch_pdf``): duplicate check, max_pages and the hand-off to the writer."""
        canonical = canonical_url(url)
        if canonical in self.final_seen:
            self.finish(event, "skipped", f"duplicate of {canonical} (already harvested in this run)")
            return [], False
        self.final_seen.add(canonical)
        if not await self._room_for(event, url):  # max_pages is the store's total (limits.py)
            self.finish(event, "skipped", self.budget.max_pages_reason())
            return [], False
        self.accepted += 1
        event.links = []
        event.outcome, event.reason = "failed", None  # settled by the writer
        await self.writer.queue.put(Fetched(event, extracted, status, content_type, now(), pdf_pages=page_texts))
        return [], True

    async def _room_for(self, event: HarvestEvent, final_url: str) -> bool:
        """Whether the page may go to the store under max_pages (a page the store holds replaces itself)."""
        known = False
        if self.budget.pages_in_store:
            known = await asyncio.to_thread(self.memory.has_page, final_url)
        event.replaces = known
        return self.budget.accept(known)

    def finish(self, event: HarvestEvent, outcome: Outcome, reason: str | None) -> None:
        event.outcome = outcome
        event.reason = reason
        log = logger.info if outcome in ("blocked", "failed") else logger.debug
        log("%s %s: %s", outcome, event.url, reason)

    # -- bookkeeping ----------------------------------------------------------------------------------------------

    def texts_embedded(self) -> int:
        embedder = getattr(self.memory, "embedder", None)
        return int(getattr(embedder, "texts_embedded", 0) or 0)

    def record_events(self) -> None:
        """Sum the stage timings, record the events the journal has not taken yet, journal the summary."""
        for event in self.events:
            self.report.timings.fetch_s += event.timings.fetch_s
            self.report.timings.extract_s += event.timings.extract_s
        missing = self.journal.take_unjournaled(self.events)
        records = [dict(event.as_record(), run_id=self.run_id) for event in missing]
        self.report.events = list(self.journal.records) + records
        if records:
            try:
                self.memory.record_events(records)
            except Exception as exc:
                if is_disk_full(exc):
                    logger.error("cannot record %d harvest events for %s: disk full", len(records), self.charter.id)
                else:
                    logger.exception("cannot record harvest events for %s", self.charter.id)
        if self.budget.stop_reason:
            self.report.stopped = self.budget.stop_reason
        summary = summarize(self.report.events, self.report.elapsed_s)
        if self.report.stopped:
            summary["stopped"] = self.report.stopped
        self.report.summary_table = summary
        self.journal.record_summary(summary)


def _count_pages(memory: Memory) -> int:
    try:
        return memory.count_pages()
    except Exception as exc:  # an unreadable store counts as empty here; the writer will say more
        logger.warning("cannot count the pages of %s: %s", memory.charter_id, exc)
        return 0
