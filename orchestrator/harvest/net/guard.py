"""No reaching inside the network (SSRF guard).

A request's host is refused when any address it resolves to is loopback, private (RFC 1918, fc00::/7),
link-local (169.254.0.0/16 incl. cloud metadata, fe80::/10), unspecified, shared (CGNAT 100.64.0.0/10),
multicast or otherwise reserved, unless that exact host (or IP) is on the charter's allowlist: a charter may
research a local site on purpose by naming it exactly (``127.0.0.1``, ``localhost``, ``intranet.example``);
a suffix match (``example.com`` allowing ``x.example.com``) never opens an internal address.

    classify_ip("10.1.2.3")              -> "private"   (None for a public address)
    guard = NetGuard(allowed_domains)
    await guard.check("http://x/")       -> None (allowed) or the reason it is refused

DNS answers are cached per host for the whole harvest, so the browser and the guard see one answer per host
as long as the OS resolver agrees (see README, "Harvest hardening", for what DNS rebinding can still do).
``host_resolver_rules`` takes the same ``MAP host ip`` rules as Chromium's ``--host-resolver-rules`` so a test
can map a made-up name to loopback for both.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
import socket
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

__all__ = ["NetGuard", "classify_ip", "exact_allowed", "parse_resolver_rules", "resolver_rules_from_env"]

logger = logging.getLogger(__name__)

#: Environment variable with Chromium-style resolver rules (``MAP evil.test 127.0.0.1, MAP b.test ::1``),
#: given both to Chromium (``--host-resolver-rules``) and to the guard.
RESOLVER_RULES_ENV = "BRT_HOST_RESOLVER_RULES"

_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_V6_ULA = ipaddress.ip_network("fc00::/7")
_V6_LINK_LOCAL = ipaddress.ip_network("fe80::/10")


def classify_ip(address: str | ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why ``address`` is internal ("loopback", "private", "link-local", "unspecified", "shared",
    "multicast", "reserved"), or None for a public address. IPv4-mapped/compatible IPv6 and 6to4 / NAT64
    forms are judged by the IPv4 address they carry. An unparsable address is "invalid"."""
    try:
        ip = ipaddress.ip_address(str(address).strip("[]").split("%", 1)[0])
    except ValueError:
        return "invalid"
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour
        if embedded is None and ip in ipaddress.ip_network("64:ff9b::/96"):
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is None and int(ip) >> 32 == 0 and int(ip) > 1:  # deprecated IPv4-compatible ::a.b.c.d
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None:
            return classify_ip(embedded)
    if ip.is_unspecified:
        return "unspecified"
    if ip.is_loopback:
        return "loopback"
    if isinstance(ip, ipaddress.IPv4Address):
        if ip.is_link_local:
            return "link-local"
        if ip in _CGNAT:
            return "shared"
    else:
        if ip in _V6_LINK_LOCAL:
            return "link-local"
        if ip in _V6_ULA:
            return "private"
    if ip.is_multicast:
        return "multicast"
    if ip.is_private:
        return "private"
    if ip.is_reserved or not ip.is_global:
        return "reserved"
    return None


def exact_allowed(host: str, allowed_domains: list[str]) -> bool:
    """True when ``host`` itself (not a parent domain) is on the allowlist."""
    h = host.lower().rstrip(".").strip("[]")
    return any(h == d.lower().rstrip(".").strip("[]") for d in allowed_domains)


def parse_resolver_rules(rules: str | None) -> dict[str, str]:
    """``MAP host ip`` entries of a Chromium ``--host-resolver-rules`` value (other rule kinds ignored)."""
    out: dict[str, str] = {}
    for rule in (rules or "").split(","):
        parts = rule.split()
        if len(parts) == 3 and parts[0].upper() == "MAP":
            out[parts[1].lower()] = parts[2].strip("[]")
    return out


def resolver_rules_from_env() -> str | None:
    return os.environ.get(RESOLVER_RULES_ENV) or None


class NetGuard:
    """Checks every request's host against the internal-address rules, with one DNS answer per host."""

    def __init__(self, allowed_domains: list[str], *, resolver_rules: str | None = None):
        self.allowed_domains = list(allowed_domains)
        self.rules = parse_resolver_rules(resolver_rules)
        self._answers: dict[str, list[str] | str] = {}  # host -> addresses, or the resolution error
        self._locks: dict[str, asyncio.Lock] = {}
        self.lookups = 0  # DNS queries actually made (the rest came from the cache)

    async def resolve(self, host: str) -> list[str]:
        """Addresses of ``host`` (cached; raises OSError when it does not resolve)."""
        host = host.lower().rstrip(".")
        if host not in self._answers:
            lock = self._locks.setdefault(host, asyncio.Lock())
            async with lock:
                if host not in self._answers:
                    self._answers[host] = await self._lookup(host)
        answer = self._answers[host]
        if isinstance(answer, str):
            raise OSError(answer)
        return answer

    async def _lookup(self, host: str) -> list[str] | str:
        literal = host.strip("[]")
        try:
            ipaddress.ip_address(literal)
            return [literal]
        except ValueError:
            pass
        if host in self.rules:
            return [self.rules[host]]
        self.lookups += 1
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:
            return f"cannot resolve {host}: {exc}"
        return sorted({str(info[4][0]) for info in infos})

    async def check(self, url: str) -> str | None:
        """None when ``url`` may be requested, else why not ("internal address (loopback 127.0.0.1)")."""
        try:
            host = urlsplit(url).hostname
        except ValueError:
            return "unparsable URL"
        if not host:
            return None  # not a network request (about:, data: are refused by the allowlist)
        if exact_allowed(host, self.allowed_domains):
            return None
        try:
            addresses = await self.resolve(host)
        except OSError as exc:
            return str(exc)
        for address in addresses:
            kind = classify_ip(address)
            if kind is not None:
                return f"internal address ({kind} {address}) not on allowed_domains as an exact host"
        return None


# Playwright abort codes for the fetcher's network errors (the browser then reports the same net::ERR_*).
_ABORT_CODES = {
    "ERR_CONNECTION_REFUSED": "connectionrefused",
    "ERR_CONNECTION_RESET": "connectionreset",
    "ERR_CONNECTION_CLOSED": "connectionclosed",
    "ERR_EMPTY_RESPONSE": "connectionclosed",
    "ERR_NAME_NOT_RESOLVED": "namenotresolved",
    "ERR_CONNECTION_FAILED": "connectionfailed",
}


async def route_navigation(
    route: Any,
    fetcher: Any,
    block: Callable[[str, str], None],
    har_entries: list[dict[str, Any]] | None,
    *,
    deadline: float,
    partial_ok_after: float | None,
) -> Any:
    """Answer a navigation request with a document brt fetched itself (``fetcher.DocumentFetcher``).

    Redirects are not shown to Playwright's route handlers (the browser follows them itself), so the fetcher
    follows them hop by hop and checks every target (allowlist, scheme, internal address) before anything is
    sent to it. A chain that passes ends in a single redirect to its final URL, which the browser then asks
    for (answered from the fetched result, not fetched twice); a target that fails is aborted and reported
    with ``block(url, reason)``. A body past the byte cap is aborted; one still arriving at
    ``partial_ok_after`` is handed over as it stands. Returns the ``FetchResult``."""
    request = route.request
    url = request.url
    result = fetcher.take(url)
    if result is None:
        try:
            headers = await request.all_headers()
        except Exception:  # noqa: BLE001 - the request's frame went away
            headers = dict(request.headers)
        result = await fetcher.fetch(
            url,
            deadline=deadline,
            method=request.method,
            headers=headers,
            body=request.post_data_buffer,
            partial_ok_after=partial_ok_after,
        )
    if result.kind == "blocked":
        logger.info("blocked navigation to %s (%s)", result.url, result.reason)
        block(result.url, result.reason or "blocked")
        if har_entries is not None and len(result.hops) >= 1 and result.status is not None:
            har_entries.append(_har_entry(request.method, result.hops[-1], result, result.url))
        await _safe(route.abort("blockedbyclient"))
        return result
    if result.kind in ("ok", "partial"):
        if len(result.hops) > 1 and result.hops[-1] != url:
            # every hop was checked: send the browser straight to the final URL (one redirect it follows
            # itself), and keep the final response for that request
            fetcher.stash(result.hops[-1], result)
            await _safe(route.fulfill(status=302, headers={"location": result.hops[-1]}, body=""))
            return result
        from .downloads import fulfill_navigation

        await _safe(fulfill_navigation(route, result.status or 200, _header_dict(result.headers), result.body))
        return result
    if result.kind == "too large":
        logger.info("%s: %s", url, result.reason)
        await _safe(route.abort("blockedbyresponse"))
        return result
    if result.kind == "timeout":
        logger.info("%s: %s", url, result.reason)
        await _safe(route.abort("timedout"))
        return result
    code = next((c for marker, c in _ABORT_CODES.items() if marker in (result.reason or "")), "failed")
    logger.info("navigation to %s failed: %s", url, result.reason)
    await _safe(route.abort(code))
    return result


def _header_dict(headers: list[tuple[str, str]]) -> dict[str, str]:
    """Response headers for ``route.fulfill``: repeated Set-Cookie lines joined by newlines (how Playwright
    splits them back), other repeated headers by commas."""
    out: dict[str, str] = {}
    for name, value in headers:
        key = name.lower()
        if key in out:
            out[key] += ("\n" if key == "set-cookie" else ", ") + value
        else:
            out[key] = value
    return out


async def _safe(awaitable: Any) -> None:
    from playwright.async_api import Error as PlaywrightError

    try:
        await awaitable
    except PlaywrightError as exc:  # the page went away meanwhile (timeout, closed)
        logger.debug("route already handled: %s", exc)


def _har_entry(method: str, url: str, response: Any, target: str) -> dict[str, Any]:
    """Keep the refused redirect for the HAR (the browser never saw it, so Playwright does not record it): a
    replay of the HAR then meets the same redirect and refuses it the same way."""
    from datetime import datetime, timezone

    return {
        "startedDateTime": datetime.now(timezone.utc).isoformat(),
        "time": 0,
        "request": {
            "method": method,
            "url": url,
            "httpVersion": "HTTP/1.1",
            "cookies": [],
            "headers": [],
            "queryString": [],
            "headersSize": -1,
            "bodySize": 0,
        },
        "response": {
            "status": response.status,
            "statusText": response.status_text or "",
            "httpVersion": "HTTP/1.1",
            "cookies": [],
            "headers": [{"name": k, "value": v} for k, v in response.headers],
            "content": {"size": 0, "mimeType": response.header("content-type") or "text/html", "text": ""},
            "redirectURL": target,
            "headersSize": -1,
            "bodySize": 0,
        },
        "cache": {},
        "timings": {"send": 0, "wait": 0, "receive": 0},
    }


def add_har_entries(har_path: Any, entries: list[dict[str, Any]]) -> None:
    """Add ``entries`` to the HAR file (replacing recorded entries of the same URL that have no response)."""
    import json
    from pathlib import Path

    if not entries:
        return
    path = Path(har_path)
    try:
        har = json.loads(path.read_text(encoding="utf-8"))
        log = har["log"]
    except (OSError, ValueError, KeyError) as exc:
        logger.warning("cannot add refused redirects to %s: %s", path, exc)
        return
    urls = {e["request"]["url"] for e in entries}
    kept = [
        e
        for e in log.get("entries", [])
        if not (e.get("request", {}).get("url") in urls and int(e.get("response", {}).get("status") or 0) <= 0)
    ]
    log["entries"] = kept + entries
    tmp = path.with_suffix(".har.tmp")
    tmp.write_text(json.dumps(har), encoding="utf-8")
    tmp.replace(path)
