"""Lead recovery: the page's own summary of itself, when the extractor dropped it.

trafilatura sometimes leaves out a news page's lead paragraph, which the page also states in its metadata. The
candidates, in this order: the first paragraph of JSON-LD ``articleBody``, JSON-LD ``description``,
``og:description``, ``twitter:description``, ``<meta name="description">``. The first one that is

- prose: at least 12 words, not the page title, no boilerplate ("cookies", "subscribe", "sign up",
  "all rights reserved", "click here", "newsletter", "javascript" ...);
- missing: fewer than half of its word 4-grams occur in the extracted text (when the first prose candidate
  is there, the lead was kept and nothing is added);
- shown: the page's body shows it as the start of an article paragraph (a ``<p>`` outside headers, asides,
  navigation, figures, links and lists, without a dek/standfirst/teaser/summary/related class): a teaser that
  lives only in the metadata, or a standfirst above the article, is not added;

is put before the text as its first paragraph, and the page records where it came from
(``ExtractedPage.lead_recovered``, the harvest event's ``lead_recovered``). At most one lead per page.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from memory_store.text import word_pattern

if TYPE_CHECKING:
    from lxml.html import HtmlElement

MIN_WORDS = 12
MAX_WORDS = 120
_BOILERPLATE = re.compile(
    r"\b(?:cookies?|subscribe|subscription|sign\s?up|sign\s?in|log\s?in|all rights reserved|click here|"
    r"newsletter|javascript|privacy policy|terms of (?:use|service)|advertis\w*|download (?:the|our) app|"
    r"follow us|breaking news,|latest news,|read more)\b",
    re.IGNORECASE,
)
_WORD = word_pattern("identifier")


def _grams(text: str, n: int = 4) -> list[tuple[str, ...]]:
    toks = [t.lower() for t in _WORD.findall(text)]
    return [tuple(toks[i : i + n]) for i in range(max(1, len(toks) - n + 1))] if toks else []


def jsonld_items(tree: HtmlElement) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for script in tree.xpath('//script[@type="application/ld+json"]'):
        try:
            data = json.loads(script.text_content())
        except (ValueError, TypeError):
            continue
        stack = [data]
        while stack:
            item = stack.pop(0)
            if isinstance(item, dict):
                items.append(item)
                stack.extend(v for v in item.values() if isinstance(v, (dict, list)))
            elif isinstance(item, list):
                stack.extend(item)
    return items


def _meta(tree: HtmlElement, key: str) -> str | None:
    for meta in tree.iter("meta"):
        name = (meta.get("property") or meta.get("name") or "").strip().lower()
        if name == key and (meta.get("content") or "").strip():
            return meta.get("content")
    return None


def candidates(tree: HtmlElement) -> list[tuple[str, str]]:
    """(source, text) of the page's statements of its own lead, in the order of preference."""
    out: list[tuple[str, str]] = []
    items = jsonld_items(tree)
    for item in items:
        body = item.get("articleBody")
        if isinstance(body, str) and body.strip():
            first = next((p for p in re.split(r"\n\s*\n|\n", body) if p.strip()), "")
            out.append(("json-ld articleBody", first))
            break
    for item in items:
        desc = item.get("description")
        if isinstance(desc, str) and desc.strip():
            out.append(("json-ld description", desc))
            break
    for key, source in (
        ("og:description", "og:description"),
        ("twitter:description", "twitter:description"),
        ("description", "meta description"),
    ):
        value = _meta(tree, key)
        if value:
            out.append((source, value))
    return [(s, " ".join(t.split())) for s, t in out]


_NOT_BODY = re.compile(r"dek|sub|standfirst|summary|teaser|excerpt|promo|related|caption|card|header|intro", re.I)


def _shown_as_paragraph(tree: HtmlElement, lead: str) -> bool:
    """Whether the page's body shows ``lead`` as the start of a paragraph of its article (a ``<p>`` outside
    headers, asides, navigation, figures, links and lists, with no dek/standfirst/teaser/related class)."""
    words = _WORD.findall(re.sub(r"(?:\.\.\.|…)\s*$", "", lead).lower())
    head = " ".join(words)  # all of it: a description that goes on past the paragraph is a teaser
    if len(words) < MIN_WORDS:
        return False
    for p in tree.xpath("//body//p"):
        text = " ".join(_WORD.findall(p.text_content().lower()))
        if not text.startswith(head):
            continue
        chain = [p, *p.iterancestors()]
        if any(
            n.tag in ("header", "aside", "nav", "figure", "figcaption", "footer", "a", "li")
            or _NOT_BODY.search(f"{n.get('class') or ''} {n.get('id') or ''}")
            for n in chain
        ):
            continue
        return True
    return False


def missing_lead(tree: HtmlElement, text: str, title: str | None) -> tuple[str, str] | None:
    """(source, lead) of the first candidate that is prose, when it is missing from ``text``; None when it is
    there (the extractor kept the lead) or no candidate is prose."""
    have = set(_grams(text))
    for source, lead in candidates(tree):
        words = lead.split()
        if not MIN_WORDS <= len(words) <= MAX_WORDS or _BOILERPLATE.search(lead):
            continue
        if title and " ".join(title.split()).lower() == lead.lower():
            continue
        grams = _grams(lead)
        if not grams:
            continue
        if sum(g in have for g in grams) / len(grams) >= 0.5:
            return None  # the page's lead is in the text already
        if _shown_as_paragraph(tree, lead):
            return source, lead  # the page shows it as its article's paragraph, the extractor dropped it
    return None
    return None
