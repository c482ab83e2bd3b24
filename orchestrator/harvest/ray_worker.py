"""What runs inside the Ray workers of a harvest on Ray (``ray_engine`` drives them). Plain classes: ``ray_engine``
makes them actors with ``ray.remote``, so importing this module never imports Ray.

- ``BrowserWorker``: one headless Chromium per worker, read through the same ``PlaywrightReader`` as a local
  harvest (launch flags, allowlist routing, SSRF guard, HAR recording of its own context, crash relaunches) with a
  ``WorkerHost``: the same politeness, retries and robots.txt (``reader.ReadingHost``) for the hosts the driver
  gave this worker, and the same extraction. What a worker read goes back to the driver as a ``Handoff``; the
  duplicate check, max_pages, the journal and the store writer stay in the driver.
- ``EmbedWorker``: the embedding model, loaded once per worker; it chunks pages (the tokenizer lives with the
  model) and embeds chunk texts for the driver's ``PooledEmbedder``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import socket
import tempfile
import zlib
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_store.clock import now

from ..errors import first_line
from .models import Egress, HarvestReport
from .reader import ReadingHost

if TYPE_CHECKING:
    from ..charter import Charter, Harvest
    from .extract import ExtractedPage
    from .models import HarvestEvent
    from .reader import PageRead

__all__ = ["BrowserWorker", "EmbedWorker", "Handoff", "VisitResult", "WorkerClosed", "WorkerHost"]

logger = logging.getLogger(__name__)


@dataclass
class Handoff:
    """A page a worker read and extracted, for the driver's duplicate check, max_pages and store writer."""

    extracted: ExtractedPage
    final_url: str
    links: list[str]
    status: int | None
    content_type: str | None
    fetched_at: str
    pdf_pages: list[str] | None = None  # a PDF's text per page


@dataclass
class VisitResult:
    """What a worker returns for one URL: the settled (or handed-over) event and the links to follow."""

    event: HarvestEvent
    links: list[str]
    handoff: Handoff | None
    seen: list[str]  # canonical URLs the reader marked seen meanwhile (final URLs of pages it read)
    fatal: str | None = None  # the worker's browser gave up (crashed too often): it takes no more pages


@dataclass
class WorkerClosed:
    """What a worker's browser side adds to the harvest's report when it closes (``finish_report``)."""

    hars: list[tuple[str, bytes, bool]] = field(default_factory=list)  # (file name, zlib'd HAR, incomplete)
    blocked_requests: list[str] = field(default_factory=list)
    block_resources: list[str] = field(default_factory=list)
    aborted_requests: dict[str, int] = field(default_factory=dict)
    browser_relaunches: int = 0
    egress: Egress | None = None


class WorkerHost(ReadingHost):
    """The ``CrawlHost`` a worker's reader sees: politeness, retries and robots.txt of the worker's hosts, the
    size cap and extraction; the store is the driver's (it checked ``skip_stored`` before sending the URL)."""

    def __init__(self, charter: Charter, settings: Harvest) -> None:
        self.charter = charter
        self.settings = settings
        self.egress = charter.egress()
        self.memory: Any = None  # never touched: --refresh is not offered on Ray
        self.replay: Path | None = None
        self.refresh = False
        self.seen: set[str] = set()  # drained into every VisitResult
        self.final_seen: set[str] = set()
        self.resume_links: dict[str, list[str]] = {}
        self.fingerprints: dict[str, dict[str, Any]] = {}
        self.replay_index: Any = None
        self.handoffs: dict[int, Handoff] = {}
        self.init_politeness()

    async def skip_stored(self, event: HarvestEvent) -> list[str] | None:
        return None  # the driver settled stored pages before sending the URL here

    async def hand_over(
        self, event: HarvestEvent, read: PageRead, extracted: ExtractedPage
    ) -> tuple[list[str], bool]:
        """The page goes back to the driver (its duplicate check, max_pages and writer)."""
        self.handoffs[id(event)] = Handoff(
            extracted, read.final_url, list(read.links), read.status, read.content_type, read.fetched_at
        )
        return read.links, True

    async def queue_pdf(
        self,
        event: HarvestEvent,
        extracted: ExtractedPage,
        page_texts: list[str],
        status: int | None,
        content_type: str,
        url: str,
    ) -> tuple[list[str], bool]:
        self.handoffs[id(event)] = Handoff(extracted, url, [], status, content_type, now(), pdf_pages=page_texts)
        return [], True


class BrowserWorker:
    """One Ray actor: a headless Chromium reading ``tabs`` pages at a time for the driver."""

    def __init__(self, charter: Charter, tabs: int, index: int) -> None:
        self.charter = charter
        self.index = index
        self.settings = charter.harvest.model_copy(update={"concurrency": tabs})
        self.host = WorkerHost(charter, self.settings)
        self.report = HarvestReport(charter_id=charter.id)
        self.workdir: Path | None = None
        self.reader: Any = None
        self.stack: AsyncExitStack | None = None
        self.slots: asyncio.Queue[Any] = asyncio.Queue()

    async def start(self) -> dict[str, Any]:
        """Launch the browser; returns where the worker runs, or ``error`` (type and message) when it cannot."""
        from .readers.playwright.reader import PlaywrightReader

        self.workdir = Path(tempfile.mkdtemp(prefix=f"brt-ray-worker{self.index}-"))
        self.reader = PlaywrightReader(self.workdir)
        self.reader.prepare(self.report)
        self.stack = AsyncExitStack()
        info: dict[str, Any] = {"pid": os.getpid(), "node": socket.gethostname(), "workdir": str(self.workdir)}
        try:
            await self.stack.enter_async_context(self.reader.open(self.host))
        except Exception as exc:  # noqa: BLE001 - reported to the driver, which raises it
            shutil.rmtree(self.workdir, ignore_errors=True)
            return info | {"error": type(exc).__name__, "message": str(exc)}
        for slot in self.reader.slots():
            self.slots.put_nowait(slot)
        return info

    async def visit(self, event: HarvestEvent) -> VisitResult:
        """Read ``event.url`` in a free tab (retries, politeness, crash recovery: as in a local harvest)."""
        slot = await self.slots.get()
        links: list[str] = []
        queued = False
        try:
            links, queued, slot = await self.reader.visit(event, slot)
        except Exception as exc:  # one page never stops the harvest
            logger.exception("unexpected error harvesting %s", event.url)
            self.host.finish(event, "failed", f"internal error: {type(exc).__name__}: {first_line(exc)}")
        finally:
            self.slots.put_nowait(slot)
        handoff = self.host.handoffs.pop(id(event), None)
        seen = list(self.host.seen)
        self.host.seen.clear()
        fatal = self.reader.fatal
        return VisitResult(event, list(links), handoff if queued else None, seen, str(fatal) if fatal else None)

    async def close(self) -> WorkerClosed:
        """Close the browser (which writes its HARs) and hand the HARs and the report's browser side back."""
        if self.stack is not None:
            await self.stack.aclose()
        report = self.report
        if self.reader is not None:
            self.reader.finish_report(report)
        out = WorkerClosed(
            blocked_requests=list(report.blocked_requests),
            block_resources=list(report.block_resources),
            aborted_requests=dict(report.aborted_requests),
            browser_relaunches=report.browser_relaunches,
            egress=report.egress,
        )
        for path in report.har_paths:
            if path.is_file():
                out.hars.append((path.name, zlib.compress(path.read_bytes(), 1), path in report.har_incomplete))
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
        return out


class EmbedWorker:
    """One Ray actor holding the embedding model (loaded once): chunks pages and embeds texts."""

    def __init__(self, model: str, precision: str | None) -> None:
        from memory_store import get_embedder

        self.embedder = get_embedder(model, precision=precision)

    def info(self) -> dict[str, Any]:
        emb = self.embedder
        return {
            "name": emb.name,
            "dim": int(emb.dim),
            "precision": emb.precision,
            "recipe": emb.recipe,
            "max_tokens": int(emb.max_tokens),
            "special_tokens": int(emb.special_tokens),
            "query_instruction": emb.query_instruction,
        }

    def chunk_pages(self, inputs: dict[str, Any]) -> dict[str, Any]:
        from memory_store import chunk_locally

        return chunk_locally(self.embedder, inputs)

    def embed_documents(self, texts: list[str]) -> Any:
        return self.embedder.embed_documents(texts)

    def embed_queries(self, texts: list[str]) -> Any:
        return self.embedder.embed_queries(texts)

    def count_tokens_batch(self, texts: list[str]) -> list[int]:
        return self.embedder.count_tokens_batch(texts)

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        return self.embedder.token_offsets(text)
