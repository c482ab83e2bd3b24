"""Extraction on small HTML: text, title, headings, the last-updated date and its source, selector regions."""

from __future__ import annotations

import io

from orchestrator.egress import EgressPolicy
from orchestrator.harvest.extract import extract_page, select_region
from orchestrator.harvest.net.urls import canonical_url, filter_links
from orchestrator.progress import NullProgress, PlainProgress, ProgressSink

BODY = (
    "<main><article><h1>Reserving space</h1>"
    "<p>Reserve space for images and embeds with width and height attributes so layouts do not shift.</p>"
    "<h2>Fonts</h2>"
    "<p>Web fonts can shift text when they load; use font-display and size-adjust to keep metrics.</p>"
    "</article></main>"
)

OLD_HEADER = {"last-modified": "Wed, 01 Jan 2020 00:00:00 GMT"}
HEADER_2024 = {"Last-Modified": "Wed, 02 Oct 2024 10:00:00 GMT"}


def _html(head: str = "", body: str = BODY, title: str = "CLS guide") -> str:
    return (
        f"<!DOCTYPE html><html lang='en'><head><title>{title}</title>{head}</head><body>{body}</body></html>"
    )


def test_text_title_headings():
    page = extract_page(
        _html('<meta property="og:title" content="Optimize CLS">'), "https://web.dev/articles/cls"
    )
    assert page is not None
    assert "Reserve space for images and embeds" in page.text
    assert "font-display" in page.text
    assert page.title == "Optimize CLS"
    assert page.headings == ["Reserving space", "Fonts"]
    assert page.selector == "body"
    assert page.url == "https://web.dev/articles/cls"
    # paragraphs stay on their own lines
    assert "\n" in page.text


def test_modified_meta_wins_over_published():
    head = (
        '<meta property="article:published_time" content="2023-01-05T10:00:00Z">'
        '<meta property="article:modified_time" content="2025-09-14T08:30:00+02:00">'
    )
    page = extract_page(
        _html(head), "https://web.dev/a", headers={"Last-Modified": "Wed, 01 Jan 2020 00:00:00 GMT"}
    )
    assert page is not None
    assert (page.last_updated, page.last_updated_source) == ("2025-09-14", "modified")


def test_jsonld_and_itemprop_modified():
    jsonld = (
        '<script type="application/ld+json">{"@context": "https://schema.org", '
        '"@graph": [{"@type": "Article", "datePublished": "2022-03-01", '
        '"dateModified": "2024-06-30T12:00:00Z"}]}</script>'
    )
    page = extract_page(_html(jsonld), "https://web.dev/b")
    assert page is not None
    assert (page.last_updated, page.last_updated_source) == ("2024-06-30", "modified")

    body = BODY + '<footer>Updated <time itemprop="dateModified" datetime="2024-02-03">3 Feb</time></footer>'
    page = extract_page(_html(body=body), "https://web.dev/c")
    assert page is not None
    assert (page.last_updated, page.last_updated_source) == ("2024-02-03", "modified")


def test_published_date_when_no_modified_date():
    head = '<meta property="article:published_time" content="2023-01-05T10:00:00Z">'
    page = extract_page(
        _html(head), "https://web.dev/d", headers={"last-modified": "Wed, 01 Jan 2020 00:00:00 GMT"}
    )
    assert page is not None
    assert (page.last_updated, page.last_updated_source) == ("2023-01-05", "published")


def test_a_server_last_modified_header_is_not_the_page_date():
    """A static server sends a file's modification time (a checkout or a deploy sets it to now): a page that
    states no date has none, whatever the header says."""
    for headers in (HEADER_2024, OLD_HEADER, None):
        page = extract_page(_html(), "https://web.dev/e", headers=headers)
        assert page is not None
        assert (page.last_updated, page.last_updated_source) == (None, None), headers


def test_a_date_the_page_shows_is_its_date():
    body = BODY.replace("</h1>", "</h1><p>Last updated: 12 March 2024</p>")
    page = extract_page(_html(body=body), "https://web.dev/f", headers=HEADER_2024)
    assert page is not None
    assert (page.last_updated, page.last_updated_source) == ("2024-03-12", "published")


def test_selector_region_keeps_head_metadata():
    body = (
        "<nav><p>Navigation text that must not be extracted into the evidence store at all.</p></nav>"
        + BODY
        + "<aside><p>Sidebar advertisement about something else entirely, which is noise.</p></aside>"
    )
    head = '<meta name="dcterms.modified" content="2025-01-31">'
    html = _html(head, body)
    region = select_region(html, "article")
    assert region is not None and region.startswith("<article")
    page = extract_page(html, "https://web.dev/f", region_html=region, selector="article")
    assert page is not None
    assert page.selector == "article"
    assert "Reserve space for images" in page.text
    assert "Navigation text" not in page.text and "Sidebar advertisement" not in page.text
    assert (page.last_updated, page.last_updated_source) == ("2025-01-31", "modified")
    assert page.title in ("CLS guide", "Reserving space")
    assert select_region(html, "table.nothing") is None


def test_small_region_falls_back_to_its_plain_text():
    html = _html(body="<div id='x'><span>Tiny note.</span></div>" + BODY)
    page = extract_page(html, "https://web.dev/g", region_html=select_region(html, "#x"), selector="#x")
    assert page is not None
    assert page.text == "Tiny note."


def test_empty_pages_give_none():
    assert extract_page("", "https://web.dev/h") is None
    assert (
        extract_page("<html><head><title>x</title></head><body></body></html>", "https://web.dev/h") is None
    )
    assert extract_page("<html><body><script>var a = 1;</script></body></html>", "https://web.dev/h") is None


def test_scripts_never_in_text():
    body = BODY + "<script>document.write('evil script text that must not be stored')</script>"
    page = extract_page(_html(body=body), "https://web.dev/i")
    assert page is not None
    assert "evil script" not in page.text


def test_title_fallback_to_html_title():
    page = extract_page(_html(title="Only the title tag"), "https://web.dev/j")
    assert page is not None
    assert page.title in ("Only the title tag", "Reserving space")


def test_canonical_url_and_link_filter():
    assert canonical_url("HTTP://Web.DEV:80/a?b=1#frag") == "http://web.dev/a?b=1"
    assert canonical_url("https://web.dev:443") == "https://web.dev/"
    assert canonical_url("https://web.dev:8443/x#y") == "https://web.dev:8443/x"
    links = [
        "https://web.dev/a#one",
        "https://web.dev/a#two",
        "/relative",
        "mailto:x@web.dev",
        "javascript:alert(1)",
        "file:///etc/passwd",
        "ftp://web.dev/file",
        "https://notweb.dev/x",
        "https://web.dev.evil.com/x",
        "https://sub.web.dev/y",
    ]
    assert filter_links(links, EgressPolicy.of(["web.dev"]), base="https://web.dev/start") == [
        "https://web.dev/a",
        "https://web.dev/relative",
        "https://sub.web.dev/y",
    ]


def test_progress_sinks():
    stream = io.StringIO()
    sink = PlainProgress(stream, interval=0)
    assert isinstance(sink, ProgressSink)
    assert isinstance(NullProgress(), ProgressSink)
    sink.start("fetch", total=2)
    sink.advance("fetch")
    sink.advance("fetch")
    sink.message("hello")
    sink.close()
    out = stream.getvalue().splitlines()
    assert "fetch: 1/2" in out and "fetch: 2/2" in out and "hello" in out


def test_trafilatura_runs_one_call_at_a_time(monkeypatch):
    # The harvest extracts in worker threads; trafilatura in several threads at once crashes the process now
    # and then (adbar/trafilatura#840, #925), so brt never lets two calls overlap.
    import threading
    import time

    import orchestrator.harvest.extract as extract_module

    real = extract_module._trafilatura
    inside, most = [0], [0]
    count_lock = threading.Lock()

    def counting(html, url):
        with count_lock:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        try:
            time.sleep(0.02)  # long enough for the other threads to arrive
            return real(html, url)
        finally:
            with count_lock:
                inside[0] -= 1

    monkeypatch.setattr(extract_module, "_trafilatura", counting)
    results: list = []
    threads = [
        threading.Thread(target=lambda i=i: results.append(extract_page(_html(title=f"t{i}"), f"https://x/{i}")))
        for i in range(6)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 6 and all(r is not None and "Reserve space" in r.text for r in results)
    assert most[0] == 1
