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
- **script-written prose**: the page's own small inline scripts (under ``SMALL_SCRIPT_CHARS``) that write into
  the document hold at least ``script_prose_chars`` of sentences (string literals of ``PROSE_MIN_WORDS`` words
  or more) that the static text lacks: text a script writes in (a library bundle or a data blob is not counted);
- **script links**: at least ``script_links_min`` link-like elements only a script can follow (``javascript:``,
  ``#!`` and ``#/`` routes, ``onclick``, ``routerlink``, ``data-href``) and more of them than real links;
- **meta refresh**: the page sends the browser elsewhere within seconds (``<meta http-equiv="refresh">`` with a
  URL).

The thresholds (``Thresholds``) were chosen by measurement (``bench/render_need.py``) on the 181 pages of the
article-extraction benchmark, each extracted from its served HTML and from the rendered DOM, with the JavaScript
test site (``tests/sites/js.py``) as the pages that must be rendered: the values that render fewest benchmark pages
while every test-site page that needs a browser is rendered and the benchmark's extraction F1 holds. See
``Thresholds`` for the figures.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memory_store.text import collapse, content_words, word_pattern

if TYPE_CHECKING:
    from lxml.html import HtmlElement

__all__ = [
    "THRESHOLDS", "RenderDecision", "RenderSignals", "Thresholds", "decide", "measure", "needs_render",
    "string_literals",
]


@dataclass(frozen=True)
class Thresholds:
    """The limits ``decide`` applies, measured (``bench/render_need.py`` over a ``bench/harvest_static.py`` run,
    ``bench/results/render_need.json``) on the 181 article-extraction-benchmark pages, where no page reads better
    rendered (F1 0.939-0.945 rendered, 0.9594 from the served HTML; none gains on its own), with the JavaScript test
    site's 9 pages that need a browser as the pages that must be rendered. Varied one at a time:

    - ``short_chars``: 50 to 400 render the same pages of both sets; 200 (a heading and a line) is kept;
    - ``article_chars``: the benchmark's shortest article body is 369 characters; 400 renders 1.1% of its pages,
      600 4.4% (short articles, which gain nothing), 1000 also two static pages of the test site;
    - ``min_text_share``, ``promise_*``, ``script_links_min``: every value tried (0.05-0.5, 200-800 and 0.3-0.7,
      2-10) decides alike on both sets; the middle values are kept;
    - ``script_prose_chars``: 200 renders 3.3% of the benchmark (scripts that hold notices, not the page's text),
      250 1.1% (two pages whose script writes a 390-character browser notice); 300 misses the test site's page
      whose script writes its last three sentences (282 characters).
    """

    #: Static text below this is short whatever the page (a heading, a "Loading..." line, a cookie notice).
    short_chars: int = 200
    #: Static text below this is not an article (the benchmark's shortest article body is 369 characters).
    article_chars: int = 400
    #: Static text under this share of the visible text, and not article-sized, is the page's furniture only.
    min_text_share: float = 0.25
    #: JSON-LD ``articleBody`` at least this long is a promise worth checking against the static text.
    promise_chars: int = 400
    #: ... and it is broken when this share of its content words is missing from the static text.
    promise_missing: float = 0.5
    #: Link-like elements only a script can follow: this many at least, and more than the real links.
    script_links_min: int = 3
    #: Sentences the page's own scripts write in, missing from the static text (characters): two or three.
    script_prose_chars: int = 250


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
    script_prose_chars: int = 0  # sentences the page's own small scripts write in, missing from the static text

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
            "script_prose_chars": self.script_prose_chars,
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
        ("script-written prose", s.script_prose_chars >= t.script_prose_chars),
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
#: A page's own inline script is smaller than this (characters); a library bundle or a data blob is larger.
SMALL_SCRIPT_CHARS = 4096
#: A string literal of this many words or more is a sentence a script may write in.
PROSE_MIN_WORDS = 12
_WRITES = re.compile(
    r"\.(?:textContent|innerText|innerHTML|outerHTML)\s*\+?=|createTextNode\s*\(|document\.write(?:ln)?\s*\(|"
    r"insertAdjacent(?:HTML|Text)\s*\("
)
_QUOTES = "\"'`"
_MARKUP = re.compile(r"<[^>]{0,300}>")
_WORD = word_pattern("letters")
_PUNCT = ".,:;!?\"'()[]«»“”‘’—–-…"
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|.)", re.DOTALL)
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
    prose = _script_prose(tree, static_text or "")
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
        script_prose_chars=prose,
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


def _script_prose(tree: HtmlElement, static_text: str) -> int:
    """Characters of the sentences the page's own small inline scripts write into the document, missing from
    the static text (fewer than half of their content words in it)."""
    have = set(content_words(static_text))
    total = 0
    for script in tree.iter("script"):
        code = script.text or ""
        kind = (script.get("type") or "").split(";", 1)[0].strip().lower()
        if kind not in _JS_TYPES or len(code) > SMALL_SCRIPT_CHARS or not _WRITES.search(code):
            continue
        for literal in string_literals(code):
            sentence = collapse(_MARKUP.sub(" ", _unescape(literal)))
            words = set(content_words(sentence))
            if _is_prose(sentence) and words and len(words - have) * 2 > len(words):
                total += len(sentence)
    return total


def _is_prose(text: str) -> bool:
    """Words, as a sentence has them: ``PROSE_MIN_WORDS`` or more, four in five of them words of letters, and no
    character of code (``{}=;|\\``)."""
    tokens = text.split()
    if len(tokens) < PROSE_MIN_WORDS or any(c in text for c in "{}=;|\\"):
        return False
    return sum(1 for t in tokens if _WORD.fullmatch(t.strip(_PUNCT))) * 5 >= len(tokens) * 4


def string_literals(code: str, min_chars: int = 40) -> list[str]:
    """The string literals of JavaScript ``code`` (raw, escapes kept) of ``min_chars`` characters or more, read
    as the language does: quotes inside another kind of quotes, and comments, are not literals."""
    out: list[str] = []
    i, n = 0, len(code)
    while i < n:
        c = code[i]
        if c == "/" and code.startswith(("//", "/*"), i):
            end = code.find("\n" if code[i + 1] == "/" else "*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        if c not in _QUOTES:
            i += 1
            continue
        j = i + 1
        while j < n and code[j] != c and (c == "`" or code[j] != "\n"):
            j += 2 if code[j] == "\\" else 1
        if j - i - 1 >= min_chars:
            out.append(code[i + 1 : j])
        i = j + 1
    return out


def _unescape(literal: str) -> str:
    """A JavaScript string literal's escapes (``\\n``, ``\\u00e9``, ``\\x41``, ``\\"``) as the characters."""

    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        if code[0] in "ux" and len(code) > 1:
            return chr(int(code[1:], 16))
        return {"n": "\n", "t": "\t", "r": ""}.get(code, code)

    return _ESCAPE.sub(one, literal)


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
