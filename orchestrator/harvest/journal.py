"""The harvest journal: each URL's event is appended to the store's journal as soon as it settles (a ``kill -9``
loses at most the last fraction of a second), a ``harvest_summary`` record ends each run, and the next run
resumes from it (stored pages' links: the breadth-first crawl continues past pages it does not fetch again)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .limits import is_disk_full

if TYPE_CHECKING:
    from memory_store import Memory

    from .models import HarvestEvent

__all__ = ["ADDED", "HARVESTED", "PAGE_ADDED", "Journal", "last_summary", "load_links", "page_origins", "read_events",
           "render_of_pages"]

logger = logging.getLogger(__name__)

#: The journal record ``add_page`` writes for a page an agent added (``pages.ingest_page``).
PAGE_ADDED = "page_added"
#: How a stored page entered the store (``page_origins``; the snapshot's page records and the synthesis's
#: blocks carry it as ``origin``): read from what a server sent by a harvest, or added by an agent.
HARVESTED = "harvest"
ADDED = "add_page"


class Journal:
    """The events of one harvest run (``run_id``) on their way to ``memory``'s journal, written by a background
    task between ``start()`` and ``close()``."""

    def __init__(self, memory: Memory, run_id: str, *, on_disk_full: Callable[[str], None] | None = None) -> None:
        self.memory = memory
        self.on_disk_full = on_disk_full  # called once the disk is full (limits.py: the run stops)
        self.run_id = run_id
        self.records: list[dict[str, Any]] = []  # every record journaled by this run, in order
        self._ids: set[int] = set()
        self._pending: list[dict[str, Any]] = []
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._closing = False

    def start(self) -> None:
        """Start the writer task (in the running event loop)."""
        self._wake = asyncio.Event()
        self._task = asyncio.create_task(self._flusher(), name="brt-journal")

    def add(self, event: HarvestEvent) -> None:
        """Queue ``event``'s record for the journal (once; later calls are ignored)."""
        if id(event) in self._ids:
            return
        self._ids.add(id(event))
        record = dict(event.as_record(), run_id=self.run_id)
        self.records.append(record)
        self._pending.append(record)
        if self._wake is not None:
            self._wake.set()

    def take_unjournaled(self, events: list[HarvestEvent]) -> list[HarvestEvent]:
        """The events of ``events`` never queued (now marked as taken: the caller records them)."""
        out = [e for e in events if id(e) not in self._ids]
        for e in out:
            self._ids.add(id(e))
        return out

    async def _flusher(self) -> None:
        assert self._wake is not None
        while True:
            await self._wake.wait()
            self._wake.clear()
            batch, self._pending = self._pending, []
            if batch:
                try:
                    await asyncio.to_thread(self.memory.record_events, batch)
                except Exception as exc:
                    if is_disk_full(exc):  # stop the run (limits.py); say so once, not once per event
                        if self.on_disk_full is not None:
                            logger.error(
                                "disk full while writing the journal of %s; stopping the harvest",
                                self.memory.charter_id,
                            )
                            self.on_disk_full(f"disk full while writing the journal ({exc})")
                            self.on_disk_full = None
                    else:
                        logger.exception("cannot record harvest events for %s", self.memory.charter_id)
            if self._closing and not self._pending:
                return

    async def close(self) -> None:
        """Write what is queued and stop the writer task."""
        if self._task is None:
            return
        self._closing = True
        assert self._wake is not None
        self._wake.set()
        try:
            await self._task
        except Exception:
            logger.exception("journal writer of %s failed", self.memory.charter_id)
        self._task = None

    def record_summary(self, summary: dict[str, Any]) -> None:
        """Journal the run's summary (read back by ``brt status``)."""
        try:
            self.memory.record_events([{"type": "harvest_summary", "run_id": self.run_id, **summary}])
        except Exception as exc:
            if is_disk_full(exc):
                logger.error("cannot record the harvest summary of %s: disk full", self.memory.charter_id)
            else:
                logger.exception("cannot record the harvest summary of %s", self.memory.charter_id)


def read_events(memory: Memory) -> list[dict[str, Any]]:
    """The store's journal (an unreadable journal only costs refetches: [] then)."""
    try:
        return memory.events()
    except Exception as exc:
        logger.warning("cannot read the journal of %s: %s", memory.charter_id, exc)
        return []


def load_links(events: list[dict[str, Any]]) -> dict[str, list[str]]:
    """URL (requested and final) -> outlinks, from the journal's stored (or found unchanged) pages' events
    (the newest wins)."""
    links: dict[str, list[str]] = {}
    for e in events:
        settled = e.get("outcome") == "stored" or e.get("unchanged")
        if e.get("type", "harvest_event") == "harvest_event" and settled and "links" in e:
            for key in (e.get("url"), e.get("final_url")):
                if key:
                    links[key] = list(e["links"] or [])
    return links


def last_summary(memory: Memory) -> dict[str, Any] | None:
    """The summary record of the store's last harvest (None before the first hardened harvest)."""
    try:
        events = memory.events()
    except Exception:  # noqa: BLE001
        return None
    for e in reversed(events):
        if e.get("type") == "harvest_summary":
            return {k: v for k, v in e.items() if k not in ("type",)}
    return None


def render_of_pages(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """URL (requested and final) -> how its stored page was read, from the newest event that stored it:
    ``{"render": <harvest.render>, "rendered": <whether the browser rendered it>}`` (the snapshot's page
    records carry it). Pages stored before the setting existed, or added with add_page, have none."""
    out: dict[str, dict[str, Any]] = {}
    for e in events:
        if e.get("type", "harvest_event") != "harvest_event" or e.get("outcome") != "stored" or "render" not in e:
            continue
        how = {"render": e.get("render"), "rendered": e.get("rendered")}
        for key in (e.get("url"), e.get("final_url")):
            if isinstance(key, str) and key:
                out[key] = how
    return out


def page_origins(events: list[dict[str, Any]]) -> dict[str, str]:
    """URL (requested and final) -> how the page stored under it entered the store, from the newest journal
    record that stored it: ``"harvest"`` (a harvest event that stored it) or ``"add_page"`` (an agent's
    ``add_page``). A stored page whose URL is not here has no harvest on record: treat it as added."""
    out: dict[str, str] = {}
    for e in events:
        kind = e.get("type", "harvest_event")
        if kind == "harvest_event" and e.get("outcome") == "stored":
            origin = HARVESTED
        elif kind == PAGE_ADDED:
            origin = ADDED
        else:
            continue
        for key in ("url", "final_url", "requested_url"):
            value = e.get(key)
            if isinstance(value, str) and value:
                out[value] = origin
    return out
