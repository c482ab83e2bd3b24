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

from memory_store.clock import now

from ..errors import HarvestError
from .extract import ExtractedPage
from .har import ReplayIndex
from .journal import Journal, load_links, read_events
from .limits import CrawlBudget, is_disk_full
from .models import Fetched, HarvestEvent, HarvestReport
from .net.urls import canonical_url, filter_links
from .reader import PageRead, PageReader, ReadingHost
from .revalidate import load_fingerprints
from .summary import summarize
from .workers import warm as warm_workers
from .writer import Writer

if TYPE_CHECKING:
    from memory_store import Memory

    from ..charter import Charter
    from ..progress import ProgressSink
    from .keep import KeptPages

__all__ = ["MAX_LINKS", "Crawl"]

logger = logging.getLogger(__name__)

#: Links followed from one page at most (kept in its event: what a resume continues from).
MAX_LINKS = 2000


class Crawl(ReadingHost):
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
        kept: KeptPages | None = None,
    ) -> None:
        self.charter = charter
        self.memory = memory
        self.kept = kept  # memory.enabled: false: pages kept as they are, no store (keep.py)
        self.progress = progress
        self.reader = reader
        self.replay = replay
        self.refresh = refresh
        self.settings = charter.harvest
        self.egress = charter.egress()  # built once: the readers, the fetcher, the proxy and the links use it
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
        self._warming: asyncio.Future[None] | None = None
        self.init_politeness()  # per-host slots and delays, robots.txt (reader.ReadingHost)
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
        if kept is not None:
            from .keep import KeepWriter

            self.writer = KeepWriter.instead_of(self.writer, kept)

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
                self.writer.start()
                try:
                    await self.breadth_first()
                finally:
                    try:
                        await self.close_writer()
                    except HarvestError as exc:  # the writer failed: the run stopped (writer.py)
                        exc.report = self.report  # type: ignore[attr-defined]  # completed by the finally below
                        raise
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
        self.budget.begin(pages_in_store=stored)
        self.writer.budget = self.budget
        events = await asyncio.to_thread(read_events, self.memory)
        self.resume_links = load_links(events)
        if self.refresh:  # a refresh first checks whether stored pages changed (revalidate.py)
            self.fingerprints = load_fingerprints(events)
        if self.replay is not None:  # the HAR's bodies: fingerprints without asking the browser for them
            self.replay_index = await asyncio.to_thread(ReplayIndex, self.replay)
        self.journal.start()
        # the page-reading workers start while the browser launches (workers.py)
        self._warming = asyncio.ensure_future(asyncio.to_thread(warm_workers))

    async def stop(self) -> None:
        """Flush the journal, then compact the store if this harvest wrote to it."""
        if self._warming is not None:
            await asyncio.gather(self._warming, return_exceptions=True)
        await self.journal.close()
        if self.report.pages_stored and self.kept is None:
            try:
                await asyncio.to_thread(self.memory.compact)
            except Exception as exc:  # compaction is housekeeping: never fails the harvest
                logger.warning("cannot compact the store of %s: %s", self.charter.id, exc)

    # -- the frontier -------------------------------------------------------------------------------------------

    async def breadth_first(self) -> None:
        """The crawl's levels (``levels``) under ``max_duration_s``, a hard stop: when it passes, the pages
        still being read are stopped (their events are settled as failed, saying so) and the crawl ends."""
        task = asyncio.ensure_future(self.levels())
        try:
            done, _ = await asyncio.wait({task}, timeout=self.budget.remaining_s())
        except asyncio.CancelledError:  # the harvest itself was cancelled
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            raise
        if done:
            task.result()
            return
        self.budget.stop(self.budget.duration_reason())  # first: the stopped pages' events give it as reason
        self.writer.halt.set()  # and pages not yet written are not embedded to their end
        logger.warning("%s: stopping the pages still being read", self.budget.stop_reason)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    async def close_writer(self) -> None:
        """The writer stores what waits for it, within what is left of ``max_duration_s``: past it the writer is
        halted (a batch being embedded stops within one slice and is not written; waiting pages fail), so a page
        of tens of thousands of chunks read just in time cannot hold the run for minutes."""
        closing = asyncio.ensure_future(self.writer.close())
        try:
            done, _ = await asyncio.wait({closing}, timeout=self.budget.remaining_s())
        except asyncio.CancelledError:
            await asyncio.gather(closing, return_exceptions=True)
            raise
        if not done:
            self.budget.stop(self.budget.duration_reason())
            self.writer.halt.set()
            logger.warning("%s: stopping the store writer", self.budget.stop_reason)
        await closing

    async def levels(self) -> None:
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
        for url in filter_links(urls, self.egress):
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
                stopped = self.budget.stop_reason
                self.finish(event, "failed", f"stopped: {stopped}" if stopped else "cancelled")
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

    async def hand_over(
        self, event: HarvestEvent, read: PageRead, extracted: ExtractedPage
    ) -> tuple[list[str], bool]:
        """The end of a page read (``ReadingHost.extract_and_queue``): max_pages, then the writer."""
        return await self.queue_page(event, extracted, read.links, read.status, read.content_type, read.fetched_at)

    def is_duplicate(self, event: HarvestEvent, final_url: str) -> bool:
        """Settle ``event`` as skipped (and say True) when its final URL was read already in this run."""
        canonical_final = canonical_url(final_url)
        if canonical_final in self.final_seen:
            self.finish(event, "skipped", f"duplicate of {canonical_final} (already harvested in this run)")
            return True
        self.final_seen.add(canonical_final)
        return False

    async def queue_page(
        self,
        event: HarvestEvent,
        extracted: ExtractedPage,
        links: list[str],
        status: int | None,
        content_type: str | None,
        fetched_at: str,
    ) -> tuple[list[str], bool]:
        """max_pages, then the hand-off of an extracted page to the writer (wherever it was read)."""
        refused = await self._admit(event, extracted.url)
        if refused is not None:
            return (links if refused == "skipped" else []), False
        event.links = filter_links(links, self.egress)[:MAX_LINKS]
        await self.writer.put(Fetched(event, extracted, status, content_type or "text/html", fetched_at))
        return list(event.links), True  # the links a resume would follow: at most MAX_LINKS

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
        if self.is_duplicate(event, url):
            return [], False
        return await self.queue_pdf_page(event, extracted, page_texts, status, content_type, url)

    async def queue_pdf_page(
        self,
        event: HarvestEvent,
        extracted: ExtractedPage,
        page_texts: list[str],
        status: int | None,
        content_type: str,
        url: str,
    ) -> tuple[list[str], bool]:
        """max_pages, then the hand-off of an extracted PDF to the writer (wherever it was read)."""
        if await self._admit(event, url) is not None:
            return [], False
        event.links = []
        event.outcome, event.reason = "failed", None  # settled by the writer
        await self.writer.put(Fetched(event, extracted, status, content_type, now(), pdf_pages=page_texts))
        return [], True

    async def _admit(self, event: HarvestEvent, final_url: str) -> str | None:
        """Whether a page that was read may go to the writer: None, or the outcome it was finished with (skipped
        under max_pages, the store's total (limits.py); failed once a full disk stopped the harvest)."""
        if not await self._room_for(event, final_url):
            self.finish(event, "skipped", self.budget.max_pages_reason())
            return "skipped"
        if self.budget.stop_reason and self.budget.stop_reason.startswith("disk full"):
            self.budget.release(event.replaces)
            self.finish(event, "failed", f"not stored: the harvest stopped ({self.budget.stop_reason})")
            return "failed"
        self.accepted += 1
        return None

    async def _room_for(self, event: HarvestEvent, final_url: str) -> bool:
        """Whether the page may go to the store under max_pages (a page the store holds replaces itself)."""
        known = False
        if self.budget.pages_in_store:
            known = await asyncio.to_thread(self.memory.has_page, final_url)
        event.replaces = known
        return self.budget.accept(known)

    # -- bookkeeping ----------------------------------------------------------------------------------------------

    def texts_embedded(self) -> int:
        if self.kept is not None:  # a harvest that keeps no store never loads the model
            return 0
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
        if self.report.egress is not None:  # the audit trail says how the browser was held (net/proxy.py)
            summary["egress"] = self.report.egress.as_record()
        if self.report.engine is not None:  # and where it ran (a Ray address comes from the operator only)
            summary["engine"] = dict(self.report.engine)
        self.report.summary_table = summary
        self.journal.record_summary(summary)


def _count_pages(memory: Memory) -> int:
    try:
        return memory.count_pages()
    except Exception as exc:  # an unreadable store counts as empty here; the writer will say more
        logger.warning("cannot count the pages of %s: %s", memory.charter_id, exc)
        return 0
