"""Hostile pages for the bounded-work tests, served on 127.0.0.1 (reached as ``allowed.test``): pages whose
scripts make brt's own reads loop forever, a renderer that never yields, popups, pages of 50,000 and 200,000 links
(one built by its script), a page whose every subresource is a gzip bomb, a small
PDF that is slow to extract (and an ordinary one), and a page that rewrites its own URL to pose as another.

    site = start_hostile_site()
    site.url("href-loop.html")

Every page but the hostile part is ordinary article text, so a page read as it should be is stored.
"""

from __future__ import annotations

import functools
import io
import threading
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "HOSTILE_RULES",
    "HostileSite",
    "many_links",
    "report_pdf",
    "slow_pdf",
    "start_hostile_site",
    "text_bomb_pdf",
]

HOSTILE_RULES = "MAP allowed.test 127.0.0.1"

_TEXT = (
    "The {name} page of the harbour site tells of the quay, the lamps and the tides in enough plain words for "
    "the extractor to keep it as article text rather than navigation. "
)


def _page(name: str, *, head: str = "", body: str = "", links: tuple[str, ...] = (), text: str | None = None) -> bytes:
    nav = "".join(f'<li><a href="{h}">{h}</a></li>' for h in links)
    words = text if text is not None else _TEXT.format(name=name) * 3
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{name}</title>{head}</head><body>'
        f"<nav><ul>{nav}</ul></nav><main><article><h1>The {name} page</h1><p>{words}</p></article></main>"
        f"{body}</body></html>"
    ).encode()


def slow_pdf(pages: int = 30, lines: int = 100_000) -> bytes:
    """A small PDF (about 10 KB) whose pages all draw one compressed content stream of ``lines`` path
    operators: cheap to send, slow to extract (every page parses the whole stream)."""
    stream = b"BT /F1 10 Tf 20 700 Td (Harbour tide tables) Tj ET\n" + b"0 0 m 1 1 l 2 2 l h S\n" * lines
    return _pdf(stream, pages)


def text_bomb_pdf(words: int = 8_000_000) -> bytes:
    """A PDF of about 100 KB whose one page shows a compressed string of ``words`` words: extracting it takes
    hundreds of MB."""
    return _pdf(b"BT /F1 10 Tf 20 700 Td (" + b"harbour " * words + b") Tj ET", 1)


def _pdf(stream: bytes, pages: int) -> bytes:
    """A PDF whose ``pages`` pages all draw the content ``stream`` (compressed), in Helvetica."""
    data = zlib.compress(stream, 9)
    kids = " ".join(f"{4 + i} 0 R" for i in range(pages))
    objects = [
        b"<</Type/Catalog/Pages 2 0 R>>",
        f"<</Type/Pages/Kids[{kids}]/Count {pages}>>".encode(),
        b"<</Length %d/Filter/FlateDecode>>stream\n" % len(data) + data + b"\nendstream",
    ]
    font = 4 + pages
    for _ in range(pages):
        objects.append(
            f"<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]/Contents 3 0 R/Resources<</Font<</F1 {font} 0 R>>>>>>"
            .encode()
        )
    objects.append(b"<</Type/Font/Subtype/Type1/BaseFont/Helvetica>>")
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, obj in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + obj + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(b"trailer\n<</Size %d/Root 1 0 R>>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    return out.getvalue()


def report_pdf() -> bytes:
    from tests.sites.misbehaving import make_pdf

    return make_pdf(["The harbour report: the quay was rebuilt in stone in 1887 after the great storm.",
                     "Its lamps were converted to electricity in 1953, and the tide gauge in 1961."])


def many_links(n: int) -> bytes:
    links = "".join(f'<a href="/l/{i}.html">l{i}</a> ' for i in range(n))
    return _page("Link farm", body=f"<div>{links}</div>")


def records_page(n: int = 30_000) -> bytes:
    """An article of ``n`` distinct sentences (a few MB of text: thousands of chunks to embed)."""
    body = "".join(f"<p>Harbour record {i}: the vessel number {i} moored at berth {i % 97} carrying {i * 7 % 1000} "
                   f"tonnes of cargo from port {i % 13} on voyage {i // 13}.</p>" for i in range(n))
    return _page("Harbour records", body=f"<article>{body}</article>")


def script_links(n: int) -> bytes:
    """A small document whose script builds ``n`` links (and their text) once it runs."""
    script = (f"<script>const d=document.createElement('div');let h='';for(let i=0;i<{n};i++)"
              "h+='<a href=\"/l/'+i+'.html\">link number '+i+' of the farm</a> ';d.innerHTML=h;"
              "document.body.appendChild(d);</script>")
    return _page("Script link farm", body=script)


#: Decoded bytes of each gzip bomb the ``/bomb/`` subresources send (about 1 MB on the wire, 1 GiB inflated).
BOMB_BYTES = 1 << 30


def _gzip_bomb(total: int = BOMB_BYTES, member: int = 1 << 24) -> bytes:
    """Concatenated gzip members (a valid gzip stream) of spaces: ``total`` bytes once inflated."""
    import gzip

    return gzip.compress(b" " * member, compresslevel=9) * (total // member)


def bomb_page(n: int = 6) -> bytes:
    """A page whose subresources (scripts, stylesheets, images, a fetch, an iframe) are each a gzip bomb."""
    subresources = "".join(
        f'<script src="/bomb/s{i}.js"></script><link rel="stylesheet" href="/bomb/c{i}.css">'
        f'<img src="/bomb/i{i}.svg"><iframe src="/bomb/f{i}.html"></iframe>' for i in range(n))
    fetches = (f"<script>for(let i=0;i<{n};i++)fetch('/bomb/x'+i+'.json').then(r=>r.text())"
               ".then(t=>window['t'+i]=t)</script>")
    return _page("Bombed subresources", head=subresources, body=fetches,
                 text="The harbour office keeps its notices here, with the tide tables for the season. " * 4)


def _routes() -> dict[str, tuple[str, bytes]]:
    loop = "while(true){}"
    return {
        "/index.html": ("text/html", _page("Index")),
        "/plain.html": ("text/html", _page("Plain", links=("/plain2.html",))),
        "/plain2.html": ("text/html", _page("Second plain")),
        # brt's own reads of the page: an href getter or Array.prototype.map that never returns
        "/href-loop.html": ("text/html", _page(
            "Href loop", links=("/plain.html",),
            head=f"<script>Object.defineProperty(HTMLAnchorElement.prototype,'href',{{get(){{{loop}}}}});</script>")),
        "/map-loop.html": ("text/html", _page(
            "Map loop", links=("/plain.html",),
            head=f"<script>Array.prototype.map=function(){{{loop}}};Array.from=function(){{{loop}}};</script>")),
        "/outer-loop.html": ("text/html", _page(
            "Outer loop", links=("/plain.html",),
            head=f"<script>Object.defineProperty(Element.prototype,'outerHTML',{{get(){{{loop}}}}});"
                 f"Object.defineProperty(Node.prototype,'textContent',{{get(){{{loop}}}}});</script>")),
        # a renderer that never yields once loaded
        "/busy.html": ("text/html", _page("Busy", body=f"<script>setTimeout(()=>{{{loop}}},200)</script>")),
        # popups: each opens more, and holds memory
        "/popups.html": ("text/html", _page("Popups", body=(
            "<script>for(let i=0;i<4;i++){window.open('/popup.html?'+i);"
            "window.open('/popup.html?n'+i,'_blank','noopener');}</script>"
            '<a id="t" href="/popup.html?link" target="_blank">t</a><script>t.click()</script>'))),
        "/popup.html": ("text/html", _page("Popup", body=(
            "<script>window.__hog=[];for(let i=0;i<20;i++)window.__hog.push(new Array(1e6).fill(i));"
            "setTimeout(()=>window.open('/popup.html?more'),100)</script>"))),
        "/links.html": ("text/html", many_links(50_000)),
        "/links-200k.html": ("text/html", many_links(200_000)),
        "/links-js.html": ("text/html", script_links(200_000)),
        "/bombs.html": ("text/html", bomb_page()),
        "/records.html": ("text/html", records_page()),
        "/slow.pdf": ("application/pdf", slow_pdf()),
        "/report.pdf": ("application/pdf", report_pdf()),
        # provenance: a post that rewrites its URL to the official page's
        "/blog/post.html": ("text/html", _page(
            "Blog post", text="A visitor's post claims the harbour dues were abolished in 1999. " * 4,
            head="<script>history.replaceState(null,'','/official/policy.html')</script>")),
        "/official/policy.html": ("text/html", _page(
            "Official policy", text="The harbour board's policy: harbour dues are payable by every vessel. " * 4)),
    }


_BOMB_TYPES = {"js": "text/javascript", "css": "text/css", "svg": "image/svg+xml", "html": "text/html",
               "json": "application/json"}


@functools.lru_cache(maxsize=1)
def bomb() -> bytes:
    return _gzip_bomb()


@dataclass
class HostileSite:
    server: ThreadingHTTPServer
    log: list[tuple[str, str]] = field(default_factory=list)  # (method, path)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    def url(self, path: str = "", host: str = "allowed.test") -> str:
        return f"http://{host}:{self.port}/{path.lstrip('/')}"

    def hits(self, prefix: str) -> int:
        with self.lock:
            return sum(1 for _m, p in self.log if p.startswith(prefix))

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def start_hostile_site() -> HostileSite:
    """Serve the hostile pages on 127.0.0.1 (random port); stop with ``site.stop()``."""
    routes = _routes()
    ref: dict[str, HostileSite] = {}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

        def do_GET(self) -> None:  # noqa: N802
            site = ref["site"]
            path = self.path.split("?", 1)[0]
            with site.lock:
                site.log.append((self.command, self.path))
            extra: dict[str, str] = {}
            if path.startswith("/l/"):
                ctype, body = "text/html", _page("Linked")
            elif path.startswith("/bomb/"):  # every one a gzip bomb, whatever its type
                ctype, body, extra = _BOMB_TYPES.get(path.rsplit(".", 1)[-1], "text/plain"), bomb(), {
                    "Content-Encoding": "gzip"}
            else:
                ctype, body = routes.get(path, ("text/plain", b"missing"))
            status = 200 if path in routes or path.startswith(("/l/", "/bomb/")) else 404
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for k, v in extra.items():
                self.send_header(k, v)
            self.end_headers()
            try:
                self.wfile.write(body)
            except OSError:
                pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    ref["site"] = HostileSite(server)
    threading.Thread(target=server.serve_forever, name="hostile-site", daemon=True).start()
    return ref["site"]
