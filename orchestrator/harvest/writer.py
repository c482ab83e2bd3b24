"""The store writer of a harvest: extracted pages are chunked, embedded and stored in batches (``memory.add_many``
in a worker thread) while the readers go on fetching."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import first_line
from .limits import CrawlBudget, is_disk_full
from .pages import page_input
from .pdf import set_page_selectors

if TYPE_CHECKING:
    from memory_store import Memory

    from ..progress import ProgressSink
    from .journal import Journal
    from .models import Fetched, HarvestEvent, HarvestReport, Outcome

__all__ = ["Writer"]

logger = logging.getLogger(__name__)

# Up to 32 pages per ``add_many``: while the writer embeds one batch the readers queue the next pages, and a
# backlog is taken in one batch (one LanceDB write, texts length-sorted across more pages: less padding) instead
# of slices of 8. With 8, 60 pages took 8+ serial writes beside the embedding (bench/harvest_speed.py).
BATCH_PAGES = 32
BATCH_WAIT_S = 1.0


class Writer:
    """Takes ``Fetched`` pages from ``queue`` (None ends it) and stores them in batches of up to ``BATCH_PAGES``
    (or what came within ``BATCH_WAIT_S``). Each page's event is settled ``stored`` (or ``failed`` with the store
    error) through ``finish``, counted in ``report`` and journaled; ``release()`` gives a failed page's place under
    max_pages back, and ``accepted()`` is the number of pages handed over so far (the progress total)."""

    def __init__(
        self,
        memory: Memory,
        report: HarvestReport,
        progress: ProgressSink,
        journal: Journal,
        *,
        finish: Callable[[HarvestEvent, Outcome, str | None], None],
        release: Callable[[HarvestEvent], None],
        accepted: Callable[[], int],
    ) -> None:
        self.memory = memory
        self.report = report
        self.progress = progress
        self.journal = journal
        self.finish = finish
        self.release = release
        self.accepted = accepted
        self.queue: asyncio.Queue[Fetched | None] = asyncio.Queue()
        self.budget: CrawlBudget | None = None  # the crawl's (limits.py): a full disk stops the run

    async def run(self) -> None:
        """Batch extracted pages (up to ``BATCH_PAGES``, or what came within ``BATCH_WAIT_S``) into
        ``memory.add_many`` in a thread."""
        loop = asyncio.get_running_loop()
        done = False
        while not done:
            item = await self.queue.get()
            if item is None:
                break
            batch = [item]
            deadline = loop.time() + BATCH_WAIT_S
            while len(batch) < BATCH_PAGES:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                try:
                    nxt = await asyncio.wait_for(self.queue.get(), timeout=remaining)
                except asyncio.TimeoutError:
                    break
                if nxt is None:
                    done = True
                    break
                batch.append(nxt)
            await self.store(batch)

    async def store(self, batch: list[Fetched]) -> None:
        t0 = time.monotonic()
        stop = self.budget.stop_reason if self.budget is not None else None
        if stop and stop.startswith("disk full"):  # limits.py: the queue drains without writing (or embedding)
            for item in batch:
                self.release(item.event)
                self.finish(item.event, "failed", f"not stored: the harvest stopped ({stop})")
                self.progress.advance("fetch")
                self.journal.add(item.event)
            return
        try:
            inputs = [self.page_input(item) for item in batch]
            per_page = await asyncio.to_thread(self.add_many, inputs, batch)
        except Exception as exc:
            full = is_disk_full(exc)
            if full and self.budget is not None:  # stop the run at once; what was stored stays (limits.py)
                self.budget.stop(f"disk full while writing the store ({first_line(exc)})")
                logger.error("disk full: storing %d page(s) failed; stopping the harvest", len(batch))
            else:
                logger.exception("storing %d page(s) failed", len(batch))
            what = "disk full" if full else "store error"
            for item in batch:
                self.release(item.event)
                self.finish(item.event, "failed", f"{what}: {type(exc).__name__}: {first_line(exc)}")
                self.progress.advance("fetch")
                self.journal.add(item.event)
            return
        elapsed = time.monotonic() - t0
        self.report.timings.store_s += elapsed
        for item, chunks in zip(batch, per_page, strict=True):
            item.event.timings.store_s = elapsed / len(batch)
            item.event.chunks = chunks
            self.finish(item.event, "stored", None)
            self.report.pages_stored += 1
            self.report.chunks_total += chunks
            self.progress.advance("fetch")
            self.journal.add(item.event)
        self.progress.advance("embed", len(batch), total=self.accepted())

    def add_many(self, inputs: list[Any], batch: list[Fetched] | None = None) -> list[int]:
        """``memory.add_many`` for the batch (then the PDF pages' selectors); returns each page's chunk count."""
        ids = self.memory.add_many(inputs)
        self.after_store(batch or [])
        if len(inputs) == 1:
            return [len(ids)]
        counts = []
        for item in inputs:
            record = self.memory.page(item.url)
            counts.append(len(record.chunk_ids) if record is not None else 0)
        return counts

    def after_store(self, batch: list[Fetched]) -> None:
        """In the writer's thread, right after ``add_many``: per-page selectors of stored PDFs."""
        for item in batch:
            pages = item.pdf_pages
            if pages:
                try:
                    set_page_selectors(self.memory, item.extracted.url, pages)
                except Exception:
                    logger.exception("cannot set the page selectors of %s", item.extracted.url)

    @staticmethod
    def page_input(item: Fetched) -> Any:
        return page_input(
            item.extracted,
            requested_url=item.event.url,
            fetched_at=item.fetched_at,
            status=item.status,
            content_type=item.content_type,
        )
