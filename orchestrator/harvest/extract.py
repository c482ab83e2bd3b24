"""Extraction: the one wrapper around trafilatura. HTML in, readable text, title, headings and a
last-updated date out."""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from lxml.html import HtmlElement

__all__ = ["ExtractedPage", "LastUpdatedSource", "decode_html", "extract_page", "select_region"]

logger = logging.getLogger(__name__)

#: Where a page's date came from. "http-last-modified" is no longer recorded (a server header is not a date the
#: page states); stores and snapshots written before may still hold it.
LastUpdatedSource = Literal["modified", "published", "http-last-modified"]


@dataclass
class ExtractedPage:
    """The readable content of one page."""

    url: str
    title: str | None
    text: str
    last_updated: str | None = None  # YYYY-MM-DD
    last_updated_source: LastUpdatedSource | None = None
    headings: list[str] = field(default_factory=list)
    selector: str = "body"
    lead_recovered: str | None = None  # where a lead the extractor dropped came from (orchestrator/lead.py)


# Meta tags (property / name / itemprop / http-equiv, lower-case) that state when a page was last modified.
_MODIFIED_META = (
    "article:modified_time",
    "article:modified",
    "og:updated_time",
    "og:modified_time",
    "datemodified",
    "dc.date.modified",
    "dcterms.modified",
    "dc.modified",
    "last-modified",
    "lastmodified",
    "last_modified",
    "modified",
    "revised",
    "date.modified",
    "updated",
    "sailthru.lastmodified",
)
_ISO_DATE_RE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
# One extraction at a time in the whole process. The harvest extracts in worker threads, and trafilatura called
# from several threads at once crashes the process now and then with no Python traceback (SIGSEGV, or glibc's
# "double free or corruption": adbar/trafilatura issues #840 and #925; seen once here in a 181-page benchmark).
_EXTRACTION_LOCK = threading.RLock()
_MIN_YEAR = 1990


def extract_page(
    html: str,
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    region_html: str | None = None,
    selector: str | None = None,
) -> ExtractedPage | None:
    """Extract the readable text of ``html`` (the full rendered page).

    ``region_html`` (the outer HTML of the charter's selector region) limits the text to that region; the
    page's ``<head>`` is kept so the metadata still counts. ``headers`` are the HTTP response headers (a
    Last-Modified among them is not taken as the page's date). Returns None when nothing readable is found.
    Calls are serialised (``_EXTRACTION_LOCK``)."""
    with _EXTRACTION_LOCK:
        return _extract_page(html, url, headers=headers, region_html=region_html, selector=selector)


def _extract_page(
    html: str,
    url: str,
    *,
    headers: Mapping[str, str] | None,
    region_html: str | None,
    selector: str | None,
) -> ExtractedPage | None:
    from lxml import etree
    from lxml.html import document_fromstring

    if not html or not html.strip():
        return None
    try:
        full_tree = document_fromstring(html)
    except (etree.ParserError, ValueError) as exc:
        logger.info("cannot parse HTML of %s: %s", url, exc)
        return None

    source_html = html
    if region_html:
        source_html = _wrap_region(full_tree, region_html)

    document = _trafilatura(source_html, url)
    text = clean_text(document.text if document is not None else "")
    if not text and region_html:
        # The region may be too small for trafilatura's main-content heuristics: take its plain text.
        text = _region_text(region_html)
    if not text:
        return None

    title = clean_text(getattr(document, "title", None) or "") or _html_title(full_tree)
    lead_source = None
    if not region_html:  # a charter's selector region is what the charter wants, nothing more
        from .lead import missing_lead

        found = missing_lead(full_tree, text, title)
        if found is not None:
            lead_source, lead = found
            text = f"{lead}\n{text}"
    last_updated, source = _last_updated(full_tree, document, headers)
    headings = _headings(document_fromstring(region_html) if region_html else full_tree)
    return ExtractedPage(
        url=url,
        title=title or None,
        text=text,
        last_updated=last_updated,
        last_updated_source=source,
        headings=headings,
        selector=selector or "body",
        lead_recovered=lead_source,
    )


_CHARSET = re.compile(rb"charset\s*=\s*[\"']?\s*([\w.:-]+)", re.IGNORECASE)
_META_CHARSET = re.compile(rb"<meta[^>]+charset\s*=\s*[\"']?\s*([\w.:-]+)", re.IGNORECASE)
_BOMS = ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))


def decode_html(body: bytes | None, headers: Mapping[str, str] | None = None) -> str | None:
    """``body`` as text, in the encoding a browser would pick: a byte-order mark, else the charset the
    Content-Type names, else a ``<meta charset>`` in the first 1024 bytes, else UTF-8 (bytes that do not decode
    are replaced). None for no body."""
    if not body:
        return None
    for bom, name in _BOMS:
        if body.startswith(bom):
            return body[len(bom) :].decode(name, "replace")
    ctype = next((v for k, v in (headers or {}).items() if k.lower() == "content-type"), "")
    declared = _CHARSET.search(ctype.encode("latin-1", "replace")) or _META_CHARSET.search(body[:1024])
    name = declared.group(1).decode("ascii", "replace").lower() if declared else "utf-8"
    if name in ("utf-16", "utf-16le", "utf-16be"):  # a meta tag that says UTF-16 in ASCII bytes is wrong
        name = "utf-8"
    try:
        return body.decode(name, "replace")
    except LookupError:  # a charset Python does not know
        return body.decode("utf-8", "replace")


def select_region(html: str, selector: str) -> str | None:
    """The outer HTML of the elements matching the CSS ``selector`` in ``html`` (None when nothing matches).
    The harvester takes the region from the live DOM; this is the offline equivalent."""
    from lxml import etree
    from lxml.html import document_fromstring, tostring

    with _EXTRACTION_LOCK:
        try:
            tree = document_fromstring(html)
            nodes = tree.xpath(_css_to_xpath(selector))
        except (etree.ParserError, ValueError, etree.XPathError) as exc:
            logger.info("selector %r failed: %s", selector, exc)
            return None
        if not nodes:
            return None
        return "\n".join(tostring(node, encoding="unicode") for node in nodes)


_SIMPLE_CSS_RE = re.compile(r"^([a-zA-Z][a-zA-Z0-9-]*|\*)?((?:[#.][A-Za-z0-9_-]+)*)\Z")


def _css_to_xpath(selector: str) -> str:
    """XPath for a CSS selector: cssselect when installed, else simple selectors (``tag``, ``#id``,
    ``.class``, ``tag.class#id``, descendant combinators and comma lists)."""
    try:
        from cssselect import GenericTranslator
    except ImportError:
        pass
    else:
        return GenericTranslator().css_to_xpath(selector)
    alternatives = []
    for group in selector.split(","):
        steps = []
        for compound in group.split():
            match = _SIMPLE_CSS_RE.match(compound)
            if not match:
                raise ValueError(f"unsupported CSS selector {selector!r} (install cssselect for full CSS)")
            tag, rest = match.group(1) or "*", match.group(2)
            preds = []
            for kind, name in re.findall(r"([#.])([A-Za-z0-9_-]+)", rest):
                if kind == "#":
                    preds.append(f"@id='{name}'")
                else:
                    preds.append(f"contains(concat(' ', normalize-space(@class), ' '), ' {name} ')")
            steps.append(tag + "".join(f"[{p}]" for p in preds))
        if not steps:
            raise ValueError(f"empty CSS selector {selector!r}")
        alternatives.append("//" + "//".join(steps))
    return " | ".join(alternatives)


# -- trafilatura ------------------------------------------------------------------------------------------


def _trafilatura(html: str, url: str) -> Any:
    import trafilatura

    try:
        return trafilatura.bare_extraction(
            html,
            url=url,
            with_metadata=True,
            include_comments=False,
            include_tables=True,
            include_formatting=False,
            include_links=False,
            include_images=False,
            favor_precision=False,
            favor_recall=False,
            deduplicate=False,
        )
    except Exception as exc:  # trafilatura has raised assorted errors on odd markup; a page must not crash us
        logger.warning("trafilatura failed on %s: %s", url, exc)
        return None


def _wrap_region(full_tree: HtmlElement, region_html: str) -> str:
    from lxml.html import tostring

    head = full_tree.find("head")
    head_html = tostring(head, encoding="unicode") if head is not None else "<head></head>"
    lang = full_tree.get("lang")
    lang_attr = f' lang="{lang}"' if lang else ""
    return f"<!DOCTYPE html><html{lang_attr}>{head_html}<body>{region_html}</body></html>"


def _region_text(region_html: str) -> str:
    from lxml.html import fragment_fromstring

    try:
        node = fragment_fromstring(region_html, create_parent="div")
    except Exception:
        return ""
    for bad in node.xpath(".//script|.//style|.//noscript|.//template"):
        bad.drop_tree()
    lines = [clean_text(line) for line in node.text_content().splitlines()]
    return "\n".join(line for line in lines if line)


def clean_text(text: str) -> str:
    """Trim each line, drop runs of blank lines; paragraphs stay on their own lines."""
    lines = [re.sub(r"[ \t\u00a0]+", " ", line).strip() for line in (text or "").splitlines()]
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip()


def _html_title(tree: HtmlElement) -> str | None:
    node = tree.find(".//title")
    if node is not None and node.text_content().strip():
        return clean_text(node.text_content())
    for tag in ("h1", "h2"):
        node = tree.find(f".//{tag}")
        if node is not None and node.text_content().strip():
            return clean_text(node.text_content())
    return None


def _headings(tree: HtmlElement) -> list[str]:
    out: list[str] = []
    for node in tree.xpath("//h1|//h2|//h3|//h4"):
        text = " ".join(node.text_content().split())
        if text and text not in out:
            out.append(text)
    return out[:100]


# -- dates ------------------------------------------------------------------------------------------------


def _last_updated(
    tree: HtmlElement, document: Any, headers: Mapping[str, str] | None
) -> tuple[str | None, LastUpdatedSource | None]:
    """The date the page states: when it was modified (meta tags, microdata, JSON-LD), else the date trafilatura
    reads from its metadata and visible text. A server's ``Last-Modified`` header is not the page's date (a static
    server sends the file's modification time, which a checkout or a deploy sets to now): it is never used here;
    the HAR keeps it as a response header."""
    modified = _modified_date(tree)
    if modified:
        return modified, "modified"
    published = _normalise_date(getattr(document, "date", None) or "") if document is not None else None
    if published:
        return published, "published"
    if _header(headers, "last-modified"):
        logger.debug("a page states no date; its Last-Modified header is not taken as one")
    return None, None


def _modified_date(tree: HtmlElement) -> str | None:
    """The page's own statement of when it was last modified (meta tags, microdata, JSON-LD)."""
    candidates: list[str] = []
    for meta in tree.iter("meta"):
        key = (
            (meta.get("property") or meta.get("name") or meta.get("itemprop") or meta.get("http-equiv") or "")
            .strip()
            .lower()
        )
        if key in _MODIFIED_META:
            candidates.append(meta.get("content") or "")
    for node in tree.xpath('//*[@itemprop="dateModified"]'):
        candidates.append(node.get("datetime") or node.get("content") or node.text_content())
    for script in tree.xpath('//script[@type="application/ld+json"]'):
        candidates.extend(_jsonld_modified(script.text_content()))
    for value in candidates:
        found = _normalise_date(value)
        if found:
            return found
    return None


def _jsonld_modified(raw: str) -> list[str]:
    try:
        data = json.loads(raw)
    except (ValueError, TypeError):
        match = re.search(r'"dateModified"\s*:\s*"([^"]+)"', raw or "")
        return [match.group(1)] if match else []
    found: list[str] = []
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            value = item.get("dateModified")
            if isinstance(value, str):
                found.append(value)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def _normalise_date(value: str) -> str | None:
    """YYYY-MM-DD from an ISO date/datetime or an RFC 2822 date; None when not a plausible date."""
    value = (value or "").strip()
    if not value:
        return None
    match = _ISO_DATE_RE.search(value)
    parsed: date | None = None
    if match:
        try:
            parsed = date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
        except ValueError:
            parsed = None
    if parsed is None:
        try:
            parsed = parsedate_to_datetime(value).date()
        except (TypeError, ValueError, IndexError):
            parsed = None
    if parsed is None or parsed.year < _MIN_YEAR or parsed.year > datetime.now().year + 1:
        return None
    return parsed.isoformat()


def _header(headers: Mapping[str, str] | None, name: str) -> str | None:
    if not headers:
        return None
    for key, value in headers.items():
        if key.lower() == name:
            return value
    return None
