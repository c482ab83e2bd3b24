"""PDF responses: text per page with pypdf, one page record per PDF, each chunk's selector ``pdf#page=N``
(the PDF page its text starts on), ``last_updated`` from the PDF's metadata (ModDate, else CreationDate). The
bytes are fetched by brt's document fetcher (allowlist and SSRF checked on every redirect hop, the byte cap
counted while the body streams in), never by the browser.

    extracted, page_texts = extract_pdf(data, url)       # None when the PDF has no readable text
    set_page_selectors(memory, url, page_texts)         # after the page is stored
"""

from __future__ import annotations

import asyncio
import io
import logging
import re
import time
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .extract import ExtractedPage
from .net.politeness import retry_after

if TYPE_CHECKING:
    from memory_store import Memory

    from .models import HarvestEvent
    from .net.fetcher import DocumentFetcher, FetchResult
    from .reader import CrawlHost

__all__ = ["PDF_TYPES", "extract_pdf", "fetch_pdf", "is_pdf_candidate", "pdf_date", "set_page_selectors"]

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
    return memory.set_selectors(url, lambda text: f"pdf#page={page_of(text, page_texts)}")


def is_pdf_candidate(event: HarvestEvent, *, replay: bool) -> bool:
    """Whether a page the browser did not show (skipped for its type, or downloaded) should be read as a PDF:
    its type is a PDF's, or it was a download of a ``.pdf`` path. Never in a replay (nothing is fetched)."""
    if replay or event.outcome != "skipped":
        return False
    reason = event.reason or ""
    if any(f"({t})" in reason for t in PDF_TYPES):
        return True
    path = urlsplit(event.final_url or event.url).path.lower()
    return reason == "unsupported content type (download)" and path.endswith(".pdf")


async def fetch_pdf(
    host: CrawlHost,
    fetcher: DocumentFetcher,
    event: HarvestEvent,
    deadline: float,
    t0: float,
    fetched: FetchResult | None = None,
) -> tuple[list[str], bool]:
    """Fetch a PDF's bytes with the document ``fetcher``, extract it and hand it to the writer (through
    ``host``). ``fetched`` is the navigation's own fetch result when it holds the whole PDF already (then nothing
    is fetched again). Returns (links, queued) like a reader's attempt."""
    url = event.final_url or event.url
    cap = host.max_page_bytes
    try:
        if fetched is not None and fetched.kind == "ok" and fetched.content_type in PDF_TYPES:
            result = fetched
        else:
            result = await fetcher.fetch(url, deadline=deadline, max_bytes=cap)
    finally:
        event.timings.fetch_s = time.monotonic() - t0
    event.final_url = result.url
    event.status = result.status
    if result.kind == "blocked":
        reason = result.reason or "blocked"
        host.finish(
            event,
            "blocked",
            f"final URL not on allowed_domains: {result.url}"
            if reason == "not on allowed_domains"
            else f"{reason}: {result.url}",
        )
        return [], False
    if result.kind == "too large":
        host.finish(event, "skipped", result.reason)
        return [], False
    if result.kind != "ok":
        host.finish(event, "failed", f"cannot fetch the PDF: {result.reason}")
        return [], False
    if result.status is not None and result.status >= 400:
        event.retry_after = retry_after(dict(result.headers))
        host.finish(event, "failed", f"HTTP {result.status}")
        return [], False
    ctype = result.content_type or ""
    if ctype not in PDF_TYPES:
        host.finish(event, "skipped", f"unsupported content type ({ctype or 'none'})")
        return [], False
    data = result.body
    url = result.url
    event.bytes_read = len(data)
    if len(data) > cap:
        host.finish(event, "skipped", f"too large ({len(data)} bytes, cap {cap})")
        return [], False
    t1 = time.monotonic()
    try:
        extracted, page_texts = await asyncio.to_thread(extract_pdf, data, url)
    except ValueError as exc:
        host.finish(event, "skipped", str(exc))
        return [], False
    finally:
        event.timings.extract_s = time.monotonic() - t1
    if extracted is None:
        host.finish(event, "skipped", "no readable text (PDF)")
        return [], False
    return await host.queue_pdf(event, extracted, page_texts, result.status, ctype, url)
