"""Every harvest is bounded: pages in the store, URLs attempted, wall time, and the disk.

- ``harvest.max_pages`` is the store's total: pages already in the store count, so running the same harvest
  again does not add another ``max_pages`` (re-storing a page the store holds, as ``--refresh`` does, adds
  nothing). Raise it in the charter to let the store grow.
- ``harvest.max_attempts`` (default ``ATTEMPTS_PER_PAGE`` x ``max_pages``) caps the URLs one run attempts,
  whatever their outcome (stored, skipped, blocked, failed): a farm of text-less pages that each link to
  sixty new ones cannot keep a harvest going. URLs skipped as already stored make no request and are not
  counted.
- ``harvest.max_duration_s`` (default ``DEFAULT_MAX_DURATION_S``) caps one run's wall time, a hard stop: no
  URL is started after it, and the pages still being read then are stopped (their events say so), their
  extraction workers killed; pages handed to the store writer but not yet written are not embedded to their end
  (``writer.Writer.halt``) and fail the same way; then the run ends.
- A full disk (ENOSPC, or a quota) while writing the store, the journal or a HAR stops the run at once:
  what was stored stays stored, and the harvest ends with :class:`~orchestrator.errors.DiskFull`.

    budget = CrawlBudget.for_settings(settings, pages_in_store=mem.count_pages())
    reason = budget.start(url)      # None, or why the URL is not attempted (the run may be over)
    budget.accept(already_stored)   # may this page be stored? (False: max_pages reached)
"""

from __future__ import annotations

import errno
import time
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ATTEMPTS_PER_PAGE",
    "DEFAULT_MAX_DURATION_S",
    "CrawlBudget",
    "is_disk_full",
]

#: Default ``max_attempts`` per page of ``max_pages``.
ATTEMPTS_PER_PAGE = 4
#: Default ``max_duration_s`` of one harvest run (one hour).
DEFAULT_MAX_DURATION_S = 3600.0

_DISK_FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT}
_DISK_FULL_TEXT = ("no space left on device", "os error 28", "enospc", "disk quota exceeded", "os error 122")


def is_disk_full(exc: BaseException | None) -> bool:
    """True when ``exc`` (or an exception it was raised from) says the disk or the quota is full: an OSError
    with ENOSPC/EDQUOT, or a third-party error (LanceDB's Rust I/O, Playwright) whose message says so."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in _DISK_FULL_ERRNOS:
            return True
        text = str(exc).lower()
        if any(marker in text for marker in _DISK_FULL_TEXT):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


@dataclass
class CrawlBudget:
    """What one harvest run may still do. Not thread-safe: used from the harvest's event loop only."""

    max_pages: int
    max_attempts: int
    max_duration_s: float
    pages_in_store: int = 0  # when the run started
    started: float = field(default_factory=time.monotonic)
    attempts: int = 0
    new_pages: int = 0  # pages this run added to the store (or is adding: handed to the writer)
    stop_reason: str | None = None  # set once the run must stop starting URLs

    @classmethod
    def for_settings(cls, settings: Any, *, pages_in_store: int = 0) -> CrawlBudget:
        max_pages = int(settings.max_pages)
        attempts = getattr(settings, "max_attempts", None)
        duration = getattr(settings, "max_duration_s", None)
        return cls(
            max_pages=max_pages,
            max_attempts=int(attempts) if attempts is not None else ATTEMPTS_PER_PAGE * max_pages,
            max_duration_s=float(duration) if duration is not None else DEFAULT_MAX_DURATION_S,
            pages_in_store=int(pages_in_store),
        )

    def begin(self, *, pages_in_store: int) -> None:
        """Start the run's clock, with the number of pages the store holds already."""
        self.pages_in_store = int(pages_in_store)
        self.started = time.monotonic()

    @property
    def pages_full(self) -> bool:
        """True when the store holds (or will hold) ``max_pages`` pages."""
        return self.pages_in_store + self.new_pages >= self.max_pages

    def elapsed_s(self) -> float:
        return time.monotonic() - self.started

    def remaining_s(self) -> float:
        """Seconds left until ``max_duration_s`` (0 when it has passed)."""
        return max(0.0, self.max_duration_s - self.elapsed_s())

    def duration_reason(self) -> str:
        return f"max_duration_s reached ({self.max_duration_s:g} s)"

    def stop(self, reason: str) -> None:
        """End the run: no further URL is started (the first reason is kept)."""
        if self.stop_reason is None:
            self.stop_reason = reason

    def over(self) -> str | None:
        """Why the run must stop starting URLs (attempts, time, disk), or None."""
        if self.stop_reason is None and self.elapsed_s() >= self.max_duration_s:
            self.stop(self.duration_reason())
        if self.stop_reason is None and self.attempts >= self.max_attempts:
            self.stop(f"max_attempts reached ({self.max_attempts} URLs attempted)")
        return self.stop_reason

    def closed(self, *, refresh: bool = False) -> bool:
        """True when no URL of a new crawl level can be worth starting (a refresh may still re-store pages
        the store holds when it is full)."""
        return self.over() is not None or (self.pages_full and not refresh)

    def start(self, *, refresh: bool = False) -> str | None:
        """Count one URL attempt; None when it may start, else why not (and then nothing is counted)."""
        reason = self.over()
        if reason is not None:
            return reason
        if self.pages_full and not refresh:
            return "max_pages reached"
        self.attempts += 1
        return None

    def refund(self) -> None:
        """Give back one attempt that made no request (a URL skipped as already stored)."""
        self.attempts = max(0, self.attempts - 1)

    def accept(self, already_stored: bool) -> bool:
        """May a page go to the store? A page the store holds already replaces itself (always allowed); a new
        page needs room under ``max_pages``."""
        if already_stored:
            return True
        if self.pages_full:
            return False
        self.new_pages += 1
        return True

    def release(self, already_stored: bool) -> None:
        """A page accepted by :meth:`accept` that did not reach the store after all."""
        if not already_stored:
            self.new_pages = max(0, self.new_pages - 1)

    def max_pages_reason(self) -> str:
        return (
            f"max_pages reached (the store holds {self.pages_in_store + self.new_pages} of "
            f"{self.max_pages} pages; raise harvest.max_pages to add more)"
        )
