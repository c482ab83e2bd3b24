"""Harvest hardening (issue 6): each numbered behaviour with its figure, against the local misbehaving site
(tests/sites/misbehaving.py). Traffic goes to 127.0.0.1 only: made-up names (evil.test, ...) reach it through
Chromium's --host-resolver-rules. The rules on their own (classifier, backoff, robots.txt, fetcher, ...):
tests/unit/test_harvest_rules.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from orchestrator.config import open_memory
from orchestrator.harvest import harvest

pytestmark = pytest.mark.browser

#: The charter of the misbehaving site's harvests (``make_charter`` options).
CHARTER = {
    "title": "Misbehaving site",
    "goal": None,
    "allowed": ("127.0.0.1", "test"),
    "charter_id": "hardening",
    "max_pages": 60,
    "max_depth": 1,
    "concurrency": 4,
    "timeout_s": 5,
}


# A second process writing to the charter's store (like `brt mcp`'s add_page beside a CLI harvest).
_PROCESS_WRITER = """
import json, sys, time
from pathlib import Path
from orchestrator.charter import parse_charter
from orchestrator.config import open_memory
charter = parse_charter(json.loads(sys.argv[1]))
stop = Path(sys.argv[2])
mem = open_memory(charter)
mem.embedder
i = 0
while not stop.exists() and i < 200:
    url = f"https://process-notes.test/n{i}"
    mem.add(url, f"Process note {i}: the tug boat {i} berthed at pier {i % 7} before the evening tide.")
    print(json.dumps({"url": url, "at": time.time()}), flush=True)
    i += 1
    time.sleep(0.3)
"""


def test_misbehaving_site(local_site, make_charter, brt_home, embedder):
    """Items 1, 2, 3, 5, 6, 11, 13, 14 in one harvest of the misbehaving server."""
    srv = local_site("misbehaving")
    charter = make_charter(srv, **CHARTER)
    mem = open_memory(charter)

    # (11) a second writer (like the MCP add_page) on the same store while the harvest runs
    other = open_memory(charter)
    added: list[str] = []

    def second_writer() -> None:
        time.sleep(1.0)
        for i in range(4):
            other.add(f"https://notes.test/n{i}", f"Note {i}: the harbour master logged visitor number {i * 13}.")
            added.append(f"https://notes.test/n{i}")

    t = threading.Thread(target=second_writer)
    t.start()
    # ... and a writer in another process, adding a note every 0.3 s until the harvest is over
    stop = Path(os.environ["BRT_HOME"]) / "stop-writer"
    writer = subprocess.Popen(
        [sys.executable, "-c", _PROCESS_WRITER, json.dumps(charter.model_dump(mode="json")), str(stop)],
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    began = time.time()
    report = harvest(charter, memory=mem)
    ended = time.time()
    stop.touch()
    out, _ = writer.communicate(timeout=120)
    t.join()
    process_writes = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    ev = {e["url"]: e for e in report.events}
    u = srv.url

    # (1) allowlist and schemes: 0 requests to non-allowed names; non-http links never attempted
    assert srv.hosts() == {"127.0.0.1"}
    assert not any(url.startswith(("file:", "data:", "ftp:", "javascript:")) for url in ev)
    assert not any("evil.net" in url or "nottest" in url for url in ev)
    for name in ("redirect-file", "redirect-data", "redirect-ftp", "redirect-js"):
        assert ev[u(name)]["outcome"] in ("blocked", "failed"), ev[u(name)]
        assert srv.hits("/" + name) == 1
    assert not any(p.url.startswith(("file:", "data:", "ftp:")) for p in mem.pages())

    # (2) SSRF: evil.test is on the allowlist by suffix but resolves to loopback: refused, 0 requests
    evil = ev[f"http://evil.test:{srv.port}/secret.html"]
    assert evil["outcome"] == "blocked" and evil["reason"].startswith("internal address (loopback 127.0.0.1)")
    assert ev[u("redirect-evil")]["outcome"] == "blocked"
    assert "internal address" in ev[u("redirect-evil")]["reason"]
    # the index (no scripts) was read from the HTML brt fetched: its subresources were never requested
    assert ev[u("index.html")]["rendered"] is False
    assert srv.hits("/secret.html") == 0 and srv.hits("/pixel.png") == 0

    # (3) robots.txt: blocked event, 0 page requests
    private = ev[u("private/secret.html")]
    assert (private["outcome"], private["reason"]) == ("blocked", "blocked by robots.txt")
    assert srv.hits("/private/secret.html") == 0

    # (5) retries: retryable statuses and network errors at most twice more; 403/404 never
    flaky = ev[u("flaky500")]
    assert flaky["outcome"] == "stored" and [a["status"] for a in flaky["attempts"]] == [500, 500, 200]
    assert srv.hits("/flaky500") == 3
    busy = ev[u("always503")]
    assert busy["outcome"] == "failed" and len(busy["attempts"]) == 3 and srv.hits("/always503") == 3
    assert all(a["retry_in_s"] >= 1.0 for a in busy["attempts"][:2])  # Retry-After: 1 honoured
    reset = ev[u("reset")]
    assert reset["outcome"] == "failed" and len(reset["attempts"]) == 3 and srv.hits("/reset") == 3
    for name, status in (("e404", 404), ("e403", 403)):
        assert ev[u(name)]["status"] == status and len(ev[u(name)]["attempts"]) == 1 and srv.hits("/" + name) == 1

    # (6) three spellings of one canonical URL: one event, one request, made with the first spelling as
    # written (a server may treat reordered query parameters as another resource)
    first_spelling = u("p.html?b=2&a=1")
    assert [url for url in ev if "/p.html" in url] == [first_spelling]
    assert srv.hits("/p.html") == 1 and srv.hits("/p.html?b=2&a=1") == 1

    # (13) the PDF is read: one page record, per-page selectors, date from its metadata; zip skipped
    pdf = mem.page(u("doc.pdf"))
    assert ev[u("doc.pdf")]["outcome"] == "stored" and pdf is not None
    assert pdf.content_type == "application/pdf" and pdf.last_updated == "2024-03-15"
    assert pdf.title == "Harbour report"
    selectors = {c["selector"] for c in mem.chunks(include_vectors=False) if c["url"] == u("doc.pdf")}
    assert {"pdf#page=1", "pdf#page=2"} <= selectors, selectors
    chunks = list(mem.chunks(include_vectors=False))
    assert {c["selector"] for c in chunks if "Breakwater block 0 " in c["text"]} == {"pdf#page=1"}
    assert {c["selector"] for c in chunks if "Dredger shift 17 " in c["text"]} == {"pdf#page=2"}
    assert ev[u("bin.zip")]["reason"] == "unsupported content type (application/zip)"

    # (14) summary table and journal written as events happen
    s = report.summary_table
    assert s["stored"] == report.counts()["stored"] == report.pages_stored
    assert s["failed"].get("HTTP 503") == 1 and s["blocked"].get("blocked by robots.txt") == 1
    assert s["retried_urls"] == 3 and s["retries"] == 6 and s["bytes"] > 0
    journal = [e for e in mem.events() if e.get("type") == "harvest_event"]
    assert [e["url"] for e in journal] == [e["url"] for e in report.events]
    assert any(e.get("type") == "harvest_summary" for e in mem.events())

    # (11) the other writers' rows are all there, including those written by the other process mid-harvest
    assert writer.returncode == 0
    assert len(added) == 4
    assert any(began < w["at"] < ended for w in process_writes), (began, ended, process_writes)
    urls = {p.url for p in mem.pages()}
    assert set(added) <= urls and {w["url"] for w in process_writes} <= urls
    assert mem.count_pages() == report.pages_stored + 4 + len(process_writes)

    result = mem.check()
    assert result.ok, result.problems

    # (2) rendered, every request of the page is checked: its subresource on evil.test is refused
    always = make_charter(srv, **dict(CHARTER, charter_id="hardening-rendered", max_depth=0, render="always"))
    rendered = harvest(always)
    assert rendered.events[0]["rendered"] is True
    assert f"http://evil.test:{srv.port}/pixel.png" in rendered.blocked_requests  # subresource, every request
    assert srv.hits("/pixel.png") == 0


def test_exact_allowlisted_internal_host_is_fetched(local_site, make_charter, brt_home, embedder):
    srv = local_site("misbehaving")
    charter = make_charter(
        [srv.url("p.html", host="evil.test")],
        **(CHARTER | {"allowed": ("evil.test",), "max_depth": 0, "charter_id": "local_on_purpose"}),
    )
    report = harvest(charter)
    assert report.counts()["stored"] == 1, report.events
    assert srv.hits("/p.html", host_prefix="evil.test") == 1


def test_crawl_delay_and_per_domain_cap(local_site, make_charter, brt_home, embedder):
    srv = local_site("misbehaving")
    # (3) Crawl-delay: 1 spaces the requests to the host by a second
    srv.robots = "User-agent: *\nCrawl-delay: 1\n"
    seeds = [srv.url(f"page/{n}.html") for n in (1, 2, 3)]
    report = harvest(make_charter(seeds, **(CHARTER | {"max_depth": 0, "charter_id": "crawl_delay"})))
    assert report.counts()["stored"] == 3
    starts = sorted(e["attempts"][0]["at"] for e in report.events)  # when each request was let go
    gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    assert len(starts) == 3 and min(gaps) >= 0.99, gaps
    arrivals = sorted(t for t, _h, p in srv.log if p.startswith("/page/"))
    assert len(arrivals) == 3 and arrivals[-1] - arrivals[0] >= 1.5  # as the server saw them (with jitter)

    # (4) per-domain cap: 6 tabs, but at most 2 requests at a time on one host
    srv.robots = None
    srv.page_delay_s = 0.4
    seeds = [srv.url(f"page/{n}.html") for n in range(10, 18)]
    report = harvest(make_charter(seeds, **(CHARTER | {"max_depth": 0, "concurrency": 6, "charter_id": "cap"})))
    assert report.counts()["stored"] == 8
    assert 1 <= srv.peak_inflight <= 2


def _brt(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", *args], env=env, capture_output=True, text=True, timeout=300
    )


def test_resume_after_kill_9_and_status_check(local_site, make_charter, brt_home, tmp_path):
    """(10) kill -9 mid-harvest, run again: nothing stored is fetched again, 0 duplicate chunks, 0 pages
    lost, the BFS continues from the stored pages' links; `brt status --check` verifies the store."""
    srv = local_site("misbehaving")
    srv.pages, srv.fanout, srv.page_delay_s = 40, 3, 0.15
    charter_file = make_charter(
        [srv.url("page/0.html")],
        path="resume.yaml",
        charter_id="resume",
        title="Resume test",
        goal=None,
        max_pages=500,
        max_depth=4,
        concurrency=2,
        timeout_s=5,
    ).source
    env = dict(os.environ, BRT_HOME=str(brt_home), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "orchestrator.cli", "harvest", str(charter_file)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    journal = brt_home / "memory" / "resume" / "events.jsonl"
    deadline = time.monotonic() + 240
    stored_before = 0
    while time.monotonic() < deadline and proc.poll() is None:
        if journal.exists():
            stored_before = journal.read_text().count('"outcome": "stored"')
            if stored_before >= 8:
                break
        time.sleep(0.1)
    assert proc.poll() is None, "the harvest ended before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)  # kill -9 of brt itself
    proc.wait()
    try:  # then whatever it started (its browser and driver), by the process group this test created
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass

    from memory_store import Memory

    mem = Memory("resume", basepath=brt_home / "memory")
    pages_after_kill = {p.url for p in mem.pages()}
    assert len(pages_after_kill) >= 8
    hits_before = {p: srv.hits(p) for p in (f"/page/{n}.html" for n in range(40))}

    done = _brt("harvest", str(charter_file), env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    mem = Memory("resume", basepath=brt_home / "memory")
    pages = {p.url for p in mem.pages()}
    assert pages_after_kill <= pages  # 0 stored pages lost
    assert pages == {srv.url(f"page/{n}.html") for n in range(40)}  # the BFS continued past stored pages
    for url in pages_after_kill:  # stored pages were not fetched again
        path = "/" + url.split("/", 3)[3]
        assert srv.hits(path) == hits_before[path], path
    ids = [c["id"] for c in mem.chunks(include_vectors=False)]
    assert len(ids) == len(set(ids))  # 0 duplicate chunks
    assert "stored" in done.stdout and "retried" in done.stdout  # the summary table

    check = _brt("status", str(charter_file), "--check", env=env)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "check:    ok" in check.stdout and "retried" in check.stdout

    # a broken store is reported (exit 1): a page listing a chunk that is not there
    store = mem._store
    victim = next(iter(mem.pages()))
    with mem.write_lock():
        store.delete("chunks", "id", victim.chunk_ids[:1])
    result = mem.check()
    assert not result.ok and any("missing" in p for p in result.problems)


def test_bounded_disk_after_ten_reharvests(local_site, make_charter, brt_home, embedder):
    """(12) 10 re-harvests (refresh) of one charter stay within 2x the size of the first harvest."""
    srv = local_site("misbehaving")
    srv.pages, srv.fanout = 6, 2
    charter = make_charter(
        [srv.url("page/0.html")], **(CHARTER | {"allowed": ("127.0.0.1",), "max_depth": 3, "charter_id": "disk"})
    )
    mem = open_memory(charter)
    harvest(charter, memory=mem)

    def lance_bytes() -> int:
        root = mem.path / "lance"
        return sum(f.stat().st_size for f in root.rglob("*") if f.is_file())

    fresh = lance_bytes()
    for _ in range(10):
        harvest(charter, memory=mem, refresh=True)
    after = lance_bytes()
    print(f"bounded disk: fresh {fresh} B, after 10 re-harvests {after} B ({after / fresh:.2f}x)")
    assert mem.count_pages() == 6
    assert after <= 2 * fresh, (fresh, after)


def test_limits_huge_gzip_bomb_trickle_never_answering_and_never_ending(
    local_site, make_charter, brt_home, embedder
):
    """(7) Per-page byte cap (also on a gzip bomb, with memory bounded), servers that never answer or trickle
    abandoned within timeout_s + 1 s, and a document that never ends yields its DOM at the timeout, while the
    rest of the harvest goes on."""
    import psutil

    srv = local_site("misbehaving")
    timeout_s = 4
    paths = ["never-answers", "trickle", "never-ending", "huge", "huge-stream", "bomb"]
    seeds = [srv.url(p) for p in paths] + [srv.url(f"page/{n}.html") for n in (1, 2)]
    charter = make_charter(
        seeds,
        **(
            CHARTER
            | {
                "max_depth": 0,
                "timeout_s": timeout_s,
                "max_page_bytes": 1_000_000,
                "concurrency": 4,
                "per_domain_concurrency": 8,
                "charter_id": "limits",
            }
        ),
    )
    # Documents are fetched and decoded in this process (orchestrator/harvest/net/fetcher.py), so the bomb would
    # show here; Chromium's processes are not summed (their shared pages would be counted many times over).
    me = psutil.Process()
    baseline = me.memory_info().rss
    peak = [baseline]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], me.memory_info().rss)
            time.sleep(0.02)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        report = harvest(charter)
    finally:
        done.set()
        sampler.join()
    ev = {e["url"]: e for e in report.events}
    u = srv.url
    growth_mb = (peak[0] - baseline) / 1e6
    print(f"\n[limits] peak RSS growth of this process during the harvest: {growth_mb:.0f} MB")

    # byte cap: announced length, streamed body, and a 1 MB gzip body that inflates to 1 GB
    for p in ("huge", "huge-stream", "bomb"):
        assert ev[u(p)]["outcome"] == "skipped", ev[u(p)]
        assert ev[u(p)]["reason"].startswith("too large"), ev[u(p)]
    assert srv.sent.get("/huge-stream", 0) < 30_000_000  # of 100 MB: the read stopped soon after the cap
    # inflating the bomb would add 1000 MB; the harvest's own first-use growth here is about 270 MB
    assert growth_mb < 600, growth_mb

    # abandoned within timeout_s + 1 s, each attempted once (a page's time budget is not retried)
    for p in ("never-answers", "trickle"):
        e = ev[u(p)]
        assert e["outcome"] == "failed" and e["reason"].startswith("timed out"), e
        assert len(e["attempts"]) == 1, e["attempts"]
        assert e["attempts"][0]["s"] <= timeout_s + 1, e["attempts"]

    # a document that never ends: its DOM as it stood at the timeout is stored
    e = ev[u("never-ending")]
    assert e["outcome"] == "stored", e
    assert e["partial"] and e["attempts"][0]["s"] <= timeout_s + 1, e
    text = open_memory(charter).page(u("never-ending")).text
    assert "Festival update 19: boat 19 passed the lighthouse" in text

    # the rest of the harvest went on
    assert ev[u("page/1.html")]["outcome"] == "stored" and ev[u("page/2.html")]["outcome"] == "stored"


