"""The one record of a synthesis (``orchestrator.synthesis_record``): made by the synthesis, written as JSON beside
its Markdown and into the store, read back by the reports; it round-trips through JSON."""

from __future__ import annotations

import json
from dataclasses import replace

from orchestrator.evidence import EvidenceBlock, Gap, SectionResult, Source, SynthesisResult
from orchestrator.evidence.judge.acceptance import Support, Verdict
from orchestrator.evidence.judge.conflicts import Agreement, Claim, Conflict
from orchestrator.synthesis_record import Recorded, SynthesisRecord
from orchestrator.untrusted import Trusted


def _result() -> SynthesisResult:
    also = [Source("https://b.example/page", None, "d" * 40, "the same, in other words", 0.777777, "add_page")]
    block = EvidenceBlock("LCP", 1, 'LCP of 2.5 s is "good"', "https://a.example/lcp", "2025-03-18", 0.9123456,
                          "c" * 40, "what is good", heading=True, also_at=also)
    sections = [
        SectionResult("LCP threshold", "LCP", "What LCP is good?", ["q1", "q2"], [block], []),
        SectionResult("HTTP/3", "H3", "Does HTTP/3 help?", ["q3"], [], [Gap("H3", "Does HTTP/3 help?", 12, 5, "why")]),
    ]
    result = SynthesisResult("c1", "Title", sections, 0.3, "model", "2026-11-28T00:00:00Z", 1.23456)
    result.acceptance = [
        Verdict("LCP cited", "covered", "LCP #1", "evidence", ["lcp"], [],
                [Support("LCP threshold", "LCP", 1, "https://a.example/lcp", 0.8, 0.5, 0.25)], []),
        Verdict("A gap", "not covered", "none", "gap", [], [], [], ["HTTP/3"]),
    ]
    result.conflicts = [Conflict("LCP threshold", "LCP", "duration", ["good"],
                                 Claim(1, "https://a.example/lcp", "2025-03-18", block.quote, "2.5 s"),
                                 Claim(0, "https://c.example/x", None, "3 s is good", "3 s", "e" * 40, "add_page"))]
    result.agreements = [Agreement("LCP threshold", "LCP", "duration", "2.5 s", ["good"], [1],
                                   ["https://a.example/lcp", "https://b.example/page"])]
    return result


def test_the_record_round_trips_through_json():
    record = _result().record()
    text = json.dumps(record.to_json(), indent=2, ensure_ascii=False)
    back = SynthesisRecord.from_json(json.loads(text))
    assert back == record
    assert json.dumps(back.to_json(), indent=2, ensure_ascii=False) == text


def test_the_stored_record_round_trips_with_what_the_store_adds():
    record = replace(_result().record(), recorded=Recorded("ab" * 32, {"LCP threshold": "/web", "HTTP/3": None},
                                                           "out/r.md", "out/r.json", "# Title\n"))
    doc = json.loads(json.dumps(record.to_json()))
    assert list(doc)[-5:] == ["charter_sha256", "routes", "doc_path", "json_path", "markdown"]
    assert SynthesisRecord.from_json(doc) == record
    assert SynthesisRecord.from_json({k: v for k, v in doc.items() if k not in ("routes", "markdown")}).recorded


def test_the_record_is_what_the_synthesis_writes():
    result = _result()
    doc = result.to_json()
    assert doc == result.record().to_json()
    block = doc["sections"][0]["blocks"][0]
    assert block["score"] == 0.9123 and block["also_at"][0]["score"] == 0.7778 and doc["t_synth_s"] == 1.235
    assert block["markdown"] == result.sections[0].blocks[0].markdown
    assert doc["sections"][1]["gaps"][0]["markdown"] == result.sections[1].gaps[0].markdown
    assert doc["acceptance_summary"] == {"covered": 1, "partial": 0, "not covered": 1}
    assert doc["conflicts"][0]["b"]["chunk_id"] == "e" * 40 and "chunk_id" not in doc["conflicts"][0]["a"]
    # brt's own words stay marked as such (an agent reads them bare)
    assert isinstance(doc["acceptance"][0]["verdict"], Trusted)
    assert all(isinstance(k, Trusted) for k in doc["acceptance_summary"] if k == "not covered")


def test_a_mistyped_record_reads_as_empty_fields():
    doc = {"title": 3, "min_score": "x", "sections": [
        "not a section",
        {"title": "S", "blocks": [{"n": "two", "score": None, "also_at": ["x", {"url": 5}]}], "gaps": [{}]},
    ], "acceptance": [{"criterion": "c"}], "conflicts": [{"a": None}], "agreements": [{"blocks": ["1", "x"]}]}
    record = SynthesisRecord.from_json(doc)
    assert record.title == "3" and record.min_score == 0.0 and len(record.sections) == 1
    block = record.sections[0].blocks[0]
    assert (block.n, block.score, [a.url for a in block.also_at]) == (0, 0.0, ["5"])
    assert record.conflicts[0].a.n == 0 and record.agreements[0].blocks == [1, 0] and record.recorded is None
    assert SynthesisRecord.from_json(None) == SynthesisRecord.from_json({})
