"""Harvest end to end: real Chromium, real LanceDB, the real embedding model, a local site."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memory_store import Memory
from orchestrator.config import open_memory
from orchestrator.errors import HarvestBusy, HarvestError
from orchestrator.harvest import HarvestReport, harvest
from tests.sites.pages import page

pytestmark = pytest.mark.browser


def _by_url(report: HarvestReport) -> dict[str, dict]:
    return {e["url"]: e for e in report.events}


def _chunks(mem: Memory) -> list[dict]:
    return list(mem.chunks(include_vectors=False))


def test_harvest_local_site(local_site, make_charter, brt_home, embedder):
    site = local_site()
    charter = make_charter(site, max_depth=1)
    mem = open_memory(charter)
    report = harvest(charter, memory=mem)
    events = _by_url(report)
    u = site.url

    stored = {e["url"] for e in report.events if e["outcome"] == "stored"}
    assert stored == {
        u(n) for n in ("index.html", "a.html", "b.html", "a-copy.html", "js.html", "external.html")
    }
    assert report.pages_stored == 6 == mem.count_pages()
    assert report.counts() == {"stored": 6, "skipped": 2, "blocked": 1, "failed": 1}
    # depth 1 only: deep/c.html (linked from a.html) is not attempted; off-allowlist links never are
    assert u("deep/c.html") not in events
    assert not any("localhost" in url for url in events)
    assert events[u("index.html")]["depth"] == 0 and events[u("a.html")]["depth"] == 1

    # one event per URL, in the contract's shape
    assert len(report.events) == len(events)
    for e in report.events:
        assert e["type"] == "harvest_event"
        assert set(e) >= {
            "url",
            "final_url",
            "depth",
            "outcome",
            "reason",
            "status",
            "started_at",
            "timings",
            "chunks",
        }
        assert set(e["timings"]) == {"fetch_s", "extract_s", "store_s"}
    assert [e["url"] for e in mem.events() if e.get("type") == "harvest_event"] == [
        e["url"] for e in report.events
    ]

    # redirect to a host that is not allowed: blocked, nothing stored from it
    away = events[u("redirect-away")]
    assert away["outcome"] == "blocked"
    assert away["final_url"] == site.offsite_url("away.html")
    texts = " ".join(c["text"] for c in _chunks(mem))
    assert "Redirect target text" not in texts
    assert not any("localhost" in p.url for p in mem.pages())

    # non-HTML and HTTP errors
    assert events[u("doc.pdf")]["outcome"] == "skipped"
    assert events[u("doc.pdf")]["reason"].startswith("unreadable PDF")  # PDFs are read (tests/test_hardening.py)
    assert events[u("picture.png")]["reason"] == "unsupported content type (image/png)"
    assert events[u("missing.html")]["outcome"] == "failed"
    assert events[u("missing.html")]["reason"] == "HTTP 404" and events[u("missing.html")]["status"] == 404

    # script-inserted text is captured from the rendered DOM
    js = mem.page(u("js.html"))
    assert js is not None and "coloured lamps after sunset" in js.text
    assert "document.createElement" not in texts

    # render: auto (the default): the script page was rendered; a page without scripts was read from the HTML
    # brt fetched, so its subresources (one on a disallowed host) were never requested at all
    assert events[u("js.html")]["rendered"] is True and events[u("js.html")]["render"] == "auto"
    assert events[u("external.html")]["rendered"] is False and events[u("external.html")]["blocked_requests"] == []
    assert not site.served("localhost", "/tracker.png")

    # rendered, the subresource on the disallowed host is aborted before it leaves the browser
    always = make_charter(site, charter_id="always", seeds=[u("external.html")], max_depth=0, render="always")
    rendered = harvest(always)
    assert site.offsite_url("tracker.png") in rendered.blocked_requests
    assert not site.served("localhost", "/tracker.png")
    assert rendered.events[0]["blocked_requests"] == [site.offsite_url("tracker.png")]
    assert rendered.events[0]["rendered"] is True
    assert events[u("a.html")]["blocked_requests"] == []

    # a page repeated under two URLs is stored once, with also_seen_at
    shared = [c for c in _chunks(mem) if "northern rock" in c["text"]]
    assert len(shared) == 1
    assert {shared[0]["url"], *shared[0]["also_seen_at"]} == {u("a.html"), u("a-copy.html")}

    # page metadata and the HAR of what was read
    a = mem.page(u("a.html"))
    assert a.title == "Lighthouse" and a.selector == "body" and a.status == 200
    assert a.content_type == "text/html" and a.requested_url == u("a.html") and a.fetched_at
    assert report.har_path is not None and report.har_path.is_file()
    assert report.har_path.parent == mem.path / "har"
    har = json.loads(report.har_path.read_text())
    assert any(entry["request"]["url"] == u("a.html") for entry in har["log"]["entries"])
    assert report.chunks_total >= 6 and report.chunks_embedded >= 5
    assert report.to_json()["counts"] == report.counts()


def test_depth_limit_max_pages_and_selector(local_site, make_charter, brt_home, embedder):
    site = local_site()
    charter = make_charter(site,
        seeds=[site.url("a.html")], max_depth=2, selectors={"127.0.0.1": "article"}
    )
    report = harvest(charter)
    depths = {e["url"]: e["depth"] for e in report.events}
    assert depths == {
        site.url("a.html"): 0,
        site.url("deep/c.html"): 1,
        site.url("deep/d.html"): 2,
    }
    mem = open_memory(charter)
    assert mem.page(site.url("deep/d.html")).selector == "article"

    limited = make_charter(site, charter_id="limited", max_depth=1, max_pages=2, concurrency=1)
    report = harvest(limited)
    assert report.pages_stored == 2
    assert report.counts()["stored"] == 2
    assert open_memory(limited).count_pages() == 2
    assert report.not_attempted > 0


def test_edited_page_replaces_chunks_without_reembedding_others(local_site, make_charter, brt_home, embedder):
    site = local_site()
    charter = make_charter(site, seeds=[site.url("a.html"), site.url("b.html")], max_depth=0)
    mem = open_memory(charter)
    first = harvest(charter, memory=mem)
    assert first.pages_stored == 2

    # refresh=False: stored pages are not fetched again
    again = harvest(charter, memory=mem)
    assert again.counts()["skipped"] == 2 and again.chunks_embedded == 0

    from tests.sites.pages import page

    site.write(
        "b.html", page("Tides", "Neap tides in the harbour reach two metres since the new breakwater.")
    )
    before = embedder.texts_embedded
    second = harvest(charter, memory=mem, refresh=True)
    assert second.pages_stored == 1  # a.html is unchanged: not rendered again (test_refresh_... below)
    assert _by_url(second)[site.url("a.html")]["unchanged"] is True
    assert embedder.texts_embedded - before == 1 == second.chunks_embedded  # only the edited page's new chunk
    texts = [c["text"] for c in _chunks(mem)]
    assert not any("Spring tides" in t for t in texts)
    assert any("Neap tides" in t for t in texts)
    assert len(texts) == 2


def test_replay_works_with_the_server_down(local_site, make_charter, brt_home, embedder):
    site = local_site()
    charter = make_charter(site, max_depth=1)
    mem = open_memory(charter)
    live = harvest(charter, memory=mem)
    site.stop()

    # into a fresh store: every page rendered from the HAR, same outcomes as live
    fresh = make_charter(site, max_depth=1, charter_id="site_replayed")
    replayed = harvest(fresh, replay=live.har_path)
    assert {e["url"]: e["outcome"] for e in replayed.events} == {e["url"]: e["outcome"] for e in live.events}
    assert "coloured lamps" in open_memory(fresh).page(site.url("js.html")).text
    assert replayed.har_path != live.har_path and replayed.har_path.is_file()

    # a refresh of the live store from the same HAR: every stored page found unchanged, nothing embedded
    again = harvest(charter, memory=mem, replay=live.har_path, refresh=True)
    stored = {e["url"] for e in live.events if e["outcome"] == "stored"}
    assert {e["url"] for e in again.events if e.get("unchanged")} == stored
    assert again.chunks_embedded == 0 and again.pages_stored == 0

    # a URL missing from the HAR is aborted, never fetched
    missing = make_charter(site,
        charter_id="replay_missing", seeds=[site.url("deep/d.html")], max_depth=0
    )
    report = harvest(missing, replay=live.har_path)
    assert report.counts()["failed"] == 1
    assert "not in replay HAR" in report.events[0]["reason"]


def test_load_timeout_still_takes_the_dom_and_no_header_date(local_site, make_charter, brt_home, embedder):
    site = local_site()
    seeds = [site.url("slow.html"), site.url("dated.html")]
    charter = make_charter(site, seeds=seeds, max_depth=0, timeout_s=1.5)
    report = harvest(charter)
    assert report.counts()["stored"] == 2, report.events
    mem = open_memory(charter)
    assert "keeps the load event waiting" in mem.page(site.url("slow.html")).text
    dated = mem.page(site.url("dated.html"))
    assert dated.text and (dated.last_updated, dated.last_updated_source) == (None, None)  # a header is no date


def test_robots_txt_is_obeyed(local_site, make_charter, brt_home, embedder):
    site = local_site()
    site.write("robots.txt", "User-agent: *\nDisallow: /b.html\n")
    seeds = [site.url("a.html"), site.url("b.html")]
    report = harvest(make_charter(site, seeds=seeds, max_depth=0))
    outcomes = {e["url"]: (e["outcome"], e["reason"]) for e in report.events}
    assert outcomes[site.url("b.html")] == ("blocked", "blocked by robots.txt")
    assert outcomes[site.url("a.html")][0] == "stored"
    assert not site.served("127.0.0.1", "/b.html")

    ignoring = make_charter(site, charter_id="no_robots", seeds=seeds, max_depth=0, obey_robots=False)
    assert harvest(ignoring).counts()["stored"] == 2


def test_busy_store_and_bad_modes(local_site, make_charter, brt_home, tmp_path):
    site = local_site()
    charter = make_charter(site)
    holder = open_memory(charter)
    with holder.harvest_lock():
        with pytest.raises(HarvestBusy, match="being harvested"):
            harvest(charter, memory=open_memory(charter))
    # --browser-url and --via devtools-mcp work (tests/test_devtools.py); some combinations do not
    har = tmp_path / "x.har"
    har.write_text("{}")
    with pytest.raises(HarvestError, match="cannot be combined"):
        harvest(charter, browser_url="http://127.0.0.1:9222", replay=har)
    with pytest.raises(HarvestError, match="cannot be combined"):
        harvest(charter, via="devtools-mcp", replay=har)
    with pytest.raises(HarvestError, match="unknown --via"):
        harvest(charter, via="carrier-pigeon")


def test_script_navigation_after_load_keeps_the_page_as_loaded(local_site, make_charter, brt_home, embedder):
    """Consent walls and ad-block probes send the tab elsewhere after the load event; a refused navigation
    must not throw away the allowed page that had loaded (and the refused host gets no request)."""
    site = local_site()
    site.write(
        "late-nav.html",
        page(
            "Pilot boats",
            "The pilot boat meets every ship at the outer buoy and guides it through the narrow channel.",
            links=("b.html",),
            body_extra=(
                "<script>window.addEventListener('load', function () { setTimeout(function () {"
                f" location.href = '{site.offsite_url('away.html')}'; }}, 50); }});</script>"
            ),
        ),
    )
    charter = make_charter(site, seeds=[site.url("late-nav.html")], max_depth=1, charter_id="late_nav")
    report = harvest(charter)
    first = report.events[0]
    assert first["outcome"] == "stored", (first["reason"], first["final_url"])
    assert first["final_url"] == site.url("late-nav.html")
    mem = open_memory(charter, create=False)
    stored = mem.page(site.url("late-nav.html"))
    assert stored is not None and "outer buoy" in stored.text
    assert mem.has_page(site.url("b.html"))  # links of the page as loaded are still followed
    assert not site.served("localhost", "/away.html")


def _har_of(pages: dict[str, bytes]) -> dict:
    import base64

    entries = [
        {
            "startedDateTime": "2025-01-01T00:00:00.000Z", "time": 1,
            "request": {"method": "GET", "url": url, "httpVersion": "HTTP/1.1", "cookies": [], "headers": [],
                        "queryString": [], "headersSize": -1, "bodySize": 0},
            "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1", "cookies": [],
                         "headers": [{"name": "Content-Type", "value": "text/html; charset=utf-8"}],
                         "content": {"size": len(body), "mimeType": "text/html; charset=utf-8",
                                     "text": base64.b64encode(body).decode(), "encoding": "base64"},
                         "redirectURL": "", "headersSize": -1, "bodySize": len(body)},
            "cache": {}, "timings": {"send": 0, "wait": 1, "receive": 0},
        }
        for url, body in pages.items()
    ]
    return {"log": {"version": "1.2", "creator": {"name": "test", "version": "1"}, "pages": [], "entries": entries}}


def test_replay_keeps_a_page_whose_script_navigates_to_a_url_missing_from_the_har(
    make_charter, brt_home, embedder, tmp_path
):
    """Ad-block probes navigate to same-site URLs the HAR never recorded; the replay keeps the loaded page."""
    url = "http://127.0.0.1:9/probe.html"  # never contacted: everything comes from the HAR
    body = page(
        "Harbour cranes",
        "The two harbour cranes lift forty containers an hour when the wind stays below gale force.",
        body_extra="<script>window.addEventListener('load', function () { location.href = '/g00/probe?x=1'; });"
        "</script>",
    ).encode()
    har = tmp_path / "probe.har"
    har.write_text(json.dumps(_har_of({url: body})))
    charter = make_charter([url], charter_id="probe", title="Probe", goal=None, max_depth=0)
    report = harvest(charter, replay=har)
    event = report.events[0]
    assert event["outcome"] == "stored", (event["reason"], event["final_url"])
    stored = open_memory(charter, create=False).page(url)
    assert stored is not None and "forty containers" in stored.text


BLANKING = page(
    "Tide gauge",
    "The tide gauge at the north pier has logged the water level every six minutes since its float was "
    "replaced in the spring, and the harbour office publishes the readings each morning.",
    # an ad-block wall or a failed hydration: a script empties the page once it has loaded
    body_extra="<script>window.addEventListener('load', function () { document.body.innerHTML = '<div></div>'; "
    "});</script>",
).encode()


def test_a_page_whose_script_blanks_it_is_read_from_the_html_it_was_served(
    make_charter, brt_home, embedder, tmp_path
):
    """The rendered page has no readable text (a script emptied it after loading): the HTML the server sent is
    read instead, and the event records it (``text_from: served``). Before, the page was skipped ("no readable
    text") and its evidence lost: the replay of a news page whose anti-ad-block script blanks it."""
    from http.server import BaseHTTPRequestHandler

    from tests.sites import serve, stop_server

    # from a replay HAR
    url = "http://127.0.0.1:9/tide.html"  # never contacted: everything comes from the HAR
    har = tmp_path / "tide.har"
    har.write_text(json.dumps(_har_of({url: BLANKING})))
    charter = make_charter([url], charter_id="blank_replay", title="Tide", goal=None, max_depth=0)
    event = harvest(charter, replay=har).events[0]
    assert event["outcome"] == "stored", (event["reason"], event["final_url"])
    assert event["text_from"] == "served"
    stored = open_memory(charter, create=False).page(url)
    assert stored is not None and "every six minutes" in stored.text

    # from a live server (the document brt fetched itself)
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

        def do_GET(self) -> None:  # noqa: N802
            self.send_response(200 if self.path == "/tide.html" else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(BLANKING)))
            self.end_headers()
            self.wfile.write(BLANKING)

    server, thread = serve(Handler, "site-blanking")
    try:
        live = f"http://127.0.0.1:{server.server_address[1]}/tide.html"
        charter = make_charter([live], charter_id="blank_live", title="Tide", goal=None, max_depth=0)
        event = harvest(charter).events[0]
        assert event["outcome"] == "stored" and event["text_from"] == "served", (event["reason"], event)
        assert "every six minutes" in open_memory(charter, create=False).page(live).text
        # a page the script leaves alone is read as rendered, with no text_from
        charter = make_charter([url], charter_id="plain", title="Tide", goal=None, max_depth=0)
        har2 = tmp_path / "plain.har"
        har2.write_text(json.dumps(_har_of({url: BLANKING.replace(b"document.body.innerHTML", b"window.x")})))
        event = harvest(charter, replay=har2).events[0]
        assert event["outcome"] == "stored" and "text_from" not in event
    finally:
        stop_server(server, thread)


def test_refresh_renders_only_pages_whose_document_or_scripts_changed(local_site, make_charter, brt_home, embedder):
    """A refresh fetches each stored page's document and its scripts/XHR again without a browser; only a page
    whose inputs changed is rendered and stored again."""
    site = local_site()
    site.write(
        "feed.html",
        page(
            "Harbour feed",
            "The harbour feed page shows the latest notice, loaded by a script from a text file.",
            body_extra=f'<script src="feed.js"></script><script src="{site.offsite_url("ads.js")}"></script>',
        ),
    )
    site.write(
        "feed.js",
        "fetch('notice.txt').then(function (r) { return r.text(); }).then(function (t) {"
        " var p = document.createElement('p'); p.textContent = t;"
        " document.querySelector('article').appendChild(p); });",
    )
    site.write("notice.txt", "Notice one: the ferry to the island leaves from berth four this week.")
    seeds = [site.url(n) for n in ("a.html", "b.html", "feed.html")]
    charter = make_charter(site, seeds=seeds, max_depth=0)
    mem = open_memory(charter)
    first = harvest(charter, memory=mem)
    assert first.pages_stored == 3
    feed = _by_url(first)[site.url("feed.html")]
    deps = feed["fingerprint"]["deps"]
    assert set(deps) == {site.url("feed.js"), site.url("notice.txt"), site.offsite_url("ads.js")}
    assert deps[site.offsite_url("ads.js")] == [None, "refused"]  # off the allowlist: refused again next time
    assert "Notice one" in mem.page(site.url("feed.html")).text

    # nothing changed: no page rendered, nothing embedded, each input requested once (by the check)
    site.requests.clear()
    same = harvest(charter, memory=mem, refresh=True)
    events = _by_url(same)
    assert same.pages_stored == 0 and same.chunks_embedded == 0
    assert all(e["outcome"] == "skipped" and e.get("unchanged") for e in events.values()), events
    paths = [p for _h, p in site.requests if p != "/robots.txt"]
    assert sorted(paths) == ["/a.html", "/b.html", "/feed.html", "/feed.js", "/notice.txt"]

    # only the text the script fetches changes: that page is rendered again, the others are not
    site.write("notice.txt", "Notice two: the ferry to the island now leaves from berth seven.")
    before = embedder.texts_embedded
    changed = harvest(charter, memory=mem, refresh=True)
    events = _by_url(changed)
    assert events[site.url("feed.html")]["outcome"] == "stored"
    assert events[site.url("a.html")].get("unchanged") and events[site.url("b.html")].get("unchanged")
    text = mem.page(site.url("feed.html")).text
    assert "Notice two" in text and "Notice one" not in text
    assert embedder.texts_embedded - before == changed.chunks_embedded >= 1
    assert not any("Notice one" in c["text"] for c in _chunks(mem))

    # a refresh right after still finds everything unchanged (the new fingerprint was recorded)
    again = harvest(charter, memory=mem, refresh=True)
    assert again.pages_stored == 0 and again.counts()["skipped"] == 3
