"""One verdict: `brt charter validate` refuses exactly what harvest and synthesize refuse, with the same message; each
shell words a way out in its own terms (CLI flags, MCP arguments); MCP argument errors read as plain words outside
the untrusted-content delimiters; every command's help lists its exit codes."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner

from orchestrator import errors
from orchestrator.cli import ADVICE as CLI_ADVICE
from orchestrator.cli import cli
from orchestrator.mcp.guard import ADVICE as MCP_ADVICE
from orchestrator.untrusted import QUOTE_CLOSE

ROOT = Path(__file__).resolve().parents[2]

CHARTER = """\
id: verdicts
title: Ferry timetable
allowed_domains: [ferry.test]
seeds: [https://ferry.test/]
outputs:
  doc: {doc}
  sections:
    - title: Crossing time
      question: How long is the crossing?
"""


def _charter(tmp_path: Path, doc: str) -> Path:
    path = tmp_path / "charters" / "ferry.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(CHARTER.format(doc=doc), encoding="utf-8")
    return path


def _brt(*args: object) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    return result.exit_code, result.stderr


@pytest.mark.parametrize("doc", ["../reports/ferry.md", "/tmp/elsewhere/ferry.md"])
def test_validate_refuses_what_synthesize_refuses_with_the_same_message(tmp_path, monkeypatch, doc):
    monkeypatch.setenv("BRT_HOME", str(tmp_path / "home"))
    path = _charter(tmp_path, doc)
    validated = _brt("charter", "validate", path)
    synthesized = _brt("synthesize", path)
    assert validated[0] == synthesized[0] == 2
    assert validated[1] == synthesized[1]
    assert "outputs.doc" in validated[1] and "outside the charter's folder" in validated[1]
    assert "--allow-doc-anywhere" in validated[1]  # the CLI's way out, in its terms
    # the flag means the same to both: validate passes, synthesize goes on (to the missing store)
    assert _brt("charter", "validate", path, "--allow-doc-anywhere")[0] == 0
    code, err = _brt("synthesize", path, "--allow-doc-anywhere")
    assert code == 1 and "no store" in err


def test_a_charter_validate_passes_synthesize_takes(tmp_path, monkeypatch):
    monkeypatch.setenv("BRT_HOME", str(tmp_path / "home"))
    path = _charter(tmp_path, "out/ferry.md")
    assert _brt("charter", "validate", path)[0] == 0
    code, err = _brt("synthesize", path)
    assert code == 1 and "no store" in err and "invalid charter" not in err


@pytest.mark.parametrize("name", ["demo.yaml", "cwv_audit.yaml"])
def test_the_shipped_charters_validate_as_shipped(name):
    code, err = _brt("charter", "validate", ROOT / "charters" / name)
    assert code == 0, err


def test_every_way_out_is_worded_by_both_shells_in_their_own_terms():
    assert set(CLI_ADVICE) == set(MCP_ADVICE) == set(errors.ADVICE)
    for key, text in MCP_ADVICE.items():
        assert not re.search(r"(?<![\w-])--[a-z]", text), (key, text)  # no CLI flag over MCP
        assert "brt " not in text.replace("brt://", ""), (key, text)
    for key, text in CLI_ADVICE.items():
        assert "_id" not in text and " tool" not in text, (key, text)  # no MCP argument or tool on the CLI


def test_an_mcp_error_with_advice_names_mcp_arguments_outside_the_quotes():
    from orchestrator.audit.errors import RestoreError
    from orchestrator.mcp.guard import library_error, tool_error_text

    exists = tool_error_text("restore", library_error(RestoreError("a store for charter 'x' exists at /h/x",
                                                                   advice="restore_id")))
    assert "charter_id" in exists and "--id" not in exists and "QUOTED PAGE CONTENT" not in exists
    unverified = tool_error_text("restore", library_error(RestoreError("s.jsonl fails verification:\n  page x",
                                                                       advice="restore_force")))
    assert "QUOTED PAGE CONTENT" in unverified  # the failures can name pages: quoted
    after = unverified.split(QUOTE_CLOSE, 1)[1]
    assert "passes verification" in after and "--force" not in unverified  # the advice: brt's own, outside


def _call(tool: str, arguments: dict) -> str:
    from orchestrator.mcp.jobs import Jobs
    from orchestrator.mcp.server import build_server

    server = build_server(Jobs())

    async def go() -> str:
        try:
            await server.call_tool(tool, arguments)
        except Exception as exc:  # the guard's error: what the client reads
            return str(exc)
        raise AssertionError(f"{tool} accepted {arguments}")

    return anyio.run(go)


@pytest.mark.parametrize(
    "tool, arguments, words",
    [
        ("search", {"charter_path": "c.yaml", "query": "q", "k": 1000}, "argument 'k'"),
        ("search", {"query": "q"}, "argument 'charter_path' is required"),
        ("harvest", {"charter_path": "c.yaml", "via": "carrier-pigeon"}, "argument 'via'"),
    ],
)
def test_a_bad_mcp_argument_reads_as_plain_words_outside_the_quotes(tool, arguments, words):
    text = _call(tool, arguments)
    assert words in text, text
    assert "QUOTED PAGE CONTENT" not in text and "validation error" not in text and "pydantic" not in text, text
    assert "carrier-pigeon" not in text and "1000" not in text  # what was given is the agent's, not repeated


def test_every_command_lists_its_exit_codes():
    import sys

    sys.path.insert(0, str(ROOT / "scripts"))
    import cli_reference

    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for path, command in list(cli_reference.commands())[1:]:
        if hasattr(command, "commands"):  # a group: its commands list theirs
            continue
        text = cli_reference.help_text(path)
        assert "Exit codes:" in text and re.search(r"^\s+0\s+\S", text, re.MULTILINE), path
        assert text.rstrip("\n") in page, path
    harvest = cli_reference.help_text(("harvest",))
    assert re.search(r"^\s+3\s+no page stored", harvest, re.MULTILINE)
