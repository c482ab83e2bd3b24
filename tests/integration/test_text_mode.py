"""Text mode (issue 13): a harvest with real Chromium aborts images, media and fonts before they are requested
(the server never sees them), keeps stylesheets, scripts and the script's fetch, stores the same text, and records
the aborted requests per type in the page's event, the report and the journaled summary. With
``block_resources: []`` (text mode off) the same page makes every request, which shows the test can fail."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from tests.sites import serve, stop_server

ARTICLE = (
    "The harbour's fog signal sounded twice a minute during the winter storms of 1911, and the keeper noted every "
    "hour of its use in the station's logbook, together with the visibility and the ships that passed the light. "
)
PAGE = f"""<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Fog signal</title>
<link rel="stylesheet" href="/style.css"><script src="/app.js"></script>
<style>@font-face {{ font-family: Inline; src: url(/inline.woff2) format("woff2"); }}
p {{ font-family: Inline, serif; }}</style></head>
<body><main><article><h1>The fog signal</h1><p>{ARTICLE}</p><p>{ARTICLE}</p>
<img src="/photo.png" alt="the signal house"><picture><img src="/lazy.jpg" loading="eager" alt=""></picture>
<video src="/clip.webm" preload="auto" muted></video><audio src="/horn.ogg" preload="auto"></audio>
</article></main>
<script>fetch("/data.json").then(r => r.text()).then(t => {{ document.title += " " + t.length; }});</script>
</body></html>"""
CSS = """@font-face { font-family: Heading; src: url(/heading.woff2) format("woff2"); }
h1 { font-family: Heading, sans-serif; } body { background: url(/paper.png); }"""
TYPES = {
    "/index.html": ("text/html; charset=utf-8", PAGE.encode()),
    "/style.css": ("text/css", CSS.encode()),
    "/app.js": ("text/javascript", b"window.appLoaded = true;"),
    "/data.json": ("application/json", b'{"tide": "high"}'),
    "/photo.png": ("image/png", b"\x89PNG\r\n\x1a\n" + b"\0" * 64),
    "/lazy.jpg": ("image/jpeg", b"\xff\xd8\xff" + b"\0" * 64),
    "/paper.png": ("image/png", b"\x89PNG\r\n\x1a\n" + b"\0" * 64),
    "/clip.webm": ("video/webm", b"\x1aE\xdf\xa3" + b"\0" * 64),
    "/horn.ogg": ("audio/ogg", b"OggS" + b"\0" * 64),
    "/inline.woff2": ("font/woff2", b"wOF2" + b"\0" * 64),
    "/heading.woff2": ("font/woff2", b"wOF2" + b"\0" * 64),
}
IMAGES = {"/photo.png", "/lazy.jpg", "/paper.png"}
MEDIA = {"/clip.webm", "/horn.ogg"}
FONTS = {"/inline.woff2", "/heading.woff2"}
KEPT = {"/index.html", "/style.css", "/app.js", "/data.json"}


class MediaSite:
    def __init__(self) -> None:
        self.log: list[str] = []
        lock = threading.Lock()
        log = self.log

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:  # noqa: N802
                path = self.path.split("?", 1)[0]
                with lock:
                    log.append(path)
                ctype, body = TYPES.get(path, ("text/plain", b""))
                self.send_response(200 if path in TYPES else 404)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                try:
                    self.wfile.write(body)
                except OSError:
                    pass

        self.server, self.thread = serve(Handler, "site-media")

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def stop(self) -> None:
        stop_server(self.server, self.thread)


@pytest.fixture
def media_site():
    site = MediaSite()
    try:
        yield site
    finally:
        site.stop()


def _harvest(make_charter: Any, site: MediaSite, charter_id: str, **harvest: Any) -> Any:
    from orchestrator.harvest import harvest as run_harvest

    site.log.clear()
    # text mode is the browser's: the page is rendered (``render: auto`` reads this article-sized page from its
    # served HTML, and then no subresource is requested at all)
    charter = make_charter([site.url("/index.html")], charter_id=charter_id, max_depth=0, render="always", **harvest)
    return run_harvest(charter)


@pytest.mark.browser
def test_text_mode_aborts_images_media_fonts_before_they_are_requested(media_site, make_charter, brt_home, embedder):
    from memory_store import Memory
    from orchestrator.config import memory_basepath
    from orchestrator.harvest.journal import last_summary

    # text mode off: the page really asks for every kind of resource (else this test could not fail)
    full = _harvest(make_charter, media_site, "text_mode_off", block_resources=[])
    requested_full = set(media_site.log)
    assert full.counts()["stored"] == 1, full.summary()
    assert KEPT | IMAGES | FONTS <= requested_full, sorted(requested_full)
    assert requested_full & MEDIA, sorted(requested_full)
    assert full.aborted_requests == {} and full.events[0]["aborted_requests"] == {}

    # text mode (the default): images, media and fonts never reach the server; CSS, JS and the fetch do
    report = _harvest(make_charter, media_site, "text_mode_on")
    requested = set(media_site.log)
    assert report.counts()["stored"] == 1, report.summary()
    assert KEPT <= requested, sorted(requested)
    assert not requested & (IMAGES | MEDIA | FONTS), sorted(requested)
    assert report.block_resources == ["font", "image", "media"]
    event = report.events[0]
    aborted = event["aborted_requests"]
    assert aborted.get("image", 0) >= 2 and aborted.get("font", 0) >= 1 and aborted.get("media", 0) >= 1, aborted
    assert report.aborted_requests == aborted
    assert set(aborted) <= {"image", "media", "font"}
    assert event["blocked_requests"] == []  # text mode is not the allowlist: nothing "blocked"

    # the same text was stored either way; the journaled summary counts what was aborted
    texts = []
    for cid in ("text_mode_off", "text_mode_on"):
        mem = Memory(cid, basepath=memory_basepath(), create=False)
        texts.append(sorted(h.text for h in mem.search("fog signal logbook", k=5)))
        if cid == "text_mode_on":
            assert last_summary(mem)["aborted_requests"] == aborted
    assert texts[0] == texts[1] and texts[0]

    # a charter may block more (stylesheets: then the CSS's background and font are never even discovered)
    more = _harvest(make_charter, media_site, "text_mode_css", block_resources=["image", "stylesheet"])
    requested = set(media_site.log)
    assert "/style.css" not in requested and "/heading.woff2" not in requested and "/paper.png" not in requested
    assert "/inline.woff2" in requested and "/app.js" in requested  # fonts allowed here
    assert more.events[0]["aborted_requests"].get("stylesheet") == 1
