"""Exceptions raised by the orchestrator, and the one place where the browser's errors are read.

    BrtError                   (derives from memory_store.errors.BrtException, the root of every brt error)
    ├── CharterError           an invalid charter file (names the file and field path); CLI exit 2
    ├── BrowserNotFound        no Chromium/Chrome could be found or launched
    ├── BrowserError           one browser operation failed (translated by ``browser_error``; becomes an event)
    │   ├── BrowserTimeout     the operation timed out
    │   ├── TargetClosed       the page, context or browser closed under the call (a crash, or brt closed it)
    │   │   └── PageCrashed    the tab's renderer crashed
    │   ├── DownloadStarted    the navigation turned into a download
    │   ├── NavigationRefused  brt's own routing refused the request (net::ERR_BLOCKED_BY_CLIENT)
    │   ├── PolicyRefused      the browser's URL policy refused it (chrome-devtools-mcp --allowedUrlPattern)
    │   ├── NetworkError       a network error worth another try (net::ERR_CONNECTION_RESET, ...)
    │   ├── NavigationAborted  the navigation was aborted (net::ERR_ABORTED)
    │   └── RequestFailed      a request failed without a reason (net::ERR_FAILED: e.g. missing from a replay HAR)
    ├── HarvestError           a harvest could not run at all (single pages never raise: they become events)
    │   ├── HarvestBusy        another harvest of the same charter is running
    │   ├── NothingStored      the harvest ran but left the charter with no stored page (``brt demo``; the CLI's
    │   │                      harvest reads ``HarvestReport.nothing_stored`` instead)
    │   ├── BrowserCrashed     the browser crashed more often than brt relaunches it (or an attached one went away)
    │   ├── DiskFull           the disk (or quota) filled up during a harvest: it stopped, what was stored is kept
    │   ├── DevtoolsMcpNotFound  node or the chrome-devtools-mcp package is missing
    │   ├── DevtoolsMcpError   chrome-devtools-mcp answered something brt cannot use
    │   ├── RayUnavailable     a harvest on Ray cannot start: Ray missing (pip install 'brt[ray]') or unreachable
    │   └── RayWorkerLost      a Ray worker process died (its pages are tried on another; raised when none is left)
    ├── PageRefused            a page that may not enter the store (add_page: off the allowlist, no text, ...)
    ├── MemoryDisabled         the charter keeps no store (memory.enabled: false): nothing to search or synthesize
    ├── EvidenceModelError     the evidence scorer's weights are missing, corrupt or fail their recorded sha256
    ├── JobNotFound            no background job of that id in this process (``mcp/jobs.py``)
    ├── PortInUse              the demo site's port is taken (``brt demo`` then serves on a free port)
    └── StarterExists          ``brt charter init`` would overwrite a file (advice ``init_exists``)

memory_store errors (memory_store.errors.MemoryStoreError) pass through unchanged; the CLI and the MCP server map
both families. An error whose way out depends on the shell (a CLI flag, an MCP argument) does not name it: its
``advice`` is one of :data:`ADVICE`, which the CLI (``cli.ADVICE``) and the MCP server (``mcp.guard.ADVICE``) each
word in their own terms. Playwright has few exception types and says what happened in its messages (and Chromium's
``net::ERR_*`` codes); ``error_kind`` reads them here, and nowhere else.
"""

from __future__ import annotations

import re

from memory_store.errors import BrtException

__all__ = [
    "ADVICE",
    "BrowserCrashed",
    "BrowserError",
    "BrowserNotFound",
    "BrowserTimeout",
    "BrtError",
    "CharterError",
    "DevtoolsMcpError",
    "DevtoolsMcpNotFound",
    "DownloadStarted",
    "EvidenceModelError",
    "HarvestBusy",
    "HarvestError",
    "JobNotFound",
    "MemoryDisabled",
    "NavigationAborted",
    "NavigationRefused",
    "NetworkError",
    "NothingStored",
    "PageCrashed",
    "PageRefused",
    "PolicyRefused",
    "PortInUse",
    "RayUnavailable",
    "RayWorkerLost",
    "RequestFailed",
    "StarterExists",
    "TargetClosed",
    "browser_error",
    "error_kind",
    "first_line",
]


#: Ways out of an error that each shell words in its own terms (``BrtError.advice``):
#:   doc_anywhere       outputs.doc leaves the charter's folder (the CLI's flag; MCP's ``out`` argument)
#:   restore_id         a store of the snapshot's id exists (restore under another id)
#:   restore_force      the snapshot fails verification (only the CLI can restore it anyway)
#:   restore_charter    the restored charter's file exists with other content
#:   init_exists        a starter charter's file exists
#:   synthesize_first   a report asked for before any synthesis
#:   harvest_first      a report asked for of a charter with no store
ADVICE = frozenset(
    {"doc_anywhere", "restore_id", "restore_force", "restore_charter", "init_exists", "synthesize_first",
     "harvest_first"}
)


class BrtError(BrtException):
    """Base class of every orchestrator error. ``advice``: one of :data:`ADVICE` (the shells word it), or None."""

    advice: str | None = None

    def __init__(self, *args: object, advice: str | None = None):
        super().__init__(*args)
        if advice is not None:
            if advice not in ADVICE:  # pragma: no cover - programming error
                raise ValueError(f"unknown advice {advice!r}")
            self.advice = advice


class CharterError(BrtError):
    """An invalid charter. ``problems`` lists (field path, message) pairs."""

    def __init__(self, path: str, problems: list[tuple[str, str]], *, advice: str | None = None):
        self.path = path
        self.problems = problems
        lines = [f"{path}: {field}: {msg}" if field else f"{path}: {msg}" for field, msg in problems]
        super().__init__("invalid charter\n" + "\n".join("  " + line for line in lines), advice=advice)


class BrowserNotFound(BrtError):
    pass


class BrowserError(BrtError):
    """One browser operation failed. The message is the first line of the browser's own."""


class BrowserTimeout(BrowserError):
    pass


class TargetClosed(BrowserError):
    pass


class PageCrashed(TargetClosed):
    pass


class DownloadStarted(BrowserError):
    pass


class NavigationRefused(BrowserError):
    pass


class PolicyRefused(BrowserError):
    pass


class NetworkError(BrowserError):
    pass


class NavigationAborted(BrowserError):
    pass


class RequestFailed(BrowserError):
    pass


class HarvestError(BrtError):
    pass


class HarvestBusy(HarvestError):
    pass


class NothingStored(HarvestError):
    """A harvest that left the charter with no stored page (every URL failed, was blocked or skipped); its empty
    store is not kept. The CLI exits with its own code (``cli.EXIT_NOTHING_STORED``)."""


class BrowserCrashed(HarvestError):
    """The browser crashed more often than brt relaunches it (3 times per harvest), or a browser attached over
    ``--browser-url`` went away (never relaunched). Pages stored before stay stored and every attempted URL's
    event is recorded; ``report`` is the harvest's (partial) HarvestReport."""

    def __init__(self, message: str, report: object | None = None):
        super().__init__(message)
        self.report = report


class DevtoolsMcpNotFound(HarvestError):
    """node or the chrome-devtools-mcp package is missing."""


class DevtoolsMcpError(HarvestError):
    """chrome-devtools-mcp answered something brt cannot use."""


class RayUnavailable(HarvestError):
    """A harvest on Ray cannot start: Ray is not installed (``pip install 'brt[ray]'``) or not reachable."""


class RayWorkerLost(HarvestError):
    """A Ray worker (its process, or the node it ran on) is gone."""


class PageRefused(BrtError):
    """A page that may not enter the store (off the allowlist, not http(s), no readable text, bad input)."""


class MemoryDisabled(BrtError):
    """The charter says ``memory.enabled: false``: its harvests keep the pages' text in a snapshot and write no
    store, so there is no store to search, synthesize from, add a page to, clean or show."""


class EvidenceModelError(BrtError):
    """The evidence scorer's weights file is missing, corrupt or does not match its recorded sha256."""


class JobNotFound(BrtError):
    pass


class PortInUse(BrtError):
    """A local port brt was asked to serve on is already in use."""


class StarterExists(BrtError):
    """A starter charter's file exists (``charter_starter.charter_init`` without ``force``)."""


class DiskFull(HarvestError):
    """The disk (or the quota) filled up while a harvest wrote its store, journal or HAR: the run stopped at
    once; pages stored before stay stored. ``report`` is the harvest's (partial) HarvestReport."""

    def __init__(self, message: str, report: object | None = None):
        super().__init__(message)
        self.report = report


def first_line(error: BaseException | str | None) -> str:
    """The first line of an error's message (an exception without one: its type name), or of a text (an empty
    one: "(no output)"): what an event's reason or a log line quotes."""
    if isinstance(error, BaseException):
        text = str(error).strip()
        return text.splitlines()[0] if text else type(error).__name__
    text = (error or "").strip()
    return text.splitlines()[0] if text else "(no output)"


# -- the browser's messages ---------------------------------------------------------------------------------

_CRASH_MARKERS = ("page crashed", "target crashed")
_CLOSED_MARKERS = (
    "has been closed",
    "target closed",
    "browser closed",
    "connection closed",
    "browser has disconnected",
    "targetclosederror",
)
_NETWORK_ERRORS = re.compile(
    r"ERR_(CONNECTION_(REFUSED|RESET|CLOSED|ABORTED|FAILED|TIMED_OUT)|EMPTY_RESPONSE|TIMED_OUT|NETWORK_CHANGED|"
    r"INCOMPLETE_CHUNKED_ENCODING|CONTENT_LENGTH_MISMATCH|SOCKET_NOT_CONNECTED|HTTP2_PROTOCOL_ERROR|"
    r"NETWORK_IO_SUSPENDED|INVALID_CHUNKED_ENCODING)"
)
# What chrome-devtools-mcp's --allowedUrlPattern (Chromium's URL blocklist policy) makes of a refused navigation.
_POLICY_ERRORS = ("ERR_INTERNET_DISCONNECTED", "ERR_BLOCKED_BY_ADMINISTRATOR")


def error_kind(text: str | None) -> type[BrowserError]:
    """The kind of browser error a message stands for: a Playwright error as ``"<type>: <message>"``, a
    request's failure text, chrome-devtools-mcp's output, or an event reason that quotes one of them. Markers
    are tried in this order: renderer crash, closed target, download, brt's refusal, URL policy, network error,
    aborted, failed; ``BrowserError`` itself when none matches."""
    text = text or ""
    lowered = text.lower()
    if any(m in lowered for m in _CRASH_MARKERS):
        return PageCrashed
    if any(m in lowered for m in _CLOSED_MARKERS):
        return TargetClosed
    if "Download is starting" in text:
        return DownloadStarted
    if "ERR_BLOCKED_BY_CLIENT" in text:
        return NavigationRefused
    if any(code in text for code in _POLICY_ERRORS):
        return PolicyRefused
    if _NETWORK_ERRORS.search(text):
        return NetworkError
    if "ERR_ABORTED" in text:
        return NavigationAborted
    if "ERR_FAILED" in text:
        return RequestFailed
    return BrowserError


def browser_error(exc: BaseException) -> BrowserError:
    """``exc`` (a Playwright error, or the asyncio timeout around a browser call) as the BrtError it stands for,
    chained to it. Playwright's TimeoutError is a BrowserTimeout unless its message says the target is gone."""
    if isinstance(exc, BrowserError):
        return exc
    kind = error_kind(f"{type(exc).__name__}: {exc}")
    if kind is BrowserError and type(exc).__name__ == "TimeoutError":
        kind = BrowserTimeout
    err = kind(first_line(exc))
    err.__cause__ = exc
    return err
