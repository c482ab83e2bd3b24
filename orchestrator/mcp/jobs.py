"""Background harvest jobs for a long-lived process (the MCP server): a harvest started as a :class:`Job` runs in
its own thread and event loop while the caller goes on, reports its progress and, once finished, its report.

    jobs = Jobs()
    job = jobs.start_harvest(charter)        # HarvestBusy while another harvest of the charter runs
    jobs.get(job.id).to_json()               # state, progress, report (when done) or error
    jobs.wait(job.id, timeout=30)            # block until it finishes (or the timeout)
    jobs.cancel(job.id)                      # stops it like an interrupt: the store stays consistent

A job's states: ``running`` -> ``done`` | ``failed`` | ``cancelled``. Cancelling cancels the harvest's task: pages
already handed to the store writer are stored, the in-flight ones are recorded as failed ("cancelled"), the
journal, the summary and the harvest lock are settled by the harvest's own ``finally`` blocks, exactly as on
Ctrl-C. Jobs live in the process's memory only: they end with the process (the store stays consistent; harvest
again to resume)."""

from __future__ import annotations

import asyncio
import itertools
import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from memory_store.clock import now

from ..errors import BrtError, HarvestBusy, JobNotFound
from ..progress import NullProgress, ProgressSink

if TYPE_CHECKING:
    from ..charter import Charter

__all__ = ["Job", "JobProgress", "JobState", "Jobs"]

logger = logging.getLogger(__name__)

JobState = Literal["running", "done", "failed", "cancelled"]

#: Finished jobs kept for polling (the oldest are forgotten first).
KEEP_FINISHED = 100
#: How long ``start_harvest`` waits for the harvest to take the store's lock (or fail at once).
START_WAIT_S = 15.0


class JobProgress:
    """A thread-safe ProgressSink that keeps the counts of each task ("fetch", "embed") and the last message for
    polling, and passes everything on to ``forward`` (e.g. MCP progress notifications of a blocking call)."""

    def __init__(self, forward: ProgressSink | None = None) -> None:
        self.forward: ProgressSink = forward or NullProgress()
        self._lock = threading.Lock()
        self._done: dict[str, int] = {}
        self._total: dict[str, int | None] = {}
        self._message: str | None = None
        self.started = threading.Event()  # the harvest got past its checks and its lock

    def start(self, task: str, total: int | None = None) -> None:
        with self._lock:
            self._done[task] = 0
            self._total[task] = total
        self.started.set()
        self.forward.start(task, total)

    def advance(self, task: str, n: int = 1, total: int | None = None) -> None:
        with self._lock:
            self._done[task] = self._done.get(task, 0) + n
            if total is not None:
                self._total[task] = total
        self.forward.advance(task, n, total)

    def message(self, text: str) -> None:
        with self._lock:
            self._message = text
        self.forward.message(text)

    def close(self) -> None:
        self.forward.close()

    def to_json(self) -> dict[str, Any]:
        with self._lock:
            doc: dict[str, Any] = {
                task: {"done": done, "total": self._total.get(task)} for task, done in self._done.items()
            }
            if self._message:
                doc["message"] = self._message
            return doc


@dataclass
class Job:
    """One background harvest. ``to_json()`` is what a poll returns."""

    id: str
    charter_id: str
    charter_path: str | None
    options: dict[str, Any]
    progress: JobProgress
    kind: str = "harvest"
    state: JobState = "running"
    started_at: str = field(default_factory=now)
    finished_at: str | None = None
    report: dict[str, Any] | None = None  # service.harvest_json of the finished harvest
    error: str | None = None
    error_type: str | None = None
    store: dict[str, Any] | None = None  # a cancelled or failed job: the store's status afterwards
    cancel_requested: bool = False
    _t0: float = field(default_factory=time.monotonic, repr=False)
    _elapsed: float | None = field(default=None, repr=False)
    _done: threading.Event = field(default_factory=threading.Event, repr=False)
    _loop: asyncio.AbstractEventLoop | None = field(default=None, repr=False)
    _task: asyncio.Task[Any] | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def finished(self) -> bool:
        return self._done.is_set()

    @property
    def elapsed_s(self) -> float:
        return round(self._elapsed if self._elapsed is not None else time.monotonic() - self._t0, 3)

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "job_id": self.id,
            "kind": self.kind,
            "charter_id": self.charter_id,
            "charter_path": self.charter_path,
            "state": self.state,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "elapsed_s": self.elapsed_s,
            "options": dict(self.options),
            "progress": self.progress.to_json(),
        }
        if self.cancel_requested:
            doc["cancel_requested"] = True
        if self.report is not None:
            doc["report"] = self.report
        if self.error is not None:
            doc["error"] = self.error
            doc["error_type"] = self.error_type
        if self.store is not None:
            doc["store"] = self.store
        return doc


class Jobs:
    """The jobs of one process: at most one running harvest per charter."""

    def __init__(
        self,
        *,
        keep_finished: int = KEEP_FINISHED,
        report_view: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> None:
        self._jobs: dict[str, Job] = {}
        # how a finished harvest's report is kept and shown (the MCP server: untrusted.agent_report)
        self._view = report_view or (lambda doc: doc)
        self._lock = threading.Lock()
        self._keep = keep_finished
        self._seq = itertools.count(1)
        self._threads: dict[str, threading.Thread] = {}

    # -- queries ---------------------------------------------------------------------------------------------

    def get(self, job_id: str) -> Job:
        """The job ``job_id`` (JobNotFound names the known ones)."""
        with self._lock:
            job = self._jobs.get(job_id)
            known = list(self._jobs)
        if job is None:
            hint = f"known jobs: {', '.join(known[-10:])}" if known else "no job was started in this server"
            raise JobNotFound(f"no job {job_id!r} ({hint}; jobs end with the server process)")
        return job

    def running(self, charter_id: str) -> Job | None:
        """The running job of ``charter_id``, if any."""
        with self._lock:
            return next((j for j in self._jobs.values() if j.charter_id == charter_id and not j.finished), None)

    def latest(self, charter_id: str) -> Job | None:
        """The charter's most recent job (running or finished), if any."""
        with self._lock:
            mine = [j for j in self._jobs.values() if j.charter_id == charter_id]
        return mine[-1] if mine else None

    def list(self) -> list[Job]:
        with self._lock:
            return list(self._jobs.values())

    # -- harvest -------------------------------------------------------------------------------------------

    def start_harvest(
        self,
        charter: Charter,
        *,
        forward: ProgressSink | None = None,
        start_wait_s: float = START_WAIT_S,
        **options: Any,
    ) -> Job:
        """Start ``harvest(charter, **options)`` in the background and return its job once the harvest holds the
        store's lock (or has already failed: a job that fails at once, e.g. another process harvesting the charter,
        raises its error here). HarvestBusy while this process harvests the charter already."""
        from ..harvest import harvest_async

        with self._lock:
            busy = next((j for j in self._jobs.values() if j.charter_id == charter.id and not j.finished), None)
            if busy is not None:
                raise HarvestBusy(
                    f"a harvest of charter {charter.id!r} is already running (job {busy.id}, started "
                    f"{busy.started_at}): poll it with the job tool, or cancel it first"
                )
            job = Job(
                id=f"harvest-{charter.id}-{next(self._seq)}-{secrets.token_hex(3)}",
                charter_id=charter.id,
                charter_path=str(charter.source) if charter.source else None,
                options={k: v for k, v in options.items() if v is not None},
                progress=JobProgress(forward),
            )
            self._jobs[job.id] = job
            self._forget_old()

        def run() -> Any:
            return harvest_async(charter, progress=job.progress, **options)

        thread = threading.Thread(
            target=self._run, args=(job, run, charter), name=f"brt-job-{job.id}", daemon=True
        )
        with self._lock:
            self._threads[job.id] = thread
        thread.start()
        deadline = time.monotonic() + start_wait_s
        while not job.progress.started.is_set() and not job.finished and time.monotonic() < deadline:
            job.progress.started.wait(0.05)
        if job.state == "failed" and job.error_type == "HarvestBusy":
            with self._lock:
                self._jobs.pop(job.id, None)
            raise HarvestBusy(job.error or "another harvest of the charter is running")
        return job

    def _run(self, job: Job, make: Callable[[], Any], charter: Charter) -> None:
        from .. import service

        async def main() -> Any:
            with job._lock:
                job._loop = asyncio.get_running_loop()
                job._task = asyncio.current_task()
                if job.cancel_requested:
                    raise asyncio.CancelledError
            return await make()

        state: JobState = "failed"
        try:
            report = asyncio.run(main())
            job.report = self._view(service.harvest_json(report))
            if report.nothing_stored:  # the CLI's exit 3: a failure, with the events that say why
                job.error = f"the harvest stored no page ({report.summary()}); no store is kept"
                job.error_type = "NothingStored"
            else:
                state = "done"
        except (asyncio.CancelledError, KeyboardInterrupt):
            state = "cancelled"
        except BrtError as exc:
            job.error, job.error_type = str(exc), type(exc).__name__
            partial = getattr(exc, "report", None)
            if partial is not None and hasattr(partial, "to_json"):
                job.report = self._view(service.harvest_json(partial))
        except Exception as exc:  # the job records it; the server goes on
            logger.exception("harvest job %s failed", job.id)
            job.error, job.error_type = f"{type(exc).__name__}: {exc}", type(exc).__name__
        finally:
            if state != "done" and job.error_type != "HarvestBusy":
                job.store = _store_after(charter)
            job.progress.close()
            with job._lock:
                job._loop = job._task = None
                job._elapsed = time.monotonic() - job._t0
                job.finished_at = now()
                job.state = state
            job._done.set()
            with self._lock:
                self._threads.pop(job.id, None)
            logger.info("job %s %s after %.1fs", job.id, state, job.elapsed_s)

    # -- control ---------------------------------------------------------------------------------------------

    def wait(self, job_id: str, timeout: float | None = None) -> Job:
        """Block until the job finishes or ``timeout`` seconds pass; returns the job either way."""
        job = self.get(job_id)
        job._done.wait(timeout)
        return job

    def cancel(self, job_id: str) -> Job:
        """Ask the job to stop (at once: its harvest task is cancelled). A finished job is returned as it is."""
        job = self.get(job_id)
        with job._lock:
            if job.finished:
                return job
            job.cancel_requested = True
            loop, task = job._loop, job._task
        if loop is not None and task is not None:
            try:
                loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:  # the loop closed in between: the job is finishing anyway
                pass
        logger.info("cancel requested for job %s", job_id)
        return job

    def shutdown(self, timeout: float = 30.0) -> None:
        """Cancel every running job and wait (up to ``timeout`` in all) for them to settle the store."""
        running = [j for j in self.list() if not j.finished]
        for job in running:
            self.cancel(job.id)
        deadline = time.monotonic() + timeout
        for job in running:
            job._done.wait(max(0.0, deadline - time.monotonic()))

    def _forget_old(self) -> None:
        finished = [jid for jid, j in self._jobs.items() if j.finished]
        for jid in finished[: max(0, len(finished) - self._keep)]:
            del self._jobs[jid]


def _store_after(charter: Charter) -> dict[str, Any] | None:
    """The store's status after a job stopped early (what it holds, the last harvest's summary)."""
    from .. import service

    try:
        return service.status(charter).to_json()
    except Exception as exc:  # noqa: BLE001  (a report of the state, never a second failure)
        logger.debug("cannot read the status of %s: %s", charter.id, exc)
        return None
