"""Exceptions raised by the orchestrator.

    BrtError
    ├── CharterError         an invalid charter file (names the file and field path); CLI exit 2
    ├── BrowserNotFound      no Chromium/Chrome could be found or launched
    ├── HarvestError         a harvest could not run at all (single pages never raise: they become events)
    │   ├── BrowserCrashed   the browser crashed more often than brt relaunches it (or an attached one went away)
    │   └── DiskFull         the disk (or quota) filled up during a harvest: it stopped, what was stored is kept
    ├── HarvestBusy          another harvest of the same charter is running
    └── PortInUse            the demo site's port is taken (``brt demo`` then serves on a free port)

memory_store errors (memory_store.errors.MemoryStoreError) pass through unchanged; the CLI maps both families.
"""

from __future__ import annotations


class BrtError(Exception):
    """Base class of every orchestrator error."""


class CharterError(BrtError):
    """An invalid charter. ``problems`` lists (field path, message) pairs."""

    def __init__(self, path: str, problems: list[tuple[str, str]]):
        self.path = path
        self.problems = problems
        lines = [f"{path}: {field}: {msg}" if field else f"{path}: {msg}" for field, msg in problems]
        super().__init__("invalid charter\n" + "\n".join("  " + line for line in lines))


class BrowserNotFound(BrtError):
    pass


class HarvestError(BrtError):
    pass


class HarvestBusy(HarvestError):
    pass


class BrowserCrashed(HarvestError):
    """The browser crashed more often than brt relaunches it (3 times per harvest), or a browser attached over
    ``--browser-url`` went away (never relaunched). Pages stored before stay stored and every attempted URL's
    event is recorded; ``report`` is the harvest's (partial) HarvestReport."""

    def __init__(self, message: str, report: object | None = None):
        super().__init__(message)
        self.report = report


class PortInUse(BrtError):
    """A local port brt was asked to serve on is already in use."""


class DiskFull(HarvestError):
    """The disk (or the quota) filled up while a harvest wrote its store, journal or HAR: the run stopped at
    once; pages stored before stay stored. ``report`` is the harvest's (partial) HarvestReport."""

    def __init__(self, message: str, report: object | None = None):
        super().__init__(message)
        self.report = report
