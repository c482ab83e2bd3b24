"""Harvest hardening (issue 6, item 8): downloads and background traffic. Navigations that trigger a download
write 0 bytes to disk; service workers are blocked; WebSockets to hosts not on the allowlist are blocked (and
every WebSocket with --replay). Real Chromium against local sites on 127.0.0.1 only (``local_site("background")``
for pages, ``local_site("websocket")`` for WebSockets); ``localhost`` is loopback too, so nothing leaves the
machine."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

import pytest

from orchestrator.config import open_memory
from orchestrator.harvest import harvest
from tests.sites.background import DiskWatch, WriteWatch

pytestmark = pytest.mark.browser


@pytest.fixture
def loopback_websockets(monkeypatch):
    """brt answers every navigation itself (netguard.route_navigation fulfils it), so Chromium does not know the
    page's address and treats it as public: its Local Network Access checks then refuse any WebSocket to a
    loopback or private address before brt's guard is asked. Lift that Chromium check for these tests, so that
    what they see is brt's own decision (allowlist and SSRF guard) on sockets to 127.0.0.1 and localhost."""
    import orchestrator.harvest.launch as browser

    monkeypatch.setattr(
        browser, "LAUNCH_ARGS", [*browser.LAUNCH_ARGS, "--disable-features=LocalNetworkAccessChecksWebSockets"]
    )


@pytest.fixture
def isolated_dirs(tmp_path, monkeypatch):
    """A temp dir (TMPDIR: Playwright's artifacts and profile folders, Chromium's temporary files) and a cwd of
    the test's own. TMPDIR must be short (Chromium puts Unix sockets there, whose paths are capped at 107
    bytes), so it is a fresh folder directly in the system temp dir, not under pytest's deep ``tmp_path``."""
    tmp = Path(tempfile.mkdtemp(prefix="brtbg-", dir=tempfile.gettempdir()))
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.chdir(cwd)
    try:
        yield tmp, cwd
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


#: The charter of these harvests (``make_charter`` options).
CHARTER = {"title": "Background traffic", "goal": None, "max_pages": 10, "max_depth": 0, "concurrency": 2}
#: ... for what the browser does with a page's scripts: the pages are article-sized as served, so ``render:
#: auto`` would read them from their HTML without running a script.
RENDERED = CHARTER | {"render": "always"}


def _downloads_dir() -> Path | None:
    path = Path.home() / "Downloads"
    return path if path.is_dir() else None


def _run_watched(srv, charter, tmp_path: Path, tmp: Path, cwd: Path):
    downloads = _downloads_dir()
    before = set(downloads.iterdir()) if downloads else set()
    disk = DiskWatch([tmp_path, tmp] + ([downloads] if downloads else []), srv.payloads, interval_s=0.01).start()
    writes = WriteWatch([tmp, cwd] + ([downloads] if downloads else [])).start()
    try:
        report = harvest(charter)
    finally:
        writes.stop()
        disk.stop()
    after = set(downloads.iterdir()) if downloads else set()
    return report, disk, writes, after - before


# -- unit ----------------------------------------------------------------------------------------------------


# -- end to end ----------------------------------------------------------------------------------------------


def test_download_navigations_write_zero_bytes(local_site, make_charter, brt_home, embedder, isolated_dirs, tmp_path):
    """A seed answered with Content-Disposition: attachment and one with application/octet-stream (300 KB of
    random bytes each): skipped as downloads, the harvest goes on, and not one byte of either reaches a file
    (Playwright's artifacts and profile folders, Chromium's temporary files, BRT_HOME with its HAR, the cwd,
    ~/Downloads)."""
    bgserver = local_site("background")
    srv = bgserver
    tmp, cwd = isolated_dirs
    charter = make_charter(
        [srv.url("attach.html"), srv.url("blob.bin"), srv.url("page.html")], charter_id="downloads", **CHARTER
    )
    mem = open_memory(charter)
    report, disk, writes, new_downloads = _run_watched(srv, charter, tmp_path, tmp, cwd)
    ev = {e["url"]: e for e in report.events}

    attach, blob = ev[srv.url("attach.html")], ev[srv.url("blob.bin")]
    assert (attach["outcome"], attach["reason"]) == ("skipped", "unsupported content type (download)"), attach
    assert blob["outcome"] == "skipped" and blob["reason"].startswith("unsupported content type ("), blob
    assert blob["reason"] in (
        "unsupported content type (download)",
        "unsupported content type (application/octet-stream)",
    )
    assert srv.hits("/attach.html") == 1 and srv.hits("/blob.bin") == 1
    # the rest of the harvest goes on
    assert ev[srv.url("page.html")]["outcome"] == "stored"
    assert mem.page(srv.url("page.html")) is not None and report.pages_stored == 1

    # 0 bytes on disk: no file ever held the payloads (polled while the harvest ran, raw or base64 as in a HAR)
    chromium_temp = {p: size for p, size in disk.seen.items() if Path(p).parent == tmp and ".org.chromium." in p}
    print("download temp files Chromium created (path: largest size seen):", chromium_temp)
    assert all(size == 0 for size in chromium_temp.values()), chromium_temp
    assert disk.found == {}, disk.found
    # ... and no file directly in TMPDIR, the cwd or ~/Downloads was written to at all (inotify: not one byte)
    assert writes.written == set(), writes.written
    assert new_downloads == set()
    assert list(cwd.iterdir()) == []
    # Playwright's download folders hold nothing
    for folder in tmp.glob("playwright-artifacts-*"):
        assert [f for f in folder.rglob("*") if f.is_file()] == []


def test_download_bytes_reach_disk_without_withholding(
    local_site, make_charter, brt_home, embedder, isolated_dirs, tmp_path, monkeypatch
):
    """The control for the test above (and why orchestrator/downloads.py exists): when the body of a download
    reaches Chromium, Chromium writes it to a temporary file in TMPDIR although the context denies downloads."""
    bgserver = local_site("background")
    import orchestrator.harvest.downloads as downloads

    monkeypatch.setattr(downloads, "download_reason", lambda headers, head=None: None)
    srv = bgserver
    tmp, cwd = isolated_dirs
    charter = make_charter([srv.url("attach.html"), srv.url("blob.bin")], charter_id="downloads_control", **CHARTER)
    report, disk, writes, _new = _run_watched(srv, charter, tmp_path, tmp, cwd)
    assert {e["outcome"] for e in report.events} == {"skipped"}
    written = {p for p in writes.written if Path(p).name.startswith(".org.chromium.Chromium.")}
    print("without withholding, Chromium wrote to:", written, "payloads found in:", disk.found)
    assert written, writes.written


def test_service_worker_never_registered(local_site, make_charter, brt_home, embedder):
    bgserver = local_site("background")
    srv = bgserver
    charter = make_charter([srv.url("sw.html")], charter_id="service_workers", **RENDERED)
    mem = open_memory(charter)
    report = harvest(charter)
    event = report.events[0]
    assert event["outcome"] == "stored", event
    assert srv.hits("/sw.html") == 1
    assert srv.hits("/sw.js") == 0  # the worker script is never requested
    page = mem.page(srv.url("sw.html"))
    assert page is not None
    print("stored page says:", [line for line in page.text.splitlines() if "Service worker outcome" in line])
    assert "Service worker outcome: script did not run." not in page.text  # the script ran, and got nowhere


def test_websockets_only_to_allowed_hosts(local_site, make_charter, brt_home, embedder, loopback_websockets):
    """The charter allows 127.0.0.1 exactly: ws://127.0.0.1 connects, ws://localhost (same server, loopback)
    is closed before it reaches the server and listed in the page's event. With --replay no socket connects."""
    bgserver = local_site("background")
    wsserver = local_site("websocket")
    srv, ws = bgserver, wsserver
    url = srv.url(f"ws.html?port={ws.port}")
    charter = make_charter([url], charter_id="websockets", **RENDERED)
    mem = open_memory(charter)
    report = harvest(charter)
    event = report.events[0]
    assert event["outcome"] == "stored", event
    assert ws.count("127.0.0.1") == 1
    assert ws.count("localhost") == 0 and ws.total() == 1
    assert ws.url("localhost") in event["blocked_requests"], event["blocked_requests"]
    assert ws.url("127.0.0.1") not in event["blocked_requests"]
    text = mem.page(url).text
    assert "Socket allowed opened and received hello." in text, text
    assert "Socket refused" in text and "closed with code 1008" in text, text

    replayed = harvest(make_charter([url], charter_id="websockets_replay", **RENDERED), replay=report.har_path)
    event = replayed.events[0]
    assert event["outcome"] == "stored", event
    assert ws.total() == 1  # nothing new reached the server
    assert {ws.url("127.0.0.1"), ws.url("localhost")} <= set(event["blocked_requests"]), event


def test_websocket_refusals_are_recorded_as_websocket(local_site, tmp_path, monkeypatch, loopback_websockets):
    """The session records a refused socket as a BlockedRequest of resource type "websocket" on its page; the
    SSRF guard applies too (a name mapped to loopback is refused unless named exactly)."""
    bgserver = local_site("background")
    wsserver = local_site("websocket")
    from orchestrator.egress import EgressPolicy
    from orchestrator.harvest.readers.playwright import open_browser

    ws = wsserver
    monkeypatch.setenv("BRT_HOST_RESOLVER_RULES", "MAP evil.test 127.0.0.1")

    async def run():
        script = (
            "url => new Promise(done => { const s = new WebSocket(url);"
            " s.onmessage = m => done('message ' + m.data); s.onclose = e => done('closed ' + e.code); })"
        )
        allowed = EgressPolicy.for_run(["127.0.0.1", "test"])  # BRT_HOST_RESOLVER_RULES read now
        async with open_browser(allowed, har_path=tmp_path / "h.har") as session:
            page = await session.new_page()
            await page.goto(bgserver.url("page.html"))
            await asyncio.sleep(0.2)  # the page's own route is installed
            outcomes = [
                await page.evaluate(script, ws.url("127.0.0.1")),
                await page.evaluate(script, ws.url("localhost")),
                await page.evaluate(script, ws.url("evil.test")),
            ]
            return outcomes, list(session.blocked), page

    outcomes, blocked, page = asyncio.run(run())
    assert outcomes == ["message hello", "closed 1008", "closed 1008"], outcomes
    assert [(b.url, b.resource_type) for b in blocked] == [
        (ws.url("localhost"), "websocket"),
        (ws.url("evil.test"), "websocket"),
    ]
    assert blocked[0].reason == "not on allowed_domains"
    assert blocked[1].reason.startswith("internal address (loopback 127.0.0.1)")
    assert all(b.page is page and not b.navigation for b in blocked)
    assert ws.total() == 1 and ws.count("127.0.0.1") == 1
