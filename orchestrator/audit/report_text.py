"""The reports ``brt check`` reads that are not Markdown, as the Markdown it checks.

- **JSON**: a synthesis as ``brt synthesize --json`` prints it and writes beside its Markdown (sections with
  blocks, "also at" sources, gaps, conflicts, agreements, acceptance verdicts): rendered with
  ``report_md.synthesis_markdown``, the lines ``brt report --format md`` writes, so every field is checked (a
  block's quote, URL and date; the agreements against their blocks; the verdicts against the record).
- **HTML**: brt's HTML report (``report_html``) read by its structure: each evidence block becomes its
  evidence line, each agreement its ``[X Agreement]`` line, each conflict card its ``[X Conflict]`` line, the
  acceptance table its verdict lines, the sources table a Sources list; the harvest table, the navigation, the
  concept map and the report's remarks on itself (``p.note``: "the charter states no acceptance criteria") are
  left out. Any other HTML is read as text: paragraphs, list items, table rows, block quotes and
  links.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["as_markdown", "html_markdown", "json_markdown"]


def as_markdown(text: str, name: str) -> str:
    """``text`` (the report file ``name``) as Markdown: JSON and HTML converted, Markdown as it is."""
    head = text.lstrip()[:200].lower()
    if name.lower().endswith(".json") or head.startswith("{"):
        return json_markdown(text)
    if name.lower().endswith((".html", ".htm")) or head.startswith(("<!doctype html", "<html")):
        return html_markdown(text)
    return text


def json_markdown(text: str) -> str:
    """A synthesis JSON as the Markdown of its report (ValueError when it is not one)."""
    from pathlib import Path

    from ..synthesis_record import SynthesisRecord
    from .bundle import AuditBundle
    from .report_md import synthesis_markdown

    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("sections"), list):
        raise ValueError("not the JSON of a synthesis (no sections)")
    bundle = AuditBundle("json", Path("report.json"), str(doc.get("charter_id") or ""), str(doc.get("title") or ""),
                         doc.get("goal"), SynthesisRecord.from_json(doc))
    return synthesis_markdown(bundle)


_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|])")


def _text(el: Any) -> str:
    return " ".join(el.text_content().split())


def _md(text: str) -> str:
    """Page text for one Markdown line: nothing in it makes a link, code, emphasis or HTML (quotes stay)."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(text.split()))


def _inline(el: Any) -> str:
    """An element's text as Markdown, its links as ``[text](href)``."""
    parts = [_md(el.text or "")]
    for child in el:
        if child.tag == "a" and child.get("href"):
            parts.append(f"[{_md(_text(child))}]({child.get('href')})")
        elif child.tag in ("script", "style", "svg"):
            pass
        else:
            parts.append(_inline(child))
        parts.append(_md(child.tail or ""))
    return " ".join(p for p in parts if p)


def html_markdown(text: str) -> str:
    """An HTML report as Markdown (see the module docstring)."""
    import lxml.html

    root = lxml.html.document_fromstring(text.encode("utf-8"))
    body = root.find("body")
    out: list[str] = []
    labels: dict[str, str] = {}  # section title -> label
    _walk(body if body is not None else root, out, labels)
    return "\n\n".join(line for line in out if line.strip()) + "\n"


_SKIP = {"script", "style", "svg", "nav", "footer", "head", "template", "noscript"}


def _walk(el: Any, out: list[str], labels: dict[str, str]) -> None:
    for child in el:
        tag = child.tag if isinstance(child.tag, str) else ""
        cls = (child.get("class") or "").split()
        if tag in _SKIP or child.get("id") in ("harvest", "concepts"):
            continue
        if tag == "section" and child.get("id") == "conflicts":
            _conflicts(child, out, labels)
        elif tag == "article" and "block" in cls:
            _block(child, out, labels)
        elif tag == "p" and "agree" in cls:
            out.append(f"[{labels.get('', '')} Agreement] {_md(_text(child))}")
        elif tag == "p" and "gap" in cls and child.find("span") is not None:
            span = child.find("span")
            out.append(f"[{_md(_text(span))}] {_md(span.tail or '')}")
        elif tag == "p" and "question" in cls:
            out.append(f"_{_md(_text(child))}_")
        elif tag == "p" and "notes" in cls:  # the charter's notes, as the Markdown report words them
            out.append(f"Notes: {_md(_text(child))}")
        elif tag == "p" and "note" in cls:  # the report's remark on itself ("no acceptance criteria"): no claim
            continue
        elif tag == "table" and child.getparent() is not None and child.getparent().get("id") == "acceptance":
            _acceptance(child, out)
        elif re.fullmatch(r"h[1-6]", tag):
            out.append("#" * int(tag[1]) + " " + _md(_text(child)))
            labels.pop("", None)
        elif tag in ("p", "li", "dd", "dt", "figcaption", "caption"):
            out.append(("- " if tag == "li" else "") + _inline(child))
        elif tag == "table":
            _table(child, out)
        elif tag == "blockquote" and "block" not in cls:
            out.append("> " + _inline(child))
        else:
            _walk(child, out, labels)


def _block(el: Any, out: list[str], labels: dict[str, str]) -> None:
    """An evidence block of brt's HTML report as its evidence line."""
    from ..untrusted import evidence_line

    quote = _text(el.find(".//blockquote")) if el.find(".//blockquote") is not None else ""
    tag = el.find(".//span[@class='tag']")
    link = el.find(".//a")
    m = re.match(r"(.+) Evidence #(\d+)$", _text(tag)) if tag is not None else None
    date = re.search(r"last updated: (\S+)", _text(el))
    if m is None or link is None:
        out.append(_inline(el))
        return
    labels[""] = m.group(1)
    section = el.getparent().find("h2") if el.getparent() is not None else None
    if section is not None:
        labels[_text(section)] = m.group(1)
    out.append(evidence_line(m.group(1), int(m.group(2)), quote.strip("“”"), _text(link),
                             date.group(1) if date else None))


def _table(table: Any, out: list[str]) -> None:
    """A table as a Markdown table: its first row the header."""
    rows = ["| " + " | ".join(_inline(c) for c in row if c.tag in ("td", "th")) + " |" for row in table.iter("tr")]
    if rows:
        out.append("\n".join([rows[0], "|" + "---|" * max(rows[0].count(" | ") + 1, 1), *rows[1:]]))


def _acceptance(table: Any, out: list[str]) -> None:
    for row in table.iter("tr"):
        cells = [_text(c) for c in row if c.tag == "td"]
        if len(cells) >= 3:
            out.append(f"- **{_md(cells[1])}**: {_md(cells[0])} — {_md(cells[2])}")


def _conflicts(section: Any, out: list[str], labels: dict[str, str]) -> None:
    """The conflicts section: each card as its ``[X Conflict]`` line (the agreements repeat the sections')."""
    out.append("## " + _md(_text(section.find("h2"))) if section.find("h2") is not None else "")
    for card in section.iter("div"):
        if "conflict-card" not in (card.get("class") or ""):
            continue
        first = card.find("p")
        if first is None:
            continue
        m = re.match(r"conflict in (.+?): (.+)$", _text(first))
        if m:
            out.append(f"[{labels.get(m.group(1), m.group(1))} Conflict] {_md(m.group(2))}")
