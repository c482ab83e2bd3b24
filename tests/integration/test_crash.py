"""Browser crash (issue 6, item 9): killing Chromium mid-harvest makes brt relaunch it (at most 3 times), retry only
the pages in flight, and finish with nothing stored twice; and a harvest leaves no Chromium process behind (no
renderer leak). Real Chromium, real LanceDB in a temp folder, the real model; a slow site on 127.0.0.1."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter

import psutil
import pytest

from orchestrator.config import open_memory
from orchestrator.errors import BrowserCrashed
from orchestrator.harvest import harvest
from orchestrator.harvest.crash import BROWSER_CRASHED, MAX_RELAUNCHES, PAGE_CRASHED
from orchestrator.harvest.har import har_files, merge_hars
from tests.sites.slow import browser_processes, chromium_processes, kill_browser

pytestmark = pytest.mark.browser


def _charter(make_charter, site, charter_id: str, *, max_pages=100, concurrency=4, per_domain=2):
    """The slow site's charter (``make_charter`` with this file's settings). Its pages are rendered (``render:
    always``): a crash concerns the browser, and ``render: auto`` reads these script-less pages without it."""
    return make_charter(
        site,
        charter_id=charter_id,
        title="Slow site",
        goal=None,
        memory={"use_concept_index": False},
        max_pages=max_pages,
        max_depth=1,
        concurrency=concurrency,
        per_domain_concurrency=per_domain,
        timeout_s=15,
        render="always",
    )


def _wait_for_baseline(baseline: int, timeout_s: float = 10.0) -> int:
    deadline = time.monotonic() + timeout_s
    n = len(chromium_processes())
    while n > baseline and time.monotonic() < deadline:
        time.sleep(0.2)
        n = len(chromium_processes())
    return n


class _Killer(threading.Thread):
    """Kills the harvest's browser ``times`` times: each time once a browser not killed before runs and the site
    has received ``after_hits`` page requests since it appeared (so pages are in flight in it)."""

    def __init__(self, site, times: int, after_hits: int):
        super().__init__(name="browser-killer", daemon=True)
        self.site, self.times, self.after_hits = site, times, after_hits
        self.killed: list[int] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while len(self.killed) < self.times and not self.stop.is_set():
            browser = next((p for p in browser_processes() if p.pid not in self.killed), None)
            try:
                starting = browser is not None and time.time() - browser.create_time() < 0.5
            except psutil.Error:  # gone meanwhile
                browser = None
            if browser is None or starting:
                time.sleep(0.05)
                continue
            hits = self.site.page_hits()
            while self.site.page_hits() < hits + self.after_hits and not self.stop.is_set():
                time.sleep(0.02)
            if self.stop.is_set():
                return
            if kill_browser(browser):
                self.killed.append(browser.pid)


def _stored_once(mem, run_events: list[dict]) -> None:
    pages = mem.pages()
    urls = [p.url for p in pages]
    assert len(urls) == len(set(urls))
    chunk_ids = [cid for p in pages for cid in p.chunk_ids]
    assert len(chunk_ids) == len(set(chunk_ids))
    stored = [e["url"] for e in run_events if e["outcome"] == "stored"]
    assert len(stored) == len(set(stored)) == len(pages)
    per_url = Counter(e["url"] for e in run_events)
    assert max(per_url.values()) == 1  # one event per URL attempted
    check = mem.check()
    assert check.ok, check.problems


def test_browser_killed_mid_harvest_is_relaunched_and_only_pages_in_flight_are_retried(
    local_site, make_charter, brt_home, embedder, tmp_path
):
    site = local_site("slow", pages=20, delay_s=1.0)
    baseline = len(chromium_processes())
    try:
        charter = _charter(make_charter, site, "crash_once")
        mem = open_memory(charter)
        killer = _Killer(site, times=1, after_hits=6)
        killer.start()
        report = harvest(charter, memory=mem)
        killer.stop.set()
        killer.join(5)
    finally:
        site.stop()
    assert len(killer.killed) == 1
    assert report.browser_relaunches == 1
    counts = report.counts()
    assert counts["stored"] == 21 and counts["failed"] == 0, report.summary()
    assert mem.count_pages() == 21
    _stored_once(mem, report.events)

    crashed = [e for e in report.events if any(a["reason"] == BROWSER_CRASHED for a in e["attempts"])]
    assert 1 <= len(crashed) <= 4  # concurrency 4: the pages in flight at the kill, nothing else
    for e in crashed:
        assert [a["attempt"] for a in e["attempts"]] == [1, 2]
        assert e["attempts"][0]["outcome"] == "failed" and e["attempts"][0]["error"]
        assert e["outcome"] == "stored"
    others = [e for e in report.events if e not in crashed]
    assert all(len(e["attempts"]) == 1 for e in others)
    # Pages handed to the writer before the crash were not fetched again: only the crashed ones were (their first
    # request may not have left the browser before it died).
    hits = Counter(path for _, path in site.log if path.startswith("/page/"))
    crashed_paths = {"/" + e["url"].split("/", 3)[3] for e in crashed}
    assert all(n == 1 for path, n in hits.items() if path not in crashed_paths), hits
    assert all(1 <= hits[path] <= 2 for path in crashed_paths), hits

    # One HAR per browser context; the crashed one is a placeholder that says it is incomplete.
    assert len(report.har_paths) == 2 and report.har_incomplete == report.har_paths[:1]
    lost = json.loads(report.har_paths[0].read_text())
    assert lost["log"]["comment"].startswith("incomplete:") and BROWSER_CRASHED in lost["log"]["comment"]
    second = json.loads(report.har_paths[1].read_text())
    assert second["log"]["entries"] and "comment" not in second["log"]
    merged = merge_hars(har_files(mem), tmp_path / "merged.har")  # what `brt clean` writes beside the snapshot
    assert merged is not None
    merged_log = json.loads(merged.read_text())["log"]
    assert len(merged_log["entries"]) >= len(second["log"]["entries"])
    assert "incomplete:" in merged_log.get("comment", "")

    # The killed browser's helpers and the relaunched browser are all gone after the harvest.
    assert _wait_for_baseline(baseline) == baseline


def test_browser_killed_four_times_stops_after_three_relaunches(local_site, make_charter, brt_home, embedder):
    site = local_site("slow", pages=80, delay_s=0.8)  # more than the harvest reaches before the 4th kill
    baseline = len(chromium_processes())
    try:
        charter = _charter(make_charter, site, "crash_often", concurrency=3)
        mem = open_memory(charter)
        killer = _Killer(site, times=MAX_RELAUNCHES + 1, after_hits=3)
        killer.start()
        with pytest.raises(BrowserCrashed) as info:
            harvest(charter, memory=mem)
        killer.stop.set()
        killer.join(5)
    finally:
        site.stop()
    assert len(killer.killed) == MAX_RELAUNCHES + 1
    assert f"after {MAX_RELAUNCHES} relaunches" in str(info.value)
    report = info.value.report
    assert report is not None and report.browser_relaunches == MAX_RELAUNCHES
    assert len(report.har_paths) == MAX_RELAUNCHES + 1 and report.har_incomplete == report.har_paths
    # Pages stored before the last crash stay stored, each once; every attempted URL's event is in the journal.
    journal = [e for e in mem.events() if e.get("type", "harvest_event") == "harvest_event"]
    assert sorted(e["url"] for e in journal) == sorted(e["url"] for e in report.events)
    _stored_once(mem, journal)
    assert report.pages_stored == mem.count_pages() > 0
    gave_up = [e for e in report.events if "not relaunched" in (e["reason"] or "")]
    assert gave_up and all(e["outcome"] == "failed" for e in gave_up)
    assert report.not_attempted > 0  # the rest of the frontier was not tried in a browser that is gone
    assert _wait_for_baseline(baseline) == baseline


def test_harvest_leaves_no_chromium_process_behind(local_site, make_charter, brt_home, embedder):
    """About 100 pages and 30 text files (each file skipped, so its tab is closed and replaced): the count of
    Chromium processes stays flat while tabs are opened and replaced, and is back to its baseline after the harvest
    (no renderer leak)."""
    site = local_site("slow", pages=100, delay_s=0.0, files=30)
    baseline = len(chromium_processes())
    samples: list[tuple[int, int]] = []  # (requests so far, Chromium processes)
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            samples.append((site.requests(), len(chromium_processes())))
            done.wait(0.25)

    sampler = threading.Thread(target=sample, daemon=True)
    try:
        charter = _charter(make_charter, site, "no_leak", max_pages=200, per_domain=4)
        mem = open_memory(charter)
        sampler.start()
        report = harvest(charter, memory=mem)
    finally:
        done.set()
        sampler.join(5)
        site.stop()
    assert report.counts()["stored"] == 101 and report.counts()["skipped"] == 30
    early = [n for hits, n in samples if 10 <= hits <= 50]
    late = [n for hits, n in samples if hits >= 90]
    assert early and late, samples
    assert max(late) <= max(early) + 2, samples  # does not grow with the number of pages
    assert _wait_for_baseline(baseline) == baseline


def test_renderer_killed_mid_harvest_replaces_the_page_without_a_relaunch(local_site, make_charter, brt_home, embedder):
    site = local_site("slow", pages=12, delay_s=1.0)
    killed: list[int] = []

    def kill_renderers() -> None:
        while site.page_hits() < 5:
            time.sleep(0.02)
        time.sleep(0.5)  # some tabs hold loaded pages now
        for proc in chromium_processes():
            try:
                if "--type=renderer" in " ".join(proc.cmdline()):
                    kill_browser(proc)  # SIGKILL: the renderers of the tabs; the browser lives on
                    killed.append(proc.pid)
            except Exception:  # noqa: BLE001 - a process gone meanwhile
                continue

    try:
        charter = _charter(make_charter, site, "renderer_crash")
        mem = open_memory(charter)
        killer = threading.Thread(target=kill_renderers, daemon=True)
        killer.start()
        report = harvest(charter, memory=mem)
        killer.join(5)
    finally:
        site.stop()
    assert killed
    assert report.browser_relaunches == 0 and len(report.har_paths) == 1 and not report.har_incomplete
    assert report.counts()["stored"] == 13, report.summary()
    _stored_once(mem, report.events)
    crashed = [e for e in report.events if any(a["reason"] == PAGE_CRASHED for a in e["attempts"])]
    assert crashed and all(len(e["attempts"]) == 2 and e["outcome"] == "stored" for e in crashed)


def test_attached_browser_that_goes_away_is_not_relaunched(
    local_site, make_charter, brt_home, embedder, debug_chromium
):
    endpoint, proc = debug_chromium
    site = local_site("slow", pages=12, delay_s=1.0)

    def kill_it() -> None:
        while site.page_hits() < 3:
            time.sleep(0.02)
        proc.kill()

    try:
        charter = _charter(make_charter, site, "attached_crash")
        mem = open_memory(charter)
        killer = threading.Thread(target=kill_it, daemon=True)
        killer.start()
        with pytest.raises(BrowserCrashed, match="--browser-url") as info:
            harvest(charter, memory=mem, browser_url=endpoint)
        killer.join(5)
    finally:
        site.stop()
    report = info.value.report
    assert report.browser_relaunches == 0
    failed = [e for e in report.events if e["outcome"] == "failed"]
    assert failed and all("not relaunched" in e["reason"] and "--browser-url" in e["reason"] for e in failed)
    assert all(e["attempts"][-1]["reason"] == BROWSER_CRASHED for e in failed)
    _stored_once(mem, [e for e in mem.events() if e.get("type", "harvest_event") == "harvest_event"])


def test_browser_that_cannot_be_relaunched_stops_the_harvest(local_site, make_charter, brt_home, embedder, monkeypatch):
    import orchestrator.harvest.readers.playwright.browser as browser_mod
    from orchestrator.errors import BrowserNotFound

    real_start = browser_mod._start_session
    starts: list[int] = []

    async def start_once(session):
        starts.append(1)
        if len(starts) > 1:
            raise BrowserNotFound("cannot launch the browser at /usr/bin/chromium: simulated")
        await real_start(session)

    monkeypatch.setattr(browser_mod, "_start_session", start_once)
    site = local_site("slow", pages=12, delay_s=1.0)
    baseline = len(chromium_processes())
    try:
        charter = _charter(make_charter, site, "no_relaunch")
        mem = open_memory(charter)
        killer = _Killer(site, times=1, after_hits=3)
        killer.start()
        with pytest.raises(BrowserCrashed, match="could not be relaunched") as info:
            harvest(charter, memory=mem)
        killer.join(5)
    finally:
        site.stop()
    report = info.value.report
    assert report.browser_relaunches == 0 and report.har_incomplete == report.har_paths and len(report.har_paths) == 1
    failed = [e for e in report.events if e["outcome"] == "failed"]
    assert failed and all("not relaunched" in e["reason"] for e in failed)
    _stored_once(mem, [e for e in mem.events() if e.get("type", "harvest_event") == "harvest_event"])
    assert _wait_for_baseline(baseline) == baseline


def test_browser_killed_before_the_first_tab_opens_is_relaunched(
    local_site, make_charter, brt_home, embedder, monkeypatch
):
    from orchestrator.harvest.readers.playwright.browser import BrowserSession

    site = local_site("slow", pages=5, delay_s=0.1)
    before = {p.pid for p in browser_processes()}
    killed: list[int] = []
    start = BrowserSession.start

    async def start_a_browser_that_dies(self):
        # The browser dies after launch (on the first page to render), before any tab of the harvest exists.
        started = await start(self)
        if started and not killed:
            browser = next(p for p in browser_processes() if p.pid not in before)
            assert kill_browser(browser)
            killed.append(browser.pid)
        return started

    monkeypatch.setattr(BrowserSession, "start", start_a_browser_that_dies)
    try:
        charter = _charter(make_charter, site, "crash_first_tab", concurrency=2)
        mem = open_memory(charter)
        report = harvest(charter, memory=mem)
    finally:
        site.stop()
    assert len(killed) == 1 and report.browser_relaunches == 1
    counts = report.counts()
    assert counts["stored"] == 6 and counts["failed"] == 0, report.summary()
    _stored_once(mem, report.events)
