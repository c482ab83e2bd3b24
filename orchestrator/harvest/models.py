"""Typed records of a harvest: one ``HarvestEvent`` per URL attempted (its ``harvest_event`` snapshot record),
the ``HarvestReport`` of a run, and ``Fetched``, a page on its way from a reader to the store writer."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from .extract import ExtractedPage

__all__ = [
    "HTML_TYPES",
    "Egress",
    "EventTimings",
    "Fetched",
    "HarvestEvent",
    "HarvestReport",
    "Kept",
    "Outcome",
    "StageTimings",
    "media_type",
]

Outcome = Literal["stored", "skipped", "blocked", "failed"]

#: Content types read as HTML pages (anything else is skipped, or read as a PDF).
HTML_TYPES = ("text/html", "application/xhtml+xml")


def media_type(headers: Mapping[str, str]) -> str | None:
    """The media type of a response's Content-Type header (lower-case, without parameters)."""
    for key, value in headers.items():
        if key.lower() == "content-type":
            return value.split(";", 1)[0].strip().lower() or None
    return None


#: Refused connections kept in a report's ``egress`` record at most (the count covers them all).
MAX_REFUSALS_KEPT = 200


@dataclass
class Egress:
    """How a harvest's browser was held to the allowlist (``net/proxy.py``): the ``egress`` record of the run's
    ``harvest_summary``. ``enforced`` is False for a browser brt did not launch (``--browser-url``)."""

    enforced: bool
    # every connection through the egress proxy; the proxy refusing everything (replay); an attached browser:
    # only the requests of brt's browser context through the proxy (best effort)
    by: Literal["proxy", "replay", "context proxy"]
    note: str = ""
    refused: int = 0  # connections the proxy refused
    refused_targets: list[str] = field(default_factory=list)  # "host:port: reason", the first MAX_REFUSALS_KEPT

    def add_refused(self, targets: list[str]) -> None:
        self.refused += len(targets)
        room = MAX_REFUSALS_KEPT - len(self.refused_targets)
        self.refused_targets.extend(targets[: max(0, room)])

    def as_record(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class EventTimings:
    fetch_s: float = 0.0
    extract_s: float = 0.0
    store_s: float = 0.0


@dataclass
class HarvestEvent:
    """What happened to one URL. ``as_record()`` is the snapshot's ``harvest_event`` line."""

    url: str
    depth: int
    started_at: str
    outcome: Outcome = "failed"
    reason: str | None = None
    final_url: str | None = None
    status: int | None = None
    timings: EventTimings = field(default_factory=EventTimings)
    chunks: int = 0
    blocked_requests: list[str] = field(default_factory=list)
    aborted_requests: dict[str, int] = field(default_factory=dict)  # text mode: aborted subresources per type
    attempts: list[dict[str, Any]] = field(default_factory=list)  # every try (retries: orchestrator/politeness)
    bytes_read: int = 0
    links: list[str] | None = None  # allowed outlinks of a stored page (a resume continues the BFS from them)
    retry_after: float | None = None  # the last response's Retry-After, in seconds (not recorded)
    partial: str | None = None  # the document was still arriving at the deadline and was taken as it stood
    fingerprint: dict[str, Any] | None = None  # what the stored text was made from (orchestrator/revalidate.py)
    unchanged: bool = False  # a refresh found the page's inputs identical and did not render it again
    lead_recovered: str | None = None  # the page's lead was missing from the extracted text: its source
    text_from: str | None = None  # "served": the rendered page had no readable text, the served HTML had
    render: str | None = None  # harvest.render when the page was read: "auto", "always" or "never"
    rendered: bool | None = None  # whether the browser rendered it (False: read from the HTML as served)
    render_reasons: list[str] = field(default_factory=list)  # auto: the signals that asked for the browser
    render_signals: dict[str, Any] | None = None  # auto: what the served HTML showed (render_need.py)
    egress: str | None = None  # set when the browser that read it was not held to the allowlist (attached)
    navigated: bool = False  # the tab was navigated for it (else the tab is still clean; not recorded)
    replaces: bool = False  # it replaces a page the store held (does not count toward max_pages; not recorded)

    def start_over(self) -> None:
        """Clear what the last attempt settled, before the URL is tried again (``attempts`` stay)."""
        self.outcome, self.reason, self.status, self.final_url = "failed", None, None, None
        self.retry_after = self.partial = self.fingerprint = None
        self.bytes_read = 0
        self.rendered = self.render_signals = None
        self.render_reasons = []

    def as_record(self) -> dict[str, Any]:
        timings = {k: round(v, 4) for k, v in asdict(self.timings).items()}
        extra: dict[str, Any] = {"attempts": list(self.attempts), "bytes": self.bytes_read}
        if self.links is not None:
            extra["links"] = list(self.links)
        if self.partial is not None:
            extra["partial"] = self.partial
        if self.fingerprint is not None:
            extra["fingerprint"] = self.fingerprint
        if self.unchanged:
            extra["unchanged"] = True
        if self.lead_recovered:
            extra["lead_recovered"] = self.lead_recovered
        if self.text_from:
            extra["text_from"] = self.text_from
        if self.render is not None:
            extra["render"] = self.render
            extra["rendered"] = self.rendered
            if self.render_reasons:
                extra["render_reasons"] = list(self.render_reasons)
            if self.render_signals is not None:
                extra["render_signals"] = dict(self.render_signals)
        if self.egress:
            extra["egress"] = self.egress
        return extra | {
            "type": "harvest_event",
            "url": self.url,
            "final_url": self.final_url,
            "depth": self.depth,
            "outcome": self.outcome,
            "reason": self.reason,
            "status": self.status,
            "started_at": self.started_at,
            "timings": timings,
            "chunks": self.chunks,
            "blocked_requests": list(self.blocked_requests),
            "aborted_requests": dict(self.aborted_requests),
        }


@dataclass
class StageTimings:
    """Summed seconds per stage (fetch and extract overlap across pages; store runs beside them)."""

    fetch_s: float = 0.0
    extract_s: float = 0.0
    store_s: float = 0.0


@dataclass
class Kept:
    """What a harvest without a store (``memory.enabled: false``) kept: the snapshot of its pages (no chunk) and
    the HAR beside it (``keep.py``)."""

    snapshot: Path
    har: Path | None
    pages: int

    def to_json(self) -> dict[str, Any]:
        return {"snapshot": str(self.snapshot), "har": str(self.har) if self.har else None, "pages": self.pages}


@dataclass
class HarvestReport:
    """The result of one harvest. ``events`` are the ``harvest_event`` records, one per URL attempted."""

    charter_id: str
    events: list[dict[str, Any]] = field(default_factory=list)
    pages_stored: int = 0
    chunks_total: int = 0
    chunks_embedded: int = 0
    elapsed_s: float = 0.0
    timings: StageTimings = field(default_factory=StageTimings)
    har_path: Path | None = None
    replay: Path | None = None
    blocked_requests: list[str] = field(default_factory=list)
    block_resources: list[str] = field(default_factory=list)  # text mode: the resource types aborted
    aborted_requests: dict[str, int] = field(default_factory=dict)  # text mode: aborted subresources per type
    not_attempted: int = 0  # links found but not attempted because max_pages was reached (or the browser gave out)
    browser_relaunches: int = 0  # crashed browsers replaced during the harvest (at most 3: orchestrator/crash.py)
    har_paths: list[Path] = field(default_factory=list)  # every HAR recorded (one per browser context), oldest first
    har_incomplete: list[Path] = field(default_factory=list)  # HARs a browser crash cut short (marked so inside)
    summary_table: dict[str, Any] | None = None  # summary.summarize() of the events (also journaled)
    stopped: str | None = None  # why the run stopped early (max_attempts, max_duration_s, disk full: limits.py)
    egress: Egress | None = None  # how the browser's connections were held (None: no browser was opened)
    engine: dict[str, Any] | None = None  # where the pages were read: local, or Ray and its address (run.py)
    popups_closed: int = 0  # pages the harvest's browser opened by itself (window.open, target=_blank), closed
    # Whether a browser was started (harvest.render: auto starts one for the first page that must be rendered);
    # None: the reader does not say (devtools-mcp, Ray)
    browser_started: bool | None = None
    # memory.enabled: false: what the harvest kept instead of a store (harvest/keep.py); None: it wrote a store
    kept: Kept | None = None
    nothing_stored: bool = False  # the run left the charter with no stored page: its empty store was removed

    def counts(self) -> dict[str, int]:
        """Events per outcome (all four outcomes present, zero included)."""
        counts = {"stored": 0, "skipped": 0, "blocked": 0, "failed": 0}
        for event in self.events:
            counts[event["outcome"]] = counts.get(event["outcome"], 0) + 1
        return counts

    def summary(self) -> str:
        """One line: counts by outcome, pages, chunks and time."""
        counts = ", ".join(f"{n} {outcome}" for outcome, n in self.counts().items())
        relaunched = f"; browser relaunched {self.browser_relaunches}x" if self.browser_relaunches else ""
        stopped = f"; stopped: {self.stopped}" if self.stopped else ""
        if self.kept is not None:
            return (
                f"{counts}; memory disabled: nothing embedded, no store written; {self.kept.pages} pages' text kept "
                f"in {self.kept.snapshot} in {self.elapsed_s:.1f}s{relaunched}{stopped}"
            )
        return (
            f"{counts}; {self.pages_stored} pages stored, {self.chunks_total} chunks "
            f"({self.chunks_embedded} newly embedded) in {self.elapsed_s:.1f}s{relaunched}{stopped}"
        )

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of the whole report."""
        return {
            "charter_id": self.charter_id,
            "counts": self.counts(),
            "pages_stored": self.pages_stored,
            "chunks_total": self.chunks_total,
            "chunks_embedded": self.chunks_embedded,
            "elapsed_s": self.elapsed_s,
            "timings": {k: round(v, 3) for k, v in asdict(self.timings).items()},
            "har_path": str(self.har_path) if self.har_path else None,
            "replay": str(self.replay) if self.replay else None,
            "blocked_requests": list(self.blocked_requests),
            "block_resources": list(self.block_resources),
            "aborted_requests": dict(self.aborted_requests),
            "not_attempted": self.not_attempted,
            "browser_relaunches": self.browser_relaunches,
            "har_paths": [str(p) for p in self.har_paths],
            "har_incomplete": [str(p) for p in self.har_incomplete],
            "stopped": self.stopped,
            "egress": self.egress.as_record() if self.egress is not None else None,
            "engine": self.engine,
            "popups_closed": self.popups_closed,
            "browser_started": self.browser_started,
            "kept": self.kept.to_json() if self.kept is not None else None,
            "nothing_stored": self.nothing_stored,
            "events": list(self.events),
        }


@dataclass
class Fetched:
    """A page fetched and extracted, on its way to the writer."""

    event: HarvestEvent
    extracted: ExtractedPage
    status: int | None
    content_type: str | None
    fetched_at: str
    pdf_pages: list[str] | None = None  # a PDF's text per page (chunk selectors pdf#page=N)
