"""Local servers for the security tests (the ``attack_servers`` fixture of tests/conftest.py): a public site on
127.0.0.1 whose answers a test sets per path, and an "internal" service on a second loopback address (127.0.0.2)
that must never be reached. Made-up names reach 127.0.0.1 through ``BRT_HOST_RESOLVER_RULES`` (Chromium and
brt's guard)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

INTERNAL_MARKER = "INTERNAL-METADATA-SECRET-7731"
ATTACK_RULES = "MAP allowed.test 127.0.0.1, MAP www.nytimes.com 127.0.0.1"

Answer = tuple[int, dict[str, str], bytes]


def page(title: str, body: str = "", links: tuple[str, ...] = (), head: str = "") -> bytes:
    text = (
        body
        or (
            f"The {title} page tells of the harbour, its lights and its tides in enough plain words for the "
            "extractor to keep it as article text rather than navigation. "
        )
        * 3
    )
    nav = "".join(f'<li><a href="{h}">link</a></li>' for h in links)
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>{head}</head>'
        f"<body><nav><ul>{nav}</ul></nav><main><article><h1>{title}</h1><p>{text}</p></article></main>"
        "</body></html>"
    ).encode()


@dataclass
class Server:
    host: str
    server: ThreadingHTTPServer
    routes: dict[str, Answer | Callable[[str], Answer]] = field(default_factory=dict)
    default: Answer | None = None
    log: list[tuple[float, str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    def url(self, path: str = "", host: str | None = None) -> str:
        return f"http://{host or self.host}:{self.port}/" + path.lstrip("/")

    def hits(self, prefix: str = "/") -> int:
        return sum(1 for _t, _h, p in self.log if p.startswith(prefix))

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _handler(ref: dict[str, Server]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

        def do_GET(self) -> None:  # noqa: N802
            srv = ref["srv"]
            with srv.lock:
                srv.log.append((time.monotonic(), self.headers.get("Host", ""), self.path))
            path = self.path.split("?", 1)[0]
            answer = srv.routes.get(path) or srv.default or (404, {"Content-Type": "text/plain"}, b"missing")
            if callable(answer):
                answer = answer(self.path)
            status, headers, body = answer
            self.send_response(status)
            headers = dict(headers)
            headers.setdefault("Content-Type", "text/html; charset=utf-8")
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                self.wfile.write(body)
            except OSError:
                pass

    return Handler


def start_server(host: str = "127.0.0.1") -> Server:
    ref: dict[str, Server] = {}
    server = ThreadingHTTPServer((host, 0), _handler(ref))
    server.daemon_threads = True
    srv = Server(host=host, server=server)
    ref["srv"] = srv
    threading.Thread(target=server.serve_forever, name=f"fixture-{host}", daemon=True).start()
    return srv
