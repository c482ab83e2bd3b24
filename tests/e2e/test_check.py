"""``brt check``: a report an agent writes, checked against a real harvest of the local site (real Chromium, real
LanceDB, the real model) and against its snapshot after ``/clean``: the clean report passes (exit 0); each error
agents make is caught on its own line (exit 1); the HTML view through ``brt report --check``; the MCP surface
over the MCP Python SDK client (``check_report`` with the CLI's JSON, output schemas, the section resources,
``synthesize`` with its acceptance verdicts and conflicts quoted, restore -> report with a check)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from orchestrator.cli import cli
from tests.sites.pages import page, start_site

pytestmark = [pytest.mark.browser, pytest.mark.model]

FERRY_DATE = "2024-05-01"
PRICES_DATE = "2023-11-20"
FERRY = ("Boats leave the south quay every two hours. The crossing takes 45 minutes and a return ticket costs "
         "€12 for adults.")
BIKES = "Bicycles travel free of charge, and dogs must stay on a lead on the car deck during the crossing."
PRICES = "Ticket prices rose by 5 percent in 2023 after the fuel surcharge was introduced."
CLOSED = "The harbour office is not open on Sundays, and the slipway is closed during storms."


def run(*args: Any) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args])


def _site(tmp: Path) -> Any:
    site = start_site(tmp / "site")
    dated = '<meta property="article:modified_time" content="{}">'
    site.write("ferry.html", page("Island ferry", FERRY, BIKES, head=dated.format(FERRY_DATE)))
    site.write("prices.html", page("Ticket prices", PRICES, CLOSED, head=dated.format(PRICES_DATE)))
    site.write("notice.html", page(
        "Notice board", "Notices for the harbour community, collected by the harbour office every week. "
        "The crossing takes 55 minutes and a return ticket costs €12 for adults."))
    index = site.root / "index.html"
    links = "".join(f'<li><a href="{n}">{n}</a></li>' for n in ("ferry.html", "prices.html", "notice.html"))
    index.write_text(index.read_text(encoding="utf-8").replace("<nav><ul>", "<nav><ul>" + links, 1), "utf-8")
    return site


def _charter(tmp: Path, site: Any) -> Path:
    data = {
        "id": "check_site",
        "title": "Harbour research",
        "goal": "What does the harbour site say about its ferry, prices and lighthouse?",
        "allowed_domains": ["127.0.0.1"],
        "seeds": [site.url("index.html")],
        "acceptance": ["The ferry crossing time is cited", "The price of bitcoin is cited"],
        "outputs": {"doc": "out/research.md", "sections": [
            {"title": "Ferry crossing", "label": "Ferry",
             "question": "How long does the crossing take, and what does a return ticket cost?"},
            {"title": "Lighthouse lamp", "label": "Lamp",
             "question": "When was the lighthouse lamp converted to electricity?"},
            # a question the site does not touch (a "how much" question beside the site's prices is a known miss of
            # the evidence scorer, held as a strict xfail in tests/integration/test_evidence.py)
            {"title": "Cryptocurrency", "label": "Crypto", "question": "Who created bitcoin, and in which year?"},
        ]},
        "harvest": {"max_pages": 20, "max_depth": 1, "concurrency": 2, "timeout_s": 10},
        "retrieval": {"k": 3},
    }
    path = tmp / "charter.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


class Research:
    """The module's harvest: the charter, its site, synthesis, snapshot (store kept) and the clean report."""

    def __init__(self, tmp: Path, home: Path, charter: Path, site: Any, synthesis: dict, snapshot: Path):
        self.tmp, self.home, self.charter, self.site, self.synthesis, self.snapshot = (
            tmp, home, charter, site, synthesis, snapshot)
        self.lines = clean_lines(self)

    def url(self, name: str) -> str:
        return self.site.url(name)

    def report(self, name: str, replace: dict[str, str] | None = None) -> tuple[Path, dict[str, int]]:
        """The clean report with the lines named in ``replace`` rewritten; its path and key -> line number."""
        lines = dict(self.lines)
        lines.update(replace or {})
        text = ["# Harbour research", ""]
        where = {}
        notes = []
        for key, line in lines.items():
            if key.startswith("note"):
                notes.append(line)
                continue
            where[key] = len(text) + 1
            text.append(line)
        path = self.tmp / f"{name}.md"
        path.write_text("\n".join([*text, "", *notes]) + "\n", encoding="utf-8")
        return path, where


def clean_lines(r: Research) -> dict[str, str]:
    """The clean report, line by line (key -> Markdown): the synthesis's own evidence lines and gap, then claims
    in the citation styles agents use."""
    lines: dict[str, str] = {}
    lamp = None
    for s in r.synthesis["sections"]:
        for b in s["blocks"]:
            lines[f"evidence {s['label']} {b['n']}"] = b["markdown"]
            lamp = lamp or (b if s["label"] == "Lamp" else None)
        for i, g in enumerate(s["gaps"]):
            lines[f"gap {s['label']} {i}"] = g["markdown"]
    assert lamp is not None, r.synthesis["sections"]
    ferry, prices = r.url("ferry.html"), r.url("prices.html")
    lines.update({
        "intro": "Below is a summary of what the harbour pages say.",
        "paraphrase": "Boats leave from the south quay every two hours, and the crossing takes 45 minutes "
                      f"([Island ferry]({ferry}), last updated: {FERRY_DATE}).",
        "quote": 'The ferry page says "Bicycles travel free of charge" on the crossing [^1].',
        "prices": f"In 2023 ticket prices rose by 5 percent ({prices}, last updated {PRICES_DATE}).",
        # the page's words replaced by others of the same meaning ("stay" / "remain", "rose" / "increased")
        "reworded": f"Dogs must remain on a lead on the car deck during the crossing ([Island ferry]({ferry}), "
                    f"last updated: {FERRY_DATE}).",
        "reworded prices": f"Ticket prices increased by 5 percent in 2023 ({prices}, last updated {PRICES_DATE}).",
        "closed": f'The harbour office is not open on Sundays — {prices.split("://")[1]} '
                  f"(last updated: {PRICES_DATE}).",
        "lamp": f"The lighthouse lamp was converted to electricity in 1953 [Lamp Evidence #{lamp['n']}].",
        "marked": "- The site says nothing about the price of bitcoin (unsupported).",
        "note 1": f"[^1]: [Island ferry]({ferry}) (last updated: {FERRY_DATE})",
    })
    return lines


@pytest.fixture(scope="module")
def research(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Any:
    tmp = tmp_path_factory.mktemp("check")
    home = tmp / "brt_home"
    home.mkdir()
    site = _site(tmp)
    mp = pytest.MonkeyPatch()
    mp.setenv("BRT_HOME", str(home))
    try:
        charter = _charter(tmp, site)
        assert run("harvest", charter).exit_code == 0
        r = run("synthesize", charter, "--json")
        assert r.exit_code == 0, r.output
        snapshot = tmp / "research.jsonl"
        assert run("clean", charter, "--keep", "--snapshot", snapshot).exit_code == 0
        yield Research(tmp, home, charter, site, json.loads(r.stdout), snapshot)
    finally:
        mp.undo()
        site.stop()


@pytest.fixture
def home(research: Research, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BRT_HOME", str(research.home))
    return research.home


def check(report: Path, *source: Any) -> tuple[int, dict[str, Any]]:
    r = run("check", report, *source, "--json")
    assert r.exit_code in (0, 1), r.output
    return r.exit_code, json.loads(r.stdout)


def at(doc: dict[str, Any], line: int) -> dict[str, Any]:
    return next(c for c in doc["claims"] if c["line"] == line)


# -- the CLI ---------------------------------------------------------------------------------------------------


def test_the_clean_report_passes(research: Research, home: Path) -> None:
    report, where = research.report("clean")
    code, doc = check(report, "--charter", research.charter)
    assert code == 0 and doc["ok"], [c for c in doc["claims"] if not c["ok"]]
    assert not any(c["line"] == where["intro"] for c in doc["claims"])  # the framing sentence is no claim
    verdicts = {key: at(doc, line)["verdict"] for key, line in where.items()
                if not key.startswith("gap") and key != "intro"}
    assert verdicts["paraphrase"] == verdicts["prices"] == verdicts["closed"] == "supported"
    assert verdicts["reworded"] == verdicts["reworded prices"] == "supported"
    assert verdicts["lamp"] in ("supported", "weakly supported")
    assert verdicts["quote"] == "quoted"
    assert verdicts["marked"] == "marked unsupported"
    assert all(v == "quoted" for k, v in verdicts.items() if k.startswith("evidence"))
    weak = [c["line"] for c in doc["claims"] if c["verdict"] == "weakly supported"]
    assert weak in ([], [where["lamp"]])  # only the lamp's claim, which words the block its own way, may be weak
    assert doc["quote_accuracy"] == 1.0
    assert doc["supported_rate"] == 1.0 if not weak else doc["supported_rate"] < 1.0
    # neither the gap line nor the introduction is a claim
    assert doc["totals"]["gaps"] == 1 and doc["totals"]["claims"] == len(where) - 2
    assert not any(c["line"] == where["intro"] for c in doc["claims"])
    assert doc["citation_rate"] == round((len(where) - 3) / (len(where) - 2), 4)  # all but the marked claim
    dashed = at(doc, where["closed"])  # "— host/path (last updated: …)", as evidence lines cite
    assert dashed["citations"][0]["page_url"] == research.url("prices.html")
    assert "not open on Sundays" in dashed["evidence"]["passage"] and dashed["evidence"]["score"] >= 0.55
    quoted = at(doc, where["quote"])
    assert quoted["evidence"]["url"] == research.url("ferry.html") and quoted["evidence"]["chunk_id"]
    text = run("check", report, "--charter", research.charter)
    assert text.exit_code == 0 and text.stdout.splitlines()[-1].startswith("OK clean.md")


def altered_evidence_line(r: Research, label: str, n: int) -> str:
    """The evidence line of block ``n`` of section ``label`` with one word of its quote changed."""
    block = next(b for s in r.synthesis["sections"] if s["label"] == label for b in s["blocks"] if b["n"] == n)
    word = re.findall(r"[A-Za-z]{5,}", block["quote"])[0]
    altered = block["quote"].replace(word, word[::-1] if word[::-1] != word else word + "s", 1)
    line = r.lines[f"evidence {label} {n}"]
    assert block["quote"] in line
    return line.replace(block["quote"], altered, 1)


#: Each error agents make: (the line it rewrites, the new line, the verdict, the problem).
SEEDED: dict[str, tuple[str, Callable[[Research], str], str, str]] = {
    "altered quote": ("quote", lambda r: 'The ferry page says "Bicycles travel free of cost" on the crossing [^1].',
                      "quote not verbatim", "quote_not_verbatim"),
    "altered quote in an evidence line": (
        "evidence Ferry 1", lambda r: altered_evidence_line(r, "Ferry", 1),
        "quote not verbatim", "quote_not_verbatim"),
    "quote moved to another page": (
        "quote", lambda r: f'The prices page says "Bicycles travel free of charge" ({r.url("prices.html")}, '
                           f"last updated: {PRICES_DATE}).", "quote not verbatim", "quote_elsewhere"),
    "wrong date": ("paraphrase", lambda r: r.lines["paraphrase"].replace(FERRY_DATE, "2024-06-01"),
                   "wrong date", "wrong_date"),
    "invented URL": ("prices", lambda r: r.lines["prices"].replace("prices.html", "fares-2023.html"),
                     "citation unresolved", "not_harvested"),
    "URL off the allowlist": ("prices", lambda r: "In 2023 ticket prices rose by 5 percent "
                              "(https://ferries.example.com/fares, last updated 2023-11-20).",
                              "citation unresolved", "off_allowlist"),
    "unknown evidence reference": ("lamp", lambda r: "The lighthouse lamp was converted to electricity in 1953 "
                                   "[Lamp Evidence #9].", "citation unresolved", "unknown_reference"),
    "uncited claim": ("paraphrase", lambda r: "Boats leave from the south quay every two hours.", "uncited",
                      "uncited"),
    "a claim citing only a number no list defines": (
        "prices", lambda r: "In 2023 ticket prices rose by 5 percent.[3]", "citation unresolved", "uncited"),
    "reversed: a number": ("paraphrase", lambda r: r.lines["paraphrase"].replace("45 minutes", "55 minutes"),
                           "not found there", "not_found"),
    "reversed: direction": ("prices", lambda r: r.lines["prices"].replace("rose", "fell"), "not found there",
                            "not_found"),
    "reversed: negation dropped": (
        "prices", lambda r: f"The harbour office is open on Sundays ({r.url('prices.html')}, last updated "
                            f"{PRICES_DATE}).", "not found there", "not_found"),
    "reversed: roles swapped": (
        "closed", lambda r: f'The slipway is not open on Sundays, and the harbour office is closed during storms '
                            f'— {r.url("prices.html").split("://")[1]} (last updated: {PRICES_DATE}).',
        "not found there", "not_found"),
    "reversed: an antonym": (
        "paraphrase", lambda r: r.lines["paraphrase"].replace("south quay", "north quay"), "not found there",
        "not_found"),
    "an elision that drops a negation": (
        "quote", lambda r: f'The prices page says "The harbour office is … open on Sundays" ({r.url("prices.html")}, '
                           f"last updated: {PRICES_DATE}).", "quote not verbatim", "elision_changes_quote"),
    "a short quote changed": (
        "quote", lambda r: 'The ferry page says bicycles travel "free of cost" [^1].', "quote not verbatim",
        "quote_not_verbatim"),
    "claim cited to a page that does not state it": (
        "paraphrase", lambda r: r.lines["paraphrase"].replace("ferry.html", "prices.html").replace(
            FERRY_DATE, PRICES_DATE), "not found there", "not_found"),
}


@pytest.mark.parametrize("kind", list(SEEDED))
def test_each_seeded_error_is_caught_on_its_line(research: Research, home: Path, kind: str) -> None:
    key, new, verdict, problem = SEEDED[kind]
    report, where = research.report("seeded", {key: new(research)})
    code, doc = check(report, "--charter", research.charter)
    assert code == 1 and not doc["ok"]
    claim = at(doc, where[key])
    assert claim["verdict"] == verdict and not claim["ok"], claim
    assert problem in {p["kind"] for p in claim["problems"] if p["failing"]}, claim["problems"]
    assert [c["line"] for c in doc["claims"] if not c["ok"]] == [where[key]]  # nothing else flagged


def test_a_sources_list_is_checked_url_by_url(research: Research, home: Path) -> None:
    """Every URL a report lists is checked, cited or not: an invented one in a Sources list fails its line."""
    sources = {"sources": "## Sources", "source 1": f"- <{research.url('ferry.html')}>",
               "source 2": f"- [Fares 2023]({research.url('fares-2023.html')}) (last updated: 2023-11-20)",
               "source 3": "- https://ferries.example.com/timetable"}
    report, where = research.report("sources", sources)
    code, doc = check(report, "--charter", research.charter)
    assert code == 1
    assert at(doc, where["source 1"])["ok"] and at(doc, where["source 1"])["kind"] == "source"
    assert {p["kind"] for p in at(doc, where["source 2"])["problems"]} >= {"not_harvested"}
    assert {p["kind"] for p in at(doc, where["source 3"])["problems"]} >= {"off_allowlist"}
    assert sorted(c["line"] for c in doc["claims"] if not c["ok"]) == [where["source 2"], where["source 3"]]


def test_urls_a_browser_reads_differently_never_name_a_stored_page(research: Research, home: Path) -> None:
    """Security issue 41, class 3: a citation resolves only as an http(s) URL read the way the allowlist reads it."""
    host = research.url("prices.html").split("://")[1]
    for url in (f"javascript://{host}", f"file://{host}", f"ftp://{host}", f"ws://{host}",
                f"data:text/html,{host}", f"http://other.example\\@{host}", f"http://user:pw@{host}"):
        report, where = research.report("bad-url", {"prices": f"In 2023 ticket prices rose by 5 percent ({url}, "
                                                              f"last updated {PRICES_DATE})."})
        report.write_text(report.read_text().replace(f"({url},", f"([prices]({url}),"), encoding="utf-8")
        code, doc = check(report, "--charter", research.charter)
        claim = at(doc, where["prices"])
        assert code == 1 and not claim["ok"] and not any(c["resolved"] for c in claim["citations"]), (url, claim)


def test_an_edited_snapshot_is_refused(research: Research, home: Path, tmp_path: Path) -> None:
    """Security issue 41, class 1: the snapshot is verified first; an edited one (a quote made up in a chunk) is
    refused, not used to call the quote verbatim. The same snapshot passes with its HAR, and the check says so."""
    report, _ = research.report("clean-snap")
    code, doc = check(report, "--snapshot", research.snapshot)
    assert code == 0 and doc["verified"].startswith("OK ")
    forged = tmp_path / "forged.jsonl"
    text = research.snapshot.read_text(encoding="utf-8")
    assert "Bicycles travel free of charge" in text
    forged.write_text(text.replace("Bicycles travel free of charge", "Bicycles travel free of cost"), "utf-8")
    (tmp_path / "forged.har").write_bytes(research.snapshot.with_suffix(".har").read_bytes())
    r = run("check", report, "--snapshot", forged, "--json")
    assert r.exit_code == 1 and "fails verification" in r.output
    assert json.loads(r.stdout)["ok"] is False and json.loads(r.stdout)["error_type"] == "SourceRefused"
    # resealed, with the edited page's harvest events left out (provenance by omission): the snapshot alone holds
    # together, and security's verify refuses it against the genuine HAR, so the check does too
    resealed = _forged_by_omission(research, tmp_path / "resealed.jsonl")
    assert run("verify", resealed, "--no-har").exit_code == 0
    r = run("check", report, "--snapshot", resealed, "--json")
    assert r.exit_code == 1 and "fails verification" in r.output
    assert json.loads(r.stdout)["error_type"] == "SourceRefused"
    from orchestrator.audit.check import check_report
    from orchestrator.audit.evidence_source import SourceRefused

    with pytest.raises(SourceRefused) as refused:
        check_report(report, snapshot=resealed)
    assert any(f.startswith("provenance:") and "ferry.html" in f for f in refused.value.failures), \
        refused.value.failures


def _forged_by_omission(research: Research, dest: Path) -> Path:
    """The research snapshot with the ferry page's harvest events removed and its text edited ("free of charge"
    -> "free of cost", in the page, its chunks and the blocks quoting them), resealed, beside the genuine HAR."""
    import shutil

    from tests.e2e.test_audit import read_records, write_records
    from tests.e2e.test_provenance import _drop_events, _edit_page_text

    records = read_records(research.snapshot)
    ferry = research.site.url("ferry.html")
    _drop_events(records, ferry)
    _edit_page_text(records, ferry, "free of charge", "free of cost")
    write_records(records, dest)
    shutil.copyfile(research.snapshot.with_suffix(".har"), dest.with_suffix(".har"))
    return dest


def _store_without_provenance(research: Research, store_id: str, dest: Path) -> Path:
    """A live store restored from the research snapshot (with its HAR), then a page written into it behind brt's
    back (no harvest, no ``add_page``: no provenance record proves it); its charter file."""
    from memory_store import Memory

    charter = dest / f"{store_id}.yaml"
    r = run("restore", research.snapshot, "--id", store_id, "--charter", charter)
    assert r.exit_code == 0, r.output
    mem = Memory(store_id, basepath=research.home / "memory")
    mem.add(research.url("rogue.html"), "Boats leave the south quay every two hours. The crossing takes 45 minutes "
            "and a return ticket costs €12 for adults, says a page no harvest fetched.")
    return charter


def test_a_store_without_provenance_is_refused(research: Research, home: Path, tmp_path: Path) -> None:
    """Security issue 41: ``--charter`` checks against the live store, verified first against the HARs it keeps
    (``verify_store``), not only for consistency: a page no harvest or ``add_page`` recorded is refused, although
    the store's own check passes (its chunk ids are the hashes of their text)."""
    report, _ = research.report("clean-store")
    code, doc = check(report, "--charter", research.charter)
    assert code == 0 and doc["verified"].startswith("OK ") and "provenance records" in doc["verified"]
    charter = _store_without_provenance(research, "check_rogue", tmp_path)
    assert run("status", charter, "--check").exit_code == 0  # consistent: the store check alone passes it
    r = run("check", report, "--charter", charter, "--json")
    assert r.exit_code == 1 and "fails verification" in r.output, r.output
    assert json.loads(r.stdout)["ok"] is False and json.loads(r.stdout)["error_type"] == "SourceRefused"
    from orchestrator.audit.check import check_report
    from orchestrator.audit.evidence_source import SourceRefused
    from orchestrator.charter import load_charter

    with pytest.raises(SourceRefused) as refused:
        check_report(report, charter=load_charter(charter))
    assert any(f.startswith("provenance:") and "rogue.html" in f for f in refused.value.failures), \
        refused.value.failures


def test_the_check_after_clean_uses_the_snapshot(research: Research, home: Path) -> None:
    report, _ = research.report("clean")
    store_code, from_store = check(report, "--charter", research.charter)
    code, doc = check(report, "--snapshot", research.snapshot)
    assert code == store_code == 0 and doc["checked_against"] == "snapshot"
    assert [(c["line"], c["verdict"]) for c in doc["claims"]] == [(c["line"], c["verdict"]) for c in
                                                                  from_store["claims"]]
    bad, where = research.report("seeded-snapshot", {"paraphrase": research.lines["paraphrase"].replace(
        FERRY_DATE, "2020-02-02")})
    code, doc = check(bad, "--snapshot", research.snapshot)
    assert code == 1 and at(doc, where["paraphrase"])["verdict"] == "wrong date"


def test_bad_input(research: Research, home: Path, tmp_path: Path) -> None:
    report, _ = research.report("clean")
    assert run("check", report).exit_code == 2  # neither --charter nor --snapshot
    assert run("check", tmp_path / "missing.md", "--charter", research.charter).exit_code == 2
    not_snapshot = tmp_path / "x.jsonl"
    not_snapshot.write_text("not json\n")
    r = run("check", report, "--snapshot", not_snapshot)
    assert r.exit_code == 1 and "not a brt snapshot" in r.output
    other = tmp_path / "other.yaml"
    other.write_text(research.charter.read_text().replace("id: check_site", "id: never_harvested"))
    r = run("check", report, "--charter", other)
    assert r.exit_code == 1 and "no store" in r.output


def test_the_html_view_through_brt_report(research: Research, home: Path) -> None:
    report, where = research.report("seeded-html", {
        "quote": 'The ferry page says "Bicycles travel <b>free</b> of cost" on the crossing [^1].'})
    out = research.tmp / "check.html"
    r = run("report", research.snapshot, "--check", report, "--out", out)
    assert r.exit_code == 1 and "FAILED seeded-html.md" in r.output  # the view is written; the check failed
    html = out.read_text(encoding="utf-8")
    assert "Check of seeded-html.md" in html and "FAILED" in html and "default-src 'none'" in html
    assert f'id="line-{where["quote"]}"' in html and "quote not verbatim" in html
    assert "<b>free</b>" not in html and "&lt;b&gt;free&lt;/b&gt;" in html  # the report's text is escaped
    assert f'href="{research.url("ferry.html")}"' in html
    assert run("report", research.charter, "--check", report, "--format", "csv").exit_code == 2
    clean, _ = research.report("clean-html")
    assert run("report", research.snapshot, "--check", clean, "--out", out).exit_code == 0  # exit 1: failed


# -- MCP -------------------------------------------------------------------------------------------------------


def test_mcp_check_report_resources_synthesize_and_restore_report(research: Research, home: Path,
                                                                  tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import stdio_client

    from tests.e2e.test_mcp import doc_of, error_text, server_params
    from tests.unit.test_mcp_quoting import INJECTION, assert_quoted

    def unquoted(text: str) -> str:  # one plain token stays bare; anything else is one complete quote
        return assert_quoted(text) if text.startswith("<<<") else text

    clean, _ = research.report("mcp-clean")
    cli_doc = check(clean, "--charter", research.charter)[1]
    hostile, where = research.report("mcp-hostile", {
        "marked": f'- The notice says "{INJECTION}" (unsupported).', "quote": SEEDED["altered quote"][1](research)})
    long_report = tmp_path / "long.md"  # 120 claims, half of them failing
    body = [research.lines["paraphrase"], SEEDED["altered quote"][1](research)] * 60
    long_report.write_text("# Long\n\n" + "\n\n".join(body) + "\n\n" + research.lines["note 1"] + "\n", "utf-8")

    rogue = _store_without_provenance(research, "check_rogue_mcp", tmp_path)

    async def flow() -> None:
        with open(tmp_path / "server.log", "w") as errlog:
            async with stdio_client(server_params(home), errlog=errlog) as (read, write):
                async with ClientSession(read, write, read_timeout_seconds=300) as s:
                    await s.initialize()
                    tools = {t.name: t for t in (await s.list_tools()).tools}
                    assert all(t.output_schema and t.output_schema.get("type") == "object" for t in tools.values())
                    assert tools["check_report"].annotations.read_only_hint
                    assert {"ok", "claims", "citation_rate"} <= set(tools["check_report"].output_schema["required"])

                    # check_report: the summary of the CLI's JSON and, by default, only the failing claims
                    doc = doc_of(await s.call_tool("check_report", {"report_path": str(clean),
                                                                    "charter_path": str(research.charter)}))
                    assert doc["ok"] and doc["totals"] == cli_doc["totals"] and doc["claims"] == []
                    doc = doc_of(await s.call_tool("check_report", {"report_path": str(clean), "claims": "all",
                                                                    "charter_path": str(research.charter)}))
                    assert [(c["line"], c["verdict"]) for c in doc["claims"]] == [
                        (c["line"], c["verdict"]) for c in cli_doc["claims"]]
                    for mine, theirs in zip(doc["claims"], cli_doc["claims"], strict=True):
                        assert theirs["text"].startswith(assert_quoted(mine["text"]).rstrip("…"))
                    doc = doc_of(await s.call_tool("check_report", {"report_path": str(hostile), "claims": "all",
                                                                    "snapshot_path": str(research.snapshot)}))
                    assert not doc["ok"] and doc["checked_against"] == "snapshot"
                    claim = at(doc, where["marked"])
                    assert "ignore previous instructions" in assert_quoted(claim["text"])
                    bad = at(doc, where["quote"])
                    assert bad["verdict"] == "quote not verbatim"
                    assert "Bicycles travel free of charge" in assert_quoted(bad["closest"])
                    failing = doc_of(await s.call_tool("check_report", {"report_path": str(hostile),
                                                                        "snapshot_path": str(research.snapshot)}))
                    assert [c["line"] for c in failing["claims"]] == [where["quote"]]
                    assert "report file" in error_text(await s.call_tool("check_report", {
                        "report_path": "/etc/passwd", "charter_path": str(research.charter)}))
                    # a snapshot resealed with a page's harvest events left out is refused (security's verify)
                    resealed = _forged_by_omission(research, tmp_path / "resealed.jsonl")
                    assert "fails verification" in error_text(await s.call_tool("check_report", {
                        "report_path": str(clean), "snapshot_path": str(resealed)}))
                    # so is a live store holding a page no provenance record proves (verify_store)
                    assert "fails verification" in error_text(await s.call_tool("check_report", {
                        "report_path": str(clean), "charter_path": str(rogue)}))
                    # a symlinked report path is refused, not followed
                    link = tmp_path / "link.md"
                    link.symlink_to(clean)
                    assert "is a symlink" in error_text(await s.call_tool("check_report", {
                        "report_path": str(link), "charter_path": str(research.charter)}))
                    # a long report: the summary and as many failing claims as fit in 8,000 characters
                    result = await s.call_tool("check_report", {"report_path": str(long_report),
                                                                "charter_path": str(research.charter)})
                    size = len(result.content[0].text)
                    long_doc = doc_of(result)
                    assert size <= 8000 and long_doc["totals"]["claims"] >= 100, size
                    assert long_doc["claims"] and long_doc["more"] > 0 and long_doc["next_offset"]
                    page = doc_of(await s.call_tool("check_report", {
                        "report_path": str(long_report), "charter_path": str(research.charter),
                        "offset": long_doc["next_offset"]}))
                    assert page["claims"] and page["claims"][0]["line"] > long_doc["claims"][-1]["line"]
                    assert "charter_path" in error_text(await s.call_tool("check_report", {"report_path": str(clean)}))

                    # the evidence as resources, one per section
                    listed = {str(r.uri): r for r in (await s.list_resources()).resources}
                    sections = research.synthesis["sections"]
                    uris = [f"brt://charters/check_site/sections/{n}" for n in range(1, len(sections) + 1)]
                    assert set(uris) <= set(listed) and listed[uris[0]].mime_type == "application/json"
                    for uri, section in zip(uris, sections, strict=True):
                        read = json.loads((await s.read_resource(uri)).contents[0].text)
                        # built by untrusted.agent_document like every tool's result: a title of more than one
                        # plain token comes back quoted, as in the synthesize tool's result
                        assert unquoted(read["title"]) == section["title"]
                        assert len(read["blocks"]) == len(section["blocks"])
                        for mine, theirs in zip(read["blocks"], section["blocks"], strict=True):
                            assert assert_quoted(mine["quote"]) == theirs["quote"] and mine["citation"]
                    with pytest.raises(Exception, match="sections 1 to"):
                        await s.read_resource("brt://charters/check_site/sections/9")
                    with pytest.raises(Exception, match="at most 4096"):  # bounded like a tool's argument
                        await s.read_resource("brt://charters/check_site/sections/" + "1" * 5000)
                    with pytest.raises(Exception, match="no such resource"):
                        await s.read_resource("brt://charters/check_site/sections/" + "9" * 40)

                    # synthesize: acceptance verdicts, conflicts and agreements, page text quoted
                    synth = doc_of(await s.call_tool("synthesize", {"charter_path": str(research.charter)}))
                    # the charter's criteria come back quoted (untrusted.agent_document quotes every string
                    # brt does not vouch for)
                    assert [assert_quoted(v["criterion"]) for v in synth["acceptance"]] == [
                        "The ferry crossing time is cited", "The price of bitcoin is cited"]
                    assert synth["acceptance_summary"] == research.synthesis["acceptance_summary"]
                    assert synth["conflicts"], "the notice page states 55 minutes, the ferry page 45"
                    for c in synth["conflicts"]:
                        for side in ("a", "b"):
                            assert_quoted(c[side]["quote"]) and assert_quoted(c[side]["value"])
                        assert all(assert_quoted(w) for w in c["about"])

                    # restore the snapshot, then the HTML view of a check of the restored charter's report
                    restored = doc_of(await s.call_tool("restore", {"snapshot_path": str(research.snapshot),
                                                                    "charter_id": "check_again"}))
                    charter = restored["charter_path"]
                    written = doc_of(await s.call_tool("report", {"source_path": charter, "check_path": str(hostile)}))
                    assert written["path"] == str(home / "reports" / "check_again-check.html")
                    assert written["check"]["ok"] is False and written["origin"] == "store"
                    assert "ignore previous instructions" not in Path(written["path"]).read_text().split("<main>")[0]
                    planted = home / "reports" / "check_site.md"
                    planted.write_text("a file brt did not write")
                    refused = error_text(await s.call_tool("report", {"source_path": str(research.charter),
                                                                      "format": "md"}))
                    assert "did not write" in refused and planted.read_text() == "a file brt did not write"

    anyio.run(flow)
