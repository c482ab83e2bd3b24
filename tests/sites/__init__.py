"""The local web sites the tests harvest: all on 127.0.0.1, each on a random port, started and stopped by the
``local_site`` fixture (tests/conftest.py).

- ``pages``: a small static site of articles, links, a redirect off the allowlist, a PDF, a slow image;
- ``misbehaving``: errors, retries, robots.txt, redirects to internal addresses, gzip bombs, trickles;
- ``background``: downloads, service workers, WebSockets;
- ``slow``: pages that answer after a delay (browser crashes mid-harvest);
- ``websocket``: a WebSocket echo server;
- ``js``: pages that need JavaScript to show their text (script-written text, a single-page app, a ``fetch()`` of
  JSON) and pages that do not, for ``harvest.render``.
"""

from __future__ import annotations

import socketserver
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["serve", "stop_server"]


def serve(
    handler: type[BaseHTTPRequestHandler] | type[socketserver.BaseRequestHandler],
    name: str,
    *,
    server_class: type[socketserver.TCPServer] = ThreadingHTTPServer,
) -> tuple[socketserver.TCPServer, threading.Thread]:
    """Start ``handler`` on 127.0.0.1 (random port) in a daemon thread; returns (server, thread)."""
    server = server_class(("127.0.0.1", 0), handler)
    server.daemon_threads = True  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, name=name, daemon=True)
    thread.start()
    return server, thread


def stop_server(server: socketserver.TCPServer, thread: threading.Thread | None) -> None:
    """Stop serving and close the socket."""
    server.shutdown()
    server.server_close()
    if thread is not None:
        thread.join(timeout=5)
