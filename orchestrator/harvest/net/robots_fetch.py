"""robots.txt fetched like every document (issue 11): by brt's document fetcher (``fetcher.py``), so its
every redirect hop is checked (allowlist, scheme, internal address) and the connection goes to the address
the SSRF guard checked; never through the browser context's request API (its own DNS lookups, outside the
guard's pinning and outside ``BRT_HOST_RESOLVER_RULES``)."""

from __future__ import annotations

import logging
import time
from typing import Any

__all__ = ["ROBOTS_MAX_BYTES", "fetch_robots"]

logger = logging.getLogger(__name__)

#: Bytes of robots.txt read at most (RFC 9309 asks crawlers to parse at least 500 KiB).
ROBOTS_MAX_BYTES = 512_000
_ROBOTS_TIMEOUT_S = 10.0


async def fetch_robots(fetcher: Any, origin: str, deadline: float) -> str | None:
    """The robots.txt body of ``origin`` (``scheme://host[:port]``), or None when there is none to obey
    (not found, refused, too large, unreachable): then every URL is allowed, as before."""
    until = min(deadline, time.monotonic() + _ROBOTS_TIMEOUT_S)
    result = await fetcher.fetch(origin + "/robots.txt", deadline=until, max_bytes=ROBOTS_MAX_BYTES)
    if result.kind != "ok" or result.status is None or not 200 <= result.status < 300:
        logger.debug("no robots.txt for %s: %s %s", origin, result.kind, result.reason or result.status)
        return None
    return result.body.decode("utf-8", "replace")
