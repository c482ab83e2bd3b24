"""The allowlist and the policy object that carries it (docs/security-egress.md, "One policy").

Semantics (docs/contracts.md, "Charter"): a URL is allowed when it is http(s), carries no userinfo and its host,
as a browser parses it (WHATWG, ``url_safety.py``), is on ``allowed_domains``: a domain allows itself and its
subdomains ("web.dev" allows "web.dev" and "x.web.dev", never "notweb.dev"); an IP address or "localhost"
allows that exact host only. The SSRF guard lets an internal address through only for a host listed exactly
(:func:`exact_allowed`)."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["EgressPolicy", "exact_allowed", "host_allowed", "parse_allowlist", "url_allowed", "url_patterns"]

_DOMAIN_RE = re.compile(
    r"^(?=.{1,253}\Z)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*\Z"
)


def parse_allowlist(value: Iterable[str]) -> list[str]:
    """A charter's ``allowed_domains`` as matched: each a bare host name or IP address, lower-cased, its final
    dot and IPv6 brackets dropped. A URL, a path or an invalid name raises ``ValueError`` naming the item."""
    cleaned = []
    for i, domain in enumerate(value):
        d = domain.strip().lower().rstrip(".")
        if "://" in d or "/" in d or not d:
            raise ValueError(
                f"item {i} ({domain!r}) must be a bare host name such as 'web.dev', not a URL"
            )
        if not (_is_exact_only(d) or _DOMAIN_RE.match(d)):
            raise ValueError(f"item {i} ({domain!r}) is not a valid host name or IP address")
        cleaned.append(d.strip("[]"))
    return cleaned


def host_allowed(host: str | None, allowed_domains: Iterable[str]) -> bool:
    """Host-suffix match: "web.dev" allows "web.dev" and "x.web.dev", never "notweb.dev"; an IP address or
    "localhost" allows that exact host only."""
    if not host:
        return False
    host = host.lower().rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    for domain in allowed_domains:
        if host == domain:
            return True
        if _is_exact_only(domain):
            continue
        if host.endswith("." + domain):
            return True
    return False


def _is_exact_only(domain: str) -> bool:
    if domain == "localhost":
        return True
    try:
        ipaddress.ip_address(domain.strip("[]"))
        return True
    except ValueError:
        return False


def url_allowed(url: str, allowed_domains: Iterable[str]) -> bool:
    """True when ``url`` is http(s), carries no userinfo and its host, as a browser parses it (WHATWG,
    ``url_safety.py``), is on the allowlist."""
    from ..url_safety import web_url  # security: one URL parser and one scheme rule for checks and browser

    parsed = web_url(url) if isinstance(url, str) else None
    return parsed is not None and host_allowed(parsed.host, allowed_domains)


def exact_allowed(host: str, allowed_domains: Iterable[str]) -> bool:
    """True when ``host`` itself (not a parent domain) is on the allowlist."""
    h = host.lower().rstrip(".").strip("[]")
    return any(h == d.lower().rstrip(".").strip("[]") for d in allowed_domains)


def url_patterns(allowed_domains: Iterable[str]) -> list[str]:
    """URLPattern strings for chrome-devtools-mcp's ``--allowedUrlPattern``: http(s), any port, the host
    itself and (for a domain, not an IP or ``localhost``) its subdomains."""
    patterns: list[str] = []
    for domain in allowed_domains:
        host = domain.strip().lower().rstrip(".")
        if not host or ":" in host:  # IPv6 literals: left to the final-URL check
            continue
        hosts = [host]
        if not _is_exact_only(host):
            hosts.append("*." + host)
        for scheme in ("http", "https"):
            patterns.extend(f"{scheme}://{h}:*/*" for h in hosts)
    return patterns


@dataclass(frozen=True)
class EgressPolicy:
    """Where brt may connect: a charter's allowlist (``domains``; None: any public http(s) host, as
    ``brt browser-mcp`` without a charter), and the resolver rules of the settings
    (``BRT_HOST_RESOLVER_RULES``) that the SSRF guard and the browser share."""

    domains: tuple[str, ...] | None
    resolver_rules: str | None = None

    @classmethod
    def of(cls, allowed_domains: Iterable[str] | None, *, resolver_rules: str | None = None) -> EgressPolicy:
        """The policy of an allowlist (a charter's ``allowed_domains``; None: any public host)."""
        return cls(None if allowed_domains is None else tuple(allowed_domains), resolver_rules)

    @classmethod
    def for_run(cls, allowed_domains: Iterable[str] | None) -> EgressPolicy:
        """The policy of a run: the allowlist and the resolver rules of the settings, built once."""
        from ..settings import run_settings

        return cls.of(allowed_domains, resolver_rules=run_settings().host_resolver_rules)

    @property
    def exact_hosts(self) -> list[str]:
        """The allowlist as the SSRF guard reads it: hosts that may be internal addresses (none without one)."""
        return list(self.domains or ())

    def permits(self, url: str) -> bool:
        """Whether brt (its browser, its fetcher, a link it follows, a cited URL) may go to ``url``."""
        if self.domains is None:
            from ..url_safety import web_url

            return isinstance(url, str) and web_url(url) is not None
        return url_allowed(url, self.domains)

    def permits_host(self, host: str | None) -> bool:
        """Whether ``host`` is on the allowlist (a cheap first test before a URL's canonical form is made)."""
        return bool(host) if self.domains is None else host_allowed(host, self.domains)

    @staticmethod
    def parse_domains(value: Iterable[str]) -> list[str]:
        """A charter's ``allowed_domains`` validated and normalised (:func:`parse_allowlist`)."""
        return parse_allowlist(value)

    def devtools_patterns(self) -> list[str]:
        """The allowlist as chrome-devtools-mcp's ``--allowedUrlPattern`` values (none without one)."""
        return url_patterns(self.domains or ())

    def exact(self, host: str) -> bool:
        """Whether ``host`` itself is listed (the SSRF guard admits an internal address only for such a host)."""
        return self.domains is not None and exact_allowed(host, self.domains)
