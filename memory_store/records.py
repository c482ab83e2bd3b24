"""Typed records that cross the memory_store boundary."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any


@dataclass
class PageInput:
    """A page to store. ``url`` is the final URL after redirects and the page's key."""

    url: str
    text: str
    selector: str = "body"
    last_updated: str | None = None
    title: str | None = None
    requested_url: str | None = None
    last_updated_source: str | None = None
    fetched_at: str | None = None
    status: int | None = None
    content_type: str | None = None

    @classmethod
    def from_any(cls, page: PageInput | dict[str, Any]) -> PageInput:
        """Accept a PageInput or a dict with the same keys (unknown keys are an error)."""
        if isinstance(page, PageInput):
            return page
        if not isinstance(page, dict):
            raise TypeError(f"expected PageInput or dict, got {type(page).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = set(page) - known
        if unknown:
            raise TypeError(f"unknown page field(s): {', '.join(sorted(unknown))}")
        return cls(**page)


@dataclass
class PageRecord:
    """A stored page; ``chunk_ids`` (in page order) is the source of truth for its chunks."""

    url: str
    text: str
    selector: str = "body"
    last_updated: str | None = None
    title: str | None = None
    requested_url: str | None = None
    last_updated_source: str | None = None
    fetched_at: str | None = None
    status: int | None = None
    content_type: str | None = None
    chunk_ids: list[str] = field(default_factory=list)
    stored_at: str | None = None


@dataclass
class Hit:
    """A search result.

    ``metadata`` holds url, last_updated, title, selector, also_seen_at, charter_id, tokens.
    """

    id: str
    score: float
    text: str
    snippet: str
    metadata: dict[str, Any]
    matched_via: str = "vector"


@dataclass
class StoreStats:
    """Size and provenance of one charter's store."""

    charter_id: str
    path: str
    pages: int
    chunks: int
    model: str | None
    dim: int | None
    disk_bytes: int
    last_write: str | None
