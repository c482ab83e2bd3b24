"""Audits (issue 14) without a browser or the model: ``brt charter init`` writes a valid commented charter,
quantities and conflicts between sources, and the evidence contract of ``verify``'s quote check."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from orchestrator.cli import cli


def run(*args: Any) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_charter_init_writes_a_valid_commented_charter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from orchestrator.charter import load_charter

    monkeypatch.chdir(tmp_path)
    r = run("charter", "init", "What share of websites serve traffic over HTTP/3?",
            "https://www.example.com/http3", "https://blog.example.net/quic: \"stats\"#x",
            "--section", "Which browsers support QUIC?")
    assert r.exit_code == 0, r.output
    path = Path(r.stdout.strip())
    assert path.parent == tmp_path and path.name.endswith(".yaml")
    text = path.read_text(encoding="utf-8")
    assert text.count("\n#") >= 3 and "# label: SHORT" in text
    charter = load_charter(path)
    assert charter.allowed_domains == ["example.com", "blog.example.net"]
    assert charter.seeds[1] == 'https://blog.example.net/quic: "stats"#x'
    assert [s.question for s in charter.outputs.sections] == [
        "What share of websites serve traffic over HTTP/3?", "Which browsers support QUIC?"]
    assert charter.goal == "What share of websites serve traffic over HTTP/3?" and charter.acceptance
    assert run("charter", "validate", path).exit_code == 0
    assert run("charter", "init", "Again?", "https://example.com/").exit_code == 0
    again = run("charter", "init", "Again?", "https://example.com/")
    assert again.exit_code == 1 and "exists" in again.output
    bad = run("charter", "init", "q", "file:///etc/passwd", "--out", tmp_path / "bad.yaml")
    assert bad.exit_code == 2 and "urls.0" in bad.output and not (tmp_path / "bad.yaml").exists()
    bad_id = run("charter", "init", "q", "https://example.com/", "--id", "Bad Id", "--out", tmp_path / "b.yaml")
    assert bad_id.exit_code == 2 and "id" in bad_id.output


@pytest.mark.parametrize("question, title", [
    ("How much does an annual pass cost?", "How much does an annual pass cost"),
    ("How far can an electric bike go on one charge?", "How far can an electric bike go on one charge"),
    ("what are the opening hours of the ferry office?", "What are the opening hours of the ferry office"),
    ("What are the fares for adults, children and bicycles, and are there discounts for residents of the "
     "island?", "What are the fares for adults, children and bicycles"),
    ("When was the lighthouse lamp converted to electricity and who paid for the conversion of the old keepers "
     "cottage?", "When was the lighthouse lamp converted to electricity …"),
])
def test_charter_init_titles_read_as_titles(tmp_path: Path, question: str, title: str) -> None:
    """A section's title is the question's own words from its start (a short question whole, a long one its first
    clause or first words), never a string of its content words ("Much annual pass cost")."""
    from orchestrator.charter import load_charter

    r = run("charter", "init", "What does the island ferry cost?", "https://ferry.test/", "--section", question,
            "--out", tmp_path / "c.yaml")
    assert r.exit_code == 0, r.output
    charter = load_charter(tmp_path / "c.yaml")
    got = charter.outputs.sections[1].title
    assert got == title
    words = got.rstrip(" …").split()
    assert " ".join(question.split()).lower().startswith(" ".join(words).lower()) and len(got) <= 62
    assert charter.title == "What does the island ferry cost"


def test_quantities_and_conflicts_unit() -> None:
    from orchestrator.evidence.judge.conflicts import SectionBlocks, find_conflicts
    from orchestrator.evidence.judge.quantities import quantities

    kinds = {q.text: (q.kind, q.value) for q in quantities(
        "Revenue rose 12% to $4.2 million on November 18, 2019; 28 close contacts of a 55-year-old hunter "
        "were quarantined for 9 days. Windows 10 and COVID-19 are not quantities.")}
    assert kinds == {
        "12%": ("percent", 12.0),
        "$4.2 million": ("currency:USD", 4_200_000.0),
        "November 18, 2019": ("date", (2019, 11, 18)),
        "28 close contacts": ("count:contact", 28.0),
        "55-year-old": ("age", 55.0),
        "9 days": ("time", 9 * 86400.0),
    }

    def section(*quotes: tuple[str, str]) -> list[SectionBlocks]:
        return [SectionBlocks("S", "S", [{"n": i + 1, "quote": q, "url": u, "last_updated": None}
                                         for i, (q, u) in enumerate(quotes)])]

    lcp = "A Largest Contentful Paint of 2.5 seconds or less is good, and above 4 seconds it is poor."
    conflicts, agreements = find_conflicts(section(
        (lcp, "https://a.example/lcp"),
        ("Largest Contentful Paint is good at 2500 ms or less and poor above 4 seconds.", "https://b.example/x"),
        (lcp.replace("2.5", "3"), "https://c.example/y"),
        (lcp, "https://a.example/lcp/"),  # the same page again: never compared with itself
        ("An Interaction to Next Paint of 200 milliseconds or less is good.", "https://d.example/inp"),
    ))
    assert sorted((c.a.n, c.b.n, c.a.value, c.b.value) for c in conflicts) == [
        (1, 3, "2.5 seconds", "3 seconds"), (2, 3, "2500 ms", "3 seconds")]
    assert any(a.value == "2.5 seconds" and a.sources == 3 for a in agreements)  # a, a/ and b (2500 ms)
    # different subjects (LCP vs INP), a rounding ("4 seconds" vs "4.3 seconds"), one page: no conflict
    conflicts, _ = find_conflicts(section(
        ("The crossing takes 4 seconds, says the guide.", "https://a.example/1"),
        ("The crossing takes 4.3 seconds, says the guide.", "https://b.example/2"),
    ))
    assert conflicts == []


def test_a_page_no_block_cites_can_conflict_and_the_newest_side_comes_first() -> None:
    from orchestrator.evidence.judge.conflicts import SectionBlocks, find_conflicts

    old = "The city's bike share has 650 bikes at 80 stations across the old town."
    new = "The city's bike share now has 700 bikes at 80 stations across the old town."
    block = {"n": 1, "quote": old, "url": "https://bikes.test/2024/fleet", "last_updated": "2024-04-02"}
    other = {"n": 0, "quote": new, "url": "https://bikes.test/2025/fleet", "last_updated": "2025-03-10",
             "chunk_id": "sha256:" + "a" * 64}
    same = dict(other, quote=old, url="https://bikes.test/about", chunk_id="sha256:" + "b" * 64)
    conflicts, agreements = find_conflicts([SectionBlocks("Fleet", "Fleet", [block], [other, same])])
    assert len(conflicts) == 1
    c = conflicts[0]
    assert (c.a.value, c.a.last_updated, c.a.n, c.a.chunk_id) == ("700 bikes", "2025-03-10", 0, other["chunk_id"])
    assert (c.b.value, c.b.last_updated, c.b.n, c.b.chunk_id) == ("650 bikes", "2024-04-02", 1, None)
    assert agreements == []  # a page no block cites agrees with no one in the report
    # the newer side first whichever is the block; an undated side last; two statements no block cites: no pair
    flipped, _ = find_conflicts([SectionBlocks("Fleet", "Fleet", [dict(block, last_updated="2026-01-01")],
                                               [other])])
    assert flipped[0].a.n == 1 and flipped[0].b.n == 0
    undated, _ = find_conflicts([SectionBlocks("Fleet", "Fleet", [dict(block, last_updated=None)], [other])])
    assert undated[0].a.n == 0 and undated[0].b.last_updated is None
    assert find_conflicts([SectionBlocks("Fleet", "Fleet", [], [other, same])]) == ([], [])
    # a page no block cites whose quote names another subject is about something else, whatever its sentences say
    lcp = {"n": 1, "quote": "What counts as good A Largest Contentful Paint of 2.5 seconds or less is good. Between "
           "2.5 and 4 seconds it needs improvement.", "url": "https://a.test/lcp", "last_updated": "2025-01-01"}
    inp = {"n": 0, "quote": "What counts as good An Interaction to Next Paint of 200 milliseconds or less is good. "
           "Between 200 and 500 milliseconds it needs improvement.", "url": "https://a.test/inp",
           "last_updated": "2024-01-01", "chunk_id": "sha256:" + "c" * 64}
    assert find_conflicts([SectionBlocks("LCP", "LCP", [lcp], [inp])])[0] == []
    as_block = find_conflicts([SectionBlocks("LCP", "LCP", [lcp, dict(inp, n=2)])])[0]
    assert as_block  # between two blocks the section chose, the sentences' own names decide, as before


def test_quote_in_chunk_follows_the_evidence_contract() -> None:
    from orchestrator.audit.verify import quote_in_chunk

    chunk = "The lighthouse stands on the rock.\n\nIts lamp was   converted in 1953 and it can be seen."
    assert quote_in_chunk("Its lamp was converted in 1953", chunk)
    assert quote_in_chunk("… lamp was converted in 1953 and it …", chunk)
    assert not quote_in_chunk("Its lamp was converted in 1935", chunk)
    assert not quote_in_chunk("The lighthouse … in 1953", chunk)  # no elision inside a quote
    assert not quote_in_chunk("…", chunk)


@pytest.mark.parametrize("raw", ["harbour\n", "harbour\t", "harbour\u3000", " harbour", "harbour\r\n",
                                 "harbour\u00a0", "Harbour", "har bour", ""])
def test_charter_init_checks_the_id_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    """The id names the starter's file: it is checked byte for byte, never tidied into a valid one first
    (issue 41.7: a trailing newline, a tab or an ideographic space is an error)."""
    from orchestrator.charter_starter import charter_init
    from orchestrator.errors import CharterError

    monkeypatch.chdir(tmp_path)
    with pytest.raises(CharterError) as err:
        charter_init("How deep is the harbour?", ["https://harbour.example/"], charter_id=raw)
    assert "id" in str(err.value)
    assert list(tmp_path.iterdir()) == []  # nothing written, under any name
    r = run("charter", "init", "How deep is the harbour?", "https://harbour.example/", "--id", raw)
    assert r.exit_code == 2 and list(tmp_path.iterdir()) == [], r.output


def test_charter_init_names_the_file_after_the_id_it_wrote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import yaml

    from orchestrator.charter_starter import charter_init

    monkeypatch.chdir(tmp_path)
    done = charter_init("How deep is the harbour?", ["https://harbour.example/"], charter_id="harbour_depth")
    assert done.path == tmp_path / "harbour_depth.yaml"
    assert yaml.safe_load(done.path.read_text(encoding="utf-8"))["id"] == done.charter_id == "harbour_depth"
    # a charter file whose id carries whitespace is refused when loaded too, not tidied
    from orchestrator.charter import load_charter
    from orchestrator.errors import CharterError

    bad = tmp_path / "bad.yaml"
    bad.write_text(done.path.read_text(encoding="utf-8").replace('id: "harbour_depth"', 'id: "harbour_depth\\t"'))
    with pytest.raises(CharterError, match="id"):
        load_charter(bad)


def test_ls_follows_no_symlink_and_reads_no_fifo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`brt ls` lists only regular files of $BRT_HOME/snapshots: a snapshot name that is a link (to /dev/zero, to
    a file elsewhere) or a FIFO is listed as a problem at once, never read or waited on (issue 41.7)."""
    import json
    import os
    import threading

    from orchestrator.audit.catalog import ls

    home = tmp_path / "home"
    snaps = home / "snapshots"
    snaps.mkdir(parents=True)
    monkeypatch.setenv("BRT_HOME", str(home))
    (snaps / "good-1.jsonl").write_text(json.dumps({"type": "manifest", "charter_id": "good", "counts": {"page": 2}})
                                        + "\n", encoding="utf-8")
    secret = tmp_path / "secret.jsonl"
    secret.write_text(json.dumps({"type": "manifest", "charter_id": "secret"}) + "\n", encoding="utf-8")
    (snaps / "zero.jsonl").symlink_to("/dev/zero")
    (snaps / "elsewhere.jsonl").symlink_to(secret)
    os.mkfifo(snaps / "fifo.jsonl")
    (snaps / "good-1.har").symlink_to(secret)
    done: list[object] = []
    thread = threading.Thread(target=lambda: done.append(ls()), daemon=True)
    thread.start()
    thread.join(20)
    assert done, "brt ls hung on a link or a FIFO"
    entries = {s.id: s for s in done[0].snapshots}  # type: ignore[attr-defined]
    assert entries["good-1"].charter_id == "good" and entries["good-1"].pages == 2 and not entries["good-1"].har
    for name in ("zero", "elsewhere", "fifo"):
        assert entries[name].problem and entries[name].charter_id is None, entries[name]
