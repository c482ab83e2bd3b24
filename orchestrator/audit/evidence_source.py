"""What a report is checked against (``check.py``): the pages, chunks, allowlist and recorded synthesis of a
charter, read from its store or from its audit snapshot (after ``/clean`` the snapshot holds the pages, with
their text, and every chunk), as one typed record."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from ..egress import EgressPolicy
from .errors import AuditError

if TYPE_CHECKING:
    from ..charter import Charter

__all__ = ["EvidenceSource", "SourceChunk", "SourcePage", "WebUrl", "from_snapshot", "from_store", "url_key",
           "web_url", "SourceRefused"]


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
    acceptance: list[dict[str, Any]] | None = None  # the recorded synthesis's verdicts (None: none recorded)
    verified: str | None = None  # what was verified before the check (the snapshot's or the store's verdict)
    warnings: list[str] = field(default_factory=list)  # what that verification warned of
    egress: EgressPolicy | None = field(init=False, default=None, repr=False)  # of allowed_domains (None: none)
    _by_key: dict[str, SourcePage] = field(default_factory=dict, repr=False)
    _chunks_by_key: dict[str, list[SourceChunk]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.egress = None if self.allowed_domains is None else EgressPolicy.of(self.allowed_domains)
        for page in self.pages:
            for url in (page.url, *page.other_urls):
                key = url_key(url)
                if key is not None:
                    self._by_key.setdefault(key, page)
        for chunk in self.chunks:
            for url in dict.fromkeys([chunk.url, *chunk.also_seen_at]):
                self._chunks_by_key.setdefault(url_key(url) or "", []).append(chunk)

    def page_for(self, url: str) -> SourcePage | None:
        """The stored page a cited URL names (:func:`web_url`: http(s) only, as a browser parses it; the
        scheme, fragment, a trailing ``/`` and percent-encoding aside), or None."""
        key = url_key(url)
        return self._by_key.get(key) if key is not None else None

    def chunks_of(self, page: SourcePage) -> list[SourceChunk]:
        """The chunks of a page (those seen at its URL too), in store order."""
        seen: dict[str, SourceChunk] = {}
        for url in (page.url, *page.other_urls):
            for chunk in self._chunks_by_key.get(url_key(url) or "", []):
                seen.setdefault(chunk.id, chunk)
        return list(seen.values())


@dataclass(frozen=True)
class WebUrl:
    """A cited URL as brt reads it: ``href`` its WHATWG serialisation, ``key`` what pages are matched by."""

    href: str
    key: str


_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):(?!\d{1,5}(?:[/?#]|$))")


def web_url(text: str) -> tuple[WebUrl | None, str | None]:
    """A URL as a report cites it, read the one way ``brt check`` reads URLs: as a browser parses it (the
    WHATWG parser of ``url_safety``, the allowlist's), **http and https only**, without userinfo. A URL
    written without a scheme (``web.dev/a``, as evidence lines cite) is read as ``http://`` + it.

    Returns the URL, or None and why not (``url_safety.web_refusal``'s reason). The rule is security's one rule,
    ``url_safety.web_url``: ``javascript://host/…``, ``file:``, ``ftp:``, ``ws:``, ``data:`` and every other
    scheme are not web pages; ``http://other.example\\@allowed.example/`` names ``other.example`` (a browser
    ends the authority at the backslash); ``user:pass@`` is refused as the allowlist refuses it. The one function
    the check resolves URLs with (``url_key``, the allowlist test and the page index go through it)."""
    from .. import url_safety

    raw = text.strip().strip("<>")
    url = raw if _SCHEME.match(raw) else "http://" + raw
    parsed = url_safety.web_url(url)  # the one rule: http(s), a host, no userinfo, as a browser parses it
    if parsed is None:
        return None, f"is not a web page URL: {url_safety.web_refusal(url)}"
    port = f":{parsed.port}" if parsed.port is not None else ""
    path = unquote(parsed.path).rstrip("/")
    query = unquote(parsed.query) if parsed.query not in ("", "?") else ""
    return WebUrl(parsed.href, f"{parsed.host}{port}{path}{query}"), None


def url_key(url: str) -> str | None:
    """A URL as citations are compared (:func:`web_url`'s key: host and port as a browser reads them, path and
    query percent-decoded, no scheme, fragment or trailing ``/``), or None for what is no http(s) URL."""
    parsed, _ = web_url(url)
    return parsed.key if parsed is not None else None


def _block_index(synthesis: dict[str, Any] | None) -> dict[tuple[str, int], dict[str, Any]]:
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for section in (synthesis or {}).get("sections") or []:
        label = str(section.get("label") or section.get("title") or "")
        for block in section.get("blocks") or []:
            out[(label, int(block.get("n") or 0))] = block
    return out


class SourceRefused(AuditError):
    """The evidence failed its verification: a report is not checked against it (``failures`` says why)."""

    def __init__(self, message: str, failures: list[str]):
        super().__init__(message)
        self.failures = failures


def _acceptance(synthesis: dict[str, Any] | None) -> list[dict[str, Any]] | None:
    verdicts = (synthesis or {}).get("acceptance")
    return [v for v in verdicts if isinstance(v, dict)] if isinstance(verdicts, list) else None


def from_store(charter: Charter, *, verify: bool = True) -> EvidenceSource:
    """The charter's store (StoreNotFound when it has none), verified first as ``brt verify`` verifies a snapshot
    (``verify.verify_store``: every page against its provenance record in the store's HARs, every chunk id the
    hash of its text, every recorded block a span of a proven page, every URL on the allowlist, and the store's
    own consistency, ``Memory.check``); SourceRefused when that fails."""
    from ..config import open_memory
    from ..trail.store import stored_synthesis

    verified, warnings = _verify_store(charter) if verify else (None, [])
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
    synthesis = stored_synthesis(mem)
    return EvidenceSource("store", Path(charter.source or charter.id), charter.id, list(charter.allowed_domains),
                          pages, chunks, _block_index(synthesis), mem.model_name,
                          _acceptance(synthesis), verified, warnings)


def _verify_store(charter: Charter) -> tuple[str, list[str]]:
    """``verify_store`` of the charter's store (against the HARs it keeps): its verdict and warnings, or
    SourceRefused."""
    from .verify import verify_store

    report = verify_store(charter)
    if not report.ok:
        failures = [str(f) for f in report.failures]
        raise SourceRefused(f"the store of charter {charter.id} fails verification ({len(failures)} failure(s)): "
                            "a report is not checked against it", failures)
    return report.verdict(), [str(w) for w in report.warnings]


def _verify_snapshot(path: str | Path, charter: Charter | None, har: bool) -> tuple[str, list[str]]:
    """``brt verify`` of the snapshot (with the HAR beside it unless ``har`` is False): its verdict and warnings,
    or SourceRefused."""
    from .verify import verify

    report = verify(path, check_har=har, charter_file=charter.source if charter is not None else None)
    if not report.ok:
        failures = [str(f) for f in report.failures]
        raise SourceRefused(f"the snapshot {Path(path).name} fails verification ({len(failures)} failure(s)): "
                            "a report is not checked against it", failures)
    return report.verdict(), [str(w) for w in report.warnings]


def from_snapshot(path: str | Path, charter: Charter | None = None, *, verify: bool = True,
                  har: bool = True) -> EvidenceSource:
    """An audit snapshot (SnapshotError when it is not one), verified first (``verify.verify``: its seal, records,
    quotes, allowlist and, unless ``har`` is False, the HAR beside it; SourceRefused when it fails). The
    allowlist is the charter's when given, else the one the snapshot records."""
    from ..errors import CharterError
    from ..trail.store import parse_charter_text
    from .snapshot import read_snapshot

    verified, warnings = _verify_snapshot(path, charter, har) if verify else (None, [])
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
    return EvidenceSource("snapshot", snap.path, snap.charter_id, allowed, pages, chunks,
                          _block_index(snap.synthesis), model, _acceptance(snap.synthesis), verified, warnings)
