"""Static-first harvest (``harvest.render``): real Chromium, real LanceDB, the real model, local sites only.

``auto`` renders exactly the pages that need a browser (the JavaScript test site, ``tests/sites/js.py``), a page read
from its served HTML keeps every guarantee of a rendered one (its HAR entry is the document as served, a replay
serves it from the HAR, ``brt verify`` checks it, a refresh compares it), the same text gives the same chunks
whichever path a page took, and a script's navigation to an error document never becomes a page's text."""

from __future__ import annotations

import base64
import json
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from orchestrator.config import open_memory
from orchestrator.harvest import harvest
from tests.sites.js import GONE_TEXT, MARKERS, NEEDS_JS, STATIC
from tests.sites.slow import browser_processes

pytestmark = pytest.mark.browser


def _path(url: str) -> str:
    return urlsplit(url).path.lstrip("/")


def _events(report) -> dict[str, dict]:
    return {_path(e["url"]): e for e in report.events}


def test_auto_renders_exactly_the_pages_that_need_a_browser(local_site, make_charter, brt_home, embedder):
    site = local_site("js")
    charter = make_charter([site.url("")], charter_id="js_auto", max_depth=2)
    assert charter.harvest.render == "auto"  # the default
    mem = open_memory(charter)
    report = harvest(charter, memory=mem)
    events = _events(report)
    stored = {p for p, e in events.items() if e["outcome"] == "stored"}
    assert set(NEEDS_JS) | set(STATIC) <= stored, report.summary()

    # the decision, recorded per page: rendered exactly the pages that need a browser, each with its reasons
    assert {p for p, e in events.items() if e["rendered"]} == set(NEEDS_JS)
    assert all(e["render"] == "auto" and "render_signals" in e for e in events.values())
    assert all(events[p]["render_reasons"] for p in NEEDS_JS)
    assert not any(events[p].get("render_reasons") for p in STATIC)

    # what only a browser shows is stored, from the rendered DOM; nothing of the scripts themselves
    for path in NEEDS_JS:
        assert MARKERS[path] in mem.page(site.url(path)).text, path
    assert not any("createElement" in c["text"] for c in mem.chunks(include_vectors=False))

    # links come from the same HTML as the text: the app's routes exist only in its rendered DOM
    assert events["spa/harbour"]["depth"] == events["spa/tides"]["depth"] == 2

    # a page read from its served HTML never reached the browser: its scripts and pixel were never requested
    assert site.hits("/analytics.js") == site.hits("/embed.js") == site.hits("/pixel.gif") == 0
    # a rendered page's document was fetched once: the browser's navigation was answered from brt's fetch
    assert site.hits("/fetch.html") == site.hits("/script-text.html") == 1
    assert site.hits("/api/story.json") == site.hits("/story.js") == 1


class _Launches:
    """The browsers launched while it runs: the main Chromium processes under this process (Playwright launches
    them with ``--remote-debugging-pipe``), sampled every 20 ms. What shares that command line for a moment is
    not a browser: a launcher script's own shells, and a process the browser forked before it runs what it forks
    for (its parent is the browser)."""

    def __init__(self) -> None:
        self.before = {p.pid for p in browser_processes()}
        self.pids: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            for proc in browser_processes():
                try:
                    if proc.pid in self.before or "--remote-debugging-pipe" not in proc.cmdline():
                        continue
                    parent = proc.parent()
                    forked = parent is not None and "chrom" in parent.name().lower()
                    if Path(proc.exe()).name not in ("sh", "dash", "bash") and not forked:
                        self.pids.add(proc.pid)
                except Exception:  # noqa: BLE001 - gone meanwhile
                    pass

    def __enter__(self) -> _Launches:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def test_auto_starts_the_browser_only_for_a_page_that_must_be_rendered(local_site, make_charter, brt_home, embedder):
    """A site whose every page reads from its served HTML is harvested without launching Chromium at all (and
    its HAR still holds every document read); a site with pages that need a browser launches it once."""
    site = local_site()
    seeds = [site.url(p) for p in ("a.html", "b.html", "a-copy.html", "deep/c.html", "dated.html")]
    charter = make_charter(seeds, charter_id="lazy_static", max_depth=1)
    with _Launches() as launches:
        report = harvest(charter)
    stored = [e for e in report.events if e["outcome"] == "stored"]
    assert len(stored) >= 4 and not any(e["rendered"] for e in report.events), report.summary()
    assert report.browser_started is False and launches.pids == set()
    har = json.loads(report.har_path.read_text())
    recorded = {e["request"]["url"] for e in har["log"]["entries"]}
    assert {e["final_url"] for e in stored} <= recorded

    js = local_site("js")
    with _Launches() as launches:
        report = harvest(make_charter([js.url("")], charter_id="lazy_js", max_depth=2))
    rendered = {_path(e["url"]) for e in report.events if e["rendered"]}
    assert rendered == set(NEEDS_JS), report.summary()
    assert report.browser_started is True and report.browser_relaunches == 0
    assert len(launches.pids) == 1, launches.pids


def test_never_reads_every_page_as_served_and_always_renders_every_page(local_site, make_charter, brt_home, embedder):
    site = local_site("js")
    seeds = [site.url(p) for p in ("script-text.html", "inline.html", "promised.html", "article.html")]
    never = harvest(make_charter(seeds, charter_id="js_never", max_depth=0, render="never"))
    events = _events(never)
    assert not any(e["rendered"] for e in events.values()) and {e["render"] for e in events.values()} == {"never"}
    mem = open_memory(make_charter(seeds, charter_id="js_never", max_depth=0, render="never"))
    for path in ("inline.html", "promised.html"):  # stored, without what the scripts write
        assert events[path]["outcome"] == "stored" and MARKERS[path] not in mem.page(site.url(path)).text
    assert site.hits("/story.js") == 0

    always = harvest(make_charter(seeds, charter_id="js_always", max_depth=0, render="always"))
    assert all(e["rendered"] and e["render"] == "always" for e in always.events)
    mem = open_memory(make_charter(seeds, charter_id="js_always", max_depth=0, render="always"))
    for path in ("script-text.html", "inline.html", "promised.html"):
        assert MARKERS[path] in mem.page(site.url(path)).text


def test_the_same_text_gives_the_same_chunks_whichever_path(local_site, make_charter, brt_home, embedder):
    """A page rendered (always) and read as served (never, auto) gives the same text, hence the same chunk ids,
    and search finds the same evidence."""
    site = local_site()
    seeds = [site.url(n) for n in ("index.html", "a.html", "b.html", "deep/c.html", "dated.html")]
    stores = {}
    for mode in ("always", "never", "auto"):
        charter = make_charter(seeds, charter_id=f"chunks_{mode}", max_depth=0, render=mode)
        report = harvest(charter)
        assert report.pages_stored == len(seeds)
        assert {e["rendered"] for e in report.events} == {mode == "always"}
        stores[mode] = open_memory(charter)
    pages = {mode: {p.url: p for p in mem.pages()} for mode, mem in stores.items()}
    for url in map(str, seeds):
        texts = {mode: pages[mode][url].text for mode in stores}
        assert len(set(texts.values())) == 1, (url, texts)  # the same text on every path ...
        ids = {mode: tuple(pages[mode][url].chunk_ids) for mode in stores}
        assert len(set(ids.values())) == 1, (url, ids)  # ... gives the same chunks
        dates = {(pages[m][url].last_updated, pages[m][url].last_updated_source) for m in stores}
        assert len(dates) == 1, (url, dates)
    dated = pages["never"][site.url("dated.html")]  # Last-Modified is not a date the page states, on both paths
    assert (dated.last_updated, dated.last_updated_source) == (None, None)
    for query in ("When is the tide table published?", "How many boats are in the fishing fleet?"):
        found = {mode: [h.id for h in mem.search(query, k=3)] for mode, mem in stores.items()}
        assert len({tuple(v) for v in found.values()}) == 1, found


def test_a_static_pages_har_entry_is_the_document_as_served(local_site, make_charter, brt_home, embedder, tmp_path):
    """The HAR holds the document a static page was read from, byte for byte; a replay of it reads the page from
    the HAR on both paths without touching the server; the snapshot's page records say how each page was read,
    and ``brt verify`` checks static and rendered pages against the HAR alike."""
    from orchestrator.audit.verify import verify
    from orchestrator.clean import clean

    site = local_site("js")
    seeds = [site.url(p) for p in ("article.html", "fetch.html", "note.html")]
    charter = make_charter(seeds, charter_id="har_static", max_depth=0)
    report = harvest(charter)
    events = _events(report)
    assert (events["article.html"]["rendered"], events["fetch.html"]["rendered"]) == (False, True)
    har = json.loads(report.har_path.read_text())
    entries = [e for e in har["log"]["entries"] if e["request"]["url"] == site.url("article.html")]
    assert len(entries) == 1 and entries[0]["response"]["status"] == 200
    served = base64.b64decode(entries[0]["response"]["content"]["text"])
    from tests.sites.js import page_html

    assert served == page_html("article.html").encode()
    assert any(e["request"]["url"] == site.url("fetch.html") for e in har["log"]["entries"])

    # replayed from that HAR, with the server gone: the static page from its HAR entry, the other rendered
    site.stop()
    replayed = harvest(make_charter(seeds, charter_id="har_replay", max_depth=0), replay=report.har_path)
    again = _events(replayed)
    assert all(e["outcome"] == "stored" for e in again.values()), replayed.summary()
    assert (again["article.html"]["rendered"], again["fetch.html"]["rendered"]) == (False, True)
    mem = open_memory(make_charter(seeds, charter_id="har_replay", max_depth=0))
    assert MARKERS["fetch.html"] in mem.page(site.url("fetch.html")).text

    # the audit trail: page records say how the page was read; verify checks every body against the HAR
    result = clean(charter, snapshot=tmp_path / "snap.jsonl")
    records = [json.loads(line) for line in result.snapshot_path.read_text().splitlines()]
    pages = {_path(r["url"]): r for r in records if r["type"] == "page"}
    assert {p: (r["render"], r["rendered"]) for p, r in pages.items()} == {
        "article.html": ("auto", False), "fetch.html": ("auto", True), "note.html": ("auto", False)
    }
    verdict = verify(result.snapshot_path)
    assert verdict.ok, verdict.to_json()
    assert verdict.checked["fingerprints"] == 3 and verdict.checked["provenance"] == 3


def test_refresh_compares_a_static_pages_document_and_the_render_setting(local_site, make_charter, brt_home, embedder):
    site = local_site()
    seeds = [site.url("a.html"), site.url("b.html")]
    charter = make_charter(seeds, charter_id="refresh_static", max_depth=0)
    mem = open_memory(charter)
    first = harvest(charter, memory=mem)
    assert first.pages_stored == 2 and not any(e["rendered"] for e in first.events)
    assert all(e["fingerprint"]["deps"] == {} and e["fingerprint"]["render"] == "auto" for e in first.events)

    second = harvest(charter, memory=mem, refresh=True)
    assert all(e["unchanged"] for e in second.events) and second.chunks_embedded == 0

    from tests.sites.pages import page

    site.write("b.html", page("Tides", "Neap tides in the harbour reach two metres since the new breakwater."))
    third = harvest(charter, memory=mem, refresh=True)
    assert [e["url"] for e in third.events if e["outcome"] == "stored"] == [site.url("b.html")]
    assert "Neap tides" in mem.page(site.url("b.html")).text

    rendered = make_charter(seeds, charter_id="refresh_static", max_depth=0, render="always")
    fourth = harvest(rendered, memory=mem, refresh=True)  # another render setting: every page is read again
    assert all(e["outcome"] == "stored" and e["rendered"] for e in fourth.events), fourth.summary()
    assert fourth.chunks_embedded == 0  # the same text: nothing embedded again


@pytest.mark.parametrize("render", ["always", "auto"])
def test_a_script_navigation_to_an_error_page_is_never_stored(local_site, make_charter, brt_home, embedder, render):
    """A page's own script sends the tab to a same-host URL that answers 404: that navigation is held to the rules
    of brt's own, so the error document never becomes the page's text (the page is kept as it loaded); a replay
    of the harvest does the same."""
    site = local_site("js")
    seeds = [site.url("navigates.html"), site.url("navigates-late.html")]
    charter = make_charter(seeds, charter_id=f"nav_{render}", max_depth=0, render=render, timeout_s=10)
    mem = open_memory(charter)
    report = harvest(charter, memory=mem)
    for url in seeds:
        event = _events(report)[_path(url)]
        assert event["outcome"] == "stored" and event["final_url"] == url, event
        text = mem.page(url).text
        assert GONE_TEXT not in text and "The harbour office keeps the records" in text
    if render == "always":
        assert site.hits("/gone.html") >= 2  # brt fetched the error document itself, and kept it from the page
    assert not any(GONE_TEXT in c["text"] for c in mem.chunks(include_vectors=False))

    replayed = harvest(make_charter(seeds, charter_id=f"nav_{render}_replay", max_depth=0, render=render),
                       replay=report.har_path)
    replay_mem = open_memory(make_charter(seeds, charter_id=f"nav_{render}_replay", max_depth=0))
    for url in seeds:
        assert _events(replayed)[_path(url)]["outcome"] == "stored"
        assert GONE_TEXT not in replay_mem.page(url).text


def test_a_page_that_needs_the_browser_and_navigates_to_an_error_keeps_its_rendered_text(
    local_site, make_charter, brt_home, embedder
):
    """``auto`` renders a page whose text a script writes; when that script then sends the tab to a 404, the page
    is stored with the text it rendered, never the 404's."""
    site = local_site("js")
    url = site.url("writes-then-navigates.html")
    report = harvest(make_charter([url], charter_id="writes_nav", max_depth=0, timeout_s=10))
    event = report.events[0]
    assert event["outcome"] == "stored" and event["rendered"] is True and event["final_url"] == url, event
    text = open_memory(make_charter([url], charter_id="writes_nav", max_depth=0)).page(url).text
    assert MARKERS["script-text.html"] in text and GONE_TEXT not in text
