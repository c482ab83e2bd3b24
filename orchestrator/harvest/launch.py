"""Finding the browser: ``$BRT_BROWSER``, Playwright's managed Chromium, or a Chromium/Chrome on ``PATH``, and the
launch flags that keep it from talking to anything but the pages brt asks for. Both readers launch with these."""

from __future__ import annotations

import functools
import logging
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from ..errors import BrowserNotFound
from ..settings import run_settings

__all__ = [
    "LAUNCH_ARGS",
    "egress_args",
    "existing_file",
    "find_browser",
    "find_browser_with",
    "headless_user_agent",
]

logger = logging.getLogger(__name__)

#: Where Chromium's own Google services are sent instead of Google: port 1 is on Chromium's restricted-port
#: list, so such a request fails (ERR_UNSAFE_PORT) before any DNS lookup or connection.
_NOWHERE = "http://127.0.0.1:1/"

#: Flags that keep Chromium from talking to anything but the pages we ask for (docs/contracts.md, "Guardrails").
#: The last ones: even with --disable-component-update, Chromium's update client asks
#: update.googleapis.com at every launch, and the sign-in code asks accounts.google.com (ListAccounts); they
#: are pointed at _NOWHERE (the security tests read Chromium's net log: no other host is looked up).
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    f"--component-updater=url-source={_NOWHERE}",
    f"--gaia-url={_NOWHERE}",
    f"--google-apis-url={_NOWHERE}",
    f"--lso-url={_NOWHERE}",
    f"--variations-server-url={_NOWHERE}",
    "--no-pings",
    "--disable-domain-reliability",
]



def egress_args(proxy_url: str) -> list[str]:
    """The flags that send every connection of the browser through brt's egress proxy (``net/proxy.py``):
    ``--proxy-server``; ``--proxy-bypass-list=<-loopback>``, without which Chromium connects to loopback
    hosts (127.0.0.0/8, localhost, [::1]) directly; and WebRTC kept off UDP that does not go through the
    proxy (STUN, TURN over UDP): its TCP candidates (TURN over TCP) go through the proxy like the rest."""
    return [
        f"--proxy-server={proxy_url}",
        "--proxy-bypass-list=<-loopback>",
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
        "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    ]


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
    return find_browser_with(_playwright_chromium)


def find_browser_with(managed: Callable[[], str | None]) -> str:
    env = run_settings().browser
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


def existing_file(path: str | None) -> str | None:
    return path if path and Path(path).is_file() else None


def _playwright_chromium() -> str | None:
    """The path of Playwright's managed Chromium when it is installed."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:  # pragma: no cover - playwright is a dependency
        return None
    try:
        with sync_playwright() as p:
            return existing_file(p.chromium.executable_path)
    except Exception as exc:  # the driver may fail to start (or we run inside a loop); PATH still works
        logger.debug("cannot ask Playwright for its Chromium: %s", exc)
        return None


#: The platform part of Chromium's reduced User-Agent (the same on every machine of one operating system).
_UA_PLATFORM = {
    "linux": "X11; Linux x86_64",
    "darwin": "Macintosh; Intel Mac OS X 10_15_7",
    "win32": "Windows NT 10.0; Win64; x64",
}
_VERSION_RE = re.compile(r"(\d+)\.\d+\.\d+\.\d+")


def headless_user_agent(executable: str) -> str | None:
    """The User-Agent headless ``executable`` sends (Chromium's reduced form: major version only), from its
    ``--version``, without launching a browser: what brt's own document fetches send before the browser has
    started (``harvest.render: auto`` may never start it). None when the binary does not say its version."""
    try:
        stat = os.stat(executable)
    except OSError:
        return None
    return _user_agent_of(executable, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=8)
def _user_agent_of(executable: str, _mtime_ns: int, _size: int) -> str | None:
    """``headless_user_agent`` once per binary (its path, modification time and size)."""
    try:
        out = subprocess.run(  # noqa: S603 - the browser brt was told to use
            [executable, "--version"], capture_output=True, text=True, timeout=15, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        logger.debug("cannot ask %s for its version: %s", executable, exc)
        return None
    match = _VERSION_RE.search(out or "")
    platform = next((v for k, v in _UA_PLATFORM.items() if sys.platform.startswith(k)), None)
    if match is None or platform is None:
        return None
    return (
        f"Mozilla/5.0 ({platform}) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/{match.group(1)}.0.0.0 "
        "Safari/537.36"
    )
