"""``brt harvest --via devtools-mcp``, the client side: brt as an MCP client of the ``chrome-devtools-mcp`` npm
package (the reader that drives it for the crawl is ``reader.py``).

brt starts ``chrome-devtools-mcp --headless --isolated --executablePath <browser>`` (plus the launch flags of
docs/contracts.md, "Guardrails", as ``--chromeArg`` and the charter's allowlist as ``--allowedUrlPattern``) over
stdio with the MCP SDK's ``ClientSession``, and reads every page through its ``navigate_page`` and
``evaluate_script`` tools (pages are addressed by ``pageId``, found with ``list_pages``). Everything after the read
is the Playwright path's: the same breadth-first crawl and limits, the allowlist on the final URL, robots.txt, the
same ``harvest_event`` records, extraction, chunking and store writer (the crawl drives this reader as it drives the
Playwright one).

Differences from the Playwright path: pages are read one at a time (one tab); no HAR is recorded; requests the
allowlist stops inside the browser are not itemised per page (chrome-devtools-mcp drops them silently).
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import tempfile
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ....egress import EgressPolicy
from ....egress import url_patterns as allowed_url_patterns  # defined in egress; importable here too
from ....errors import DevtoolsMcpError, DevtoolsMcpNotFound, first_line
from ....settings import run_settings
from ... import launch
from ...models import HTML_TYPES

if TYPE_CHECKING:
    from mcp.client.session import ClientSession

__all__ = [
    "INFO_JS",
    "PACKAGE",
    "ROBOTS_JS",
    "DevtoolsMcpBrowser",
    "DevtoolsMcpError",
    "DevtoolsMcpNotFound",
    "Navigation",
    "allowed_url_patterns",
    "find_devtools_mcp",
    "read_js",
]

logger = logging.getLogger(__name__)

PACKAGE = "chrome-devtools-mcp"
_BIN = Path("node_modules") / PACKAGE / "build" / "src" / "bin" / "chrome-devtools-mcp.js"
_ROOT = Path(__file__).resolve().parents[4]  # the project folder (its node_modules)
_REQUIRED_TOOLS = ("list_pages", "navigate_page", "evaluate_script")
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
    env = run_settings().devtools_mcp
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
        chrome_args: list[str] | None = None,
    ):
        self.allowed_domains = allowed_domains
        self.chrome_args = list(chrome_args or [])  # more Chromium flags (the egress proxy's: net/proxy.py)
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
        executable = self.executable or launch.find_browser()
        args = ["--headless", "--isolated", "--executablePath", executable]
        args += [f"--chromeArg={flag}" for flag in [*launch.LAUNCH_ARGS, *self.chrome_args]]
        if not self.javascript:
            args.append("--chromeArg=--blink-settings=scriptEnabled=false")
        args += ["--no-usage-statistics", "--no-performance-crux"]
        if restrict:
            for pattern in EgressPolicy.of(self.allowed_domains).devtools_patterns():
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
                f"cannot start {PACKAGE} ({' '.join(command)}): {first_line(exc)}{self._log_tail()}\n"
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
                raise DevtoolsMcpError(f"evaluate_script failed: {first_line(text)}")
            return _parse_json_output(text)
        finally:
            out.unlink(missing_ok=True)

    async def open(self, url: str, timeout_s: float) -> tuple[Navigation, dict[str, Any]]:
        """Navigate to ``url`` and read the page's facts (``INFO_JS``). When the evaluation still times out
        after its retry, the new document's script context was lost (puppeteer waits for it in vain, seen
        in CI, also twice in a row on a loaded machine; three times for an image): a document the network log
        shows brt would not read (an error status, a type other than HTML) is decided from the log; any other is
        navigated to again, which makes a fresh context, at most ``NEW_CONTEXT_NAVIGATIONS`` times."""
        nav = await self.navigate(url, timeout_s)
        for again in range(NEW_CONTEXT_NAVIGATIONS + 1):
            try:
                info = await self.evaluate(INFO_JS)
                break
            except DevtoolsMcpError as exc:
                if "timed out" not in str(exc).lower():
                    raise
                # A document brt will not read (an error status, an image, a PDF) is decided without a script
                # context, from the network log; only a page to read is worth navigating to again.
                response = await self.document_response()
                if response is not None and not response.readable:
                    logger.info("%s: %s decided from the network log (%s)", PACKAGE, url, exc)
                    return nav, response.info()
                if again == NEW_CONTEXT_NAVIGATIONS:
                    raise
                logger.warning("%s: no script context after navigating to %s (%s); navigating again", PACKAGE, url, exc)
                nav = await self.navigate(url, timeout_s)
        return nav, info if isinstance(info, dict) else {}

    async def document_response(self) -> DocumentResponse | None:
        """The response to the current page's last document request, from ``list_network_requests`` and
        ``get_network_request`` (no script context needed); None when the network tools are off or say
        nothing usable."""
        requests = await self._document_request_ids()
        if not requests:
            return None
        body = Path(self._tmp.name if self._tmp else tempfile.gettempdir()) / f"body-{time.monotonic_ns()}"
        try:  # the body goes to a file: only the status line and headers are wanted here
            _, text = await self.call(
                "get_network_request",
                {"pageId": self.page_id, "reqid": requests[-1][0], "responseFilePath": str(body)},
            )
        except Exception as exc:  # an optional tool: --categoryNetwork may be off
            logger.debug("get_network_request: %s", exc)
            return None
        finally:
            body.unlink(missing_ok=True)
        return parse_network_request(text)

    async def document_requests(self) -> list[str]:
        """URLs of the page's document requests (oldest first), from ``list_network_requests``."""
        return [url for _, url in await self._document_request_ids()]

    async def _document_request_ids(self) -> list[tuple[int, str]]:
        """(reqid, url) of the page's document requests, oldest first (lines ``reqid=N GET <url> [status]``)."""
        try:
            _, text = await self.call("list_network_requests", {"pageId": self.page_id, "resourceTypes": ["document"]})
        except Exception as exc:  # an optional tool: --categoryNetwork may be off
            logger.debug("list_network_requests: %s", exc)
            return []
        requests = []
        for line in text.splitlines():
            parts = line.split()
            reqid = parts[0].removeprefix("reqid=") if parts else ""
            if len(parts) >= 3 and parts[0].startswith("reqid=") and reqid.isdigit():
                requests.append((int(reqid), parts[2]))
        return requests


#: Navigations made again when a page's script context does not come up (see ``DevtoolsMcpBrowser.open``).
NEW_CONTEXT_NAVIGATIONS = 2


@dataclass(frozen=True)
class DocumentResponse:
    """A document's response as chrome-devtools-mcp's network log shows it."""

    url: str
    status: int | None
    headers: dict[str, str]

    @property
    def content_type(self) -> str | None:
        value = self.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        return value or None

    @property
    def readable(self) -> bool:
        """Whether brt would read this document (a success with an HTML type, or one not yet known)."""
        if self.status is not None and self.status >= 400:
            return False
        return self.content_type is None or self.content_type in HTML_TYPES

    def info(self) -> dict[str, Any]:
        """The page facts ``INFO_JS`` would have returned."""
        last_modified = None
        if "last-modified" in self.headers:
            try:
                last_modified = parsedate_to_datetime(self.headers["last-modified"]).timestamp() * 1000
            except (TypeError, ValueError):
                pass
        return {
            "url": self.url,
            "status": self.status,
            "contentType": self.content_type,
            "lastModifiedMs": last_modified,
            "nowMs": time.time() * 1000,
        }


def parse_network_request(text: str) -> DocumentResponse | None:
    """``get_network_request``'s text: its ``## Request <url>`` line, ``Status:`` line and the lines under
    ``### Response Headers`` (``- name:value``)."""
    url, status, headers, section = "", None, {}, ""
    for line in text.splitlines():
        if line.startswith("## Request "):
            url = line.removeprefix("## Request ").strip()
        elif line.startswith("Status:"):
            code = (line.removeprefix("Status:").split() or [""])[0]  # "Status: 404 Not Found", or no code at all
            status = int(code) if code.isdigit() else None
        elif line.startswith("### "):
            section = line.removeprefix("### ").strip().lower()
        elif section == "response headers" and line.startswith("- ") and ":" in line:
            name, _, value = line[2:].partition(":")
            headers[name.strip().lower()] = value.strip()
    if not url.startswith(("http:", "https:")):
        return None
    return DocumentResponse(url=url, status=status, headers=headers)


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
    raise DevtoolsMcpError(f"unexpected evaluate_script output: {first_line(text)}")


INFO_JS = """() => {
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


def read_js(selector: str | None) -> str:
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


ROBOTS_JS = """() => ({
  status: (performance.getEntriesByType('navigation')[0] || {}).responseStatus || null,
  contentType: document.contentType || null,
  text: document.body ? document.body.innerText : '',
})"""
