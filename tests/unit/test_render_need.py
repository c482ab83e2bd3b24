"""The render decision of ``harvest.render: auto`` (``orchestrator/harvest/render_need.py``): each signal on pages
built for it, the JavaScript test site's pages decided from their served HTML, and the helpers it reads with."""

from __future__ import annotations

import dataclasses

import pytest

from orchestrator.harvest.extract import decode_html, extract_page
from orchestrator.harvest.render_need import THRESHOLDS, RenderSignals, decide, measure, needs_render, string_literals
from tests.sites.js import NEEDS_JS, STATIC, page_html

ARTICLE = " ".join(
    f"Paragraph {n} of the harbour story tells how the boats came in, how the nets were mended and how the market "
    "sold the catch before noon." for n in range(8)
)


def _page(body: str, head: str = "", scripts: str = "<script src='/app.js'></script>") -> str:
    return f"<!DOCTYPE html><html><head><title>t</title>{head}</head><body>{body}{scripts}</body></html>"


def _decide(html: str) -> tuple[bool, tuple[str, ...]]:
    extracted = extract_page(html, "https://harbour.example/p")
    decision = needs_render(html, extracted.text if extracted is not None else None)
    return decision.render, decision.reasons


def test_a_page_without_scripts_is_never_rendered():
    assert _decide(_page("<div id='root'></div><p>Loading...</p>", scripts="")) == (False, ())
    assert _decide(_page(f"<article><p>{ARTICLE}</p></article>")) == (False, ())  # scripts, and an article


@pytest.mark.parametrize(
    ("body", "head", "reason"),
    [
        ("<div id='root'></div>", "", "app shell"),
        ("<app-root></app-root><footer>About us. Contact. Jobs.</footer>", "", "app shell"),
        ("<main><p>Loading...</p></main>", "", "short static text"),
        ("<div id='content'></div>", "", "no static text"),
        (
            "<noscript>Please enable JavaScript to read this page.</noscript><main id='x'></main><p>"
            + "A notice about the site and its owners, the address of the office and the opening hours. " * 3
            + "</p>",
            "",
            "noscript asks for JavaScript",
        ),
        (
            "<article><p>The mayor opened the new harbour office on Monday, with the crews and their families, "
            "and thanked the builders for finishing the work before the winter storms.</p></article>",
            "<meta property='og:type' content='article'>",
            "article promised, little text",
        ),
        ("<p>" + ARTICLE + "</p>", "<meta http-equiv='refresh' content='0; url=/real'>", "meta refresh"),
    ],
)
def test_each_signal_asks_for_the_browser(body, head, reason):
    render, reasons = _decide(_page(body, head))
    assert render and reason in reasons, reasons


def test_boilerplate_heavy_page_is_rendered_and_an_article_among_furniture_is_not():
    nav = "<header><nav>" + " ".join(f"<a href='/s{n}'>Section {n}</a>" for n in range(8)) + "</nav></header>"
    footer = "<footer>" + "".join(
        f"<div class='footer-col'><h4>Column {n}</h4><ul>"
        + "".join(f"<li><a href='/f{n}{k}'>Footer link {k} of column {n}</a></li>" for k in range(10))
        + "</ul></div>"
        for n in range(8)
    ) + "</footer>"
    teaser = "<h1>Storm warning</h1><p>The story opens here, and the rest of it follows once the page has loaded.</p>"
    assert "mostly boilerplate" in _decide(_page(f"{nav}<main>{teaser}<div id='body'></div></main>{footer}"))[1]
    assert _decide(_page(f"{nav}<article><p>{ARTICLE}</p></article>{footer}"))[0] is False


def test_links_only_a_script_follows():
    body = (
        "".join(f"<a href='#!/view{n}'>View {n}</a> " for n in range(4))
        + "<span onclick='go(1)'>Next</span><article><p>" + ARTICLE + "</p></article>"
    )
    render, reasons = _decide(_page(body))
    assert render and reasons == ("links only scripts follow",)
    real = "".join(f"<a href='/v{n}'>View {n}</a> " for n in range(6))
    assert _decide(_page(real + body))[0] is False  # more real links than scripted ones


def test_a_promised_article_body_missing_from_the_static_text():
    body_text = "The lock gates were replaced over the summer. " * 20
    head = (
        "<script type='application/ld+json'>{\"@type\": \"NewsArticle\", \"articleBody\": "
        f"\"{body_text}\"}}</script>"
    )
    other = "The weather page lists the forecast for the coast, hour by hour, with winds and waves. " * 12
    signals = measure(_page(f"<p>{other}</p>", head), other)
    assert signals.promised_chars > 400 and signals.promised_missing == 1.0
    assert "promised article missing" in decide(signals).reasons
    signals = measure(_page(f"<p>{body_text}</p>", head), body_text)
    assert signals.promised_missing == 0.0 and decide(signals).render is False


def test_prose_a_small_script_writes_in_and_code_or_data_it_holds():
    sentences = [
        "The harbour lights were switched to LED lamps last spring, the keepers of the two piers said today.",
        "The new lamps use a tenth of the power of the old ones and can be seen from much further out at sea.",
        "The keepers say the change has made the winter nights easier, since the lamps rarely need any work.",
    ]
    writes = "".join(f"p = document.createElement('p'); p.textContent = {s!r}; a.appendChild(p);" for s in sentences)
    html = _page(f"<article><p>{ARTICLE}</p></article>", scripts=f"<script>var a, p; {writes}</script>")
    assert _decide(html) == (True, ("script-written prose",))
    # the same sentences in a data blob (no write into the page), or in the static text already: not counted
    blob = f"<script>window.__STATE__ = {{items: {sentences!r}}};</script>"
    assert _decide(_page(f"<article><p>{ARTICLE}</p></article>", scripts=blob))[0] is False
    shown = _page(f"<article><p>{ARTICLE} {' '.join(sentences)}</p></article>", scripts=f"<script>{writes}</script>")
    assert _decide(shown)[0] is False
    # a big library bundle that writes into the page is not the page's own text
    bundle = f"<script>{'var x = 1;' * 500}{writes}</script>"
    assert _decide(_page(f"<article><p>{ARTICLE}</p></article>", scripts=bundle))[0] is False


def test_string_literals_are_read_as_javascript_reads_them():
    code = "a('x', \"a \\\"quoted\\\" word\"); // it's a comment \"no\"\nb = 'it\\'s'; /* \"c\" */ t = `two\nlines`"
    assert string_literals(code, 1) == ["x", 'a \\"quoted\\" word', "it\\'s", "two\nlines"]


def test_thresholds_move_the_decision():
    signals = RenderSignals(
        static_chars=150, visible_chars=160, scripts=1, app_shell=False, noscript_js=False, article_promised=False,
        promised_chars=0, promised_missing=0.0, links=3, script_links=0, meta_refresh=False,
    )
    assert decide(signals).reasons == ("short static text",)
    assert decide(signals, dataclasses.replace(THRESHOLDS, short_chars=100)).render is False


@pytest.mark.parametrize("path", NEEDS_JS)
def test_the_test_sites_pages_that_need_a_browser_are_rendered(path):
    served = "spa/" if path.startswith("spa/") else path  # the app's shell answers every route
    render, reasons = _decide(page_html(served))
    assert render, f"{path}: {reasons}"


@pytest.mark.parametrize("path", STATIC)
def test_the_test_sites_pages_that_do_not_are_read_as_served(path):
    assert _decide(page_html(path or "/")) == (False, ())


def test_decode_html_picks_the_encoding_a_browser_picks():
    assert decode_html("é".encode("latin-1"), {"Content-Type": "text/html; charset=ISO-8859-1"}) == "é"
    assert decode_html('<meta charset="windows-1252">é'.encode("cp1252"), {}).endswith("é")
    assert decode_html("\ufeffé".encode(), {"content-type": "text/html; charset=latin-1"}) == "é"  # the BOM wins
    assert decode_html(b"abc", {"content-type": "text/html; charset=bogus"}) == "abc"
    assert decode_html(b"", {}) is None
