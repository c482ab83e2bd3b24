"""The egress tests' servers: a **sentinel** on a second loopback address (127.0.0.2, standing for an internal
host) that counts every TCP connection it accepts and every UDP datagram it receives, whether or not an HTTP
request follows; and a **vector site** on 127.0.0.1 (reached as ``allowed.test``) with one page per way a page
can make the browser open a connection: subresource redirects, workers, beacons, WebRTC, navigations, downloads.

    sentinel = start_sentinel()
    site = start_vector_site(sentinel)
    site.url("v/fetch_redirect.html", host="allowed.test")
    sentinel.accepts, sentinel.datagrams, sentinel.requests   # (vector, request line) of what arrived

``db.allowed.test`` is on the allowlist by suffix but resolves to the sentinel (``EGRESS_RULES``): a request to
it must be refused for the address it resolves to, not for its name.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["EGRESS_RULES", "VECTORS", "Sentinel", "VectorSite", "start_sentinel", "start_vector_site"]

SENTINEL_HOST = "127.0.0.2"
#: allowed.test is the public site; db.allowed.test an allowed name that resolves to the internal host.
EGRESS_RULES = "MAP allowed.test 127.0.0.1, MAP db.allowed.test 127.0.0.2"

_TEXT = (
    "The {name} page of the harbour site tells of the quay, the lamps and the tides in enough plain words for "
    "the extractor to keep it as article text rather than navigation. "
)


@dataclass
class Sentinel:
    """TCP and UDP listeners on one internal address; every accept and datagram is counted."""

    tcp: socket.socket
    udp: socket.socket
    accepts: int = 0
    datagrams: int = 0
    requests: list[str] = field(default_factory=list)  # first line of each TCP connection that sent one
    lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)

    @property
    def port(self) -> int:
        return self.tcp.getsockname()[1]

    @property
    def udp_port(self) -> int:
        return self.udp.getsockname()[1]

    def url(self, path: str, host: str = SENTINEL_HOST) -> str:
        return f"http://{host}:{self.port}/{path.lstrip('/')}"

    def seen(self) -> dict[str, Any]:
        with self.lock:
            return {"accepts": self.accepts, "datagrams": self.datagrams, "requests": list(self.requests)}

    def stop(self) -> None:
        self._stop.set()
        for s in (self.tcp, self.udp):
            try:
                s.close()
            except OSError:
                pass


def _serve_tcp(sentinel: Sentinel) -> None:
    while not sentinel._stop.is_set():
        try:
            conn, _ = sentinel.tcp.accept()
        except OSError:
            return
        with sentinel.lock:
            sentinel.accepts += 1
        threading.Thread(target=_answer, args=(sentinel, conn), daemon=True).start()


def _answer(sentinel: Sentinel, conn: socket.socket) -> None:
    conn.settimeout(2)
    try:
        data = conn.recv(4096)
        if data:
            with sentinel.lock:
                sentinel.requests.append(data.split(b"\r\n", 1)[0].decode("latin-1"))
            body = b"INTERNAL-SENTINEL"
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nAccess-Control-Allow-Origin: *\r\n"
                b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body
            )
    except OSError:
        pass
    finally:
        conn.close()


def _serve_udp(sentinel: Sentinel) -> None:
    while not sentinel._stop.is_set():
        try:
            _data, _peer = sentinel.udp.recvfrom(4096)
        except OSError:
            return
        with sentinel.lock:
            sentinel.datagrams += 1


def start_sentinel(host: str = SENTINEL_HOST) -> Sentinel:
    """Listen on ``host`` (TCP and UDP, random ports); stop with ``sentinel.stop()``."""
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    tcp.bind((host, 0))
    tcp.listen(64)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind((host, 0))
    sentinel = Sentinel(tcp, udp)
    threading.Thread(target=_serve_tcp, args=(sentinel,), name="sentinel-tcp", daemon=True).start()
    threading.Thread(target=_serve_udp, args=(sentinel,), name="sentinel-udp", daemon=True).start()
    return sentinel


def _page(name: str, head: str = "", body: str = "") -> bytes:
    text = _TEXT.format(name=name) * 3
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{name}</title>{head}</head>'
        f"<body><main><article><h1>The {name} page</h1><p>{text}</p></article></main>{body}</body></html>"
    ).encode()


def _vectors(s: Sentinel) -> dict[str, tuple[dict[str, str], str, str]]:
    """name -> (response headers, head HTML, body HTML). ``/go/<name>`` on the site redirects (302) to the
    sentinel, ``/go307/<name>`` with a 307 (a POST keeps its body), ``/goname/<name>`` to the sentinel by an
    allowed name; ``T(name)`` is the sentinel itself and ``N(name)`` the sentinel by an allowed name
    (db.allowed.test)."""

    def T(name: str) -> str:  # noqa: N802
        return s.url(f"s/{name}")

    def N(name: str) -> str:  # noqa: N802
        return s.url(f"n/{name}", host="db.allowed.test")

    def js(code: str) -> str:
        return f"<script>{code}</script>"

    worker = "/js/worker.js?to="
    return {
        "fetch_redirect": ({}, "", js("fetch('/go/fetch_redirect').catch(()=>{});"
                                      "fetch('/goname/fetch_name').catch(()=>{});")),
        "fetch_307_post": ({}, "", js("fetch('/go307/fetch_307_post',{method:'POST',body:'secret=1'})"
                                      ".catch(()=>{});")),
        "script": ({}, '<script src="/go/script"></script>', ""),
        "css_import": ({}, '<style>@import url("/go/css_import");</style>', ""),
        "prefetch": ({}, f'<link rel="prefetch" href="/go/prefetch"><link rel="prefetch" href="{T("prefetch")}">'
                         f'<link rel="dns-prefetch" href="{T("dns")}"><link rel="preconnect" href="{T("pc")}">', ""),
        "modulepreload": ({}, '<link rel="modulepreload" href="/go/modulepreload">', ""),
        "link_header_preload": (
            {"Link": f'<{T("link_header")}>; rel=preload; as=fetch; crossorigin, '
                     '</go/link_header>; rel=preload; as=script, '
                     f'<{T("link_preconnect")}>; rel=preconnect'},
            "",
            "",
        ),
        "beacon": ({}, "", js("navigator.sendBeacon('/go/beacon','x');"
                              f"navigator.sendBeacon('{T('beacon')}','x');")),
        "eventsource": ({}, "", js("new EventSource('/go/eventsource');")),
        "worker_fetch": ({}, "", js(f"new Worker('{worker}{T('worker_fetch')}');new Worker('{worker}{N('worker')}');")),
        "keepalive_pagehide": ({}, "", js(
            f"addEventListener('pagehide',()=>{{fetch('{T('keepalive')}',{{method:'POST',body:'x',keepalive:true,"
            f"mode:'no-cors'}});}});addEventListener('visibilitychange',()=>{{fetch('{T('keepalive_vis')}',"
            "{keepalive:true,mode:'no-cors'});});")),
        "shared_worker": ({}, "", js(f"try{{new SharedWorker('{worker}{T('shared_worker')}')}}catch(e){{}}")),
        "worker_websocket": ({}, "", js(f"new Worker('/js/wsworker.js?to=ws://{SENTINEL_HOST}:{s.port}/ws');")),
        "webrtc": ({}, "", js(
            "try{const pc=new RTCPeerConnection({iceServers:["
            f"{{urls:'stun:{SENTINEL_HOST}:{s.udp_port}'}},"
            f"{{urls:'turn:{SENTINEL_HOST}:{s.port}?transport=tcp',username:'u',credential:'p'}},"
            f"{{urls:'turn:{SENTINEL_HOST}:{s.udp_port}?transport=udp',username:'u',credential:'p'}}]}});"
            "pc.createDataChannel('d');pc.createOffer().then(o=>pc.setLocalDescription(o));"
            "window.__pc=pc;}catch(e){}")),
        "meta_refresh": ({}, f'<meta http-equiv="refresh" content="0;url={T("meta_refresh")}">', ""),
        "refresh_header": ({"Refresh": f"0;url={T('refresh_header')}"}, "", ""),
        "location": ({}, "", js(f"setTimeout(()=>{{location='{T('location')}'}},50);")),
        "window_open": ({}, "", js(f"window.open('{T('window_open')}');window.open('/go/window_open_r');")),
        "form_post": ({}, "", f'<form id="f" method="post" action="{T("form_post")}"><input name="a" value="b">'
                              "</form>" + js("setTimeout(()=>document.getElementById('f').submit(),50);")),
        "iframe": ({}, "", f'<iframe src="{T("iframe")}"></iframe><iframe src="/go/iframe_r"></iframe>'),
        "object": ({}, "", f'<object data="{T("object")}"></object><embed src="{T("embed")}">'),
        "download": ({}, "", f'<a id="d" href="{T("download")}" download>d</a><a id="e" href="/go/download_r" '
                             'download>e</a>' + js("setTimeout(()=>{d.click();e.click();},50);")),
        "img_direct": ({}, "", f'<img src="{T("img")}"><img src="{N("img_name")}"><img src="/go/img_r">'),
    }


#: The vectors every egress test tries (names of the pages ``/v/<name>.html``).
VECTORS = (
    "fetch_redirect", "fetch_307_post", "script", "css_import", "prefetch", "modulepreload", "link_header_preload",
    "beacon", "eventsource", "worker_fetch", "keepalive_pagehide", "shared_worker", "worker_websocket", "webrtc",
    "meta_refresh", "refresh_header", "location", "window_open", "form_post", "iframe", "object", "download",
    "img_direct",
)


@dataclass
class VectorSite:
    server: ThreadingHTTPServer
    sentinel: Sentinel
    log: list[tuple[str, str, str]] = field(default_factory=list)  # (method, host header, path)
    lock: threading.Lock = field(default_factory=threading.Lock)
    accepts: int = 0  # TCP connections accepted (a replay must open none)

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    def url(self, path: str = "", host: str = "allowed.test") -> str:
        return f"http://{host}:{self.port}/{path.lstrip('/')}"

    def seeds(self, names: tuple[str, ...] = VECTORS) -> list[str]:
        return [self.url(f"v/{name}.html") for name in names]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


_Answer = tuple[int, bytes, str, dict[str, str]]
#: path prefix -> (status, where it redirects on the sentinel, with which host)
_REDIRECTS = {"/go/": (302, "r/", SENTINEL_HOST), "/go307/": (307, "r307/", SENTINEL_HOST),
              "/goname/": (302, "n/", "db.allowed.test")}


def _answer(vectors: dict[str, tuple[dict[str, str], str, str]], sentinel: Sentinel, target: str) -> _Answer:
    """(status, body, content type, headers) of the vector site for ``target`` (path and query)."""
    path, _, query = target.partition("?")
    name = path[3:-5]
    if path.startswith("/v/") and path.endswith(".html") and name in vectors:
        headers, head, body = vectors[name]
        return 200, _page(name, head, body), "text/html; charset=utf-8", headers
    for prefix, (status, under, host) in _REDIRECTS.items():
        if path.startswith(prefix):
            return status, b"", "text/plain", {"Location": sentinel.url(under + path[len(prefix):], host=host)}
    to = query.split("to=", 1)[-1]
    if path == "/js/worker.js":
        code = f"fetch('{to}',{{mode:'no-cors'}}).catch(()=>{{}});onconnect=()=>{{}};"
        return 200, code.encode(), "text/javascript", {}
    if path == "/js/wsworker.js":
        return 200, f"try{{new WebSocket('{to}')}}catch(e){{}}".encode(), "text/javascript", {}
    return 404, b"missing", "text/plain", {}


def start_vector_site(sentinel: Sentinel) -> VectorSite:
    """The vector pages on 127.0.0.1 (random port); stop with ``site.stop()``."""
    vectors = _vectors(sentinel)
    assert tuple(vectors) == VECTORS
    ref: dict[str, VectorSite] = {}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

        def do_GET(self) -> None:  # noqa: N802
            self._answer()

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            self._answer()

        def _answer(self) -> None:
            site = ref["site"]
            with site.lock:
                site.log.append((self.command, self.headers.get("Host", ""), self.path))
            self._send(*_answer(vectors, sentinel, self.path))

        def _send(self, status: int, body: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            try:
                self.wfile.write(body)
            except OSError:
                pass

    class CountingServer(ThreadingHTTPServer):
        daemon_threads = True

        def get_request(self) -> Any:
            conn = super().get_request()
            with ref["site"].lock:
                ref["site"].accepts += 1
            return conn

    server = CountingServer(("127.0.0.1", 0), Handler)
    ref["site"] = VectorSite(server, sentinel)
    threading.Thread(target=server.serve_forever, name="vector-site", daemon=True).start()
    return ref["site"]


def wait_quiet(sentinel: Sentinel, seconds: float = 2.0) -> dict[str, Any]:
    """What the sentinel saw, after ``seconds`` more for late connections (keepalive beacons, ICE)."""
    time.sleep(seconds)
    return sentinel.seen()
