"""The Playwright reader: pages read in tabs of one headless Chromium (``browser.py``), every request checked by
the allowlist and SSRF guard, documents fetched by brt itself, everything recorded as HAR (or served from a
replay HAR). A page is read from its serialised DOM, within its deadline, and cited under the URL it was served
from (``bounds.py``). A crashed browser is relaunched (``crash.py``) and the pages in flight tried once more; with
``--refresh`` a stored page whose inputs are unchanged is not rendered again (``revalidate.py``).

The browser and a visit's tab start only when a page must be rendered (``_Tab``): a page read from its served
HTML (``static.py``) needs neither, so a harvest under ``render: auto`` whose pages are all static never launches
Chromium."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_store.clock import now
from memory_store.errors import BrtException

from .... import url_safety
from ....errors import (
    BrowserNotFound,
    DownloadStarted,
    HarvestError,
    NavigationAborted,
    NavigationRefused,
    browser_error,
    error_kind,
    first_line,
)
from ...crash import BROWSER_CRASHED, PAGE_CRASHED, BrowserWatch, crashed_attempt
from ...extract import decode_html, select_region
from ...har import har_path_for, sha256_hex
from ...models import HTML_TYPES, Egress, HarvestEvent, HarvestReport, media_type
from ...net.guard import is_guard_reason
from ...net.politeness import retry_after
from ...net.urls import canonical_url
from ...pdf import fetch_pdf, is_pdf_candidate
from ...reader import PageRead
from ...revalidate import DependencyWatch, Revalidator, fingerprint
from ...static import StaticSource, read_static
from ...workers import WorkLimit, in_worker
from .bounds import RESOURCE_FACTOR, DocumentWatch, ResourceBudget, close_page, links_in, read_dom, read_links
from .browser import BrowserSession, open_browser
from .routes import goto_checked

if TYPE_CHECKING:
    from playwright.async_api import Page, Response

    from ...reader import CrawlHost

__all__ = ["PlaywrightReader", "count_aborted", "links_in"]

logger = logging.getLogger(__name__)


@dataclass
class _Loaded:
    """What brt's navigation loaded: the response it returned, brt's own fetch of the document (live), the URL
    the page is cited under (the served document's), the base for its links, the HTML when the page is kept as
    loaded, and the served document's status and headers."""

    response: Response | None
    nav: Any
    load_timed_out: bool
    final_url: str
    base_url: str = ""
    html: str | None = None
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str | None = None


class _NoTab(BrtException):
    """No tab could be opened (the browser is gone): ``error`` is Playwright's (or a timeout)."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class _Tab:
    """The tab of one run of a visit's attempts, opened when a page must be rendered (the browser launched first
    when it has not started): ``page`` (the slot's tab, or None), the crash listener and the main frame's
    ``DocumentWatch`` on it, and the pages used (``used``)."""

    def __init__(self, reader: PlaywrightReader, page: Page | None, used: list[Page]) -> None:
        self.reader = reader
        self.page = page
        self.used = used
        self.docs: DocumentWatch | None = None
        self.crashed = False

    async def open(self) -> tuple[Page, DocumentWatch]:
        """The tab and its document watch (the same for every retry of the run); ``_NoTab`` when the browser is
        gone, ``BrowserNotFound``/``HarvestError`` when it cannot be started."""
        from playwright.async_api import Error as PlaywrightError

        if self.docs is None:
            await self.reader.start_browser()
            try:
                page = await self.reader._usable_page(self.page)
            except (PlaywrightError, asyncio.TimeoutError) as exc:
                raise _NoTab(exc) from exc
            self.page = page
            self.used.append(page)
            page.on("crash", self._on_crash)
            self.docs = DocumentWatch(page).__enter__()
        assert self.page is not None
        return self.page, self.docs

    def _on_crash(self, _page: Page) -> None:
        self.crashed = True

    def close(self) -> None:
        """Remove what ``open`` attached to the tab."""
        if self.docs is not None and self.page is not None:
            self.page.remove_listener("crash", self._on_crash)
            self.docs.__exit__(None, None, None)
            self.docs = None


#: After the load event, how long a page may take to reach network idle (within its timeout).
IDLE_WAIT_S = 2.0
#: A renderer crash aborts the navigation before it reports: how long to wait for the crash event.
CRASH_EVENT_WAIT_S = 0.3


class PlaywrightReader:
    """Reads pages with Playwright (``replay``: from a HAR; ``browser_url``: in a fresh context of a running
    Chrome). One slot per tab: ``concurrency`` tabs, opened on first use inside a visit, so a browser that dies
    before its first tab opens is relaunched like any crash mid-harvest."""

    name = "playwright"

    def __init__(self, store_path: Path, *, replay: Path | None = None, browser_url: str | None = None) -> None:
        self.store_path = Path(store_path)
        self.replay = replay
        self.browser_url = browser_url
        self.har_path: Path | None = None
        self.host: CrawlHost = None  # type: ignore[assignment]  # set by open()
        self.session: BrowserSession | None = None
        self.watch: BrowserWatch | None = None  # browser crashes and relaunches (crash.py)
        self.revalidator: Revalidator | None = None
        self.blocked_urls: list[str] | None = None
        self.start_failure: BaseException | None = None  # the browser could not be started: the harvest stops

    def prepare(self, report: HarvestReport) -> None:
        self.har_path = har_path_for(self.store_path)
        report.har_path = self.har_path

    @asynccontextmanager
    async def open(self, host: CrawlHost) -> AsyncIterator[None]:
        self.host = host
        settings = host.settings
        assert self.har_path is not None
        async with open_browser(
            host.egress,
            har_path=self.har_path,
            javascript=settings.javascript,
            replay=self.replay,
            browser_url=self.browser_url,
            block_resources=settings.block_resources,
            lazy=True,
        ) as session:
            self.session = session
            session.default_timeout_s = float(settings.timeout_s)
            if session.fetcher is not None:
                session.fetcher.max_bytes = host.max_page_bytes
            self.watch = BrowserWatch(session)
            self.revalidator = Revalidator(
                host.charter,
                settings.javascript,
                host.egress,
                fetcher=session.fetcher,
                guard=session.guard,
                replay_index=host.replay_index if self.replay is not None else None,
            )
            yield
            self.blocked_urls = [b.url for b in session.blocked]

    def slots(self) -> list[Any]:
        return [None] * int(self.host.settings.concurrency)

    @property
    def fatal(self) -> BaseException | None:
        if self.start_failure is not None:
            return self.start_failure
        return self.watch.fatal if self.watch is not None else None

    async def start_browser(self) -> None:
        """Start the session's browser unless it runs already (the crash watch then follows it)."""
        assert self.session is not None and self.watch is not None
        if await self.session.start():
            self.watch.started()

    def finish_report(self, report: HarvestReport) -> None:
        if self.blocked_urls is not None:
            report.blocked_requests = list(self.blocked_urls)
        if self.session is not None:
            report.block_resources = sorted(self.session.block_resources)
            report.aborted_requests = count_aborted(self.session.aborted)
            report.browser_relaunches = self.session.relaunches
            report.har_paths = list(self.session.har_paths)
            report.har_incomplete = list(self.session.har_incomplete)
            report.egress = egress_record(self.session)
            report.popups_closed = self.session.pages.closed
            report.browser_started = self.session.started
            if not self.session.har_paths:  # no browser, and no document read without it: nothing recorded
                report.har_path = None

    async def visit(self, event: HarvestEvent, slot: Any) -> tuple[list[str], bool, Any]:
        """Read ``event.url`` in a tab (``slot``: the tab, or None before it opened)."""
        assert self.session is not None
        page: Page | None = slot
        links: list[str] = []
        queued = False
        used: list[Page] = []  # the pages this URL was tried in (a crash replaces the page)
        blocked_before = len(self.session.blocked)
        aborted_before = len(self.session.aborted)
        if self.session.attached:
            event.egress = NOT_ENFORCED
        try:
            links, queued, page = await self._attempts(page, event, used)
        except (BrowserNotFound, HarvestError) as exc:  # the browser cannot be started: the harvest stops
            if self.start_failure is None:
                self.start_failure = exc
            self.host.finish(event, "failed", f"the browser could not be started: {first_line(exc)}")
        except Exception as exc:  # one page never stops the harvest
            logger.exception("unexpected error harvesting %s", event.url)
            self.host.finish(event, "failed", f"internal error: {type(exc).__name__}: {exc}")
        finally:
            event.blocked_requests = [
                b.url
                for b in self.session.blocked[blocked_before:]
                if any(b.page is p for p in used) and not b.navigation
            ]
            event.aborted_requests = count_aborted(self.session.aborted[aborted_before:], used)
            if event.outcome != "stored" and not queued and event.reason != "HTTP 404" and event.navigated:
                # After an error, a download or a viewer (PDF) the page may still be busy: use a fresh one.
                page = await self._replace_page(page)
        return links, queued, page

    async def _attempts(
        self, page: Page | None, event: HarvestEvent, used: list[Page]
    ) -> tuple[list[str], bool, Page | None]:
        """The host's attempts (retries, politeness) in a page of the current browser. When the browser crashes
        meanwhile it is relaunched and the URL tried once more in the new one; when only the page's renderer
        crashed, in a fresh page (orchestrator/crash.py). Returns (links, queued, the page used last)."""
        watch = self.watch
        assert watch is not None
        retried = False
        while True:
            generation = watch.generation
            attempts_before = len(event.attempts)
            links, queued, page, error, page_crashed = await self._attempt_in(page, event, used)
            for n, entry in enumerate(event.attempts, start=1):  # numbered across crash retries
                entry["attempt"] = n
            if queued:
                self.session.pages_read.append(event.final_url or event.url)  # type: ignore[union-attr]
                return links, True, page
            kind = await watch.classify(generation, event, error, page_crashed)
            if kind is None:
                if error is not None:
                    raise error
                return links, False, page
            crashed_attempt(event, attempts_before, kind, error)
            what = BROWSER_CRASHED if kind == "browser" else PAGE_CRASHED
            logger.warning("%s while fetching %s", what, event.url)
            if kind == "browser":
                recovered = await watch.recover(generation)
            else:
                recovered = True
                page = await self._replace_page(page)
            if not recovered or retried:
                event.timings.fetch_s = sum(float(a.get("s") or 0) for a in event.attempts)
                if not recovered:
                    self.host.finish(event, "failed", f"{what}; not relaunched: {watch.fatal}")
                else:
                    self.host.finish(event, "failed", f"{what} twice (tried once more after the first crash)")
                return [], False, page
            retried = True  # the pages in flight at a crash are tried once more, in the new browser or page
            logger.info("trying %s again after the crash (%s)", event.url, what)
            event.start_over()

    async def _attempt_in(
        self, page: Page | None, event: HarvestEvent, used: list[Page]
    ) -> tuple[list[str], bool, Page | None, Exception | None, bool]:
        """One run of the host's attempts, in ``page`` (or a page of the current browser when it is gone) once a
        page must be rendered. Returns (links, queued, page, the Playwright error that escaped, whether the
        page's renderer crashed)."""
        from playwright.async_api import Error as PlaywrightError

        tab = _Tab(self, page, used)
        try:
            links, queued = await self._with_retries(tab, event)
            if not queued and tab.page is not None and not tab.crashed:
                if error_kind(event.reason) is NavigationAborted:
                    await asyncio.sleep(CRASH_EVENT_WAIT_S)  # a renderer crash aborts the navigation first
        except _NoTab as exc:  # the browser is gone
            return [], False, tab.page, exc.error, False
        except PlaywrightError as exc:  # the browser went away under a call outside _read_page's own care
            return [], False, tab.page, exc, tab.crashed
        finally:
            tab.close()
        return links, queued, tab.page, None, tab.crashed

    async def _with_retries(self, tab: _Tab, event: HarvestEvent) -> tuple[list[str], bool]:
        """``_read_page`` under the host's politeness and retries (robots.txt fetched first, the tab blanked
        between tries)."""

        async def read() -> tuple[list[str], bool]:
            if tab.docs is not None:
                tab.docs.responses.clear()
            return await self._read_page(tab, event)

        return await self.host.attempts(event, read, robots=self._robots_fetch(), between=lambda: _blank(tab.page))

    async def _usable_page(self, page: Page | None) -> Page:
        """``page``, or a new page of the current browser context when there is none yet, or ``page`` is closed
        or belongs to a browser that crashed and was replaced."""
        session = self.session
        assert session is not None
        if page is not None and page.context is session.context and not page.is_closed():
            return page
        return await session.new_page()

    async def _replace_page(self, page: Page | None) -> Page | None:
        from playwright.async_api import Error as PlaywrightError

        session = self.session
        assert session is not None
        if page is None or page.context is not session.context or not session.connected():
            return page  # of a crashed browser: gone with it (the next visit takes a page of the new browser)
        await close_page(page)  # a wedged page must not hang the harvest (left behind after CLOSE_TIMEOUT_S)
        try:
            return await session.new_page()
        except (PlaywrightError, asyncio.TimeoutError) as exc:  # the browser went away: the next visit sees it
            logger.info("cannot open a new page: %s", first_line(exc) if str(exc) else type(exc).__name__)
            return page

    async def _read_page(self, tab: _Tab, event: HarvestEvent) -> tuple[list[str], bool]:
        """One try: what settles a URL before any navigation, the page read from its served HTML
        (``harvest.render``), else rendered in the tab. Returns (allowed links, whether the page went to the
        writer)."""
        host = self.host
        t0 = time.monotonic()
        deadline = t0 + float(host.settings.timeout_s)
        early = await self._before_navigation(event, deadline, t0)
        if early is not None:
            return early
        static = await read_static(host, event, self._static_source(), deadline, t0)  # harvest.render
        if static is not None:
            return static
        page, docs = await tab.open()
        return await self._render_bounded(page, event, docs, deadline, t0)

    async def _render_bounded(
        self, page: Page, event: HarvestEvent, docs: DocumentWatch, deadline: float, t0: float
    ) -> tuple[list[str], bool]:
        """``_render`` with the page's bytes in the browser bounded (``ResourceBudget``: past the budget its loads
        are stopped and the page is not read)."""
        from playwright.async_api import Error as PlaywrightError

        limit = RESOURCE_FACTOR * int(self.host.settings.max_page_bytes)
        with DependencyWatch(page, replay=self.replay is not None, allowed=self.host.egress.permits) as watch:
            async with ResourceBudget(page, limit) as budget:  # security: a page's bytes in the browser are bounded
                try:
                    links, queued = await self._render(page, event, docs, watch, budget, deadline, t0)
                except PlaywrightError:
                    if not budget.tripped:
                        raise
                    links, queued = [], False  # the budget closed the page under a call: settled below
        if budget.tripped and not queued:
            self.host.finish(event, "failed", budget.reason)
            return [], False
        return links, queued

    async def _render(
        self, page: Page, event: HarvestEvent, docs: DocumentWatch, watch: Any, budget: ResourceBudget,
        deadline: float, t0: float,
    ) -> tuple[list[str], bool]:
        """The page rendered in ``page``: navigation, settling, then its DOM read and handed over."""
        host = self.host
        loaded = await self._navigate(page, event, docs, deadline, t0)
        if not isinstance(loaded, _Loaded):
            return loaded  # settled: the navigation failed (or a PDF was read instead)
        await self._settle(page, event, docs, loaded, deadline)
        if budget.tripped:  # its loads were stopped: what it shows is not the page (settled by _render_bounded)
            return [], False
        settled = self._refuse(event, loaded, t0)
        if settled is not None:
            if is_pdf_candidate(event, replay=self.replay is not None):
                return await fetch_pdf(host, self.session.fetcher, event, deadline, t0)  # type: ignore[union-attr]
            return settled
        host.seen.add(canonical_url(loaded.final_url))
        selector = host.charter.selector_for(url_safety.hostname(loaded.final_url))
        html = loaded.html if loaded.html is not None else await read_dom(page, deadline, grace_s=2.0)
        if html is None:  # the renderer never answered (the page was closed), or the page went away
            event.timings.fetch_s = time.monotonic() - t0
            host.finish(event, "failed", f"cannot read the rendered page within timeout_s ({deadline - t0:g} s)")
            return [], False
        # in a worker process (bounded, killed at a hard stop): the proxy and the other tabs run on this loop
        try:
            links, region_html = await in_worker(_links_and_region, html, loaded.base_url, selector,
                                                 limit_s=host.work_limit_s)
        except WorkLimit as exc:
            event.timings.fetch_s = time.monotonic() - t0
            host.finish(event, "failed", f"cannot read the page's links: {exc}")
            return [], False
        if loaded.html is None and event.partial is None:
            # (a page whose load event never came was read at the timeout: the same inputs, read the same way)
            event.fingerprint = await fingerprint(
                docs.document_response(loaded.response),
                watch,
                final_url=loaded.final_url,
                selector=selector,
                javascript=host.settings.javascript,
                known=self._known_sha(loaded.nav),
            )
        event.timings.fetch_s = time.monotonic() - t0
        read = PageRead(
            html=html,
            final_url=loaded.final_url,
            links=links,
            headers=loaded.headers,
            status=loaded.status,
            content_type=loaded.content_type,
            fetched_at=now(),
            selector=selector,
            region_html=region_html,
            served=self._served(loaded.nav, loaded.final_url, loaded.headers),
        )
        return await host.extract_and_queue(event, read)

    def _static_source(self) -> StaticSource:
        """Where ``static.read_static`` gets documents (brt's fetcher, or the replay HAR) and records them."""
        session = self.session
        assert session is not None
        return StaticSource(
            fetcher=session.fetcher,
            replay_index=self.host.replay_index if self.replay is not None else None,
            har_entries=session.har_extra,
            user_agent=session.user_agent,
            guard=session.guard,
        )

    async def _before_navigation(
        self, event: HarvestEvent, deadline: float, t0: float
    ) -> tuple[list[str], bool] | None:
        """What settles a URL before any navigation: already stored (a resume continues from its links),
        robots.txt, or unchanged since the last harvest (``--refresh``). None: navigate."""
        host = self.host
        known = await host.skip_stored(event)
        if known is not None:
            return known, False
        if host.settings.obey_robots and not await host.robots.allowed(event.url, self._robots_fetch(deadline)):
            event.timings.fetch_s = time.monotonic() - t0
            host.finish(event, "blocked", "blocked by robots.txt")
            return [], False
        if host.refresh and event.url in host.fingerprints:
            known = await self._unchanged(event, deadline)
            if known is not None:
                event.timings.fetch_s = time.monotonic() - t0
                return known, False
        return None

    async def _navigate(
        self, page: Page, event: HarvestEvent, docs: DocumentWatch, deadline: float, t0: float
    ) -> _Loaded | tuple[list[str], bool]:
        """brt's own navigation to ``event.url`` (``routes.goto_checked``: the browser never follows a redirect
        itself). Returns what loaded, or the settled result of a navigation that failed."""
        from playwright.async_api import Error as PlaywrightError
        from playwright.async_api import TimeoutError as PlaywrightTimeout

        session = self.session
        assert session is not None
        url = event.url
        blocked_before = len(session.blocked)
        response: Response | None = None
        load_timed_out = False
        session.expected_navigations.add(url)
        session.nav_deadlines[page] = (deadline, deadline - t0)
        session.nav_results.pop(page, None)
        event.navigated = True
        try:
            response = await goto_checked(session, page, url, deadline=deadline)
        except PlaywrightTimeout:
            load_timed_out = True
            logger.info("load event of %s timed out after %.0fs; taking the DOM as it is", url, deadline - t0)
        except PlaywrightError as exc:
            event.timings.fetch_s = time.monotonic() - t0
            nav = session.nav_results.get(page)
            self._navigation_error(event, exc, blocked_before, docs.responses, nav)
            if is_pdf_candidate(event, replay=self.replay is not None):
                return await fetch_pdf(self.host, session.fetcher, event, deadline, t0, nav)  # type: ignore[arg-type]
            return [], False
        finally:
            session.expected_navigations.discard(url)
            session.nav_deadlines.pop(page, None)
        docs.mark()
        nav = session.nav_results.pop(page, None)
        if nav is not None and nav.kind == "partial":
            event.partial = nav.reason
            logger.info("%s never finished loading: %s", url, nav.reason)
        fallback = getattr(nav, "url", None) or url
        return _Loaded(response=response, nav=nav, load_timed_out=load_timed_out,
                       final_url=docs.served_url(response, fallback))

    async def _settle(
        self, page: Page, event: HarvestEvent, docs: DocumentWatch, loaded: _Loaded, deadline: float
    ) -> None:
        """After the load event: the DOM as loaded, then network idle (within the deadline). The URL the page is
        cited under is the served document's (``bounds.DocumentWatch``), never ``location.href``. When a script
        navigated the tab after the load event to a place that was refused or failed (consent walls, ad-block
        probes), the page is kept as it was loaded from the allowed URL."""
        from playwright.async_api import Error as PlaywrightError
        from playwright.async_api import TimeoutError as PlaywrightTimeout

        host = self.host
        as_loaded: tuple[str, str, str] | None = None  # (served URL, location, HTML) at the load event
        document = docs.document_response(loaded.response)
        if not loaded.load_timed_out:
            html = await read_dom(page, deadline)
            if html is not None:
                as_loaded = (loaded.final_url, page.url, html)
            remaining = deadline - time.monotonic()
            if remaining > 0.05 and not page.is_closed():
                try:
                    await page.wait_for_load_state("networkidle", timeout=min(IDLE_WAIT_S, remaining) * 1000)
                except PlaywrightTimeout:
                    pass
                except PlaywrightError as exc:
                    logger.debug("networkidle wait on %s: %s", event.url, exc)
        loaded.final_url = docs.served_url(loaded.response, loaded.final_url)
        location = page.url if not page.is_closed() else loaded.final_url
        loaded.base_url = location if host.egress.permits(location) else loaded.final_url
        if as_loaded is not None and location != as_loaded[1] and host.egress.permits(as_loaded[1]):
            if not host.egress.permits(location) or not location.startswith(("http://", "https://")):
                logger.info("%s navigated to %s after loading; keeping the page as loaded", event.url, location)
                loaded.final_url, loaded.base_url, loaded.html = as_loaded
        if loaded.html is None:
            document = docs.document_response(loaded.response)
        if document is not None:
            loaded.status = document.status
            try:
                loaded.headers = await document.all_headers()
            except PlaywrightError:
                loaded.headers = dict(document.headers)
        loaded.content_type = media_type(loaded.headers)

    def _refuse(self, event: HarvestEvent, loaded: _Loaded, t0: float) -> tuple[list[str], bool] | None:
        """Settle a page brt will not read: its final URL off the allowlist, an error status, a type other than
        HTML (a PDF is then read by ``fetch_pdf``). None when it is to be read."""
        host = self.host
        event.final_url = loaded.final_url
        event.status = loaded.status
        if not host.egress.permits(loaded.final_url):
            host.finish(event, "blocked", f"final URL not on allowed_domains: {loaded.final_url}")
        elif loaded.status is not None and loaded.status >= 400:
            event.retry_after = retry_after(loaded.headers)
            host.finish(event, "failed", f"HTTP {loaded.status}")
        elif loaded.content_type is not None and loaded.content_type not in HTML_TYPES:
            host.finish(event, "skipped", f"unsupported content type ({loaded.content_type})")
        else:
            return None
        event.timings.fetch_s = time.monotonic() - t0
        return [], False

    def _served(self, nav: Any, final_url: str, headers: dict[str, str]) -> Callable[[], Awaitable[str | None]]:
        """The HTML the server sent for ``final_url``, as brt holds it without asking the browser: the replay
        HAR's body, or the document brt fetched itself (None when it holds neither)."""

        async def served() -> str | None:
            if self.host.replay_index is not None:
                body = await asyncio.to_thread(self.host.replay_index.body, final_url)
            else:
                body = nav.body if nav is not None and nav.kind == "ok" and nav.url == final_url else None
            return decode_html(body, headers)

        return served

    def _known_sha(self, nav: Any) -> Callable[[str], str | None]:
        """sha256 of bodies brt holds without asking the browser: the replay HAR's, or the document it fetched."""
        if self.host.replay_index is not None:
            return self.host.replay_index.sha
        if nav is not None and nav.kind == "ok":
            digest = sha256_hex(nav.body)
            return lambda url: digest if url == nav.url else None
        return lambda _url: None

    async def _unchanged(self, event: HarvestEvent, deadline: float) -> list[str] | None:
        """Refresh: when the stored page's inputs are byte-identical now, settle the event as unchanged and
        return the page's recorded links; None when the page must be rendered again."""
        host = self.host
        url = event.url
        fp = host.fingerprints[url]
        links = host.resume_links.get(url)
        if links is None or not await asyncio.to_thread(host.memory.has_page, fp.get("final_url") or url):
            return None
        try:
            assert self.revalidator is not None
            changed = await self.revalidator.what_changed(url, fp, deadline)
        except Exception:  # noqa: BLE001 - any doubt means rendering the page again
            logger.exception("revalidating %s failed; rendering it again", url)
            return None
        if changed is not None:
            logger.info("refresh: %s changed (%s); rendering it again", url, changed)
            return None
        event.unchanged = True
        event.fingerprint = fp
        event.final_url = fp.get("final_url")
        event.status = fp.get("status")
        event.links = list(links)
        host.final_seen.add(canonical_url(fp.get("final_url") or url))
        self.host.finish(event, "skipped", "unchanged since the last harvest (document and scripts identical)")
        return list(links)

    def _navigation_error(
        self,
        event: HarvestEvent,
        exc: Exception,
        blocked_before: int,
        responses: list[Response],
        nav: Any = None,
    ) -> None:
        kind = type(browser_error(exc))
        first = first_line(exc)
        if nav is not None and nav.kind in ("too large", "timeout", "error"):
            # the document fetch (orchestrator/fetcher.py) says why the navigation failed
            event.final_url = nav.url
            event.status = nav.status
            if nav.kind == "too large":
                self.host.finish(event, "skipped", nav.reason)
            else:
                self.host.finish(event, "failed", nav.reason)
            return
        new_blocks = self.session.blocked[blocked_before:] if self.session else []
        nav_blocks = [b for b in new_blocks if b.navigation and (b.source or event.url) == event.url]
        last = responses[-1] if responses else None
        last_type = media_type(last.headers) if last is not None else None
        if last is not None:
            event.final_url = last.url
            event.status = last.status
        if last is not None and last_type is not None and last_type not in HTML_TYPES:
            self.host.finish(event, "skipped", f"unsupported content type ({last_type})")
        elif kind is DownloadStarted:
            self.host.finish(event, "skipped", "unsupported content type (download)")
        elif any(is_guard_reason(b.reason) for b in nav_blocks):
            target = next(b for b in nav_blocks if is_guard_reason(b.reason))
            event.final_url = target.url
            self.host.finish(event, "blocked", f"{target.reason}: {target.url}")
        elif kind is NavigationRefused or any(
            b.reason == "not on allowed_domains" for b in nav_blocks
        ):
            target = next((b.url for b in nav_blocks), None)
            event.final_url = target
            self.host.finish(
                event, "blocked", f"navigation to a host not on allowed_domains: {target or event.url}"
            )
        elif nav_blocks:  # replay: missing from the HAR
            self.host.finish(event, "failed", nav_blocks[0].reason)
        else:
            self.host.finish(event, "failed", first)

    def _robots_fetch(self, deadline: float | None = None) -> Callable[[str], Awaitable[str | None]]:
        """How this reader fetches ``<origin>/robots.txt``: by brt's document fetcher (checked and pinned, as
        every document: ``net/robots_fetch.py``; never in a replay), within ``deadline`` (None: the page's
        timeout from the moment it is asked)."""

        async def fetch(origin: str) -> str | None:
            from ...net.robots_fetch import fetch_robots

            fetcher = getattr(self.session, "fetcher", None)
            if self.replay is not None or fetcher is None:
                return None
            until = deadline if deadline is not None else time.monotonic() + float(self.host.settings.timeout_s)
            return await fetch_robots(fetcher, origin, until)

        return fetch


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


def _links_and_region(html: str, base_url: str, selector: str | None) -> tuple[list[str], str | None]:
    """The links of a page's serialised DOM, and its selector's region (None without a selector)."""
    return read_links(html, base_url), select_region(html, selector) if selector else None


def ms_left(deadline: float) -> float:
    """Milliseconds left until ``deadline`` (at least one second's worth)."""
    return max(1.0, deadline - time.monotonic()) * 1000


#: The ``egress`` of the events a browser brt did not launch read.
NOT_ENFORCED = "not enforced: attached over --browser-url to a browser brt did not launch"


def egress_record(session: BrowserSession) -> Egress:
    """How ``session``'s browser was held: every connection through its egress proxy (everything refused in a
    replay), or, attached over ``--browser-url``, only the requests of brt's context: not enforced."""
    if session.attached:
        egress = Egress(enforced=False, by="context proxy", note=NOT_ENFORCED)
    else:
        egress = Egress(enforced=True, by="replay" if session.replay is not None else "proxy")
    if session.egress is not None:
        egress.add_refused([f"{r.target}: {r.reason}" for r in session.egress.refused])
    return egress


def count_aborted(aborted: list[tuple[Any, str]], pages: list[Any] | None = None) -> dict[str, int]:
    """Text mode's aborted requests per resource type (only those made by ``pages`` when given)."""
    counts: dict[str, int] = {}
    for page, kind in aborted:
        if pages is None or any(page is p for p in pages):
            counts[kind] = counts.get(kind, 0) + 1
    return dict(sorted(counts.items()))
