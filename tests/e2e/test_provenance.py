"""Provenance that cannot be forged by omission (issue 41.1), end to end: a real harvest of the local site (real
Chromium, real LanceDB, the real model), one page added the way the MCP server's ``add_page`` adds it, synthesize,
clean. Then:

- the added page is marked as such in the synthesis record, its Markdown, and every report format, and ``verify``
  names it in its verdict;
- a snapshot edited and resealed so that the HAR's provenance no longer seems to apply (a page's harvest events
  removed or renamed, the page renamed, a harvested page relabelled as added, an added page's mark dropped) fails
  ``verify`` against the genuine HAR, and ``restore`` refuses it;
- ``verify_store`` checks a live store against the HARs it keeps;
- three concurrent restores of one id leave exactly one good store;
- a HAR beside a snapshot that is a symlink is not followed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.test_audit import read_records, run, write_records
from tests.sites.pages import start_site

ROOT = Path(__file__).resolve().parents[2]
ADDED_TEXT = (
    "Harbour ferry timetable. The ferry crossing from the south quay to the island takes 40 minutes, "
    "and a return ticket costs 9 euros for adults. Boats leave every two hours from 7 in the morning."
)
MARK = "added without a harvest"


def _charter(tmp: Path, site: Any, charter_id: str) -> Path:
    data = {
        "id": charter_id,
        "title": "Harbour provenance",
        "allowed_domains": ["127.0.0.1"],
        "seeds": [site.url("index.html")],
        "outputs": {
            "doc": "out/prov.md",
            "sections": [
                {"title": "Lighthouse lamp", "label": "Lamp",
                 "question": "When was the lighthouse lamp converted to electricity?"},
                {"title": "Ferry crossing", "label": "Ferry",
                 "question": "How long does the ferry crossing to the island take?"},
            ],
        },
        "harvest": {"max_pages": 12, "max_depth": 1, "concurrency": 2, "timeout_s": 10},
        "retrieval": {"k": 2},
        "memory": {"use_concept_index": False},
    }
    path = tmp / f"{charter_id}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def prov(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Any:
    """Harvest the local site, add one page as an agent does (``add_page``), synthesize and clean."""
    from orchestrator.charter import load_charter
    from orchestrator.harvest.pages import ingest_page

    tmp = tmp_path_factory.mktemp("prov")
    home = tmp / "brt_home"
    home.mkdir()
    site = start_site(tmp / "site")
    mp = pytest.MonkeyPatch()
    mp.setenv("BRT_HOME", str(home))
    try:
        charter = _charter(tmp, site, "prov_site")
        r = run("harvest", charter)
        assert r.exit_code == 0, r.output
        added_url = site.url("timetable.html")  # never served: the agent "read" it elsewhere
        ingest_page(load_charter(charter), added_url, text=ADDED_TEXT, last_updated="2025-02-01")
        r = run("synthesize", charter, "--json")
        assert r.exit_code == 0, r.output
        synthesis = json.loads(r.stdout)
        snapshot = tmp / "prov.jsonl"
        r = run("clean", charter, "--snapshot", snapshot)
        assert r.exit_code == 0, r.output
        yield type("Prov", (), {"tmp": tmp, "home": home, "charter": charter, "snapshot": snapshot,
                                "synthesis": synthesis, "site": site, "added_url": added_url})
    finally:
        mp.undo()
        site.stop()


@pytest.fixture
def home(prov: Any, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BRT_HOME", str(prov.home))
    return prov.home


def _sources(syn: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(block, source) for every page every block cites."""
    return [(b, src) for s in syn["sections"] for b in s["blocks"] for src in (b, *b.get("also_at", []))]


def _blocks_citing(syn: dict[str, Any], url: str) -> list[dict[str, Any]]:
    return [b for b, src in _sources(syn) if src["url"] == url]


def test_the_added_page_is_marked_in_the_synthesis_and_every_report(prov: Any, home: Path, tmp_path: Path) -> None:
    syn = prov.synthesis
    added = _blocks_citing(syn, prov.added_url)
    harvested = [b for b, src in _sources(syn) if src["url"] != prov.added_url]
    assert added, "the ferry section should cite the added page"
    assert harvested, "the lamp section should cite a harvested page"
    for b in added:
        assert MARK in b["markdown"]
        src = next(s for s in (b, *b["also_at"]) if s["url"] == prov.added_url)
        assert src["origin"] == "add_page"
    assert all(b["origin"] == "harvest" and MARK not in b["markdown"] for b in harvested if not b["also_at"])
    doc = (prov.charter.parent / "out" / "prov.md").read_text(encoding="utf-8")
    assert all(b["markdown"] in doc for b in added)
    # the snapshot's page records say how each page came in
    pages = {r["final_url"]: r for r in read_records(prov.snapshot) if r["type"] == "page"}
    assert pages[prov.added_url]["origin"] == "add_page"
    assert {p["origin"] for u, p in pages.items() if u != prov.added_url} == {"harvest"}
    # every report format marks it
    shown = prov.added_url.split("://", 1)[1]
    md = run("report", prov.snapshot, "--format", "md").stdout
    assert any(shown in line and MARK in line for line in md.splitlines() if "Evidence #" in line)
    assert any(shown in line and MARK in line for line in md.splitlines() if line.startswith("| "))
    html = run("report", prov.snapshot, "--format", "html").stdout
    assert html.count(MARK) >= 2  # the block's citation and the sources table
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(run("report", prov.snapshot, "--format", "csv").stdout)))
    assert {r["origin"] for r in rows if r["url"] == prov.added_url} == {MARK}
    assert all(r["origin"] == "harvest" or r["origin"].startswith("harvest; also at")
               for r in rows if r["url"] != prov.added_url)
    # and verify names it in its verdict, as a warning, not a failure
    r = run("verify", prov.snapshot, "--json")
    report = json.loads(r.stdout)
    assert r.exit_code == 0 and report["ok"], report["failures"]
    assert report["checked"]["added_pages"] == 1 and MARK in report["verdict"]
    assert any(prov.added_url in w["message"] and MARK in w["message"] for w in report["warnings"])


# -- forgeries that try to escape the HAR's provenance by omission ------------------------------------------------


def _lamp_block(records: list[dict[str, Any]], added_url: str) -> dict[str, Any]:
    syn = next(r for r in records if r["type"] == "synthesis")
    return next(b for s in syn["sections"] for b in s["blocks"] if b["url"] != added_url and "1953" in b["quote"])


def _edit_page_text(records: list[dict[str, Any]], url: str, old: str, new: str) -> None:
    """Change ``old`` to ``new`` in the page at ``url``, its chunks (ids recomputed) and every block citing it."""
    from memory_store.chunking import chunk_id

    renamed: dict[str, str] = {}
    for r in records:
        if r["type"] == "chunk" and (r["url"] == url or url in r.get("also_seen_at", [])) and old in r["text"]:
            r["text"] = r["text"].replace(old, new)
            renamed[r["id"]] = chunk_id(r["text"])
            r["id"] = renamed[r["id"]]
    for r in records:  # every page holding a changed chunk (a page with the same text holds it too)
        if r["type"] == "page" and (url in (r["url"], r["final_url"]) or set(r["chunk_ids"]) & set(renamed)):
            r["text"] = r["text"].replace(old, new)
            r["chunk_ids"] = [renamed.get(c, c) for c in r["chunk_ids"]]
    syn = next(r for r in records if r["type"] == "synthesis")
    for _b, src in _sources(syn):
        if src["chunk_id"] in renamed:
            src["quote"] = src["quote"].replace(old, new)
            src["chunk_id"] = renamed[src["chunk_id"]]
    for s in syn["sections"]:
        for b in s["blocks"]:
            b["markdown"] = b["markdown"].replace(old, new)
    for c in syn.get("conflicts") or []:
        for side in (c["a"], c["b"]):
            side["quote"] = side["quote"].replace(old, new)


def _drop_events(records: list[dict[str, Any]], url: str) -> None:
    records[:] = [r for r in records if not (r["type"] in ("harvest_event", "page_added")
                                              and url in (r.get("url"), r.get("final_url")))]


def _rename_events(records: list[dict[str, Any]], url: str) -> None:
    for r in records:
        if r["type"] == "harvest_event" and url in (r.get("url"), r.get("final_url")):
            r["url"] = r["final_url"] = url + "?moved=1"


def _forge_omitted_events(records: list[dict[str, Any]], added_url: str) -> None:
    """The cited page's harvest events removed, its quote changed (1953 -> 1935), everything resealed."""
    url = _lamp_block(records, added_url)["url"]
    _drop_events(records, url)
    _edit_page_text(records, url, "1953", "1935")


def _forge_renamed_events(records: list[dict[str, Any]], added_url: str) -> None:
    """The cited page's harvest events renamed to another URL, its date changed everywhere."""
    block = _lamp_block(records, added_url)
    url = block["url"]
    _rename_events(records, url)
    for r in records:
        if r["type"] in ("page", "chunk") and url in (r.get("final_url"), r.get("url")):
            r["last_updated"] = "2031-01-01"
    block["markdown"] = block["markdown"].replace(f"(last updated: {block['last_updated'] or 'unknown'})",
                                                  "(last updated: 2031-01-01)")
    block["last_updated"] = "2031-01-01"


def _forge_renamed_page(records: list[dict[str, Any]], added_url: str) -> None:
    """The cited page moved to a URL the HAR knows nothing of (with its chunks and citations), its events
    removed, its text edited, and the page and block marked as added by an agent."""
    block = _lamp_block(records, added_url)
    old = block["url"]
    new = old.replace(".html", "-archive.html")
    _drop_events(records, old)
    _edit_page_text(records, old, "1953", "1935")
    for r in records:
        if r["type"] == "page" and old in (r["url"], r["final_url"]):
            r["url"] = r["final_url"] = new
            r["origin"] = "add_page"
        if r["type"] == "chunk":
            r["url"] = new if r["url"] == old else r["url"]
            r["also_seen_at"] = [new if u == old else u for u in r.get("also_seen_at", [])]
    syn = next(r for r in records if r["type"] == "synthesis")
    for b, src in _sources(syn):
        if src["url"] == old:
            src["url"], src["origin"] = new, "add_page"
            b["markdown"] = b["markdown"].replace(old.split("://", 1)[1], new.split("://", 1)[1]) + f" ({MARK})"
    records.append({"type": "page_added", "url": new, "requested_url": new, "at": "2025-01-01T00:00:00Z"})


def _forge_relabelled_page(records: list[dict[str, Any]], added_url: str) -> None:
    """A harvested page relabelled as added by an agent (origin, events, marks), then its text edited."""
    block = _lamp_block(records, added_url)
    url = block["url"]
    _drop_events(records, url)
    records.append({"type": "page_added", "url": url, "requested_url": url, "at": "2025-01-01T00:00:00Z"})
    _edit_page_text(records, url, "1953", "1935")
    for r in records:
        if r["type"] == "page" and url in (r["url"], r["final_url"]):
            r["origin"] = "add_page"
    syn = next(r for r in records if r["type"] == "synthesis")
    for b, src in _sources(syn):
        if src["url"] == url:
            src["origin"] = "add_page"
            b["markdown"] += f" ({MARK})"


def _forge_unmarked_added_page(records: list[dict[str, Any]], added_url: str) -> None:
    """The added page passed off as harvested: its page_added record removed, its origin and marks dropped."""
    _drop_events(records, added_url)
    for r in records:
        if r["type"] == "page" and r["final_url"] == added_url:
            r["origin"] = "harvest"
    syn = next(r for r in records if r["type"] == "synthesis")
    for b, src in _sources(syn):
        if src["url"] == added_url:
            src["origin"] = "harvest"
            b["markdown"] = b["markdown"].replace(f" ({MARK})", "")
    for c in syn.get("conflicts") or []:
        for side in (c["a"], c["b"]):
            side["origin"] = "harvest"


FORGERIES = [_forge_omitted_events, _forge_renamed_events, _forge_renamed_page, _forge_relabelled_page,
             _forge_unmarked_added_page]


@pytest.mark.parametrize("forge", FORGERIES, ids=["omitted-events", "renamed-events", "renamed-page",
                                                  "relabelled-as-added", "added-unmarked"])
def test_resealed_forgeries_fail_against_the_genuine_har_and_are_not_restored(
        prov: Any, home: Path, tmp_path: Path, forge: Any) -> None:
    import shutil

    records = read_records(prov.snapshot)
    forge(records, prov.added_url)
    forged = write_records(records, tmp_path / "forged.jsonl")  # resealed: sha256 and counts recomputed
    shutil.copyfile(prov.snapshot.with_suffix(".har"), forged.with_suffix(".har"))  # the genuine HAR
    assert run("verify", forged, "--no-har").exit_code == 0  # the snapshot alone holds together
    r = run("verify", forged, "--json")
    doc = json.loads(r.stdout)
    assert r.exit_code == 1 and not doc["ok"], doc["verdict"]
    assert "provenance" in {f["check"] for f in doc["failures"]}, doc["failures"]
    r = run("restore", forged, "--id", "forged", "--charter", tmp_path / "forged.yaml")
    assert r.exit_code == 1 and "fails verification" in r.output, r.output
    assert not (home / "memory" / "forged").exists()


# -- the live store's seal, restores, links ----------------------------------------------------------------------


def test_verify_store_checks_a_live_store_against_its_hars(prov: Any, home: Path, tmp_path: Path) -> None:
    from memory_store import Memory
    from orchestrator.audit.verify import verify_store
    from orchestrator.charter import load_charter

    r = run("restore", prov.snapshot, "--id", "prov_live", "--charter", tmp_path / "live.yaml")
    assert r.exit_code == 0, r.output
    charter = load_charter(tmp_path / "live.yaml")
    report = verify_store(charter)
    assert report.ok, report.failures
    assert report.checked["added_pages"] == 1 and MARK in report.verdict()
    # a report of the restored store marks the added page too
    md = run("report", tmp_path / "live.yaml", "--format", "md").stdout
    assert any(MARK in line for line in md.splitlines() if "Evidence #" in line)
    # a page written into the store behind brt's back (no harvest, no add_page) has no provenance
    mem = Memory("prov_live", basepath=home / "memory")
    mem.add(prov.site.url("rogue.html"), "A page that entered the store without any record of it.")
    report = verify_store(charter)
    assert not report.ok
    assert any(f.check == "provenance" and "rogue.html" in f.message for f in report.failures), report.failures
    # and a harvested page whose text changed in the store no longer matches its record
    lamp = next(p for p in mem.pages() if "1953" in p.text)
    mem.add(lamp.url, lamp.text.replace("1953", "1935"), last_updated=lamp.last_updated)
    report = verify_store(charter)
    assert any(f.check == "provenance" and lamp.url in f.message for f in report.failures), report.failures


def test_three_concurrent_restores_of_one_id_leave_one_good_store(prov: Any, home: Path, tmp_path: Path) -> None:
    env = dict(os.environ, BRT_HOME=str(home), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONPATH=str(ROOT))
    procs = [
        subprocess.Popen([sys.executable, "-m", "orchestrator.cli", "restore", str(prov.snapshot), "--id",
                          "prov_race", "--charter", str(tmp_path / f"race{i}.yaml")],
                         cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for i in range(3)
    ]
    results = [(p.wait(timeout=600), p.stdout.read() + p.stderr.read()) for p in procs]  # type: ignore[union-attr]
    codes = sorted(code for code, _ in results)
    assert codes == [0, 1, 1], results
    assert all("exists" in out for code, out in results if code == 1), results
    winner = next(i for i, (code, _) in enumerate(results) if code == 0)
    r = run("status", tmp_path / f"race{winner}.yaml", "--check")
    assert r.exit_code == 0, r.output
    from orchestrator.audit.verify import verify_store
    from orchestrator.charter import load_charter

    assert verify_store(load_charter(tmp_path / f"race{winner}.yaml")).ok


def test_a_har_beside_a_snapshot_that_is_a_symlink_is_not_followed(prov: Any, home: Path, tmp_path: Path) -> None:
    import shutil

    snap = tmp_path / "linked.jsonl"
    shutil.copyfile(prov.snapshot, snap)
    secret = tmp_path / "secret.txt"
    secret.write_text('{"log": {"entries": []}}')  # a file the link points at: must not be read as the HAR
    snap.with_suffix(".har").symlink_to(secret)
    doc = json.loads(run("verify", snap, "--json").stdout)
    assert not doc["ok"] and any("symlink" in f["message"] for f in doc["failures"]), doc["failures"]
    # named on purpose, a HAR may be a link
    genuine = tmp_path / "genuine.har"
    genuine.symlink_to(prov.snapshot.with_suffix(".har"))
    assert run("verify", snap, "--har", genuine).exit_code == 0
    r = run("restore", snap, "--id", "prov_linked", "--charter", tmp_path / "l.yaml")
    assert r.exit_code == 1 and "symlink" in r.output
    r = run("restore", snap, "--id", "prov_linked", "--charter", tmp_path / "l.yaml", "--har", genuine)
    assert r.exit_code == 0, r.output
