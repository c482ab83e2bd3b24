"""The same answers everywhere (issue 13): ``brt search --json`` and the MCP ``search`` tool (a real MCP client
session, the server as a subprocess) return the same hits, in the same order with the same scores, for a charter
whose ``retrieval:`` section is not the default (mode, candidates, MMR), and for a default charter; and the
non-default settings really change the hits (so the comparison could fail if MCP ignored them)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from tests.e2e.test_mcp import doc_of, server_params  # noqa: E402
from tests.integration.test_retrieval import BATTERY_DOCS, CODE_DOC, QUERY  # noqa: E402
from tests.unit.test_mcp_quoting import assert_quoted  # noqa: E402

CUSTOM = {"mode": "vector", "candidates": 6, "mmr_lambda": 0.3}


def _store(charter_id: str) -> None:
    from memory_store import Memory

    pages = [{"url": f"https://docs.example/p{i}", "text": t} for i, t in enumerate(BATTERY_DOCS)]
    pages.append({"url": "https://docs.example/ledger", "text": CODE_DOC})
    Memory(charter_id).add_many(pages)


def _charter(make_charter: Any, charter_id: str, retrieval: dict[str, Any] | None) -> Any:
    return make_charter(
        ["https://docs.example/"],
        path=f"{charter_id}.yaml",
        charter_id=charter_id,
        allowed=("docs.example",),
        retrieval=retrieval,
        load=False,
    )


def _key(hits: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(h["id"], h["url"], h["score"], h["matched_via"], h["last_updated"]) for h in hits]


@pytest.mark.model
def test_cli_and_mcp_search_return_the_same_hits(make_charter, brt_home, embedder, tmp_path):
    from click.testing import CliRunner

    from orchestrator.cli import cli

    charters = {"same_custom": CUSTOM, "same_default": None}
    paths = {}
    for charter_id, retrieval in charters.items():
        _store(charter_id)
        paths[charter_id] = _charter(make_charter, charter_id, retrieval)

    cli_hits: dict[str, list[dict[str, Any]]] = {}
    for charter_id, path in paths.items():
        r = CliRunner().invoke(cli, ["search", str(path), QUERY, "-k", "10", "--json"])
        assert r.exit_code == 0, r.output
        cli_hits[charter_id] = json.loads(r.stdout)["hits"]

    mcp_hits: dict[str, list[dict[str, Any]]] = {}

    async def flow() -> None:
        async with stdio_client(server_params(brt_home), errlog=errlog) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=120) as s:
                await s.initialize()
                for charter_id, path in paths.items():
                    args = {"charter_path": str(path), "query": QUERY, "k": 10}
                    mcp_hits[charter_id] = doc_of(await s.call_tool("search", args))["hits"]

    with (tmp_path / "server-stderr.log").open("w") as errlog:
        anyio.run(flow)

    for charter_id in charters:
        assert cli_hits[charter_id], charter_id
        assert _key(mcp_hits[charter_id]) == _key(cli_hits[charter_id]), charter_id
        for m, c in zip(mcp_hits[charter_id], cli_hits[charter_id], strict=True):
            assert assert_quoted(m["text"]) == c["text"]  # the same chunk, quoted as untrusted on MCP

    custom, default = cli_hits["same_custom"], cli_hits["same_default"]
    assert {h["matched_via"] for h in custom} == {"vector"}  # mode: vector
    assert "bm25" in "".join(h["matched_via"] for h in default)  # the default is hybrid
    assert _key(custom) != _key(default)
