"""The synthesis document as an agent gets it over MCP (``service.section_json`` and ``judgements_json``): every
quote, value and context word taken from a page inside the untrusted-content delimiters, every URL as an agent
may see it, the reasons escaped; the CLI's document (no ``quote``) unchanged."""

from __future__ import annotations

import copy

import pytest

pytest.importorskip("mcp")

from orchestrator import service  # noqa: E402
from orchestrator.untrusted import QUOTE_CLOSE, quote_untrusted, safe_url  # noqa: E402
from tests.unit.test_mcp_quoting import INJECTION, assert_quoted  # noqa: E402

URL = "https://user:pw@x.test/a b"


def synthesis_doc() -> dict:
    claim = {"n": 1, "url": URL, "last_updated": "2024-05-01", "value": INJECTION, "quote": INJECTION}
    return {
        "sections": [{"title": "Ferry", "label": "Ferry", "question": "q", "gaps": [], "blocks": [
            {"n": 1, "url": URL, "last_updated": "2024-05-01", "quote": INJECTION, "markdown": "[Ferry …]",
             "also_at": [{"url": URL, "quote": INJECTION, "last_updated": None}]}]}],
        "conflicts": [{"section": "Ferry", "label": "Ferry", "kind": "time", "about": ["crossing", INJECTION],
                       "a": dict(claim), "b": dict(claim, n=2)}],
        "agreements": [{"section": "Ferry", "value": INJECTION, "about": [INJECTION], "urls": [URL]}],
        "acceptance": [{"criterion": "c", "reason": f"#1 ({INJECTION})", "support": [{"url": URL}]}],
    }


def test_for_an_agent_page_text_is_quoted_and_urls_are_safe() -> None:
    doc = synthesis_doc()
    section = service.section_json(doc["sections"][0], quote_untrusted, safe_url)
    block = section["blocks"][0]
    assert "ignore previous instructions" in assert_quoted(block["quote"]) and "markdown" not in block
    assert assert_quoted(block["also_at"][0]["quote"]) and block["url"] == safe_url(URL) and "pw@" not in block["url"]
    assert block["citation"] == "[Ferry Evidence #1] — x.test/a%20b (last updated: 2024-05-01)"
    service.judgements_json(doc, quote_untrusted, safe_url)
    conflict = doc["conflicts"][0]
    for side in ("a", "b"):
        assert_quoted(conflict[side]["quote"]) and assert_quoted(conflict[side]["value"])
        assert conflict[side]["url"] == safe_url(URL)
    assert all(assert_quoted(w) for w in conflict["about"])
    agreement = doc["agreements"][0]
    assert assert_quoted(agreement["value"]) and agreement["urls"] == [safe_url(URL)]
    reason = doc["acceptance"][0]["reason"]
    assert QUOTE_CLOSE not in reason and "ignore previous instructions" in reason  # escaped, no delimiter
    assert doc["acceptance"][0]["support"][0]["url"] == safe_url(URL)


def test_for_the_cli_the_document_is_unchanged_but_for_the_citation() -> None:
    doc = synthesis_doc()
    before = copy.deepcopy(doc)
    section = service.section_json(doc["sections"][0])
    assert section["blocks"][0]["quote"] == INJECTION and section["blocks"][0]["markdown"] == "[Ferry …]"
    assert section["blocks"][0]["citation"] == "[Ferry Evidence #1] — x.test/a%20b (last updated: 2024-05-01)"
    service.judgements_json(doc)
    assert doc == before
