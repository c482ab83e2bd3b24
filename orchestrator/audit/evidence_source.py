"""What a report is checked against (``check.py``): the pages, chunks, allowlist and recorded synthesis of a
charter, read from its store or from its audit snapshot (after ``/clean`` the snapshot holds the pages, with
their text, and every chunk), as one typed record."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

if TYPE_CHECKING:
    from ..charter import Charter

__all__ = ["EvidenceSource", "SourceChunk", "SourcePage", "from_snapshot", "from_store", "url_key"]


@dataclass
class SourcePage:
    url: str  # the final URL (after redirects): the page's key
    last_updated: str | None
    title: str | None = None
    text: str | None = None
    other_urls: list[str] = field(default_factory=list)  # the URL requested, when it redirected


@dataclass
class SourceChunk:
    id: str
    url: str
    text: str
    also_seen_at: list[str] = field(default_factory=list)


@dataclass
class EvidenceSource:
    origin: str  # "store" or "snapshot"
    path: Path  # the charter file or the snapshot
    charter_id: str
    allowed_domains: list[str] | None  # None: no charter recorded (the allowlist cannot be checked)
    pages: list[SourcePage]
    chunks: list[SourceChunk]
    blocks: dict[tuple[str, int], dict[str, Any]]  # (label, n) -> a block of the recorded synthesis
    model: str | None
    load_embedder: Callable[[], Any]
    _by_key: dict[str, SourcePage] = field(default_factory=dict, repr=False)
    _chunks_by_key: dict[str, list[SourceChunk]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for page in self.pages:
            for url in (page.url, *page.other_urls):
                self._by_key.setdefault(url_key(url), page)
        for chunk in self.chunks:
            for url in dict.fromkeys([chunk.url, *chunk.also_seen_at]):
                self._chunks_by_key.setdefault(url_key(url), []).append(chunk)

    def page_for(self, url: str) -> SourcePage | None:
        """The stored page a cited URL names (scheme, userinfo, fragment, a trailing ``/`` and percent-encoding
        aside), or None."""
        return self._by_key.get(url_key(url))

    def chunks_of(self, page: SourcePage) -> list[SourceChunk]:
        """The chunks of a page (those seen at its URL too), in store order."""
        seen: dict[str, SourceChunk] = {}
        for url in (page.url, *page.other_urls):
            for chunk in self._chunks_by_key.get(url_key(url), []):
                seen.setdefault(chunk.id, chunk)
        return list(seen.values())

    def embedder(self) -> Any:
        return self.load_embedder()


def url_key(url: str) -> str:
    """A URL as citations are compared: host lower-cased, no scheme, userinfo, fragment or trailing ``/``,
    percent-encoding decoded (``web.dev/a/`` and ``https://web.dev/a`` are one page)."""
    text = url.strip().strip("<>")
    if "://" not in text:
        text = "http://" + text
    try:
        parts = urlsplit(text)
        host = (parts.hostname or "").lower()
        port = f":{parts.port}" if parts.port else ""
    except ValueError:  # not a URL a page can have (a port that is no number, a broken IPv6 literal)
        return text.lower()
    path = unquote(parts.path).rstrip("/")
    query = f"?{unquote(parts.query)}" if parts.query else ""
    return f"{host}{port}{path}{query}"


def _block_index(synthesis: dict[str, Any] | None) -> dict[tuple[str, int], dict[str, Any]]:
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for section in (synthesis or {}).get("sections") or []:
        label = str(section.get("label") or section.get("title") or "")
        for block in section.get("blocks") or []:
            out[(label, int(block.get("n") or 0))] = block
    return out


def from_store(charter: Charter) -> EvidenceSource:
    """The charter's store (StoreNotFound when it has none)."""
    from ..config import open_memory
    from .trail import stored_synthesis

    mem = open_memory(charter, create=False)
    pages = [
        SourcePage(p.url, p.last_updated, p.title, p.text,
                   [p.requested_url] if p.requested_url and p.requested_url != p.url else [])
        for p in mem.pages()
    ]
    chunks = [
        SourceChunk(str(row["id"]), str(row["url"]), str(row.get("text") or ""), list(row.get("also_seen_at") or []))
        for row in mem.chunks(include_vectors=False)
    ]
    return EvidenceSource("store", Path(charter.source or charter.id), charter.id, list(charter.allowed_domains),
                          pages, chunks, _block_index(stored_synthesis(mem)), mem.model_name, lambda: mem.embedder)


def from_snapshot(path: str | Path, charter: Charter | None = None) -> EvidenceSource:
    """An audit snapshot (SnapshotError when it is not one); the allowlist is the charter's when given, else
    the one the snapshot records."""
    from ..errors import CharterError
    from .snapshot import read_snapshot
    from .trail import parse_charter_text

    snap = read_snapshot(path)
    allowed: list[str] | None = list(charter.allowed_domains) if charter is not None else None
    recorded = snap.harvest_charter()
    if allowed is None and recorded is not None:
        try:
            allowed = list(parse_charter_text(recorded["text"], str(recorded.get("format") or "yaml")).allowed_domains)
        except (CharterError, KeyError, TypeError):
            allowed = None
    pages = []
    for p in snap.pages:
        final = str(p.get("final_url") or p.get("url"))
        other = [str(p["url"])] if p.get("url") and p.get("url") != final else []
        pages.append(SourcePage(final, p.get("last_updated"), p.get("title"), p.get("text"), other))
    chunks = [
        SourceChunk(cid, str(rec.get("url")), str(rec.get("text") or ""), list(rec.get("also_seen_at") or []))
        for cid, rec in snap.chunks.items()
    ]
    model = snap.manifest.get("embedding_model")

    def load() -> Any:
        from memory_store.embeddings import get_embedder

        return get_embedder(model)

    return EvidenceSource("snapshot", snap.path, snap.charter_id, allowed, pages, chunks,
                          _block_index(snap.synthesis), model, load)
