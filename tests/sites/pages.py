"""The ``pages`` site (``local_site()``): a small static web site for harvest tests, served on 127.0.0.1 (random
port) from a temp folder, plus special endpoints.

Layout (``site.url(name)``)::

    index.html (seed) -> a.html, b.html, a-copy.html (same text as a.html), js.html, external.html,
                         redirect-away, doc.pdf, picture.png, missing.html (404),
                         http://localhost:PORT/offsite.html (filtered: not allowed)
    a.html -> deep/c.html -> deep/d.html
    b.html -> index.html

Special endpoints: ``/redirect-away`` (302 to the same server under ``localhost``, which the charter does not
allow), ``/doc.pdf`` (application/pdf), ``/picture.png`` (image/png), ``/dated.html`` (sends a Last-Modified
header), ``/slow.html`` (its image takes 4 s, delaying the load event), anything missing (404).
``site.requests`` logs (host header, path) of every request served.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.sites import serve, stop_server

SHARED_PARAGRAPH = (
    "The lighthouse keeper logs the weather every four hours and reports storms to the harbour master."
)

_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)
_PDF = (
    b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\n"
    b"trailer<</Root 1 0 R>>\n%%EOF\n"
)


def page(
    title: str, *paragraphs: str, links: tuple[str, ...] = (), head: str = "", body_extra: str = ""
) -> str:
    """A simple article page."""
    paras = "\n".join(f"<p>{p}</p>" for p in paragraphs)
    nav = "\n".join(f'<li><a href="{href}">{href}</a></li>' for href in links)
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>{head}</head>'
        f"<body><nav><ul>{nav}</ul></nav><main><article><h1>{title}</h1>\n{paras}\n</article></main>"
        f"{body_extra}</body></html>"
    )


def _default_files(port: int) -> dict[str, str]:
    lighthouse = page(
        "Lighthouse",
        "The lighthouse stands on the northern rock. Its lamp was converted to electricity in 1953 "
        "and it can be seen from twenty nautical miles away on a clear night.",
        SHARED_PARAGRAPH,
        links=("deep/c.html",),
    )
    return {
        "index.html": page(
            "Harbour index",
            "Welcome to the harbour site. It describes the lighthouse, the tides and the fishing fleet "
            "in some detail so that there is enough text for the extractor to work with.",
            "The harbour was rebuilt in 1920 after a great storm destroyed the old pier and the sheds.",
            links=(
                "a.html",
                "b.html",
                "a-copy.html",
                "js.html",
                "external.html",
                "redirect-away",
                "doc.pdf",
                "picture.png",
                "missing.html",
                f"http://localhost:{port}/offsite.html",
                "mailto:keeper@example.org",
                "#top",
            ),
        ),
        "a.html": lighthouse,
        "a-copy.html": lighthouse,  # the same article under a second URL (a print view)
        "b.html": page(
            "Tides",
            "Spring tides in the harbour reach six metres. The tide tables are published every January and "
            "posted on the door of the harbour office for the fishing crews.",
            SHARED_PARAGRAPH,
            links=("index.html",),
        ),
        "deep/c.html": page(
            "Fishing fleet",
            "The fishing fleet counts eleven boats. Most of them land mackerel and crab, and the catch is "
            "sold at the market hall every morning except on Sundays.",
            links=("d.html",),
        ),
        "deep/d.html": page(
            "Market hall",
            "The market hall opens at five in the morning. Buyers come from the inland towns by lorry.",
        ),
        "js.html": page(
            "Night signals",
            "This page loads part of its content with a script after the page has loaded in the browser.",
            body_extra=(
                '<div id="dynamic"></div><script>'
                "document.addEventListener('DOMContentLoaded', function () {"
                " var p = document.createElement('p');"
                " p.textContent = 'Signal flags are replaced by coloured lamps after sunset, says the "
                "rendered script paragraph.';"
                " document.querySelector('article').appendChild(p); });"
                "</script>"
            ),
        ),
        "external.html": page(
            "Harbour photos",
            "The photo archive holds pictures of the harbour from the last hundred years, sorted by decade.",
            body_extra=f'<img src="http://localhost:{port}/tracker.png" alt="tracker">',
        ),
        "slow.html": page(
            "Slow page",
            "This page's text is there at once, but an image keeps the load event waiting for seconds.",
            body_extra='<img src="slow.png" alt="slow">',
        ),
        "offsite.html": page("Offsite", "This page must never be stored because its host is not allowed."),
        "away.html": page("Away", "Redirect target text that must never be stored in the evidence store."),
        "dated.html": page(
            "Dated page",
            "A page without any date in its markup; the server sends a Last-Modified header all the same.",
        ),
    }


@dataclass
class LocalSite:
    """A running local site. ``host`` is 127.0.0.1; ``localhost`` on the same port is the disallowed twin."""

    root: Path
    port: int
    server: ThreadingHTTPServer
    requests: list[tuple[str, str]] = field(default_factory=list)
    _thread: threading.Thread | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def url(self, name: str = "") -> str:
        return self.base + name.lstrip("/")

    def offsite_url(self, name: str = "") -> str:
        return f"http://localhost:{self.port}/" + name.lstrip("/")

    def write(self, name: str, html: str) -> None:
        """Create or rewrite a page (between harvests)."""
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(html, encoding="utf-8")

    def served(self, host_prefix: str, path: str) -> bool:
        """Did the server answer a request for ``path`` with a Host header starting with ``host_prefix``?"""
        return any(h.startswith(host_prefix) and p == path for h, p in self.requests)

    def stop(self) -> None:
        stop_server(self.server, self._thread)


def _make_handler(site_ref: dict[str, LocalSite]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
            pass

        def do_GET(self) -> None:  # noqa: N802 - stdlib name
            site = site_ref["site"]
            path = self.path.split("?", 1)[0].split("#", 1)[0]
            site.requests.append((self.headers.get("Host", ""), path))
            if path == "/redirect-away":
                self._send(302, b"", "text/html", {"Location": site.offsite_url("away.html")})
            elif path == "/doc.pdf":
                self._send(200, _PDF, "application/pdf")
            elif path == "/slow.png":
                time.sleep(4)
                self._send(200, _PNG, "image/png")
            elif path in ("/picture.png", "/tracker.png"):
                self._send(200, _PNG, "image/png")
            else:
                name = "index.html" if path in ("", "/") else path.lstrip("/")
                file = (site.root / name).resolve()
                if site.root.resolve() not in file.parents or not file.is_file():
                    self._send(404, b"<html><body><h1>Not found</h1></body></html>", "text/html")
                    return
                extra = {}
                if name == "dated.html":
                    extra["Last-Modified"] = "Wed, 02 Oct 2024 10:00:00 GMT"
                self._send(200, file.read_bytes(), "text/html; charset=utf-8", extra)

        def _send(self, status: int, body: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            try:
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):  # the browser went away (e.g. slow.png)
                pass

    return Handler


def start_site(root: Path) -> LocalSite:
    """Start a site serving ``root`` (filled with the default pages) on a random port."""
    ref: dict[str, LocalSite] = {}
    server, thread = serve(_make_handler(ref), "site-pages")
    port = server.server_address[1]
    site = LocalSite(root=root, port=port, server=server, _thread=thread)  # type: ignore[arg-type]
    ref["site"] = site
    for name, html in _default_files(port).items():
        site.write(name, html)
    return site
