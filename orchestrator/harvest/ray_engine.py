"""A harvest fanned out on Ray (``brt harvest CHARTER --ray [ADDRESS]``, or ``harvest.engine: ray``).

The driver (this process) runs the same crawl as a local harvest (``crawl.Crawl``: frontier, limits, journal,
events, summary, resume) and the one store writer (``writer.Writer``); only the reader and the embedder are
elsewhere:

- ``RayReader`` is the crawl's ``PageReader``: it sends each URL to the Ray worker that owns the URL's host (the
  frontier is partitioned by host, so per-host politeness, robots.txt and Crawl-delay hold in one place); the
  worker (``ray_worker.BrowserWorker``: its own headless Chromium, HAR, SSRF guard) reads and extracts it and the
  crawl takes the page from there (duplicate check, max_pages, writer). A worker that dies loses no page: its
  hosts go to the workers left and its pages in flight are tried there.
- ``PooledEmbedder`` is the store's embedder (``Memory.use_embedder``): chunking and embedding run in a pool of
  ``ray_worker.EmbedWorker`` actors that load the model once.

Ray is imported here only, and only when a harvest on Ray starts (``pip install 'brt[ray]'``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import url_safety
from ..errors import BrowserNotFound, HarvestError, RayUnavailable, RayWorkerLost, first_line
from .crash import failed_attempt
from .har import har_name, mark_incomplete
from .models import Egress, HarvestEvent
from .ray_worker import BrowserWorker, EmbedWorker, VisitResult, WorkerClosed

if TYPE_CHECKING:
    from memory_store import Memory

    from ..charter import Charter, RayOptions
    from .models import HarvestReport
    from .reader import CrawlHost

__all__ = ["WORKER_LOST", "PooledEmbedder", "RayReader", "ray_session"]

logger = logging.getLogger(__name__)

#: The reason of an attempt cut short because its Ray worker died (the URL is tried on another worker).
WORKER_LOST = "Ray worker lost"
#: How often one URL is sent to another worker after its worker died under it.
MAX_LOST_PER_URL = 2
#: Environment the workers need when they run on a cluster that did not inherit this process's environment.
WORKER_ENV = (
    "BRT_BROWSER",
    "BRT_HOST_RESOLVER_RULES",
    "BRT_EMBED_BACKEND",
    "BRT_EMBED_MODEL",
    "BRT_MODEL_CACHE",
    "BRT_TORCH_THREADS",
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
)
#: The object store of a local Ray instance (pages and vectors pass through it; it spills to disk beyond).
LOCAL_OBJECT_STORE_BYTES = 128 * 1024 * 1024


def import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise RayUnavailable("a harvest on Ray needs Ray: pip install 'brt[ray]'") from exc
    return ray


def _ray_errors(ray: Any) -> tuple[type[BaseException], ...]:
    """Ray's errors that mean the actor (its process or node) is gone."""
    ex = ray.exceptions
    names = ("RayActorError", "ActorUnavailableError", "WorkerCrashedError", "NodeDiedError", "ObjectLostError")
    return tuple(getattr(ex, n) for n in names if hasattr(ex, n))


async def _await(ref: Any) -> Any:
    """An ObjectRef's value in asyncio (also for Ray Client refs)."""
    return await asyncio.wrap_future(ref.future())


# -- the session: Ray itself and the embedding pool ---------------------------------------------------------------


@asynccontextmanager
async def ray_session(charter: Charter, memory: Memory, address: str | None) -> AsyncIterator[RayReader]:
    """Connect to Ray (``address``: "auto", "ray://..."; None or "local": start a local instance, shut down at
    the end), start the embedding pool and make it the store's embedder; yields the crawl's ``RayReader``."""
    ray = import_ray()
    opts = charter.harvest.ray
    connected = _connect(ray, address, opts)  # (blocks a few seconds; nothing else runs yet)
    local = connected and address in (None, "local")
    env = None if local else {k: os.environ[k] for k in WORKER_ENV if k in os.environ}
    try:
        pool = await asyncio.to_thread(PooledEmbedder.start, ray, memory, opts.embedders, env)
        previous = memory.use_embedder(pool)
        try:
            yield RayReader(ray, charter, opts, Path(memory.path), env)
        finally:
            memory.use_embedder(previous)
            pool.stop()
    finally:
        if connected:  # a local instance stops; a cluster's driver disconnects, the cluster runs on
            await asyncio.to_thread(ray.shutdown)


def _connect(ray: Any, address: str | None, opts: RayOptions) -> bool:
    """ray.init; True when this call connected (started a local instance, or joined a cluster as its driver),
    so that the harvest disconnects at its end; False for a session the caller opened itself."""
    if ray.is_initialized():
        return False  # the caller's own Ray session (e.g. a notebook): used as it is, left running
    local = address in (None, "local")
    try:
        if local:
            ray.init(
                address="local",  # a new instance, even where a cluster once started on this machine is recorded
                num_cpus=opts.workers + opts.embedders,
                include_dashboard=False,
                object_store_memory=LOCAL_OBJECT_STORE_BYTES,
                log_to_driver=False,
                configure_logging=False,
            )
        else:
            _join(ray, address)
    except Exception as exc:  # Ray's own errors: a cluster that is not there, a bad address
        what = "start a local Ray instance" if local else f"connect to Ray at {address}"
        raise RayUnavailable(f"cannot {what}: {first_line(exc)}") from exc
    return True


#: Attempts to connect through Ray Client: its server starts a process per client, which now and then fails to
#: come up on a loaded head node ("Initialization failure from server"); a new attempt gets a new one.
CLIENT_ATTEMPTS = 3


def _join(ray: Any, address: str) -> None:
    """Join a running cluster as a driver (``auto``, a GCS address) or a Ray Client (``ray://``)."""
    attempts = CLIENT_ATTEMPTS if address.startswith("ray://") else 1
    for attempt in range(1, attempts + 1):
        try:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
            return
        except ConnectionError as exc:
            if attempt == attempts:
                raise
            logger.warning(
                "Ray Client at %s: %s; connecting again (%d/%d)", address, first_line(exc), attempt + 1, attempts
            )
            with contextlib.suppress(Exception):
                ray.shutdown()
            time.sleep(2.0 * attempt)


def _actor_options(num_cpus: float, env: dict[str, str] | None, **more: Any) -> dict[str, Any]:
    options: dict[str, Any] = {"num_cpus": num_cpus, "scheduling_strategy": "SPREAD", **more}
    if env:
        options["runtime_env"] = {"env_vars": env}
    return options


class PooledEmbedder:
    """The store's embedder during a harvest on Ray: ``Embedder``'s attributes, with chunking and embedding spread
    over ``EmbedWorker`` actors (each loads the model once). Used from the writer's thread (blocking calls)."""

    def __init__(self, ray: Any, actors: list[Any], info: dict[str, Any]) -> None:
        self.ray = ray
        self.actors = actors
        self.name: str = info["name"]
        self.dim: int = info["dim"]
        self.precision: str = info["precision"]
        self.recipe: str | None = info.get("recipe")
        self.max_tokens: int = info["max_tokens"]
        self.special_tokens: int = info["special_tokens"]
        self.query_instruction: str | None = info["query_instruction"]
        self.texts_embedded = 0
        self.batches = 0

    @classmethod
    def start(cls, ray: Any, memory: Memory, n: int, env: dict[str, str] | None) -> PooledEmbedder:
        remote = ray.remote(EmbedWorker)
        actors = [
            remote.options(**_actor_options(1, env)).remote(memory.model_name, memory.precision) for _ in range(n)
        ]
        try:
            infos = ray.get([a.info.remote() for a in actors])
        except Exception as exc:
            for a in actors:
                ray.kill(a)
            raise RayUnavailable(f"the embedding workers could not start: {first_line(exc)}") from exc
        return cls(ray, actors, infos[0])

    def stop(self) -> None:
        for a in self.actors:
            try:
                self.ray.kill(a)
            except Exception:  # noqa: BLE001 - gone already
                pass

    def _spread(self, items: list[Any]) -> list[list[Any]]:
        """``items`` in contiguous parts, one per actor (fewer when there are fewer items)."""
        n = min(len(self.actors), len(items))
        size = -(-len(items) // n)
        return [items[i : i + size] for i in range(0, len(items), size)]

    def chunk_pages(self, inputs: dict[str, Any]) -> dict[str, Any]:
        if not inputs:
            return {}
        parts = self._spread(list(inputs.items()))
        results = self.ray.get([a.chunk_pages.remote(dict(p)) for a, p in zip(self.actors, parts, strict=False)])
        merged: dict[str, Any] = {}
        for part in results:
            merged.update(part)
        return {url: merged[url] for url in inputs}

    def embed_documents(self, texts: list[str]) -> Any:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = self._spread(list(texts))
        vecs = self.ray.get([a.embed_documents.remote(p) for a, p in zip(self.actors, parts, strict=False)])
        self.texts_embedded += len(texts)
        self.batches += len(parts)
        return np.concatenate(vecs, axis=0)

    def embed_queries(self, texts: list[str]) -> Any:
        return self.ray.get(self.actors[0].embed_queries.remote(list(texts)))

    def count_tokens(self, text: str) -> int:
        return self.count_tokens_batch([text])[0]

    def count_tokens_batch(self, texts: list[str]) -> list[int]:
        return self.ray.get(self.actors[0].count_tokens_batch.remote(list(texts)))

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        return self.ray.get(self.actors[0].token_offsets.remote(text))


# -- the reader: browser workers, one per partition of the hosts --------------------------------------------------


@dataclass
class _Worker:
    index: int
    actor: Any
    alive: bool = True
    hosts: int = 0
    info: dict[str, Any] = field(default_factory=dict)
    pages_read: list[str] = field(default_factory=list)


class RayReader:
    """The crawl's ``PageReader`` on Ray: ``workers`` browser actors, ``tabs_per_worker`` pages each at a time;
    every URL goes to the worker that owns its host."""

    name = "ray"

    def __init__(
        self, ray: Any, charter: Charter, opts: RayOptions, store_path: Path, env: dict[str, str] | None
    ) -> None:
        self.ray = ray
        self.charter = charter
        self.opts = opts
        self.env = env
        self.har_dir = store_path / "har"
        concurrency = int(charter.harvest.concurrency)
        self.tabs = int(opts.tabs_per_worker or -(-concurrency // opts.workers))
        self.workers: list[_Worker] = []
        self.owner: dict[str, _Worker] = {}  # host -> the worker that reads it
        self.host: CrawlHost = None  # type: ignore[assignment]  # set by open()
        self.closed: list[WorkerClosed] = []
        self.har_paths: list[Path] = []
        self.har_incomplete: list[Path] = []
        self._fatal: BaseException | None = None
        self._errors = _ray_errors(ray)

    def prepare(self, report: HarvestReport) -> None:
        report.har_path = None  # one HAR per worker context, written when the workers close

    @property
    def fatal(self) -> BaseException | None:
        return self._fatal

    def slots(self) -> list[Any]:
        return [None] * (self.tabs * len(self.workers or range(self.opts.workers)))

    @asynccontextmanager
    async def open(self, host: CrawlHost) -> AsyncIterator[None]:
        self.host = host
        # the workers need the charter's harvest settings, never the store's credentials
        charter = self.charter.model_copy(update={"memory": type(self.charter.memory)()})
        remote = self.ray.remote(BrowserWorker)
        for i in range(self.opts.workers):
            options = _actor_options(1, self.env, max_concurrency=self.tabs * 4 + 16)
            self.workers.append(_Worker(i, remote.options(**options).remote(charter, self.tabs, i)))
        try:
            await self._start_workers()
            yield
        finally:
            await self._close_workers()

    async def _start_workers(self) -> None:
        results = await asyncio.gather(*(_await(w.actor.start.remote()) for w in self.workers), return_exceptions=True)
        for w, info in zip(self.workers, results, strict=True):
            if isinstance(info, BaseException):
                raise RayUnavailable(f"Ray worker {w.index} did not start: {first_line(info)}") from info
            w.info = info
            if info.get("error"):
                kind = BrowserNotFound if info["error"] == "BrowserNotFound" else HarvestError
                raise kind(f"Ray worker {w.index} on {info.get('node')}: {info.get('message')}")
        logger.info(
            "harvest on Ray: %d browser workers (%d tabs each) on %s",
            len(self.workers),
            self.tabs,
            ", ".join(sorted({str(w.info.get("node")) for w in self.workers})),
        )

    async def _close_workers(self) -> None:
        live = [w for w in self.workers if w.alive and w.info]
        results = await asyncio.gather(*(_await(w.actor.close.remote()) for w in live), return_exceptions=True)
        self.har_dir.mkdir(parents=True, exist_ok=True)
        for w, closed in zip(live, results, strict=True):
            if isinstance(closed, BaseException):
                logger.warning("Ray worker %d could not close cleanly: %s", w.index, first_line(closed))
                w.alive = False
                continue
            self.closed.append(closed)
            for name, data, incomplete in closed.hars:
                path = self.har_dir / f"{Path(name).stem}-w{w.index}.har"
                path.write_bytes(zlib.decompress(data))
                self.har_paths.append(path)
                if incomplete:
                    self.har_incomplete.append(path)
        for w in self.workers:
            if not w.alive and w.info:  # its context's recording went with it: a placeholder says so
                path = self.har_dir / f"{Path(har_name()).stem}-w{w.index}.har"
                mark_incomplete(path, WORKER_LOST, w.pages_read, lost=True)
                self.har_paths.append(path)
                self.har_incomplete.append(path)
                _remove_workdir(w.info)
            try:
                self.ray.kill(w.actor)
            except Exception:  # noqa: BLE001 - gone already
                pass

    def finish_report(self, report: HarvestReport) -> None:
        report.blocked_requests = [u for c in self.closed for u in c.blocked_requests]
        report.block_resources = sorted({r for c in self.closed for r in c.block_resources})
        aborted: dict[str, int] = {}
        for c in self.closed:
            for kind, n in c.aborted_requests.items():
                aborted[kind] = aborted.get(kind, 0) + n
        report.aborted_requests = dict(sorted(aborted.items()))
        report.browser_relaunches = sum(c.browser_relaunches for c in self.closed)
        held = [c.egress for c in self.closed if c.egress is not None]
        if held:  # every worker's browser went through its own egress proxy
            report.egress = Egress(enforced=all(e.enforced for e in held), by=held[0].by, note=held[0].note)
            for e in held:
                report.egress.add_refused(e.refused_targets)
                report.egress.refused += e.refused - len(e.refused_targets)
        report.har_paths = sorted(self.har_paths)
        report.har_incomplete = sorted(self.har_incomplete)
        report.har_path = report.har_paths[0] if report.har_paths else None

    # -- one URL ---------------------------------------------------------------------------------------------

    def worker_for(self, url: str) -> _Worker | None:
        """The worker that owns ``url``'s host: the first time a host is seen (or its worker died), the live
        worker with the fewest hosts takes it."""
        host = (url_safety.hostname(url) or "").lower()
        owner = self.owner.get(host)
        if owner is not None and owner.alive:
            return owner
        live = [w for w in self.workers if w.alive]
        if not live:
            return None
        owner = min(live, key=lambda w: (w.hosts, w.index))
        owner.hosts += 1
        self.owner[host] = owner
        return owner

    def lost(self, worker: _Worker, why: str) -> None:
        if worker.alive:
            worker.alive = False
            logger.warning("Ray worker %d lost (%s); its hosts go to the workers left", worker.index, why)
            try:
                self.ray.kill(worker.actor)
            except Exception:  # noqa: BLE001 - gone already
                pass
        if not any(w.alive for w in self.workers) and self._fatal is None:
            self._fatal = RayWorkerLost(
                f"every Ray worker was lost ({why}): the harvest stopped (pages stored so far are kept)"
            )

    async def visit(self, event: HarvestEvent, slot: Any) -> tuple[list[str], bool, Any]:
        known = await self.host.skip_stored(event)  # the store is checked here, before a worker is asked
        if known is not None:
            return known, False, slot
        lost = 0
        while True:
            worker = self.worker_for(event.url)
            if worker is None:
                self.host.finish(event, "failed", f"{WORKER_LOST}; no worker left")
                return [], False, slot
            try:
                result: VisitResult = await _await(worker.actor.visit.remote(event))
            except self._errors as exc:
                self.lost(worker, first_line(exc))
                lost += 1
                _lost_attempt(event, worker.index, exc)
                if lost > MAX_LOST_PER_URL:
                    self.host.finish(event, "failed", f"{WORKER_LOST} {lost} times")
                    return [], False, slot
                logger.info("trying %s on another Ray worker", event.url)
                event.start_over()
                continue
            if result.fatal and result.handoff is None and result.event.outcome == "failed":
                self.lost(worker, result.fatal)  # its browser gave up: the page is tried on another worker
                lost += 1
                if lost <= MAX_LOST_PER_URL:
                    event.attempts = list(result.event.attempts)
                    event.start_over()
                    continue
            elif result.fatal:
                self.lost(worker, result.fatal)
            break
        _take(event, result.event)
        self.host.seen.update(result.seen)
        handoff = result.handoff
        if handoff is None:
            return result.links, False, slot
        worker.pages_read.append(handoff.final_url)
        crawl: Any = self.host  # the crawl's own tail: duplicate check, max_pages, writer
        if crawl.is_duplicate(event, handoff.final_url):
            return (handoff.links if handoff.pdf_pages is None else []), False, slot
        if handoff.pdf_pages is not None:
            kind = handoff.content_type or "application/pdf"
            links, queued = await crawl.queue_pdf_page(
                event, handoff.extracted, handoff.pdf_pages, handoff.status, kind, handoff.final_url
            )
        else:
            links, queued = await crawl.queue_page(
                event, handoff.extracted, handoff.links, handoff.status, handoff.content_type, handoff.fetched_at
            )
        return links, queued, slot


def _take(event: HarvestEvent, settled: HarvestEvent) -> None:
    """Copy what a worker settled into the crawl's own event object (the journal knows it by identity)."""
    for name in HarvestEvent.__dataclass_fields__:
        setattr(event, name, getattr(settled, name))


def _lost_attempt(event: HarvestEvent, index: int, exc: BaseException) -> None:
    failed_attempt(event, WORKER_LOST, f"worker {index}: {first_line(exc)}")


def _remove_workdir(info: dict[str, Any]) -> None:
    """A dead worker's temporary folder, when it was on this machine."""
    import shutil

    workdir = info.get("workdir")
    if workdir and info.get("node") == socket.gethostname():
        shutil.rmtree(workdir, ignore_errors=True)
