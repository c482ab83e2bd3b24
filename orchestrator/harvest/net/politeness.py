"""Politeness and retries for the harvest: per-domain concurrency cap and minimum delay, exponential backoff
on 429/503 honouring ``Retry-After`` (capped at 60 s), which retries to make, and robots.txt via Protego
(``Robots``: the rules of each origin, fetched once per harvest by whichever reader asks first).

    polite = Politeness(per_domain=2, min_delay_s=0.0)
    async with polite.slot(host):          # waits for a free slot and for the host's delay
        ...
    polite.observe(host, status, retry_after_header)   # grows the delay on 429/503, resets it on success

The delay of a host never shrinks while its errors continue: each 429/503 doubles it (at least to the
server's Retry-After), and only a response that is not 429/503 resets it to the minimum.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any

from ... import url_safety
from ...errors import NetworkError, error_kind

__all__ = [
    "MAX_BACKOFF_S",
    "MAX_RETRIES",
    "RETRY_STATUSES",
    "ROBOTS_AGENT",
    "Politeness",
    "Robots",
    "RobotsRules",
    "backoff_delay",
    "parse_retry_after",
    "retry_after",
    "retryable",
    "should_retry",
]

#: HTTP statuses worth another try (server trouble, timeouts, rate limits); 403/404 and the rest are final.
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504, 522, 524})
#: Retries after the first attempt (so at most three attempts per URL).
MAX_RETRIES = 2
#: The longest a single backoff waits, whatever Retry-After says.
MAX_BACKOFF_S = 60.0
#: First backoff step (doubled on every further error).
BASE_BACKOFF_S = 0.5
_THROTTLE_STATUSES = (429, 503)
#: The user-agent token whose robots.txt rules brt follows.
ROBOTS_AGENT = "brt"


def should_retry(status: int | None, network_error: bool = False) -> bool:
    """True for the retryable statuses and for network errors (no status at all)."""
    return network_error or (status is not None and status in RETRY_STATUSES)


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date); None if absent/bad."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - (now or datetime.now(timezone.utc))).total_seconds())


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from a response's ``Retry-After`` header (None when absent or unparsable)."""
    for key, value in headers.items():
        if key.lower() == "retry-after":
            return parse_retry_after(value)
    return None


def retryable(event: Any) -> bool:
    """Whether a failed attempt (a ``HarvestEvent``) is worth another: a retryable status, or no status and a
    network error."""
    if event.outcome != "failed":
        return False
    if event.status is not None:
        return should_retry(event.status)
    return error_kind(event.reason) is NetworkError


def backoff_delay(attempt: int, retry_after: float | None = None, *, base: float = BASE_BACKOFF_S) -> float:
    """Wait before retry number ``attempt`` (1, 2, ...): ``base * 2**(attempt-1)``, at least Retry-After,
    at most 60 s."""
    delay = base * (2 ** max(0, attempt - 1))
    if retry_after is not None:
        delay = max(delay, retry_after)
    return min(MAX_BACKOFF_S, delay)


@dataclass
class _Host:
    semaphore: asyncio.Semaphore
    next_start: float = 0.0
    backoff_s: float = 0.0  # grows on 429/503, reset by a good response
    crawl_delay_s: float = 0.0
    errors_in_a_row: int = 0
    delays: list[float] = field(default_factory=list)  # every delay applied (for tests and reports)


class Politeness:
    """Per-host concurrency cap and spacing of request starts."""

    def __init__(self, per_domain: int = 2, min_delay_s: float = 0.0):
        self.per_domain = max(1, int(per_domain))
        self.min_delay_s = max(0.0, float(min_delay_s))
        self._hosts: dict[str, _Host] = {}
        self.active: dict[str, int] = {}
        self.peak_active: dict[str, int] = {}

    def _host(self, host: str) -> _Host:
        key = (host or "").lower()
        if key not in self._hosts:
            self._hosts[key] = _Host(asyncio.Semaphore(self.per_domain))
        return self._hosts[key]

    def delay_for(self, host: str) -> float:
        """Current spacing between request starts on ``host``."""
        h = self._host(host)
        return min(MAX_BACKOFF_S, max(self.min_delay_s, h.crawl_delay_s, h.backoff_s))

    def set_crawl_delay(self, host: str, seconds: float | None) -> None:
        if seconds:
            self._host(host).crawl_delay_s = min(MAX_BACKOFF_S, float(seconds))

    @contextlib.asynccontextmanager
    async def slot(self, host: str) -> AsyncIterator[None]:
        h = self._host(host)
        key = (host or "").lower()
        async with h.semaphore:
            while True:  # the delay may grow while we wait (another request got a 429)
                wait = h.next_start - time.monotonic()
                if wait <= 0:
                    break
                await asyncio.sleep(wait)
            h.next_start = time.monotonic() + self.delay_for(host)
            self.active[key] = self.active.get(key, 0) + 1
            self.peak_active[key] = max(self.peak_active.get(key, 0), self.active[key])
            try:
                yield
            finally:
                self.active[key] -= 1

    def observe(self, host: str, status: int | None, retry_after: float | None = None) -> float:
        """Adapt the host's delay to a response; returns the new delay."""
        h = self._host(host)
        if status in _THROTTLE_STATUSES:
            h.errors_in_a_row += 1
            grown = max(h.backoff_s * 2, BASE_BACKOFF_S, retry_after or 0.0)
            h.backoff_s = min(MAX_BACKOFF_S, max(h.backoff_s, grown))  # never shrinks while errors continue
            h.next_start = max(h.next_start, time.monotonic() + h.backoff_s)
        elif status is not None:
            h.errors_in_a_row = 0
            h.backoff_s = 0.0
        delay = self.delay_for(host)
        h.delays.append(delay)
        return delay


class RobotsRules:
    """A parsed robots.txt (Protego); ``None`` body means no robots.txt (everything allowed)."""

    def __init__(self, body: str | None):
        self._rp = None
        if body is not None:
            from protego import Protego

            self._rp = Protego.parse(body)

    def allowed(self, url: str, agent: str = "brt") -> bool:
        return self._rp is None or bool(self._rp.can_fetch(url, agent))

    def crawl_delay(self, agent: str = "brt") -> float | None:
        if self._rp is None:
            return None
        delay = self._rp.crawl_delay(agent)
        return float(delay) if delay else None


class Robots:
    """The robots.txt rules of each origin a harvest visits, fetched once (``fetch(origin)`` gives the body of
    ``<origin>/robots.txt``, or None when there is none), and the ``Crawl-delay`` they set on ``polite``."""

    def __init__(self, polite: Politeness) -> None:
        self.polite = polite
        self.rules: dict[str, RobotsRules] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def allowed(self, url: str, fetch: Callable[[str], Awaitable[str | None]]) -> bool:
        """Whether robots.txt lets brt fetch ``url`` (its origin's rules fetched on first use)."""
        parts = url_safety.parse(url)  # the browser's reading of the host (WHATWG)
        origin = _origin(url)
        if origin not in self.rules:
            body = await fetch(origin)
            self.rules[origin] = RobotsRules(body)
            host = parts.hostname if parts is not None else ""
            self.polite.set_crawl_delay(host, self.rules[origin].crawl_delay(ROBOTS_AGENT))
        return self.rules[origin].allowed(url, ROBOTS_AGENT)

    async def ensure(self, url: str, fetch: Callable[[str], Awaitable[str | None]]) -> None:
        """Fetch the origin's rules once, even when several tabs start on the origin at once (its Crawl-delay
        must be known before the first request's politeness slot)."""
        origin = _origin(url)
        if origin in self.rules:
            return
        async with self._locks.setdefault(origin, asyncio.Lock()):
            if origin not in self.rules:
                await self.allowed(url, fetch)


def _origin(url: str) -> str:
    """``scheme://host[:port]`` of ``url`` as the browser reads it (WHATWG; no userinfo)."""
    parts = url_safety.parse(url)
    return f"{parts.scheme}://{parts.netloc}" if parts is not None else url
