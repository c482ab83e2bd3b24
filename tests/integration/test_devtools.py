"""Harvests that go through Chrome DevTools: ``--via devtools-mcp`` (brt as an MCP client of the real
chrome-devtools-mcp npm package, installed by scripts/dev.sh) and ``--browser-url`` (attach over CDP to a
Chromium the test starts with --remote-debugging-port), both against the local fixture site."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from orchestrator.config import open_memory
from orchestrator.errors import BrowserNotFound
from orchestrator.harvest import harvest
from orchestrator.harvest.readers.devtools_mcp.client import (
    DevtoolsMcpBrowser,
    DevtoolsMcpNotFound,
    find_devtools_mcp,
)
from tests.sites.pages import page


def _devtools_mcp_or_skip() -> None:
    try:
        command = find_devtools_mcp()
    except DevtoolsMcpNotFound as exc:
        pytest.skip(f"chrome-devtools-mcp is not installed (bash scripts/dev.sh setup installs it): {exc}")
    if "--no-install" in command:
        pytest.skip("chrome-devtools-mcp is not in node_modules (bash scripts/dev.sh setup installs it)")


def outcomes(report) -> dict[str, tuple[str, str | None]]:
    return {e["url"]: (e["outcome"], e["reason"]) for e in report.events}


def test_missing_package_or_node_is_a_clear_error(monkeypatch, tmp_path, local_site, make_charter, brt_home):
    site = local_site()
    monkeypatch.setenv("BRT_DEVTOOLS_MCP", str(tmp_path / "missing" / "chrome-devtools-mcp.js"))
    with pytest.raises(DevtoolsMcpNotFound) as info:
        find_devtools_mcp()
    assert "npm install" in str(info.value) and "chrome-devtools-mcp" in str(info.value)
    with pytest.raises(DevtoolsMcpNotFound, match="npm install"):
        harvest(make_charter(site, charter_id="site_nomcp"), via="devtools-mcp")
    assert not site.requests  # nothing was fetched
    monkeypatch.delenv("BRT_DEVTOOLS_MCP")
    monkeypatch.setenv("PATH", str(tmp_path))  # no node, no npx
    with pytest.raises(DevtoolsMcpNotFound) as info:
        find_devtools_mcp()
    assert "Node.js" in str(info.value) and "npm install" in str(info.value)


@pytest.mark.browser
def test_via_devtools_mcp_stores_what_playwright_stores(local_site, make_charter, brt_home, embedder):
    site = local_site()
    _devtools_mcp_or_skip()
    via_mcp = harvest(make_charter(site, charter_id="site_devtools"), via="devtools-mcp")
    # Not one request reached the disallowed host (the redirect target, the tracker image): the allowlist is
    # enforced inside chrome-devtools-mcp's browser too (--allowedUrlPattern), not only on the final URL.
    assert not site.served("localhost", "/away.html")
    assert not site.served("localhost", "/tracker.png")
    plain = harvest(make_charter(site, charter_id="site_playwright"))

    got, want = outcomes(via_mcp), outcomes(plain)
    u = site.url
    for name in ("index.html", "a.html", "b.html", "js.html", "external.html"):
        assert got[u(name)][0] == "stored", got[u(name)]
    assert got[u("redirect-away")][0] == "blocked"
    assert "allowed_domains" in got[u("redirect-away")][1]
    assert got[u("missing.html")] == ("failed", "HTTP 404")
    assert got[u("picture.png")][0] == "skipped"
    # The same outcome for every HTML page as the Playwright path (PDFs: only Playwright extracts them).
    html_urls = {url for url in want if not url.endswith(".pdf")}
    assert {url: got[url][0] for url in html_urls} == {url: want[url][0] for url in html_urls}

    mem_mcp = open_memory(make_charter(site, charter_id="site_devtools"), create=False)
    mem_pw = open_memory(make_charter(site, charter_id="site_playwright"), create=False)
    pages_mcp = {p.url: p for p in mem_mcp.pages()}
    pages_pw = {p.url: p for p in mem_pw.pages() if not p.url.endswith(".pdf")}
    assert set(pages_mcp) == set(pages_pw)
    for url, p in pages_pw.items():  # the same extraction of the same rendered DOM
        assert pages_mcp[url].text == p.text, url
        assert pages_mcp[url].title == p.title
    assert "coloured lamps" in pages_mcp[u("js.html")].text  # script-rendered text is there
    assert via_mcp.har_path is None
    assert mem_mcp.search("lamp converted to electricity", k=1)[0].metadata["url"] == u("a.html")

    again = harvest(make_charter(site, charter_id="site_devtools"), via="devtools-mcp")
    assert again.counts()["stored"] == 0 and again.counts()["skipped"] >= 5


@pytest.mark.browser
def test_via_devtools_mcp_a_last_modified_header_is_no_page_date(local_site, make_charter, brt_home, embedder):
    site = local_site()
    _devtools_mcp_or_skip()
    charter = make_charter(site, charter_id="site_dated", seeds=[site.url("dated.html")], max_depth=0)
    report = harvest(charter, via="devtools-mcp")
    assert report.counts()["stored"] == 1
    stored = open_memory(charter, create=False).page(site.url("dated.html"))
    assert stored.text and (stored.last_updated, stored.last_updated_source) == (None, None)


@pytest.mark.browser
def test_network_log_tells_what_a_document_is_without_a_script_context(local_site):
    # When a document's script context never comes up (seen on loaded CI machines for an image and a 404),
    # the reader decides from chrome-devtools-mcp's network log that it would not read it anyway.
    site = local_site()
    _devtools_mcp_or_skip()

    async def responses() -> dict[str, object]:
        async with DevtoolsMcpBrowser(["127.0.0.1"], timeout_s=15) as browser:
            seen = {}
            for name in ("picture.png", "missing.html", "dated.html", "a.html"):
                assert (await browser.navigate(site.url(name), 15)).ok
                seen[name] = await browser.document_response()
            return seen

    seen = asyncio.run(responses())
    picture, missing, dated, a = (seen[n] for n in ("picture.png", "missing.html", "dated.html", "a.html"))
    assert picture.url == site.url("picture.png") and picture.status == 200
    assert picture.content_type == "image/png" and not picture.readable
    assert missing.status == 404 and not missing.readable
    assert a.readable and a.content_type == "text/html" and a.info()["status"] == 200
    assert dated.readable and dated.info()["url"] == site.url("dated.html")
    assert dated.info()["lastModifiedMs"] == pytest.approx(1727870400000, abs=86_400_000)  # 2024-10-02


def _user_cookie(endpoint: str, site_base: str, *, add: bool) -> list[dict]:
    """Add (or read) a cookie in the running browser's own default context, as the user's session would."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.connect_over_cdp(endpoint)
        context = browser.contexts[0]
        if add:
            context.add_cookies([{"name": "session", "value": "user-secret-cookie", "url": site_base}])
        cookies = context.cookies(site_base)
        browser.close()  # disconnects; the browser keeps running
    return cookies


@pytest.mark.browser
def test_browser_url_attaches_in_a_fresh_context(local_site, make_charter, brt_home, embedder, debug_chromium):
    site = local_site()
    endpoint, proc = debug_chromium
    site.write(
        "cookie.html",
        page(
            "Cookie check",
            "This page reports which cookies the visiting browser sent along with its request for the page.",
            body_extra=(
                "<script>document.addEventListener('DOMContentLoaded', function () {"
                " var p = document.createElement('p');"
                " p.textContent = 'The cookie jar of this visit holds: ' + (document.cookie || 'nothing') + '.';"
                " document.querySelector('article').appendChild(p); });</script>"
            ),
        ),
    )
    assert _user_cookie(endpoint, site.base, add=True)
    charter = make_charter(site,
        charter_id="site_attached",
        seeds=[site.url("cookie.html"), site.url("index.html"), site.url("redirect-away")],
        max_depth=0,
    )
    report = harvest(charter, browser_url=endpoint)
    got = outcomes(report)
    assert got[site.url("cookie.html")][0] == "stored"
    assert got[site.url("index.html")][0] == "stored"
    assert got[site.url("redirect-away")][0] == "blocked"
    text = open_memory(charter, create=False).page(site.url("cookie.html")).text
    assert "holds: nothing" in text and "user-secret-cookie" not in text
    assert report.har_path is not None and Path(report.har_path).is_file()  # recorded as on the launch path
    # The user's browser is still running, its own state untouched.
    assert proc.poll() is None
    assert any(c["value"] == "user-secret-cookie" for c in _user_cookie(endpoint, site.base, add=False))


@pytest.mark.browser
def test_browser_url_unreachable_is_a_clear_error(local_site, make_charter, brt_home):
    site = local_site()
    with pytest.raises(BrowserNotFound) as info:
        harvest(make_charter(site, charter_id="site_nobrowser"), browser_url="http://127.0.0.1:9")
    assert "--remote-debugging-port" in str(info.value)
