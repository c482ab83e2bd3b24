"""Background jobs (orchestrator/mcp/jobs.py), as pure logic: the harvest is replaced by a coroutine that reports
progress and sleeps, so these check the job states, the refusal of a second harvest of a charter, cancelling
(also before the harvest's task exists), failures and polling, without a browser or a model. The real harvest
over MCP is tests/e2e/test_mcp_jobs.py."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from orchestrator.errors import HarvestBusy, HarvestError, JobNotFound
from orchestrator.mcp.jobs import Jobs


class _Report:
    def __init__(self, charter_id: str, nothing_stored: bool = False) -> None:
        self.charter_id = charter_id
        self.nothing_stored = nothing_stored

    def to_json(self) -> dict[str, Any]:
        return {"charter_id": self.charter_id, "pages_stored": 3}

    def summary(self) -> str:
        return "3 stored"


@pytest.fixture
def fake_harvest(monkeypatch):
    """``orchestrator.harvest.harvest_async`` replaced: ``steps`` pages of ``delay`` seconds each; records what
    happened in ``log``; ``fail`` raises that error at once."""
    import orchestrator.harvest as harvest_pkg

    state: dict[str, Any] = {"steps": 5, "delay": 0.05, "fail": None, "log": [], "nothing_stored": False}

    async def fake(charter: Any, *, progress: Any, **options: Any) -> _Report:
        if state["fail"] is not None:
            raise state["fail"]
        progress.start("fetch", total=state["steps"])
        try:
            for _ in range(state["steps"]):
                await asyncio.sleep(state["delay"])
                progress.advance("fetch")
        except asyncio.CancelledError:
            state["log"].append(("cancelled", charter.id))
            raise
        state["log"].append(("done", charter.id, options))
        return _Report(charter.id, state["nothing_stored"])

    monkeypatch.setattr(harvest_pkg, "harvest_async", fake)
    monkeypatch.setattr("orchestrator.mcp.jobs._store_after", lambda charter: {"exists": True})
    return state


def _charter(make_charter: Any, charter_id: str) -> Any:
    return make_charter(["http://127.0.0.1:9/"], charter_id=charter_id)


def test_job_runs_in_background_and_reports(fake_harvest, make_charter):
    jobs = Jobs()
    job = jobs.start_harvest(_charter(make_charter, "a"), refresh=True)
    assert job.state == "running" and not job.finished and job.options == {"refresh": True}
    done = jobs.wait(job.id, timeout=10)
    assert done.state == "done" and done.report == {"charter_id": "a", "pages_stored": 3, "summary": "3 stored"}
    doc = done.to_json()
    assert doc["progress"]["fetch"] == {"done": 5, "total": 5} and doc["finished_at"] and doc["elapsed_s"] > 0
    assert fake_harvest["log"] == [("done", "a", {"refresh": True})]
    assert jobs.latest("a") is done and jobs.running("a") is None


def test_a_harvest_that_stores_nothing_is_a_failed_job_with_its_report(fake_harvest, make_charter):
    """What the CLI's exit 3 is to a job: failed (NothingStored), the report kept to say why."""
    fake_harvest["nothing_stored"] = True
    jobs = Jobs()
    done = jobs.wait(jobs.start_harvest(_charter(make_charter, "a")).id, timeout=10)
    assert done.state == "failed" and done.error_type == "NothingStored" and "stored no page" in done.error
    assert done.report is not None and done.report["charter_id"] == "a"


def test_second_harvest_of_a_charter_is_refused_while_one_runs(fake_harvest, make_charter):
    fake_harvest["delay"] = 0.5
    jobs = Jobs()
    first = jobs.start_harvest(_charter(make_charter, "a"))
    with pytest.raises(HarvestBusy, match=first.id):
        jobs.start_harvest(_charter(make_charter, "a"))
    other = jobs.start_harvest(_charter(make_charter, "b"))  # another charter may run beside it
    assert other.state == "running"
    jobs.shutdown(timeout=10)  # cancels both
    assert first.state == other.state == "cancelled"
    again = jobs.start_harvest(_charter(make_charter, "a"))  # finished: a new harvest is accepted
    assert again.id != first.id
    jobs.shutdown(timeout=10)


def test_cancel_stops_the_harvest_and_records_the_store(fake_harvest, make_charter):
    fake_harvest["steps"], fake_harvest["delay"] = 100, 0.1
    jobs = Jobs()
    job = jobs.start_harvest(_charter(make_charter, "a"))
    time.sleep(0.3)
    t0 = time.monotonic()
    jobs.cancel(job.id)
    jobs.wait(job.id, timeout=10)
    assert job.state == "cancelled" and time.monotonic() - t0 < 2
    assert job.cancel_requested and job.report is None and job.store == {"exists": True}
    assert ("cancelled", "a") in fake_harvest["log"]
    assert 0 < job.progress.to_json()["fetch"]["done"] < 100
    assert jobs.cancel(job.id) is job and job.state == "cancelled"  # cancelling a finished job: no change


def test_cancel_before_the_task_exists(fake_harvest, make_charter):
    jobs = Jobs()
    job = jobs.start_harvest(_charter(make_charter, "a"), start_wait_s=0)
    jobs.cancel(job.id)  # may land before the job's loop and task exist
    assert jobs.wait(job.id, timeout=10).state in ("cancelled", "done")
    assert job.finished


def test_failures_and_unknown_jobs(fake_harvest, make_charter):
    jobs = Jobs()
    fake_harvest["fail"] = HarvestError("replay file not found: x.har")
    job = jobs.start_harvest(_charter(make_charter, "a"))
    assert job.finished and job.state == "failed"
    assert job.to_json()["error"] == "replay file not found: x.har" and job.error_type == "HarvestError"
    fake_harvest["fail"] = HarvestBusy("another harvest (pid 1234) holds the lock")
    with pytest.raises(HarvestBusy, match="pid 1234"):  # refused at once, not a job
        jobs.start_harvest(_charter(make_charter, "b"))
    assert jobs.latest("b") is None
    with pytest.raises(JobNotFound, match=job.id):
        jobs.get("harvest-zzz-1-000000")


def test_finished_jobs_are_forgotten_oldest_first(fake_harvest, make_charter):
    fake_harvest["steps"] = 0
    jobs = Jobs(keep_finished=2)
    ids = []
    for n in range(4):
        job = jobs.start_harvest(_charter(make_charter, f"c{n}"))
        jobs.wait(job.id, timeout=10)
        ids.append(job.id)
    kept = [j.id for j in jobs.list()]
    assert ids[-1] in kept and ids[0] not in kept and len(kept) <= 3
