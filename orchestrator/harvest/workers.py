"""CPU-bound work on page content (extraction, links and the selector's region, the static read) in worker
processes brt can kill, so that no page can hold a harvest past its limits:

    result = await in_worker(extract_page, html, url, limit_s=30)

- **Bounded memory.** Each worker is limited to ``MEMORY_BYTES`` of address space (``RLIMIT_AS``): a page whose
  extraction needs more (a DOM of 200,000 links, a gzip bomb someone fetched) fails with ``WorkLimit``, and the
  worker is replaced. brt's own process never holds that page's trees.
- **Bounded time.** A call that passes ``limit_s`` is stopped (its worker killed) with ``WorkLimit``; a call whose
  awaiting task is cancelled (``max_duration_s`` reached, the harvest cancelled) kills its worker at once: the
  harvest waits for nothing and no thread or process keeps working for a page nobody reads.
- **No GIL shared** with the event loop that runs the proxy and the other tabs.

A small pool (``pool_size()`` workers, spawned on first use and kept for the process: one MCP server runs many
harvests) serves every event loop of the process. ``fn`` must be a module-level function (it is pickled by
name); its arguments and result are pickled. Where processes cannot be started, the call runs in a daemon thread
instead (unbounded, as before), and a warning says so once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from memory_store.errors import BrtException

__all__ = ["MEMORY_BYTES", "WorkLimit", "in_worker", "pool_size", "shutdown", "warm"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: Address space of one worker (the interpreter and its imports take about 70 MB of it).
MEMORY_BYTES = 1 << 30


class WorkLimit(BrtException):
    """A call stopped at its limits: ``reason`` says which (time or memory)."""


def pool_size() -> int:
    return max(1, min(4, os.cpu_count() or 1))


class _Worker:
    """``python -m orchestrator.harvest.work_child``: calls and results pickled over its standard input and output
    (a process of its own, so the caller's ``__main__`` is never imported again, as ``multiprocessing``'s spawn
    would)."""

    def __init__(self) -> None:
        import subprocess
        import sys
        from pathlib import Path

        root = str(Path(__file__).resolve().parents[2])  # this very copy of brt, whatever the cwd
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "orchestrator.harvest.work_child", str(MEMORY_BYTES)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None, env=env, close_fds=True,
        )

    def send(self, message: Any) -> None:
        import pickle

        assert self.proc.stdin is not None
        pickle.dump(message, self.proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        self.proc.stdin.flush()

    def recv(self) -> Any:
        import pickle

        assert self.proc.stdout is not None
        return pickle.load(self.proc.stdout)

    def kill(self) -> None:
        with contextlib.suppress(Exception):
            self.proc.kill()
        for stream in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(Exception):
                stream.close()  # type: ignore[union-attr]
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=5)

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None


class _Pool:
    """Idle workers, at most ``size`` alive; a call takes one (waiting while all are busy) and gives it back."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.idle: queue.LifoQueue[_Worker] = queue.LifoQueue()
        self.slots = threading.BoundedSemaphore(size)
        self.broken = False
        self.lock = threading.Lock()

    def take(self) -> _Worker:
        self.slots.acquire()
        try:
            return self.take_held()
        except BaseException:
            self.slots.release()
            raise

    def take_held(self) -> _Worker:
        """An idle worker (a new one when none is idle), its slot already held by the caller."""
        while True:
            try:
                worker = self.idle.get_nowait()
            except queue.Empty:
                return _Worker()
            if worker.alive:
                return worker
            worker.kill()

    def give(self, worker: _Worker, *, healthy: bool) -> None:
        if healthy and worker.alive:
            self.idle.put(worker)
        else:
            worker.kill()
        self.slots.release()

    def close(self) -> None:
        while True:
            try:
                self.idle.get_nowait().kill()
            except queue.Empty:
                return


_pool: _Pool | None = None
_pool_lock = threading.Lock()


def _the_pool() -> _Pool:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = _Pool(pool_size())
        return _pool


def warm() -> None:
    """Start the pool's workers now (blocking: call it in a thread), so that the first pages of a harvest do not
    wait for a worker's start-up, and pages are read in the order they were fetched, as before."""
    pool = _the_pool()
    if pool.broken:
        return
    started: list[_Worker] = []
    try:
        while len(started) < pool.size and pool.slots.acquire(blocking=False):
            try:
                started.append(pool.take_held())
            except BaseException:
                pool.slots.release()
                raise
    except OSError as exc:
        pool.broken = True
        logger.warning("cannot start worker processes (%s): page content is read in threads, without limits", exc)
    for worker in started:
        pool.give(worker, healthy=True)


def shutdown() -> None:
    """Kill the idle workers (the pool starts new ones when asked again)."""
    with _pool_lock:
        if _pool is not None:
            _pool.close()


async def in_worker(fn: Callable[..., T], /, *args: Any, limit_s: float | None = None, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` in a worker process (see the module docstring); raises what ``fn`` raised, or
    WorkLimit past ``limit_s`` or the worker's memory."""
    pool = _the_pool()
    if pool.broken:
        return await _in_thread(fn, *args, **kwargs)
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    held: list[_Worker] = []
    abandoned = threading.Event()

    def settle(outcome: Callable[[], None]) -> None:
        if not future.done():
            outcome()

    def run() -> None:
        try:
            result = _call(pool, held, abandoned, fn, args, kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting coroutine
            error = exc
            _call_soon(loop, lambda: settle(lambda: future.set_exception(error)))
        else:
            _call_soon(loop, lambda: settle(lambda: future.set_result(result)))

    threading.Thread(target=run, name=f"brt-{getattr(fn, '__name__', 'work')}", daemon=True).start()
    try:
        if limit_s is None:
            return await future
        return await asyncio.wait_for(asyncio.shield(future), timeout=max(0.1, limit_s))
    except asyncio.TimeoutError:
        _abandon(future, abandoned, held)
        raise WorkLimit(f"stopped after {limit_s:g} s") from None
    except asyncio.CancelledError:
        _abandon(future, abandoned, held)  # the harvest stopped: nothing works on for this page
        raise
    except _Unavailable:
        return await _in_thread(fn, *args, **kwargs)


class _Unavailable(BrtException):
    """Worker processes cannot be started here."""


def _call(pool: _Pool, held: list[_Worker], abandoned: threading.Event, fn: Callable[..., Any],
          args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """One call on a worker of ``pool`` (blocking: runs in its own thread)."""
    try:
        worker = pool.take()
    except OSError as exc:
        pool.broken = True
        logger.warning("cannot start worker processes (%s): page content is read in threads, without limits", exc)
        raise _Unavailable() from exc
    held.append(worker)
    healthy = False
    try:
        if abandoned.is_set():  # nobody waits any more (stopped while this call waited for a worker)
            healthy = True
            raise WorkLimit("abandoned")
        worker.send((fn, args, kwargs))
        ok, value = worker.recv()
        healthy = ok != "limit"
    except (EOFError, OSError, ValueError):  # killed (a limit, a stop), or its pipe closed
        raise WorkLimit("its worker was stopped") from None
    finally:
        pool.give(worker, healthy=healthy)
    if ok == "ok":
        return value
    if ok == "limit":
        raise WorkLimit(str(value))
    raise value


def _abandon(future: asyncio.Future[Any], abandoned: threading.Event, held: list[_Worker]) -> None:
    abandoned.set()
    for worker in held:
        worker.kill()
    if not future.done():
        future.cancel()  # what the thread settles later is dropped


async def _in_thread(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    from .detached import detached

    return await detached(fn, *args, **kwargs)


def _call_soon(loop: asyncio.AbstractEventLoop, callback: Callable[[], None]) -> None:
    try:
        loop.call_soon_threadsafe(callback)
    except RuntimeError:  # the loop is closed: nobody waits for this result any more
        pass
