"""The harvest stage: breadth-first crawl of a charter's seeds with a real browser, extraction, and a
pipelined writer that chunks and embeds pages into the charter's store while fetching continues.

    harvest(charter) -> HarvestReport

Every URL attempted gets exactly one ``harvest_event`` record (stored, skipped, blocked or failed); single
pages never raise. Only problems that stop the whole harvest raise (BrowserNotFound, HarvestBusy,
HarvestError).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit
from urllib.robotparser import RobotFileParser

from . import hardening as _hard
from .browser import BrowserSession, har_path_for, open_browser
from .crash import BROWSER_CRASHED, PAGE_CRASHED, BrowserWatch, crashed_attempt
from .errors import HarvestBusy, HarvestError
from .extract import ExtractedPage, extract_page, select_region
from .progress import NullProgress, ProgressSink
from .urls import canonical_url, filter_links

if TYPE_CHECKING:
    from playwright.async_api import Page, Response

    from memory_store import Memory

    from .charter import Charter

__all__ = ["HarvestEvent", "HarvestReport", "Outcome", "StageTimings", "harvest", "harvest_async"]

logger = logging.getLogger(__name__)

Outcome = Literal["stored", "skipped", "blocked", "failed"]

_HTML_TYPES = ("text/html", "application/xhtml+xml")
_BATCH_PAGES = 8
_BATCH_WAIT_S = 1.0
_IDLE_WAIT_S = 2.0
_USER_AGENT_TOKEN = "brt"
_CRASH_EVENT_WAIT_S = 0.3


@dataclass
class EventTimings:
    fetch_s: float = 0.0
    extract_s: float = 0.0
    store_s: float = 0.0


@dataclass
class HarvestEvent:
    """What happened to one URL. ``as_record()`` is the snapshot's ``harvest_event`` line."""

    url: str
    depth: int
    started_at: str
    outcome: Outcome = "failed"
    reason: str | None = None
    final_url: str | None = None
    status: int | None = None
    timings: EventTimings = field(default_factory=EventTimings)
    chunks: int = 0
    blocked_requests: list[str] = field(default_factory=list)
    attempts: list[dict[str, Any]] = field(default_factory=list)  # every try (retries: orchestrator/politeness)
    bytes_read: int = 0
    links: list[str] | None = None  # allowed outlinks of a stored page (a resume continues the BFS from them)
    retry_after: float | None = None  # the last response's Retry-After, in seconds (not recorded)
    partial: str | None = None  # the document was still arriving at the deadline and was taken as it stood
    fingerprint: dict[str, Any] | None = None  # what the stored text was made from (orchestrator/revalidate.py)
    unchanged: bool = False  # a refresh found the page's inputs identical and did not render it again
    navigated: bool = False  # the tab was navigated for it (else the tab is still clean; not recorded)

    def start_over(self) -> None:
        """Clear what the last attempt settled, before the URL is tried again (``attempts`` stay)."""
        self.outcome, self.reason, self.status, self.final_url = "failed", None, None, None
        self.retry_after = self.partial = self.fingerprint = None
        self.bytes_read = 0

    def as_record(self) -> dict[str, Any]:
        timings = {k: round(v, 4) for k, v in asdict(self.timings).items()}
        extra: dict[str, Any] = {"attempts": list(self.attempts), "bytes": self.bytes_read}
        if self.links is not None:
            extra["links"] = list(self.links)
        if self.partial is not None:
            extra["partial"] = self.partial
        if self.fingerprint is not None:
            extra["fingerprint"] = self.fingerprint
        if self.unchanged:
            extra["unchanged"] = True
        return extra | {
            "type": "harvest_event",
            "url": self.url,
            "final_url": self.final_url,
            "depth": self.depth,
            "outcome": self.outcome,
            "reason": self.reason,
            "status": self.status,
            "started_at": self.started_at,
            "timings": timings,
            "chunks": self.chunks,
            "blocked_requests": list(self.blocked_requests),
        }


@dataclass
class StageTimings:
    """Summed seconds per stage (fetch and extract overlap across pages; store runs beside them)."""

    fetch_s: float = 0.0
    extract_s: float = 0.0
    store_s: float = 0.0


@dataclass
class HarvestReport:
    """The result of one harvest. ``events`` are the ``harvest_event`` records, one per URL attempted."""

    charter_id: str
    events: list[dict[str, Any]] = field(default_factory=list)
    pages_stored: int = 0
    chunks_total: int = 0
    chunks_embedded: int = 0
    elapsed_s: float = 0.0
    timings: StageTimings = field(default_factory=StageTimings)
    har_path: Path | None = None
    replay: Path | None = None
    blocked_requests: list[str] = field(default_factory=list)
    not_attempted: int = 0  # links found but not attempted because max_pages was reached (or the browser gave out)
    browser_relaunches: int = 0  # crashed browsers replaced during the harvest (at most 3: orchestrator/crash.py)
    har_paths: list[Path] = field(default_factory=list)  # every HAR recorded (one per browser context), oldest first
    har_incomplete: list[Path] = field(default_factory=list)  # HARs a browser crash cut short (marked so inside)

    def counts(self) -> dict[str, int]:
        """Events per outcome (all four outcomes present, zero included)."""
        counts = {"stored": 0, "skipped": 0, "blocked": 0, "failed": 0}
        for event in self.events:
            counts[event["outcome"]] = counts.get(event["outcome"], 0) + 1
        return counts

    def summary(self) -> str:
        """One line: counts by outcome, pages, chunks and time."""
        counts = ", ".join(f"{n} {outcome}" for outcome, n in self.counts().items())
        relaunched = f"; browser relaunched {self.browser_relaunches}x" if self.browser_relaunches else ""
        return (
            f"{counts}; {self.pages_stored} pages stored, {self.chunks_total} chunks "
            f"({self.chunks_embedded} newly embedded) in {self.elapsed_s:.1f}s{relaunched}"
        )

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of the whole report."""
        return {
            "charter_id": self.charter_id,
            "counts": self.counts(),
            "pages_stored": self.pages_stored,
            "chunks_total": self.chunks_total,
            "chunks_embedded": self.chunks_embedded,
            "elapsed_s": self.elapsed_s,
            "timings": {k: round(v, 3) for k, v in asdict(self.timings).items()},
            "har_path": str(self.har_path) if self.har_path else None,
            "replay": str(self.replay) if self.replay else None,
            "blocked_requests": list(self.blocked_requests),
            "not_attempted": self.not_attempted,
            "browser_relaunches": self.browser_relaunches,
            "har_paths": [str(p) for p in self.har_paths],
            "har_incomplete": [str(p) for p in self.har_incomplete],
            "events": list(self.events),
        }


def harvest(
    charter: Charter,
    *,
    replay: Path | None = None,
    browser_url: str | None = None,
    via: str = "playwright",
    memory: Memory | None = None,
    progress: ProgressSink | None = None,
    refresh: bool = False,
) -> HarvestReport:
    """Harvest ``charter`` into its store (see :func:`harvest_async`). Runs its own event loop (in a helper
    thread when called from inside a running loop)."""
    coro_args = dict(
        replay=replay, browser_url=browser_url, via=via, memory=memory, progress=progress, refresh=refresh
    )
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(harvest_async(charter, **coro_args))  # type: ignore[arg-type]

    result: dict[str, Any] = {}

    def _run() -> None:
        try:
            result["report"] = asyncio.run(harvest_async(charter, **coro_args))  # type: ignore[arg-type]
        except BaseException as exc:  # re-raised in the caller's thread
            result["error"] = exc

    thread = threading.Thread(target=_run, name="brt-harvest")
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]
    return result["report"]


async def harvest_async(
    charter: Charter,
    *,
    replay: Path | None = None,
    browser_url: str | None = None,
    via: str = "playwright",
    memory: Memory | None = None,
    progress: ProgressSink | None = None,
    refresh: bool = False,
) -> HarvestReport:
    """Crawl the charter's seeds breadth-first (``max_depth`` hops, at most ``max_pages`` stored pages,
    ``concurrency`` pages at a time) and store their text.

    ``replay`` serves every response from a HAR file (nothing touches the network). With ``refresh=False``
    a URL already in the store is not fetched again (event skipped, "already stored"; its links are not
    followed); ``refresh=True`` fetches it again and the store replaces its chunks (unchanged chunks are not
    embedded again)."""
    if via not in ("playwright", "devtools-mcp"):
        raise HarvestError(f"unknown --via {via!r}: expected playwright or devtools-mcp")
    if via == "devtools-mcp" and (browser_url is not None or replay is not None):
        raise HarvestError(
            "--via devtools-mcp starts its own browser: it cannot be combined with --browser-url or --replay"
        )
    if browser_url is not None and replay is not None:
        raise HarvestError("--browser-url and --replay cannot be combined")
    if replay is not None:
        replay = Path(replay)
        if not replay.is_file():
            raise HarvestError(f"replay file not found: {replay}")
    if memory is None:
        from .config import open_memory

        memory = open_memory(charter)
    from memory_store.errors import StoreLocked

    try:
        lock = memory.harvest_lock()
        lock.__enter__()
    except StoreLocked as exc:
        raise HarvestBusy(str(exc)) from exc
    try:
        if via == "devtools-mcp":
            from .devtools_mcp import DevtoolsHarvest

            run: _Harvest = DevtoolsHarvest(
                charter, memory, progress or NullProgress(), replay=None, refresh=refresh
            )
        else:
            run = _Harvest(charter, memory, progress or NullProgress(), replay=replay, refresh=refresh)
            run.browser_url = browser_url
        report = await run.run()
        if charter.memory.use_concept_index and report.pages_stored:  # concept index: incremental update
            await asyncio.to_thread(_update_concept_index, charter, memory)
        return report
    finally:
        lock.__exit__(None, None, None)


def _update_concept_index(charter: Charter, memory: Memory) -> None:
    """Bring the charter's concept index up to date with the stored pages; never fails the harvest."""
    try:
        from concept_index import update_from_store

        _, rep = update_from_store(memory, charter.outputs.sections)
        logger.info("concept index of %s updated: %s", charter.id, rep)
    except Exception:  # the index is an optional router: the evidence store stays authoritative
        logger.exception("concept index update failed for %s", charter.id)


# -- internals --------------------------------------------------------------------------------------------


@dataclass
class _Fetched:
    """A page fetched and extracted, on its way to the writer."""

    event: HarvestEvent
    extracted: ExtractedPage
    status: int | None
    content_type: str | None
    fetched_at: str
    pdf_pages: list[str] | None = None  # a PDF's text per page (chunk selectors pdf#page=N)


class _Harvest:
    def __init__(
        self, charter: Charter, memory: Memory, progress: ProgressSink, *, replay: Path | None, refresh: bool
    ):
        self.charter = charter
        self.memory = memory
        self.progress = progress
        self.replay = replay
        self.refresh = refresh
        self.settings = charter.harvest
        self.report = HarvestReport(charter_id=charter.id, replay=replay)
        self.run_id = _now()  # groups this harvest's events in the store's journal
        self.events: list[HarvestEvent] = []
        self.seen: set[str] = set()
        self.accepted = 0  # pages handed to the writer (counts against max_pages)
        self.final_seen: set[str] = set()
        self.robots: dict[str, RobotFileParser | None] = {}
        self.queue: asyncio.Queue[_Fetched | None] = asyncio.Queue()
        self.session: BrowserSession | None = None
        self.fingerprints: dict[str, dict[str, Any]] = {}  # refresh: URL -> fingerprint of its stored page
        self.replay_index: Any = None  # refresh with replay: the HAR's responses (revalidate.ReplayIndex)
        _hard.init_state(self)  # politeness, robots, resume links, journal (orchestrator/hardening.py)
        self.browser_url: str | None = None  # attach over CDP (a fresh context) instead of launching
        self.watch: BrowserWatch | None = None  # browser crashes and relaunches (orchestrator/crash.py)

    async def run(self) -> HarvestReport:
        started = time.monotonic()
        embedded_before = self._texts_embedded()
        har_path = har_path_for(Path(self.memory.path))
        self.report.har_path = har_path
        self.progress.start("fetch", total=None)
        self.progress.start("embed", total=None)
        await _hard.start(self)
        try:
            async with open_browser(
                self.charter.allowed_domains,
                har_path=har_path,
                javascript=self.settings.javascript,
                replay=self.replay,
                browser_url=self.browser_url,
            ) as session:
                self.session = session
                session.default_timeout_s = float(self.settings.timeout_s)
                if session.fetcher is not None:
                    session.fetcher.max_bytes = _hard.max_page_bytes(self)
                self.watch = BrowserWatch(session)
                writer = asyncio.create_task(self._writer(), name="brt-writer")
                try:
                    await self._crawl(session)
                finally:
                    await self.queue.put(None)
                    await writer
                self.report.blocked_requests = [b.url for b in session.blocked]
            if self.watch.fatal is not None:
                self.watch.fatal.report = self.report  # completed (events recorded) by the finally below
                raise self.watch.fatal
        finally:
            if self.session is not None:
                self.report.browser_relaunches = self.session.relaunches
                self.report.har_paths = list(self.session.har_paths)
                self.report.har_incomplete = list(self.session.har_incomplete)
            self.report.elapsed_s = round(time.monotonic() - started, 3)
            self.report.chunks_embedded = max(0, self._texts_embedded() - embedded_before)
            await _hard.stop(self)
            self._record_events()
        counts = self.report.counts()
        logger.info(
            "harvest of %s: %d stored, %d skipped, %d blocked, %d failed in %.1fs",
            self.charter.id,
            counts["stored"],
            counts["skipped"],
            counts["blocked"],
            counts["failed"],
            self.report.elapsed_s,
        )
        return self.report

    # -- crawl ----------------------------------------------------------------------------------------------

    async def _crawl(self, session: BrowserSession) -> None:
        # Tabs open on first use, inside a visit: a browser that crashes while they open is relaunched like
        # any crash mid-harvest (orchestrator/crash.py) instead of ending the harvest before it began.
        pages: asyncio.Queue[Page | None] = asyncio.Queue()
        for _ in range(self.settings.concurrency):
            pages.put_nowait(None)

        async def visit_level(urls: list[str], depth: int) -> list[list[str]]:
            return list(await asyncio.gather(*(self._visit(pages, url, depth) for url in urls)))

        await self._breadth_first(visit_level)

    async def _breadth_first(self, visit_level: Callable[[list[str], int], Awaitable[list[list[str]]]]) -> None:
        """Seeds first, then the links found one hop further, level by level up to ``max_depth`` and
        ``max_pages``. ``visit_level(urls, depth)`` reads one level and returns the links found on each URL."""
        frontier = self._new_urls(self.charter.seeds)
        for depth in range(self.settings.max_depth + 1):
            if not frontier:
                break
            if self.accepted >= self.settings.max_pages:
                self.report.not_attempted += len(frontier)
                break
            self.progress.advance("fetch", 0, total=len(self.events) + len(frontier))
            results = await visit_level(frontier, depth)
            if depth == self.settings.max_depth:
                break
            frontier = self._new_urls(link for links in results for link in links)

    def _new_urls(self, urls: Iterable[str]) -> list[str]:
        out = []
        for url in filter_links(urls, self.charter.allowed_domains):
            key = canonical_url(url)  # fetched as written, de-duplicated by the canonical form
            if key not in self.seen:
                self.seen.add(key)
                out.append(url)
        return out

    async def _visit(self, pages: asyncio.Queue[Page | None], url: str, depth: int) -> list[str]:
        """Fetch one URL with a page from the pool; returns the allowed links found on it."""
        page = await pages.get()
        if self.accepted >= self.settings.max_pages or (self.watch is not None and self.watch.fatal is not None):
            self.report.not_attempted += 1
            pages.put_nowait(page)
            return []
        event = HarvestEvent(url=url, depth=depth, started_at=_now())
        self.events.append(event)
        links: list[str] = []
        queued = False
        used: list[Page] = []  # the pages this URL was tried in (a crash replaces the page)
        blocked_before = len(self.session.blocked)  # type: ignore[union-attr]
        try:
            links, queued, page = await self._attempts(page, event, used)
        except Exception as exc:  # one page never stops the harvest
            logger.exception("unexpected error harvesting %s", url)
            self._finish(event, "failed", f"internal error: {type(exc).__name__}: {exc}")
        finally:
            event.blocked_requests = [
                b.url
                for b in self.session.blocked[blocked_before:]  # type: ignore[union-attr]
                if any(b.page is p for p in used) and not b.navigation
            ]
            if event.outcome != "stored" and not queued and event.reason != "HTTP 404" and event.navigated:
                # After an error, a download or a viewer (PDF) the page may still be busy: use a fresh one.
                page = await self._replace_page(page)
            pages.put_nowait(page)
            if not queued:  # queued pages advance when stored
                self.progress.advance("fetch")
                _hard.journal(self, event)
        return links

    async def _attempts(
        self, page: Page | None, event: HarvestEvent, used: list[Page]
    ) -> tuple[list[str], bool, Page | None]:
        """``_hard.attempts`` (retries, politeness) in a page of the current browser. When the browser crashes
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
                    self._finish(event, "failed", f"{what}; not relaunched: {watch.fatal}")
                else:
                    self._finish(event, "failed", f"{what} twice (tried once more after the first crash)")
                return [], False, page
            retried = True  # the pages in flight at a crash are tried once more, in the new browser or page
            logger.info("trying %s again after the crash (%s)", event.url, what)
            event.start_over()

    async def _attempt_in(
        self, page: Page | None, event: HarvestEvent, used: list[Page]
    ) -> tuple[list[str], bool, Page | None, Exception | None, bool]:
        """One ``_hard.attempts`` run in ``page`` (or a page of the current browser when it is gone). Returns
        (links, queued, page, the Playwright error that escaped, whether the page's renderer crashed)."""
        from playwright.async_api import Error as PlaywrightError

        responses: list[Response] = []
        crashed: list[bool] = []
        links: list[str] = []
        queued = False
        try:
            page = await self._usable_page(page)
        except (PlaywrightError, asyncio.TimeoutError) as exc:  # the browser is gone
            return [], False, page, exc, False
        used.append(page)

        def on_response(response: Response) -> None:
            try:
                if response.request.is_navigation_request() and response.frame == page.main_frame:
                    responses.append(response)
            except Exception:  # a response of a frame that is already gone
                pass

        def on_crash(_page: Page) -> None:
            crashed.append(True)

        page.on("response", on_response)
        page.on("crash", on_crash)
        try:
            links, queued = await _hard.attempts(self, page, event, responses)
            if not queued and not crashed and "ERR_ABORTED" in str(event.reason or ""):
                await asyncio.sleep(_CRASH_EVENT_WAIT_S)  # a renderer crash aborts the navigation before it reports
        except PlaywrightError as exc:  # the browser went away under a call outside _visit_with's own care
            return [], False, page, exc, bool(crashed)
        finally:
            page.remove_listener("response", on_response)
            page.remove_listener("crash", on_crash)
        return links, queued, page, None, bool(crashed)

    async def _usable_page(self, page: Page | None) -> Page:
        """``page``, or a new page of the current browser context when there is none yet, or ``page`` is closed
        or belongs to a browser that crashed and was replaced."""
        if page is not None and page.context is self.session.context and not page.is_closed():  # type: ignore[union-attr]
            return page
        return await asyncio.wait_for(self.session.context.new_page(), timeout=30)  # type: ignore[union-attr]

    async def _extract_and_queue(
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
        if event.bytes_read > _hard.max_page_bytes(self):
            self._finish(event, "skipped", f"too large ({event.bytes_read} bytes of content)")
            return [], False
        if canonical_final in self.final_seen:
            self._finish(event, "skipped", f"duplicate of {canonical_final} (already harvested in this run)")
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
        if extracted is None:
            if event.partial is not None:  # a server that trickles: abandoned at the deadline
                self._finish(event, "failed", f"timed out: {event.partial}; nothing readable")
            else:
                self._finish(event, "skipped", "no readable text")
            return links, False
        if self.accepted >= self.settings.max_pages:
            self._finish(event, "skipped", "max_pages reached")
            return links, False
        self.accepted += 1
        event.links = filter_links(links, self.charter.allowed_domains)[: _hard.MAX_LINKS]
        await self.queue.put(_Fetched(event, extracted, status, content_type or "text/html", fetched_at))
        return links, True

    async def _snapshot(self, page: Page, deadline: float) -> tuple[str, str] | None:
        """(url, rendered HTML) of the tab right after its load event, or None when it cannot be read."""
        from playwright.async_api import Error as PlaywrightError

        try:
            html = await asyncio.wait_for(page.content(), timeout=max(0.5, deadline - time.monotonic()))
        except (PlaywrightError, asyncio.TimeoutError):
            return None
        return page.url, html

    async def _replace_page(self, page: Page | None) -> Page | None:
        from playwright.async_api import Error as PlaywrightError

        if page is None or page.context is not self.session.context or not self.session.connected():  # type: ignore[union-attr]
            return page  # of a crashed browser: gone with it (the next visit takes a page of the new browser)
        try:
            await asyncio.wait_for(page.close(), timeout=5)  # a wedged page must not hang the harvest
        except (PlaywrightError, asyncio.TimeoutError):
            logger.info("closing a used page timed out; leaving it behind")
        try:
            return await asyncio.wait_for(self.session.context.new_page(), timeout=30)  # type: ignore[union-attr]
        except PlaywrightError as exc:  # the browser went away meanwhile: the next visit sees the crash
            logger.info("cannot open a new page: %s", _first_line(exc))
            return page

    async def _visit_with(
        self, page: Page, event: HarvestEvent, responses: list[Response]
    ) -> tuple[list[str], bool]:
        """Fetch and extract; returns (allowed links, whether the page went to the writer)."""
        from .revalidate import DependencyWatch

        with DependencyWatch(page, replay=self.replay is not None, allowed=self.charter.allows) as watch:
            return await self._read_page(page, event, responses, watch)

    async def _read_page(
        self, page: Page, event: HarvestEvent, responses: list[Response], watch: Any
    ) -> tuple[list[str], bool]:
        from playwright.async_api import Error as PlaywrightError
        from playwright.async_api import TimeoutError as PlaywrightTimeout

        url = event.url
        timeout_s = float(self.settings.timeout_s)
        t0 = time.monotonic()
        deadline = t0 + timeout_s

        if not self.refresh and await asyncio.to_thread(self.memory.has_page, url):
            known = self.resume_links.get(url)
            if known is not None or self.replay is not None:
                self._finish(event, "skipped", "already stored (refresh to fetch it again)")
                return list(known or []), False  # a resume continues the BFS from the stored page's links
            # stored, but its links never reached the journal (killed in between): fetch it again for them

        if self.settings.obey_robots and not await self._robots_allow(page, url, deadline):
            event.timings.fetch_s = time.monotonic() - t0
            self._finish(event, "blocked", "blocked by robots.txt")
            return [], False

        if self.refresh and url in self.fingerprints:
            known = await self._unchanged(event, deadline)
            if known is not None:
                event.timings.fetch_s = time.monotonic() - t0
                return known, False

        session = self.session
        assert session is not None
        blocked_before = len(session.blocked)
        response: Response | None = None
        load_timed_out = False
        session.expected_navigations.add(url)
        session.nav_deadlines[page] = (deadline, timeout_s)
        session.nav_results.pop(page, None)
        event.navigated = True
        try:
            response = await page.goto(url, wait_until="load", timeout=_ms(deadline))
        except PlaywrightTimeout:
            load_timed_out = True
            logger.info("load event of %s timed out after %.0fs; taking the DOM as it is", url, timeout_s)
        except PlaywrightError as exc:
            event.timings.fetch_s = time.monotonic() - t0
            nav = session.nav_results.get(page)
            self._navigation_error(event, exc, blocked_before, responses, nav)
            if _hard.is_pdf_candidate(self, event):
                return await _hard.fetch_pdf(self, event, deadline, t0, nav)
            return [], False
        finally:
            session.expected_navigations.discard(url)
            session.nav_deadlines.pop(page, None)
        nav = session.nav_results.pop(page, None)
        if nav is not None and nav.kind == "partial":
            event.partial = nav.reason
            logger.info("%s never finished loading: %s", url, nav.reason)

        load_snapshot: tuple[str, str] | None = None
        if not load_timed_out:
            load_snapshot = await self._snapshot(page, deadline)
            remaining = deadline - time.monotonic()
            if remaining > 0.05:
                try:
                    await page.wait_for_load_state("networkidle", timeout=min(_IDLE_WAIT_S, remaining) * 1000)
                except PlaywrightTimeout:
                    pass
                except PlaywrightError as exc:
                    logger.debug("networkidle wait on %s: %s", url, exc)

        final_url = page.url
        snapshot_html: str | None = None
        if load_snapshot is not None and final_url != load_snapshot[0] and self.charter.allows(load_snapshot[0]):
            if not self.charter.allows(final_url) or not final_url.startswith(("http://", "https://")):
                # A script navigated the tab after the load event (consent walls, ad-block probes) to a place
                # that was refused or failed: keep the page as it was loaded from the allowed URL.
                logger.info("%s navigated to %s after loading; keeping the page as loaded", url, final_url)
                final_url, snapshot_html = load_snapshot
        event.final_url = final_url
        status = response.status if response is not None else None
        headers: dict[str, str] = {}
        if response is not None:
            try:
                headers = await response.all_headers()
            except PlaywrightError:
                headers = dict(response.headers)
        event.status = status
        content_type = _content_type(headers)

        if not self.charter.allows(final_url):
            event.timings.fetch_s = time.monotonic() - t0
            self._finish(event, "blocked", f"final URL not on allowed_domains: {final_url}")
            return [], False
        if status is not None and status >= 400:
            event.timings.fetch_s = time.monotonic() - t0
            event.retry_after = _hard.retry_after(headers)
            self._finish(event, "failed", f"HTTP {status}")
            return [], False
        if content_type is not None and content_type not in _HTML_TYPES:
            event.timings.fetch_s = time.monotonic() - t0
            self._finish(event, "skipped", f"unsupported content type ({content_type})")
            if _hard.is_pdf_candidate(self, event):
                return await _hard.fetch_pdf(self, event, deadline, t0)
            return [], False

        canonical_final = canonical_url(final_url)
        self.seen.add(canonical_final)

        try:
            selector = self.charter.selector_for(urlsplit(final_url).hostname)
            if snapshot_html is not None:
                html = snapshot_html
                links = _links_in(html, final_url)
                region_html = select_region(html, selector) if selector else None
            else:
                html = await asyncio.wait_for(page.content(), timeout=max(1.0, deadline - time.monotonic() + 2))
                links = await self._links(page)
                region_html = await self._region(page, selector) if selector else None
        except (PlaywrightError, asyncio.TimeoutError) as exc:
            event.timings.fetch_s = time.monotonic() - t0
            self._finish(event, "failed", f"cannot read the rendered page: {_first_line(exc)}")
            return [], False
        if snapshot_html is None and event.partial is None:
            from .revalidate import fingerprint

            # (a page whose load event never came was read at the timeout: the same inputs, read the same way)
            # the response that made the document (not a 204 that cancelled a later script navigation)
            document = response or next((r for r in reversed(responses) if r.status != 204 and r.ok), None)
            event.fingerprint = await fingerprint(
                document,
                watch,
                final_url=final_url,
                selector=selector,
                javascript=self.settings.javascript,
                known=self._known_sha(nav),
            )
        fetched_at = _now()
        event.timings.fetch_s = time.monotonic() - t0
        return await self._extract_and_queue(
            event, html, final_url, links, headers, selector, region_html, status, content_type, fetched_at
        )

    def _known_sha(self, nav: Any) -> Callable[[str], str | None]:
        """sha256 of bodies brt holds without asking the browser: the replay HAR's, or the document it fetched."""
        if self.replay_index is not None:
            return self.replay_index.sha
        if nav is not None and nav.kind == "ok":
            from .revalidate import sha256_hex

            digest = sha256_hex(nav.body)
            return lambda url: digest if url == nav.url else None
        return lambda _url: None

    async def _unchanged(self, event: HarvestEvent, deadline: float) -> list[str] | None:
        """Refresh: when the stored page's inputs are byte-identical now, settle the event as unchanged and
        return the page's recorded links; None when the page must be rendered again."""
        from .revalidate import what_changed

        url = event.url
        fp = self.fingerprints[url]
        links = self.resume_links.get(url)
        if links is None or not await asyncio.to_thread(self.memory.has_page, fp.get("final_url") or url):
            return None
        try:
            changed = await what_changed(self, url, fp, deadline)
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
        self.final_seen.add(canonical_url(fp.get("final_url") or url))
        self._finish(event, "skipped", "unchanged since the last harvest (document and scripts identical)")
        return list(links)

    def _navigation_error(
        self,
        event: HarvestEvent,
        exc: Exception,
        blocked_before: int,
        responses: list[Response],
        nav: Any = None,
    ) -> None:
        message = str(exc)
        first = _first_line(exc)
        if nav is not None and nav.kind in ("too large", "timeout", "error"):
            # the document fetch (orchestrator/fetcher.py) says why the navigation failed
            event.final_url = nav.url
            event.status = nav.status
            if nav.kind == "too large":
                self._finish(event, "skipped", nav.reason)
            else:
                self._finish(event, "failed", nav.reason)
            return
        new_blocks = self.session.blocked[blocked_before:] if self.session else []
        nav_blocks = [b for b in new_blocks if b.navigation and getattr(b, "source", event.url) == event.url]
        last = responses[-1] if responses else None
        last_type = _content_type(last.headers) if last is not None else None
        if last is not None:
            event.final_url = last.url
            event.status = last.status
        if last is not None and last_type is not None and last_type not in _HTML_TYPES:
            self._finish(event, "skipped", f"unsupported content type ({last_type})")
        elif "Download is starting" in message:
            self._finish(event, "skipped", "unsupported content type (download)")
        elif any(_hard.is_guard_reason(b.reason) for b in nav_blocks):
            target = next(b for b in nav_blocks if _hard.is_guard_reason(b.reason))
            event.final_url = target.url
            self._finish(event, "blocked", f"{target.reason}: {target.url}")
        elif "ERR_BLOCKED_BY_CLIENT" in message or any(
            b.reason == "not on allowed_domains" for b in nav_blocks
        ):
            target = next((b.url for b in nav_blocks), None)
            event.final_url = target
            self._finish(
                event, "blocked", f"navigation to a host not on allowed_domains: {target or event.url}"
            )
        elif nav_blocks:  # replay: missing from the HAR
            self._finish(event, "failed", nav_blocks[0].reason)
        else:
            self._finish(event, "failed", first)

    def _finish(self, event: HarvestEvent, outcome: Outcome, reason: str | None) -> None:
        event.outcome = outcome
        event.reason = reason
        log = logger.info if outcome in ("blocked", "failed") else logger.debug
        log("%s %s: %s", outcome, event.url, reason)

    async def _links(self, page: Page) -> list[str]:
        hrefs = await page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
        return [h for h in hrefs if isinstance(h, str)]

    async def _region(self, page: Page, selector: str) -> str | None:
        from playwright.async_api import Error as PlaywrightError

        try:
            parts = await page.eval_on_selector_all(selector, "els => els.map(e => e.outerHTML)")
        except PlaywrightError as exc:
            logger.warning("selector %r failed on %s: %s", selector, page.url, _first_line(exc))
            return None
        return "\n".join(p for p in parts if isinstance(p, str)) or None

    async def _robots_allow(self, page: Page, url: str, deadline: float) -> bool:
        """robots.txt of the URL's origin (fetched once, through the same guarded browser context)."""
        from playwright.async_api import Error as PlaywrightError

        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        if origin not in self.robots:
            body: str | None = None
            try:
                guard = getattr(self.session, "guard", None)
                refused = await guard.check(origin + "/robots.txt") if guard is not None else None
                response = (
                    await page.request.get(
                        origin + "/robots.txt",
                        max_redirects=0,
                        timeout=max(1.0, min(10.0, deadline - time.monotonic())) * 1000,
                    )
                    if self.replay is None and refused is None
                    else None
                )
                if response is not None and 200 <= response.status < 300:
                    body = (await response.body())[:500_000].decode("utf-8", "replace")
            except PlaywrightError as exc:
                if self.session is not None and not self.session.connected():
                    raise  # the browser crashed: not a missing robots.txt (orchestrator/crash.py retries the URL)
                logger.debug("no robots.txt for %s: %s", origin, _first_line(exc))
            self.robots[origin] = _hard.RobotsRules(body)
            self.polite.set_crawl_delay(parts.hostname or "", self.robots[origin].crawl_delay(_USER_AGENT_TOKEN))
        return self.robots[origin].allowed(url, _USER_AGENT_TOKEN)

    # -- writer ---------------------------------------------------------------------------------------------

    async def _writer(self) -> None:
        """Batch extracted pages (up to 8, or what came within 1 s) into ``memory.add_many`` in a thread."""
        loop = asyncio.get_running_loop()
        done = False
        while not done:
            item = await self.queue.get()
            if item is None:
                break
            batch = [item]
            deadline = loop.time() + _BATCH_WAIT_S
            while len(batch) < _BATCH_PAGES:
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
            await self._store(batch)

    async def _store(self, batch: list[_Fetched]) -> None:
        t0 = time.monotonic()
        try:
            inputs = [self._page_input(item) for item in batch]
            per_page = await asyncio.to_thread(self._add_many, inputs, batch)
        except Exception as exc:
            logger.exception("storing %d page(s) failed", len(batch))
            for item in batch:
                self.accepted -= 1
                self._finish(item.event, "failed", f"store error: {type(exc).__name__}: {_first_line(exc)}")
                self.progress.advance("fetch")
                _hard.journal(self, item.event)
            return
        elapsed = time.monotonic() - t0
        self.report.timings.store_s += elapsed
        for item, chunks in zip(batch, per_page, strict=True):
            item.event.timings.store_s = elapsed / len(batch)
            item.event.chunks = chunks
            self._finish(item.event, "stored", None)
            self.report.pages_stored += 1
            self.report.chunks_total += chunks
            self.progress.advance("fetch")
            _hard.journal(self, item.event)
        self.progress.advance("embed", len(batch), total=self.accepted)

    def _add_many(self, inputs: list[Any], batch: list[_Fetched] | None = None) -> list[int]:
        """``memory.add_many`` for the batch; returns the chunk count of each page."""
        ids = self.memory.add_many(inputs)
        _hard.after_store(self, batch or [])
        if len(inputs) == 1:
            return [len(ids)]
        counts = []
        for item in inputs:
            record = self.memory.page(item.url)
            counts.append(len(record.chunk_ids) if record is not None else 0)
        return counts

    def _page_input(self, item: _Fetched) -> Any:
        from .pages import page_input

        return page_input(
            item.extracted,
            requested_url=item.event.url,
            fetched_at=item.fetched_at,
            status=item.status,
            content_type=item.content_type,
        )

    # -- bookkeeping ----------------------------------------------------------------------------------------

    def _texts_embedded(self) -> int:
        embedder = getattr(self.memory, "embedder", None)
        return int(getattr(embedder, "texts_embedded", 0) or 0)

    def _record_events(self) -> None:
        for event in self.events:
            self.report.timings.fetch_s += event.timings.fetch_s
            self.report.timings.extract_s += event.timings.extract_s
        missing = _hard.unjournaled(self)
        records = [dict(event.as_record(), run_id=self.run_id) for event in missing]
        self.report.events = list(self.journaled_records) + records
        if records:
            try:
                self.memory.record_events(records)
            except Exception:
                logger.exception("cannot record harvest events for %s", self.charter.id)
        _hard.finish_report(self)


def _links_in(html: str, base_url: str) -> list[str]:
    """The href of every <a> in ``html``, absolute against ``base_url``."""
    import lxml.html

    try:
        doc = lxml.html.fromstring(html, base_url=base_url)
    except (ValueError, lxml.etree.ParserError):
        return []
    doc.make_links_absolute(base_url, resolve_base_href=True, handle_failures="discard")
    return [href for href in doc.xpath("//a/@href") if isinstance(href, str)]


def _content_type(headers: dict[str, str]) -> str | None:
    for key, value in headers.items():
        if key.lower() == "content-type":
            return value.split(";", 1)[0].strip().lower() or None
    return None


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def _ms(deadline: float) -> float:
    return max(1.0, deadline - time.monotonic()) * 1000


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
