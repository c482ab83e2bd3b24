"""``brt browser-mcp``: Chrome DevTools MCP (the npm package ``chrome-devtools-mcp``) for an agent, with its
browser held by brt's egress guard: what the Claude Code plugin registers instead of a bare chrome-devtools-mcp.

An agent drives that browser with its own tool calls (``new_page``, ``navigate_page``, ``evaluate_script``); a
bare one would open any address it is asked for, an internal service included, and hand its page back. So brt
runs its egress proxy (``harvest/net/proxy.py``) in this process and starts chrome-devtools-mcp with every
connection of its Chromium sent through it (``--proxyServer``, loopback not bypassed, WebRTC kept off UDP),
brt's launch flags (no background traffic to Google), and chrome-devtools-mcp's own calls out turned off (usage
statistics, CrUX), as are ``file:`` navigations. The MCP protocol passes straight through (the child inherits
this process's standard input and output); the proxy lives as long as the child.

What the proxy admits: with a charter, its ``allowed_domains`` and the SSRF guard (exactly as a harvest);
without one, any http(s) host whose every address is public (the guard with an empty allowlist: loopback,
private, link-local and the other internal ranges are refused, whatever name points there).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Callable

__all__ = ["GUARDED_FLAGS", "devtools_arguments", "serve_browser_mcp"]

logger = logging.getLogger(__name__)

#: chrome-devtools-mcp's own options that keep the Node process and its browser from reaching anything else:
#: no usage statistics or CrUX calls to Google, no ``file:`` navigations, a temporary profile, no window.
GUARDED_FLAGS = ["--headless", "--isolated", "--no-usage-statistics", "--no-performance-crux",
                 "--no-file-navigations"]


def devtools_arguments(proxy_url: str, executable: str) -> list[str]:
    """chrome-devtools-mcp's arguments for a browser whose every connection goes through ``proxy_url``."""
    from .harvest import launch

    chrome = [*launch.LAUNCH_ARGS, *(f for f in launch.egress_args(proxy_url) if not f.startswith("--proxy-server"))]
    return [*GUARDED_FLAGS, "--executablePath", executable, "--proxyServer", proxy_url,
            *(f"--chromeArg={flag}" for flag in chrome)]


async def serve_browser_mcp(allowed_domains: list[str] | None = None, *, command: list[str] | None = None,
                            executable: str | None = None) -> int:
    """Run chrome-devtools-mcp on this process's standard input and output, its browser behind brt's egress
    proxy; returns its exit status. ``allowed_domains``: a charter's (None: any public host)."""
    from .egress import EgressPolicy
    from .harvest import launch
    from .harvest.net.guard import NetGuard
    from .harvest.net.proxy import EgressProxy, GuardPolicy
    from .harvest.readers.devtools_mcp.client import find_devtools_mcp

    egress = EgressPolicy.for_run(allowed_domains)  # None: any public http(s) host
    guard = NetGuard(egress.exact_hosts, resolver_rules=egress.resolver_rules)
    argv = command or find_devtools_mcp()
    browser = executable or launch.find_browser()
    env = dict(os.environ, CHROME_DEVTOOLS_MCP_NO_USAGE_STATISTICS="1")
    async with EgressProxy(GuardPolicy(egress.permits, guard)) as proxy:
        proc = await asyncio.create_subprocess_exec(*argv, *devtools_arguments(proxy.url, browser), env=env)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, _forward(proc, sig))
        trim = asyncio.create_task(_trim_refusals(proxy.refused))  # each refusal is logged as it happens
        try:
            code = await proc.wait()
        finally:
            trim.cancel()
            if proc.returncode is None:
                proc.terminate()
                await proc.wait()
    return int(code)


async def _trim_refusals(refused: list[object], keep: int = 1000) -> None:
    """A session may run for hours: the proxy's list of refusals keeps only the last ``keep``."""
    while True:
        await asyncio.sleep(30)
        del refused[:-keep]


def _forward(proc: asyncio.subprocess.Process, sig: int) -> Callable[[], None]:
    def send() -> None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(sig)

    return send
