"""The evidence table as CSV (RFC 4180): one row per evidence block.

Columns: section, n, quote, url, title, last_updated, score, chunk_id, conflict (what the block conflicts
with, "#2: 2.5 seconds vs 3 seconds"; empty when nothing), origin (``harvest``, or ``added without a harvest``
for a page an agent added with ``add_page``; a block whose ``also_at`` pages include one says so too). Fields
are quoted when they hold a comma, a quote or a line break, quotes doubled, lines end with CRLF. Page text and
a snapshot's records are untrusted: every
cell (a date, a number or an id from a crafted snapshot as much as a quote) that would start with ``=``, ``+``,
``-``, ``@``, a tab or a carriage return (a formula to a spreadsheet) gets a leading ``'``.
"""

from __future__ import annotations

import csv
import io
from typing import TYPE_CHECKING

from .bundle import AuditBundle

if TYPE_CHECKING:
    from ..synthesis_record import BlockRecord

__all__ = ["COLUMNS", "render_csv"]

COLUMNS = ["section", "n", "quote", "url", "title", "last_updated", "score", "chunk_id", "conflict", "origin"]
_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: object) -> str:
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(_FORMULA) else text


def render_csv(bundle: AuditBundle) -> str:
    """The evidence table of ``bundle``'s synthesis."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(COLUMNS)
    conflicts = bundle.conflict_blocks()
    for s in bundle.sections:
        for b in s.blocks:
            writer.writerow(
                [
                    _cell(value)  # every cell: a snapshot's date, number or id may be a formula too
                    for value in (
                        s.title,
                        b.n,
                        b.quote,
                        b.url,
                        bundle.title_of(b.url),
                        b.last_updated or "",
                        f"{b.score:.4f}",
                        b.chunk_id,
                        "; ".join(conflicts.get((str(s.title), b.n), [])),
                        _origin(bundle, b),
                    )
                ]
            )
    return out.getvalue()


def _origin(bundle: AuditBundle, block: BlockRecord) -> str:
    """``harvest``, or ``added without a harvest`` (naming the also-at pages that were, when only those)."""
    from ..evidence.results import ADDED_MARK

    if bundle.added(block.url, block.origin):
        return ADDED_MARK
    also = [a.url for a in block.also_at if bundle.added(a.url, a.origin)]
    return f"harvest; also at {', '.join(also)}: {ADDED_MARK}" if also else "harvest"
