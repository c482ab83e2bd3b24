"""Finding and launching the browser: one headless Chromium, one fresh context, every request checked against
the charter's allowlist, and everything read recorded as a HAR file."""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from .charter import url_allowed
from .errors import BrowserNotFound, HarvestError

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, Page, Request, Route, WebSocketRoute

__all__ = [
    "LAUNCH_ARGS",
    "BlockedRequest",
    "BrowserSession",
    "find_browser",
    "har_path_for",
    "install_websocket_guard",
    "open_browser",
    "websocket_refusal",
]

logger = logging.getLogger(__name__)

#: Flags that keep Chromium from talking to anything but the pages we ask for (see DESIGN.md, "This machine").
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

_INTERNAL_SCHEMES = ("chrome:", "chrome-extension:", "chrome-untrusted:", "devtools:", "about:")

_PATH_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

_INSTALL_HINT = (
    "No Chromium or Chrome browser was found. Install one of:\n"
    "  apt-get install chromium            (Debian/Ubuntu, as root)\n"
    "  playwright install chromium         (Playwright's managed Chromium)\n"
    "or point brt at a browser binary with BRT_BROWSER=/path/to/chrome"
)


def find_browser() -> str:
    """The browser executable: $BRT_BROWSER, Playwright's managed Chromium, then chromium/chromium-browser/
    google-chrome on PATH. Raises BrowserNotFound with install instructions when there is none."""
    return _find_browser(_playwright_chromium)


def _find_browser(managed: Callable[[], str | None]) -> str:
    env = os.environ.get("BRT_BROWSER")
    if env:
        path = Path(env).expanduser()
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
        found = shutil.which(env)
        if found:
            return found
        raise BrowserNotFound(f"BRT_BROWSER={env!r} is not an executable file.\n{_INSTALL_HINT}")
    path = managed()
    if path:
        return path
    for name in _PATH_CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    raise BrowserNotFound(_INSTALL_HINT)


def _existing(path: str | None) -> str | None:
    return path if path and Path(path).is_file() else None


def _playwright_chromium() -> str | None:
    """The path of Playwright's managed Chromium when it is installed."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:  # pragma: no cover - playwright is a dependency
        return None
    try:
        with sync_playwright() as p:
            return _existing(p.chromium.executable_path)
    except Exception as exc:  # the driver may fail to start (or we run inside a loop); PATH still works
        logger.debug("cannot ask Playwright for its Chromium: %s", exc)
        return None


def har_path_for(store_dir: Path) -> Path:
    """``<store>/har/<UTC timestamp>.har``."""
    return Path(store_dir) / "har" / _har_name()


def _har_name() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ") + ".har"


@dataclass
class BlockedRequest:
    """A request the allowlist (or a missing HAR entry) stopped."""

    url: str
    resource_type: str
    reason: str
    navigation: bool = False
    page: Any = field(default=None, repr=False, compare=False)  # the Playwright Page that made it, if known


@dataclass
class _Launch:
    """How a session's browser and context are made: the start and every relaunch use the same."""

    playwright: Any
    allowed_domains: list[str]
    args: list[str]
    browser_url: str | None
    context_options: dict[str, Any]


@dataclass
class BrowserSession:
    """What :func:`open_browser` yields: the context to open pages in and the requests it blocked.

    After a crash, :meth:`relaunch` replaces ``browser`` and ``context`` (and ``har_path``, one HAR per context)
    in place; everything else (blocked requests, guard, replay maps) carries over."""

    browser: Browser
    context: BrowserContext
    har_path: Path
    executable: str
    replay: Path | None = None
    blocked: list[BlockedRequest] = field(default_factory=list)
    # With --replay: request URL -> redirect target in the HAR (checked before the HAR router follows it).
    replay_redirects: dict[str, str] = field(default_factory=dict)
    # With --replay: every URL the HAR holds (fragment dropped), and the URLs brt itself is navigating to now.
    replay_urls: set[str] | None = None
    expected_navigations: set[str] = field(default_factory=set)
    # SSRF guard (orchestrator/netguard.py): internal addresses refused on every request; None with --replay.
    guard: Any = None
    # Live mode: navigations are fetched by brt (orchestrator/fetcher.py) under the page's deadline and the
    # byte cap. The harvest sets a page's deadline before it navigates and reads the page's last result after.
    fetcher: Any = None
    nav_deadlines: dict[Any, tuple[float, float]] = field(default_factory=dict)  # page -> (deadline, timeout_s)
    nav_results: dict[Any, Any] = field(default_factory=dict)  # page -> FetchResult of its last navigation
    default_timeout_s: float = 30.0
    # Every HAR file the session's contexts recorded (one per context, oldest first), and those a crash cut short.
    har_paths: list[Path] = field(default_factory=list)
    har_incomplete: list[Path] = field(default_factory=list)
    relaunches: int = 0
    # Pages read in the current context (the caller appends): named in the note of a HAR a crash lost.
    pages_read: list[str] = field(default_factory=list)
    _launch: _Launch | None = field(default=None, repr=False)
    _closed: bool = field(default=False, repr=False)  # the current context and browser were closed already

    @property
    def attached(self) -> bool:
        """True when the browser was attached over CDP (``browser_url``): brt never relaunches it."""
        return self._launch is not None and self._launch.browser_url is not None

    def connected(self) -> bool:
        """False once the browser process is gone (crashed, killed) or the CDP connection dropped."""
        try:
            return bool(self.browser.is_connected())
        except Exception:  # noqa: BLE001 - a torn-down driver connection
            return False

    async def relaunch(self, reason: str = "browser crashed") -> None:
        """Replace a crashed browser: close what is left of it (its HAR, which Playwright cannot save after a
        crash, becomes a placeholder that says so), then launch a new browser with the same arguments and open
        a fresh context with the same allowlist routing, SSRF guard and HAR recording, to a new HAR file.

        An attached browser (``browser_url``) is never relaunched: HarvestError."""
        if self._launch is None or self._launch.browser_url is not None:
            raise HarvestError(
                f"the browser at {self._launch.browser_url if self._launch else '?'} disconnected ({reason}); "
                "brt does not relaunch a browser it attached to over --browser-url"
            )
        await _close_session(self, reason)
        crashed_har, self.har_path = self.har_path, self.har_path.with_name(_har_name())
        try:
            await _start_session(self)
        except BaseException:
            self.har_path = crashed_har  # nothing was recorded to the new path
            raise
        self.relaunches += 1
        logger.warning(
            "%s: relaunched the browser (%d so far); recording to %s", reason, self.relaunches, self.har_path
        )


@asynccontextmanager
async def open_browser(
    allowed_domains: list[str],
    *,
    har_path: Path,
    javascript: bool = True,
    replay: Path | None = None,
    executable: str | None = None,
    user_agent: str | None = None,
    browser_url: str | None = None,
) -> AsyncIterator[BrowserSession]:
    """Launch headless Chromium with one fresh context (no stored state, no downloads, no service workers)
    whose every request must be http(s) on ``allowed_domains``. With ``replay``, responses come from that HAR
    file only (anything missing from it is aborted). What the context reads is always recorded to
    ``har_path``; closing the context writes the file (a context whose browser crashed cannot write it: a
    placeholder HAR with an "incomplete" comment takes its place, see :meth:`BrowserSession.relaunch`).

    With ``browser_url`` (e.g. ``http://127.0.0.1:9222``) nothing is launched: brt attaches to that running
    Chrome over CDP and opens its own fresh context there (no cookies, storage or logins of the browser's other
    contexts), with the same allowlist routing and HAR recording; on exit it closes only that context and
    disconnects, leaving the browser running."""
    from playwright.async_api import async_playwright

    if replay is not None and not Path(replay).is_file():
        raise HarvestError(f"replay file not found: {replay}")
    har_path = Path(har_path)
    har_path.parent.mkdir(parents=True, exist_ok=True)

    async with async_playwright() as p:
        if browser_url is not None:
            executable = f"cdp:{browser_url}"
        elif executable is None:

            def managed() -> str | None:
                try:
                    return _existing(p.chromium.executable_path)
                except Exception:  # no managed browser registered
                    return None

            executable = _find_browser(managed)
        from .netguard import resolver_rules_from_env

        rules = resolver_rules_from_env()
        # an attached browser keeps its own resolver; the route's guard still checks
        args = LAUNCH_ARGS + ([f"--host-resolver-rules={rules}"] if rules else [])
        context_options: dict[str, Any] = {
            "accept_downloads": False,
            "service_workers": "block",
            "java_script_enabled": javascript,
            "record_har_content": "embed",
            "ignore_https_errors": False,
        }
        if user_agent:
            context_options["user_agent"] = user_agent
        session = BrowserSession(None, None, har_path, executable, replay)  # type: ignore[arg-type]
        session._launch = _Launch(p, allowed_domains, args, browser_url, context_options)
        if replay is None:
            from .fetcher import DocumentFetcher
            from .netguard import NetGuard

            session.guard = NetGuard(allowed_domains, resolver_rules=rules)
            session.fetcher = DocumentFetcher(session.guard, lambda u: url_allowed(u, allowed_domains))
        else:
            session.replay_redirects = _har_redirects(Path(replay))
            session.replay_urls = _har_urls(Path(replay))
        await _start_session(session)
        try:
            yield session
        finally:
            # For an attached browser this closes brt's context and disconnects, leaving the browser running.
            await _close_session(session, "browser crashed")
            if session.fetcher is not None:
                await session.fetcher.aclose()


async def _start_session(session: BrowserSession) -> None:
    """Launch (or attach to) the browser and open the session's context: allowlist routing, SSRF guard,
    replay routing and HAR recording to ``session.har_path``. The start and every relaunch run this."""
    from playwright.async_api import Error as PlaywrightError

    launch = session._launch  # noqa: SLF001
    assert launch is not None
    p = launch.playwright
    if launch.browser_url is not None:
        browser = await _connect_over_cdp(p, launch.browser_url)
    else:
        try:
            browser = await p.chromium.launch(executable_path=session.executable, headless=True, args=launch.args)
        except PlaywrightError as exc:
            raise BrowserNotFound(f"cannot launch the browser at {session.executable}: {_first_line(exc)}") from exc
    session.browser = browser
    session.pages_read = []
    try:
        context = await browser.new_context(**launch.context_options, record_har_path=str(session.har_path))
        session.context = context
        session._closed = False  # noqa: SLF001
        session.har_paths.append(session.har_path)
        if session.replay is not None:
            # Registered first so it runs last: the allowlist route below falls back to it.
            await context.route_from_har(str(session.replay), not_found="abort")
            context.on("requestfailed", lambda request: _on_request_failed(session, request))
        allowed_domains = launch.allowed_domains
        await context.route("**/*", lambda route: _allowlist_route(session, allowed_domains, route))
        await install_websocket_guard(session, allowed_domains)
    except BaseException:
        session._closed = True  # noqa: SLF001 - nothing of this attempt is left to close
        await _quietly(browser.close(), "closing the browser")
        raise


async def _close_session(session: BrowserSession, reason: str) -> None:
    """Close the session's context (which writes its HAR) and its browser (an attached one is only
    disconnected). When the browser is already gone, Playwright cannot save the context's HAR: a placeholder
    HAR says so in its ``log.comment`` (naming the pages read in that context), the session lists it in
    ``har_incomplete`` and a warning is logged."""
    if session._closed:  # noqa: SLF001 - a relaunch that failed closed it already
        return
    session._closed = True  # noqa: SLF001
    crashed = not session.connected()
    har = session.har_path
    if session.context is not None:
        await _quietly(session.context.close(), "closing the browser context")  # writes the HAR
    if crashed:
        lost = not har.is_file()
        session.har_incomplete.append(har)
        _mark_har_incomplete(har, reason, session.pages_read, lost=lost)
        pages = session.pages_read
        logger.warning(
            "%s: the HAR of that browser context is %s (%s); %d page(s) read in it cannot be replayed from it%s",
            reason,
            "lost (a placeholder marked incomplete takes its place)" if lost else "incomplete (marked so)",
            har,
            len(pages),
            (": " + ", ".join(pages[:10]) + (" ..." if len(pages) > 10 else "")) if pages else "",
        )
    extra = getattr(session, "har_extra", None)
    if extra:
        from .netguard import add_har_entries

        add_har_entries(har, list(extra))
        extra.clear()  # in place: the allowlist route holds this list
    if session.browser is not None:
        await _quietly(session.browser.close(), "closing the browser")


async def _quietly(awaitable: Any, what: str, timeout_s: float = 30.0) -> None:
    """Await a close that may fail on a dead or wedged browser; log and carry on."""
    import asyncio

    from playwright.async_api import Error as PlaywrightError

    try:
        await asyncio.wait_for(awaitable, timeout=timeout_s)
    except (PlaywrightError, asyncio.TimeoutError) as exc:
        logger.info("%s failed: %s", what, _first_line(exc) if str(exc) else type(exc).__name__)


_INCOMPLETE = "incomplete:"


def _mark_har_incomplete(har: Path, reason: str, pages: list[str], *, lost: bool) -> None:
    """Say in the HAR's ``log.comment`` that its recording was cut short; write a placeholder when ``lost``."""
    import json

    from . import __version__

    note = (
        f"{_INCOMPLETE} {reason} at {datetime.now(timezone.utc).isoformat(timespec='seconds')}; "
        + ("Playwright could not save this context's recording" if lost else "requests in flight are missing")
        + (f"; pages read in it: {' '.join(pages)}" if pages else "")
    )
    data: dict[str, Any] | None = None
    if not lost:
        try:
            data = json.loads(har.read_text(encoding="utf-8"))
            data["log"]["comment"] = (str(data["log"].get("comment") or "") + " " + note).strip()
        except (OSError, ValueError, KeyError, TypeError):
            data = None
    if data is None:
        data = {
            "log": {
                "version": "1.2",
                "creator": {"name": "brt", "version": __version__},
                "pages": [],
                "entries": [],
                "comment": note,
            }
        }
    tmp = har.with_suffix(".har.tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    tmp.replace(har)


async def _connect_over_cdp(p: Any, browser_url: str) -> Browser:
    """Attach to a running Chrome's DevTools endpoint (``http://host:port`` or ``ws://...``)."""
    from urllib.parse import urlsplit

    from playwright.async_api import Error as PlaywrightError

    if urlsplit(browser_url).scheme not in ("http", "https", "ws", "wss"):
        raise HarvestError(f"--browser-url must be an http:// or ws:// DevTools endpoint, got {browser_url!r}")
    try:
        return await p.chromium.connect_over_cdp(browser_url, timeout=30_000)
    except PlaywrightError as exc:
        raise BrowserNotFound(
            f"cannot attach to a browser at {browser_url}: {_first_line(exc)}\n"
            "Start Chrome with --remote-debugging-port=9222 (or use the endpoint a Chrome DevTools MCP session "
            "uses), or leave out --browser-url to let brt launch its own browser."
        ) from exc


async def _allowlist_route(session: BrowserSession, allowed_domains: list[str], route: Route) -> None:
    request = route.request
    navigation = request.is_navigation_request()
    if url_allowed(request.url, allowed_domains):
        if (
            navigation
            and session.replay_urls is not None
            and request.url.split("#", 1)[0] not in session.replay_urls
            and request.url not in session.expected_navigations
            and _leaves_loaded_page(request, allowed_domains)
        ):
            # A script of a loaded page navigates to a URL the HAR does not hold: the replay cannot serve it,
            # so cancel the navigation (204) and keep the page that loaded, as a live harvest would have it.
            logger.info("not in replay HAR: script navigation to %s (page kept as loaded)", request.url)
            session.blocked.append(
                BlockedRequest(request.url, request.resource_type, "not in replay HAR", navigation=True,
                               page=_page_of(request))
            )
            await route.fulfill(status=204, body="")
            return
        target = session.replay_redirects.get(request.url)
        if target is not None and not url_allowed(target, allowed_domains):
            # The HAR router follows recorded redirects itself; stop one that leaves the allowlist here.
            logger.info(
                "blocked recorded redirect from %s to %s (not on allowed_domains)", request.url, target
            )
            session.blocked.append(
                BlockedRequest(
                    target,
                    request.resource_type,
                    "not on allowed_domains",
                    navigation=navigation,
                    page=_page_of(request),
                )
            )
            await route.abort("blockedbyclient")
            return
        refused = await session.guard.check(request.url) if session.guard is not None else None
        if refused is not None:  # SSRF: an internal address not named exactly on the allowlist
            logger.info("blocked %s request to %s (%s)", request.resource_type, request.url, refused)
            session.blocked.append(
                BlockedRequest(
                    request.url, request.resource_type, refused, navigation=navigation, page=_page_of(request)
                )
            )
            await route.abort("blockedbyclient")
            return
        if navigation and session.fetcher is not None:  # fetched by brt: hops, byte cap, deadline (fetcher.py)
            await _fetch_navigation(session, route)
            return
        await route.fallback()
        return
    if request.url.startswith(_INTERNAL_SCHEMES):
        # The browser's own resources (e.g. its PDF viewer): never network fetches, never allowed.
        logger.debug("blocked internal %s request to %s", request.resource_type, request.url)
        await route.abort("blockedbyclient")
        return
    logger.info("blocked %s request to %s (not on allowed_domains)", request.resource_type, request.url)
    session.blocked.append(
        BlockedRequest(
            request.url,
            request.resource_type,
            "not on allowed_domains",
            navigation=navigation,
            page=_page_of(request),
        )
    )
    if navigation and _leaves_loaded_page(request, allowed_domains):
        # A script of an allowed, loaded page tries to navigate away (consent walls, ad-block probes). A 204
        # answer cancels the navigation and leaves the loaded document in place; nothing is sent anywhere.
        await route.fulfill(status=204, body="")
        return
    await route.abort("blockedbyclient")


async def _fetch_navigation(session: BrowserSession, route: Route) -> None:
    import time

    from .netguard import route_navigation

    request = route.request
    page = _page_of(request)
    deadline, timeout_s = session.nav_deadlines.get(page) or (
        time.monotonic() + session.default_timeout_s,
        session.default_timeout_s,
    )

    def block(url: str, reason: str) -> None:
        blocked = BlockedRequest(url, request.resource_type, reason, navigation=True, page=page)
        blocked.source = request.url  # type: ignore[attr-defined]  # the navigation it stopped
        session.blocked.append(blocked)

    if not hasattr(session, "har_extra"):
        session.har_extra = []  # type: ignore[attr-defined]  # refused redirects, added to the HAR
    main_frame = _is_main_frame(request)
    result = await route_navigation(
        route,
        session.fetcher,
        block,
        session.har_extra,  # type: ignore[attr-defined]
        deadline=deadline,
        partial_ok_after=session.fetcher.read_deadline(deadline, timeout_s) if main_frame else None,
    )
    if main_frame and page is not None:
        session.nav_results[page] = result


def _is_main_frame(request: Any) -> bool:
    try:
        return request.frame.parent_frame is None
    except Exception:  # noqa: BLE001 - a frame that is gone
        return False


#: WebSocket scheme -> the HTTP scheme whose allowlist and SSRF rules it follows.
_WS_SCHEMES = {"ws": "http", "wss": "https"}
_WS_POLICY_CLOSE = 1008  # RFC 6455 "policy violation"


async def install_websocket_guard(session: BrowserSession, allowed_domains: list[str]) -> None:
    """Route every WebSocket a page of ``session.context`` opens: only ``ws:``/``wss:`` URLs whose host passes
    the charter's allowlist (as ``http:``/``https:``) and the SSRF guard connect; any other is closed before the
    server is contacted and recorded in ``session.blocked`` (resource type ``websocket``). With ``--replay``
    every WebSocket is refused (nothing touches the network).

    The context-wide route catches every socket; each page also gets its own route (taking precedence) so a
    refusal is attributed to the page that made it and shows in that page's event."""
    context = session.context

    async def on_page(page: Page) -> None:
        try:
            await page.route_web_socket(_any_url, lambda ws: _websocket_route(session, allowed_domains, ws, page))
        except Exception as exc:  # noqa: BLE001 - a page closed at once; the context-wide route still guards
            logger.debug("cannot route the WebSockets of a new page: %s", exc)

    await context.route_web_socket(_any_url, lambda ws: _websocket_route(session, allowed_domains, ws, None))
    context.on("page", on_page)


def _any_url(url: str) -> bool:
    return True  # every WebSocket, whatever its URL (a pattern could let an odd spelling through unrouted)


def websocket_refusal(url: str, allowed_domains: list[str], *, replay: bool) -> str | None:
    """Why a WebSocket to ``url`` may not connect (before the SSRF guard), or None when it may."""
    if replay:
        return "WebSocket refused in replay"
    try:
        parts = urlsplit(url)
    except ValueError:
        return "unparsable URL"
    scheme = _WS_SCHEMES.get(parts.scheme.lower())
    if scheme is None:
        return f"not a ws:/wss: URL ({parts.scheme or 'no scheme'})"
    if not url_allowed(urlunsplit((scheme, *parts[1:])), allowed_domains):
        return "not on allowed_domains"
    return None


async def _websocket_route(
    session: BrowserSession, allowed_domains: list[str], ws: WebSocketRoute, page: Page | None
) -> None:
    url = ws.url
    reason = websocket_refusal(url, allowed_domains, replay=session.replay is not None)
    if reason is None and session.guard is not None:
        parts = urlsplit(url)
        reason = await session.guard.check(urlunsplit((_WS_SCHEMES[parts.scheme.lower()], *parts[1:])))
    if reason is None:
        ws.connect_to_server()
        return
    logger.info("blocked websocket to %s (%s)", url, reason)
    session.blocked.append(BlockedRequest(url, "websocket", reason, navigation=False, page=page))
    await ws.close(code=_WS_POLICY_CLOSE, reason="blocked by brt")


def _leaves_loaded_page(request: Any, allowed_domains: list[str]) -> bool:
    try:
        frame = request.frame
        return frame.parent_frame is None and url_allowed(frame.url, allowed_domains)
    except Exception:  # noqa: BLE001 - a request of a frame that is gone
        return False


def _har_urls(har: Path) -> set[str]:
    """Every request URL of a HAR file, without fragment."""
    import json

    try:
        entries = json.loads(har.read_text(encoding="utf-8"))["log"]["entries"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise HarvestError(f"cannot read the replay HAR {har}: {exc}") from exc
    urls: set[str] = set()
    for entry in entries:
        try:
            urls.add(str(entry["request"]["url"]).split("#", 1)[0])
        except (KeyError, TypeError):
            continue
    return urls


def _har_redirects(har: Path) -> dict[str, str]:
    """Request URL -> absolute redirect target for every 3xx entry of a HAR file."""
    import json
    from urllib.parse import urljoin

    try:
        entries = json.loads(har.read_text(encoding="utf-8"))["log"]["entries"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise HarvestError(f"cannot read the replay HAR {har}: {exc}") from exc
    redirects: dict[str, str] = {}
    for entry in entries:
        try:
            url = entry["request"]["url"]
            response = entry["response"]
            status = int(response.get("status") or 0)
        except (KeyError, TypeError, ValueError):
            continue
        if not 300 <= status < 400:
            continue
        location = response.get("redirectURL") or next(
            (
                h.get("value")
                for h in response.get("headers", [])
                if str(h.get("name", "")).lower() == "location"
            ),
            None,
        )
        if location:
            redirects[url] = urljoin(url, location)
    return redirects


def _on_request_failed(session: BrowserSession, request: Request) -> None:
    """With --replay, a request missing from the HAR is aborted: log it and keep it for the events."""
    failure = request.failure or ""
    if "ERR_FAILED" not in failure or any(b.url == request.url for b in session.blocked):
        return  # only route.abort() of the HAR router ("failed") means "missing from the HAR"
    logger.info("replay: no recorded response for %s (%s)", request.url, failure)
    session.blocked.append(
        BlockedRequest(
            request.url,
            request.resource_type,
            f"not in replay HAR ({failure})" if failure else "not in replay HAR",
            navigation=request.is_navigation_request(),
            page=_page_of(request),
        )
    )


def _page_of(request: Request) -> Any:
    try:
        return request.frame.page
    except Exception:  # service-worker requests have no frame
        return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
