"""One page into a charter's store: the path shared by the harvest (pages the browser read) and the MCP server's
``add_page`` (pages an agent already has, e.g. read through Chrome DevTools MCP).

    ingest_page(charter, url, html=... | text=..., selector=None, last_updated=None) -> IngestResult

The same allowlist (the URL must be http(s) on ``allowed_domains``; otherwise nothing is stored, not even an
empty store is created), the same extraction (trafilatura over the page or the charter's selector region), the
same chunking, embedding and store path (``Memory.add_many``) as a harvest.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from memory_store import PageInput
from memory_store.clock import now

from ..config import open_memory
from ..egress import EgressPolicy
from ..errors import PageRefused
from ..url_safety import hostname
from .extract import ExtractedPage, clean_text, extract_page, select_region
from .net.urls import canonical_url, is_http_url

if TYPE_CHECKING:
    from memory_store import Memory

    from ..charter import Charter

__all__ = ["IngestResult", "PageRefused", "ingest_page", "page_input", "prepare_page", "update_concept_index"]

logger = logging.getLogger(__name__)

_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}\Z")


@dataclass
class IngestResult:
    """What ``ingest_page`` stored."""

    url: str
    title: str | None
    selector: str
    last_updated: str | None
    last_updated_source: str | None
    chunk_ids: list[str]
    text: str

    @property
    def chunks(self) -> int:
        return len(self.chunk_ids)


def page_input(
    page: ExtractedPage,
    *,
    requested_url: str | None = None,
    fetched_at: str | None = None,
    status: int | None = None,
    content_type: str | None = None,
) -> PageInput:
    """The store's ``PageInput`` for an extracted page (what the harvest's writer and add_page hand to
    ``Memory.add_many``)."""
    return PageInput(
        url=page.url,
        text=page.text,
        selector=page.selector,
        last_updated=page.last_updated,
        title=page.title,
        requested_url=requested_url,
        last_updated_source=page.last_updated_source,
        fetched_at=fetched_at,
        status=status,
        content_type=content_type,
    )


def check_url(charter: Charter, url: str) -> str:
    """``url`` in canonical form when it is an absolute http(s) URL on the charter's allowlist; else PageRefused."""
    if not isinstance(url, str) or not is_http_url(url):
        raise PageRefused(f"refused {url!r}: only absolute http(s) URLs can be stored")
    from ..url_safety import web_refusal

    refused = web_refusal(url)  # security: the one scheme rule; no user:pass@ stored or cited
    if refused is not None:
        raise PageRefused(f"refused the URL given: {refused}; nothing was stored")
    if not EgressPolicy.of(charter.allowed_domains).permits(url):
        raise PageRefused(
            f"refused {url}: its host is not on the charter's allowed_domains "
            f"({', '.join(charter.allowed_domains)}); nothing was stored"
        )
    return canonical_url(url)


def prepare_page(
    charter: Charter,
    url: str,
    *,
    html: str | None = None,
    text: str | None = None,
    selector: str | None = None,
    last_updated: str | None = None,
) -> ExtractedPage:
    """Check and extract one page given as HTML (extracted like a harvested page; ``selector``, else the
    charter's selector for the host, picks the region) or as plain text (stored as given, whitespace tidied).
    Raises PageRefused for anything that may not be stored."""
    url = check_url(charter, url)
    if (html is None) == (text is None):
        raise PageRefused("give exactly one of html or text")
    cap = int(getattr(charter.harvest, "max_page_bytes", 0) or 0)
    size = len((html if html is not None else text or "").encode("utf-8", "replace"))
    if cap and size > cap:  # security: the harvest's per-page cap applies to add_page too
        raise PageRefused(
            f"too large ({size} bytes, cap {cap}: the charter's harvest.max_page_bytes); nothing was stored"
        )
    if last_updated is not None and last_updated != "":
        if not _DATE_RE.match(last_updated) or not _valid_date(last_updated):
            raise PageRefused(f"last_updated must be a date YYYY-MM-DD, got {last_updated!r}")
    else:
        last_updated = None
    if html is not None:
        if not html.strip():
            raise PageRefused(f"no readable text in the HTML given for {url}; nothing was stored")
        chosen = selector or charter.selector_for(hostname(url))
        region = select_region(html, chosen) if chosen else None
        if chosen and not region:
            if selector:
                raise PageRefused(f"selector {selector!r} matched nothing in the HTML given for {url}")
            chosen = None  # the charter's selector does not fit this page: the whole page, as the harvest does
        extracted = extract_page(html, url, region_html=region, selector=chosen)
        if extracted is None:
            raise PageRefused(f"no readable text in the HTML given for {url}; nothing was stored")
    else:
        cleaned = clean_text(text or "")
        if not cleaned:
            raise PageRefused(f"the text given for {url} is empty; nothing was stored")
        extracted = ExtractedPage(url=url, title=None, text=cleaned, selector=selector or "body")
    if last_updated:
        extracted.last_updated = last_updated
        extracted.last_updated_source = "provided"  # type: ignore[assignment]
    return extracted


def ingest_page(
    charter: Charter,
    url: str,
    *,
    html: str | None = None,
    text: str | None = None,
    selector: str | None = None,
    last_updated: str | None = None,
    memory: Memory | None = None,
) -> IngestResult:
    """Extract, chunk, embed and store one page (replacing the URL's previous version, as a re-harvest does),
    then bring the concept index up to date as a harvest does. Nothing is stored (and no store is created)
    when the page is refused."""
    extracted = prepare_page(charter, url, html=html, text=text, selector=selector, last_updated=last_updated)
    if memory is None:
        memory = open_memory(charter)
    from memory_store.errors import StoreLocked

    try:
        lock = memory.harvest_lock()  # a harvest records its pages' provenance when it ends: not meanwhile
        lock.__enter__()
    except StoreLocked as exc:
        raise PageRefused(f"not now, nothing was stored: {exc}") from None
    try:
        fetched_at = now()
        ids = memory.add_many(
            [
                page_input(
                    extracted,
                    requested_url=url,
                    fetched_at=fetched_at,
                    content_type="text/html" if html is not None else "text/plain",
                )
            ]
        )
        _record_added(memory, extracted.url, url, fetched_at)
    finally:
        lock.__exit__(None, None, None)
    if charter.memory.use_concept_index:  # the concept index follows the store, as after a harvest
        update_concept_index(charter, memory)
    return IngestResult(
        url=extracted.url,
        title=extracted.title,
        selector=extracted.selector,
        last_updated=extracted.last_updated,
        last_updated_source=extracted.last_updated_source,
        chunk_ids=list(ids),
        text=extracted.text,
    )


def _record_added(memory: Memory, stored_url: str, requested_url: str, at: str) -> None:
    """Say in the store's journal and in a HAR of the store that ``stored_url`` was added by an agent, not
    harvested: every report marks it, and ``brt verify`` checks it against this record (``har.py``)."""
    from .har import added_page_record, record_added_page
    from .journal import PAGE_ADDED

    page = memory.page(stored_url)
    if page is None:  # pragma: no cover - add_many just stored it
        raise PageRefused(f"{stored_url} was not stored")
    memory.record_events([{"type": PAGE_ADDED, "url": page.url, "requested_url": requested_url, "at": at,
                           "chunks": len(page.chunk_ids)}])
    record_added_page(memory.path, added_page_record(page, requested_url))


def _valid_date(value: str) -> bool:
    try:
        datetime.strptime(value, "%Y-%m-%d")
    except ValueError:
        return False
    return True


def update_concept_index(charter: Charter, memory: Memory) -> None:
    """Bring the charter's concept index up to date with the stored pages; never fails the harvest."""
    try:
        from concept_index import update_from_store  # numpy and networkx load only when an index is used

        _, rep = update_from_store(memory, charter.outputs.sections)
        logger.info("concept index of %s updated: %s", charter.id, rep)
    except Exception:  # the index is an optional router: the evidence store stays authoritative
        logger.exception("concept index update failed for %s", charter.id)
