"""Typed records that cross the memory_store boundary."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from typing import Any

SNIPPET_CHARS = 300
_WS = re.compile(r"\s+")


def make_snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    """``text`` with whitespace collapsed, cut to about ``limit`` chars at a word boundary, with …."""
    flat = _WS.sub(" ", text).strip()
    if len(flat) <= limit:
        return flat
    cut = flat[:limit]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:.") + "…"


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
    """A search result. ``url``, ``last_updated`` and ``title`` are typed views of ``metadata``, which holds
    them with selector, also_seen_at, charter_id, tokens, the query that matched best and retrieval details
    (``hit.metadata["url"]`` stays as it always was)."""

    id: str
    score: float
    text: str
    snippet: str
    metadata: dict[str, Any]
    matched_via: str = "vector"

    @property
    def url(self) -> str:
        """The URL of the page the chunk was stored from (its first page when several hold it)."""
        return str(self.metadata.get("url") or "")

    @property
    def last_updated(self) -> str | None:
        """The page's last-updated date (YYYY-MM-DD) or None."""
        return self.metadata.get("last_updated")

    @property
    def title(self) -> str | None:
        """The page's title or None."""
        return self.metadata.get("title")


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


@dataclass
class CheckResult:
    """What ``Memory.check()`` found: ``ok`` is False when there is any problem (at most 200 are listed)."""

    ok: bool = True
    problems: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def add(self, problem: str) -> None:
        self.ok = False
        if len(self.problems) < 200:
            self.problems.append(problem)

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "problems": list(self.problems), "counts": dict(self.counts)}
