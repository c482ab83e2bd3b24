"""One URL parser for everything brt checks and everything it hands the browser: the WHATWG URL Standard, as
browsers implement it (the ``ada-url`` package: Python bindings of ada, a WHATWG-conformant parser).

Python's ``urllib.parse`` reads some URLs differently from a browser: in
``http://10.0.0.5:8080\\@allowed.example/`` it takes ``allowed.example`` for the host, a browser takes
``10.0.0.5`` (a backslash ends the authority of an http(s) URL); ``/\\evil.example`` is a path to urljoin and a
host to a browser; tabs and newlines inside a URL are dropped by a browser; ``http://127.0.0.%32/``,
``http://0x7f.1/`` and full-width or other IDN spellings name hosts that only the WHATWG host parser decodes.
So every URL brt acts on is parsed here and replaced by its WHATWG serialisation (``href``): the host that is
checked (allowlist, SSRF guard) is the host the browser connects to, and the browser is only ever handed a
URL that was serialised from what was checked.

    parse("HTTP://Example.COM:80/a/../b")     -> ParsedURL(href="http://example.com/b", host="example.com", ...)
    join("http://a.test/x/", "/\\\\b.test/")   -> "http://b.test/"  (None when it does not parse)
    normalize(url)                            -> the href, or None
    web_url(url)                              -> the ParsedURL when brt may fetch or cite it, else None
    credentials_refusal(url)                  -> "URL carries credentials (user:pass@); brt never logs in"

**One scheme rule**: brt fetches, lets the browser connect to, and cites only ``http`` and ``https`` URLs with a
host (``WEB_SCHEMES``; :func:`web_url`). The allowlist (``egress.EgressPolicy``), the egress proxy, the document
fetcher, the link filter, the static reader and ``add_page`` all decide with it; ``file:``, ``ftp:``, ``ws:``,
``data:``, ``javascript:`` and every other scheme are never a page.

A URL with userinfo (``user:pass@``) is refused everywhere (links, redirects, seeds, ``add_page``): brt never
logs in, and ``www.trusted.example@allowed.example`` must not be cited as if it came from the first name.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "CREDENTIALS_REASON",
    "WEB_SCHEMES",
    "ParsedURL",
    "credentials_refusal",
    "display",
    "has_credentials",
    "hostname",
    "join",
    "normalize",
    "parse",
    "strip_credentials",
    "web_refusal",
    "web_url",
    "with_scheme",
]

CREDENTIALS_REASON = "URL carries credentials (user:pass@); brt never logs in"
#: The only schemes brt fetches, lets its browser connect to, or cites.
WEB_SCHEMES = ("http", "https")
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21}


@dataclass(frozen=True)
class ParsedURL:
    """A URL as a browser reads it. ``host`` is the WHATWG host (lower-case ASCII, punycode for IDN, IPv4 in
    dotted form, IPv6 in brackets); ``hostname`` the same without IPv6 brackets."""

    href: str
    scheme: str  # without ":"
    host: str
    port: int | None  # None = the scheme's default
    path: str  # pathname, percent-encoded as the browser sends it
    query: str  # "" or "?..."
    fragment: str  # "" or "#..."
    username: str
    password: str

    @property
    def hostname(self) -> str:
        return self.host[1:-1] if self.host.startswith("[") else self.host

    @property
    def has_credentials(self) -> bool:
        return bool(self.username or self.password)

    @property
    def effective_port(self) -> int | None:
        return self.port if self.port is not None else _DEFAULT_PORTS.get(self.scheme)

    @property
    def netloc(self) -> str:
        """host[:port] without userinfo (the Host header)."""
        return self.host + (f":{self.port}" if self.port is not None else "")

    @property
    def origin(self) -> tuple[str, str, int | None]:
        return self.scheme, self.host, self.effective_port

    def without_fragment(self) -> str:
        return self.href[: len(self.href) - len(self.fragment)] if self.fragment else self.href


def parse(url: str, base: str | None = None) -> ParsedURL | None:
    """``url`` (resolved against ``base`` when given) parsed the WHATWG way, or None when it does not parse."""
    if not isinstance(url, str):
        return None
    try:
        from ada_url import URL

        u = URL(url, base) if base else URL(url)
    except (ValueError, TypeError):
        return None
    scheme = u.protocol[:-1] if u.protocol.endswith(":") else u.protocol
    port = int(u.port) if u.port else None
    return ParsedURL(
        href=u.href,
        scheme=scheme,
        host=u.hostname,
        port=port,
        path=u.pathname,
        query=u.search,
        fragment=u.hash,
        username=u.username,
        password=u.password,
    )


def web_url(url: str, base: str | None = None) -> ParsedURL | None:
    """``url`` (resolved against ``base``) parsed the WHATWG way when it is a URL brt may fetch or cite: scheme
    http or https, a host, no userinfo. None for anything else (another scheme, no host, credentials, not a
    URL). The one rule for the allowlist, the egress proxy, the fetcher, the harvest and citations."""
    parsed = parse(url, base)
    return parsed if parsed is not None and _refusal(parsed) is None else None


def web_refusal(url: str, base: str | None = None) -> str | None:
    """Why ``url`` is not a URL brt may fetch or cite (:func:`web_url`), or None when it is."""
    parsed = parse(url, base)
    return "unparsable URL" if parsed is None else _refusal(parsed)


def _refusal(parsed: ParsedURL) -> str | None:
    if parsed.scheme not in WEB_SCHEMES:
        return f"scheme {parsed.scheme or '(none)'}: not http(s)"
    if not parsed.host:
        return "no host"
    if parsed.has_credentials:
        return CREDENTIALS_REASON
    return None


def with_scheme(url: str, scheme: str) -> str | None:
    """``url`` with its scheme replaced (``ws`` -> ``http`` to judge a WebSocket's host as a page's), parsed and
    serialised the WHATWG way; None when it does not parse or the scheme cannot be set."""
    parsed = parse(url)
    if parsed is None:
        return None
    from ada_url import URL

    u = URL(parsed.href)
    u.protocol = scheme + ":"
    return u.href if u.protocol == scheme + ":" else None


def hostname(url: str) -> str | None:
    """The host of ``url`` as the browser reads it (no IPv6 brackets), or None when it has none."""
    parsed = parse(url)
    return parsed.hostname or None if parsed is not None else None


def normalize(url: str, base: str | None = None) -> str | None:
    """The WHATWG serialisation of ``url`` (resolved against ``base``), or None when it does not parse."""
    parsed = parse(url, base)
    return parsed.href if parsed is not None else None


def join(base: str, link: str) -> str | None:
    """``link`` resolved against ``base`` as a browser resolves it (None when it does not parse)."""
    return normalize(link, base)


def has_credentials(url: str) -> bool:
    parsed = parse(url)
    return parsed is not None and parsed.has_credentials


def credentials_refusal(url: str) -> str | None:
    """Why ``url`` may not be used because it carries userinfo, or None."""
    return CREDENTIALS_REASON if has_credentials(url) else None


def strip_credentials(url: str) -> str:
    """``url`` re-serialised without ``user:pass@`` (unparsable strings come back unchanged)."""
    parsed = parse(url)
    if parsed is None or not parsed.has_credentials:
        return parsed.href if parsed is not None else url
    from ada_url import URL

    u = URL(parsed.href)
    u.username = ""
    u.password = ""
    return u.href


def display(url: str) -> str:
    """A URL as evidence blocks cite it: no scheme, no userinfo (an unparsable string: scheme dropped only)."""
    parsed = parse(url)
    if parsed is None or not parsed.host:
        import re

        return re.sub(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", "", url)
    href = strip_credentials(parsed.href)
    return href.split("://", 1)[1] if "://" in href else href
