"""``brt verify SNAPSHOT``: check that a snapshot (and the HAR beside it) is the audit it claims to be.

Checks, each failure named with the check and where:

- **manifest**: the sha256 of every line after the manifest, and the count of each record type;
- **records**: every line is a JSON object with a ``type``; chunks belong to the manifest's charter;
- **chunks**: every chunk id is ``sha256:`` + the hash of its normalised text (memory_store's ``chunk_id``);
  no chunk twice; embeddings (when the manifest says they are in) have the manifest's dimension and finite
  values;
- **pages**: every chunk a page lists exists, every chunk is held by the page it names (or one it was also
  seen at), every stored page's final URL is on the charter's allowlist;
- **charter**: each ``charter`` record's text hashes to its sha256 and is a valid charter of this id;
- **evidence**: every block of the recorded synthesis cites a stored chunk, its quote is a verbatim span of
  that chunk as the evidence contract defines it (whitespace may be collapsed; ``…`` marks an elision at
  either end), the chunk belongs to the cited URL, the URL is on the allowlist, the date is the page's, and
  the block's Markdown line carries the same quote;
- **har**: the HAR beside the snapshot holds a response for every stored page, and where the harvest recorded
  the page's fingerprint (orchestrator/harvest/revalidate.py), a response whose body hashes to it;
- **provenance**: each stored page against the record the harvest wrote into its HAR (``harvest/har.py``:
  the body's sha256, the extracted text's sha256, the chunk ids, title and dates): the body is in the HAR, and
  the snapshot's text, chunks (so every chunk and quote cited from the page), title and dates are the ones brt
  stored from it. With the genuine HAR, a snapshot edited and resealed (a date changed, a quote changed with
  its chunk's text and id recomputed, a block re-cited to another stored page) fails here. Every cited page
  must also hold the cited chunk (**evidence**).

Warnings (not failures): no synthesis recorded; a page added with ``add_page`` (no harvest event, so no
response in the HAR); a page read in a browser context that crashed (the HAR's ``log.comment`` says its
recording is incomplete and names the page); a page without a fingerprint (its response is present but its
body cannot be checked); a HAR written before provenance records (pages checked against the snapshot alone).

Records that do not fit the snapshot's schema (``records.py``) are failures of **records** naming the line
and the field; they are left out of the other checks, so a mutated snapshot gets a verdict, never a crash.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..egress import EgressPolicy
from .snapshot import Snapshot, read_snapshot

__all__ = ["Finding", "VerifyReport", "quote_in_chunk", "verify", "verify_store"]


@dataclass
class Finding:
    check: str
    message: str

    def __str__(self) -> str:
        return f"{self.check}: {self.message}"

    def to_json(self) -> dict[str, str]:
        return {"check": self.check, "message": self.message}


@dataclass
class VerifyReport:
    snapshot: Path
    har: Path | None
    failures: list[Finding] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)
    checked: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failures

    def fail(self, check: str, message: str) -> None:
        self.failures.append(Finding(check, message))

    def warn(self, check: str, message: str) -> None:
        self.warnings.append(Finding(check, message))

    def verdict(self) -> str:
        """One line: what was verified, or how many failures."""
        c = self.checked
        if not self.ok:
            kinds = Counter(f.check for f in self.failures)
            detail = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
            return f"FAILED {self.snapshot.name}: {len(self.failures)} failure(s) ({detail})"
        parts = [
            f"manifest sha256 and {c.get('record_types', 0)} record counts" if "record_types" in c
            else f"the store ({c.get('pages', 0)} pages)",
            f"{c.get('chunks', 0)} chunk ids",
            f"{c.get('quotes', 0)} quotes in {c.get('sections', 0)} sections",
            f"{c.get('urls', 0)} URLs on the allowlist",
        ]
        if self.har is not None:
            parts.append(f"{c.get('har_pages', 0)}/{c.get('pages', 0)} pages in the HAR "
                         f"({c.get('fingerprints', 0)} body fingerprints, {c.get('provenance', 0)} provenance "
                         "records)")
            if c.get("added_pages"):
                from ..evidence.results import ADDED_MARK

                parts.append(f"{c['added_pages']} page(s) {ADDED_MARK} (add_page: no server response proves "
                             "them)")
        else:
            parts.append("the HAR not checked: nothing proves the pages came from a server")
        warned = f"; {len(self.warnings)} warning(s)" if self.warnings else ""
        return f"OK {self.snapshot.name}: " + ", ".join(parts) + warned

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "verdict": self.verdict(),
            "snapshot": str(self.snapshot),
            "har": str(self.har) if self.har else None,
            "checked": self.checked,
            "failures": [f.to_json() for f in self.failures],
            "warnings": [w.to_json() for w in self.warnings],
        }


_ELISION = "…"


def quote_in_chunk(quote: str, chunk_text: str) -> bool:
    """Whether ``quote`` is a verbatim span of ``chunk_text`` as the evidence contract defines it: whitespace
    may be collapsed, and ``…`` marks an elision at either end (never inside)."""
    from memory_store.chunking import normalize_text

    core = normalize_text(quote)
    if core.startswith(_ELISION):
        core = core[len(_ELISION):].lstrip()
    if core.endswith(_ELISION):
        core = core[: -len(_ELISION)].rstrip()
    return bool(core) and core in normalize_text(chunk_text)


def _loose(text: str) -> str:
    """A line or quote compared loosely: quote marks, backslashes (the Markdown line's escapes), format and
    control characters (which ``untrusted.markdown_escape`` drops) left out, whitespace collapsed."""
    from ..untrusted import strip_controls, strip_invisible

    return " ".join(re.sub(r"[\"\\“”]", "", strip_controls(strip_invisible(text))).split())


def verify(snapshot: str | Path, *, har: str | Path | None = None, check_har: bool = True,
           charter_file: str | Path | None = None) -> VerifyReport:
    """Verify a snapshot (see the module docstring). ``har``: the HAR to check (default: beside the
    snapshot); ``charter_file``: the charter to take the allowlist from when the snapshot records none.

    Raises SnapshotError when the file is missing or not a snapshot at all."""
    snap = read_snapshot(snapshot)
    har_path = Path(har) if har is not None else snap.har_path
    report = VerifyReport(snap.path, har_path if check_har else None)
    _manifest(snap, report)
    _chunks(snap, report)
    domains = _charter(snap, report, charter_file)
    egress = None if domains is None else EgressPolicy.of(domains)
    _pages(snap, report, egress)
    _evidence(snap, report, egress)
    if check_har:
        proofs = _har(snap, report, har_path, follow_symlinks=har is not None)
        if proofs is not None:
            _sources(snap, report, proofs)
    return report


def verify_store(charter: Any) -> VerifyReport:
    """Verify a charter's live store as ``verify`` verifies a snapshot (its seal: the HARs its harvests and
    ``add_page`` wrote): every page against its provenance record, every chunk id the hash of its text, every
    recorded block a verbatim span of a chunk of a page the HARs prove (or one marked as added without a
    harvest), every URL on the charter's allowlist, and the store's own consistency (``Memory.check``). The
    report's ``snapshot`` is the charter file. Raises StoreNotFound when the charter has no store."""
    from ..config import open_memory
    from ..harvest.har import har_files, merged_har
    from ..trail.store import stored_synthesis

    mem = open_memory(charter, create=False)
    snap = _store_snapshot(charter, mem, stored_synthesis(mem))
    report = VerifyReport(snap.path, mem.path / "har")
    check = mem.check()
    for problem in check.problems:
        report.fail("store", str(problem))
    _chunks(snap, report)
    egress = EgressPolicy.of(charter.allowed_domains)
    _pages(snap, report, egress)
    _evidence(snap, report, egress)
    har = merged_har(har_files(mem))
    if har is None:
        if snap.pages:
            report.fail("har", f"the store at {mem.path} holds no HAR: nothing proves its pages")
        return report
    proofs = _har(snap, report, har)
    if proofs is not None:
        _sources(snap, report, proofs)
    return report


def _store_snapshot(charter: Any, mem: Any, synthesis: dict[str, Any] | None) -> Snapshot:
    """A store's pages, chunks, journal and recorded synthesis as the parts of a snapshot (no manifest)."""
    from ..harvest.journal import ADDED, page_origins
    from ..trail.store import charter_records, stored_charters

    events = mem.events()
    origins = page_origins(events)
    snap = Snapshot(path=Path(charter.source or charter.id), manifest={"charter_id": charter.id}, sha256="",
                    events=events, synthesis=synthesis, charters=charter_records(stored_charters(mem)))
    for p in mem.pages():
        snap.pages.append({"url": p.requested_url or p.url, "final_url": p.url, "title": p.title, "text": p.text,
                           "last_updated": p.last_updated, "last_updated_source": p.last_updated_source,
                           "chunk_ids": list(p.chunk_ids), "origin": origins.get(p.url, ADDED)})
    for row in mem.chunks(include_vectors=False):
        snap.chunks[str(row["id"])] = dict(row)
        snap.chunk_order.append(str(row["id"]))
    return snap


def _manifest(snap: Snapshot, report: VerifyReport) -> None:
    m = snap.manifest
    for problem in snap.problems:
        report.fail("records", problem)
    if m.get("sha256") != snap.sha256:
        report.fail("manifest", f"sha256 of the records is {snap.sha256}, the manifest says {m.get('sha256')}")
    recorded = {str(k): v for k, v in (m.get("counts") or {}).items()}
    for kind in sorted(set(recorded) | set(snap.counts)):
        have, said = snap.counts.get(kind, 0), recorded.get(kind, 0)
        if have != said:
            report.fail("manifest", f"{have} {kind} record(s), the manifest counts {said}")
    report.checked["record_types"] = len(set(recorded) | set(snap.counts))


def _chunks(snap: Snapshot, report: VerifyReport) -> None:
    from memory_store.chunking import chunk_id

    for cid in snap.duplicate_chunks:
        report.fail("chunks", f"chunk {cid} appears more than once")
    with_vectors = bool(snap.manifest.get("include_vectors"))
    for cid, rec in snap.chunks.items():
        text = rec.get("text")
        if not isinstance(text, str) or chunk_id(text) != cid:
            report.fail("chunks", f"chunk {cid}: its id is not the hash of its text")
        if rec.get("charter_id") not in (None, snap.charter_id):
            report.fail("chunks", f"chunk {cid} belongs to charter {rec.get('charter_id')!r}")
        if with_vectors and rec.get("embedding") is None:
            report.fail("chunks", f"chunk {cid} has no embedding although the manifest says vectors are included")
    for cid in snap.vector_problems:
        report.fail("chunks", f"chunk {cid}: embedding of the wrong dimension or with non-finite values")
    report.checked["chunks"] = len(snap.chunks)


def _charter(snap: Snapshot, report: VerifyReport, charter_file: str | Path | None) -> list[str] | None:
    """Check the charter records; returns the allowlist (None when there is no charter to take it from)."""
    from ..errors import CharterError
    from ..trail.store import parse_charter_text, sha256_text

    allowed: list[str] | None = None
    for rec in snap.charters:
        text = rec.get("text")
        if not isinstance(text, str) or sha256_text(text) != rec.get("sha256"):
            short = str(rec.get("sha256"))[:12]
            report.fail("charter", f"charter record {short}: its text does not hash to its sha256")
            continue
        try:
            charter = parse_charter_text(text, str(rec.get("format") or "yaml"))
        except CharterError as exc:
            report.fail("charter", f"charter record {rec['sha256'][:12]} is not a valid charter: {exc}")
            continue
        if charter.id != snap.charter_id:
            report.fail("charter", f"charter record {rec['sha256'][:12]} is charter {charter.id!r}, "
                                   f"the snapshot is of {snap.charter_id!r}")
    chosen = snap.harvest_charter()
    if chosen is not None:
        try:
            allowed = list(parse_charter_text(chosen["text"], str(chosen.get("format") or "yaml")).allowed_domains)
        except (CharterError, KeyError, TypeError):
            allowed = None
    if charter_file is not None:
        from ..charter import load_charter

        allowed = list(load_charter(charter_file).allowed_domains)
    if allowed is None:
        report.fail("charter", "the snapshot records no valid charter: the allowlist cannot be checked "
                               "(give the charter with --charter)")
    return allowed


def _pages(snap: Snapshot, report: VerifyReport, egress: EgressPolicy | None) -> None:
    held: dict[str, set[str]] = {}
    for page in snap.pages:
        ids = set(page.get("chunk_ids") or [])
        for key in (page.get("final_url"), page.get("url")):
            if key:
                held.setdefault(str(key), set()).update(ids)
    for page in snap.pages:
        final = str(page.get("final_url") or page.get("url"))
        for cid in page.get("chunk_ids") or []:
            if cid not in snap.chunks:
                report.fail("pages", f"page {final} lists chunk {cid}, which is not in the snapshot")
        if egress is not None and not egress.permits(final):
            report.fail("pages", f"page {final} is not on the charter's allowlist")
    for cid, rec in snap.chunks.items():
        holders = [rec.get("url"), *(rec.get("also_seen_at") or [])]
        if not any(cid in held.get(str(h), ()) for h in holders):
            report.fail("pages", f"chunk {cid} is held by none of the pages it names ({rec.get('url')})")
    report.checked["pages"] = len(snap.pages)


def _evidence(snap: Snapshot, report: VerifyReport, egress: EgressPolicy | None) -> None:
    syn = snap.synthesis
    if syn is None:
        report.warn("evidence", "no synthesis recorded (the charter was not synthesized before /clean)")
        return
    if syn.get("charter_id") != snap.charter_id:
        report.fail("evidence", f"the synthesis is of charter {syn.get('charter_id')!r}")
    shas = {c.get("sha256") for c in snap.charters}
    if syn.get("charter_sha256") and syn["charter_sha256"] not in shas:
        report.fail("evidence", "the synthesis answered a charter that no charter record holds")
    urls: set[str] = set()
    sections = syn.get("sections") or []
    quotes = 0
    for s in sections:
        label = s.get("label") or s.get("title")
        blocks = s.get("blocks") or []
        if [b.get("n") for b in blocks] != list(range(1, len(blocks) + 1)):
            report.fail("evidence", f"section {label!r}: blocks are not numbered 1..{len(blocks)}")
        if not blocks and not s.get("gaps"):
            report.fail("evidence", f"section {label!r} has neither evidence nor a gap")
        for b in blocks:
            where = f"[{label} Evidence #{b.get('n')}]"
            for i, source in enumerate([b, *_also_at(b)]):  # every page a block cites is checked alike
                quotes += 1
                urls.add(str(source.get("url") or ""))
                _block(snap, report, where if i == 0 else f"{where} (also at {i})", source, egress)
    _conflicts(snap, syn, report, sections, egress)
    report.checked["quotes"] = quotes
    report.checked["sections"] = len(sections)
    report.checked["urls"] = len(urls)


def _block(snap: Snapshot, report: VerifyReport, where: str, b: dict[str, Any], egress: EgressPolicy | None) -> None:
    """One evidence block: its chunk is in the snapshot and held by the cited page, its quote a verbatim span of
    that chunk, its URL on the allowlist, its date the page's, its Markdown line the same quote."""
    url, cid = str(b.get("url") or ""), str(b.get("chunk_id"))
    chunk = snap.chunks.get(cid)
    if chunk is None:
        report.fail("evidence", f"{where} cites chunk {cid}, which is not in the snapshot")
        return
    if not quote_in_chunk(str(b.get("quote") or ""), str(chunk.get("text") or "")):
        report.fail("evidence", f"{where}: the quote is not a verbatim span of chunk {cid}")
    if url not in [chunk.get("url"), *(chunk.get("also_seen_at") or [])]:
        report.fail("evidence", f"{where}: chunk {cid} does not belong to {url}")
    if egress is not None and not egress.permits(url):
        report.fail("evidence", f"{where}: {url} is not on the charter's allowlist")
    page = snap.page_for(url)
    if page is None:
        report.fail("evidence", f"{where}: {url} is not a stored page")
    else:
        if cid not in (page.get("chunk_ids") or []):
            report.fail("evidence", f"{where}: page {url} does not hold chunk {cid}")
        if b.get("last_updated") != page.get("last_updated"):
            report.fail("evidence", f"{where}: last updated {b.get('last_updated')}, the page says "
                                    f"{page.get('last_updated')}")
    md = b.get("markdown")
    if isinstance(md, str) and _loose(str(b.get("quote") or "")) not in _loose(md):
        report.fail("evidence", f"{where}: the Markdown line does not carry the block's quote")


def _also_at(block: dict[str, Any]) -> list[dict[str, Any]]:
    """The other pages a block cites (``also_at``), each with the block's number; malformed entries dropped."""
    also = block.get("also_at")
    if not isinstance(also, list):
        return []
    return [dict(a, n=block.get("n")) for a in also if isinstance(a, dict)]


def _conflicts(snap: Snapshot, syn: dict[str, Any], report: VerifyReport, sections: list[dict[str, Any]],
               egress: EgressPolicy | None) -> None:
    """Every side of a conflict cites a source its section holds (a block or one of its ``also_at`` pages), quote
    and URL alike; or, a page no block cites (``n`` 0), a chunk of the snapshot checked as a block is: held by
    that page, the quote a verbatim span of it, the URL allowed, the date the page's."""
    for c in syn.get("conflicts") or []:
        sec = next((s for s in sections if s.get("title") == c.get("section")), None)
        for side in ("a", "b"):
            claim = c.get(side) or {}
            if not claim.get("n") and claim.get("chunk_id"):
                _block(snap, report, f"conflict in {c.get('section')!r} ({side})", claim, egress)
                continue
            sources = [
                src
                for b in (sec or {}).get("blocks") or []
                if b.get("n") == claim.get("n")
                for src in (b, *_also_at(b))
            ]
            if not any(s.get("quote") == claim.get("quote") and s.get("url") == claim.get("url") for s in sources):
                report.fail("evidence", f"conflict in {c.get('section')!r} cites a block the section does not hold")


def har_bodies(har: Path | dict[str, Any]) -> dict[str, list[tuple[int, str]]]:
    """URL (fragment dropped) -> (status, sha256 of the body) of every response the HAR holds (a path, or the
    HAR already read)."""
    from ..harvest.har import content_bytes, read_har, sha256_hex

    data = read_har(har) if isinstance(har, Path) else har
    out: dict[str, list[tuple[int, str]]] = {}
    for entry in (data.get("log") or {}).get("entries") or []:
        try:
            url = str(entry["request"]["url"]).split("#", 1)[0]
            response = entry["response"]
            body = content_bytes(response.get("content") or {})
            out.setdefault(url, []).append((int(response.get("status") or 0), sha256_hex(body)))
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
    return out


@dataclass
class _Har:
    """What verify reads of the HAR: bodies by URL, the log's comment, the provenance records by URL."""

    bodies: dict[str, list[tuple[int, str]]]
    comment: str
    provenance: dict[str, dict[str, Any]] | None  # None: the HAR predates provenance records

    @classmethod
    def read(cls, path: Path, *, follow_symlinks: bool = True) -> _Har:
        from ..harvest.har import read_har

        return cls.of(read_har(path, follow_symlinks=follow_symlinks))

    @classmethod
    def of(cls, data: dict[str, Any]) -> _Har:
        from ..harvest.har import PROVENANCE

        log = data["log"]
        records = log.get(PROVENANCE)
        provenance: dict[str, dict[str, Any]] | None = None
        if isinstance(records, list):
            provenance = {}
            for rec in records:  # newest first: the first record of a URL is the one that counts
                if isinstance(rec, dict) and isinstance(rec.get("url"), str):
                    provenance.setdefault(rec["url"], rec)
        return cls(har_bodies(data), str(log.get("comment") or ""), provenance)

    def cut_short(self, keys: list[str]) -> bool:
        """Whether the HAR says the recording of one of these URLs was cut short (a browser crash)."""
        return "incomplete:" in self.comment and any(k in self.comment.split() for k in keys)


#: What ``_har`` found for a page (by each of its URLs): proven by a harvest's record, added without a harvest
#: (a record of ``add_page``), no record at all, or not checked (a HAR from before provenance records, a
#: recording a crash cut short).
_UNPROVEN = "none"
_UNCHECKED = "unchecked"


def _har(snap: Snapshot, report: VerifyReport, har: Path | dict[str, Any], *,
         follow_symlinks: bool = True) -> dict[str, str] | None:
    """Check every page against the HAR; returns each page URL's provenance (``"harvest"``, ``"add_page"``,
    ``"none"``, ``"unchecked"``), or None when there is no HAR to read (a failure)."""
    if isinstance(har, Path):
        if not (har.is_file() or har.is_symlink()):
            if snap.pages:
                report.fail("har", f"no HAR at {har}")
            return None
        try:
            read = _Har.read(har, follow_symlinks=follow_symlinks)
        except (OSError, ValueError) as exc:
            report.fail("har", f"cannot read {har}: {exc}")
            return None
    else:
        read = _Har.of(har)
    if read.provenance is None and snap.pages:
        report.warn("provenance", "the HAR records no provenance (written before brt recorded it): the pages' "
                                  "text, chunks and dates are checked against the snapshot alone")
    proofs: dict[str, str] = {}
    counts = Counter[str]()
    for page in snap.pages:
        final = str(page.get("final_url") or page.get("url"))
        keys = list(dict.fromkeys([final, str(page.get("url") or final)]))
        origin = _page_har(snap, report, read, page, final, keys, counts)
        for k in keys:
            proofs.setdefault(k, origin)
    report.checked["har_pages"] = counts["present"]
    report.checked["fingerprints"] = counts["matched"]
    report.checked["added_pages"] = counts["added"]
    return proofs


def _page_har(snap: Snapshot, report: VerifyReport, read: _Har, page: dict[str, Any], final: str, keys: list[str],
              counts: Counter[str]) -> str:
    """One page against the HAR: its provenance record (required, whatever the snapshot's events say), then
    for a harvested page the response its text came from. Returns the page's provenance."""
    from ..harvest.journal import ADDED, HARVESTED
    from ..harvest.revalidate import load_fingerprints

    fp = next((f for k, f in load_fingerprints(snap.events).items() if k in keys), None)
    if read.provenance is None:
        return _legacy_page(snap, report, read, page, final, keys, fp, counts)
    rec = read.provenance.get(final)
    if rec is None:
        if read.cut_short(keys):
            report.warn("provenance", f"page {final} was read in a browser that crashed and the HAR records no "
                                      "provenance for it: checked against the snapshot alone")
            return _UNCHECKED
        report.fail("provenance", f"page {final}: the HAR records no provenance for it (neither a harvest nor "
                                  "add_page stored it)")
        return _UNPROVEN
    origin = ADDED if rec.get("origin") == ADDED else HARVESTED
    claimed = page.get("origin")
    if claimed is not None and claimed != origin:
        report.fail("provenance", f"page {final}: the snapshot says it came from {claimed}, the HAR records "
                                  f"{origin}")
    if origin == ADDED:
        counts["added"] += 1
        report.checked["provenance"] = report.checked.get("provenance", 0) + 1
        report.warn("provenance", f"page {final} was added without a harvest (add_page): no server response "
                                  "proves its text")
        _compare(report, page, final, rec)
        return ADDED
    urls = [*keys, *(str(u) for u in (rec.get("requested_url"), (fp or {}).get("url")) if u)]
    responses = [r for k in dict.fromkeys(urls) for r in read.bodies.get(k.split("#", 1)[0], [])]
    _provenance(report, page, final, rec, responses)
    if not responses:
        _no_response(report, read, keys, final)
        return HARVESTED
    counts["present"] += 1
    expected = (fp or {}).get("doc") or rec.get("doc_sha256")
    if expected is None:
        report.warn("har", f"page {final} has no recorded fingerprint: its body is not checked")
    elif any(sha == expected for _, sha in responses):
        counts["matched"] += 1
    else:
        report.fail("har", f"page {final}: no response in the HAR hashes to its recorded fingerprint")
    return HARVESTED


def _no_response(report: VerifyReport, read: _Har, keys: list[str], final: str) -> None:
    """The HAR holds no response for a page: a warning when its recording was cut short by a crash, else a failure."""
    if read.cut_short(keys):
        report.warn("har", f"page {final} was read in a browser that crashed: the HAR says its recording is "
                           "incomplete")
    else:
        report.fail("har", f"the HAR holds no response for page {final}")


def _legacy_page(snap: Snapshot, report: VerifyReport, read: _Har, page: dict[str, Any], final: str,
                 keys: list[str], fp: dict[str, Any] | None, counts: Counter[str]) -> str:
    """A page against a HAR written before provenance records: its response and fingerprint only."""
    if fp is not None:
        keys = list(dict.fromkeys([str(fp.get("url") or final), *keys]))
    responses = [r for k in keys for r in read.bodies.get(k.split("#", 1)[0], [])]
    if not responses:
        _no_response(report, read, keys, final)
        return _UNCHECKED
    counts["present"] += 1
    if fp is None:
        report.warn("har", f"page {final} has no recorded fingerprint: its body is not checked")
    elif any(sha == fp.get("doc") for _, sha in responses):
        counts["matched"] += 1
    else:
        report.fail("har", f"page {final}: no response in the HAR hashes to its recorded fingerprint")
    return _UNCHECKED


def _provenance(report: VerifyReport, page: dict[str, Any], final: str, rec: dict[str, Any],
                responses: list[tuple[int, str]]) -> None:
    """A harvested page against its provenance record in the HAR: the body the server sent (present in the
    HAR), the text extracted from it, its chunks, title and dates."""
    report.checked["provenance"] = report.checked.get("provenance", 0) + 1
    doc = rec.get("doc_sha256")
    if doc and responses and not any(sha == doc for _, sha in responses):
        report.fail("provenance", f"page {final}: the body its text was extracted from is not in the HAR")
    _compare(report, page, final, rec)


def _compare(report: VerifyReport, page: dict[str, Any], final: str, rec: dict[str, Any]) -> None:
    """The snapshot's page against what the provenance record says brt stored: text, chunks, title, dates."""
    from ..harvest.har import sha256_hex

    if sha256_hex(str(page.get("text") or "").encode("utf-8")) != rec.get("text_sha256"):
        what = ("the text the agent gave (add_page)" if rec.get("origin") == "add_page"
                else "the text brt extracted from what the server sent")
        report.fail("provenance", f"page {final}: its text is not {what}")
    if list(page.get("chunk_ids") or []) != list(rec.get("chunk_ids") or []):
        report.fail("provenance", f"page {final}: its chunks are not the chunks brt stored for it")
    for key in ("title", "last_updated", "last_updated_source"):
        if page.get(key) != rec.get(key):
            report.fail("provenance", f"page {final}: {key} {page.get(key)!r}, the HAR's record says "
                                      f"{rec.get(key)!r}")


def _sources(snap: Snapshot, report: VerifyReport, proofs: dict[str, str]) -> None:
    """Every source the synthesis cites (each block, each of its ``also_at`` pages, each side of a conflict)
    names a page the HAR proves, or one it records as added without a harvest, and then says so itself (its
    ``origin``, and the block's Markdown line); a page with no provenance may not be cited."""
    from ..evidence.results import ADDED_MARK

    syn = snap.synthesis or {}
    for s in syn.get("sections") or []:
        label = s.get("label") or s.get("title")
        for b in s.get("blocks") or []:
            where = f"[{label} Evidence #{b.get('n')}]"
            sources = [b, *_also_at(b)]
            added = [_source(report, proofs, f"{where}{'' if i == 0 else f' (also at {i})'}", src)
                     for i, src in enumerate(sources)]
            md = b.get("markdown")
            if any(added) and isinstance(md, str) and ADDED_MARK not in md:
                report.fail("provenance", f"{where}: its Markdown line does not say that it cites a page added "
                                          "without a harvest")
    for c in syn.get("conflicts") or []:
        for side in ("a", "b"):
            claim = c.get(side)
            if isinstance(claim, dict):
                _source(report, proofs, f"conflict in {c.get('section')!r} ({side})", claim)


def _source(report: VerifyReport, proofs: dict[str, str], where: str, src: dict[str, Any]) -> bool:
    """One cited source against its page's provenance; True when the page was added without a harvest."""
    from ..harvest.journal import ADDED, HARVESTED

    url = str(src.get("url") or "")
    proof = proofs.get(url)
    if proof == _UNPROVEN:
        report.fail("provenance", f"{where} cites {url}, which has no provenance in the HAR")
    elif proof == ADDED and src.get("origin") != ADDED:
        report.fail("provenance", f"{where} cites {url} as harvested; the HAR records it as added without a "
                                  "harvest (add_page)")
    elif proof == HARVESTED and src.get("origin") == ADDED:
        report.warn("provenance", f"{where} marks {url} as added without a harvest; the HAR records a harvest")
    return proof == ADDED
