"""The harvest stage: breadth-first crawl of a charter's seeds with a real browser, extraction, and a
pipelined writer that chunks and embeds pages into the charter's store while fetching continues.

    harvest(charter) -> HarvestReport

Every URL attempted gets exactly one ``harvest_event`` record (stored, skipped, blocked or failed); single
pages never raise. A run that leaves the charter with no stored page removes the empty store and says so
(``HarvestReport.nothing_stored``; ``brt harvest`` exits 3). Only problems that stop the whole harvest raise
(BrowserNotFound, HarvestBusy, HarvestError). The pieces: ``crawl`` (frontier, limits, retries, writer hand-over)
drives a ``PageReader`` (``readers/playwright``, ``readers/devtools_mcp``); see the package's ``__init__``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_store.errors import MemoryStoreError, StoreLocked

from ..config import open_memory
from ..errors import DiskFull, HarvestBusy, HarvestError
from ..progress import NullProgress, ProgressSink
from .crawl import Crawl
from .models import HarvestReport
from .pages import update_concept_index
from .reader import PageReader
from .readers.devtools_mcp.reader import DevtoolsReader
from .readers.playwright.reader import PlaywrightReader

if TYPE_CHECKING:
    from memory_store import Memory

    from ..charter import Charter

__all__ = ["harvest", "harvest_async"]

logger = logging.getLogger(__name__)


def harvest(
    charter: Charter,
    *,
    replay: Path | None = None,
    browser_url: str | None = None,
    via: str = "playwright",
    memory: Memory | None = None,
    progress: ProgressSink | None = None,
    refresh: bool = False,
    ray: str | None = None,
) -> HarvestReport:
    """Harvest ``charter`` into its store (see :func:`harvest_async`). Runs its own event loop (in a helper
    thread when called from inside a running loop)."""
    coro_args = dict(
        replay=replay, browser_url=browser_url, via=via, memory=memory, progress=progress, refresh=refresh, ray=ray
    )
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(harvest_async(charter, **coro_args))  # type: ignore[arg-type]

    result: dict[str, Any] = {}

    def _run() -> None:
        try:
            result["report"] = asyncio.run(harvest_async(charter, **coro_args))  # type: ignore[arg-type]
        except BaseException as exc:  # re-raised in the caller's thread
            result["error"] = exc

    thread = threading.Thread(target=_run, name="brt-harvest")
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]
    return result["report"]


async def harvest_async(
    charter: Charter,
    *,
    replay: Path | None = None,
    browser_url: str | None = None,
    via: str = "playwright",
    memory: Memory | None = None,
    progress: ProgressSink | None = None,
    refresh: bool = False,
    ray: str | None = None,
) -> HarvestReport:
    """Crawl the charter's seeds breadth-first (``max_depth`` hops, at most ``max_pages`` stored pages,
    ``concurrency`` pages at a time) and store their text.

    ``replay`` serves every response from a HAR file (nothing touches the network). With ``refresh=False``
    a URL already in the store is not fetched again (event skipped, "already stored"; its links are not
    followed); ``refresh=True`` fetches it again and the store replaces its chunks (unchanged chunks are not
    embedded again).

    ``ray`` (``--ray [ADDRESS]``: "local", "auto" or "ray://host:port") fans the reading out on Ray
    (``ray_engine``); so does ``harvest.engine: ray`` in the charter, on ``BRT_RAY_ADDRESS`` when the operator
    set it (a charter never names the address). The harvest's summary record says where it ran."""
    on_ray, address, engine = _engine(charter, ray)
    if on_ray and (via != "playwright" or browser_url is not None or replay is not None or refresh):
        raise HarvestError(
            "a harvest on Ray reads with its workers' own browsers: it cannot be combined with --via devtools-mcp, "
            "--browser-url, --replay or --refresh (run those without --ray)"
        )
    if via not in ("playwright", "devtools-mcp"):
        raise HarvestError(f"unknown --via {via!r}: expected playwright or devtools-mcp")
    if via == "devtools-mcp" and (browser_url is not None or replay is not None):
        raise HarvestError(
            "reading through devtools-mcp starts its own browser: it cannot be combined with attaching to a "
            "running browser (a browser URL) or replaying a HAR"
        )
    if browser_url is not None and replay is not None:
        raise HarvestError("--browser-url and --replay cannot be combined")
    if replay is not None:
        replay = Path(replay)
        if not replay.is_file():
            raise HarvestError(f"replay file not found: {replay}")
    if not charter.memory.enabled:
        _check_keep(on_ray, memory, refresh)
        return await _harvest_kept(charter, via, replay, browser_url, progress)
    if memory is None:
        memory = open_memory(charter)
    try:
        lock = memory.harvest_lock()
        lock.__enter__()
    except StoreLocked as exc:
        raise HarvestBusy(str(exc)) from exc
    try:
        from ..trail.hooks import after_harvest_start

        await asyncio.to_thread(after_harvest_start, charter, memory)  # audit: the charter as harvested
        if on_ray:
            from .ray_engine import ray_session  # Ray is imported on this path only

            async with ray_session(charter, memory, address) as ray_reader:
                report = await _crawl(charter, memory, progress, ray_reader, replay, refresh, engine)
        else:
            reader = _reader(via, Path(memory.path), replay, browser_url)
            report = await _crawl(charter, memory, progress, reader, replay, refresh, {"name": "local"})
    finally:
        lock.__exit__(None, None, None)
    await asyncio.to_thread(_drop_if_empty, memory, report)
    return report


def _drop_if_empty(memory: Memory, report: HarvestReport) -> None:
    """A run that left the charter with no stored page (every URL failed, was blocked or skipped) keeps no empty
    store: it is removed, and ``report.nothing_stored`` says so. The events stay in the report."""
    if report.pages_stored or memory.count_pages():
        return
    report.nothing_stored = True
    try:
        memory.reset()
    except MemoryStoreError as exc:  # e.g. another harvest started in between: it owns the store now
        logger.warning("cannot remove the empty store of %s: %s", report.charter_id, exc)


def _reader(via: str, store_path: Path, replay: Path | None, browser_url: str | None) -> PageReader:
    """The reader ``via`` names (the Playwright reader records its HAR under ``store_path``)."""
    if via == "devtools-mcp":
        return DevtoolsReader()
    return PlaywrightReader(store_path, replay=replay, browser_url=browser_url)


def _check_keep(on_ray: bool, memory: Memory | None, refresh: bool) -> None:
    """What a harvest without a store (``memory.enabled: false``) cannot be combined with."""
    if on_ray:
        raise HarvestError("memory.enabled is false: a harvest that keeps no store runs locally, not on Ray")
    if refresh:
        raise HarvestError(
            "memory.enabled is false: --refresh compares pages with the store, and this charter keeps none"
        )
    if memory is not None:
        raise HarvestError("memory.enabled is false: this charter's harvests write no store, none can be given")


async def _harvest_kept(
    charter: Charter, via: str, replay: Path | None, browser_url: str | None, progress: ProgressSink | None
) -> HarvestReport:
    """``memory.enabled: false``: the crawl in a working folder of its own, the pages kept as extracted and
    written, with the events and the HAR, as a snapshot without chunks (``keep.py``); nothing embedded, no store."""
    from memory_store import Memory
    from memory_store.settings import brt_home

    from ..config import default_snapshot_path, embedding_model
    from ..trail.hooks import after_harvest_start
    from .keep import KeptPages, keep_workdir, remove_workdir, write_kept

    work_dir = keep_workdir(brt_home())
    try:
        work = Memory(charter.id, basepath=work_dir, model=embedding_model(charter))  # never written: no rows
        await asyncio.to_thread(after_harvest_start, charter, work)  # the charter as harvested, for the snapshot
        reader = _reader(via, Path(work.path), replay, browser_url)
        kept = KeptPages()
        crawl = Crawl(charter, work, progress or NullProgress(), reader, replay=replay, refresh=False, kept=kept)
        crawl.report.engine = {"name": "local"}  # the summary record says where it ran
        report = await crawl.run()
        snapshot = default_snapshot_path(charter.id)
        report.kept = await asyncio.to_thread(write_kept, charter, work, kept, snapshot)
        report.har_path = report.kept.har
        report.har_paths = [report.kept.har] if report.kept.har else []
        return report
    finally:
        remove_workdir(work_dir)


async def _crawl(
    charter: Charter,
    memory: Memory,
    progress: ProgressSink | None,
    reader: PageReader,
    replay: Path | None,
    refresh: bool,
    engine: dict[str, Any] | None = None,
) -> HarvestReport:
    """The crawl with ``reader``, then the concept index (the store's embedder is still the run's). ``engine``:
    where the pages were read (the summary record carries it)."""
    crawl = Crawl(charter, memory, progress or NullProgress(), reader, replay=replay, refresh=refresh)
    crawl.report.engine = engine
    try:
        report = await crawl.run()
    finally:  # the HARs are written: each stored page's provenance goes into its run's HAR (har.py)
        await asyncio.to_thread(_record_provenance, memory, crawl.report)
    disk_full = bool(report.stopped and report.stopped.startswith("disk full"))
    if charter.memory.use_concept_index and report.pages_stored and not disk_full:
        await asyncio.to_thread(update_concept_index, charter, memory)  # concept index: incremental update
    if disk_full:  # limits.py: stopped cleanly, what was stored is kept
        raise DiskFull(f"harvest of {charter.id} stopped: {report.stopped}; {report.summary()}", report)
    return report


def _record_provenance(memory: Memory, report: HarvestReport) -> None:
    """The provenance of every page this run stored, in the last HAR the run recorded (never fails the run)."""
    from .har import add_provenance, provenance_record

    hars = [Path(p) for p in (report.har_paths or ([report.har_path] if report.har_path else []))]
    hars = [p for p in hars if p.is_file()]
    if not hars:
        return
    try:
        records = []
        for event in report.events:
            if event.get("outcome") != "stored":
                continue
            page = memory.page(str(event.get("final_url") or event.get("url")))
            if page is not None:
                records.append(provenance_record(page, event))
        add_provenance(hars[-1], records)
    except Exception:  # noqa: BLE001 - provenance is for the audit; the pages are stored
        logger.exception("cannot record the provenance of the pages stored by this harvest")


def _engine(charter: Charter, ray: str | None) -> tuple[bool, str | None, dict[str, Any] | None]:
    """(on Ray?, the Ray address, the audit trail's record of it). The address comes from the operator only:
    ``--ray ADDRESS``, else ``BRT_RAY_ADDRESS``, else a local Ray instance started for the run; never from the
    charter (its ``harvest.ray.address`` is refused when it is loaded) nor from an MCP argument. A harvest runs
    on Ray when ``--ray`` is given or the charter says ``harvest.engine: ray``."""
    from ..settings import run_settings

    if ray and ray not in ("local", "auto") and not ray.startswith("ray://"):
        raise HarvestError(f"--ray takes local, auto or a ray://host:port address, got {ray!r}")
    if ray is None and charter.harvest.engine != "ray":
        return False, None, None
    configured = run_settings().ray_address
    if ray and ray != "local":  # --ray ADDRESS
        address, source = ray, "--ray"
    elif configured is not None and ray != "local":  # --ray alone, or the charter's engine
        address, source = configured, "BRT_RAY_ADDRESS"
    else:
        address, source = "local", "--ray local" if ray == "local" else "default"
    record = {"name": "ray", "address": "a local Ray instance" if address == "local" else address,
              "address_from": source}
    return True, None if address == "local" else address, record
