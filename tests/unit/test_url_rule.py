"""One URL parser and one scheme rule (issue 41.3), without a browser: ``url_safety.web_url`` reads a URL as a
browser does (WHATWG) and admits only http(s) with a host and no userinfo, and every place that decides whether
brt may fetch, connect to or cite a URL agrees with it: the charter's allowlist, the link filter, ``add_page``'s
check, the document fetcher, the egress proxy, the WebSocket rule and the HTML report's links. The differential
cases are spellings another parser (``urllib``) reads as a different host or scheme."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

import pytest

from orchestrator import url_safety
from orchestrator.charter import url_allowed
from orchestrator.egress import EgressPolicy
from orchestrator.harvest.net.urls import filter_links

ALLOWED = ["allowed.example", "127.0.0.1"]

#: (URL, the host a browser connects to, or None when a browser would not fetch it as a web page)
DIFFERENTIALS = [
    ("http://10.0.0.5:8080\\@allowed.example/", "10.0.0.5"),  # a backslash ends the authority
    ("http://allowed.example\\@10.0.0.5/", "allowed.example"),  # ...both ways
    ("https:\\\\10.0.0.5\\x", "10.0.0.5"),  # backslashes as slashes
    ("http://10.0.0.5\t\n/\r", "10.0.0.5"),  # tabs and newlines are dropped
    ("ht\ttp://10.0.0.5/", "10.0.0.5"),
    ("http://127.0.0.%32/", "127.0.0.2"),  # a percent-encoded host
    ("http://0x7f.1/", "127.0.0.1"),  # IPv4 shorthand, hex
    ("http://2130706433/", "127.0.0.1"),  # one decimal number
    ("http://0177.0.0.1/", "127.0.0.1"),  # octal
    ("http://allowed.example./", "allowed.example."),  # a trailing dot is another spelling of the name
    ("http://ALLOWED.example/", "allowed.example"),
    ("http://ａｌｌｏｗｅｄ.example/", "allowed.example"),  # full-width letters (IDNA maps them)
    ("http://xn--mnchen-3ya.example/", "xn--mnchen-3ya.example"),
    ("http://münchen.example/", "xn--mnchen-3ya.example"),
    ("http://[::ffff:10.0.0.5]/", "[::ffff:a00:5]"),
    ("http:///10.0.0.5/", "10.0.0.5"),  # extra slashes are skipped
]

#: URLs that are never a page brt may fetch or cite: another scheme, no host, credentials.
NOT_WEB = [
    "javascript://allowed.example/%0aalert(1)",
    "file:///etc/passwd",
    "file://allowed.example/etc/passwd",
    "ftp://allowed.example/a",
    "ws://allowed.example/",
    "wss://allowed.example/",
    "data:text/html,<title>allowed.example</title>",
    "blob:http://allowed.example/1",
    "view-source:http://allowed.example/",
    "http://user:pass@allowed.example/",
    "http://allowed.example@10.0.0.5/",  # the name before @ is userinfo, not the host
    "https://www.allowed.example%40evil.test/",
    "http://",
    "http://[::1/",
    "",
]


@pytest.mark.parametrize(("url", "host"), DIFFERENTIALS, ids=[repr(u) for u, _ in DIFFERENTIALS])
def test_the_host_is_the_host_a_browser_connects_to(url: str, host: str) -> None:
    parsed = url_safety.web_url(url)
    assert parsed is not None and parsed.host == host, parsed
    # the allowlist judges that host, whatever another parser says
    assert url_allowed(url, ALLOWED) == any(host.rstrip(".") == d or host.endswith("." + d) for d in ALLOWED)


def test_where_urllib_reads_another_host_the_rule_follows_the_browser() -> None:
    differ = [u for u, host in DIFFERENTIALS if (urlsplit(u.replace("\t", "").replace("\n", "").replace("\r", ""))
                                                 .hostname or "") != host.strip("[]").rstrip(".")]
    assert len(differ) >= 6, differ  # the cases above are real differentials, not restatements
    assert not url_allowed("http://10.0.0.5:8080\\@allowed.example/", ALLOWED)
    assert urlsplit("http://10.0.0.5:8080\\@allowed.example/").hostname == "allowed.example"


@pytest.mark.parametrize("url", NOT_WEB, ids=repr)
def test_one_scheme_rule_http_and_https_only(url: str) -> None:
    assert url_safety.web_url(url) is None
    assert url_safety.web_refusal(url) is not None
    assert not url_allowed(url, ALLOWED)
    assert filter_links([url], EgressPolicy.of(ALLOWED), base="http://allowed.example/") == []


def test_a_relative_url_is_no_url_until_resolved() -> None:
    for url in ("//allowed.example/", "allowed.example/a", "/a"):
        assert url_safety.web_url(url) is None and not url_allowed(url, ALLOWED)
        assert url_safety.web_url(url, "https://allowed.example/x/") is not None


def test_the_refusal_says_why() -> None:
    assert url_safety.web_refusal("ftp://allowed.example/") == "scheme ftp: not http(s)"
    assert url_safety.web_refusal("javascript://allowed.example/") == "scheme javascript: not http(s)"
    assert url_safety.web_refusal("http://u:p@allowed.example/") == url_safety.CREDENTIALS_REASON
    assert url_safety.web_refusal("not a url") == "unparsable URL"
    assert url_safety.web_refusal("https://allowed.example/a") is None


def test_relative_links_resolve_as_the_browser_resolves_them() -> None:
    base = "http://allowed.example/dir/page.html"
    assert url_safety.web_url("/\\10.0.0.5/x", base).host == "10.0.0.5"  # type: ignore[union-attr]
    assert filter_links(["/\\10.0.0.5/x", "../b.html", "javascript:alert(1)"], EgressPolicy.of(ALLOWED), base=base) == [
        "http://allowed.example/b.html"]


def test_add_page_refuses_what_the_rule_refuses() -> None:
    from orchestrator.charter import parse_charter
    from orchestrator.errors import PageRefused
    from orchestrator.harvest.pages import check_url

    charter = parse_charter({"id": "rule", "title": "t", "allowed_domains": ["allowed.example"],
                             "seeds": ["https://allowed.example/"]})
    assert check_url(charter, "https://ALLOWED.example/a/../b") == "https://allowed.example/b"
    for url in ["javascript://allowed.example/", "ftp://allowed.example/", "http://x@allowed.example/",
                "http://10.0.0.5\\@allowed.example/"]:
        with pytest.raises(PageRefused):
            check_url(charter, url)


def test_the_fetcher_and_the_proxy_refuse_before_connecting() -> None:
    from orchestrator.harvest.net.fetcher import DocumentFetcher
    from orchestrator.harvest.net.guard import NetGuard

    fetcher = DocumentFetcher(NetGuard(ALLOWED), lambda u: url_allowed(u, ALLOWED), max_bytes=1000)

    async def reasons() -> list[str | None]:
        return [await fetcher._check(u) for u in ("ftp://allowed.example/", "http://a:b@allowed.example/",
                                                   "http://10.0.0.5\\@allowed.example/", "http://allowed.example/")]

    got = asyncio.run(reasons())
    assert got[0] == "scheme ftp: not http(s)" and got[1] == url_safety.CREDENTIALS_REASON
    assert got[2] == "not on allowed_domains"
    assert got[3] is None or got[3].startswith("cannot resolve")  # allowed: only DNS (none here) may stop it


def test_websockets_are_judged_as_their_http_twin() -> None:
    from orchestrator.harvest.readers.playwright.routes import websocket_refusal

    policy = EgressPolicy.of(ALLOWED)
    assert websocket_refusal("wss://allowed.example/live", policy, replay=False) is None
    assert websocket_refusal("ws://10.0.0.5\\@allowed.example/", policy, replay=False) == "not on allowed_domains"
    assert websocket_refusal("http://allowed.example/", policy, replay=False).startswith("not a ws")  # type: ignore
    assert websocket_refusal("wss://allowed.example/", policy, replay=True) == "WebSocket refused in replay"


def test_report_links_only_to_web_urls() -> None:
    from orchestrator.audit.report_html import _link

    assert _link("javascript://allowed.example/%0aalert(1)").startswith("javascript")  # text, not a link
    assert "<a " not in _link("data:text/html,x") and "<a " not in _link("http://u:p@allowed.example/")
    assert _link("HTTP://Allowed.example/a b").startswith('<a href="http://allowed.example/a%20b"')
