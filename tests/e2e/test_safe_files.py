"""Files brt writes where someone else can plant a symlink: MCP report, charter_init (overwrite), restore (CLI and
MCP), the CLI's synthesize JSON beside the doc, and a link planted while an MCP synthesize runs (the race
between the path check and the write). Every write replaces a link at its target instead of following it, and
refuses a folder on the way that became a link after the check. Real store, real model, real MCP session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from click.testing import CliRunner

pytest.importorskip("mcp")

from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from orchestrator.cli import cli  # noqa: E402
from tests.e2e.test_mcp import doc_of, error_text, server_params  # noqa: E402

pytestmark = pytest.mark.model
LAMP = "The lighthouse lamp was converted to electricity in 1953 by the harbour board."
PRECIOUS = "my own file, not brt's\n"


def _charter(folder: Path, charter_id: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{charter_id}.yaml"
    path.write_text(yaml.safe_dump({
        "id": charter_id, "title": "Files", "allowed_domains": ["allowed.test"], "seeds": ["http://allowed.test/"],
        "outputs": {"doc": "out/report.md", "sections": [{"title": "Lamp", "question": "When was the lamp lit?"}]},
        "memory": {"use_concept_index": False},
    }), encoding="utf-8")
    return path


def _victim(tmp_path: Path, name: str) -> Path:
    victim = tmp_path / "victims" / name
    victim.parent.mkdir(exist_ok=True)
    victim.write_text(PRECIOUS)
    return victim


def _plant(link: Path, target: Path) -> Path:
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)
    return link


def test_mcp_report_charter_init_and_restore_never_follow_a_planted_link(brt_home: Path, tmp_path: Path) -> None:
    charter = _charter(tmp_path / "project", "files_mcp")
    victims = {n: _victim(tmp_path, n) for n in ("report", "init", "restore")}
    dangling = tmp_path / "victims" / "created-through-a-link.yaml"

    async def flow() -> None:
        async with stdio_client(server_params(brt_home)) as (read, write), ClientSession(
                read, write, read_timeout_seconds=300) as s:
            await s.initialize()

            async def ok(name: str, args: dict[str, Any]) -> dict[str, Any]:
                return doc_of(await s.call_tool(name, args))

            await ok("add_page", {"charter_path": str(charter), "url": "http://allowed.test/lamp", "text": LAMP})
            await ok("synthesize", {"charter_path": str(charter)})
            snapshot = Path((await ok("clean", {"charter_path": str(charter), "snapshot": "snap.jsonl"}))[
                "snapshot_path"])
            link = _plant(brt_home / "reports" / "snap.md", victims["report"])
            written = await ok("report", {"source_path": str(snapshot), "format": "md"})
            assert Path(written["path"]) == link and not link.is_symlink() and "Lamp" in link.read_text()

            link = _plant(brt_home / "charters" / "ferry.yaml", victims["init"])
            refused = error_text(await s.call_tool("charter_init", {
                "question": "How long is the crossing?", "urls": ["https://ferry.test/"], "charter_id": "ferry"}))
            assert "exists" in refused
            await ok("charter_init", {"question": "How long is the crossing?", "urls": ["https://ferry.test/"],
                                      "charter_id": "ferry", "overwrite": True})
            assert not link.is_symlink() and "ferry" in link.read_text()

            _plant(brt_home / "charters" / "again.yaml", dangling)
            assert "exists" in error_text(await s.call_tool("restore", {
                "snapshot_path": str(snapshot), "charter_id": "again"}))
            _plant(brt_home / "memory" / "planted", tmp_path / "victims")
            assert "exists" in error_text(await s.call_tool("restore", {
                "snapshot_path": str(snapshot), "charter_id": "planted"}))
            _plant(brt_home / "charters" / "third.yaml", victims["restore"])
            assert "exists" in error_text(await s.call_tool("restore", {
                "snapshot_path": str(snapshot), "charter_id": "third"}))

    anyio.run(flow)
    assert all(v.read_text() == PRECIOUS for v in victims.values())
    assert not dangling.exists() and sorted(p.name for p in (tmp_path / "victims").iterdir()) == sorted(victims)


def test_cli_restore_and_synthesize_replace_a_planted_link(brt_home: Path, tmp_path: Path) -> None:
    charter = _charter(tmp_path / "repo", "files_cli")
    victim, second = _victim(tmp_path, "bashrc"), _victim(tmp_path, "profile")
    runner = CliRunner()
    from orchestrator.harvest.pages import ingest_page
    from orchestrator.service import load

    ingest_page(load(charter), "http://allowed.test/lamp", text=LAMP)
    json_link = _plant(charter.parent / "out" / "report.json", victim)  # e.g. a symlink shipped in a cloned repo
    r = runner.invoke(cli, ["synthesize", str(charter)])
    assert r.exit_code == 0, r.output
    assert victim.read_text() == PRECIOUS
    assert not json_link.is_symlink() and json.loads(json_link.read_text())["charter_id"] == "files_cli"

    r = runner.invoke(cli, ["clean", str(charter), "--snapshot", str(tmp_path / "s.jsonl")])
    assert r.exit_code == 0, r.output
    target = _plant(tmp_path / "restored" / "charter.yaml", second)
    r = runner.invoke(cli, ["restore", str(tmp_path / "s.jsonl"), "--id", "files_back", "--charter", str(target)])
    assert r.exit_code == 1 and "exists" in r.output  # a link there counts as a file with other content
    r = runner.invoke(cli, ["restore", str(tmp_path / "s.jsonl"), "--id", "files_back", "--charter", str(target),
                            "--force"])
    assert r.exit_code == 0, r.output
    assert second.read_text() == PRECIOUS and not target.is_symlink() and "files_back" in target.read_text()


def test_a_link_planted_between_the_check_and_the_write_is_refused(brt_home: Path, tmp_path: Path) -> None:
    """The MCP synthesize tool's own sequence (orchestrator/mcp/server.py): check the paths, then write them
    within the charter's output roots. A folder swapped for a link in between (the race) is refused, and
    nothing is written through it."""
    from orchestrator.errors import BrtError
    from orchestrator.harvest.pages import ingest_page
    from orchestrator.safe_paths import agent_output_paths, output_roots
    from orchestrator.service import load
    from orchestrator.synthesize import synthesize

    charter = load(_charter(tmp_path / "project", "files_race"))
    ingest_page(charter, "http://allowed.test/lamp", text=LAMP)
    (tmp_path / "project" / "out" / "drafts").mkdir(parents=True)
    paths = agent_output_paths(charter, "drafts/report.md", kind="synthesize")  # the check passes
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "project" / "out" / "drafts").rmdir()
    (tmp_path / "project" / "out" / "drafts").symlink_to(elsewhere)  # planted while the tool runs
    with pytest.raises(BrtError, match="symlink"):
        synthesize(charter, out=paths[0], within=output_roots(charter))
    assert list(elsewhere.iterdir()) == []


def test_mcp_clean_never_writes_through_a_folder_swapped_for_a_link(brt_home: Path, tmp_path: Path) -> None:
    """The clean tool's own sequence: the snapshot path checked, then a folder on it swapped for a link."""
    from orchestrator.clean import clean
    from orchestrator.errors import BrtError
    from orchestrator.harvest.pages import ingest_page
    from orchestrator.safe_paths import agent_output_paths, output_roots
    from orchestrator.service import load

    charter = load(_charter(tmp_path / "project", "files_clean"))
    ingest_page(charter, "http://allowed.test/lamp", text=LAMP)
    (tmp_path / "project" / "out" / "snaps").mkdir(parents=True)
    paths = agent_output_paths(charter, "snaps/s.jsonl", kind="clean")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "project" / "out" / "snaps").rmdir()
    (tmp_path / "project" / "out" / "snaps").symlink_to(elsewhere)
    with pytest.raises(BrtError, match="symlink"):
        clean(charter, snapshot=paths[0], keep=True, within=output_roots(charter))
    assert list(elsewhere.iterdir()) == [] and not [p for p in brt_home.iterdir() if p.name.startswith(".clean-")]
    (tmp_path / "project" / "out" / "snaps").unlink()
    done = clean(charter, snapshot=paths[0], within=output_roots(charter))
    assert done.snapshot_path.is_file() and done.destroyed
