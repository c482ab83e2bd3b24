"""How brt routes the requests of a Playwright browser context: every request must be http(s) on the
allowlist and pass the SSRF guard; navigations of a live harvest are fetched by brt itself (``net/fetcher.py``)
and handed to the browser (downloads withheld: ``downloads.py``); a replay serves the HAR only (``replay.py``);
WebSockets pass the same checks. ``RouteState`` (``route_state.py``) is what the routes know and record
(``BrowserSession`` extends it)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .... import url_safety
from ....egress import EgressPolicy
from ....errors import RequestFailed, error_kind
from ...downloads import fulfill_navigation
from ...har import har_entry, har_redirect_entry
from .replay import replay_route
from .route_state import (
    BlockedRequest,
    RouteState,
    is_main_frame,
    is_script_navigation,
    leaves_loaded_page,
    page_of,
)

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Page, Request, Route, WebSocketRoute

__all__ = [
    "INTERNAL_SCHEMES",
    "BlockedRequest",
    "RouteState",
    "allowlist_route",
    "install_websocket_guard",
    "is_script_navigation",
    "on_request_failed",
    "route_navigation",
    "websocket_refusal",
]

logger = logging.getLogger(__name__)

#: The browser's own resources (e.g. its PDF viewer): never network fetches, never allowed.
INTERNAL_SCHEMES = ("chrome:", "chrome-extension:", "chrome-untrusted:", "devtools:", "about:")


async def allowlist_route(state: RouteState, egress: EgressPolicy, route: Route) -> None:
    request = route.request
    navigation = request.is_navigation_request()
    if not egress.permits(request.url):
        await _refuse_off_allowlist(state, egress, route, navigation)
        return
    if state.replay is not None and await replay_route(state, egress, route, navigation):
        return
    refused = await state.guard.check(request.url) if state.guard is not None else None
    if refused is not None:  # SSRF: an internal address not named exactly on the allowlist
        logger.info("blocked %s request to %s (%s)", request.resource_type, request.url, refused)
        state.blocked.append(
            BlockedRequest(request.url, request.resource_type, refused, navigation=navigation, page=page_of(request))
        )
        await route.abort("blockedbyclient")
        return
    if not navigation and request.resource_type in state.block_resources:
        # Text mode: the extracted text never needs it; aborted before any byte is requested (after the
        # SSRF guard, so that a request to an internal address is still reported as blocked).
        state.aborted.append((page_of(request), request.resource_type))
        await route.abort("blockedbyclient")
        return
    if navigation and state.fetcher is not None:  # fetched by brt: hops, byte cap, deadline (fetcher.py)
        await fetch_navigation(state, route, egress)
        return
    await route.fallback()


async def _refuse_off_allowlist(state: RouteState, egress: EgressPolicy, route: Route, navigation: bool) -> None:
    request = route.request
    if request.url.startswith(INTERNAL_SCHEMES):
        # The browser's own resources (e.g. its PDF viewer): never network fetches, never allowed.
        logger.debug("blocked internal %s request to %s", request.resource_type, request.url)
        await route.abort("blockedbyclient")
        return
    logger.info("blocked %s request to %s (not on allowed_domains)", request.resource_type, request.url)
    state.blocked.append(
        BlockedRequest(
            request.url,
            request.resource_type,
            "not on allowed_domains",
            navigation=navigation,
            page=page_of(request),
        )
    )
    if navigation and leaves_loaded_page(request, egress):
        # A script of an allowed, loaded page tries to navigate away (consent walls, ad-block probes). A 204
        # answer cancels the navigation and leaves the loaded document in place; nothing is sent anywhere.
        await route.fulfill(status=204, body="")
        return
    await route.abort("blockedbyclient")


async def fetch_navigation(state: RouteState, route: Route, egress: EgressPolicy) -> None:
    """A navigation fetched by brt (``route_navigation``). A script's navigation of a loaded page is held to the
    rules of brt's own: and when it ends in an error document (4xx/5xx), it is cancelled and the page kept as
    loaded (an error page is never read as the page's text)."""
    request = route.request
    page = page_of(request)
    deadline, timeout_s = state.nav_deadlines.get(page) or (
        time.monotonic() + state.default_timeout_s,
        state.default_timeout_s,
    )

    def block(url: str, reason: str) -> None:
        blocked = BlockedRequest(url, request.resource_type, reason, navigation=True, page=page)
        blocked.source = request.url  # the navigation it stopped
        state.blocked.append(blocked)

    main_frame = is_main_frame(request)

    def on_result(result: Any) -> None:
        if main_frame and page is not None:
            state.nav_results[page] = result

    await route_navigation(
        route,
        state.fetcher,
        block,
        state.har_extra,
        deadline=deadline,
        partial_ok_after=state.fetcher.read_deadline(deadline, timeout_s) if main_frame else None,
        on_result=on_result,
        refuse_errors=main_frame and is_script_navigation(state, request, egress),
    )


#: WebSocket scheme -> the HTTP scheme whose allowlist and SSRF rules it follows.
_WS_SCHEMES = {"ws": "http", "wss": "https"}
_WS_POLICY_CLOSE = 1008  # RFC 6455 "policy violation"


async def install_websocket_guard(
    context: BrowserContext, state: RouteState, egress: EgressPolicy
) -> None:
    """Route every WebSocket a page of ``context`` opens: only ``ws:``/``wss:`` URLs whose host passes
    the charter's allowlist (as ``http:``/``https:``) and the SSRF guard connect; any other is closed before the
    server is contacted and recorded in ``state.blocked`` (resource type ``websocket``). With ``--replay``
    every WebSocket is refused (nothing touches the network).

    The context-wide route catches every socket; each page also gets its own route (taking precedence) so a
    refusal is attributed to the page that made it and shows in that page's event."""
    async def on_page(page: Page) -> None:
        try:
            await page.route_web_socket(_any_url, lambda ws: websocket_route(state, egress, ws, page))
        except Exception as exc:  # noqa: BLE001 - a page closed at once; the context-wide route still guards
            logger.debug("cannot route the WebSockets of a new page: %s", exc)

    await context.route_web_socket(_any_url, lambda ws: websocket_route(state, egress, ws, None))
    context.on("page", on_page)


def _any_url(url: str) -> bool:
    return True  # every WebSocket, whatever its URL (a pattern could let an odd spelling through unrouted)


def websocket_refusal(url: str, egress: EgressPolicy, *, replay: bool) -> str | None:
    """Why a WebSocket to ``url`` may not connect (before the SSRF guard), or None when it may."""
    if replay:
        return "WebSocket refused in replay"
    parsed = url_safety.parse(url)  # the browser's reading of the URL (WHATWG)
    if parsed is None:
        return "unparsable URL"
    if parsed.scheme not in _WS_SCHEMES:
        return f"not a ws:/wss: URL ({parsed.scheme or 'no scheme'})"
    if not egress.permits(_as_http(url)):
        return "not on allowed_domains"
    return None


def _as_http(ws_url: str) -> str:
    """A ws:/wss: URL as the http:/https: URL of the same host and port (what the allowlist and guard judge)."""
    parsed = url_safety.parse(ws_url)
    scheme = _WS_SCHEMES.get(parsed.scheme) if parsed is not None else None
    return (url_safety.with_scheme(ws_url, scheme) if scheme else None) or "about:invalid"


async def websocket_route(
    state: RouteState, egress: EgressPolicy, ws: WebSocketRoute, page: Page | None
) -> None:
    url = ws.url
    reason = websocket_refusal(url, egress, replay=state.replay is not None)
    if reason is None and state.guard is not None:
        reason = await state.guard.check(_as_http(url))
    if reason is None:
        ws.connect_to_server()
        return
    logger.info("blocked websocket to %s (%s)", url, reason)
    state.blocked.append(BlockedRequest(url, "websocket", reason, navigation=False, page=page))
    await ws.close(code=_WS_POLICY_CLOSE, reason="blocked by brt")


def on_request_failed(state: RouteState, request: Request) -> None:
    """With --replay, a request missing from the HAR is aborted: log it and keep it for the events."""
    failure = request.failure or ""
    if error_kind(failure) is not RequestFailed or any(b.url == request.url for b in state.blocked):
        return  # only route.abort() of the HAR router ("failed") means "missing from the HAR"
    logger.info("replay: no recorded response for %s (%s)", request.url, failure)
    state.blocked.append(
        BlockedRequest(
            request.url,
            request.resource_type,
            f"not in replay HAR ({failure})" if failure else "not in replay HAR",
            navigation=request.is_navigation_request(),
            page=page_of(request),
        )
    )


# Playwright abort codes for the fetcher's network errors (the browser then reports the same net::ERR_*).
_ABORT_CODES = {
    "ERR_CONNECTION_REFUSED": "connectionrefused",
    "ERR_CONNECTION_RESET": "connectionreset",
    "ERR_CONNECTION_CLOSED": "connectionclosed",
    "ERR_EMPTY_RESPONSE": "connectionclosed",
    "ERR_NAME_NOT_RESOLVED": "namenotresolved",
    "ERR_CONNECTION_FAILED": "connectionfailed",
}


async def route_navigation(
    route: Any,
    fetcher: Any,
    block: Callable[[str, str], None],
    har_entries: list[dict[str, Any]] | None,
    *,
    deadline: float,
    partial_ok_after: float | None,
    on_result: Callable[[Any], None] | None = None,
    refuse_errors: bool = False,
) -> Any:
    """Answer a navigation request with a document brt fetched itself (``fetcher.DocumentFetcher``).

    Redirects are not shown to Playwright's route handlers (the browser follows them itself), so the fetcher
    follows them hop by hop and checks every target (allowlist, scheme, internal address) before anything is
    sent to it. A chain that passes cancels the browser's navigation, and the harvest navigates to the
    checked final URL (``goto_checked``), answered from the fetched result, not fetched twice; a target that
    fails is aborted and reported with ``block(url, reason)``. A body past the byte cap is aborted; one still
    arriving at ``partial_ok_after`` is handed over as it stands. With ``refuse_errors`` (a script's navigation
    of a loaded page) an error document is answered with a 204, which cancels the navigation and leaves the
    loaded document in place. Returns the ``FetchResult``."""
    request = route.request
    url = request.url
    result = fetcher.take(url)
    if result is None:
        try:
            headers = await request.all_headers()
        except Exception:  # noqa: BLE001 - the request's frame went away
            headers = dict(request.headers)
        result = await fetcher.fetch(
            url,
            deadline=deadline,
            method=request.method,
            headers=headers,
            body=request.post_data_buffer,
            partial_ok_after=partial_ok_after,
        )
    if on_result is not None:  # before the browser hears of it (the harvest reads it when goto returns)
        on_result(result)
    if result.kind == "blocked":
        logger.info("blocked navigation to %s (%s)", result.url, result.reason)
        block(result.url, result.reason or "blocked")
        if har_entries is not None and len(result.hops) >= 1 and result.status is not None:
            har_entries.append(har_entry(request.method, result.hops[-1], result, result.url))
        await _safe(route.abort("blockedbyclient"))
        return result
    if result.kind in ("ok", "partial"):
        if len(result.hops) > 1 and result.hops[-1] != (url_safety.normalize(url) or url):
            # Every hop was checked. The browser must not follow a redirect itself: Playwright's router never
            # sees the target of a redirect, so the browser would fetch it with its own DNS answer, past the
            # byte cap and deadline. So the navigation is cancelled and the harvest navigates to the final
            # URL (the WHATWG serialisation that was checked), answered from this fetch (issue 11).
            fetcher.stash(result.hops[-1], result)
            result.redirected_to = result.hops[-1]
            if har_entries is not None:
                har_entries.append(har_redirect_entry(request.method, url, result, result.hops[-1]))
            await _safe(route.abort("aborted"))
            return result
        if refuse_errors and (result.status or 0) >= 400:
            logger.info("a script navigated to %s, which answers HTTP %s: cancelled, the page kept as loaded",
                        result.url, result.status)
            await _safe(route.fulfill(status=204, body=""))
            return result
        await _safe(fulfill_navigation(route, result.status or 200, header_dict(result.headers), result.body))
        return result
    if result.kind == "too large":
        logger.info("%s: %s", url, result.reason)
        await _safe(route.abort("blockedbyresponse"))
        return result
    if result.kind == "timeout":
        logger.info("%s: %s", url, result.reason)
        await _safe(route.abort("timedout"))
        return result
    code = next((c for marker, c in _ABORT_CODES.items() if marker in (result.reason or "")), "failed")
    logger.info("navigation to %s failed: %s", url, result.reason)
    await _safe(route.abort(code))
    return result


async def goto_checked(session: Any, page: Any, url: str, *, deadline: float, wait_until: str = "load") -> Any:
    """``page.goto(url)``. When brt's own fetch of the document followed redirects (every hop checked), the
    browser's navigation was cancelled (``route_navigation``): navigate to the checked final URL instead, whose
    response comes from that fetch. Returns goto's response; raises what goto raises otherwise."""
    from playwright.async_api import Error as PlaywrightError
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    try:
        return await page.goto(url, wait_until=wait_until, timeout=max(1.0, deadline - time.monotonic()) * 1000)
    except PlaywrightTimeout:
        raise
    except PlaywrightError:
        nav = session.nav_results.get(page)
        target = getattr(nav, "redirected_to", None)
        if not target:
            raise
    session.expected_navigations.add(target)
    try:
        return await page.goto(target, wait_until=wait_until, timeout=max(1.0, deadline - time.monotonic()) * 1000)
    finally:
        session.expected_navigations.discard(target)


def header_dict(headers: list[tuple[str, str]]) -> dict[str, str]:
    """Response headers for ``route.fulfill``: repeated Set-Cookie lines joined by newlines (how Playwright
    splits them back), other repeated headers by commas."""
    out: dict[str, str] = {}
    for name, value in headers:
        key = name.lower()
        if key in out:
            out[key] += ("\n" if key == "set-cookie" else ", ") + value
        else:
            out[key] = value
    return out


async def _safe(awaitable: Any) -> None:
    from playwright.async_api import Error as PlaywrightError

    try:
        await awaitable
    except PlaywrightError as exc:  # the page went away meanwhile (timeout, closed)
        logger.debug("route already handled: %s", exc)
