"""The ``js`` site (``local_site("js")``): pages that need JavaScript to show their text, and pages that do not,
for ``harvest.render`` (``orchestrator/harvest/static.py``, ``render_need.py``). On 127.0.0.1, random port.

Pages that need a browser (``NEEDS_JS``), each with its marker sentence (``MARKERS``) that only a browser shows:

- ``/script-text.html``: the story is written into an empty ``<main>`` by an external script (``/story.js``);
- ``/spa/``: a single-page app: an empty ``#app`` filled by ``/spa/app.js``, which draws the navigation
  (links that exist only once the script ran) and routes with ``history.pushState``; the server answers every
  ``/spa/...`` path with the same shell, so ``/spa/harbour`` and ``/spa/tides`` need the script too;
- ``/fetch.html``: a "Loading..." placeholder replaced by the text of ``fetch('/api/story.json')``;
- ``/promised.html``: JSON-LD ``NewsArticle`` and ``og:type`` article; the served body shows a teaser, a script
  writes the article;
- ``/inline.html``: an article whose last paragraphs a small inline script writes in after loading;
- ``/hashbang.html``: navigation by ``#!/`` routes (links only a script follows) and an empty view;
- ``/noscript.html``: a ``<noscript>`` that asks for JavaScript, a header and a footer, and a script that writes
  the page.

Pages that do not (``STATIC``): ``/article.html`` (no script at all), ``/analytics.html`` (an article with
analytics, a tracking pixel in ``<noscript>`` and an empty comments box a widget script fills),
``/disqus.html`` (an article whose ``<noscript>`` asks for JavaScript for its comments), ``/jsonld.html`` (an
article whose JSON-LD ``articleBody`` is its text), ``/note.html`` (a short page without scripts), ``/`` (the
index, linking to every page).

Script navigations (``/navigates.html`` while it loads, ``/navigates-late.html`` after; and
``/writes-then-navigates.html``, whose text a script writes first): pages whose script sends the tab to
``/gone.html``, which answers 404 with ``GONE_TEXT``. ``/api/story.json`` is JSON; anything else is a 404.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.sites import serve, stop_server

#: The sentence only a browser shows on each page that needs one.
MARKERS = {
    "script-text.html": "The ferry timetable is written into this page by its external script after it loads.",
    "spa/": "The harbour app draws its home view with a script and routes between views without reloading.",
    "spa/harbour": "The harbour view of the app lists the moorings, which only the app's script ever draws.",
    "spa/tides": "The tides view of the app shows high water at seven, drawn by the app's script on arrival.",
    "fetch.html": "The lifeboat crew trains every Thursday evening, says the story fetched as JSON by the page.",
    "promised.html": "The breakwater repairs will take two summers, the full article written in by script says.",
    "inline.html": "The harbour lights were switched to LED lamps last spring, a paragraph the page script adds.",
    "hashbang.html": "The fish market view of the hashbang app opens at dawn and closes before noon each day.",
    "noscript.html": "The pilot boat guides large ships past the sandbank, as the page's script writes it in.",
}
NEEDS_JS = tuple(MARKERS)
STATIC = ("", "article.html", "analytics.html", "disqus.html", "jsonld.html", "note.html")
#: The body of the 404 a script navigates to.
GONE_TEXT = "Not found. The page you asked for does not exist on this harbour site any more."

_FILLER = (
    "The harbour office keeps the records of every vessel that enters and leaves the port, with its name, its "
    "owner and the hour of its arrival. Fishermen bring their catch to the market hall at first light, and the "
    "buyers from the inland towns come by lorry soon after. In winter the storms close the harbour mouth for "
    "days at a time, and the crews mend their nets in the sheds along the quay while they wait for calmer "
    "weather. "
)
_FILLER_2 = (
    "The lighthouse keeper logs the weather every four hours and reports storms to the harbour master, who "
    "decides when the boats may leave. The tide tables are published every January and posted on the door of "
    "the harbour office, and the pilot boat meets every ship of more than a thousand tonnes at the outer buoy. "
)

_TEASER = (
    "The breakwater will be repaired, the council said on Monday, after the autumn storms opened a gap in its "
    "outer wall. Work starts in May, when the weather allows the barges to reach the wall, and the quay stays "
    "open throughout."
)


def _doc(title: str, body: str, head: str = "") -> str:
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>{head}</head>'
        f"<body>{body}</body></html>"
    )


def _article(title: str, *paragraphs: str, extra: str = "", head: str = "") -> str:
    paras = "".join(f"<p>{p}</p>" for p in paragraphs)
    nav = '<nav><a href="/">Home</a> <a href="/article.html">Article</a></nav>'
    return _doc(title, f"{nav}<main><article><h1>{title}</h1>{paras}</article></main>{extra}", head)


def _writes(selector: str, *paragraphs: str) -> str:
    """A script that writes ``paragraphs`` into the element ``selector`` once the page has loaded."""
    return (
        "<script>document.addEventListener('DOMContentLoaded', function () {"
        f"var box = document.querySelector({json.dumps(selector)});"
        f"{json.dumps(list(paragraphs))}.forEach(function (t) {{"
        "var p = document.createElement('p'); p.textContent = t; box.appendChild(p); }); });</script>"
    )


_SPA = """
(function () {
  var views = %s;
  function draw() {
    var path = location.pathname.replace(/\\/$/, '') || '/spa';
    var view = views[path] || views['/spa'];
    var app = document.getElementById('app');
    app.innerHTML = '';
    var nav = document.createElement('nav');
    [['/spa/', 'Home'], ['/spa/harbour', 'Harbour'], ['/spa/tides', 'Tides']].forEach(function (l) {
      var a = document.createElement('a'); a.href = l[0]; a.textContent = l[1];
      a.addEventListener('click', function (e) { e.preventDefault(); history.pushState({}, '', l[0]); draw(); });
      nav.appendChild(a); nav.appendChild(document.createTextNode(' '));
    });
    app.appendChild(nav);
    var h = document.createElement('h1'); h.textContent = view[0]; app.appendChild(h);
    view.slice(1).forEach(function (t) { var p = document.createElement('p'); p.textContent = t; app.appendChild(p); });
  }
  window.addEventListener('popstate', draw);
  draw();
})();
"""

_HASHBANG = """
(function () {
  var views = {'#!/market': %s, '#!/quay': %s};
  function draw() {
    var text = views[location.hash] || views['#!/market'];
    document.getElementById('view').textContent = text;
  }
  window.addEventListener('hashchange', draw);
  draw();
})();
"""


def _files() -> dict[str, tuple[str, bytes]]:
    """path -> (content type, body) of every page and script of the site."""
    m = MARKERS
    html: dict[str, str] = {
        "/": _doc(
            "Harbour scripts index",
            "<main><h1>Harbour scripts index</h1><p>Every page of the harbour site, with and without scripts, for "
            "the harvest to read one by one in order.</p><ul>"
            + "".join(f'<li><a href="/{p}">{p}</a></li>' for p in (*NEEDS_JS, *STATIC[1:]) if "/" not in p[:-1])
            + "</ul></main>",
        ),
        "/script-text.html": _doc(
            "Ferry timetable", '<h1>Ferry timetable</h1><main id="story"></main><script src="/story.js"></script>'
        ),
        "/spa/": _doc("Harbour app", '<div id="app"></div><script src="/spa/app.js"></script>'),
        "/fetch.html": _doc(
            "Lifeboat",
            '<h1>Lifeboat</h1><article id="story"><p>Loading...</p></article><script>'
            "fetch('/api/story.json').then(function (r) { return r.json(); }).then(function (d) {"
            "var a = document.getElementById('story'); a.innerHTML = '';"
            "d.paragraphs.forEach(function (t) { var p = document.createElement('p'); p.textContent = t; "
            "a.appendChild(p); }); });</script>",
        ),
        "/promised.html": _article(
            "Breakwater repairs",
            _TEASER,
            extra='<div id="rest"></div>' + _writes("#rest", m["promised.html"], _FILLER),
            head='<meta property="og:type" content="article"><script type="application/ld+json">'
            + json.dumps(
                {
                    "@context": "https://schema.org",
                    "@type": "NewsArticle",
                    "headline": "Breakwater repairs",
                    "description": _TEASER,
                }
            )
            + "</script>",
        ),
        "/inline.html": _article(
            "Harbour lights",
            _FILLER,
            _FILLER_2,
            "The lights at the end of the two piers are green and red, as on every harbour of the coast.",
            extra=_writes(
                "article",
                m["inline.html"],
                "The new lamps use a tenth of the power of the old ones and can be seen from further out at sea.",
                "The keepers say the change has made the winter nights easier, since the lamps rarely need work.",
            ),
        ),
        "/hashbang.html": _doc(
            "Fish market app",
            '<nav><a href="#!/market">Market</a> <a href="#!/quay">Quay</a> <a href="#!/boats">Boats</a> '
            '<a href="javascript:void(0)" onclick="history.back()">Back</a></nav><h1>Fish market</h1>'
            '<div id="view"></div><script>'
            + _HASHBANG % (json.dumps(m["hashbang.html"] + " " + _FILLER), json.dumps("The quay view."))
            + "</script>",
        ),
        "/noscript.html": _doc(
            "Pilot boat",
            "<header><a href='/'>Harbour site</a> <a href='/article.html'>News</a> <a href='/note.html'>Contact"
            "</a></header><noscript>This site requires JavaScript. Please enable JavaScript in your browser to "
            "read it.</noscript><main id='page'></main><footer>Harbour site, the quay, open every day of the "
            "year except Christmas. Write to the harbour master for moorings.</footer>"
            + _writes("#page", m["noscript.html"], _FILLER),
        ),
        "/article.html": _article("Harbour history", _FILLER, "The harbour was rebuilt in 1920.", _FILLER),
        "/analytics.html": _article(
            "Net mending",
            _FILLER,
            _FILLER_2,
            "The nets are mended by hand in the sheds along the quay during the winter storms.",
            extra=(
                '<div id="comments"></div><script>window.dataLayer = window.dataLayer || [];'
                "function gtag(){dataLayer.push(arguments);} gtag('js', new Date());"
                "document.getElementById('comments').innerHTML = '<p>' + 0 + ' comments</p>';</script>"
                '<script src="/analytics.js"></script>'
                '<noscript><img src="/pixel.gif" alt=""></noscript>'
            ),
        ),
        "/disqus.html": _article(
            "Mooring fees",
            _FILLER,
            _FILLER_2,
            "Mooring fees rise by three percent next year, the harbour board decided.",
            extra=(
                '<div id="disqus_thread"></div><script src="/embed.js"></script><noscript>Please enable '
                "JavaScript to view the comments powered by Disqus.</noscript>"
            ),
        ),
        "/jsonld.html": _article(
            "Tide gauge",
            _FILLER,
            _FILLER_2,
            "A new tide gauge was fitted to the north pier this autumn.",
            head='<script type="application/ld+json">'
            + json.dumps(
                {
                    "@context": "https://schema.org",
                    "@type": "NewsArticle",
                    "headline": "Tide gauge",
                    "articleBody": f"{_FILLER} {_FILLER_2} A new tide gauge was fitted to the north pier this autumn.",
                }
            )
            + '</script><script src="/analytics.js"></script>',
        ),
        "/note.html": _doc("Contact", "<h1>Contact</h1><p>Write to the harbour master.</p>"),
        "/navigates.html": _article(
            "Harbour cats",
            _FILLER,
            _FILLER_2,
            "Three cats live in the net sheds and keep the mice away from the stores.",
            extra="<script>location.href = '/gone.html';</script>",
        ),
        "/navigates-late.html": _article(
            "Harbour gulls",
            _FILLER,
            _FILLER_2,
            "The gulls follow the boats in at dawn and wait on the market hall roof.",
            extra="<script>window.addEventListener('load', function () { setTimeout(function () {"
            "location.assign('/gone.html'); }, 100); });</script>",
        ),
        "/writes-then-navigates.html": _doc(
            "Ferry timetable",
            '<h1>Ferry timetable</h1><main id="story"></main><script src="/story.js"></script><script>'
            "window.addEventListener('load', function () { setTimeout(function () {"
            "location.href = '/gone.html'; }, 200); });</script>",
        ),
        "/gone.html": _doc("Not found", f"<h1>Not found</h1><p>{GONE_TEXT}</p>"),
    }
    views = {
        "/spa": ["Harbour app", m["spa/"], _FILLER],
        "/spa/harbour": ["Harbour", m["spa/harbour"], _FILLER],
        "/spa/tides": ["Tides", m["spa/tides"], _FILLER],
    }
    files = {path: ("text/html; charset=utf-8", body.encode()) for path, body in html.items()}
    files["/story.js"] = ("text/javascript", _story_js(m["script-text.html"]).encode())
    files["/spa/app.js"] = ("text/javascript", (_SPA % json.dumps(views)).encode())
    files["/api/story.json"] = (
        "application/json",
        json.dumps({"paragraphs": [m["fetch.html"], _FILLER]}).encode(),
    )
    files["/analytics.js"] = ("text/javascript", b"window.analyticsLoaded = true;")
    files["/embed.js"] = ("text/javascript", b"window.commentsLoaded = true;")
    return files


def _story_js(marker: str) -> str:
    paragraphs = json.dumps([marker, _FILLER])
    return (
        "document.addEventListener('DOMContentLoaded', function () { var box = document.getElementById('story');"
        f"{paragraphs}.forEach(function (t) {{ var p = document.createElement('p'); p.textContent = t; "
        "box.appendChild(p); }); });"
    )


@dataclass
class JsSite:
    server: ThreadingHTTPServer
    requests: list[str] = field(default_factory=list)  # paths, in order
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self.port}/{path.lstrip('/')}"

    def hits(self, path: str) -> int:
        with self.lock:
            return self.requests.count(path)

    def stop(self) -> None:
        stop_server(self.server, None)


def start_js_site() -> JsSite:
    files = _files()
    ref: dict[str, JsSite] = {}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
            pass

        def do_GET(self) -> None:  # noqa: N802 - stdlib name
            site = ref["site"]
            path = self.path.split("?", 1)[0].split("#", 1)[0]
            with site.lock:
                site.requests.append(path)
            if path.startswith("/spa/") and path not in files:
                path = "/spa/"  # the app's shell answers every route; the script draws the view
            if path == "/gone.html" or path not in files:
                self._send(404, "text/html; charset=utf-8", files["/gone.html"][1])
                return
            ctype, body = files[path]
            self._send(200, ctype, body)

        def _send(self, status: int, ctype: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass

    server, _thread = serve(Handler, "site-js")
    site = JsSite(server=server)  # type: ignore[arg-type]
    ref["site"] = site
    return site


def page_html(path: str) -> str:
    """The HTML a page of the site is served with (for tests of the decision without a server)."""
    return _files()["/" + path.lstrip("/")][1].decode()
