"""PDF responses: text per page with pypdf, one page record per PDF, each chunk's selector ``pdf#page=N``
(the PDF page its text starts on), ``last_updated`` from the PDF's metadata (ModDate, else CreationDate).

    extracted, page_texts = extract_pdf(data, url)       # None when the PDF has no readable text
    set_page_selectors(memory, url, page_texts)         # after the page is stored
"""

from __future__ import annotations

import io
import logging
import re
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .extract import ExtractedPage

if TYPE_CHECKING:
    from memory_store import Memory

__all__ = ["PDF_TYPES", "extract_pdf", "pdf_date", "set_page_selectors"]

logger = logging.getLogger(__name__)

PDF_TYPES = ("application/pdf", "application/x-pdf")
_MIN_CHARS = 40
_WS = re.compile(r"\s+")
_PDF_DATE = re.compile(r"^(?:D:)?(\d{4})(\d{2})?(\d{2})?")


def pdf_date(value: Any) -> str | None:
    """``D:20240315120000+01'00'`` (or a datetime) -> ``2024-03-15``."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.date().isoformat()
    m = _PDF_DATE.match(str(value).strip())
    if not m:
        return None
    year, month, day = m.group(1), m.group(2) or "01", m.group(3) or "01"
    try:
        return datetime(int(year), int(month), int(day)).date().isoformat()
    except ValueError:
        return None


def extract_pdf(data: bytes, url: str) -> tuple[ExtractedPage | None, list[str]]:
    """The PDF's text (pages separated by blank lines) and the text of each page. Raises ValueError for
    bytes that are not a readable PDF."""
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        texts = []
        for page in reader.pages:
            try:
                texts.append((page.extract_text() or "").strip())
            except Exception as exc:  # one bad page does not lose the others
                logger.info("cannot read a page of %s: %s", url, exc)
                texts.append("")
        meta = reader.metadata or {}
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise ValueError(f"unreadable PDF: {exc}") from exc
    text = "\n\n".join(t for t in texts if t)
    if len(text) < _MIN_CHARS:
        return None, texts
    title = None
    last_updated = source = None
    try:
        title = (meta.get("/Title") or None) and str(meta.get("/Title")).strip() or None
        modified = pdf_date(meta.get("/ModDate"))
        created = pdf_date(meta.get("/CreationDate"))
    except Exception:  # odd metadata types
        modified = created = None
    if modified:
        last_updated, source = modified, "modified"
    elif created:
        last_updated, source = created, "published"
    extracted = ExtractedPage(
        url=url,
        title=title,
        text=text,
        last_updated=last_updated,
        last_updated_source=source,  # type: ignore[arg-type]
        selector="pdf",
    )
    return extracted, texts


def _norm(text: str) -> str:
    return _WS.sub(" ", text).strip().lower()


def page_of(chunk_text: str, page_texts: list[str]) -> int:
    """The 1-based PDF page where ``chunk_text`` starts (best effort; 1 when not found)."""
    pages = [_norm(t) for t in page_texts]
    head = _norm(chunk_text)
    for size in (120, 60, 25):
        probe = head[:size]
        if not probe:
            break
        for i, page in enumerate(pages):
            if probe in page:
                return i + 1
    return 1


def set_page_selectors(memory: Memory, url: str, page_texts: list[str]) -> int:
    """Set ``pdf#page=N`` as the selector of each chunk of the stored PDF ``url``; returns chunks updated."""
    import numpy as np

    record = memory.page(url)
    if record is None or not record.chunk_ids:
        return 0
    store = memory._store  # noqa: SLF001 - the store has no per-chunk selector API
    with memory.write_lock():
        rows = store.chunk_rows(record.chunk_ids, include_vectors=True)
        changed = []
        for row in rows:
            if row.get("url") != url:
                continue  # a chunk whose primary page is another document keeps that page's selector
            selector = f"pdf#page={page_of(row['text'], page_texts)}"
            if row.get("selector") != selector:
                row["selector"] = selector
                changed.append(row)
        if changed:
            vectors = np.asarray([r.pop("embedding") for r in changed], dtype=np.float32)
            store.upsert_chunks(changed, vectors)
    return len(changed)
