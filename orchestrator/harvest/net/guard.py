"""No reaching inside the network (SSRF guard).

A request's host is refused when any address it resolves to is loopback, private (RFC 1918, fc00::/7),
link-local (169.254.0.0/16 incl. cloud metadata, fe80::/10), unspecified, shared (CGNAT 100.64.0.0/10),
multicast or otherwise reserved, unless that exact host (or IP) is on the charter's allowlist: a charter may
research a local site on purpose by naming it exactly (``127.0.0.1``, ``localhost``, ``intranet.example``);
a suffix match (``example.com`` allowing ``x.example.com``) never opens an internal address.

    classify_ip("10.1.2.3")              -> "private"   (None for a public address)
    guard = NetGuard(allowed_domains)
    await guard.check("http://x/")       -> None (allowed) or the reason it is refused
    NetGuard(allowed_domains, offline=True)   (a replay: IP literals and resolver rules only, no DNS)

DNS answers are cached per host for the whole harvest, and brt connects only to addresses the guard checked:
the document fetcher (``fetcher.py``) and the browser's egress proxy (``proxy.py``) both connect to the cached
answer, so a rebinding resolver cannot swap in an internal address between the check and the connection.
``host_resolver_rules`` takes the same ``MAP host ip`` rules as Chromium's ``--host-resolver-rules`` so a test
can map a made-up name to loopback for both.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket

from ...egress import EgressPolicy
from ...settings import run_settings

__all__ = [
    "NetGuard",
    "classify_ip",
    "is_guard_reason",
    "parse_resolver_rules",
    "resolver_rules_from_env",
]

logger = logging.getLogger(__name__)

#: Environment variable with Chromium-style resolver rules (``MAP evil.test 127.0.0.1, MAP b.test ::1``),
#: given both to Chromium (``--host-resolver-rules``) and to the guard.
RESOLVER_RULES_ENV = "BRT_HOST_RESOLVER_RULES"

#: How the guard's refusals start (``NetGuard.check``): an event blocked for one of these reasons was refused by
#: the SSRF guard, not by the allowlist.
GUARD_PREFIXES = ("internal address", "cannot resolve")

_NAT64 = ipaddress.ip_network("64:ff9b::/96")
#: Ranges judged before Python's own flags (which call link-local and CGNAT addresses "private" or not global).
_SPECIAL = (
    (ipaddress.ip_network("169.254.0.0/16"), "link-local"),
    (ipaddress.ip_network("100.64.0.0/10"), "shared"),
    (ipaddress.ip_network("fe80::/10"), "link-local"),
    (ipaddress.ip_network("fc00::/7"), "private"),
)


def classify_ip(address: str | ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why ``address`` is internal ("loopback", "private", "link-local", "unspecified", "shared",
    "multicast", "reserved"), or None for a public address. IPv4-mapped/compatible IPv6 and 6to4 / NAT64
    forms are judged by the IPv4 address they carry. An unparsable address is "invalid"."""
    try:
        ip = ipaddress.ip_address(str(address).strip("[]").split("%", 1)[0])
    except ValueError:
        return "invalid"
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            return classify_ip(embedded)
    if ip.is_unspecified:
        return "unspecified"
    if ip.is_loopback:
        return "loopback"
    special = next((kind for network, kind in _SPECIAL if ip.version == network.version and ip in network), None)
    if special is not None:
        return special
    if ip.is_multicast:
        return "multicast"
    if ip.is_private:
        return "private"
    if ip.is_reserved or not ip.is_global:
        return "reserved"
    return None


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries: IPv4-mapped, 6to4, NAT64 (64:ff9b::/96) or the deprecated
    IPv4-compatible ``::a.b.c.d``; None for any other."""
    embedded = ip.ipv4_mapped or ip.sixtofour
    if embedded is None and (ip in _NAT64 or (int(ip) >> 32 == 0 and int(ip) > 1)):
        embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return embedded


def parse_resolver_rules(rules: str | None) -> dict[str, str]:
    """``MAP host ip`` entries of a Chromium ``--host-resolver-rules`` value (other rule kinds ignored)."""
    out: dict[str, str] = {}
    for rule in (rules or "").split(","):
        parts = rule.split()
        if len(parts) == 3 and parts[0].upper() == "MAP":
            out[parts[1].lower()] = parts[2].strip("[]")
    return out


def resolver_rules_from_env() -> str | None:
    return run_settings().host_resolver_rules


class NetGuard:
    """Checks every request's host against the internal-address rules, with one DNS answer per host."""

    def __init__(self, allowed_domains: list[str], *, resolver_rules: str | None = None, offline: bool = False):
        self.allowed_domains = list(allowed_domains)
        self._egress = EgressPolicy.of(self.allowed_domains)
        self.rules = parse_resolver_rules(resolver_rules)
        # offline (a replay): IP literals and resolver-rule names are judged, no other name is looked up
        self.offline = offline
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
        if self.offline:
            return []
        self.lookups += 1
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:
            return f"cannot resolve {host}: {exc}"
        return sorted({str(info[4][0]) for info in infos})

    async def check(self, url: str) -> str | None:
        """None when ``url`` may be requested, else why not ("internal address (loopback 127.0.0.1)")."""
        from ...url_safety import parse  # security: the host as the browser reads it (issue 11)

        parsed = parse(url) if isinstance(url, str) else None
        if parsed is None:
            return "unparsable URL"
        host = parsed.hostname
        if not host:
            return None  # not a network request (about:, data: are refused by the allowlist)
        if self._egress.exact(host):
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


def is_guard_reason(reason: str | None) -> bool:
    """Whether ``reason`` is one of the guard's refusals."""
    return bool(reason) and str(reason).startswith(GUARD_PREFIXES)
