"""The seam between the crawl and the browser: a ``PageReader`` reads one URL at a time for the crawl, and the
crawl offers every reader the same ``CrawlHost`` (settings, limits, politeness and retries, robots.txt, the
hand-over to the store writer).

Two readers exist: ``readers.playwright`` (Playwright + Chromium: HAR recording and replay, crash recovery,
fingerprints for ``--refresh``) and ``readers.devtools_mcp`` (brt as an MCP client of chrome-devtools-mcp). A new
reader implements ``PageReader``; the crawl, its limits and the events stay as they are.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from memory_store import Memory

    from ..charter import Charter, Harvest
    from .extract import ExtractedPage
    from .har import ReplayIndex
    from .models import HarvestEvent, HarvestReport, Outcome
    from .net.politeness import Robots

__all__ = ["CrawlHost", "PageReader", "ReadAttempt", "RobotsFetch"]

#: One try at one URL: returns (links to follow, whether the page went to the store writer).
ReadAttempt = Callable[[], Awaitable[tuple[list[str], bool]]]
#: The body of ``<origin>/robots.txt`` (None when there is none).
RobotsFetch = Callable[[str], Awaitable[str | None]]


class CrawlHost(Protocol):
    """What the crawl offers a reader."""

    charter: Charter
    settings: Harvest
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
        served: Callable[[], Awaitable[str | None]] | None = None,
    ) -> tuple[list[str], bool]:
        """Size cap, duplicate check, extraction, max_pages and the hand-over to the writer of a page read
        (``served``: the HTML the server sent, read when the rendered page has no readable text)."""
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
