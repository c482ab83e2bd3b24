"""The public surfaces without a browser or a model: the documented Python API, the service layer the CLI and the
MCP server share (one JSON shape each for hits, syntheses, reports), the browser errors read in one place, and
the store's typed hits and write errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from memory_store import Hit, StoreNotFound, StoreWriteError
from orchestrator import errors, service
from orchestrator.synthesize import EvidenceBlock, Gap, SectionResult, SynthesisResult


def test_the_documented_python_api_is_callable(brt_home, make_charter):
    from orchestrator import clean, harvest, load_charter, status, synthesize
    from orchestrator.errors import HarvestError

    charter = make_charter(["http://127.0.0.1:9/index.html"], charter_id="api", path="api.yaml")
    assert load_charter(charter.source).id == "api"
    with pytest.raises(HarvestError, match="unknown --via"):
        harvest(charter, via="carrier-pigeon")  # refused before any browser starts
    with pytest.raises(StoreNotFound):
        synthesize(charter)
    with pytest.raises(StoreNotFound):
        clean(charter)
    assert status(charter).exists is False
    # the modules of the same names stay importable as modules
    import orchestrator.clean
    import orchestrator.harvest.crawl

    assert orchestrator.harvest.crawl.Crawl and orchestrator.clean.CleanResult


def _hit(text: str = "Reserve space for images. <<<evil>>>") -> Hit:
    return Hit(
        id="sha256:" + "a" * 64,
        score=0.8123456789,
        text=text,
        snippet=text[:20],
        metadata={"url": "https://web.dev/cls", "last_updated": "2025-09-14", "title": "CLS <<<", "selector": "main"},
        matched_via="vector+bm25",
    )


def test_hit_has_typed_fields_beside_its_metadata():
    hit = _hit()
    assert (hit.url, hit.last_updated, hit.title) == ("https://web.dev/cls", "2025-09-14", "CLS <<<")
    assert hit.metadata["url"] == hit.url  # the documented access stays
    bare = Hit(id="x", score=0.1, text="t", snippet="t", metadata={})
    assert (bare.url, bare.last_updated, bare.title) == ("", None, None)


def test_one_hit_json_for_the_cli_and_the_mcp_server():
    hit = _hit()
    plain = service.hit_json(hit)
    assert plain == {
        "id": hit.id,
        "url": "https://web.dev/cls",
        "last_updated": "2025-09-14",
        "title": "CLS <<<",
        "score": 0.812346,
        "snippet": hit.snippet,
        "text": hit.text,
        "matched_via": "vector+bm25",
    }
    quoted = service.hit_json(hit, quote=lambda text, source: None if text is None else f"[{source}] {text}")
    assert set(quoted) == set(plain)
    assert quoted["text"] == f"[https://web.dev/cls] {hit.text}" and quoted["title"].startswith("[https://web.dev")
    assert {k: quoted[k] for k in ("id", "url", "score", "matched_via")} == {
        k: plain[k] for k in ("id", "url", "score", "matched_via")
    }


def test_mcp_quoting_goes_through_the_same_builder():
    pytest.importorskip("mcp")
    from orchestrator.mcp.server import QUOTE_CLOSE, quote_untrusted

    doc = service.hit_json(_hit(), quote=quote_untrusted)
    for key in ("text", "title", "snippet"):
        assert doc[key].startswith("<<<BRT QUOTED PAGE CONTENT from https://web.dev/cls")
        assert doc[key].endswith(QUOTE_CLOSE) and doc[key].count(QUOTE_CLOSE) == 1


def _synthesis(tmp_path: Path) -> SynthesisResult:
    block = EvidenceBlock("CLS", 1, "Reserve space for images.", "https://web.dev/cls", None, 0.61234, "c1", "q")
    answered = SectionResult("CLS mitigation", "CLS", "How?", ["How?"], blocks=[block])
    gap = SectionResult("HTTP/3", "HTTP3", "Adoption?", ["Adoption?"], gaps=[Gap("HTTP3", "Adoption?", 12, 3)])
    return SynthesisResult(
        "cwv", "CWV", [answered, gap], 0.35, "m", "2025-01-01T00:00:00Z", 0.5,
        doc_path=tmp_path / "r.md", json_path=tmp_path / "r.json",
    )  # fmt: skip


def test_one_synthesis_json(tmp_path):
    result = _synthesis(tmp_path)
    doc = service.synthesis_json(result)
    assert doc["sections"][0]["blocks"][0] | {} == {
        **result.to_json()["sections"][0]["blocks"][0],
        "citation": "[CLS Evidence #1] — web.dev/cls (last updated: unknown)",
    }
    assert doc["sections"][1]["gaps"][0]["markdown"].startswith("[HTTP3 Gap] No evidence met the threshold")
    assert (doc["answered"], doc["gaps"], doc["doc_path"]) == (1, 1, str(tmp_path / "r.md"))
    quoted = service.synthesis_json(result, quote=lambda text, source: f"<<{text}>>")
    block = quoted["sections"][0]["blocks"][0]
    assert block["quote"] == "<<Reserve space for images.>>" and "markdown" not in block  # no unquoted page text
    json.dumps(doc)  # one JSON document


def test_search_takes_the_charters_retrieval_defaults(brt_home, make_charter):
    charter = make_charter(
        ["https://docs.example/"],
        charter_id="defaults",
        allowed=("docs.example",),
        retrieval={"mode": "bm25", "candidates": 7, "mmr_lambda": None, "rerank": False},
    )
    calls: list[dict] = []

    class Store:  # records what Memory.search is asked (the options are what this test checks)
        def search(self, query, **options):
            calls.append(options)
            return []

    service.search(charter, "q", k=3, memory=Store())
    assert calls[-1] | {} == {
        "k": 3, "subtree": None, "min_similarity": None, "mode": "bm25", "candidates": 7, "rerank": False,
        "reranker_model": None, "mmr_lambda": None,
    }  # fmt: skip
    service.search(charter, "q", mode="vector", mmr_lambda=0.5, rerank=True, reranker_model="m", memory=Store())
    assert (calls[-1]["mode"], calls[-1]["mmr_lambda"], calls[-1]["rerank"]) == ("vector", 0.5, True)
    # a rerank with no external model is brt's evidence rerank: more candidates, no retrieval rerank, no MMR
    service.search(charter, "q", k=3, rerank=True, memory=Store())
    assert (calls[-1]["k"], calls[-1]["rerank"], calls[-1]["mmr_lambda"]) == (20, False, None)
    with pytest.raises(StoreNotFound, match="call the harvest tool"):
        service.search(charter, "q", next_step="call the harvest tool first")


def test_cli_and_mcp_name_the_missing_store_their_own_way(brt_home, make_charter):
    from orchestrator.cli import cli

    path = make_charter(["https://docs.example/"], charter_id="nostore", allowed=("docs.example",), path="n.yaml")
    out = CliRunner().invoke(cli, ["search", str(path.source), "anything", "--json"])
    assert out.exit_code == 1 and "run `brt harvest" in out.output
    # --json: the error as one JSON document on stdout (issue 42), the message on stderr as always
    import json

    doc = json.loads(out.stdout)
    assert doc["ok"] is False and doc["error_type"] == "StoreNotFound" and doc["exit_code"] == 1
    assert "run `brt harvest" in doc["error"]


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ("TargetClosedError: Target page, context or browser has been closed", errors.TargetClosed),
        ("Error: Navigation failed because page crashed!", errors.PageCrashed),
        ("Error: Page.goto: Download is starting", errors.DownloadStarted),
        ("Error: Page.goto: net::ERR_BLOCKED_BY_CLIENT at http://x/", errors.NavigationRefused),
        ("Unable to navigate: net::ERR_BLOCKED_BY_ADMINISTRATOR", errors.PolicyRefused),
        ("net::ERR_CONNECTION_RESET (Connection reset by peer)", errors.NetworkError),
        ("Error: Page.goto: net::ERR_EMPTY_RESPONSE at http://x/", errors.NetworkError),
        ("Error: Page.goto: net::ERR_ABORTED at http://x/", errors.NavigationAborted),
        ("net::ERR_FAILED", errors.RequestFailed),
        ("net::ERR_CONNECTION_FAILED", errors.NetworkError),
        ("HTTP 503", errors.BrowserError),
        (None, errors.BrowserError),
    ],
)
def test_browser_messages_are_read_in_one_place(message, kind):
    assert errors.error_kind(message) is kind


def test_browser_error_translation_keeps_the_cause():
    class TimeoutError(Exception):  # Playwright's own TimeoutError has this name
        pass

    cause = TimeoutError("Timeout 30000ms exceeded.\nCall log:\n  - navigating")
    err = errors.browser_error(cause)
    assert isinstance(err, errors.BrowserTimeout) and str(err) == "Timeout 30000ms exceeded." and err.__cause__ is cause
    closed = errors.browser_error(RuntimeError("Target page, context or browser has been closed"))
    assert isinstance(closed, errors.TargetClosed) and isinstance(closed, errors.BrtError)
    assert errors.first_line(ValueError()) == "ValueError" and errors.first_line("") == "(no output)"


def test_a_failed_write_is_a_store_write_error(tmp_path):
    from memory_store.errors import StoreCorrupt
    from memory_store.store import LanceStore

    store = LanceStore(tmp_path, 4)
    row = {"id": "a", "charter_id": "c", "url": "u", "text": "t", "tokens": 1, "also_seen_at": []}
    store.upsert_chunks([row], np.ones((1, 4), dtype=np.float32))
    with pytest.raises(StoreWriteError, match="cannot write chunks") as info:
        store.upsert_chunks([row, dict(row)], np.ones((2, 4), dtype=np.float32))  # LanceDB refuses the batch
    assert not isinstance(info.value, StoreCorrupt) and info.value.__cause__ is not None
    assert store.count("chunks") == 1  # nothing half-written


def test_a_read_of_a_version_another_process_compacted_away_reads_the_latest(tmp_path):
    from memory_store.store import CHUNKS, LanceStore

    def rows(*ids):
        return [{"id": i, "charter_id": "c", "url": f"u{i}", "text": "t", "tokens": 1, "also_seen_at": []} for i in ids]

    writer, reader = LanceStore(tmp_path, 4), LanceStore(tmp_path, 4)
    writer.upsert_chunks(rows("a"), np.ones((1, 4), dtype=np.float32))
    assert reader.count(CHUNKS) == 1  # the reader holds a handle on that version (its data not read yet)
    writer.upsert_chunks(rows("b"), np.ones((1, 4), dtype=np.float32))
    writer.compact()  # the other process: the older versions' files are removed
    stale = reader._tables[CHUNKS]
    stale.checkout_latest = lambda: None  # the compaction lands between the reader's checkout and its read
    assert set(reader.chunk_meta()) == {"a", "b"}
    assert reader._tables[CHUNKS] is not stale
    # a search through a handle whose version was compacted away (vector and full-text go through the same retry)
    writer.upsert_chunks(rows("c"), np.ones((1, 4), dtype=np.float32))
    writer.compact()
    stale = reader._tables[CHUNKS]
    stale.checkout_latest = lambda: None
    assert {r["id"] for r in reader.search(np.ones(4, dtype=np.float32), 5)} == {"a", "b", "c"}
    assert reader._tables[CHUNKS] is not stale
