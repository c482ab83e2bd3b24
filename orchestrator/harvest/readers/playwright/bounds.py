"""Bounded work per page, and the URL a page is cited under.

- brt never runs its own code in a page's world: the rendered DOM is serialised by Playwright in its utility
  world (an isolated world: the page's scripts cannot redefine what that code calls, such as an
  ``HTMLAnchorElement.prototype.href`` getter or ``Array.prototype.map`` that never returns), and links and the
  selector's region are read from that HTML in Python (``read_dom``, ``read_links``). A page whose renderer does
  not answer by the deadline (a script that never yields) is closed, which stops its scripts.
- At most ``MAX_ANCHORS`` links of a page are read.
- Every page of the browser context that brt did not open itself (``window.open``, ``target=_blank``, with or
  without an opener) is closed as soon as it appears (``PageKeeper``).
- A page is cited under the URL of the document the server sent (``DocumentWatch.served_url``: the main
  frame's navigation response after redirects), never under ``location.href``, which the page's own
  ``history.replaceState`` can set to any URL of its origin.
- The bytes a page brings into the browser are bounded (``ResourceBudget``): the decoded size of every response
  of its frames (scripts, stylesheets, images, fetches, gzip bombs included) is counted as it arrives (the
  DevTools protocol's ``Network.dataReceived``); past the budget every further request of the page is blocked
  and its tab is closed at once (which stops every load and frees the renderer's memory): the page is not read.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from typing import TYPE_CHECKING, Any

from ...net.urls import MAX_ANCHORS, links_in

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Page, Response

__all__ = ["MAX_ANCHORS", "RESOURCE_FACTOR", "DocumentWatch", "PageKeeper", "ResourceBudget", "close_page", "links_in",
           "read_dom", "read_links"]

logger = logging.getLogger(__name__)

#: How long closing a page may take before brt leaves it behind.
CLOSE_TIMEOUT_S = 5.0
#: How long a page brt did not open may wait for brt's own ``new_page`` calls in flight to settle.
_OPENING_WAIT_S = 30.0
_NO_DOCUMENT = (204, 205)
#: A page's responses together may bring this many times ``harvest.max_page_bytes`` (decoded) into the browser.
RESOURCE_FACTOR = 4
#: Seconds the resource budget waits for each DevTools call on its tab: a tab whose renderer was killed never
#: answers one (a harvest waited forever on it), and the page is then read without a budget or left as it is.
BUDGET_CDP_S = 5.0


async def read_dom(page: Page, deadline: float, *, grace_s: float = 0.0) -> str | None:
    """The page's rendered DOM as HTML, serialised in Playwright's utility world, or None when the renderer
    does not answer by ``deadline`` (+ ``grace_s``, at least half a second): the page is then closed, which
    stops its scripts (the caller opens a fresh page)."""
    from playwright.async_api import Error as PlaywrightError

    try:
        return await asyncio.wait_for(page.content(), timeout=max(0.5, deadline - time.monotonic() + grace_s))
    except asyncio.TimeoutError:
        logger.info("%s did not let brt read its DOM in time; closing the page", page.url)
        await close_page(page)
        return None
    except PlaywrightError as exc:
        logger.debug("cannot read the DOM of %s: %s", page.url, exc)
        return None


def read_links(html: str, base_url: str) -> list[str]:
    """The first ``MAX_ANCHORS`` links of ``html`` (absolute, as the browser resolves them)."""
    return links_in(html, base_url, limit=MAX_ANCHORS)


async def close_page(page: Page) -> bool:
    """Close ``page`` without running its ``beforeunload``; False when it would not close in time."""
    from playwright.async_api import Error as PlaywrightError

    try:
        await asyncio.wait_for(page.close(run_before_unload=False), timeout=CLOSE_TIMEOUT_S)
        return True
    except (PlaywrightError, asyncio.TimeoutError) as exc:
        logger.info("closing a page failed: %s", exc)
        return False


class PageKeeper:
    """The pages brt opened in a browser context; every other page that appears there is closed at once."""

    def __init__(self) -> None:
        self._own: weakref.WeakSet[Any] = weakref.WeakSet()
        self._opening = 0  # brt's new_page calls in flight (their pages appear before the call returns)
        self.closed = 0  # pages brt did not open, closed

    def watch(self, context: BrowserContext) -> None:
        context.on("page", self._on_page)

    async def new_page(self, context: BrowserContext, timeout_s: float = 30.0) -> Page:
        """A page of ``context`` that brt opens itself (kept open)."""
        self._opening += 1
        try:
            page = await asyncio.wait_for(context.new_page(), timeout=timeout_s)
            self._own.add(page)
        finally:
            self._opening -= 1
        return page

    def owns(self, page: Any) -> bool:
        return page in self._own

    async def _on_page(self, page: Page) -> None:
        waited = 0.0
        while self._opening and page not in self._own and waited < _OPENING_WAIT_S:
            await asyncio.sleep(0.01)
            waited += 0.01
        if page in self._own or page.is_closed():
            return
        logger.info("closing a page brt did not open (%s)", page.url or "about:blank")
        self.closed += 1
        await close_page(page)


class DocumentWatch:
    """The main frame's navigation responses and new documents of one page, from the moment it is attached:
    what tells which response made the document the tab shows (``served_url``)."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.responses: list[Response] = []  # main-frame navigation responses, in order
        self.documents = 0  # new documents committed in the main frame (DOMContentLoaded events)
        self._mark = (0, 0)

    def __enter__(self) -> DocumentWatch:
        self.page.on("response", self._on_response)
        self.page.on("domcontentloaded", self._on_document)
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.page.remove_listener("response", self._on_response)
        self.page.remove_listener("domcontentloaded", self._on_document)

    def _on_response(self, response: Response) -> None:
        try:
            if response.request.is_navigation_request() and response.frame == self.page.main_frame:
                self.responses.append(response)
        except Exception:  # noqa: BLE001 - a response of a frame that is already gone
            pass

    def _on_document(self, _page: Page) -> None:
        self.documents += 1

    def mark(self) -> None:
        """Remember where things stand once brt's own navigation returned."""
        self._mark = (len(self.responses), self.documents)

    def document_response(self, navigated: Response | None) -> Response | None:
        """The response that made the document the tab shows now: ``navigated`` (what brt's own navigation
        returned) unless a later navigation committed a new document since :meth:`mark`, or brt's navigation
        returned none (its load event never came); then the last main-frame response that makes a document
        (not a 204/205, not a redirect). Scripts cannot add to either list: ``history`` calls make no
        response and no new document."""
        responses_then, documents_then = self._mark
        if navigated is not None and self.documents == documents_then:
            return navigated
        candidates = self.responses[responses_then:] if navigated is not None else self.responses
        later = [r for r in candidates if r.status not in _NO_DOCUMENT and not 300 <= r.status < 400]
        return later[-1] if later else navigated

    def served_url(self, navigated: Response | None, fallback: str) -> str:
        """The URL of :meth:`document_response` (``fallback`` when there is none: what brt navigated to)."""
        response = self.document_response(navigated)
        return response.url if response is not None else fallback


class ResourceBudget:
    """The decoded bytes the responses of one page may bring into the browser while brt reads it (``limit``).

    ``async with ResourceBudget(page, limit) as budget:`` counts ``Network.dataReceived`` (decoded lengths) on a
    DevTools session of the page; once the total passes ``limit`` it blocks every further request of the page and
    closes the page (``tripped`` and ``reason`` say so; the caller settles the URL as failed and opens a fresh
    tab). The session's own response buffers are kept minimal. Frames in another renderer process (a cross-site
    iframe) are not counted here."""

    def __init__(self, page: Page, limit: int) -> None:
        self.page = page
        self.limit = int(limit)
        self.used = 0
        self.tripped = False
        self._session: Any = None
        self._stopping: asyncio.Task[None] | None = None

    @property
    def reason(self) -> str:
        return (f"its responses passed {self.limit} bytes decoded ({RESOURCE_FACTOR} x max_page_bytes): the page "
                "was closed, not read")

    async def __aenter__(self) -> ResourceBudget:
        from playwright.async_api import Error as PlaywrightError

        try:
            # a tab whose renderer was killed never answers (Playwright waits forever): bounded
            self._session = await asyncio.wait_for(self.page.context.new_cdp_session(self.page), BUDGET_CDP_S)
            self._session.on("Network.dataReceived", self._on_data)
            await asyncio.wait_for(
                self._session.send("Network.enable", {"maxTotalBufferSize": 0, "maxResourceBufferSize": 0}),
                BUDGET_CDP_S,
            )
        except (PlaywrightError, asyncio.TimeoutError) as exc:  # not Chromium, or a page gone: nothing to count
            logger.debug("no resource budget for %s: %s", self.page.url, exc or type(exc).__name__)
            self._session = None
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        from playwright.async_api import Error as PlaywrightError

        if self._stopping is not None:
            await asyncio.gather(self._stopping, return_exceptions=True)
        if self._session is not None:
            try:
                if self.tripped:
                    await asyncio.wait_for(self._session.send("Network.setBlockedURLs", {"urls": []}), BUDGET_CDP_S)
                await asyncio.wait_for(self._session.detach(), BUDGET_CDP_S)  # a crashed tab's never returns
            except (PlaywrightError, asyncio.TimeoutError):
                pass

    def _on_data(self, params: dict[str, Any]) -> None:
        try:
            self.used += int(params.get("dataLength") or 0)
        except (TypeError, ValueError):
            return
        if self.used > self.limit and not self.tripped:
            self.tripped = True
            logger.info("%s: %s", self.page.url, self.reason)
            self._stopping = asyncio.ensure_future(self._stop())

    async def _stop(self) -> None:
        from playwright.async_api import Error as PlaywrightError

        try:
            await self._session.send("Network.setBlockedURLs", {"urls": ["*"]})
        except PlaywrightError as exc:
            logger.debug("blocking the requests of %s: %s", self.page.url, exc)
        await close_page(self.page)  # every load stops with its renderer, and its memory goes
