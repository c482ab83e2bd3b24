"""Harvest rules without a browser or a model (issue 6 and 12): the SSRF guard's address classifier, the
allowlist and schemes, canonical URLs, backoff and Retry-After, robots.txt, the summary table, the streaming
decoder and the document fetcher against local servers, and the browser's error messages read in one place."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from orchestrator.charter import host_allowed
from orchestrator.egress import EgressPolicy
from orchestrator.errors import BrowserNotFound, DevtoolsMcpError
from orchestrator.harvest.crawl import Crawl
from orchestrator.harvest.downloads import download_reason
from orchestrator.harvest.extract import ExtractedPage
from orchestrator.harvest.launch import find_browser
from orchestrator.harvest.limits import CrawlBudget
from orchestrator.harvest.models import HarvestEvent
from orchestrator.harvest.net.guard import NetGuard, classify_ip, parse_resolver_rules
from orchestrator.harvest.net.politeness import MAX_BACKOFF_S, Politeness, RobotsRules, backoff_delay, parse_retry_after
from orchestrator.harvest.net.urls import canonical_url, filter_links
from orchestrator.harvest.readers.devtools_mcp.client import (
    NEW_CONTEXT_NAVIGATIONS,
    DevtoolsMcpBrowser,
    allowed_url_patterns,
)
from orchestrator.harvest.summary import format_summary, summarize


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("::1", "loopback"),
        ("10.0.0.5", "private"),
        ("172.16.3.4", "private"),
        ("172.31.255.255", "private"),
        ("192.168.1.1", "private"),
        ("fc00::1", "private"),
        ("fd12:3456::1", "private"),
        ("169.254.169.254", "link-local"),  # cloud metadata
        ("fe80::1", "link-local"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("100.64.0.1", "shared"),
        ("224.0.0.1", "multicast"),
        ("::ffff:127.0.0.1", "loopback"),  # IPv4-mapped
        ("::ffff:169.254.169.254", "link-local"),
        ("8.8.8.8", None),
        ("93.184.216.34", None),
        ("2606:4700::1111", None),
        ("172.32.0.1", None),
    ],
)
def test_address_classifier(address, kind):
    assert classify_ip(address) == kind


def test_guard_exact_allowlist_exception_and_cached_dns():
    import asyncio

    async def run():
        guard = NetGuard(
            ["test", "intranet.test", "10.1.2.3"], resolver_rules="MAP evil.test 127.0.0.1, MAP intranet.test 10.0.0.8"
        )
        evil = await guard.check("http://evil.test:8080/x")  # allowed by suffix only: refused
        intranet = await guard.check("http://intranet.test/x")  # exact host on the allowlist
        literal = await guard.check("http://10.1.2.3/")
        metadata = await guard.check("http://169.254.169.254/latest/meta-data/")
        again = await guard.check("http://evil.test/other")
        return evil, intranet, literal, metadata, again, guard

    evil, intranet, literal, metadata, again, guard = asyncio.run(run())
    assert evil is not None and evil.startswith("internal address (loopback 127.0.0.1)")
    assert again == evil and guard.lookups == 0  # mapped names never hit the OS resolver; answers cached
    assert intranet is None and literal is None
    assert metadata is not None and "link-local 169.254.169.254" in metadata
    assert parse_resolver_rules("MAP a.test 127.0.0.1, EXCLUDE x") == {"a.test": "127.0.0.1"}


def test_allowlist_semantics_and_schemes():
    allowed = ["example.com"]
    assert host_allowed("example.com", allowed) and host_allowed("a.b.example.com", allowed)
    assert not host_allowed("notexample.com", allowed)
    assert not host_allowed("example.com.evil.net", allowed)
    links = [
        "https://a.b.example.com/x",
        "https://notexample.com/",
        "https://example.com.evil.net/",
        "file:///etc/passwd",
        "data:text/html,hi",
        "ftp://example.com/f",
        "javascript:alert(1)",
    ]
    assert filter_links(links, EgressPolicy.of(allowed)) == ["https://a.b.example.com/x"]


def test_canonical_url():
    assert canonical_url("HTTP://Example.COM:80/p?b=2&a=1#frag") == "http://example.com/p?a=1&b=2"
    assert canonical_url("https://example.com:443") == "https://example.com/"
    assert canonical_url("https://example.com:8443/p?a=1&b=2") == "https://example.com:8443/p?a=1&b=2"
    same = {canonical_url(u) for u in ("http://h/p?b=2&a=1", "http://h/p?a=1&b=2#x", "HTTP://H:80/p?a=1&b=2")}
    assert len(same) == 1


def test_backoff_and_retry_after():
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past
    assert parse_retry_after("soon") is None
    assert backoff_delay(1) == 0.5 and backoff_delay(2) == 1.0 and backoff_delay(3) == 2.0
    assert backoff_delay(1, retry_after=3600) == MAX_BACKOFF_S == 60.0
    assert backoff_delay(1, retry_after=5) == 5.0

    import asyncio

    async def run():
        polite = Politeness(per_domain=2, min_delay_s=0.1)
        delays = [polite.observe("h", 503), polite.observe("h", 429), polite.observe("h", 503, 2.0)]
        delays.append(polite.observe("h", 503))
        delays += [polite.observe("h", 429) for _ in range(10)]
        after_ok = polite.observe("h", 200)
        return delays, after_ok

    delays, after_ok = asyncio.run(run())
    assert all(b >= a for a, b in zip(delays, delays[1:], strict=False))  # never shrinks while errors continue
    assert delays[2] >= 2.0 and max(delays) == MAX_BACKOFF_S
    assert after_ok == 0.1  # a good response resets to the minimum delay


def test_robots_rules_protego():
    rules = RobotsRules("User-agent: *\nDisallow: /private/\nCrawl-delay: 1.5\n")
    assert not rules.allowed("http://h/private/x") and rules.allowed("http://h/public")
    assert rules.crawl_delay() == 1.5
    assert RobotsRules(None).allowed("http://h/private/x")


def test_summary_table():
    events = [
        {"outcome": "stored", "attempts": [{}, {}, {}], "bytes": 1500},
        {"outcome": "failed", "reason": "HTTP 503", "attempts": [{}, {}, {}]},
        {"outcome": "blocked", "reason": "blocked by robots.txt", "attempts": [{}]},
        {"outcome": "skipped", "reason": "too large (99999999 bytes, cap 20000000)", "attempts": [{}]},
    ]
    s = summarize(events, 3.25)
    assert s["stored"] == 1 and s["failed"] == {"HTTP 503": 1} and s["blocked"] == {"blocked by robots.txt": 1}
    assert s["skipped"] == {"too large": 1} and s["retried_urls"] == 2 and s["retries"] == 4
    table = format_summary(s)
    assert "retried" in table and "2 URLs, 4 retries" in table and "1.5 KB" in table and "3.2s" in table
    assert s["aborted_requests"] == {} and "text mode" not in table
    events[0]["aborted_requests"] = {"image": 3, "font": 1}
    events[1]["aborted_requests"] = {"image": 2}
    s = summarize(events, 1.0)
    assert s["aborted_requests"] == {"font": 1, "image": 5}
    assert "6 requests aborted (1 font, 5 image)" in format_summary(s)


def test_stream_decoder_stops_a_gzip_bomb_at_the_cap():
    """(7) pure unit: the decoder inflates in bounded steps and stops right past the cap."""
    import gzip
    import zlib

    from orchestrator.harvest.net.fetcher import BodyTooLarge, StreamDecoder
    from tests.sites.misbehaving import GZIP_BOMB

    decoder = StreamDecoder("gzip", max_bytes=2_000_000)
    with pytest.raises(BodyTooLarge):
        for i in range(0, len(GZIP_BOMB), 65_536):
            decoder.feed(GZIP_BOMB[i : i + 65_536])
    assert 2_000_000 < decoder.size <= 2_000_000 + 1_048_576  # at most one inflate step past the cap
    ok = StreamDecoder("gzip", max_bytes=100)
    ok.feed(gzip.compress(b"a" * 40) + gzip.compress(b"b" * 40))  # concatenated members
    assert ok.body() == b"a" * 40 + b"b" * 40
    raw = zlib.compressobj(wbits=-15)
    data = raw.compress(b"deflated without a header") + raw.flush()
    dec = StreamDecoder("deflate", max_bytes=100)
    dec.feed(data)
    assert dec.body() == b"deflated without a header"
    with pytest.raises(ValueError, match="unsupported content encoding"):
        StreamDecoder("br", max_bytes=10)


def test_fetcher_holds_at_most_the_cap_of_a_gzip_bomb(local_site):
    """(7) The document fetcher against the bomb endpoint: Python allocations peak near the 2 MB cap while the
    body would inflate to 1 GB."""
    import asyncio
    import tracemalloc

    from orchestrator.harvest.net.fetcher import DocumentFetcher

    badserver = local_site("misbehaving")

    async def go():
        fetcher = DocumentFetcher(None, lambda u: True, max_bytes=2_000_000)
        try:
            ok = await fetcher.fetch(badserver.url("p.html"), deadline=time.monotonic() + 20)  # warm: imports
            tracemalloc.start()
            result = await fetcher.fetch(badserver.url("bomb"), deadline=time.monotonic() + 20)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        finally:
            await fetcher.aclose()
        return result, peak, ok

    result, peak, ok = asyncio.run(go())
    assert result.kind == "too large" and result.reason.startswith("too large"), result
    assert peak < 6_000_000, peak  # cap 2 MB + one 1 MB inflate step + buffers
    print(f"\n[bomb] peak traced allocations: {peak / 1e6:.1f} MB for a body inflating to 1000 MB")
    assert ok.kind == "ok" and ok.status == 200 and b"Query page" in ok.body


def test_fetcher_keeps_cookies_to_the_origin_they_were_sent_for():
    """A redirect to another origin does not carry the browser's cookies or credentials along."""
    import asyncio
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from orchestrator.harvest.net.fetcher import DocumentFetcher

    seen: list[tuple[str, str | None, str | None]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # noqa: ANN002
            pass

        def do_GET(self):  # noqa: N802
            seen.append((self.headers.get("Host", ""), self.headers.get("Cookie"), self.headers.get("Authorization")))
            if self.path == "/first":
                self.send_response(302)
                self.send_header("Location", f"http://localhost:{port}/second")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = b"<p>second</p>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    async def go():
        fetcher = DocumentFetcher(None, lambda u: True)
        try:
            return await fetcher.fetch(
                f"http://127.0.0.1:{port}/first",
                deadline=time.monotonic() + 10,
                headers={"Cookie": "session=secret", "Authorization": "Bearer t"},
            )
        finally:
            await fetcher.aclose()

    try:
        result = asyncio.run(go())
    finally:
        server.shutdown()
        server.server_close()
    assert result.kind == "ok" and result.hops == [f"http://127.0.0.1:{port}/first", f"http://localhost:{port}/second"]
    assert seen[0][1:] == ("session=secret", "Bearer t")
    assert seen[1][0].startswith("localhost") and seen[1][1:] == (None, None)


def test_download_reason():
    assert download_reason({"content-type": "text/html"}) is None
    assert download_reason({"content-type": "text/html; charset=utf-8"}) is None
    assert download_reason({"content-type": "image/png"}) is None
    assert download_reason({}, b"<!doctype html><p>hi") is None
    attachment = {"content-type": "text/html", "content-disposition": 'attachment; filename="a.html"'}
    assert download_reason(attachment) == "Content-Disposition: attachment"
    assert download_reason({"content-disposition": "inline", "content-type": "text/html"}) is None
    assert download_reason({"content-type": "application/octet-stream"}) == "Content-Type: application/octet-stream"
    assert download_reason({"content-type": "application/pdf"}) == "Content-Type: application/pdf"
    assert download_reason({"content-type": "application/zip"}) is not None
    assert download_reason({}, b"PK\x03\x04\x00\x00") == "binary body without Content-Type"


def test_find_browser(monkeypatch, tmp_path):
    monkeypatch.setenv("BRT_BROWSER", "/usr/bin/chromium")
    assert find_browser() == "/usr/bin/chromium"
    monkeypatch.setenv("BRT_BROWSER", str(tmp_path / "nope"))
    with pytest.raises(BrowserNotFound, match="BRT_BROWSER"):
        find_browser()
    monkeypatch.delenv("BRT_BROWSER")
    monkeypatch.setattr("orchestrator.harvest.launch._playwright_chromium", lambda: None)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BrowserNotFound, match="apt-get install chromium"):
        find_browser()


def test_allowed_url_patterns():
    assert allowed_url_patterns(["127.0.0.1", "web.dev"]) == [
        "http://127.0.0.1:*/*",
        "https://127.0.0.1:*/*",
        "http://web.dev:*/*",
        "http://*.web.dev:*/*",
        "https://web.dev:*/*",
        "https://*.web.dev:*/*",
    ]


class _ScriptedMcp(DevtoolsMcpBrowser):
    """chrome-devtools-mcp's answers scripted, for the retry logic alone (no process is started)."""

    def __init__(self, evaluate_answers: list[tuple[bool, str]], network_request: str | None = None):
        super().__init__(["127.0.0.1"])
        self._session = object()  # "running"
        self.evaluate_answers = evaluate_answers
        self.network_request = network_request  # get_network_request's text; None: the log is empty
        self.calls: list[str] = []

    async def call(self, tool, arguments):
        self.calls.append(tool)
        if tool == "navigate_page":
            return False, f"Successfully navigated to {arguments['url']}."
        if tool == "list_network_requests":
            listing = "## Network requests\nShowing 1-1 of 1 (Page 1 of 1).\n"
            return False, listing + ("reqid=7 GET http://127.0.0.1/m [200]" if self.network_request else "")
        if tool == "get_network_request":
            assert arguments["reqid"] == 7 and arguments["responseFilePath"]
            return False, self.network_request
        return self.evaluate_answers.pop(0)


def _network_request(status: int, content_type: str) -> str:
    """get_network_request's text as chrome-devtools-mcp 1.11 prints it."""
    return (
        f"## Request http://127.0.0.1/m\nStatus: {status}\n### Request Headers\n- accept:text/html\n"
        f"### Response Headers\n- content-length:70\n- Content-Type:{content_type}\n"
        "- last-modified:Wed, 02 Oct 2024 10:00:00 GMT\n### Response Body\n<binary data>"
    )


def test_a_lost_script_context_navigates_again():
    lost = (True, "Error: Timed out after waiting 5000ms")
    info = (False, 'Script ran on page and returned:\n```json\n{"url": "http://127.0.0.1/m", "status": 404}\n```')
    browser = _ScriptedMcp([lost, lost, info])
    nav, got = asyncio.run(browser.open("http://127.0.0.1/m", 5))
    assert nav.ok and got == {"url": "http://127.0.0.1/m", "status": 404}
    assert browser.calls == [
        "navigate_page",
        "evaluate_script",
        "evaluate_script",
        "list_network_requests",  # nothing in the log: navigate again
        "navigate_page",
        "evaluate_script",
    ]

    browser = _ScriptedMcp([lost] * 4 + [info])  # lost again after the first new navigation: a second one
    nav, got = asyncio.run(browser.open("http://127.0.0.1/m", 5))
    assert got["status"] == 404 and browser.calls.count("navigate_page") == 3

    browser = _ScriptedMcp([lost] * 6)  # still lost after navigating again twice: the page fails
    with pytest.raises(DevtoolsMcpError, match="Timed out"):
        asyncio.run(browser.open("http://127.0.0.1/m", 5))
    assert browser.calls.count("navigate_page") == 1 + NEW_CONTEXT_NAVIGATIONS

    # A document brt would not read anyway (an image, an error status) is decided from the network log.
    browser = _ScriptedMcp([lost] * 6, _network_request(200, "image/png"))
    nav, got = asyncio.run(browser.open("http://127.0.0.1/m", 5))
    assert got["url"] == "http://127.0.0.1/m" and got["status"] == 200 and got["contentType"] == "image/png"
    assert got["lastModifiedMs"] == 1727863200000 and browser.calls.count("navigate_page") == 1
    browser = _ScriptedMcp([lost] * 6, _network_request(404, "text/html; charset=utf-8"))
    nav, got = asyncio.run(browser.open("http://127.0.0.1/m", 5))
    assert got["status"] == 404 and got["contentType"] == "text/html" and browser.calls.count("navigate_page") == 1
    browser = _ScriptedMcp([lost, lost, info], _network_request(200, "text/html"))  # a page to read: again
    nav, got = asyncio.run(browser.open("http://127.0.0.1/m", 5))
    assert got["status"] == 404 and browser.calls.count("navigate_page") == 2

    browser = _ScriptedMcp([(True, "Error: ReferenceError: x is not defined")])  # other errors: no second try
    with pytest.raises(DevtoolsMcpError, match="ReferenceError"):
        asyncio.run(browser.open("http://127.0.0.1/m", 5))
    assert browser.calls == ["navigate_page", "evaluate_script"]


def test_the_network_log_entry_of_a_document_is_read_line_by_line():
    from orchestrator.harvest.readers.devtools_mcp.client import parse_network_request

    got = parse_network_request(_network_request(404, "text/html").replace("Status: 404", "Status: 404 Not Found"))
    assert got is not None and got.status == 404 and got.headers["content-type"] == "text/html"
    assert got.headers["last-modified"].startswith("Wed, 02 Oct 2024")
    assert "accept" not in got.headers  # a request header is not the response's
    for status_line in ("Status:", "Status:   ", "Status: pending"):  # no code (yet): no status
        assert parse_network_request(f"## Request http://127.0.0.1/m\n{status_line}\n").status is None
    assert parse_network_request("## Request data:text/html,hi\nStatus: 200\n") is None  # not a web document


def test_a_ray_client_connection_the_server_failed_to_start_is_tried_again(monkeypatch):
    from orchestrator.harvest import ray_engine

    class FakeRay:  # only the connection logic is under test here; a real cluster is joined in tests/e2e
        def __init__(self, failures: int):
            self.failures, self.calls, self.shutdowns = failures, [], 0

        def init(self, address, **_):
            self.calls.append(address)
            if len(self.calls) <= self.failures:
                raise ConnectionAbortedError("Initialization failure from server:\n")

        def shutdown(self):
            self.shutdowns += 1

    monkeypatch.setattr(ray_engine.time, "sleep", lambda s: None)
    ray = FakeRay(failures=2)
    ray_engine._join(ray, "ray://head:10001")
    assert ray.calls == ["ray://head:10001"] * 3 and ray.shutdowns == 2
    ray = FakeRay(failures=3)
    with pytest.raises(ConnectionAbortedError):
        ray_engine._join(ray, "ray://head:10001")
    ray = FakeRay(failures=1)  # a GCS address or auto: one attempt, the error as it is
    with pytest.raises(ConnectionAbortedError):
        ray_engine._join(ray, "auto")
    assert ray.calls == ["auto"]


def test_a_read_page_or_pdf_is_refused_under_max_pages_and_after_a_full_disk():
    """The hand-off to the writer (Crawl._admit) is the same for a page and a PDF: skipped once max_pages is
    reached, failed once a full disk stopped the run (a PDF used to be handed over even then)."""
    import functools
    import types

    finished: dict[str, tuple[str, str | None]] = {}
    crawl = types.SimpleNamespace(
        budget=CrawlBudget(max_pages=1, max_attempts=10, max_duration_s=60),
        accepted=0,
        writer=types.SimpleNamespace(queue=(q := asyncio.Queue()), put=q.put),
        charter=types.SimpleNamespace(allowed_domains=["a.example"]),
        finish=lambda event, outcome, reason: finished.__setitem__(event.url, (outcome, reason)),
    )
    for name in ("_admit", "_room_for", "queue_pdf_page"):
        setattr(crawl, name, functools.partial(getattr(Crawl, name), crawl))

    def page(url):
        return HarvestEvent(url, 0, "2026-11-23T00:00:00Z"), ExtractedPage(url, "t", "text")

    async def run():
        event, extracted = page("https://a.example/1.pdf")
        assert (await crawl.queue_pdf_page(event, extracted, ["p1"], 200, "application/pdf", event.url))[1]
        event, extracted = page("https://a.example/2.pdf")
        assert not (await crawl.queue_pdf_page(event, extracted, ["p1"], 200, "application/pdf", event.url))[1]
        assert finished[event.url][0] == "skipped" and "max_pages" in finished[event.url][1]
        crawl.budget.max_pages = 5
        crawl.budget.stop("disk full while writing (ENOSPC)")
        event, extracted = page("https://a.example/3.pdf")
        assert not (await crawl.queue_pdf_page(event, extracted, ["p1"], 200, "application/pdf", event.url))[1]
        assert finished[event.url][0] == "failed" and "disk full" in finished[event.url][1]
        event, extracted = page("https://a.example/4")
        links, queued = await Crawl.queue_page(crawl, event, extracted, ["https://a.example/5"], 200, None, "now")
        assert not queued and links == [] and finished[event.url][0] == "failed"
        assert crawl.accepted == 1 and crawl.writer.queue.qsize() == 1 and crawl.budget.new_pages == 1

    asyncio.run(run())
