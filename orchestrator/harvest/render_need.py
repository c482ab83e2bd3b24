"""Whether a page needs a browser: the decision of ``harvest.render: auto``, from the HTML the server sent and the
text extracted from it. Pure (no I/O): ``measure`` reads the signals, ``decide`` applies the thresholds.

    signals = measure(html, static_text)      # RenderSignals
    decision = decide(signals)                # RenderDecision: render?, and which signals said so

A page is read from its served HTML unless one of these says the browser would show more:

- **scripts**: a page without an executable ``<script>`` (and no meta refresh) is what its HTML says: never
  rendered, whatever else it shows;
- **no static text**: nothing readable was extracted from the served HTML;
- **app shell**: an empty root element that a framework fills (``#root``, ``#app``, ``#__next``, ``<app-root>``,
  ``[data-reactroot]``, ``[ng-app]`` ...) while the static text is not article-sized;
- **short**: the static text is under ``short_chars``;
- **boilerplate**: the static text is under ``article_chars`` and under ``min_text_share`` of the page's visible
  text (the page is mostly navigation and furniture: its content comes later);
- **noscript**: a ``<noscript>`` asks for JavaScript and the static text is not article-sized;
- **promised article**: JSON-LD ``articleBody`` of at least ``promise_chars`` whose content words are mostly
  (``promise_missing``) absent from the static text, or JSON-LD/``og:type`` says "article" while the static text
  is not article-sized;
- **script links**: at least ``script_links_min`` link-like elements only a script can follow (``javascript:``,
  ``#!`` and ``#/`` routes, ``onclick``, ``routerlink``, ``data-href``) and more of them than real links;
- **meta refresh**: the page sends the browser elsewhere within seconds (``<meta http-equiv="refresh">`` with a
  URL).

The thresholds (``Thresholds``) were chosen by measurement (``bench/render_need.py``) on the 181 pages of the
article-extraction benchmark, each extracted from its served HTML and from the rendered DOM, with the JavaScript
test site (``tests/sites/js.py``) as the pages that must be rendered: they are the lowest values at which every
page that needs a browser is rendered and the benchmark's extraction F1 holds. See ``Thresholds`` for the figures.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memory_store.text import collapse, content_words

if TYPE_CHECKING:
    from lxml.html import HtmlElement

__all__ = ["THRESHOLDS", "RenderDecision", "RenderSignals", "Thresholds", "decide", "measure", "needs_render"]


@dataclass(frozen=True)
class Thresholds:
    """The limits ``decide`` applies. Measured on the 181 article-extraction-benchmark pages
    (``bench/render_need.py --eval-dir ../shared/eval``; ``bench/results/render_need.json``): the served HTML's
    extracted text has a median of 3,300 characters there, and the smallest article body in the gold is 369
    characters; rendered, 8 pages gain text (none more than 0.02 F1 over their served HTML)."""

    #: Static text below this is short whatever the page (a heading, a "Loading..." line, a cookie notice).
    short_chars: int = 200
    #: Static text below this is not an article (the benchmark's shortest gold article body is 369 characters).
    article_chars: int = 600
    #: Static text under this share of the visible text, and not article-sized, is the page's furniture only.
    min_text_share: float = 0.25
    #: JSON-LD ``articleBody`` at least this long is a promise worth checking against the static text.
    promise_chars: int = 400
    #: ... and it is broken when this share of its content words is missing from the static text.
    promise_missing: float = 0.5
    #: Link-like elements only a script can follow: this many at least, and more than the real links.
    script_links_min: int = 3


THRESHOLDS = Thresholds()


@dataclass(frozen=True)
class RenderSignals:
    """What the served HTML shows of a page (``measure``)."""

    static_chars: int  # characters of the text extracted from the served HTML (whitespace collapsed)
    visible_chars: int  # characters of the visible text of its body (scripts, styles, templates left out)
    scripts: int  # executable <script> elements, inline or loaded
    app_shell: bool  # an empty root element a framework fills
    noscript_js: bool  # a <noscript> that asks for JavaScript
    article_promised: bool  # JSON-LD of an Article type, or og:type article
    promised_chars: int  # characters of JSON-LD articleBody (0: none)
    promised_missing: float  # share of articleBody's content words absent from the static text
    links: int  # <a href> a crawler follows
    script_links: int  # link-like elements only a script follows
    meta_refresh: bool  # <meta http-equiv="refresh">

    @property
    def text_share(self) -> float:
        """Static text over visible text (1.0 for a page with no visible text)."""
        return self.static_chars / self.visible_chars if self.visible_chars else 1.0

    def as_record(self) -> dict[str, Any]:
        """The signals as the harvest event records them."""
        return {
            "static_chars": self.static_chars,
            "visible_chars": self.visible_chars,
            "scripts": self.scripts,
            "app_shell": self.app_shell,
            "noscript_js": self.noscript_js,
            "article_promised": self.article_promised,
            "promised_chars": self.promised_chars,
            "promised_missing": round(self.promised_missing, 3),
            "links": self.links,
            "script_links": self.script_links,
            "meta_refresh": self.meta_refresh,
        }


@dataclass(frozen=True)
class RenderDecision:
    """``decide``'s verdict: render the page in the browser or not, and the signals that said so (``reasons`` is
    empty when it is not rendered)."""

    render: bool
    reasons: tuple[str, ...] = ()
    signals: RenderSignals | None = field(default=None, compare=False)


def decide(signals: RenderSignals, limits: Thresholds = THRESHOLDS) -> RenderDecision:
    """Whether the page of ``signals`` needs the browser (see the module docstring for each reason)."""
    s, t = signals, limits
    if s.meta_refresh:
        return RenderDecision(True, ("meta refresh",), s)
    if not s.scripts:
        return RenderDecision(False, (), s)  # nothing in the page could change what its HTML shows
    small = s.static_chars < t.article_chars
    checks = (
        ("no static text", s.static_chars == 0),
        ("app shell", s.app_shell and small),
        ("short static text", s.static_chars < t.short_chars),
        ("mostly boilerplate", small and s.text_share < t.min_text_share),
        ("noscript asks for JavaScript", s.noscript_js and small),
        (
            "promised article missing",
            s.promised_chars >= t.promise_chars and s.promised_missing >= t.promise_missing,
        ),
        ("article promised, little text", s.article_promised and small),
        ("links only scripts follow", s.script_links >= t.script_links_min and s.script_links > s.links),
    )
    reasons = tuple(name for name, fired in checks if fired)
    return RenderDecision(bool(reasons), reasons, s)


def needs_render(html: str, static_text: str | None, limits: Thresholds = THRESHOLDS) -> RenderDecision:
    """``decide(measure(html, static_text))``."""
    return decide(measure(html, static_text), limits)


# -- measuring ------------------------------------------------------------------------------------------------

_JS_TYPES = frozenset(
    {"", "module", "text/javascript", "application/javascript", "text/ecmascript", "application/ecmascript",
     "application/x-javascript", "text/jscript", "text/livescript"}
)
_HIDDEN = ("script", "style", "noscript", "template", "svg", "math", "head", "title")
# Root elements frameworks mount into (React, Vue, Angular, Next, Nuxt, Gatsby, Svelte, Ember ...).
_ROOT_NAME = re.compile(
    r"^(?:root|app|app-root|approot|main-app|application|spa|react-root|reactroot|vue-app|__next|__nuxt|"
    r"___gatsby|svelte|ember-app|mount|container-root)$",
    re.IGNORECASE,
)
_ROOT_ATTRS = ("data-reactroot", "ng-app", "data-ng-app", "data-v-app", "data-server-rendered")
_ASKS_FOR_JS = re.compile(
    r"\b(?:enable|activate|turn on|switch on|allow)\b[^.!?]{0,40}\bjavascript\b|"
    r"\bjavascript\b[^.!?]{0,40}\b(?:required|disabled|needed|must be|is off|not enabled|to run|to use|to view)\b|"
    r"\b(?:requires?|needs?|without)\b[^.!?]{0,20}\bjavascript\b",
    re.IGNORECASE,
)
_SCRIPT_HREF = re.compile(r"^\s*(?:javascript:|#!|#/)", re.IGNORECASE)
_SCRIPT_LINK_ATTRS = ("onclick", "ng-click", "v-on:click", "@click", "routerlink", "data-href", "ng-href")
_REFRESH = re.compile(r"^\s*(\d+(?:\.\d*)?)\s*(?:[;,]\s*(?:url\s*=\s*)?['\"]?\s*(\S[^'\"]*))?", re.IGNORECASE)
#: A meta refresh sooner than this (seconds) to another URL is a redirect the browser follows while brt reads.
REFRESH_SOON_S = 5.0
_ARTICLE_TYPES = re.compile(r"article|blogposting|report|scholarlyarticle", re.IGNORECASE)


def measure(html: str, static_text: str | None) -> RenderSignals:
    """The signals of a page from the HTML the server sent and the text extracted from it (None or "": none)."""
    from lxml import etree
    from lxml.html import document_fromstring

    static_chars = len(collapse(static_text or ""))
    try:
        tree = document_fromstring(html) if html and html.strip() else None
    except (etree.ParserError, ValueError):
        tree = None
    if tree is None:
        return RenderSignals(static_chars, 0, 0, False, False, False, 0, 0.0, 0, 0, False)
    scripts, noscript_js = _scripts(tree)
    article_promised, promised_chars, promised_missing = _promise(tree, static_text or "")
    links, script_links = _links(tree)
    meta_refresh = any(
        (m.get("http-equiv") or "").strip().lower() == "refresh" and _refreshes_soon(m.get("content") or "")
        for m in tree.iter("meta")
    )
    visible_chars = _visible_chars(tree)  # after the others: it drops the hidden elements from the tree
    return RenderSignals(
        static_chars=static_chars,
        visible_chars=visible_chars,
        scripts=scripts,
        app_shell=_app_shell(tree),  # on the tree without hidden elements: their text does not count
        noscript_js=noscript_js,
        article_promised=article_promised,
        promised_chars=promised_chars,
        promised_missing=promised_missing,
        links=links,
        script_links=script_links,
        meta_refresh=meta_refresh,
    )


def _refreshes_soon(content: str) -> bool:
    """A meta refresh that sends the browser to another URL within ``REFRESH_SOON_S`` (a news page that reloads
    itself every few minutes is not one)."""
    match = _REFRESH.match(content)
    return bool(match and match.group(2) and float(match.group(1)) <= REFRESH_SOON_S)


def _scripts(tree: HtmlElement) -> tuple[int, bool]:
    """(executable scripts, whether a <noscript> asks for JavaScript)."""
    scripts = sum(
        1 for s in tree.iter("script") if (s.get("type") or "").split(";", 1)[0].strip().lower() in _JS_TYPES
    )
    asks = any(_ASKS_FOR_JS.search(collapse(n.text_content())) for n in tree.iter("noscript"))
    return scripts, asks


def _app_shell(tree: HtmlElement) -> bool:
    """An element a framework mounts into, empty of visible text (``tree`` without its hidden elements)."""
    body = tree.find("body")
    if body is None:
        return False
    for el in body.iter():
        if not isinstance(el.tag, str):
            continue
        named = el.tag.endswith(("-root", "-app")) or any(
            _ROOT_NAME.match(name) for name in (el.get("id") or "", *(el.get("class") or "").split())
        )
        if (named or any(a in el.attrib for a in _ROOT_ATTRS)) and not el.text_content().strip():
            return True
    return False


def _promise(tree: HtmlElement, static_text: str) -> tuple[bool, int, float]:
    """(an article is announced, characters of JSON-LD articleBody, share of its content words not in the text)."""
    from .lead import jsonld_items

    announced = any(
        (m.get("property") or m.get("name") or "").strip().lower() == "og:type"
        and "article" in (m.get("content") or "").lower()
        for m in tree.iter("meta")
    )
    body = ""
    for item in jsonld_items(tree):
        kind = item.get("@type")
        kinds = kind if isinstance(kind, list) else [kind]
        if any(isinstance(k, str) and _ARTICLE_TYPES.search(k) for k in kinds):
            announced = True
        text = item.get("articleBody")
        if isinstance(text, str) and len(text) > len(body):
            body = text
    if not body.strip():
        return announced, 0, 0.0
    promised = set(content_words(body))
    have = set(content_words(static_text))
    missing = len(promised - have) / len(promised) if promised else 0.0
    return announced, len(collapse(body)), missing


def _links(tree: HtmlElement) -> tuple[int, int]:
    """(links a crawler follows, link-like elements only a script follows)."""
    real = scripted = 0
    for el in tree.iter():
        if not isinstance(el.tag, str):
            continue
        href = el.get("href") if el.tag == "a" else None
        if href is not None and href.strip() not in ("", "#") and not _SCRIPT_HREF.match(href):
            real += 1
        elif (href is not None and _SCRIPT_HREF.match(href)) or any(a in el.attrib for a in _SCRIPT_LINK_ATTRS):
            scripted += 1
    return real, scripted


def _visible_chars(tree: HtmlElement) -> int:
    """Characters of the body's visible text (whitespace collapsed). Drops the hidden elements from ``tree``."""
    body = tree.find("body")
    if body is None:
        return 0
    for el in list(body.iter(*_HIDDEN)):
        if el.getparent() is not None:
            el.drop_tree()  # its tail (the text after it) stays
    return len(collapse(body.text_content()))
