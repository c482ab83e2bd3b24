"""What every reader's host shares, wherever the pages are read: settling an event, the attempts under a host's
politeness slot (retries with backoff, robots.txt first), and the first half of the tail of a page read (size cap,
extraction). The crawl (``crawl.Crawl``, one machine) and a Ray worker's host (``ray_worker.WorkerHost``) are
both a ``ReadingHost``: one pipeline, read in one process or fanned out."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .detached import detached
from .extract import ExtractedPage, extract_page
from .net.politeness import MAX_RETRIES, Politeness, Robots, backoff_delay, retryable

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from ..charter import Charter, Harvest
    from .models import HarvestEvent, Outcome
    from .reader import ReadAttempt, RobotsFetch

__all__ = ["ReadingHost"]

logger = logging.getLogger(__name__)


_CHARSET = re.compile(r"charset=[\"']?([\w.:-]+)", re.IGNORECASE)


def decode_html(body: bytes | None, headers: dict[str, str]) -> str | None:
    """``body`` as text, in the charset its Content-Type names (else UTF-8); None for no body."""
    if not body:
        return None
    charset = _CHARSET.search(headers.get("content-type", ""))
    try:
        return body.decode(charset.group(1) if charset else "utf-8", "replace")
    except LookupError:  # a charset Python does not know
        return body.decode("utf-8", "replace")


class ReadingHost:
    """The reader-facing half of a crawl host: ``charter``, ``settings``, per-host politeness and robots.txt."""

    charter: Charter
    settings: Harvest
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

    def over_size(self, event: HarvestEvent, html: str) -> bool:
        """Settle ``event`` as skipped (and say True) when the page's content is over ``max_page_bytes``."""
        event.bytes_read = len(html.encode("utf-8", "replace"))
        if event.bytes_read > self.max_page_bytes:
            self.finish(event, "skipped", f"too large ({event.bytes_read} bytes of content)")
            return True
        return False

    async def extract_read(
        self,
        event: HarvestEvent,
        html: str,
        final_url: str,
        headers: dict[str, str],
        selector: str | None,
        region_html: str | None,
        served: Callable[[], Awaitable[str | None]] | None = None,
    ) -> ExtractedPage | None:
        """Extract a page read (its selector's region, else the whole page); None (``event`` settled) when
        nothing readable is left. ``served`` gives the HTML the server sent for the document: read when the
        rendered page has no readable text (a script blanked or replaced it: ad-block walls, a failed
        hydration), recorded as the event's ``text_from``."""
        if selector and not region_html:
            logger.info("selector %r matched nothing on %s; extracting the whole page", selector, final_url)
            selector = None
        t1 = time.monotonic()
        # detached: a harvest that stops at max_duration_s does not wait for the extraction of a huge page
        extracted = await detached(
            extract_page, html, final_url, headers=headers, region_html=region_html, selector=selector
        )
        if extracted is None and served is not None:
            source = await served()
            if source and source != html:
                extracted = await detached(
                    extract_page, source, final_url, headers=headers, region_html=None, selector=selector
                )
                if extracted is not None:
                    logger.info("the rendered %s has no readable text; read the HTML it was served", final_url)
                    event.text_from = "served"
        event.timings.extract_s = time.monotonic() - t1
        if extracted is not None and extracted.lead_recovered:
            event.lead_recovered = extracted.lead_recovered
        if extracted is None:
            if event.partial is not None:  # a server that trickles: abandoned at the deadline
                self.finish(event, "failed", f"timed out: {event.partial}; nothing readable")
            else:
                self.finish(event, "skipped", "no readable text")
        return extracted
