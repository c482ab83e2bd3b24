"""Launching the browser for the Playwright reader: one headless Chromium (or a running Chrome attached over CDP),
every connection of it through brt's egress proxy (``../../net/proxy.py``), one fresh context with brt's routing
(``routes.py``), everything read recorded as a HAR file (``../../har.py``), and relaunched in place after a
crash. With ``lazy`` the browser is launched only when the first page must be rendered
(:meth:`BrowserSession.start`): a harvest that reads every page from its served HTML (``harvest.render: auto``)
never starts one."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .... import url_safety
from ....egress import EgressPolicy
from ....errors import BrowserNotFound, HarvestError, first_line
from ... import launch
from ...har import add_har_entries, har_error_urls, har_name, har_redirects, har_urls, mark_incomplete
from ...net.fetcher import DocumentFetcher
from ...net.guard import NetGuard
from ...net.proxy import EgressProxy, GuardPolicy, RefuseAll
from .bounds import PageKeeper
from .routes import BlockedRequest, RouteState, allowlist_route, install_websocket_guard, on_request_failed

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, Page

__all__ = ["BlockedRequest", "BrowserSession", "open_browser"]

logger = logging.getLogger(__name__)


@dataclass
class _Launch:
    """How a session's browser and context are made: the start and every relaunch use the same."""

    playwright: Any
    egress: EgressPolicy
    args: list[str]
    browser_url: str | None
    context_options: dict[str, Any]


@dataclass(kw_only=True)
class BrowserSession(RouteState):
    """What :func:`open_browser` yields: the context to open pages in and what its routes know and recorded
    (``RouteState``: the requests it blocked, the guard, the fetcher, the replay maps).

    After a crash, :meth:`relaunch` replaces ``browser`` and ``context`` (and ``har_path``, one HAR per context)
    in place; everything else (blocked requests, guard, replay maps) carries over."""

    browser: Browser | None
    context: BrowserContext | None
    har_path: Path
    executable: str
    # Every HAR file the session's contexts recorded (one per context, oldest first), and those a crash cut short.
    har_paths: list[Path] = field(default_factory=list)
    har_incomplete: list[Path] = field(default_factory=list)
    relaunches: int = 0
    launches: int = 0  # browsers started (launched or attached): the first start and every relaunch
    # What brt's own document fetches send as User-Agent: the browser's (asked once it runs; before that, what
    # its binary's version says it will send: launch.headless_user_agent).
    user_agent: str | None = None
    # Every connection of a browser brt launched goes through this proxy (net/proxy.py); when attached, only
    # the requests of brt's context do (the browser's WebRTC and its other contexts are out of brt's reach).
    egress: EgressProxy | None = None
    # The pages brt opened; any other page of its contexts (popups) is closed as soon as it appears.
    pages: PageKeeper = field(default_factory=PageKeeper)
    # Pages read in the current context (the caller appends): named in the note of a HAR a crash lost.
    pages_read: list[str] = field(default_factory=list)
    _launch: _Launch | None = field(default=None, repr=False)
    _closed: bool = field(default=False, repr=False)  # the current context and browser were closed already
    _starting: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)
    _start_error: BaseException | None = field(default=None, repr=False)  # the first start failed: never again

    @property
    def attached(self) -> bool:
        """True when the browser was attached over CDP (``browser_url``): brt never relaunches it."""
        return self._launch is not None and self._launch.browser_url is not None

    @property
    def started(self) -> bool:
        """True once a browser was started (it may have crashed since)."""
        return self.launches > 0

    async def start(self) -> bool:
        """Start the browser unless it has started already (concurrent callers wait for one start); True when
        this call started it. A first start that failed is not tried again: every later call raises its error
        (``BrowserNotFound``, ``HarvestError``)."""
        async with self._starting:
            if self._start_error is not None:
                raise self._start_error
            if self.started:
                return False
            try:
                await _start_session(self)
            except (BrowserNotFound, HarvestError) as exc:
                self._start_error = exc
                raise
            await self._ask_user_agent()
            return True

    async def _ask_user_agent(self) -> None:
        """The browser's own User-Agent (asked over CDP: no page is opened) from now on."""
        agent = await _user_agent(self.browser)
        if agent and agent != self.user_agent:
            if self.user_agent is not None:
                logger.info("the browser sends User-Agent %r, not %r as its version said", agent, self.user_agent)
            self.user_agent = agent

    async def new_page(self) -> Page:
        """A page of the current context that brt opens (every other page that appears there is closed)."""
        assert self.context is not None, "start() the browser first"
        return await self.pages.new_page(self.context)

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
        crashed_har, self.har_path = self.har_path, self.har_path.with_name(har_name())
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
    policy: EgressPolicy,
    *,
    har_path: Path,
    javascript: bool = True,
    replay: Path | None = None,
    executable: str | None = None,
    user_agent: str | None = None,
    browser_url: str | None = None,
    block_resources: Iterable[str] = (),
    lazy: bool = False,
) -> AsyncIterator[BrowserSession]:
    """Launch headless Chromium with one fresh context (no stored state, no downloads, no service workers)
    whose every request must be one ``policy`` (the run's egress policy) permits; every connection the browser
    process makes goes through brt's egress proxy (allowlist and SSRF guard on the host and its address, pinned). With
    ``replay``, responses come from that HAR file only (anything missing from it is aborted) and the proxy
    refuses every connection. What the context reads is always recorded to ``har_path``; closing the context
    writes the file (a context whose browser crashed cannot write it: a placeholder HAR with an "incomplete"
    comment takes its place, see :meth:`BrowserSession.relaunch`). Open pages with ``session.new_page()``:
    any other page that appears in the context (a popup) is closed at once.

    With ``browser_url`` (e.g. ``http://127.0.0.1:9222``) nothing is launched: brt attaches to that running
    Chrome over CDP and opens its own fresh context there (no cookies, storage or logins of the browser's other
    contexts), with the same allowlist routing and HAR recording, and that context's requests sent through the
    proxy (best effort: the browser's WebRTC and its other contexts are out of brt's reach, so egress is
    recorded as not enforced); on exit it closes only that context and disconnects, leaving the browser
    running.

    ``block_resources`` (text mode): subresources of these types on allowed hosts are aborted before they are
    requested and counted in ``session.aborted``.

    ``lazy``: a browser to launch is launched by the first ``session.start()`` (the proxy, the guard and brt's
    document fetcher are ready before); one to attach to (``browser_url``) is attached at once."""
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
                    return launch.existing_file(p.chromium.executable_path)
                except Exception:  # no managed browser registered
                    return None

            executable = launch.find_browser_with(managed)
        rules = policy.resolver_rules
        # an attached browser keeps its own resolver; the route's guard still checks
        args = launch.LAUNCH_ARGS + ([f"--host-resolver-rules={rules}"] if rules else [])
        guard = NetGuard(policy.exact_hosts, resolver_rules=rules) if replay is None else None
        admit = RefuseAll() if guard is None else GuardPolicy(policy.permits, guard)
        egress = await EgressProxy(admit).start()
        context_options: dict[str, Any] = {
            "accept_downloads": False,
            "service_workers": "block",
            "java_script_enabled": javascript,
            "record_har_content": "embed",
            "ignore_https_errors": False,
        }
        if user_agent:
            context_options["user_agent"] = user_agent
        if browser_url is None:  # every connection of the browser brt launches goes through its egress proxy
            args = args + launch.egress_args(egress.url)
        else:  # an attached browser: only this context's requests can be sent through it (WebRTC cannot)
            context_options["proxy"] = {"server": egress.url, "bypass": "<-loopback>"}
        session = BrowserSession(
            browser=None,  # type: ignore[arg-type]  # set by _start_session
            context=None,  # type: ignore[arg-type]
            har_path=har_path,
            executable=executable,
            replay=replay,
            block_resources=frozenset(block_resources),
            egress=egress,
        )
        session._launch = _Launch(p, policy, args, browser_url, context_options)
        if guard is not None:
            session.guard = guard
            session.fetcher = DocumentFetcher(session.guard, policy.permits)
        else:  # nothing is looked up in a replay: the guard judges IP literals and resolver rules only
            session.guard = NetGuard(policy.exact_hosts, resolver_rules=rules, offline=True)
            session.replay_redirects = har_redirects(Path(replay))
            session.replay_urls = har_urls(Path(replay))
            session.replay_errors = har_error_urls(Path(replay))
        try:
            if browser_url is not None:
                session.user_agent = user_agent
            else:
                session.user_agent = user_agent or await asyncio.to_thread(launch.headless_user_agent, executable)
            if not lazy or browser_url is not None:
                await session.start()
            try:
                yield session
            finally:
                # For an attached browser this closes brt's context and disconnects, leaving the browser running.
                await _close_session(session, "browser crashed")
                if session.fetcher is not None:
                    await session.fetcher.aclose()
        finally:
            await egress.aclose()


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
            raise BrowserNotFound(f"cannot launch the browser at {session.executable}: {first_line(exc)}") from exc
    session.browser = browser
    session.launches += 1
    session.pages_read = []
    try:
        context = await browser.new_context(**launch.context_options, record_har_path=str(session.har_path))
        session.context = context
        session.pages.watch(context)
        session._closed = False  # noqa: SLF001
        session.har_paths.append(session.har_path)
        if session.replay is not None:
            # Registered first so it runs last: the allowlist route below falls back to it.
            await context.route_from_har(str(session.replay), not_found="abort")
            context.on("requestfailed", lambda request: on_request_failed(session, request))
        egress = launch.egress
        await context.route("**/*", lambda route: allowlist_route(session, egress, route))
        await install_websocket_guard(context, session, egress)
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
    if not session.started:  # no browser ever ran: the HAR holds the documents brt read itself
        if session.har_extra:
            add_har_entries(session.har_path, list(session.har_extra), create=True)
            session.har_extra.clear()
            if session.har_path.is_file():
                session.har_paths.append(session.har_path)
        return
    crashed = not session.connected()
    har = session.har_path
    if session.context is not None:
        await _quietly(session.context.close(), "closing the browser context")  # writes the HAR
    if crashed:
        lost = not har.is_file()
        session.har_incomplete.append(har)
        mark_incomplete(har, reason, session.pages_read, lost=lost)
        pages = session.pages_read
        logger.warning(
            "%s: the HAR of that browser context is %s (%s); %d page(s) read in it cannot be replayed from it%s",
            reason,
            "lost (a placeholder marked incomplete takes its place)" if lost else "incomplete (marked so)",
            har,
            len(pages),
            (": " + ", ".join(pages[:10]) + (" ..." if len(pages) > 10 else "")) if pages else "",
        )
    if session.har_extra:
        add_har_entries(har, list(session.har_extra))
        session.har_extra.clear()  # in place: the routes hold this list
    if session.browser is not None:
        await _quietly(session.browser.close(), "closing the browser")


async def _quietly(awaitable: Any, what: str, timeout_s: float = 30.0) -> None:
    """Await a close that may fail on a dead or wedged browser; log and carry on."""
    from playwright.async_api import Error as PlaywrightError

    try:
        await asyncio.wait_for(awaitable, timeout=timeout_s)
    except (PlaywrightError, asyncio.TimeoutError) as exc:
        logger.info("%s failed: %s", what, first_line(exc) if str(exc) else type(exc).__name__)


async def _connect_over_cdp(p: Any, browser_url: str) -> Browser:
    """Attach to a running Chrome's DevTools endpoint (``http://host:port`` or ``ws://...``)."""
    from playwright.async_api import Error as PlaywrightError

    parsed = url_safety.parse(browser_url)
    if parsed is None or parsed.scheme not in ("http", "https", "ws", "wss"):
        raise HarvestError(f"--browser-url must be an http:// or ws:// DevTools endpoint, got {browser_url!r}")
    try:
        return await p.chromium.connect_over_cdp(browser_url, timeout=30_000)
    except PlaywrightError as exc:
        logger.debug("attaching to %s failed: %r", browser_url, first_line(exc))
        raise BrowserNotFound(
            f"cannot attach to a browser at {browser_url}: {_attach_failure(exc)}\n"
            "Start Chrome with --remote-debugging-port=9222 (or use the endpoint a Chrome DevTools MCP session "
            "uses), or leave out --browser-url to let brt launch its own browser."
        ) from exc


def _attach_failure(exc: BaseException) -> str:
    """Why attaching failed, in brt's words: Playwright's message quotes what the endpoint replied (a remote's
    bytes), so it is never passed on."""
    text = str(exc)
    if "ECONNREFUSED" in text:
        return "nothing listens there (connection refused)"
    if "ENOTFOUND" in text or "EAI_AGAIN" in text:
        return "the host name does not resolve"
    if "Timeout" in text or type(exc).__name__ == "TimeoutError":
        return "no answer within 30 s"
    return "the endpoint did not answer as a DevTools server does (its reply is not shown)"


async def _user_agent(browser: Any) -> str | None:
    """The User-Agent the browser sends (asked over CDP: no page is opened), None when it does not say."""
    from playwright.async_api import Error as PlaywrightError

    try:
        cdp = await browser.new_browser_cdp_session()
        try:
            info = await asyncio.wait_for(cdp.send("Browser.getVersion"), timeout=5)
        finally:
            await cdp.detach()
    except (PlaywrightError, asyncio.TimeoutError) as exc:
        logger.debug("cannot ask the browser for its User-Agent: %s", exc)
        return None
    agent = info.get("userAgent") if isinstance(info, dict) else None
    return agent if isinstance(agent, str) and agent else None
