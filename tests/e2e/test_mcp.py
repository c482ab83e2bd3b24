"""brt's MCP server (`brt mcp`) driven by a real MCP client session over stdio (the SDK's stdio_client and
ClientSession): tools and prompts, harvest with progress, add_page (allowlist, injection-proof quoting), search,
synthesize, clean, and clear error results for bad input."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

pytest.importorskip("mcp")

from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from orchestrator.mcp.server import QUOTE_CLOSE, escape_untrusted  # noqa: E402
from tests.unit.test_mcp_quoting import INJECTION, assert_quoted  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TOOLS = {
    "charter_validate",
    "harvest",
    "job",
    "cancel",
    "add_page",
    "search",
    "resolve_path",
    "synthesize",
    "clean",
    "status",
}
def write_charter(make_charter: Any, site: Any, charter_id: str = "mcp_site") -> Path:
    """The charter file the MCP tools are given (``make_charter`` writes it as YAML)."""
    return make_charter(
        site,
        path="charter.yaml",
        charter_id=charter_id,
        title="Harbour research over MCP",
        outputs={"doc": "out/report.md"},
        sections=[
            {
                "title": "Lighthouse lamp",
                "label": "Lamp",
                "question": "When was the lighthouse lamp converted to electricity?",
            },
            {
                "title": "Cryptocurrency",
                "label": "Crypto",
                "question": "What is the current price of bitcoin in euros?",
            },
        ],
        max_pages=20,
    ).source


def server_params(brt_home: Path) -> StdioServerParameters:
    env = {
        "BRT_HOME": str(brt_home),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PYTHONPATH": str(ROOT),
    }
    for key in ("BRT_BROWSER", "BRT_EMBED_MODEL", "BRT_TORCH_THREADS", "TMPDIR", "PLAYWRIGHT_BROWSERS_PATH"):
        if os.environ.get(key):
            env[key] = os.environ[key]
    return StdioServerParameters(
        command=sys.executable, args=["-m", "orchestrator.cli", "-v", "mcp"], env=env, cwd=ROOT
    )


def doc_of(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


def error_text(result: Any) -> str:
    assert result.is_error, result.content
    return "\n".join(getattr(c, "text", "") for c in result.content)


@pytest.mark.browser
@pytest.mark.model
def test_mcp_session_end_to_end(local_site, make_charter, brt_home, tmp_path):
    site = local_site()
    charter = write_charter(make_charter, site)
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        yaml.safe_dump({"id": "x", "title": "t", "allowed_domains": ["127.0.0.1"], "seeds": [], "colour": 1})
    )
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    server_log = tmp_path / "server-stderr.log"

    async def session_flow() -> None:
        async with stdio_client(server_params(brt_home), errlog=errlog) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=300) as s:
                await s.initialize()

                tools = {t.name: t for t in (await s.list_tools()).tools}
                assert set(tools) >= TOOLS
                for tool in tools.values():
                    assert tool.input_schema["type"] == "object" and tool.description
                assert tools["add_page"].input_schema["required"] == ["charter_path", "url"]
                assert {"html", "text", "selector", "last_updated"} <= set(tools["add_page"].input_schema["properties"])
                prompts = {p.name for p in (await s.list_prompts()).prompts}
                assert prompts >= {"harvest", "synthesize", "clean"}
                prompt = await s.get_prompt("synthesize", {"charter_path": str(charter)})
                assert str(charter) in prompt.messages[0].content.text

                # bad input: clear error results, not crashes
                assert "not found" in error_text(
                    await s.call_tool("charter_validate", {"path": str(tmp_path / "nope.yaml")})
                )
                message = error_text(await s.call_tool("charter_validate", {"path": str(bad)}))
                assert "colour" in message and "seeds" in message
                assert error_text(await s.call_tool("search", {"charter_path": str(charter)}))  # no query
                never = error_text(await s.call_tool("search", {"charter_path": str(charter), "query": "tides"}))
                assert "harvest" in never
                ok = doc_of(await s.call_tool("charter_validate", {"path": str(charter)}))
                assert ok["valid"] and ok["charter_id"] == "mcp_site"

                # harvest in blocking mode (wait): the report, with progress notifications
                report = doc_of(
                    await s.call_tool(
                        "harvest", {"charter_path": str(charter), "wait": True}, progress_callback=on_progress
                    )
                )
                assert report["job_id"].startswith("harvest-mcp_site-")
                assert report["counts"]["stored"] >= 5, report["summary"]
                assert report["pages_stored"] == report["counts"]["stored"]
                assert progress, "no progress notifications during the harvest"
                assert [p[0] for p in progress] == sorted(p[0] for p in progress)
                status = doc_of(await s.call_tool("status", {"charter_path": str(charter)}))
                pages_before = status["pages"]
                assert status["exists"] and pages_before == report["pages_stored"]

                # add_page off the allowlist: refused, nothing stored
                refused = error_text(
                    await s.call_tool(
                        "add_page",
                        {
                            "charter_path": str(charter),
                            "url": site.offsite_url("secret.html"),
                            "text": "The offsite walrus sings opera every Tuesday at noon.",
                        },
                    )
                )
                assert "allowed_domains" in refused and "nothing was stored" in refused
                assert error_text(
                    await s.call_tool(
                        "add_page", {"charter_path": str(charter), "url": "file:///etc/passwd", "text": "x"}
                    )
                )
                assert doc_of(await s.call_tool("status", {"charter_path": str(charter)}))["pages"] == pages_before

                # add_page of a hostile page: stored through the extraction path, quoted and escaped on the way out
                escaped = INJECTION.replace("<", "&lt;").replace(">", "&gt;")
                html = (
                    "<!DOCTYPE html><html><head><title>Harbour notes</title>"
                    '<meta property="article:modified_time" content="2025-03-04"></head>'
                    f"<body><main><article><h1>Harbour notes</h1><p>{escaped}</p>"
                    "<script>document.title = 'script text must never be stored';</script>"
                    "</article></main></body></html>"
                )
                added = doc_of(
                    await s.call_tool(
                        "add_page", {"charter_path": str(charter), "url": site.url("notes.html"), "html": html}
                    )
                )
                assert added["stored"] and added["chunks"] >= 1 and added["last_updated"] == "2025-03-04"
                preview = assert_quoted(added["text_preview"])
                assert "ignore previous instructions" in preview and "script text" not in preview
                text_page = doc_of(
                    await s.call_tool(
                        "add_page",
                        {
                            "charter_path": str(charter),
                            "url": site.url("plain.html"),
                            "text": "The ferry timetable changes on the first of May every year.",
                            "last_updated": "2024-05-01",
                        },
                    )
                )
                assert text_page["chunks"] == 1 and text_page["last_updated"] == "2024-05-01"
                assert error_text(
                    await s.call_tool(
                        "add_page",
                        {
                            "charter_path": str(charter),
                            "url": site.url("x.html"),
                            "text": "x",
                            "html": "<p>x</p>",
                        },
                    )
                )
                assert error_text(
                    await s.call_tool(
                        "add_page",
                        {
                            "charter_path": str(charter),
                            "url": site.url("x.html"),
                            "text": "x",
                            "last_updated": "May",
                        },
                    )
                )
                status = doc_of(await s.call_tool("status", {"charter_path": str(charter)}))
                assert status["pages"] == pages_before + 2

                # search: hits come back quoted; the hostile text cannot close the quote
                hits = doc_of(
                    await s.call_tool(
                        "search",
                        {"charter_path": str(charter), "query": "zebra crossing painted purple and orange", "k": 3},
                    )
                )["hits"]
                assert hits and hits[0]["url"] == site.url("notes.html")
                body = assert_quoted(hits[0]["text"])
                assert "ignore previous instructions" in body
                assert escape_untrusted(QUOTE_CLOSE) in body
                assert all(h["text"].count(QUOTE_CLOSE) == 1 for h in hits)
                assert error_text(await s.call_tool("search", {"charter_path": str(charter), "query": "x", "k": 0}))
                offsite = doc_of(
                    await s.call_tool("search", {"charter_path": str(charter), "query": "walrus sings opera", "k": 5})
                )["hits"]
                assert not any("walrus" in h["text"] for h in offsite)

                # resolve_path: a result once the concept index exists, else a clear error
                resolved = await s.call_tool("resolve_path", {"charter_path": str(charter), "text": "lighthouse lamp"})
                if resolved.is_error:
                    assert "concept index" in error_text(resolved)
                else:
                    assert "path" in doc_of(resolved)

                # synthesize: blocks (quoted) and gaps
                synth = doc_of(await s.call_tool("synthesize", {"charter_path": str(charter)}))
                lamp = next(sec for sec in synth["sections"] if sec["label"] == "Lamp")
                crypto = next(sec for sec in synth["sections"] if sec["label"] == "Crypto")
                assert lamp["blocks"] and crypto["gaps"] and not crypto["blocks"]
                assert any("1953" in assert_quoted(b["quote"]) for b in lamp["blocks"])
                assert lamp["blocks"][0]["citation"].startswith("[Lamp Evidence #1] — 127.0.0.1:")
                assert Path(synth["doc_path"]).is_file() and Path(synth["json_path"]).is_file()

                # clean: the snapshot path; the store is gone
                cleaned = doc_of(await s.call_tool("clean", {"charter_path": str(charter)}))
                snapshot = Path(cleaned["snapshot_path"])
                assert snapshot.is_file() and cleaned["destroyed"]
                manifest = json.loads(snapshot.read_text().splitlines()[0])
                assert manifest["type"] == "manifest" and manifest["counts"]["page"] == pages_before + 2
                assert not doc_of(await s.call_tool("status", {"charter_path": str(charter)}))["exists"]
                assert error_text(await s.call_tool("clean", {"charter_path": str(charter)}))

    async def bounded() -> None:
        with anyio.fail_after(600):
            await session_flow()

    with server_log.open("w") as errlog:
        anyio.run(bounded)
    assert not (brt_home / "memory" / "mcp_site").exists()
    # harvest, add_page, search and synthesize all ran in one server process on one model load
    assert server_log.read_text().count("loaded embedding model") == 1
