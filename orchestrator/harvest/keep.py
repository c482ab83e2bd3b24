"""A harvest without a store (``memory.enabled: false``): pages are read, extracted and kept as they are, nothing
is chunked or embedded and no LanceDB store is written.

What the harvest keeps is a snapshot of the pages (``$BRT_HOME/snapshots/<id>-<stamp>.jsonl``, the format
``brt clean`` writes, with page records and no chunk) and the HAR beside it: every page's text, title, date and
provenance, every harvest event, the charter as harvested. ``brt verify`` checks it, and ``brt restore`` builds a
store from it (chunking and embedding the pages then). The run works in a folder of its own under
``$BRT_HOME/tmp`` (its journal, its HAR), removed when the kept files are written.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_store import PageInput, PageRecord
from memory_store.clock import now

from .models import Kept
from .writer import Writer

if TYPE_CHECKING:
    from memory_store import Memory

    from ..charter import Charter
    from .models import Fetched

__all__ = ["KeepWriter", "KeptPages", "keep_workdir", "remove_workdir", "write_kept"]

logger = logging.getLogger(__name__)


@dataclass
class KeptPages:
    """The pages a harvest without a store kept, in the order they were handed over (a URL read again: the last
    version)."""

    pages: dict[str, PageRecord] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, inputs: list[PageInput]) -> None:
        stored_at = now("microseconds")
        with self._lock:
            for page in inputs:
                self.pages.pop(page.url, None)
                self.pages[page.url] = PageRecord(
                    url=page.url,
                    text=page.text,
                    selector=page.selector,
                    last_updated=page.last_updated,
                    title=page.title,
                    requested_url=page.requested_url,
                    last_updated_source=page.last_updated_source,
                    fetched_at=page.fetched_at,
                    status=page.status,
                    content_type=page.content_type,
                    chunk_ids=[],
                    stored_at=stored_at,
                )

    def records(self) -> list[PageRecord]:
        with self._lock:
            return list(self.pages.values())


class KeepWriter(Writer):
    """The crawl's writer when the charter keeps no store: each page handed over is kept as extracted (its
    event settles ``stored``, with no chunk), nothing is embedded."""

    kept: KeptPages

    @classmethod
    def instead_of(cls, writer: Writer, kept: KeptPages) -> KeepWriter:
        """A writer with ``writer``'s report, progress, journal and callbacks that keeps pages in ``kept``."""
        new = cls(
            writer.memory,
            writer.report,
            writer.progress,
            writer.journal,
            finish=writer.finish,
            release=writer.release,
            accepted=writer.accepted,
            max_waiting=writer.queue.maxsize,
        )
        new.kept = kept
        return new

    def add_many(self, inputs: list[Any], batch: list[Fetched] | None = None) -> list[int]:
        self.kept.add(inputs)
        return [0] * len(inputs)


def keep_workdir(home: Path) -> Path:
    """A folder of the run's own under ``home/tmp`` (removed by the caller)."""
    parent = home / "tmp"
    parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="harvest-", dir=parent))


def write_kept(charter: Charter, work: Memory, kept: KeptPages, snapshot: Path) -> Kept:
    """The snapshot of the kept pages at ``snapshot`` (page records, the run's events, the charter as harvested;
    no chunk) and the run's HAR beside it."""
    from .. import __version__
    from ..trail.hooks import clean_records
    from .har import add_provenance, har_files, merge_hars
    from .journal import render_of_pages

    events = work.events()
    records = [dict(e, type=e.get("type", "harvest_event")) for e in events]
    records.extend(clean_records(charter, work, vectors=False))  # the charter as harvested
    render = render_of_pages(events)

    def page_fields(page: Any) -> dict[str, Any]:
        return render.get(page.url) or render.get(page.requested_url or "") or {}

    pages = kept.records()
    work.snapshot(snapshot, extra_records=records, include_vectors=False, tool_version=__version__,
                  page_fields=page_fields, pages=pages)
    har = merge_hars(har_files(work), snapshot.with_suffix(".har"))
    if har is not None:  # security: verify requires each page's provenance in the HAR (har.py)
        add_provenance(har, _provenance(pages, events))
    logger.info("kept %d page(s) without a store in %s", len(pages), snapshot)
    return Kept(snapshot, har, len(pages))


def _provenance(pages: list[PageRecord], events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The provenance record of each kept page, with the harvest event that stored it (its last)."""
    from .har import provenance_record

    stored: dict[str, dict[str, Any]] = {}
    for e in events:
        if e.get("outcome") == "stored":
            for key in (e.get("url"), e.get("final_url")):
                if isinstance(key, str) and key:
                    stored[key] = e
    return [provenance_record(p, stored.get(p.url) or stored.get(p.requested_url or "") or {}) for p in pages]


def remove_workdir(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
