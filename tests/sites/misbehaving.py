"""The ``misbehaving`` site (``local_site("misbehaving")``): a local web server for the harvest-hardening tests. It
listens on 127.0.0.1 only (random port); names such as ``evil.test`` reach it only
through Chromium's ``--host-resolver-rules`` mapping them to loopback.

Endpoints (``srv.url(path)``):

    /index.html            links to everything below (and to file:, data:, ftp:, javascript: URLs)
    /p.html?...            one page linked under several spellings of the same canonical URL
    /page/N.html           plain pages (N any integer) linking to page N+1 .. N+fanout (``srv.pages``)
    /flaky500              500 twice, then a page
    /always503             503 with Retry-After: 1, forever
    /e404, /e403           404 and 403
    /reset                 closes the connection without answering (a network error)
    /redirect-file|-data|-ftp|-js|-evil   302 to file:, data:, ftp:, javascript: and http://evil.test:PORT/
    /doc.pdf               a 2-page PDF with a ModDate; /bin.zip (application/zip)
    /private/secret.html   disallowed by robots.txt
    /robots.txt            ``srv.robots`` (text) or 404 when None

``srv.log`` lists (time, host header, path with query) of every request.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.sites import serve, stop_server

LONG = (
    "The {name} page describes the breakwater, the harbour lights and the tides in enough words for the "
    "extractor to keep it as readable article text rather than boilerplate navigation. "
)


def html_page(title: str, body: str, links: tuple[str, ...] = (), extra: str = "") -> bytes:
    nav = "".join(f'<li><a href="{h}">{h}</a></li>' for h in links)
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title></head><body>'
        f"<nav><ul>{nav}</ul></nav><main><article><h1>{title}</h1><p>{body}</p><p>{body}</p></article></main>"
        f"{extra}</body></html>"
    ).encode()


def make_pdf(pages: list[str], mod_date: str = "D:20240315120000Z", title: str = "Harbour report") -> bytes:
    """A small valid PDF with one text line per page (Helvetica), and Title/ModDate metadata."""
    objects: list[bytes] = []
    n = len(pages)
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(n))
    objects.append(b"<</Type/Catalog/Pages 2 0 R>>")
    objects.append(f"<</Type/Pages/Kids[{kids}]/Count {n}>>".encode())
    font_obj = 3 + 2 * n
    for i, text in enumerate(pages):
        safe = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        stream = f"BT /F1 10 Tf 20 700 Td ({safe}) Tj ET".encode()
        objects.append(
            f"<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]/Contents {4 + 2 * i} 0 R"
            f"/Resources<</Font<</F1 {font_obj} 0 R>>>>>>".encode()
        )
        objects.append(b"<</Length %d>>stream\n" % len(stream) + stream + b"\nendstream")
    objects.append(b"<</Type/Font/Subtype/Type1/BaseFont/Helvetica>>")
    info_obj = len(objects) + 1
    objects.append(f"<</Title({title})/ModDate({mod_date})>>".encode())
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, obj in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n".encode() + obj + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for off in offsets:
        out += f"{off:010d} 00000 n \n".encode()
    out += f"trailer<</Size {len(objects) + 1}/Root 1 0 R/Info {info_obj} 0 R>>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


PDF_PAGE_1 = (
    "Page one of the harbour report: the northern breakwater was extended by forty metres in 2023. "
    + " ".join(
        f"Breakwater block {i} was cast in concrete and placed by the floating crane in week {i + 3}."
        for i in range(18)
    )
)
PDF_PAGE_2 = (
    "Page two of the harbour report: dredging of the inner basin is planned for the spring of 2025. "
    + " ".join(
        f"Dredger shift {i} removes silt from berth {i + 11} and carries it to the offshore ground." for i in range(18)
    )
)


def _gzip_bomb(members: int = 100, member_bytes: int = 10_000_000) -> bytes:
    """About 1 MB of gzip that inflates to ``members * member_bytes`` (1 GB): concatenated gzip members (a
    valid gzip stream, RFC 1952) of spaces."""
    import gzip

    member = gzip.compress(b" " * member_bytes, compresslevel=9)
    return member * members


GZIP_BOMB = _gzip_bomb()
_LIMIT_PATHS = ("/never-answers", "/trickle", "/never-ending", "/huge", "/huge-stream", "/bomb")
NEVER_ENDING_TEXT = (
    "The live blog of the harbour festival keeps its connection open and adds a comment every moment. "
    + " ".join(f"Festival update {i}: boat {i} passed the lighthouse at {10 + i} minutes past noon." for i in range(20))
)


@dataclass
class BadServer:
    port: int
    server: ThreadingHTTPServer
    robots: str | None = "User-agent: *\nDisallow: /private/\n"
    fanout: int = 3
    pages: int = 0  # /page/N.html links only below this N (0: no page links)
    page_delay_s: float = 0.0
    bad_every: int = 0  # every Nth /page/ misbehaves (503 then OK, 500, 404, reset once, slow 2 s; see below)
    log: list[tuple[float, str, str]] = field(default_factory=list)
    counters: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    inflight: int = 0
    peak_inflight: int = 0  # most /page/ requests served at the same time
    sent: dict[str, int] = field(default_factory=dict)  # body bytes written per path (limit endpoints)
    stopping: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def url(self, path: str = "", host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}/" + path.lstrip("/")

    def hits(self, path: str, host_prefix: str | None = None) -> int:
        """Requests served for ``path`` (with its query; without one, any query matches)."""
        n = 0
        for _t, host, p in self.log:
            if host_prefix is not None and not host.startswith(host_prefix):
                continue
            if p == path or ("?" not in path and p.split("?", 1)[0] == path):
                n += 1
        return n

    def hosts(self) -> set[str]:
        return {h.split(":", 1)[0] for _t, h, _p in self.log}

    def stop(self) -> None:
        self.stopping.set()
        stop_server(self.server, self._thread)


def _index_links(port: int) -> tuple[str, ...]:
    return (
        "p.html?b=2&a=1",
        "p.html?a=1&b=2#section",
        f"HTTP://127.0.0.1:{port}/p.html?a=1&b=2",
        "flaky500",
        "always503",
        "e404",
        "e403",
        "reset",
        "redirect-file",
        "redirect-data",
        "redirect-ftp",
        "redirect-js",
        "redirect-evil",
        "doc.pdf",
        "bin.zip",
        "private/secret.html",
        "file:///etc/passwd",
        "data:text/html,<p>data</p>",
        f"ftp://127.0.0.1:{port}/file.txt",
        "javascript:alert(1)",
        f"http://evil.test:{port}/secret.html",
        f"http://test.evil.net:{port}/offsite.html",
        f"http://nottest:{port}/offsite.html",
    )


def _redirects(port: int) -> dict[str, str]:
    return {
        "/redirect-file": "file:///etc/passwd",
        "/redirect-data": "data:text/html,<p>data</p>",
        "/redirect-ftp": f"ftp://127.0.0.1:{port}/file.txt",
        "/redirect-js": "javascript:alert(1)",
        "/redirect-evil": f"http://evil.test:{port}/secret.html",
        "/redirect-ok": "/redirect-evil",  # an allowed hop first, then the internal one
    }


#: Fixed answers by path: status, body, content type, extra headers.
_FIXED: dict[str, tuple[int, bytes, str, dict[str, str]]] = {
    "/p.html": (200, html_page("Query page", LONG.format(name="query")), "text/html", {}),
    "/always503": (503, b"<h1>busy</h1>", "text/html", {"Retry-After": "1"}),
    "/e404": (404, b"<h1>missing</h1>", "text/html", {}),
    "/e403": (403, b"<h1>forbidden</h1>", "text/html", {}),
    "/doc.pdf": (200, make_pdf([PDF_PAGE_1, PDF_PAGE_2]), "application/pdf", {}),
    "/bin.zip": (200, b"PK\x03\x04" + b"\0" * 100, "application/zip", {}),
    **{
        secret: (200, html_page("Secret", "Internal text that must never be stored."), "text/html", {})
        for secret in ("/secret.html", "/private/secret.html", "/offsite.html")
    },
}


class _Handler(BaseHTTPRequestHandler):
    """The site's request handler; ``ref["srv"]`` is the ``BadServer`` it answers for."""

    protocol_version = "HTTP/1.0"
    ref: dict[str, BadServer] = {}

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def do_GET(self) -> None:  # noqa: N802
        srv = self.ref["srv"]
        full = self.path
        path = full.split("?", 1)[0]
        with srv.lock:
            srv.log.append((time.monotonic(), self.headers.get("Host", ""), full))
            srv.counters[path] = srv.counters.get(path, 0) + 1
            count = srv.counters[path]
        redirects = _redirects(srv.port)
        if path == "/robots.txt":
            if srv.robots is None:
                return self._send(404, b"no", "text/plain")
            return self._send(200, srv.robots.encode(), "text/plain")
        if path in ("/", "/index.html"):
            extra = f'<img src="http://evil.test:{srv.port}/pixel.png" alt="">'
            page = html_page("Index", LONG.format(name="index"), _index_links(srv.port), extra)
            return self._send(200, page, "text/html")
        if path.startswith("/page/") and path.endswith(".html"):
            return self._numbered_page(srv, path, count)
        if path == "/flaky500":
            if count <= 2:
                return self._send(500, b"<h1>oops</h1>", "text/html")
            return self._send(200, html_page("Flaky", LONG.format(name="flaky")), "text/html")
        if path == "/reset":
            return self._reset()
        if path in redirects:
            return self._send(302, b"", "text/html", {"Location": redirects[path]})
        if path in _LIMIT_PATHS:
            return self._limits(srv, path)
        return self._send(*_FIXED.get(path, (404, b"<h1>missing</h1>", "text/html", {})))

    def _reset(self) -> None:
        """Close the connection without an answer (a network error)."""
        self.close_connection = True
        try:
            self.connection.shutdown(2)
        except OSError:
            pass

    def _numbered_page(self, srv: BadServer, path: str, count: int) -> None:
        try:
            n = int(path[len("/page/") : -len(".html")])
        except ValueError:
            return self._send(404, b"no", "text/html")
        if srv.bad_every and n % srv.bad_every == srv.bad_every - 1 and self._misbehave(n // srv.bad_every % 5, count):
            return None
        with srv.lock:
            srv.inflight += 1
            srv.peak_inflight = max(srv.peak_inflight, srv.inflight)
        try:
            if srv.page_delay_s:
                time.sleep(srv.page_delay_s)
        finally:
            with srv.lock:
                srv.inflight -= 1
        kids = tuple(
            f"/page/{k}.html" for k in range(n * srv.fanout + 1, n * srv.fanout + srv.fanout + 1) if k < srv.pages
        )
        body = LONG.format(name=f"number {n}") + f"Unique fact {n}: the buoy {n} is painted in colour {n * 7}."
        return self._send(200, html_page(f"Page {n}", body, kids), "text/html")

    def _misbehave(self, mode: int, count: int) -> bool:
        """A bad page's way of misbehaving (503 then OK, 500, 404, reset once, slow 2 s); True when it answered
        (or hung up) instead of the page."""
        if mode == 0 and count == 1:
            self._send(503, b"busy", "text/html", {"Retry-After": "1"})
        elif mode == 1:
            self._send(500, b"broken", "text/html")
        elif mode == 2:
            self._send(404, b"gone", "text/html")
        elif mode == 3 and count == 1:
            self._reset()
        else:
            if mode == 4:
                time.sleep(2.0)
            return False
        return True

    def _limits(self, srv: BadServer, path: str) -> None:
        """Servers that never answer, trickle, never end, send too much, or send a gzip bomb. Each gives up
        after 60 s, or as soon as the client goes away."""
        until = time.monotonic() + 60

        def alive() -> bool:
            return time.monotonic() < until and not srv.stopping.is_set()

        def write(data: bytes) -> bool:
            try:
                self.wfile.write(data)
                self.wfile.flush()
            except OSError:
                return False
            with srv.lock:
                srv.sent[path] = srv.sent.get(path, 0) + len(data)
            return True

        if path == "/never-answers":
            while alive():
                time.sleep(0.1)
            return None
        if path == "/huge":
            return self._send(200, b"<html><body><p>" + b"x" * 5_000_000 + b"</p></body></html>", "text/html")
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        if path == "/bomb":
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(GZIP_BOMB)))
        self.end_headers()  # HTTP/1.0 and no length: the body ends when the connection closes
        _STREAMS[path](write, alive)
        return None

    def _send(self, status: int, body: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass


_Write = Callable[[bytes], bool]
_Alive = Callable[[], bool]


def _stream_bomb(write: _Write, alive: _Alive) -> None:
    write(GZIP_BOMB)


def _stream_huge(write: _Write, alive: _Alive) -> None:
    for _ in range(1600):  # 100 MB, no Content-Length to judge it by
        if not write(b"<p>" + b"y" * 65_530 + b"</p>"):
            break


def _stream_trickle(write: _Write, alive: _Alive) -> None:
    for byte in b"<html><body><p>Slowly, one byte at a time.</p></body></html>":
        if not alive() or not write(bytes([byte])):
            break
        time.sleep(1.0)


def _stream_never_ending(write: _Write, alive: _Alive) -> None:
    write(html_page("Live blog", NEVER_ENDING_TEXT).replace(b"</body></html>", b""))
    while alive() and write(b"<!-- still here -->\n"):
        time.sleep(0.2)


#: The bodies of the limit endpoints that answer with headers first (``write`` returns False once the client left).
_STREAMS: dict[str, Callable[[_Write, _Alive], None]] = {
    "/bomb": _stream_bomb,
    "/huge-stream": _stream_huge,
    "/trickle": _stream_trickle,
    "/never-ending": _stream_never_ending,
}


def _handler(ref: dict[str, BadServer]) -> type[BaseHTTPRequestHandler]:
    return type("Handler", (_Handler,), {"ref": ref})


def start_badserver(**options: Any) -> BadServer:
    ref: dict[str, BadServer] = {}
    server, thread = serve(_handler(ref), "site-misbehaving")
    srv = BadServer(port=server.server_address[1], server=server, _thread=thread, **options)  # type: ignore[arg-type]
    ref["srv"] = srv
    return srv


#: Chromium-style resolver rules: the made-up names used by the tests, all mapped to loopback.
RESOLVER_RULES = "MAP evil.test 127.0.0.1, MAP test.evil.net 127.0.0.1, MAP nottest 127.0.0.1"
