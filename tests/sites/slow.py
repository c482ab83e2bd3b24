"""A slow local site for the browser-crash tests (tests/test_crash.py): ``/index.html`` links to
``/page/0.html`` .. ``/page/{n-1}.html``, each page answering after ``delay_s`` so that several pages are in flight
at any moment, and to ``/file/0.txt`` .. ``/file/{files-1}.txt`` (text/plain: skipped, so the harvest replaces the
tab that read it). Listens on 127.0.0.1 only (random port); ``/robots.txt`` is a 404.

Helpers to find and kill this process's Chromium (psutil) are here too."""

from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import psutil

from tests.sites import serve, stop_server

BODY = (
    "Page {n} of the slow site describes the lighthouse keeper's log, the tide tables and the weather of day {n}, "
    "in enough words for the extractor to keep it as readable article text rather than boilerplate navigation. "
)


@dataclass
class SlowSite:
    server: ThreadingHTTPServer
    pages: int
    delay_s: float
    files: int = 0
    log: list[tuple[float, str]] = field(default_factory=list)  # (time.monotonic(), path) of every request
    lock: threading.Lock = field(default_factory=threading.Lock)

    def url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/{path.lstrip('/')}"

    def requests(self) -> int:
        with self.lock:
            return len(self.log)

    def page_hits(self) -> int:
        with self.lock:
            return sum(1 for _, path in self.log if path.startswith("/page/"))

    def stop(self) -> None:
        stop_server(self.server, None)


def _page(title: str, text: str, links: list[str]) -> bytes:
    nav = "".join(f'<li><a href="{h}">{h}</a></li>' for h in links)
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title></head><body>'
        f"<nav><ul>{nav}</ul></nav><main><article><h1>{title}</h1><p>{text}</p><p>{text}</p></article></main>"
        "</body></html>"
    ).encode()


def start_slow_site(pages: int = 20, delay_s: float = 1.0, files: int = 0) -> SlowSite:
    ref: dict[str, SlowSite] = {}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

        def do_GET(self) -> None:  # noqa: N802
            site = ref["site"]
            with site.lock:
                site.log.append((time.monotonic(), self.path))
            if self.path == "/index.html":
                links = [f"/page/{n}.html" for n in range(site.pages)]
                for n in reversed(range(site.files)):  # interleaved: a file after every few pages
                    links.insert(min(len(links), (n + 1) * max(1, site.pages // max(1, site.files))), f"/file/{n}.txt")
                body = _page("Slow site", BODY.format(n="index"), links)
                ctype = "text/html; charset=utf-8"
            elif self.path.startswith("/page/") and self.path.endswith(".html"):
                n = self.path[len("/page/") : -len(".html")]
                time.sleep(site.delay_s)
                body = _page(f"Slow page {n}", BODY.format(n=n), ["/index.html"])
                ctype = "text/html; charset=utf-8"
            elif self.path.startswith("/file/"):
                body, ctype = b"plain text, not a page", "text/plain"
            else:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            try:
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except OSError:  # the browser went away mid-answer
                pass

    server, _thread = serve(Handler, "site-slow")
    site = SlowSite(server, pages, delay_s, files)  # type: ignore[arg-type]
    ref["site"] = site
    return site


def chromium_processes() -> list[psutil.Process]:
    """The Chromium processes (browser, renderers, helpers) descended from this process."""
    out = []
    for child in psutil.Process().children(recursive=True):
        try:
            if "chrom" in child.name().lower() and child.status() != psutil.STATUS_ZOMBIE:
                out.append(child)
        except psutil.Error:
            pass
    return out


def browser_processes() -> list[psutil.Process]:
    """The main Chromium browser processes descended from this process (no ``--type=``: not a renderer, zygote,
    GPU or utility process)."""
    out = []
    for proc in chromium_processes():
        try:
            if not any(arg.startswith("--type=") for arg in proc.cmdline()):
                out.append(proc)
        except psutil.Error:
            pass
    return out


def kill_browser(proc: psutil.Process) -> bool:
    """SIGKILL ``proc``; False when it is gone already."""
    try:
        os.kill(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        return False
    return True
