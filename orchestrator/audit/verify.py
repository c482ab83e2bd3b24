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

import base64
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .snapshot import Snapshot, read_snapshot

__all__ = ["Finding", "VerifyReport", "quote_in_chunk", "verify"]


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
            f"manifest sha256 and {c.get('record_types', 0)} record counts",
            f"{c.get('chunks', 0)} chunk ids",
            f"{c.get('quotes', 0)} quotes in {c.get('sections', 0)} sections",
            f"{c.get('urls', 0)} URLs on the allowlist",
        ]
        if self.har is not None:
            parts.append(f"{c.get('har_pages', 0)}/{c.get('pages', 0)} pages in the HAR "
                         f"({c.get('fingerprints', 0)} body fingerprints, {c.get('provenance', 0)} provenance "
                         "records)")
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
    allowed = _charter(snap, report, charter_file)
    _pages(snap, report, allowed)
    _evidence(snap, report, allowed)
    if check_har:
        _har(snap, report, har_path)
    return report


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
    from .trail import parse_charter_text, sha256_text

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


def _pages(snap: Snapshot, report: VerifyReport, allowed: list[str] | None) -> None:
    from ..charter import url_allowed

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
        if allowed is not None and not url_allowed(final, allowed):
            report.fail("pages", f"page {final} is not on the charter's allowlist")
    for cid, rec in snap.chunks.items():
        holders = [rec.get("url"), *(rec.get("also_seen_at") or [])]
        if not any(cid in held.get(str(h), ()) for h in holders):
            report.fail("pages", f"chunk {cid} is held by none of the pages it names ({rec.get('url')})")
    report.checked["pages"] = len(snap.pages)


def _evidence(snap: Snapshot, report: VerifyReport, allowed: list[str] | None) -> None:
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
                _block(snap, report, where if i == 0 else f"{where} (also at {i})", source, allowed)
    _conflicts(snap, syn, report, sections, allowed)
    report.checked["quotes"] = quotes
    report.checked["sections"] = len(sections)
    report.checked["urls"] = len(urls)


def _block(snap: Snapshot, report: VerifyReport, where: str, b: dict[str, Any], allowed: list[str] | None) -> None:
    """One evidence block: its chunk is in the snapshot and held by the cited page, its quote a verbatim span of
    that chunk, its URL on the allowlist, its date the page's, its Markdown line the same quote."""
    from ..charter import url_allowed

    url, cid = str(b.get("url") or ""), str(b.get("chunk_id"))
    chunk = snap.chunks.get(cid)
    if chunk is None:
        report.fail("evidence", f"{where} cites chunk {cid}, which is not in the snapshot")
        return
    if not quote_in_chunk(str(b.get("quote") or ""), str(chunk.get("text") or "")):
        report.fail("evidence", f"{where}: the quote is not a verbatim span of chunk {cid}")
    if url not in [chunk.get("url"), *(chunk.get("also_seen_at") or [])]:
        report.fail("evidence", f"{where}: chunk {cid} does not belong to {url}")
    if allowed is not None and not url_allowed(url, allowed):
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
               allowed: list[str] | None) -> None:
    """Every side of a conflict cites a source its section holds (a block or one of its ``also_at`` pages), quote
    and URL alike; or, a page no block cites (``n`` 0), a chunk of the snapshot checked as a block is: held by
    that page, the quote a verbatim span of it, the URL allowed, the date the page's."""
    for c in syn.get("conflicts") or []:
        sec = next((s for s in sections if s.get("title") == c.get("section")), None)
        for side in ("a", "b"):
            claim = c.get(side) or {}
            if not claim.get("n") and claim.get("chunk_id"):
                _block(snap, report, f"conflict in {c.get('section')!r} ({side})", claim, allowed)
                continue
            sources = [
                src
                for b in (sec or {}).get("blocks") or []
                if b.get("n") == claim.get("n")
                for src in (b, *_also_at(b))
            ]
            if not any(s.get("quote") == claim.get("quote") and s.get("url") == claim.get("url") for s in sources):
                report.fail("evidence", f"conflict in {c.get('section')!r} cites a block the section does not hold")


def _body(content: dict[str, Any]) -> bytes:
    text = content.get("text") or ""
    return base64.b64decode(text) if content.get("encoding") == "base64" else str(text).encode("utf-8")


def har_bodies(har: Path | dict[str, Any]) -> dict[str, list[tuple[int, str]]]:
    """URL (fragment dropped) -> (status, sha256 of the body) of every response the HAR holds (a path, or the
    HAR already read)."""
    from ..harvest.har import sha256_hex

    data = read_har(har) if isinstance(har, Path) else har
    out: dict[str, list[tuple[int, str]]] = {}
    for entry in (data.get("log") or {}).get("entries") or []:
        try:
            url = str(entry["request"]["url"]).split("#", 1)[0]
            response = entry["response"]
            body = _body(response.get("content") or {})
            out.setdefault(url, []).append((int(response.get("status") or 0), sha256_hex(body)))
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
    return out


def read_har(har: Path) -> dict[str, Any]:
    """The HAR at ``har`` (a regular file holding a JSON object with a ``log`` object); ValueError otherwise."""
    import json

    from ..files import FileRefused, open_regular

    try:
        with open_regular(har, what="HAR") as fh:
            data = json.load(fh)
    except FileRefused as exc:
        raise ValueError(str(exc)) from None
    except RecursionError:
        raise ValueError("nested too deeply") from None
    if not isinstance(data, dict) or not isinstance(data.get("log"), dict):
        raise ValueError("not a HAR (no log object)")
    return data


@dataclass
class _Har:
    """What verify reads of the HAR: bodies by URL, the log's comment, the provenance records by URL."""

    bodies: dict[str, list[tuple[int, str]]]
    comment: str
    provenance: dict[str, dict[str, Any]] | None  # None: the HAR predates provenance records

    @classmethod
    def read(cls, path: Path) -> _Har:
        from ..harvest.har import PROVENANCE

        data = read_har(path)
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


def _har(snap: Snapshot, report: VerifyReport, har: Path) -> None:
    from ..harvest.revalidate import load_fingerprints

    if not har.is_file():
        report.fail("har", f"no HAR at {har}")
        return
    try:
        read = _Har.read(har)
    except (OSError, ValueError) as exc:
        report.fail("har", f"cannot read {har}: {exc}")
        return
    fingerprints = load_fingerprints(snap.events)
    harvested = {
        str(u) for e in snap.events if e.get("type", "harvest_event") == "harvest_event"
        for u in (e.get("url"), e.get("final_url")) if u
    }
    present = matched = 0
    for page in snap.pages:
        final = str(page.get("final_url") or page.get("url"))
        keys = list(dict.fromkeys([final, str(page.get("url") or final)]))
        fp = next((fingerprints[k] for k in keys if k in fingerprints), None)
        if fp is not None:
            keys = list(dict.fromkeys([str(fp.get("url") or final), *keys]))
        responses = [r for k in keys for r in read.bodies.get(k.split("#", 1)[0], [])]
        _provenance(report, read, page, final, responses, harvested=any(k in harvested for k in keys))
        if not responses:
            if not any(k in harvested for k in keys):
                report.warn("har", f"page {final} has no harvest event (added with add_page): not in the HAR")
            elif read.cut_short(keys):
                report.warn("har", f"page {final} was read in a browser that crashed: the HAR says its "
                                   "recording is incomplete")
            else:
                report.fail("har", f"the HAR holds no response for page {final}")
            continue
        present += 1
        if fp is None:
            report.warn("har", f"page {final} has no recorded fingerprint: its body is not checked")
            continue
        if any(sha == fp.get("doc") for _, sha in responses):
            matched += 1
        else:
            report.fail("har", f"page {final}: no response in the HAR hashes to its recorded fingerprint")
    if read.provenance is None and snap.pages:
        report.warn("provenance", "the HAR records no provenance (written before brt recorded it): the pages' "
                                  "text, chunks and dates are checked against the snapshot alone")
    report.checked["har_pages"] = present
    report.checked["fingerprints"] = matched


def _provenance(report: VerifyReport, har: _Har, page: dict[str, Any], final: str,
                responses: list[tuple[int, str]], *, harvested: bool) -> None:
    """The page as the snapshot records it against its provenance record in the HAR: the body the server sent
    (present in the HAR), the text extracted from it, its chunks, title and dates."""
    from ..harvest.har import sha256_hex

    if har.provenance is None or not harvested:
        return  # a HAR from before provenance records (warned once), or a page added with add_page (warned)
    rec = har.provenance.get(final)
    if rec is None:
        if not har.cut_short([final, str(page.get("url") or final)]):
            report.fail("provenance", f"page {final}: the HAR records no provenance for it")
        return
    report.checked["provenance"] = report.checked.get("provenance", 0) + 1
    doc = rec.get("doc_sha256")
    if doc and responses and not any(sha == doc for _, sha in responses):
        report.fail("provenance", f"page {final}: the body its text was extracted from is not in the HAR")
    if sha256_hex(str(page.get("text") or "").encode("utf-8")) != rec.get("text_sha256"):
        report.fail("provenance", f"page {final}: its text is not the text brt extracted from what the server "
                                  "sent")
    if list(page.get("chunk_ids") or []) != list(rec.get("chunk_ids") or []):
        report.fail("provenance", f"page {final}: its chunks are not the chunks brt stored for it")
    for key in ("title", "last_updated", "last_updated_source"):
        if page.get(key) != rec.get(key):
            report.fail("provenance", f"page {final}: {key} {page.get(key)!r}, the HAR's record says "
                                      f"{rec.get(key)!r}")
