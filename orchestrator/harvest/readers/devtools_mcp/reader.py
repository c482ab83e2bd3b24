"""The chrome-devtools-mcp reader (``brt harvest --via devtools-mcp``): pages read one at a time through the
``navigate_page`` and ``evaluate_script`` tools of ``chrome-devtools-mcp`` (``client.py``). Everything after the
read is the crawl's, as for the Playwright reader.

Differences from the Playwright reader: one tab (pages are read one at a time); no HAR is recorded; requests the
allowlist stops inside the browser are not itemised per page (chrome-devtools-mcp drops them silently); PDFs are
not read; ``--refresh`` renders every page again (no fingerprints). ``harvest.render`` holds as for the Playwright
reader (documents fetched by brt's document fetcher: ``static.py``), but a page that needs rendering is fetched
again by chrome-devtools-mcp's browser."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import datetime, timezone
from email.utils import format_datetime
from typing import Any

from memory_store.clock import now

from .... import url_safety
from ....errors import (
    DevtoolsMcpError,
    NavigationAborted,
    NavigationRefused,
    PolicyRefused,
    error_kind,
    first_line,
)
from ... import launch
from ...models import HTML_TYPES, Egress, HarvestEvent, HarvestReport
from ...net.fetcher import DocumentFetcher
from ...net.guard import NetGuard
from ...net.proxy import EgressProxy, GuardPolicy
from ...net.urls import canonical_url
from ...reader import CrawlHost, PageRead
from ...static import StaticSource, read_static
from .client import ROBOTS_JS, DevtoolsMcpBrowser, find_devtools_mcp, read_js

__all__ = ["DevtoolsReader"]

logger = logging.getLogger(__name__)


class DevtoolsReader:
    """Reads pages through one chrome-devtools-mcp process (its own headless, isolated browser)."""

    name = "devtools-mcp"

    def __init__(self) -> None:
        self.command: list[str] | None = None
        self.host: CrawlHost = None  # type: ignore[assignment]  # set by open()
        self.browser: DevtoolsMcpBrowser | None = None
        self.guard: NetGuard | None = None
        self.fetcher: DocumentFetcher | None = None  # documents read without the browser (harvest.render)
        self.proxy: EgressProxy | None = None

    def prepare(self, report: HarvestReport) -> None:
        self.command = find_devtools_mcp()  # missing node or package: stop before anything is recorded
        report.har_path = None

    @asynccontextmanager
    async def open(self, host: CrawlHost) -> AsyncIterator[None]:
        self.host = host
        egress = host.egress
        self.guard = NetGuard(egress.exact_hosts, resolver_rules=egress.resolver_rules)
        self.fetcher = DocumentFetcher(self.guard, egress.permits, max_bytes=host.max_page_bytes)
        try:
            # the browser chrome-devtools-mcp launches sends every connection through brt's egress proxy
            async with EgressProxy(GuardPolicy(egress.permits, self.guard)) as proxy:
                self.proxy = proxy
                async with DevtoolsMcpBrowser(
                    host.charter.allowed_domains,
                    timeout_s=float(host.settings.timeout_s),
                    javascript=host.settings.javascript,
                    command=self.command,
                    chrome_args=launch.egress_args(proxy.url),
                ) as browser:
                    self.browser = browser
                    yield
        finally:
            await self.fetcher.aclose()

    def slots(self) -> list[Any]:
        return [None]  # one page at a time

    @property
    def fatal(self) -> BaseException | None:
        return None

    def finish_report(self, report: HarvestReport) -> None:
        if self.proxy is not None:
            report.egress = Egress(enforced=True, by="proxy")
            report.egress.add_refused([f"{r.target}: {r.reason}" for r in self.proxy.refused])

    async def visit(self, event: HarvestEvent, slot: Any) -> tuple[list[str], bool, Any]:
        """One URL: politeness slot per host and retries, as on the Playwright path."""
        links: list[str] = []
        queued = False
        try:
            links, queued = await self.host.attempts(event, lambda: self._read(event))
        except DevtoolsMcpError as exc:
            self.host.finish(event, "failed", str(exc))
        except Exception as exc:  # one page never stops the harvest
            logger.exception("unexpected error harvesting %s", event.url)
            self.host.finish(event, "failed", f"internal error: {type(exc).__name__}: {first_line(exc)}")
        return links, queued, slot

    async def _read(self, event: HarvestEvent) -> tuple[list[str], bool]:
        """One try at one URL through chrome-devtools-mcp."""
        host = self.host
        assert self.browser is not None
        url = event.url
        timeout_s = float(host.settings.timeout_s)
        t0 = time.monotonic()

        known = await host.skip_stored(event)  # a resume continues the BFS from the stored page's links
        if known is not None:
            return known, False
        refused = await self._guard_check(url)
        if refused:
            self.host.finish(event, "blocked", refused)
            return [], False
        if host.settings.obey_robots and not await host.robots.allowed(url, self._robots_fetch(timeout_s)):
            event.timings.fetch_s = time.monotonic() - t0
            self.host.finish(event, "blocked", "blocked by robots.txt")
            return [], False
        static = await read_static(host, event, StaticSource(fetcher=self.fetcher), t0 + timeout_s, t0)
        if static is not None:  # harvest.render: read from the HTML brt fetched (static.py)
            return static

        nav, info = await self.browser.open(url, timeout_s)
        final_url = str(info.get("url") or "")
        if not nav.ok and (not final_url.startswith(("http:", "https:")) or "timeout" not in nav.text.lower()):
            event.timings.fetch_s = time.monotonic() - t0
            await self._navigation_error(event, nav.text)
            return [], False

        if not final_url.startswith(("http:", "https:")):  # an error page (chrome-error://...)
            event.timings.fetch_s = time.monotonic() - t0
            self.host.finish(event, "failed", f"navigation failed: {first_line(nav.text)}")
            return [], False
        event.final_url = final_url
        status = info.get("status")
        event.status = int(status) if isinstance(status, (int, float)) and status else None
        content_type = (info.get("contentType") or "").split(";", 1)[0].strip().lower() or None
        headers: dict[str, str] = {}
        if content_type:
            headers["content-type"] = content_type
        last_modified = info.get("lastModifiedMs")
        now_ms = info.get("nowMs")
        # document.lastModified is the Last-Modified header, or "now" when the response had none.
        if isinstance(last_modified, (int, float)) and isinstance(now_ms, (int, float)):
            if abs(now_ms - last_modified) > 60_000:
                stamp = datetime.fromtimestamp(last_modified / 1000, tz=timezone.utc)
                headers["last-modified"] = format_datetime(stamp, usegmt=True)

        if not host.egress.permits(final_url):
            event.timings.fetch_s = time.monotonic() - t0
            self.host.finish(event, "blocked", f"final URL not on allowed_domains: {final_url}")
            return [], False
        refused = await self._guard_check(final_url)
        if refused:
            event.timings.fetch_s = time.monotonic() - t0
            self.host.finish(event, "blocked", refused)
            return [], False
        if event.status is not None and event.status >= 400:
            event.timings.fetch_s = time.monotonic() - t0
            self.host.finish(event, "failed", f"HTTP {event.status}")
            return [], False
        if content_type is not None and content_type not in HTML_TYPES:
            event.timings.fetch_s = time.monotonic() - t0
            self.host.finish(event, "skipped", f"unsupported content type ({content_type})")
            return [], False

        canonical_final = canonical_url(final_url)
        host.seen.add(canonical_final)
        selector = host.charter.selector_for(url_safety.hostname(final_url))
        page = await self.browser.evaluate(read_js(selector))
        html = str(page.get("html") or "")
        links = [h for h in page.get("links") or [] if isinstance(h, str)]
        region_html = page.get("region") if selector else None
        fetched_at = now()
        event.timings.fetch_s = time.monotonic() - t0
        read = PageRead(
            html=html,
            final_url=final_url,
            links=links,
            headers=headers,
            status=event.status,
            content_type=content_type,
            fetched_at=fetched_at,
            selector=selector,
            region_html=region_html,
        )
        return await host.extract_and_queue(event, read)

    async def _navigation_error(self, event: HarvestEvent, text: str) -> None:
        first = first_line(text)
        assert self.browser is not None
        requests = await self.browser.document_requests()
        offsite = next((u for u in reversed(requests) if not self.host.egress.permits(u)), None)
        kind = error_kind(text)
        if offsite or kind in (NavigationRefused, PolicyRefused):
            event.final_url = offsite
            self.host.finish(event, "blocked", f"navigation to a host not on allowed_domains: {offsite or event.url}")
        elif kind is NavigationAborted:
            self.host.finish(event, "skipped", "unsupported content type (download)")
        else:
            self.host.finish(event, "failed", first)

    async def _guard_check(self, url: str) -> str | None:
        guard = self.guard
        if guard is None:
            return None
        try:
            return await guard.check(url)
        except Exception as exc:  # the guard is advisory here; the allowlist still holds
            logger.debug("net guard on %s: %s", url, exc)
            return None

    def _robots_fetch(self, timeout_s: float) -> Callable[[str], Awaitable[str | None]]:
        """How this reader fetches ``<origin>/robots.txt``: through the same browser (guard checked first)."""

        async def fetch(origin: str) -> str | None:
            assert self.browser is not None
            body: str | None = None
            try:
                if not await self._guard_check(origin + "/robots.txt"):
                    nav = await self.browser.navigate(origin + "/robots.txt", min(10.0, timeout_s))
                    if nav.ok:
                        info = await self.browser.evaluate(ROBOTS_JS)
                        status = info.get("status")
                        if isinstance(status, (int, float)) and 200 <= status < 300:
                            body = str(info.get("text") or "")[:500_000]
            except DevtoolsMcpError as exc:
                logger.debug("no robots.txt for %s: %s", origin, exc)
            return body

        return fetch
