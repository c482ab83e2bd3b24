"""``brt harvest --via devtools-mcp``: brt as an MCP client of the ``chrome-devtools-mcp`` npm package.

brt starts ``chrome-devtools-mcp --headless --isolated --executablePath <browser>`` (plus the launch flags of
DESIGN.md as ``--chromeArg`` and the charter's allowlist as ``--allowedUrlPattern``) over stdio with the MCP
SDK's ``ClientSession``, and reads every page through its ``navigate_page`` and ``evaluate_script`` tools
(pages are addressed by ``pageId``, found with ``list_pages``). Everything after the read is the Playwright
path's: the same breadth-first crawl and limits, the allowlist on the final URL, robots.txt, the same
``harvest_event`` records, extraction, chunking and store writer (this module subclasses the harvest).

Differences from the Playwright path: pages are read one at a time (one tab); no HAR is recorded; requests the
allowlist stops inside the browser are not itemised per page (chrome-devtools-mcp drops them silently).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import tempfile
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import format_datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit
from urllib.robotparser import RobotFileParser

from .browser import LAUNCH_ARGS, find_browser
from .charter import url_allowed
from .errors import HarvestError
from .harvest import (
    _HTML_TYPES,
    _USER_AGENT_TOKEN,
    HarvestEvent,
    HarvestReport,
    _first_line,
    _Harvest,
    _now,
)
from .urls import canonical_url

if TYPE_CHECKING:
    from mcp.client.session import ClientSession

__all__ = ["DevtoolsHarvest", "DevtoolsMcpBrowser", "DevtoolsMcpNotFound", "find_devtools_mcp"]

logger = logging.getLogger(__name__)

PACKAGE = "chrome-devtools-mcp"
_BIN = Path("node_modules") / PACKAGE / "build" / "src" / "bin" / "chrome-devtools-mcp.js"
_ROOT = Path(__file__).resolve().parents[1]
_REQUIRED_TOOLS = ("list_pages", "navigate_page", "evaluate_script")
# Navigation errors that mean the browser refused the URL (the --allowedUrlPattern list).
_BLOCKED_ERRORS = ("ERR_INTERNET_DISCONNECTED", "ERR_BLOCKED_BY_CLIENT", "ERR_BLOCKED_BY_ADMINISTRATOR")


class DevtoolsMcpNotFound(HarvestError):
    """node or the chrome-devtools-mcp package is missing."""


def _install_hint() -> str:
    return (
        f"Install it into the project with Node.js >= 20.19 and npm:\n"
        f"  npm install --prefix {_ROOT} --no-save {PACKAGE}     (or: bash scripts/dev.sh setup)\n"
        f"or globally (npm install -g {PACKAGE}), or point brt at it with "
        f"BRT_DEVTOOLS_MCP=/path/to/chrome-devtools-mcp.js; or harvest without --via devtools-mcp."
    )


def find_devtools_mcp() -> list[str]:
    """The command that starts chrome-devtools-mcp: $BRT_DEVTOOLS_MCP, the project's node_modules (or the
    current folder's), a ``chrome-devtools-mcp`` on PATH, else ``npx --no-install``. Raises
    DevtoolsMcpNotFound saying how to install what is missing."""
    node = shutil.which("node")
    env = os.environ.get("BRT_DEVTOOLS_MCP")
    if env:
        path = Path(env).expanduser()
        if path.suffix in (".js", ".mjs", ".cjs"):
            if not path.is_file():
                raise DevtoolsMcpNotFound(f"BRT_DEVTOOLS_MCP={env!r} is not a file.\n{_install_hint()}")
            if node is None:
                raise DevtoolsMcpNotFound(_no_node())
            return [node, str(path)]
        found = shutil.which(env)
        if found is None:
            raise DevtoolsMcpNotFound(f"BRT_DEVTOOLS_MCP={env!r} is not an executable.\n{_install_hint()}")
        return [found]
    if node is None:
        raise DevtoolsMcpNotFound(_no_node())
    for base in (_ROOT, Path.cwd()):
        script = base / _BIN
        if script.is_file():
            return [node, str(script)]
    on_path = shutil.which(PACKAGE)
    if on_path:
        return [on_path]
    npx = shutil.which("npx")
    if npx:
        return [npx, "--no-install", PACKAGE]
    raise DevtoolsMcpNotFound(f"{PACKAGE} (npm package) was not found.\n{_install_hint()}")


def _no_node() -> str:
    return (
        f"--via devtools-mcp needs Node.js (node was not found on PATH) and the {PACKAGE} npm package.\n"
        "Install Node.js >= 20.19 (e.g. apt-get install nodejs npm, or https://nodejs.org), then:\n"
        f"  npm install --prefix {_ROOT} --no-save {PACKAGE}     (or: bash scripts/dev.sh setup)"
    )


def allowed_url_patterns(allowed_domains: list[str]) -> list[str]:
    """URLPattern strings for chrome-devtools-mcp's ``--allowedUrlPattern``: http(s), any port, the host
    itself and (for a domain, not an IP or ``localhost``) its subdomains."""
    patterns: list[str] = []
    for domain in allowed_domains:
        host = domain.strip().lower().rstrip(".")
        if not host or ":" in host:  # IPv6 literals: left to the final-URL check
            continue
        hosts = [host]
        if not _exact_only(host):
            hosts.append("*." + host)
        for scheme in ("http", "https"):
            patterns.extend(f"{scheme}://{h}:*/*" for h in hosts)
    return patterns


def _exact_only(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class DevtoolsMcpError(HarvestError):
    """chrome-devtools-mcp answered something brt cannot use."""


@dataclass
class Navigation:
    ok: bool
    text: str


class DevtoolsMcpBrowser:
    """One chrome-devtools-mcp process (its own headless, isolated browser) and one MCP client session to it.

    ``async with DevtoolsMcpBrowser(allowed_domains) as b: await b.navigate(url); await b.evaluate(js)``"""

    def __init__(
        self,
        allowed_domains: list[str],
        *,
        executable: str | None = None,
        timeout_s: float = 30.0,
        command: list[str] | None = None,
        javascript: bool = True,
    ):
        self.allowed_domains = allowed_domains
        self.executable = executable
        self.timeout_s = timeout_s
        self.command = command
        self.javascript = javascript
        self.page_id: int = 1
        self.restricted = False  # whether --allowedUrlPattern was accepted
        self._stack: AsyncExitStack | None = None
        self._session: ClientSession | None = None
        self._errlog: Any = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    def args(self, *, restrict: bool = True) -> list[str]:
        executable = self.executable or find_browser()
        args = ["--headless", "--isolated", "--executablePath", executable]
        args += [f"--chromeArg={flag}" for flag in LAUNCH_ARGS]
        if not self.javascript:
            args.append("--chromeArg=--blink-settings=scriptEnabled=false")
        args += ["--no-usage-statistics", "--no-performance-crux"]
        if restrict:
            for pattern in allowed_url_patterns(self.allowed_domains):
                args += ["--allowedUrlPattern", pattern]
        return args

    async def __aenter__(self) -> DevtoolsMcpBrowser:
        command = self.command or find_devtools_mcp()
        self._tmp = tempfile.TemporaryDirectory(prefix="brt-devtools-")
        try:
            try:
                await self._start(command, restrict=True)
                self.restricted = True
            except DevtoolsMcpError as exc:
                # Chrome < 149 does not know --allowedUrlPattern: fall back to brt's own final-URL checks.
                logger.warning("chrome-devtools-mcp refused --allowedUrlPattern (%s); retrying without it", exc)
                await self._close_session()
                await self._start(command, restrict=False)
        except BaseException:
            await self._close_session()
            self._tmp.cleanup()
            raise
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self._close_session()
        if self._tmp is not None:
            self._tmp.cleanup()

    async def _start(self, command: list[str], *, restrict: bool) -> None:
        from mcp.client.session import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client

        self._errlog = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")
        params = StdioServerParameters(
            command=command[0],
            args=[*command[1:], *self.args(restrict=restrict)],
            env={"CHROME_DEVTOOLS_MCP_NO_USAGE_STATISTICS": "1"},
            cwd=self._tmp.name if self._tmp else None,
        )
        self._stack = AsyncExitStack()
        try:
            read, write = await self._stack.enter_async_context(stdio_client(params, errlog=self._errlog))
            session = await self._stack.enter_async_context(
                ClientSession(read, write, read_timeout_seconds=max(60.0, 2 * self.timeout_s + 30))
            )
            await asyncio.wait_for(session.initialize(), timeout=60)
            tools = {t.name for t in (await session.list_tools()).tools}
        except DevtoolsMcpNotFound:
            raise
        except (OSError, FileNotFoundError) as exc:
            raise DevtoolsMcpNotFound(f"cannot start {' '.join(command)}: {exc}\n{_install_hint()}") from exc
        except Exception as exc:
            raise DevtoolsMcpError(
                f"cannot start {PACKAGE} ({' '.join(command)}): {_first_line(exc)}{self._log_tail()}\n"
                f"{_install_hint() if 'npx' in command[0] else ''}".rstrip()
            ) from exc
        missing = [t for t in _REQUIRED_TOOLS if t not in tools]
        if missing:
            raise DevtoolsMcpError(f"{PACKAGE} has no {', '.join(missing)} tool(s); tools: {sorted(tools)}")
        self._session = session
        pages = await self.list_pages()
        if not pages:
            raise DevtoolsMcpError(f"{PACKAGE} lists no page to navigate")
        self.page_id = pages[0][0]

    async def _close_session(self) -> None:
        stack, self._stack, self._session = self._stack, None, None
        if stack is not None:
            try:
                await stack.aclose()
            except Exception as exc:  # the server may already be gone
                logger.debug("closing chrome-devtools-mcp: %s", exc)
        if self._errlog is not None:
            self._errlog.close()
            self._errlog = None

    def _log_tail(self) -> str:
        if self._errlog is None:
            return ""
        try:
            self._errlog.flush()
            self._errlog.seek(0)
            lines = [line.rstrip() for line in self._errlog.read().splitlines() if line.strip()]
        except (OSError, ValueError):
            return ""
        tail = "\n".join(lines[-8:])
        return f"\n{PACKAGE} said:\n{tail}" if tail else ""

    # -- tools ----------------------------------------------------------------------------------------------

    async def call(self, tool: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        """(is_error, text) of one tool call."""
        if self._session is None:
            raise DevtoolsMcpError(f"{PACKAGE} is not running")
        result = await self._session.call_tool(tool, arguments)
        text = "\n".join(getattr(block, "text", "") for block in result.content)
        return bool(result.is_error), text

    async def list_pages(self) -> list[tuple[int, str]]:
        """(pageId, description) of every page, from ``list_pages``."""
        _, text = await self.call("list_pages", {})
        pages = []
        for line in text.splitlines():
            head, sep, rest = line.partition(":")
            if sep and head.strip().isdigit():
                pages.append((int(head.strip()), rest.strip()))
        return pages

    async def navigate(self, url: str, timeout_s: float) -> Navigation:
        is_error, text = await self.call(
            "navigate_page",
            {"pageId": self.page_id, "type": "url", "url": url, "timeout": int(max(1.0, timeout_s) * 1000)},
        )
        ok = not is_error and not text.lstrip().startswith("Unable to navigate")
        return Navigation(ok=ok, text=text)

    async def evaluate(self, function: str) -> Any:
        """The JSON value the function returns in the current page (read back through a file, so big pages
        are never cut short in the tool's text output)."""
        out = Path(self._tmp.name if self._tmp else tempfile.gettempdir()) / f"eval-{time.monotonic_ns()}.json"
        for attempt in range(2):
            is_error, text = await self.call(
                "evaluate_script", {"pageId": self.page_id, "function": function, "filePath": str(out)}
            )
            # chrome-devtools-mcp waits a few seconds for the page to settle; on a busy machine that can time
            # out although the page is there: ask again.
            if not (is_error and "timed out" in text.lower()) or out.is_file():
                break
            logger.debug("evaluate_script timed out (attempt %d); retrying", attempt + 1)
        try:
            if out.is_file():
                raw = out.read_text(encoding="utf-8")
                return _parse_json_output(raw)
            if is_error:
                raise DevtoolsMcpError(f"evaluate_script failed: {_first_line_text(text)}")
            return _parse_json_output(text)
        finally:
            out.unlink(missing_ok=True)

    async def open(self, url: str, timeout_s: float) -> tuple[Navigation, dict[str, Any]]:
        """Navigate to ``url`` and read the page's facts (``_INFO_JS``). When the evaluation still times out
        after its retry, the new document's script context was lost (puppeteer waits for it in vain, seen
        once in CI): navigate once more, which makes a fresh context."""
        nav = await self.navigate(url, timeout_s)
        try:
            info = await self.evaluate(_INFO_JS)
        except DevtoolsMcpError as exc:
            if "timed out" not in str(exc).lower():
                raise
            logger.warning("%s: no script context after navigating to %s (%s); navigating again", PACKAGE, url, exc)
            nav = await self.navigate(url, timeout_s)
            info = await self.evaluate(_INFO_JS)
        return nav, info if isinstance(info, dict) else {}

    async def document_requests(self) -> list[str]:
        """URLs of the page's document requests (oldest first), from ``list_network_requests``."""
        try:
            _, text = await self.call("list_network_requests", {"pageId": self.page_id, "resourceTypes": ["document"]})
        except Exception as exc:  # an optional tool: --categoryNetwork may be off
            logger.debug("list_network_requests: %s", exc)
            return []
        urls = []
        for line in text.splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[0].startswith("reqid="):
                urls.append(parts[2])
        return urls


def _first_line_text(text: str) -> str:
    text = text.strip()
    return text.splitlines()[0] if text else "(no output)"


def _parse_json_output(text: str) -> Any:
    """The JSON value in chrome-devtools-mcp's output: the whole text, or its fenced ```json block."""
    stripped = text.strip()
    try:
        return json.loads(stripped)
    except ValueError:
        pass
    start = stripped.find("```json")
    end = stripped.rfind("```")
    if start != -1 and end > start:
        body = stripped[start + len("```json") : end]
        try:
            return json.loads(body)
        except ValueError as exc:
            raise DevtoolsMcpError(f"cannot parse evaluate_script output: {exc}") from exc
    raise DevtoolsMcpError(f"unexpected evaluate_script output: {_first_line_text(text)}")


_INFO_JS = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const lm = Date.parse(document.lastModified);
  return {
    url: location.href,
    status: nav && nav.responseStatus ? nav.responseStatus : null,
    contentType: document.contentType || null,
    lastModifiedMs: isNaN(lm) ? null : lm,
    nowMs: Date.now(),
  };
}"""


def _read_js(selector: str | None) -> str:
    region = (
        f"Array.from(document.querySelectorAll({json.dumps(selector)})).map(e => e.outerHTML).join('\\n')"
        if selector
        else "null"
    )
    return f"""() => {{
  const doctype = document.doctype ? '<!DOCTYPE ' + document.doctype.name + '>' : '';
  let region = null;
  try {{ region = {region}; }} catch (e) {{ region = null; }}
  return {{
    url: location.href,
    html: doctype + document.documentElement.outerHTML,
    links: Array.from(document.querySelectorAll('a[href]')).map(a => a.href).filter(h => typeof h === 'string'),
    region: region || null,
  }};
}}"""


_ROBOTS_JS = """() => ({
  status: (performance.getEntriesByType('navigation')[0] || {}).responseStatus || null,
  contentType: document.contentType || null,
  text: document.body ? document.body.innerText : '',
})"""


class DevtoolsHarvest(_Harvest):
    """The harvest with chrome-devtools-mcp as the browser (see the module docstring)."""

    browser: DevtoolsMcpBrowser

    async def run(self) -> HarvestReport:
        command = find_devtools_mcp()  # missing node or package: stop before anything is recorded
        started = time.monotonic()
        embedded_before = self._texts_embedded()
        self.report.har_path = None
        self.progress.start("fetch", total=None)
        self.progress.start("embed", total=None)
        hard = _hardening()
        if hard is not None:
            await hard.start(self)  # the harvest journal, resume links
        try:
            async with DevtoolsMcpBrowser(
                self.charter.allowed_domains,
                timeout_s=float(self.settings.timeout_s),
                javascript=self.settings.javascript,
                command=command,
            ) as browser:
                self.browser = browser
                self.guard = _make_guard(self.charter.allowed_domains)
                writer = asyncio.create_task(self._writer(), name="brt-writer")
                try:
                    await self._crawl_mcp()
                finally:
                    await self.queue.put(None)
                    await writer
        finally:
            self.report.elapsed_s = round(time.monotonic() - started, 3)
            self.report.chunks_embedded = max(0, self._texts_embedded() - embedded_before)
            if hard is not None:
                await hard.stop(self)
            self._record_events()
        logger.info("harvest of %s via %s: %s", self.charter.id, PACKAGE, self.report.summary())
        return self.report

    async def _crawl_mcp(self) -> None:
        async def visit_level(urls: list[str], depth: int) -> list[list[str]]:
            return [await self._visit_mcp(url, depth) for url in urls]  # one page at a time

        await self._breadth_first(visit_level)

    async def _visit_mcp(self, url: str, depth: int) -> list[str]:
        if self.accepted >= self.settings.max_pages:
            self.report.not_attempted += 1
            return []
        event = HarvestEvent(url=url, depth=depth, started_at=_now())
        self.events.append(event)
        links: list[str] = []
        queued = False
        hard = _hardening()
        try:
            if hard is not None and hasattr(hard, "attempts"):
                # politeness slot per host and retries, as on the Playwright path (calls _visit_with)
                links, queued = await hard.attempts(self, None, event, [])
            else:
                links, queued = await self._visit_with(None, event, [])
        except DevtoolsMcpError as exc:
            self._finish(event, "failed", str(exc))
        except Exception as exc:  # one page never stops the harvest
            logger.exception("unexpected error harvesting %s", url)
            self._finish(event, "failed", f"internal error: {type(exc).__name__}: {_first_line(exc)}")
        finally:
            if not queued:
                self.progress.advance("fetch")
                if hard is not None:
                    hard.journal(self, event)
        return links

    async def _visit_with(self, page: Any, event: HarvestEvent, responses: list[Any]) -> tuple[list[str], bool]:
        """One try at one URL through chrome-devtools-mcp (``page`` and ``responses`` are unused here)."""
        return await self._visit_with_mcp(event)

    async def _robots_allow(self, page: Any, url: str, deadline: float) -> bool:
        """The Playwright path's hook (called by the harvest's retry loop), answered through this browser."""
        return await self._robots_allow_mcp(url, max(1.0, deadline - time.monotonic()))

    async def _visit_with_mcp(self, event: HarvestEvent) -> tuple[list[str], bool]:
        url = event.url
        timeout_s = float(self.settings.timeout_s)
        t0 = time.monotonic()

        if not self.refresh and await asyncio.to_thread(self.memory.has_page, url):
            resume = getattr(self, "resume_links", None)
            if resume is None or url in resume:
                self._finish(event, "skipped", "already stored (refresh to fetch it again)")
                return list((resume or {}).get(url) or []), False  # a resume continues the BFS from its links
            # stored, but its links never reached the journal: fetch it again for them
        refused = await self._guard_check(url)
        if refused:
            self._finish(event, "blocked", refused)
            return [], False
        if self.settings.obey_robots and not await self._robots_allow_mcp(url, timeout_s):
            event.timings.fetch_s = time.monotonic() - t0
            self._finish(event, "blocked", "blocked by robots.txt")
            return [], False

        nav, info = await self.browser.open(url, timeout_s)
        final_url = str(info.get("url") or "")
        if not nav.ok and (not final_url.startswith(("http:", "https:")) or "timeout" not in nav.text.lower()):
            event.timings.fetch_s = time.monotonic() - t0
            await self._navigation_error_mcp(event, nav.text)
            return [], False

        if not final_url.startswith(("http:", "https:")):  # an error page (chrome-error://...)
            event.timings.fetch_s = time.monotonic() - t0
            self._finish(event, "failed", f"navigation failed: {_first_line_text(nav.text)}")
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

        if not self.charter.allows(final_url):
            event.timings.fetch_s = time.monotonic() - t0
            self._finish(event, "blocked", f"final URL not on allowed_domains: {final_url}")
            return [], False
        refused = await self._guard_check(final_url)
        if refused:
            event.timings.fetch_s = time.monotonic() - t0
            self._finish(event, "blocked", refused)
            return [], False
        if event.status is not None and event.status >= 400:
            event.timings.fetch_s = time.monotonic() - t0
            self._finish(event, "failed", f"HTTP {event.status}")
            return [], False
        if content_type is not None and content_type not in _HTML_TYPES:
            event.timings.fetch_s = time.monotonic() - t0
            self._finish(event, "skipped", f"unsupported content type ({content_type})")
            return [], False

        canonical_final = canonical_url(final_url)
        self.seen.add(canonical_final)
        selector = self.charter.selector_for(urlsplit(final_url).hostname)
        page = await self.browser.evaluate(_read_js(selector))
        html = str(page.get("html") or "")
        links = [h for h in page.get("links") or [] if isinstance(h, str)]
        region_html = page.get("region") if selector else None
        fetched_at = _now()
        event.timings.fetch_s = time.monotonic() - t0
        return await self._extract_and_queue(
            event, html, final_url, links, headers, selector, region_html, event.status, content_type, fetched_at
        )

    async def _navigation_error_mcp(self, event: HarvestEvent, text: str) -> None:
        first = _first_line_text(text)
        requests = await self.browser.document_requests()
        offsite = next((u for u in reversed(requests) if not url_allowed(u, self.charter.allowed_domains)), None)
        if offsite or any(code in text for code in _BLOCKED_ERRORS):
            event.final_url = offsite
            self._finish(event, "blocked", f"navigation to a host not on allowed_domains: {offsite or event.url}")
        elif "ERR_ABORTED" in text:
            self._finish(event, "skipped", "unsupported content type (download)")
        else:
            self._finish(event, "failed", first)

    async def _guard_check(self, url: str) -> str | None:
        guard = getattr(self, "guard", None)
        if guard is None:
            return None
        try:
            return await guard.check(url)
        except Exception as exc:  # the guard is advisory here; the allowlist still holds
            logger.debug("net guard on %s: %s", url, exc)
            return None

    async def _robots_allow_mcp(self, url: str, timeout_s: float) -> bool:
        """robots.txt of the URL's origin, read once through the same browser."""
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        hard = _hardening()
        rules_cls = getattr(hard, "RobotsRules", None)
        if origin not in self.robots:
            body: str | None = None
            try:
                if not await self._guard_check(origin + "/robots.txt"):
                    nav = await self.browser.navigate(origin + "/robots.txt", min(10.0, timeout_s))
                    if nav.ok:
                        info = await self.browser.evaluate(_ROBOTS_JS)
                        status = info.get("status")
                        if isinstance(status, (int, float)) and 200 <= status < 300:
                            body = str(info.get("text") or "")[:500_000]
            except DevtoolsMcpError as exc:
                logger.debug("no robots.txt for %s: %s", origin, exc)
            if rules_cls is not None:
                self.robots[origin] = rules_cls(body)
                polite = getattr(self, "polite", None)
                if polite is not None:
                    polite.set_crawl_delay(parts.hostname or "", self.robots[origin].crawl_delay(_USER_AGENT_TOKEN))
            else:
                parser = None
                if body is not None:
                    parser = RobotFileParser()
                    parser.parse(body.splitlines())
                self.robots[origin] = parser
        rules = self.robots[origin]
        if rules is None:
            return True
        if rules_cls is not None and isinstance(rules, rules_cls):
            return bool(rules.allowed(url, _USER_AGENT_TOKEN))
        return bool(rules.can_fetch(_USER_AGENT_TOKEN, url))


def _hardening() -> Any:
    """orchestrator.hardening (journal, politeness, retries, resume) when this version has it."""
    try:
        from . import hardening
    except ImportError:
        return None
    return hardening


def _make_guard(allowed_domains: list[str]) -> Any:
    """The SSRF guard of the Playwright path, when this version has it."""
    try:
        from .netguard import NetGuard, resolver_rules_from_env
    except ImportError:
        return None
    try:
        return NetGuard(allowed_domains, resolver_rules=resolver_rules_from_env())
    except Exception as exc:
        logger.debug("no net guard: %s", exc)
        return None
