"""A local web server for the downloads-and-background-traffic tests (tests/test_background.py). It listens on
127.0.0.1 only (random port).

Endpoints (``srv.url(path)``):

    /page.html        a plain article page
    /attach.html      300 KB of random bytes, text/html with ``Content-Disposition: attachment`` (a download)
    /blob.bin         300 KB of other random bytes as application/octet-stream (a download)
    /sw.html          a page whose script calls navigator.serviceWorker.register('/sw.js') and writes the outcome
                      into the DOM; /sw.js is the worker script (counted, never expected)
    /ws.html?port=N   a page that opens ws://127.0.0.1:N/ and ws://localhost:N/ and writes each socket's fate into
                      the DOM; a slow image (/slow.png, 1.5 s) holds its load event while the sockets settle

``srv.payloads`` maps each download path to the bytes it serves; ``srv.hits(path)`` counts requests.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.sites import serve, stop_server
from tests.sites.misbehaving import LONG, html_page

PAYLOAD_BYTES = 300 * 1024

SW_SCRIPT = """
<script>
const out = document.getElementById('sw-outcome');
if (!('serviceWorker' in navigator)) {
  out.textContent = 'Service worker outcome: no serviceWorker API in this browser.';
} else {
  navigator.serviceWorker.register('/sw.js').then(
    (reg) => { out.textContent = 'Service worker outcome: register resolved with ' + String(reg) + '.'; },
    (err) => { out.textContent = 'Service worker outcome: register rejected with ' + String(err) + '.'; },
  );
}
</script>
"""

WS_SCRIPT = """
<script>
function probe(name, url) {
  const out = document.getElementById('ws-' + name);
  out.textContent = 'Socket ' + name + ' is connecting.';
  let ws;
  try { ws = new WebSocket(url); } catch (e) { out.textContent = 'Socket ' + name + ' threw ' + e; return; }
  ws.onopen = () => { out.textContent = 'Socket ' + name + ' opened.'; };
  ws.onmessage = (m) => { out.textContent = 'Socket ' + name + ' opened and received ' + m.data + '.'; };
  ws.onclose = (e) => { out.textContent += ' Socket ' + name + ' closed with code ' + e.code + '.'; };
}
probe('allowed', 'ws://127.0.0.1:PORT/');
probe('refused', 'ws://localhost:PORT/');
</script>
"""


def _article(title: str, text: str, outcomes: str, script: str) -> bytes:
    """A page whose article holds the paragraphs a script fills in (so the extracted text shows them)."""
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title></head><body>'
        f"<main><article><h1>{title}</h1><p>{text}</p>{outcomes}<p>{text}</p></article></main>{script}</body></html>"
    ).encode()


@dataclass
class BackgroundServer:
    port: int
    server: ThreadingHTTPServer
    payloads: dict[str, bytes] = field(default_factory=dict)
    counters: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)
    _thread: threading.Thread | None = None

    def url(self, path: str = "", host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}/" + path.lstrip("/")

    def hits(self, path: str) -> int:
        with self.lock:
            return self.counters[path]

    def stop(self) -> None:
        stop_server(self.server, self._thread)


def _handler(ref: dict[str, BackgroundServer]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

        def do_GET(self) -> None:  # noqa: N802
            srv = ref["srv"]
            path, _, query = self.path.partition("?")
            with srv.lock:
                srv.counters[path] += 1
            if path == "/robots.txt":
                return self._send(404, b"no", "text/plain")
            if path == "/page.html":
                return self._send(200, html_page("Plain page", LONG.format(name="plain")), "text/html")
            if path == "/attach.html":
                return self._send(
                    200,
                    srv.payloads[path],
                    "text/html",
                    {"Content-Disposition": 'attachment; filename="report.html"'},
                )
            if path == "/blob.bin":
                return self._send(200, srv.payloads[path], "application/octet-stream")
            if path == "/sw.html":
                outcome = '<p id="sw-outcome">Service worker outcome: script did not run.</p>'
                body = _article("Service worker page", LONG.format(name="service worker"), outcome, SW_SCRIPT)
                return self._send(200, body, "text/html")
            if path == "/sw.js":
                return self._send(200, b"self.addEventListener('fetch', () => {});", "text/javascript")
            if path == "/ws.html":
                port = dict(p.split("=", 1) for p in query.split("&") if "=" in p).get("port", "0")
                outcomes = (
                    '<p id="ws-allowed">Socket allowed: script did not run.</p>'
                    '<p id="ws-refused">Socket refused: script did not run.</p>'
                )
                script = WS_SCRIPT.replace("PORT", port) + '<img src="/slow.png" alt="">'
                body = _article("WebSocket page", LONG.format(name="websocket"), outcomes, script)
                return self._send(200, body, "text/html")
            if path == "/slow.png":
                time.sleep(1.5)
                return self._send(200, b"\x89PNG\r\n\x1a\n", "image/png")
            return self._send(404, b"<h1>missing</h1>", "text/html")

        def _send(self, status: int, body: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            try:
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass

    return Handler


def start_background_server() -> BackgroundServer:
    ref: dict[str, BackgroundServer] = {}
    server, thread = serve(_handler(ref), "site-background")
    srv = BackgroundServer(port=server.server_address[1], server=server, _thread=thread)  # type: ignore[arg-type]
    srv.payloads = {"/attach.html": os.urandom(PAYLOAD_BYTES), "/blob.bin": os.urandom(PAYLOAD_BYTES)}
    ref["srv"] = srv
    return srv


class DiskWatch:
    """Watches folders while a harvest runs (a thread polls every ``interval_s``) and after it: every file that
    appears, and every file whose bytes contain one of ``needles`` (raw or base64, as a HAR embeds bodies).
    Polling sees files that live at least one interval; the final :meth:`stop` scan sees what is left."""

    def __init__(self, roots: list[os.PathLike[str] | str], needles: dict[str, bytes], interval_s: float = 0.02):
        import base64

        self.roots = [os.fspath(r) for r in roots]
        self.needles: dict[str, bytes] = {}
        for name, data in needles.items():
            self.needles[f"{name} (raw)"] = data[4096:8192]
            self.needles[f"{name} (base64)"] = base64.b64encode(data)[6144:10240]
        self.interval_s = interval_s
        self.seen: dict[str, int] = {}  # path -> largest size seen
        self.found: dict[str, set[str]] = {}  # path -> needles found in it
        self._stamps: dict[str, tuple[int, int]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="disk-watch", daemon=True)

    def start(self) -> DiskWatch:
        self._scan()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self._scan()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._scan()

    def _scan(self) -> None:
        for root in self.roots:
            for folder, _dirs, files in os.walk(root):
                for name in files:
                    self._look(os.path.join(folder, name))

    def _look(self, path: str) -> None:
        try:
            st = os.stat(path)
        except OSError:
            return
        stamp = (st.st_size, st.st_mtime_ns)
        if self._stamps.get(path) == stamp:
            return
        self._stamps[path] = stamp
        self.seen[path] = max(self.seen.get(path, 0), st.st_size)
        if st.st_size < 4096:
            return
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            return
        hits = {name for name, needle in self.needles.items() if needle in data}
        if hits:
            self.found.setdefault(path, set()).update(hits)


class WriteWatch:
    """Linux inotify on a few folders (not recursive): the name of every file directly in them that was written
    to (IN_MODIFY: at least one byte), however briefly it lived. Unlike polling, nothing is missed."""

    IN_MODIFY = 0x2

    def __init__(self, folders: list[os.PathLike[str] | str]):
        import ctypes
        import ctypes.util

        self._libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        self._fd = self._libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self._fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1 failed")
        self._folders: dict[int, str] = {}
        for folder in folders:
            wd = self._libc.inotify_add_watch(self._fd, os.fsencode(os.fspath(folder)), self.IN_MODIFY)
            if wd < 0:
                raise OSError(ctypes.get_errno(), f"inotify_add_watch failed on {folder}")
            self._folders[wd] = os.fspath(folder)
        self.written: set[str] = set()  # paths of files written to
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="write-watch", daemon=True)

    def start(self) -> WriteWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self._drain()
        os.close(self._fd)

    def _run(self) -> None:
        import select

        while not self._stop.is_set():
            ready, _, _ = select.select([self._fd], [], [], 0.1)
            if ready:
                self._drain()

    def _drain(self) -> None:
        import struct

        while True:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                return
            offset = 0
            while offset + 16 <= len(data):
                wd, _mask, _cookie, length = struct.unpack_from("iIII", data, offset)
                name = data[offset + 16 : offset + 16 + length].rstrip(b"\0").decode("utf-8", "replace")
                offset += 16 + length
                if name:
                    self.written.add(os.path.join(self._folders.get(wd, "?"), name))
