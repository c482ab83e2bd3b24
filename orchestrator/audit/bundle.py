"""Everything a report shows, from a charter's store or from a snapshot, as one typed record."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ReportError

if TYPE_CHECKING:
    from ..synthesis_record import SectionRecord, SynthesisRecord

__all__ = ["AuditBundle", "Source", "load_bundle"]


@dataclass
class Source:
    """A stored page, with what the synthesis cited from it."""

    url: str
    title: str | None
    last_updated: str | None
    chunks: int
    chunks_cited: int = 0
    blocks: int = 0
    added: bool = False  # added without a harvest (add_page): no server response proves it


@dataclass
class AuditBundle:
    origin: str  # "store", "snapshot", or "json" (a synthesis's JSON read as a report: ``report_text``)
    path: Path  # the charter file or the snapshot
    charter_id: str
    title: str
    goal: str | None
    synthesis: SynthesisRecord
    pages: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    concepts: list[dict[str, Any]] = field(default_factory=list)
    edges: list[dict[str, Any]] = field(default_factory=list)
    manifest: dict[str, Any] | None = None
    charter_sha256: str | None = None
    notes: str | None = None  # the charter's free-text notes, shown under the goal
    _harvested: set[str] | None = field(default=None, repr=False)

    @property
    def sections(self) -> list[SectionRecord]:
        return self.synthesis.sections

    def added(self, url: object, claimed: object = None) -> bool:
        """Whether the page cited as ``url`` was added without a harvest (``add_page``), so that every report
        marks it: the record citing it says so (``claimed``: its ``origin``), the page record says so, or
        nothing on record shows a harvest that stored it (the journal's events). Marked when in doubt."""
        if claimed == "add_page":
            return True
        if self.origin == "json":  # a synthesis's JSON read alone: no record to weigh its claims against
            return claimed != "harvest"
        if self._harvested is None:
            from ..harvest.journal import HARVESTED, page_origins

            origins = page_origins(self.events)
            self._harvested = set()
            for p in self.pages:
                keys = [str(k) for k in (p.get("final_url"), p.get("url")) if k]
                if p.get("origin", HARVESTED) == HARVESTED and any(origins.get(k) == HARVESTED for k in keys):
                    self._harvested.update(keys)
        return str(url) not in self._harvested

    def sources(self) -> list[Source]:
        """Every stored page with the chunks and blocks the synthesis cited from it, most cited first."""
        cited: dict[str, set[str]] = {}
        blocks: Counter[str] = Counter()
        for s in self.sections:
            for b in s.blocks:
                cited.setdefault(b.url, set()).add(str(b.chunk_id))
                blocks[b.url] += 1
        out = []
        for p in self.pages:
            url = str(p.get("final_url") or p.get("url"))
            out.append(Source(url, p.get("title"), p.get("last_updated"), len(p.get("chunk_ids") or []),
                              len(cited.get(url, ())), blocks.get(url, 0), self.added(url)))
        known = {s.url for s in out}
        for url, ids in cited.items():  # cited but not stored (a snapshot that fails verify)
            if url not in known:
                out.append(Source(url, None, None, 0, len(ids), blocks[url], self.added(url)))
        return sorted(out, key=lambda s: (-s.blocks, s.url))

    def title_of(self, url: str) -> str | None:
        for p in self.pages:
            if url in (p.get("final_url"), p.get("url")):
                return p.get("title")
        return None

    def harvest(self) -> dict[str, Any]:
        """Harvest overview: runs, URLs attempted, outcomes over all runs, and the last run's summary."""
        events = [e for e in self.events if e.get("type", "harvest_event") == "harvest_event"]
        summaries = [e for e in self.events if e.get("type") == "harvest_summary"]
        starts = sorted(str(e.get("started_at")) for e in events if e.get("started_at"))
        return {
            "runs": len({e.get("run_id") for e in events}) if events else 0,
            "urls_attempted": len(events),
            "outcomes": dict(Counter(str(e.get("outcome")) for e in events)),
            "first_started": starts[0] if starts else None,
            "last_started": starts[-1] if starts else None,
            "last_summary": {k: v for k, v in summaries[-1].items() if k != "type"} if summaries else None,
            "restored": [e for e in self.events if e.get("type") == "restore"],
        }

    def conflict_blocks(self) -> dict[tuple[str, int], list[str]]:
        """(section title, block n) -> what it conflicts with ("#2: 3 seconds vs 2.5 seconds"; a page no block
        cites by its URL and date)."""
        out: dict[tuple[str, int], list[str]] = {}
        for c in self.synthesis.conflicts:
            section = str(c.section)
            for this, other in ((c.a, c.b), (c.b, c.a)):
                if not this.n:
                    continue  # a page no block cites has no block to mark
                who = f"#{other.n}" if other.n else f"{other.url} ({other.last_updated or 'undated'})"
                out.setdefault((section, this.n), []).append(f"{who}: {this.value} vs {other.value}")
        return out


def load_bundle(path: str | Path) -> AuditBundle:
    """A charter file (its store's last synthesis) or a snapshot (``.jsonl``). Raises ReportError when there
    is no synthesis to report, SnapshotError / CharterError / StoreNotFound for bad input."""
    p = Path(path).expanduser()
    if p.suffix.lower() == ".jsonl":
        return _from_snapshot(p)
    return _from_store(p)


def _from_snapshot(path: Path) -> AuditBundle:
    from ..synthesis_record import SynthesisRecord
    from .snapshot import read_snapshot

    snap = read_snapshot(path)
    if snap.synthesis is None:
        raise ReportError(f"{path} records no synthesis (the charter was not synthesized before /clean)")
    syn = SynthesisRecord.from_json(snap.synthesis)  # the record's JSON, as the store kept it
    charter = snap.harvest_charter()
    goal, notes = _goal(charter["text"], charter.get("format", "yaml")) if charter else (None, None)
    return AuditBundle(
        origin="snapshot",
        path=snap.path,
        charter_id=snap.charter_id,
        title=str(syn.title or snap.charter_id),
        goal=goal,
        notes=notes,
        synthesis=syn,
        pages=snap.pages,
        events=snap.events,
        concepts=snap.concepts,
        edges=snap.edges,
        manifest=snap.manifest,
        charter_sha256=syn.recorded.charter_sha256 if syn.recorded else None,
    )


def _goal(text: str, fmt: str) -> tuple[str | None, str | None]:
    """The goal and the notes of the charter as harvested."""
    from ..trail.store import parse_charter_text

    try:
        charter = parse_charter_text(text, fmt)
    except Exception:  # noqa: BLE001 - verify reports a bad charter; the report just has no goal line
        return None, None
    return charter.goal, charter.notes


def _from_store(path: Path) -> AuditBundle:
    from ..charter import load_charter
    from ..config import open_memory, store_exists
    from ..synthesis_record import SynthesisRecord
    from ..trail.store import stored_synthesis

    charter = load_charter(path)
    if not store_exists(charter):
        raise ReportError(f"charter {charter.id!r} ({path}) has no store (never harvested, or cleaned)",
                          advice="harvest_first")
    mem = open_memory(charter, create=False)
    stored = stored_synthesis(mem)
    if stored is None:
        raise ReportError(f"charter {charter.id!r} ({path}) has no synthesis yet", advice="synthesize_first")
    syn = SynthesisRecord.from_json(stored)
    pages = [
        {"url": p.requested_url or p.url, "final_url": p.url, "title": p.title, "last_updated": p.last_updated,
         "chunk_ids": list(p.chunk_ids)}
        for p in mem.pages()
    ]
    concepts: list[dict[str, Any]] = []
    edges: list[dict[str, Any]] = []
    try:
        from concept_index import snapshot_records

        for rec in snapshot_records(mem):
            if rec["type"] == "concept":
                concepts.append(rec)
            elif rec["type"] == "edge":
                edges.append(rec)
    except Exception:  # noqa: BLE001 - the map is optional: a report without it is still a report
        pass
    return AuditBundle(
        origin="store",
        path=charter.source or path,
        charter_id=charter.id,
        title=str(syn.title or charter.title),
        goal=charter.goal,
        notes=charter.notes,
        synthesis=syn,
        pages=pages,
        events=mem.events(),
        concepts=concepts,
        edges=edges,
        charter_sha256=syn.recorded.charter_sha256 if syn.recorded else None,
    )
