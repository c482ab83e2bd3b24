"""A minimal WebSocket server for the background-traffic tests: the RFC 6455 opening handshake over
``socketserver`` on 127.0.0.1 (random port), one text frame "hello" to each client, then it holds the connection
until the client closes it (or a few seconds pass). ``srv.connections`` counts completed handshakes by the Host
header the client sent (``127.0.0.1:PORT``, ``localhost:PORT``, ...)."""

from __future__ import annotations

import base64
import hashlib
import socketserver
import threading
from collections import Counter
from dataclasses import dataclass, field

from tests.sites import serve, stop_server

_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455, section 1.3


@dataclass
class WSServer:
    port: int
    server: socketserver.ThreadingTCPServer
    connections: Counter[str] = field(default_factory=Counter)  # Host header -> completed handshakes
    lock: threading.Lock = field(default_factory=threading.Lock)
    _thread: threading.Thread | None = None

    def url(self, host: str = "127.0.0.1") -> str:
        return f"ws://{host}:{self.port}/"

    def count(self, host: str) -> int:
        """Handshakes whose Host header names ``host`` (any port)."""
        with self.lock:
            return sum(n for h, n in self.connections.items() if h.rsplit(":", 1)[0] == host)

    def total(self) -> int:
        with self.lock:
            return sum(self.connections.values())

    def stop(self) -> None:
        stop_server(self.server, self._thread)


def _frame(payload: bytes, opcode: int = 0x1) -> bytes:
    n = len(payload)
    if n < 126:
        head = bytes([0x80 | opcode, n])
    elif n < 1 << 16:
        head = bytes([0x80 | opcode, 126]) + n.to_bytes(2, "big")
    else:
        head = bytes([0x80 | opcode, 127]) + n.to_bytes(8, "big")
    return head + payload


def _handler(ref: dict[str, WSServer]) -> type[socketserver.StreamRequestHandler]:
    class Handler(socketserver.StreamRequestHandler):
        timeout = 10

        def handle(self) -> None:
            srv = ref["srv"]
            try:
                request_line = self.rfile.readline(8192)
                headers: dict[str, str] = {}
                while True:
                    line = self.rfile.readline(8192)
                    if line in (b"\r\n", b"\n", b""):
                        break
                    name, _, value = line.decode("latin-1").partition(":")
                    headers[name.strip().lower()] = value.strip()
                key = headers.get("sec-websocket-key")
                if not request_line.startswith(b"GET ") or headers.get("upgrade", "").lower() != "websocket" or not key:
                    self.wfile.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                    return
                accept = base64.b64encode(hashlib.sha1((key + _GUID).encode()).digest()).decode()
                self.wfile.write(
                    (
                        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        f"Sec-WebSocket-Accept: {accept}\r\n\r\n"
                    ).encode()
                )
                with srv.lock:
                    srv.connections[headers.get("host", "")] += 1
                self.wfile.write(_frame(b"hello"))
                self.wfile.flush()
                self.connection.settimeout(5)
                while self.connection.recv(4096):  # until the client closes (its frames are not read further)
                    pass
            except OSError:  # timeouts and resets included
                return

    return Handler


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def start_wsserver() -> WSServer:
    ref: dict[str, WSServer] = {}
    server, thread = serve(_handler(ref), "site-websocket", server_class=_Server)
    srv = WSServer(port=server.server_address[1], server=server, _thread=thread)  # type: ignore[arg-type]
    ref["srv"] = srv
    return srv
