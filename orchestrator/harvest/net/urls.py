"""URL helpers: canonical form for de-duplication and the allowlist filter for links.

Every URL is parsed the WHATWG way, as the browser parses it (``orchestrator/url_safety.py``): the forms
returned here are WHATWG serialisations, so what is checked is what the browser will request."""

from __future__ import annotations

from collections.abc import Iterable

from ... import url_safety
from ...egress import EgressPolicy

__all__ = ["MAX_ANCHORS", "canonical_url", "filter_links", "is_http_url", "links_in", "request_url"]

#: Links read from one page at most (in document order); the crawl keeps fewer still (``crawl.MAX_LINKS``).
MAX_ANCHORS = 10_000

def is_http_url(url: str) -> bool:
    """True for absolute http(s) URLs with a host (``url_safety.WEB_SCHEMES``; userinfo is judged apart)."""
    parsed = url_safety.parse(url.strip()) if isinstance(url, str) else None
    return parsed is not None and parsed.scheme in url_safety.WEB_SCHEMES and bool(parsed.host)


def canonical_url(url: str) -> str:
    """``url`` without its fragment, in its WHATWG form (lower-case scheme and host, no default port, "/" for
    an empty path, dot segments resolved) and with its query parameters sorted: the key that decides whether
    two URLs are the same page. Other URLs (not http(s), unparsable) come back unchanged apart from the
    fragment."""
    return _normalise(url, sort_query=True)


def request_url(url: str) -> str:
    """The URL to fetch: like :func:`canonical_url` but with the query kept as written, since a server may
    treat reordered parameters as a different resource (and a replay HAR holds the URL as written)."""
    return _normalise(url, sort_query=False)


def _normalise(url: str, *, sort_query: bool) -> str:
    parsed = url_safety.parse(url.strip()) if isinstance(url, str) else None
    if parsed is None:
        return url.split("#", 1)[0]
    if parsed.scheme not in url_safety.WEB_SCHEMES or not parsed.host:
        return parsed.without_fragment()
    base = parsed.without_fragment()
    if not sort_query or not parsed.query:
        return base
    query = _sorted_query(parsed.query[1:])
    return base[: len(base) - len(parsed.query)] + ("?" + query if query else "")


def _sorted_query(query: str) -> str:
    """Query parameters sorted (by name, then value; encoding kept as written), empty ones dropped."""
    if not query:
        return ""
    return "&".join(sorted(p for p in query.split("&") if p))


def filter_links(links: Iterable[str], egress: EgressPolicy, *, base: str | None = None) -> list[str]:
    """http(s) links ``egress`` permits as :func:`request_url` forms, de-duplicated by :func:`canonical_url`,
    in first-seen order. Links with userinfo (``user:pass@``) are never followed.

    Relative links are resolved against ``base`` when given, as a browser resolves them."""
    seen: set[str] = set()
    out: list[str] = []
    for link in links:
        if not link or not isinstance(link, str):
            continue
        parsed = url_safety.web_url(link, base)  # http(s), a host, no userinfo: the one rule
        if parsed is None:
            continue
        if not egress.permits_host(parsed.host):  # most links of a page: no canonical form needed
            continue
        absolute = parsed.href
        key = canonical_url(absolute)
        if key in seen or not egress.permits(key):
            continue
        seen.add(key)
        out.append(request_url(absolute))
    return out


def links_in(html: str, base_url: str, *, limit: int | None = None) -> list[str]:
    """The href of every <a> in ``html`` (the first ``limit``), absolute against the document's base URL as a
    browser resolves it (WHATWG, ``url_safety.py``: ``/\\host`` and ``http:\\\\host`` name another host, as
    they do for a browser)."""
    import lxml.html

    try:
        doc = lxml.html.fromstring(html)
    except (ValueError, lxml.etree.ParserError):
        return []
    base = base_url
    declared = doc.xpath("//base/@href")
    if declared and isinstance(declared[0], str):
        base = url_safety.join(base_url, declared[0]) or base_url
    out: list[str] = []
    for anchor in doc.iter("a"):
        href = anchor.get("href")
        if href is None:
            continue
        absolute = url_safety.join(base, href)
        if absolute is not None:
            out.append(absolute)
            if limit is not None and len(out) >= limit:
                break
    return out
