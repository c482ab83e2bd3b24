"""PDF responses: text per page with pypdf (in a child process killed past ``timeout_s`` or its memory limit:
``pdf_child.py``), one page record per PDF, each chunk's selector ``pdf#page=N``
(the PDF page its text starts on), ``last_updated`` from the PDF's metadata (ModDate, else CreationDate). The
bytes are fetched by brt's document fetcher (allowlist and SSRF checked on every redirect hop, the byte cap
counted while the body streams in), never by the browser.

    extracted, page_texts = extract_pdf(data, url)       # None when the PDF has no readable text
    set_page_selectors(memory, url, page_texts)         # after the page is stored
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memory_store.errors import BrtException

from .. import url_safety
from .extract import ExtractedPage
from .net.politeness import retry_after

if TYPE_CHECKING:
    from memory_store import Memory

    from .models import HarvestEvent
    from .net.fetcher import DocumentFetcher, FetchResult
    from .reader import CrawlHost

__all__ = [
    "PDF_TYPES",
    "PdfLimit",
    "extract_pdf",
    "extract_pdf_bounded",
    "fetch_pdf",
    "is_pdf_candidate",
    "pdf_date",
    "set_page_selectors",
]

logger = logging.getLogger(__name__)

PDF_TYPES = ("application/pdf", "application/x-pdf")
#: Address space a PDF's extraction may use (its time is the charter's ``timeout_s``).
PDF_MEMORY_BYTES = 1 << 30
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
    """The PDF's text (pages separated by blank lines) and the text of each page, read in this process. Raises
    ValueError for bytes that are not a readable PDF. The harvest uses :func:`extract_pdf_bounded`."""
    from .pdf_child import read_pdf

    return _extracted(read_pdf(data), url)


class PdfLimit(BrtException):
    """A PDF's extraction passed its time or memory limit and was stopped."""


async def extract_pdf_bounded(
    data: bytes, url: str, *, timeout_s: float, memory_bytes: int = PDF_MEMORY_BYTES
) -> tuple[ExtractedPage | None, list[str]]:
    """:func:`extract_pdf` in a child process (``pdf_child.py``) that is killed after ``timeout_s`` or when it
    needs more than ``memory_bytes`` of address space (PdfLimit); also killed when the harvest stops or is
    cancelled meanwhile. Raises ValueError for bytes that are not a readable PDF."""
    import json
    import math
    import sys
    from pathlib import Path

    script = Path(__file__).with_name("pdf_child.py")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-I", str(script), str(int(memory_bytes)), str(max(1, math.ceil(timeout_s)) + 1),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(data), timeout=timeout_s)
    except asyncio.TimeoutError:
        raise PdfLimit(f"PDF extraction stopped after {timeout_s:g} s (timeout_s)") from None
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    try:
        raw = json.loads(out.decode("utf-8"))
    except ValueError:
        raw = None
    if proc.returncode != 0 or not isinstance(raw, dict) or raw.get("limit"):  # a limit's signal, or MemoryError
        raise PdfLimit(f"PDF extraction stopped: over its limits ({memory_bytes // 1_048_576} MB, {timeout_s:g} s)")
    if "error" in raw:
        raise ValueError(str(raw["error"]))
    return _extracted(raw, url)


def _extracted(raw: dict[str, Any], url: str) -> tuple[ExtractedPage | None, list[str]]:
    texts = [str(t) for t in raw.get("texts") or []]
    text = "\n\n".join(t for t in texts if t)
    if len(text) < _MIN_CHARS:
        return None, texts
    title = str(raw.get("title") or "").strip() or None
    modified, created = pdf_date(raw.get("modified")), pdf_date(raw.get("created"))
    last_updated = modified or created
    source = "modified" if modified else "published" if created else None
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
    parsed = url_safety.parse(event.final_url or event.url)
    path = (parsed.path if parsed is not None else "").lower()
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
        extracted, page_texts = await extract_pdf_bounded(data, url, timeout_s=float(host.settings.timeout_s))
    except ValueError as exc:
        host.finish(event, "skipped", str(exc))
        return [], False
    except PdfLimit as exc:
        logger.info("%s: %s", url, exc)
        host.finish(event, "failed", str(exc))
        return [], False
    finally:
        event.timings.extract_s = time.monotonic() - t1
    if extracted is None:
        host.finish(event, "skipped", "no readable text (PDF)")
        return [], False
    return await host.queue_pdf(event, extracted, page_texts, result.status, ctype, url)
