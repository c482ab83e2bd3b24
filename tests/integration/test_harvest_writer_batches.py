"""The harvest's store writer batches pages across the queue: a backlog of extracted pages becomes one
``Memory.add_many`` (one embedding call over all their chunks, one store write), not slices of a few pages."""

from __future__ import annotations

import asyncio

from memory_store import Memory
from orchestrator.harvest.extract import ExtractedPage
from orchestrator.harvest.journal import Journal
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

    def spy_add_many(inputs):  # a spy: the real add_many stores the pages
        calls.append(len(inputs))
        return add_many(inputs)

    def spy_embed(texts):
        embed_calls.append(len(texts))
        return embed(texts)

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
