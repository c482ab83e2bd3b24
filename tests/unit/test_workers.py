"""Page content is read in worker processes brt can kill (issue 41.5, ``orchestrator/harvest/workers.py``): a call
that needs more memory than a worker may hold, or more time than its limit, fails with ``WorkLimit`` and its
worker is replaced; a call whose awaiting task is cancelled (a harvest's hard stop) kills its worker at once; the
results are the function's own."""

from __future__ import annotations

import asyncio
import time

import psutil
import pytest

from orchestrator.harvest import workers
from orchestrator.harvest.extract import extract_page
from orchestrator.harvest.workers import MEMORY_BYTES, WorkLimit, in_worker

ARTICLE = ("<html><head><title>Tides</title></head><body><article><h1>Tides</h1><p>"
           + "Spring tides in the harbour reach four metres above the chart datum twice a month. " * 12
           + "</p></article></body></html>")


def _worker_pids() -> set[int]:
    me = psutil.Process()
    return {c.pid for c in me.children(recursive=True)
            if "orchestrator.harvest.work_child" in " ".join(c.cmdline())}


def test_the_result_is_the_functions_own() -> None:
    here = extract_page(ARTICLE, "http://harbour.example/tides")
    there = asyncio.run(in_worker(extract_page, ARTICLE, "http://harbour.example/tides", limit_s=60))
    assert there is not None and here is not None
    assert (there.text, there.title, there.url) == (here.text, here.title, here.url)
    with pytest.raises(ZeroDivisionError):  # the function's own error comes back as itself
        asyncio.run(in_worker(divmod, 1, 0, limit_s=60))


def test_memory_past_the_workers_limit_is_a_work_limit_and_the_worker_is_replaced() -> None:
    async def run() -> None:
        with pytest.raises(WorkLimit, match="MiB"):
            await in_worker(bytearray, 2 * MEMORY_BYTES, limit_s=60)  # more than the worker's address space
        assert await in_worker(len, "still works", limit_s=60) == 11

    asyncio.run(run())


def test_time_past_the_limit_kills_the_worker() -> None:
    async def run() -> float:
        t0 = time.monotonic()
        with pytest.raises(WorkLimit, match="stopped after"):
            await in_worker(time.sleep, 30, limit_s=1)
        return time.monotonic() - t0

    assert asyncio.run(run()) < 10


def test_a_cancelled_call_kills_its_worker_at_once() -> None:
    """What a hard stop does: the task reading a page is cancelled, and its worker goes with it."""
    workers.shutdown()
    before = _worker_pids()

    async def run() -> tuple[set[int], float]:
        task = asyncio.ensure_future(in_worker(time.sleep, 60))
        deadline = time.monotonic() + 30
        while not (_worker_pids() - before) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        busy = _worker_pids() - before
        await asyncio.sleep(0.5)
        t0 = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return busy, time.monotonic() - t0

    busy, took = asyncio.run(run())
    assert busy and took < 2
    deadline = time.monotonic() + 10
    while busy & {p.pid for p in psutil.process_iter() if p.is_running() and p.status() != psutil.STATUS_ZOMBIE}:
        assert time.monotonic() < deadline, "the cancelled call's worker is still running"
        time.sleep(0.1)
