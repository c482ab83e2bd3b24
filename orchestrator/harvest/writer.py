"""The store writer of a harvest: extracted pages are chunked, embedded and stored in batches (``memory.add_many``
in a worker thread) while the readers go on fetching. At the crawl's hard stop (``halt``, max_duration_s) a batch
being embedded stops at the model's next batch and is not written, and the pages still waiting fail."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import HarvestError, first_line
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
# Pages read and waiting for the writer: beyond this the readers wait, so a crawl that reads faster than it embeds
# holds two batches of page texts in memory, not the whole crawl.
QUEUE_PAGES = 2 * BATCH_PAGES


class Writer:
    """Takes ``Fetched`` pages handed over with ``put`` (``close`` ends it) and stores them in batches of up to
    ``BATCH_PAGES`` (or what came within ``BATCH_WAIT_S``). Each page's event is settled ``stored`` (or ``failed``
    with the store error) through ``finish``, counted in ``report`` and journaled; ``release()`` gives a failed
    page's place under max_pages back, and ``accepted()`` is the number of pages handed over so far (the progress
    total). At most ``max_waiting`` pages wait for it; a writer that fails stops the run (``budget``) and fails the
    pages left waiting and any handed over later."""

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
        max_waiting: int = QUEUE_PAGES,
    ) -> None:
        self.memory = memory
        self.report = report
        self.progress = progress
        self.journal = journal
        self.finish = finish
        self.release = release
        self.accepted = accepted
        self.queue: asyncio.Queue[Fetched | None] = asyncio.Queue(maxsize=max_waiting)
        self.budget: CrawlBudget | None = None  # the crawl's (limits.py): a full disk stops the run
        self.task: asyncio.Task[None] | None = None
        self.cause = "the store writer stopped"  # why it stopped, once it has
        # set at the crawl's hard stop (max_duration_s): pages not yet written are not embedded to their end
        self.halt = threading.Event()

    def start(self) -> asyncio.Task[None]:
        """Run the writer as a task of the running loop."""
        self.task = asyncio.create_task(self.run(), name="brt-writer")
        return self.task

    async def put(self, item: Fetched) -> None:
        """Hand a page to the (started) writer; waits while ``max_waiting`` pages wait already. When the writer
        has failed the page is settled ``failed`` at once: nothing waits for a writer that is gone."""
        task = self.task
        assert task is not None, "Writer.start() first"
        if not task.done() and await self._put_unless_ended(item, task):
            if task.done():  # it went in as the writer ended
                self._fail_waiting()
            return
        self._settle_failed(item, self.failure)

    async def close(self) -> None:
        """No more pages: the writer stores what waits and ends. Raises HarvestError (from the writer's own
        error) if it failed."""
        task = self.task
        if task is None:
            return
        if not task.done():
            await self._put_unless_ended(None, task)
        try:
            await task
        except Exception as exc:
            raise HarvestError(self.cause) from exc

    async def _put_unless_ended(self, item: Fetched | None, task: asyncio.Task[None]) -> bool:
        """Queue ``item`` unless the writer ends first; whether it was queued."""
        put = asyncio.ensure_future(self.queue.put(item))
        try:
            await asyncio.wait({put, task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not put.done():
                put.cancel()
        return put.done() and not put.cancelled()

    async def run(self) -> None:
        """Batch extracted pages (up to ``BATCH_PAGES``, or what came within ``BATCH_WAIT_S``) into
        ``memory.add_many`` in a thread. If the writer fails, the run stops and the waiting pages fail."""
        try:
            await self._run()
        except Exception as exc:
            logger.exception("the store writer failed")
            self.cause = f"the store writer failed ({type(exc).__name__}: {first_line(exc)})"
            if self.budget is not None:
                self.budget.stop(self.cause)
            self._fail_waiting()
            raise

    @property
    def failure(self) -> str:
        """The reason given to pages the writer will never store."""
        return f"not stored: {self.cause}"

    def _fail_waiting(self) -> None:
        while not self.queue.empty():
            item = self.queue.get_nowait()
            if item is not None:
                self._settle_failed(item, self.failure)

    def _settle_failed(self, item: Fetched, reason: str) -> None:
        self.release(item.event)
        self.finish(item.event, "failed", reason)
        self.progress.advance("fetch")
        self.journal.add(item.event)

    async def _run(self) -> None:
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
        from memory_store.errors import WriteStopped

        t0 = time.monotonic()
        stop = self.budget.stop_reason if self.budget is not None else None
        if stop and (stop.startswith("disk full") or self.halt.is_set()):
            # limits.py: the queue drains without writing (or embedding)
            for item in batch:
                self._settle_failed(item, self._stopped(stop))
            return
        try:
            inputs = [self.page_input(item) for item in batch]
            per_page = await asyncio.to_thread(self.add_many, inputs, batch)
        except WriteStopped:  # the hard stop came while the batch was embedded: nothing of it was written
            for item in batch:
                self._settle_failed(item, self._stopped(self.budget.stop_reason if self.budget else None))
            return
        except Exception as exc:
            full = is_disk_full(exc)
            if full and self.budget is not None:  # stop the run at once; what was stored stays (limits.py)
                self.budget.stop(f"disk full while writing the store ({first_line(exc)})")
                logger.error("disk full: storing %d page(s) failed; stopping the harvest", len(batch))
            else:
                logger.exception("storing %d page(s) failed", len(batch))
            what = "disk full" if full else "store error"
            for item in batch:
                self._settle_failed(item, f"{what}: {type(exc).__name__}: {first_line(exc)}")
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

    @staticmethod
    def _stopped(reason: str | None) -> str:
        if reason and reason.startswith("max_duration_s"):
            return f"stopped: {reason}"  # as the pages still being read when it passed
        return f"not stored: the harvest stopped ({reason})"

    def add_many(self, inputs: list[Any], batch: list[Fetched] | None = None) -> list[int]:
        """``memory.add_many`` for the batch (then the PDF pages' selectors); returns each page's chunk count.
        WriteStopped when the hard stop (``halt``) came first: nothing of the batch was written."""
        ids = self.memory.add_many(inputs, stop=self.halt)
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
