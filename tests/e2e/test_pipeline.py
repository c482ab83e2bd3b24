"""End to end through the CLI (in-process, so the model loads once): harvest -> search -> synthesize -> clean,
against the local ``pages`` site, with real Chromium, a real LanceDB store and the real model; and ``brt demo``."""

from __future__ import annotations

import hashlib
import json
import re

import pytest
from click.testing import CliRunner

from orchestrator.cli import cli

EVIDENCE_RE = re.compile(
    r'^\[(?P<label>.+?) Evidence #(?P<n>\d+)\] "(?P<quote>.+)" — (?P<url>\S+) '
    r"\(last updated: (?P<date>\d{4}-\d{2}-\d{2}|unknown)\)"
    r"(?:; also at \S+ \(last updated: (?:\d{4}-\d{2}-\d{2}|unknown)\))*$"  # merged sources (issue 10)
)
GAP_RE = re.compile(
    r'^\[(?P<label>.+?) Gap\] No evidence met the threshold for "(?P<q>.+)" '
    r"\(searched (?P<c>\d+) chunks from (?P<p>\d+) pages\)\.$"
)


SECTIONS = [
    {
        "title": "Lighthouse lamp",
        "label": "Lamp",
        "question": "When was the lighthouse lamp converted to electricity?",
    },
    {"title": "Tides", "question": "How high do spring tides reach in the harbour?"},
    {
        "title": "Cryptocurrency",
        "label": "Crypto",
        "question": "What is the current price of bitcoin in euros?",
    },
]


def write_charter(make_charter, site, *, persist=False, charter_id="e2e_site"):
    """The charter file of these runs (``make_charter`` writes it as YAML)."""
    return make_charter(
        site,
        path="charter.yaml",
        charter_id=charter_id,
        title="Harbour research",
        goal="What does the harbour site say about its lighthouse and tides?",
        outputs={"doc": "out/report.md"},
        sections=SECTIONS,
        memory={"persist": persist},
        max_pages=20,
    ).source


def run(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    return result


@pytest.mark.browser
def test_harvest_search_synthesize_clean(local_site, make_charter, brt_home, embedder, tmp_path):
    site = local_site()
    charter = write_charter(make_charter, site)

    r = run("harvest", charter)
    assert r.exit_code == 0, r.output
    assert "stored" in r.output

    r = run("search", charter, "lamp converted to electricity", "-k", "3", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["query"] == "lamp converted to electricity"
    assert 1 <= len(doc["hits"]) <= 3
    top = doc["hits"][0]
    assert set(top) >= {"id", "url", "last_updated", "score", "snippet", "text"}
    assert "1953" in top["text"] and top["id"].startswith("sha256:")
    # the hits read the way their scores do: best first by the printed score (MMR chose them, not their order)
    for query in ("lamp converted to electricity", "tides", "harbour"):
        scores = [h["score"] for h in json.loads(run("search", charter, query, "-k", "8", "--json").stdout)["hits"]]
        assert scores == sorted(scores, reverse=True), (query, scores)
        text = run("search", charter, query, "-k", "8").stdout
        printed = [float(m) for m in re.findall(r"^\d+\. (-?\d+\.\d{3}) ", text, re.MULTILINE)]
        assert printed == sorted(printed, reverse=True) and len(printed) == len(scores), (query, printed)

    r = run("synthesize", charter)
    assert r.exit_code == 0, r.output
    md = (tmp_path / "out/report.md").read_text()
    data = json.loads((tmp_path / "out/report.json").read_text())
    lines = md.splitlines()
    lamp = [m for m in map(EVIDENCE_RE.match, lines) if m and m["label"] == "Lamp"]
    assert lamp, md
    assert [int(m["n"]) for m in lamp] == list(range(1, len(lamp) + 1))
    assert any("1953" in m["quote"] for m in lamp)
    assert all(m["url"].startswith(f"127.0.0.1:{site.port}/") for m in lamp)
    assert any(m["label"] == "Tides" for m in map(EVIDENCE_RE.match, lines) if m)
    gaps = [m for m in map(GAP_RE.match, lines) if m]
    assert [g["label"] for g in gaps] == ["Crypto"], md
    crypto = next(s for s in data["sections"] if s["label"] == "Crypto")
    assert crypto["blocks"] == [] and len(crypto["gaps"]) == 1
    assert int(gaps[0]["c"]) > 0 and int(gaps[0]["p"]) > 0
    # Never padded: every block is at or above the threshold.
    assert all(b["score"] >= data["min_score"] for s in data["sections"] for b in s["blocks"])

    snap = tmp_path / "audit.jsonl"
    r = run("clean", charter, "--snapshot", snap)
    assert r.exit_code == 0, r.output
    raw = snap.read_bytes()
    first, rest = raw.split(b"\n", 1)
    manifest = json.loads(first)
    assert manifest["type"] == "manifest"
    assert manifest["sha256"] == hashlib.sha256(rest).hexdigest()
    records = [json.loads(line) for line in rest.splitlines()]
    counts = {}
    for rec in records:
        counts[rec["type"]] = counts.get(rec["type"], 0) + 1
    assert counts == manifest["counts"]
    chunks = {rec["id"]: rec for rec in records if rec["type"] == "chunk"}
    pages = [rec for rec in records if rec["type"] == "page"]
    assert counts["chunk"] == len(chunks) and counts["page"] == len(pages) >= 5
    assert all(len(c["embedding"]) == manifest["embedding_dim"] for c in chunks.values())
    assert counts["harvest_event"] >= counts["page"]
    # Every quote is a verbatim span of the chunk it cites (whitespace collapsed, elisions marked with …).
    for section in data["sections"]:
        for b in section["blocks"]:
            quote = b["quote"].strip("… ").strip()
            assert quote in " ".join(chunks[b["chunk_id"]]["text"].split()), b
    assert snap.with_suffix(".har").is_file()
    assert json.loads(snap.with_suffix(".har").read_text())["log"]["entries"]
    assert not (brt_home / "memory" / "e2e_site").exists()

    r = run("search", charter, "anything")
    assert r.exit_code == 1 and "brt harvest" in r.output


@pytest.mark.browser
def test_persist_keeps_store_and_status(local_site, make_charter, brt_home, embedder, tmp_path):
    site = local_site()
    charter = write_charter(make_charter, site, persist=True, charter_id="e2e_persist")
    assert run("harvest", charter).exit_code == 0
    r = run("status", charter, "--json")
    assert r.exit_code == 0, r.output
    status = json.loads(r.stdout)
    assert status["exists"] and status["pages"] >= 5 and status["chunks"] >= 5
    assert status["embedding_model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert status["embedding_precision"] == "fp32"
    assert status["last_harvest"]["outcomes"]["stored"] == status["pages"]
    r = run("clean", charter, "--snapshot", tmp_path / "s.jsonl")
    assert r.exit_code == 0, r.output
    assert (brt_home / "memory" / "e2e_persist").is_dir()
    assert run("search", charter, "tides").exit_code == 0


@pytest.mark.parametrize("command", ["search", "synthesize", "clean"])
def test_never_harvested_is_a_clear_exit_1(brt_home, tmp_path, local_site, make_charter, command):
    site = local_site()
    charter = write_charter(make_charter, site, charter_id="never")
    args = [command, charter] + (["q"] if command == "search" else [])
    r = run(*args)
    assert r.exit_code == 1
    assert "never harvested" in r.output and "brt harvest" in r.output


@pytest.mark.browser
def test_demo_command(brt_home, embedder):
    r = run("demo")
    assert r.exit_code == 0, r.output
    assert EVIDENCE_RE.search("\n".join(r.output.splitlines())) or any(
        EVIDENCE_RE.match(line) for line in r.output.splitlines()
    )
    # The demo charter's sections on the real model: each threshold section cites its own metric (alone, or
    # beside its sibling on the overview page), a concrete CLS fix is quoted, and the lab section answers one of
    # its two parts. (The HTTP/3 section, which the site never answers, is a known miss: tests/e2e/test_demo.py.)
    blocks: dict[str, list[tuple[str, str]]] = {}
    for line in r.output.splitlines():
        m = EVIDENCE_RE.match(line)
        if m:  # a block's sources: its page and the pages stating the same facts ("; also at ...")
            for url in [m["url"], *re.findall(r"; also at (\S+) \(", line)]:
                blocks.setdefault(m["label"], []).append((m["quote"], url))
    assert any(url.endswith("/lcp.html") for _, url in blocks["LCP"]), blocks["LCP"]
    assert all("Largest Contentful Paint" in q for q, _ in blocks["LCP"]), blocks["LCP"]
    assert any(url.endswith("/inp.html") for _, url in blocks["INP"]), blocks["INP"]
    assert all("Interaction to Next Paint" in q for q, _ in blocks["INP"]), blocks["INP"]
    fixes = ("width and height attributes", "Reserve space", "Do not insert banners", "transform", "fonts")
    assert any(url.endswith("/cls.html") and any(f in q for f in fixes) for q, url in blocks["CLS"]), blocks["CLS"]
    assert any("cannot measure Interaction to Next Paint" in q or "Watch Total Blocking Time" in q
               for q, _ in blocks["Lab"]), blocks["Lab"]
    # The three criteria, judged: the site gives both "good" thresholds on their own pages and quotes a concrete
    # CLS fix (covered); the third, a Gap for what the site never answers, follows the HTTP/3 section above.
    judged = r.output.split("## Acceptance criteria", 1)[1].split("## Concepts used", 1)[0]
    verdicts = [line for line in judged.splitlines() if line.startswith("- **")]
    assert len(verdicts) == 3 and all(v.startswith("- **covered**: ") for v in verdicts[:2]), judged
    # each threshold cited from a page that states it (its own page, or the thresholds overview)
    assert any(p in verdicts[0] for p in ("lcp.html", "thresholds.html")), verdicts[0]
    assert any(p in verdicts[0] for p in ("inp.html", "thresholds.html")), verdicts[0]
    assert "cls.html" in verdicts[1]
    assert ("HTTP/3 adoption is a Gap" in verdicts[2]) == ("[HTTP3 Gap]" in r.output)
    assert "[LCP Agreement] 2 sources agree on 2.5 seconds" in r.output and "Conflict]" not in r.output
    snapshots = list((brt_home / "snapshots").glob("demo_cwv-*.jsonl"))
    assert snapshots
    recorded = next(json.loads(line) for line in snapshots[0].read_text().splitlines() if '"type": "synthesis"' in line)
    assert [v["verdict"] for v in recorded["acceptance"]][:2] == ["covered"] * 2
    assert run("verify", snapshots[0]).exit_code == 0
    assert not (brt_home / "memory" / "demo_cwv").exists()


@pytest.mark.browser
def test_a_harvest_of_a_site_that_is_down_exits_3_and_keeps_no_store(make_charter, brt_home):
    """Nothing listens on the seed's port: every URL fails, the harvest says so and exits 3 (documented), and no
    empty store is left behind (status says there is none; a later synthesize says to harvest first)."""
    import socket

    with socket.socket() as s:  # a port no one listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    charter = make_charter([f"http://127.0.0.1:{port}/index.html"], charter_id="down_site", path="down.yaml",
                           timeout_s=5).source
    r = run("harvest", charter)
    assert r.exit_code == 3, r.output
    assert "0 stored" in r.stdout and "1 failed" in r.stdout
    assert "no page was stored" in r.stderr
    assert not (brt_home / "memory" / "down_site").exists()
    assert "no store" in run("status", charter).stdout
    r = run("harvest", charter, "--json")
    assert r.exit_code == 3, r.output
    doc = json.loads(r.stdout)
    assert doc["nothing_stored"] is True and doc["counts"]["failed"] == 1 and doc["pages_stored"] == 0
    assert not (brt_home / "memory" / "down_site").exists()
    r = run("synthesize", charter)
    assert r.exit_code == 1 and "brt harvest" in r.stderr


def _bike_share_site(local_site):
    """Two dated pages of one site that disagree on the size of the fleet (2024: 650 bikes, 2025: 700 bikes), and
    one page that states no date though its server sends a Last-Modified header (``dated.html``)."""
    from tests.sites.pages import page

    site = local_site()

    def modified(day: str) -> str:
        return f'<meta property="article:modified_time" content="{day}T09:00:00Z">'

    site.write("fleet-2024.html", page(
        "Bike share annual report 2024",
        "Greenport's bike share has 650 bikes at 80 stations across the old town and the harbour district.",
        "A day pass costs 4 euros and riders made 310,000 trips over the year, most of them on weekday mornings.",
        head=modified("2024-04-02")))
    site.write("fleet-2025.html", page(
        "Bike share news",
        "After the spring expansion, Greenport's bike share now has 700 bikes at 80 stations across the old town "
        "and the harbour district.",
        "The new bikes have a lighter frame and a basket large enough for a week of shopping.",
        head=modified("2025-03-10")))
    site.write("dated.html", page(
        "Station hours",
        "Every bike station in Greenport closes at midnight and opens again at five in the morning.",
        "Riders can return a bike to any station with a free dock, whatever the hour."))
    return site, [site.url(n) for n in ("fleet-2024.html", "fleet-2025.html", "dated.html")]


@pytest.mark.browser
def test_pages_that_disagree_are_shown_with_their_dates_newest_first(local_site, make_charter, brt_home, embedder,
                                                                      tmp_path):
    """The newer page need not win a block: the report shows both values with their pages' dates, newest first,
    flags the disagreement, and the snapshot verifies it. A page that states no date has none in the report,
    whatever its server's Last-Modified header says."""
    site, seeds = _bike_share_site(local_site)
    charter = make_charter(site, seeds=seeds, max_depth=0, charter_id="bikes", path="bikes.yaml",
                           outputs={"doc": "out/bikes.md"},
                           sections=[{"title": "Fleet", "question": "How many bikes does Greenport's bike share have?"},
                                     {"title": "Hours", "question": "When do Greenport's bike stations close?"}],
                           retrieval={"k": 1}).source
    r = run("harvest", charter)
    assert r.exit_code == 0, r.output
    r = run("synthesize", charter, "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    fleet = [c for c in doc["conflicts"] if c["section"] == "Fleet"]
    assert fleet, doc["conflicts"]
    c = fleet[0]
    assert (c["a"]["value"], c["a"]["last_updated"]) == ("700 bikes", "2025-03-10"), c
    assert (c["b"]["value"], c["b"]["last_updated"]) == ("650 bikes", "2024-04-02"), c
    assert {c["a"]["url"], c["b"]["url"]} == {site.url("fleet-2025.html"), site.url("fleet-2024.html")}
    md = (charter.parent / "out" / "bikes.md").read_text(encoding="utf-8")
    line = next(ln for ln in md.splitlines() if ln.startswith("[Fleet Conflict]"))
    assert line.index("700 bikes (last updated: 2025-03-10)") < line.index("650 bikes (last updated: 2024-04-02)")
    sides = md.split(line + "\n", 1)[1].splitlines()[:2]  # each side's line, newest first
    assert "fleet-2025.html (last updated: 2025-03-10)" in sides[0] and "2024-04-02" in sides[1], sides
    hours = next(s for s in doc["sections"] if s["title"] == "Hours")
    undated = [b for b in hours["blocks"] if b["url"] == site.url("dated.html")]
    assert undated and all(b["last_updated"] is None for b in undated), hours
    assert "dated.html (last updated: unknown)" in md
    report = run("report", charter, "--format", "md")
    assert report.exit_code == 0 and "700 bikes (last updated: 2025-03-10) vs 650 bikes" in report.stdout
    snapshot = tmp_path / "bikes.jsonl"
    assert run("clean", charter, "--snapshot", snapshot).exit_code == 0
    r = run("verify", snapshot)
    assert r.exit_code == 0, r.output
