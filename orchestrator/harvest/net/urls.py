"""URL helpers: canonical form for de-duplication and the allowlist filter for links."""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urljoin, urlsplit, urlunsplit

from ...charter import url_allowed

__all__ = ["canonical_url", "filter_links", "is_http_url"]

_DEFAULT_PORTS = {"http": 80, "https": 443}


def is_http_url(url: str) -> bool:
    """True for absolute http(s) URLs with a host."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme.lower() in _DEFAULT_PORTS and bool(parts.hostname)


def canonical_url(url: str) -> str:
    """``url`` without its fragment, with a lower-case scheme and host, no default port, "/" for an
    empty path and its query parameters sorted: the key that decides whether two URLs are the same page.
    Other URLs (not http(s), unparsable) come back unchanged apart from the fragment."""
    return _normalise(url, sort_query=True)


def request_url(url: str) -> str:
    """The URL to fetch: like :func:`canonical_url` but with the query kept as written, since a server may
    treat reordered parameters as a different resource (and a replay HAR holds the URL as written)."""
    return _normalise(url, sort_query=False)


def _normalise(url: str, *, sort_query: bool) -> str:
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return url.split("#", 1)[0]
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        return urlunsplit((parts.scheme, parts.netloc, parts.path, parts.query, ""))
    host = parts.hostname.lower()
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    userinfo = ""
    if parts.username is not None:
        userinfo = parts.username + (f":{parts.password}" if parts.password is not None else "") + "@"
    netloc = userinfo + host
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        netloc += f":{port}"
    query = _sorted_query(parts.query) if sort_query else parts.query
    return urlunsplit((scheme, netloc, parts.path or "/", query, ""))


def _sorted_query(query: str) -> str:
    """Query parameters sorted (by name, then value; encoding kept as written), empty ones dropped."""
    if not query:
        return ""
    return "&".join(sorted(p for p in query.split("&") if p))


def filter_links(links: Iterable[str], allowed_domains: list[str], *, base: str | None = None) -> list[str]:
    """http(s) links on the allowlist as :func:`request_url` forms, de-duplicated by :func:`canonical_url`,
    in first-seen order.

    Relative links are resolved against ``base`` when given."""
    seen: set[str] = set()
    out: list[str] = []
    for link in links:
        if not link:
            continue
        absolute = urljoin(base, link) if base else link
        if not is_http_url(absolute):
            continue
        key = canonical_url(absolute)
        if key in seen or not url_allowed(key, allowed_domains):
            continue
        seen.add(key)
        out.append(request_url(absolute))
    return out
