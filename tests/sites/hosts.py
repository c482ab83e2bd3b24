"""A generated site spread over several host names (``h0.harbour.test`` .. ``h{k-1}.harbour.test``, all mapped to
127.0.0.1 with ``BRT_HOST_RESOLVER_RULES``), for harvests fanned out by host (the Ray tests and
``bench/ray_harvest.py``). One server answers for every host (by the Host header); pages are made on the fly.

Layout::

    h0/index.html (seed) -> every host's hub.html
    hN/hub.html          -> hN's article pages /p/<i>.html (page i lives on host i % k), and a few specials:
                            h0: /moved.html (301 to h0's first article), h1: /private/secret.html (disallowed by
                            h1's robots.txt), h2: /missing.html (404), h3: /picture.png (image/png)
    /p/<i>.html          -> the next article (on another host) and the host's hub

Each article has its own text (a few facts about one numbered pier of the harbour; every fifth is long enough
for two chunks); ``fact(i)`` is a sentence of page i, for evidence checks. ``delay_s`` delays every article.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.sites import serve, stop_server

DOMAIN = "harbour.test"
_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)
_CARGO = ["timber", "coal", "salt", "grain", "wool", "herring", "slate", "copper", "cider", "linen", "tea"]
_COLOURS = ["red", "green", "blue", "white", "black", "yellow", "grey", "orange"]
_SAINTS = ["Brendan", "Columba", "Piran", "Non", "David", "Petroc", "Aidan", "Ninian", "Kentigern", "Bride"]


def host(k: int) -> str:
    return f"h{k}.{DOMAIN}"


def resolver_rules(hosts: int) -> str:
    return ", ".join(f"MAP {host(k)} 127.0.0.1" for k in range(hosts))


def fact(i: int) -> str:
    """A sentence only page ``i`` holds."""
    return (
        f"Pier {i} was built in {1800 + (i * 7) % 190} to land {_CARGO[i % len(_CARGO)]}, and its lamp shows a "
        f"{_COLOURS[i % len(_COLOURS)]} light named after Saint {_SAINTS[i % len(_SAINTS)]}."
    )


def article_text(i: int) -> list[str]:
    paras = [
        fact(i),
        f"The harbour master inspects pier {i} every {2 + i % 5} weeks; in a gale the boats moored there shelter "
        f"behind the {_SAINTS[(i + 3) % len(_SAINTS)]} breakwater, which was lengthened after the storm of "
        f"{1850 + (i * 11) % 150}.",
        f"Records of pier {i} list {3 + i % 9} cranes, {10 + (i * 13) % 40} mooring rings and a stone stair "
        f"cut in {1700 + (i * 3) % 120} for the pilots who guide ships past the {_COLOURS[(i + 2) % 8]} buoy.",
    ]
    if i % 5 == 0:  # long enough for a second chunk
        for j in range(14):
            paras.append(
                f"Log entry {j} for pier {i}: the tide rose {1 + (i + j) % 4} metres, the keeper counted "
                f"{5 + (i * j) % 30} vessels carrying {_CARGO[(i + j) % len(_CARGO)]}, and the wind backed to "
                f"the {['north', 'east', 'south', 'west'][(i + j) % 4]} before the evening bell at the quay."
            )
    return paras


def _page(title: str, paragraphs: list[str], links: list[str]) -> bytes:
    nav = "".join(f'<li><a href="{h}">{h}</a></li>' for h in links)
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title></head><body>'
        f"<nav><ul>{nav}</ul></nav><main><article><h1>{title}</h1>{body}</article></main></body></html>"
    ).encode()


@dataclass
class HostsSite:
    server: Any
    pages: int
    hosts: int
    delay_s: float = 0.0
    log: list[tuple[str, str]] = field(default_factory=list)  # (host, path) of every request
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    def url(self, k: int, path: str) -> str:
        return f"http://{host(k)}:{self.port}/{path.lstrip('/')}"

    def article_url(self, i: int) -> str:
        return self.url(i % self.hosts, f"p/{i}.html")

    @property
    def seed(self) -> str:
        return self.url(0, "index.html")

    @property
    def allowed(self) -> list[str]:
        return [host(k) for k in range(self.hosts)]

    def article_hits(self) -> int:
        with self.lock:
            return sum(1 for _, p in self.log if p.startswith("/p/"))

    def stop(self) -> None:
        stop_server(self.server, None)


#: status, body, content type, extra headers
_Reply = tuple[int, bytes, str, dict[str, str]]
_NOT_FOUND: _Reply = (404, b"<html><body>not found</body></html>", "text/html", {})


def _article(s: HostsSite, k: int, path: str) -> _Reply | None:
    """Article ``/p/<i>.html`` when host ``k`` serves it (after ``delay_s``)."""
    try:
        i = int(path[3:-5])
    except ValueError:
        return None
    if not (0 <= i < s.pages and i % s.hosts == k):
        return None
    if s.delay_s:
        time.sleep(s.delay_s)
    links = [s.article_url((i + 1) % s.pages), s.url(k, "hub.html")]
    return 200, _page(f"Pier {i}", article_text(i), links), "text/html", {}


def _hub(s: HostsSite, k: int) -> _Reply:
    mine = [s.url(k, f"p/{i}.html") for i in range(s.pages) if i % s.hosts == k]
    extra = {0: ["moved.html"], 1: ["private/secret.html"], 2: ["missing.html"], 3: ["picture.png"]}
    links = mine + [s.url(k, e) for e in extra.get(k, [])]
    text = [f"Quay {k} of the harbour has {len(mine)} piers; each has a page of its own below."]
    return 200, _page(f"Quay {k}", text, links), "text/html", {}


def _special(s: HostsSite, k: int, path: str) -> _Reply | None:
    """The seed, robots.txt and the special pages of the layout above, or None."""
    if path == "/robots.txt":
        if k == 1:
            return 200, b"User-agent: *\nDisallow: /private/\n", "text/plain", {}
        return 404, b"", "text/plain", {}
    if path == "/index.html" and k == 0:
        links = [s.url(j, "hub.html") for j in range(s.hosts)]
        text = ["The harbour guide lists every pier, by quay, with its history and its light."]
        return 200, _page("Harbour guide", text, links), "text/html", {}
    if path == "/moved.html" and k == 0:
        return 301, b"", "text/html", {"Location": s.url(0, "p/0.html")}
    if path == "/picture.png":
        return 200, _PNG, "image/png", {}
    if path == "/private/secret.html" and k == 1:
        return 200, _page("Secret", ["Never to be read."], []), "text/html", {}
    return None


def _reply(s: HostsSite, name: str, path: str) -> _Reply:
    """What the site answers for ``path`` on host ``name``."""
    k = next((j for j in range(s.hosts) if host(j) == name), None)
    if k is None:
        return 404, b"unknown host", "text/plain", {}
    if path == "/hub.html":
        return _hub(s, k)
    if path.startswith("/p/") and path.endswith(".html"):
        return _article(s, k, path) or _NOT_FOUND
    return _special(s, k, path) or _NOT_FOUND


def start_hosts_site(pages: int = 60, hosts: int = 4, delay_s: float = 0.0) -> HostsSite:
    """Serve the site (``hosts`` >= 4 for every special page); stop it with ``site.stop()``."""
    site: dict[str, HostsSite] = {}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
            pass

        def do_GET(self) -> None:  # noqa: N802 - stdlib name
            s = site["s"]
            name = (self.headers.get("Host") or "").split(":")[0]
            path = self.path.split("?")[0]
            with s.lock:
                s.log.append((name, path))
            status, body, ctype, headers = _reply(s, name, path)
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(body)

    server, _thread = serve(Handler, "hosts-site")
    site["s"] = HostsSite(server, pages, hosts, delay_s)
    return site["s"]
