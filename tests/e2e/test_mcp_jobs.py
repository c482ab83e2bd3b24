"""Long harvests over MCP (issue 13): through a real MCP client session (the SDK's stdio_client, the server as a
subprocess), ``harvest`` of a slow local site that takes more than 60 s returns within seconds with a job id, a
second harvest of the same charter is refused while it runs, ``job`` reports progress and then the final report,
and ``cancel`` stops another harvest and leaves its store consistent (and unlocked)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from tests.e2e.test_mcp import doc_of, error_text, server_params  # noqa: E402

#: Every tool call must answer well within this (the TypeScript SDK's default request timeout is 60 s).
CALL_TIMEOUT_S = 30
LONG_PAGES, LONG_DELAY_S = 36, 3.5  # concurrency 2: >= 63 s of waiting on the server alone


async def _timed(s: ClientSession, tool: str, args: dict[str, Any]) -> tuple[Any, float]:
    t0 = time.monotonic()
    result = await s.call_tool(tool, args)
    return result, time.monotonic() - t0


@pytest.mark.browser
@pytest.mark.model
def test_mcp_harvest_jobs_long_refused_cancelled(local_site, make_charter, brt_home, tmp_path):
    long_site = local_site("slow", pages=LONG_PAGES, delay_s=LONG_DELAY_S)
    short_site = local_site("slow", pages=30, delay_s=1.5)
    long_charter = make_charter(long_site, path="long.yaml", charter_id="mcp_long", concurrency=2, max_pages=100)
    cancel_charter = make_charter(short_site, path="cancel.yaml", charter_id="mcp_cancel", concurrency=2)
    server_log = tmp_path / "server-stderr.log"
    seen: dict[str, Any] = {"polls": []}

    async def flow() -> None:
        async with stdio_client(server_params(brt_home), errlog=errlog) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=CALL_TIMEOUT_S) as s:
                await s.initialize()
                tools = {t.name for t in (await s.list_tools()).tools}
                assert {"harvest", "job", "cancel", "status"} <= tools

                # a long harvest returns at once with a job id
                started = time.monotonic()
                result, took = await _timed(s, "harvest", {"charter_path": str(long_charter.source)})
                job = doc_of(result)
                assert took < 15, f"harvest took {took:.1f}s to return"
                assert job["state"] == "running" and job["charter_id"] == "mcp_long"
                long_id = job["job_id"]

                # a second harvest of the same charter is refused while it runs, naming the job
                refused = error_text(await s.call_tool("harvest", {"charter_path": str(long_charter.source)}))
                assert "already running" in refused and long_id in refused

                # another charter may run beside it; cancel it once some pages are stored
                other = doc_of(await s.call_tool("harvest", {"charter_path": str(cancel_charter.source)}))
                cancel_id = other["job_id"]
                deadline = time.monotonic() + 120
                while True:
                    polled = doc_of(await s.call_tool("job", {"job_id": cancel_id, "wait_s": 2}))
                    if polled["progress"].get("embed", {}).get("done", 0) >= 2:
                        break
                    assert polled["state"] == "running", polled
                    assert time.monotonic() < deadline, polled
                result, took = await _timed(s, "cancel", {"job_id": cancel_id, "wait_s": 25})
                cancelled = doc_of(result)
                assert cancelled["state"] == "cancelled", cancelled
                assert cancelled["cancel_requested"] and took < CALL_TIMEOUT_S
                seen["cancelled"] = cancelled
                status = doc_of(await s.call_tool("status", {"charter_path": str(cancel_charter.source)}))
                assert status["job"]["job_id"] == cancel_id and status["job"]["state"] == "cancelled"
                seen["cancel_status"] = status
                # the lock was released: the charter can be harvested again at once (and cancelled again)
                again = doc_of(await s.call_tool("harvest", {"charter_path": str(cancel_charter.source)}))
                assert again["state"] == "running" and again["job_id"] != cancel_id
                assert doc_of(await s.call_tool("cancel", {"job_id": again["job_id"]}))["state"] == "cancelled"
                assert error_text(await s.call_tool("job", {"job_id": "harvest-nope-1-000000"}))

                # poll the long harvest until it finishes: progress goes forward, the report comes at the end
                while True:
                    result, took = await _timed(s, "job", {"job_id": long_id, "wait_s": 20})
                    assert took < CALL_TIMEOUT_S
                    polled = doc_of(result)
                    seen["polls"].append(polled["progress"].get("fetch", {}).get("done", 0))
                    if polled["state"] != "running":
                        break
                    assert time.monotonic() - started < 400, polled
                seen["long"] = polled
                seen["long_elapsed"] = time.monotonic() - started
                listed = doc_of(await s.call_tool("job", {}))["jobs"]
                assert [j["job_id"] for j in listed] == [long_id, cancel_id, again["job_id"]]

    async def bounded() -> None:
        with anyio.fail_after(600):
            await flow()

    with server_log.open("w") as errlog:
        anyio.run(bounded)

    long = seen["long"]
    assert long["state"] == "done", json.dumps(long)[:2000]
    assert seen["long_elapsed"] > 60, "the harvest must outlast a 60 s client timeout to test anything"
    report = long["report"]
    assert report["counts"]["stored"] == LONG_PAGES + 1, report["summary"]  # the index and every page
    assert report["pages_stored"] == LONG_PAGES + 1 and report["chunks_total"] >= LONG_PAGES
    assert long["progress"]["fetch"]["done"] == len(report["events"])
    assert seen["polls"] == sorted(seen["polls"]) and len(set(seen["polls"])) >= 2  # progress moved while polled

    # the cancelled harvest: stopped early, what it stored is consistent and journaled
    from orchestrator import service
    from orchestrator.charter import load_charter

    cancelled = seen["cancelled"]
    assert "report" not in cancelled
    store = cancelled["store"]
    assert store["exists"] and 2 <= store["pages"] < 31, store
    doc = service.status(load_charter(Path(cancel_charter.source)), check=True)
    assert doc.check is not None and doc.check.ok, doc.check.problems
    summary = doc.summary  # the last run's (the second, cancelled at once) summary was journaled
    assert summary is not None
    assert short_site.page_hits() < 30  # it did stop: not every page was requested
