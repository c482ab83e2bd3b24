"""Browser crashes during a harvest, hooked into the Playwright reader's visits
(``readers/playwright/reader.py``).

A crashed or killed Chromium shows up as the Playwright browser's ``disconnected`` event and as errors such as
"Target page, context or browser has been closed" on every page in flight; a crashed renderer as the page's
``crash`` event ("Navigation failed because page crashed!"). :class:`BrowserWatch` tells them apart and
recovers:

- browser gone: relaunch it (:meth:`BrowserSession.relaunch`: same launch arguments, allowlist routing, SSRF
  guard, a new HAR file), at most :data:`MAX_RELAUNCHES` times per harvest; the pages in flight are tried once
  more in the new browser. One more crash after that, or a browser attached over ``--browser-url`` going away,
  stops the harvest with :class:`BrowserCrashed` (what was stored stays stored);
- renderer gone (the browser lives on): the page is replaced and tried once more.

Each crashed attempt stays in the event's ``attempts`` with reason :data:`BROWSER_CRASHED` or
:data:`PAGE_CRASHED` (the Playwright message in ``error``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any, Literal

from ..errors import BrowserCrashed, BrowserNotFound, HarvestError, TargetClosed, error_kind, first_line

if TYPE_CHECKING:
    from .readers.playwright.browser import BrowserSession

__all__ = ["BROWSER_CRASHED", "MAX_RELAUNCHES", "PAGE_CRASHED", "BrowserWatch", "CrashKind", "crashed_attempt"]

logger = logging.getLogger(__name__)

#: Relaunches of a crashed browser per harvest; one more crash stops the harvest.
MAX_RELAUNCHES = 3
#: The reason of an attempt cut short by a browser crash (and of an event that could not be retried).
BROWSER_CRASHED = "browser crashed"
#: The reason of an attempt cut short by a crashed renderer (the browser itself lived on).
PAGE_CRASHED = "page crashed"
#: How long a "target closed" error waits for the browser's disconnected event that may trail it.
_DISCONNECT_GRACE_S = 2.0

CrashKind = Literal["browser", "page"]


class BrowserWatch:
    """Crash bookkeeping of one harvest's :class:`BrowserSession`. ``generation`` counts the browsers: a visit
    notes it before it starts, and a failure in an older generation is a failure of a crashed browser."""

    def __init__(self, session: BrowserSession) -> None:
        self.session = session
        self.generation = 0
        self.fatal: BrowserCrashed | None = None  # set once the harvest cannot go on
        self._lock = asyncio.Lock()
        self._down: asyncio.Event = asyncio.Event()
        if session.started:
            self._watch()

    def started(self) -> None:
        """The session's first browser started (a lazy start, ``BrowserSession.start``): watch it."""
        self._watch()

    @property
    def relaunches(self) -> int:
        return self.session.relaunches

    def _watch(self) -> None:
        down = self._down = asyncio.Event()
        generation = self.generation

        def on_disconnected(_browser: Any) -> None:
            down.set()
            logger.info("the browser disconnected (browser %d of this harvest)", generation + 1)

        assert self.session.browser is not None
        self.session.browser.on("disconnected", on_disconnected)

    def alive(self, generation: int) -> bool:
        """True while the browser of ``generation`` is the current one and still connected."""
        return generation == self.generation and not self._down.is_set() and self.session.connected()

    async def classify(
        self, generation: int, event: Any, error: BaseException | None, page_crashed: bool
    ) -> CrashKind | None:
        """Why the attempt begun in ``generation`` failed: "browser" (the browser crashed or was replaced
        meanwhile), "page" (its renderer crashed) or None (not a crash: the event stands as it is)."""
        failed = error is not None or (event.outcome == "failed" and not str(event.reason or "").startswith("HTTP "))
        if not failed or not self.session.started:  # no browser ever ran: nothing could crash
            return None
        if not self.alive(generation):
            return "browser"
        text = f"{type(error).__name__}: {error}" if error is not None else str(event.reason or "")
        if page_crashed or issubclass(error_kind(text), TargetClosed):  # a crashed page is a closed target too
            # The page's error may arrive a moment before the browser's disconnected event.
            if generation == self.generation:
                try:
                    await asyncio.wait_for(self._down.wait(), timeout=_DISCONNECT_GRACE_S)
                except asyncio.TimeoutError:
                    pass
            if not self.alive(generation):
                return "browser"
            return "page"
        return None

    async def recover(self, generation: int) -> bool:
        """Make sure a browser newer than ``generation`` runs: relaunch it unless another visit already did.
        False when the harvest cannot go on (``fatal`` says why)."""
        async with self._lock:
            if self.fatal is not None:
                return False
            if generation != self.generation and self.session.connected():
                return True  # relaunched already by another page in flight
            if self.session.attached:
                self.fatal = BrowserCrashed(
                    "the browser attached over --browser-url disconnected; brt does not relaunch a browser it did "
                    "not start: the harvest stopped (pages stored so far are kept)"
                )
            elif self.session.relaunches >= MAX_RELAUNCHES:
                self.fatal = BrowserCrashed(
                    f"the browser crashed again after {self.session.relaunches} relaunches (at most "
                    f"{MAX_RELAUNCHES} per harvest): the harvest stopped (pages stored so far are kept)"
                )
            else:
                try:
                    await self.session.relaunch(BROWSER_CRASHED)
                except (BrowserNotFound, HarvestError) as exc:
                    self.fatal = BrowserCrashed(f"the browser crashed and could not be relaunched: {exc}")
                else:
                    self.generation += 1
                    self._watch()
                    return True
            logger.error("%s", self.fatal)
            return False


def crashed_attempt(event: Any, attempts_before: int, kind: CrashKind, error: BaseException | None) -> None:
    """Mark the attempt the crash cut short in ``event.attempts`` (add one when it never got recorded)."""
    reason = BROWSER_CRASHED if kind == "browser" else PAGE_CRASHED
    if len(event.attempts) > attempts_before:
        entry = event.attempts[-1]
        entry["error"] = entry.get("reason")
        entry["reason"] = reason
        entry["outcome"] = "failed"
        return
    failed_attempt(event, reason, first_line(error) if error is not None else None)


def failed_attempt(event: Any, reason: str, error: str | None) -> None:
    """Record in ``event.attempts`` an attempt that failed before the page answered (no status, no time)."""
    event.attempts.append(
        {
            "attempt": len(event.attempts) + 1,
            "at": round(time.time(), 3),
            "status": None,
            "outcome": "failed",
            "reason": reason,
            "error": error,
            "s": 0.0,
        }
    )

