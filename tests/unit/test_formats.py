"""The output formats are named once (``orchestrator.formats``): the CLI's ``brt report --format`` choices, the MCP
``report`` tool's argument schema and the report module's writers all follow the registry."""

from __future__ import annotations

import html
from pathlib import Path

import anyio
import click
import pytest

from orchestrator.audit.bundle import AuditBundle
from orchestrator.audit.errors import ReportError
from orchestrator.audit.report import render
from orchestrator.formats import FORMATS, REPORT_FORMATS, SYNTHESIS_FORMATS, suffix
from orchestrator.synthesis_record import SynthesisRecord


def test_every_named_format_is_registered():
    assert set(REPORT_FORMATS) | set(SYNTHESIS_FORMATS) <= set(FORMATS)
    assert REPORT_FORMATS[0] == "html"  # the default of both shells
    assert suffix("json") == ".json" and all(FORMATS[n].suffix == f".{n}" for n in FORMATS)


def test_the_cli_offers_the_registry():
    from orchestrator.cli import cli

    option = next(p for p in cli.commands["report"].params if p.name == "fmt")
    assert isinstance(option.type, click.Choice)
    assert tuple(option.type.choices) == REPORT_FORMATS and option.default == REPORT_FORMATS[0]


def test_the_mcp_report_tool_offers_the_registry():
    pytest.importorskip("mcp")
    from orchestrator.mcp.jobs import Jobs
    from orchestrator.mcp.server import build_server

    server = build_server(Jobs())
    tools = anyio.run(server.list_tools)
    schema = next(t for t in tools if t.name == "report").input_schema
    fmt = schema["properties"]["format"]
    assert tuple(fmt["enum"]) == REPORT_FORMATS and fmt["default"] == REPORT_FORMATS[0]


def _bundle() -> AuditBundle:
    syn = {"title": "T", "generated_at": "2026-11-28T00:00:00Z", "embedding_model": "m", "min_score": 0.3,
           "sections": [{"title": "S", "label": "S", "question": "Q?", "blocks": [],
                         "gaps": [{"label": "S", "question": "Q?", "searched_chunks": 2, "searched_pages": 1}]}]}
    return AuditBundle("store", Path("c.yaml"), "c", "T", None, SynthesisRecord.from_json(syn))


@pytest.mark.parametrize("fmt", REPORT_FORMATS)
def test_each_report_format_has_a_writer(fmt):
    text = render(_bundle(), fmt)
    if fmt == "csv":  # one row per evidence block: a section with a Gap has none
        assert text.splitlines()[0].startswith("section,n,quote") and len(text.splitlines()) == 1
    else:  # the one Gap renderer's words (HTML-escaped in HTML)
        words = 'No evidence met the threshold for "Q?" (searched 2 chunks from 1 pages).'
        assert (html.escape(words) if fmt == "html" else words) in text


def test_an_unregistered_format_is_refused():
    with pytest.raises(ReportError, match="expected one of html, csv, md"):
        render(_bundle(), "pdf")
