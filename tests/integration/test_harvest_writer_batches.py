"""The harvest's store writer batches pages across the queue: a backlog of extracted pages becomes one
``Memory.add_many`` (one embedding call over all their chunks, one store write), not slices of a few pages."""

from __future__ import annotations

import asyncio
import threading

import pytest

from memory_store import Memory
from orchestrator.errors import HarvestError
from orchestrator.harvest import writer as writer_module
from orchestrator.harvest.extract import ExtractedPage
from orchestrator.harvest.journal import Journal
from orchestrator.harvest.limits import CrawlBudget
from orchestrator.harvest.models import EventTimings, Fetched, HarvestEvent, HarvestReport
from orchestrator.harvest.writer import Writer
from orchestrator.progress import NullProgress

TOPICS = ["tides", "glaciers", "volcanoes", "coral reefs", "deserts", "monsoons", "aurora", "comets"]


def _page(i: int) -> Fetched:
    topic = TOPICS[i % len(TOPICS)]
    text = " ".join(
        f"Paragraph {j} of page {i} explains how {topic} form, change over seasons and affect people nearby."
        for j in range(3 + i % 5)
    )
    url = f"https://example.org/page-{i}"
    event = HarvestEvent(url=url, depth=0, started_at="2026-11-23T00:00:00Z", timings=EventTimings())
    return Fetched(event, ExtractedPage(url=url, title=f"page {i}", text=text), 200, "text/html", "2026-11-23")


def test_writer_stores_a_backlog_in_one_batch_across_pages(brt_home, embedder):
    mem = Memory("writer_batches")
    calls: list[int] = []
    embed_calls: list[int] = []
    add_many, embed = mem.add_many, mem.embedder.embed_documents

    def spy_add_many(inputs, **kwargs):  # a spy: the real add_many stores the pages
        calls.append(len(inputs))
        return add_many(inputs, **kwargs)

    def spy_embed(texts, **kwargs):
        embed_calls.append(len(texts))
        return embed(texts, **kwargs)

    mem.add_many = spy_add_many
    mem.embedder.embed_documents = spy_embed
    report = HarvestReport(charter_id="writer_batches")
    settled: list[str] = []
    n = 20

    async def main() -> None:
        journal = Journal(mem, "run-1")
        writer = Writer(
            mem,
            report,
            NullProgress(),
            journal,
            finish=lambda ev, outcome, reason: settled.append(outcome),
            release=lambda ev: None,
            accepted=lambda: n,
        )
        for i in range(n):  # the readers were faster than the writer: a backlog is waiting
            await writer.queue.put(_page(i))
        await writer.queue.put(None)
        await writer.run()

    try:
        asyncio.run(main())
    finally:
        del mem.embedder.embed_documents  # the shared session embedder gets its method back
    assert calls == [n]  # one add_many for the whole backlog (8-page slices gave [8, 8, 4])
    assert embed_calls == [report.chunks_total] and report.chunks_total >= n  # every chunk in one embedding call
    assert settled == ["stored"] * n and report.pages_stored == n
    assert {p.url for p in mem.pages()} == {f"https://example.org/page-{i}" for i in range(n)}


def _writer(mem: Memory, report: HarvestReport, settled: list[tuple[str, str]], *, progress=None, waiting: int):
    return Writer(
        mem,
        report,
        progress or NullProgress(),
        Journal(mem, "run-1"),
        finish=lambda ev, outcome, reason: settled.append((ev.url, outcome)),
        release=lambda ev: None,
        accepted=lambda: len(settled),
        max_waiting=waiting,
    )


def test_readers_wait_when_pages_pile_up_before_the_writer(brt_home, embedder, monkeypatch):
    """A bounded hand-over: while the writer is busy, at most one batch (being stored) plus ``max_waiting``
    pages are held; the next reader waits, and nothing is lost once the writer goes on."""
    monkeypatch.setattr(writer_module, "BATCH_PAGES", 4)
    mem = Memory("writer_backpressure")
    gate = threading.Event()
    add_many = mem.add_many

    def slow_add_many(inputs, **kwargs):  # the store is slow: the writer holds its batch until the gate opens
        gate.wait(60)
        return add_many(inputs, **kwargs)

    mem.add_many = slow_add_many
    report = HarvestReport(charter_id="writer_backpressure")
    settled: list[tuple[str, str]] = []
    handed: list[int] = []
    n = 12

    async def main() -> None:
        writer = _writer(mem, report, settled, waiting=3)
        writer.start()

        async def reader() -> None:
            for i in range(n):
                await writer.put(_page(i))
                handed.append(i)

        task = asyncio.create_task(reader())
        await asyncio.sleep(writer_module.BATCH_WAIT_S + 1.5)
        held = len(handed)
        gate.set()
        await asyncio.wait_for(task, 120)
        await writer.close()
        assert held == 4 + 3  # the batch in add_many + 3 waiting; the 8th page's reader was waiting

    asyncio.run(main())
    assert sorted(settled) == sorted((f"https://example.org/page-{i}", "stored") for i in range(n))
    assert report.pages_stored == n and len(mem.pages()) == n


def test_a_writer_that_fails_stops_the_run_and_no_reader_waits_for_it(brt_home, embedder, monkeypatch):
    """If the writer dies (here: a bug after its first batch was stored), the run is stopped, the pages waiting
    and those handed over later are settled ``failed`` at once (no reader hangs on a full queue), and closing
    the writer raises its error."""
    monkeypatch.setattr(writer_module, "BATCH_PAGES", 2)
    mem = Memory("writer_dies")

    class BrokenProgress(NullProgress):
        def advance(self, task: str, n: int = 1, total: int | None = None) -> None:
            if task == "embed":
                raise RuntimeError("progress sink broke")

    report = HarvestReport(charter_id="writer_dies")
    settled: list[tuple[str, str]] = []
    n = 10
    budget = CrawlBudget(max_pages=100, max_attempts=100, max_duration_s=600)

    async def main() -> None:
        writer = _writer(mem, report, settled, progress=BrokenProgress(), waiting=2)
        writer.budget = budget
        writer.start()
        for i in range(n):  # each put returns: queued, or settled failed once the writer is gone
            await asyncio.wait_for(writer.put(_page(i)), 60)
        with pytest.raises(HarvestError, match="store writer failed .RuntimeError: progress sink broke") as err:
            await asyncio.wait_for(writer.close(), 60)
        assert isinstance(err.value.__cause__, RuntimeError)

    asyncio.run(main())
    outcomes = [outcome for _, outcome in settled]
    assert len(settled) == n and {url for url, _ in settled} == {f"https://example.org/page-{i}" for i in range(n)}
    assert outcomes.count("stored") == 2 and outcomes.count("failed") == n - 2
    assert budget.stop_reason is not None and "store writer failed" in budget.stop_reason
    assert len(mem.pages()) == 2  # what was stored stays
