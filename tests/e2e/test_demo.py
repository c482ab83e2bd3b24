"""``brt demo`` as a user runs it: the built-in demo charter on the bundled demo site, harvested with real
Chromium, synthesized with the real model, then cleaned."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from orchestrator.cli import cli

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """`brt demo --out reports` from a temporary folder, with this checkout's code, once for the module: (its
    output, its report folder, its BRT_HOME). A checkout's demo writes where it runs, as an installed one does
    (tests/e2e/test_wheel.py)."""
    import orchestrator.demo as demo

    with socket.socket() as s:
        if s.connect_ex((demo.DEMO_HOST, demo.DEMO_PORT)) == 0:
            pytest.skip(f"port {demo.DEMO_PORT} is in use")
    tmp_path = tmp_path_factory.mktemp("demo")
    home = tmp_path / "brt_home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BRT_HOME", str(home))
        mp.chdir(tmp_path)
        result = CliRunner().invoke(cli, ["demo", "--out", "reports"])
    assert result.exit_code == 0, result.output[-3000:]
    return result.stdout, tmp_path / "reports", home

#: A known miss of the shipped reader (the model card's Limits).
HTTP3_MISS = pytest.mark.xfail(strict=True, reason="a known miss of the shipped reader (model card, Limits): the "
                               "site never mentions HTTP/3, yet a sentence about traffic clears the bar, so the "
                               "demo's Gap criterion is not covered")


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.model
def test_run_demo_end_to_end(demo_run):
    """`brt demo`: evidence for the answered sections, a snapshot, and no store left behind."""
    output, out_dir, brt_home = demo_run
    assert "[LCP Evidence #1]" in output and "[CLS Evidence #1]" in output and "[Lab Evidence #1]" in output
    # the threshold questions ("What ... time counts as good?") cite only quotes that state a number
    import json

    report = json.loads((out_dir / "demo_cwv.json").read_text())
    thresholds = [b for s in report["sections"] if s["label"] in ("LCP", "INP") for b in s["blocks"]]
    assert thresholds and all(any(ch.isdigit() for ch in b["quote"]) for b in thresholds)
    # the index page's one-line entry for the CLS page is not a block beside the CLS page's own
    cls = [b for s in report["sections"] if s["label"] == "CLS" for b in s["blocks"]]
    assert cls and all(b["url"].endswith("/cls.html") for b in cls)
    assert (out_dir / "demo_cwv.md").is_file() and (out_dir / "demo_cwv.json").is_file()
    assert not (out_dir.parent / "out").exists()  # --out, not ./out
    assert "report written to reports/demo_cwv.md" in output
    snapshots = list((brt_home / "snapshots").glob("demo_cwv-*.jsonl"))
    assert len(snapshots) == 1
    assert not (brt_home / "memory" / "demo_cwv").exists()


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.model
@HTTP3_MISS
def test_the_demo_reports_a_gap_for_the_question_the_site_never_answers(demo_run):
    output, _, _ = demo_run
    assert "[HTTP3 Gap]" in output
    assert "[HTTP3 Evidence" not in output


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.model
def test_the_docs_show_what_the_demo_prints(demo_run):
    """The README's and the quick start's sample output is this run's (abridged the same way, the time and the
    seconds aside): a change to what the demo prints fails here until `python scripts/demo_sample.py` is run."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import demo_sample

    output, _, _ = demo_run
    made = demo_sample.normalise(demo_sample.abridge(output))
    for page in demo_sample.PAGES:
        assert demo_sample.normalise(demo_sample.sample_of(page)) == made, (
            f"{page.name}'s demo sample is stale: run python scripts/demo_sample.py")


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.model
def test_the_demo_outputs_pass_their_own_check(demo_run):
    """Issue 42: every output brt writes of the demo (the synthesis's Markdown and JSON, `brt report`'s Markdown
    and HTML) passes `brt check` against the demo's snapshot (verified first, HAR included), every line type
    brt writes read as what it claims: header, evidence with "also at", Agreement, acceptance verdicts."""
    import json

    _, out_dir, home = demo_run
    (snapshot,) = (home / "snapshots").glob("demo_cwv-*.jsonl")
    outputs = [out_dir / "demo_cwv.md", out_dir / "demo_cwv.json"]
    runner = CliRunner()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BRT_HOME", str(home))
        for fmt in ("md", "html"):
            out = out_dir.parent / f"demo-report.{fmt}"
            assert runner.invoke(cli, ["report", str(snapshot), "--format", fmt, "--out", str(out)]).exit_code == 0
            outputs.append(out)
        for path in outputs:
            r = runner.invoke(cli, ["check", str(path), "--snapshot", str(snapshot), "--json"])
            doc = json.loads(r.stdout)
            failing = [(c["line"], c["kind"], c["text"][:80], [p["message"] for p in c["problems"]])
                       for c in doc["claims"] if not c["ok"]]
            assert r.exit_code == 0 and doc["ok"], (path.name, failing)
            kinds = {c["kind"] for c in doc["claims"]}
            assert {"evidence line", "acceptance"} <= kinds, (path.name, kinds)
            assert doc["verified"].startswith("OK ") and doc["checked_against"] == "snapshot"
            if path.suffix == ".md" and path.name == "demo_cwv.md":
                assert {"header", "agreement"} <= kinds
                also = [x for c in doc["claims"] for x in c["citations"] if x["text"].startswith("; also at")]
                assert all(x["resolved"] for x in also)  # whether the demo has one depends on the scorer


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.model
@HTTP3_MISS
def test_the_demo_meets_its_own_acceptance_criteria(demo_run):
    """Every acceptance criterion of the demo charter is covered by the demo's own synthesis."""
    import json

    _, out_dir, _ = demo_run
    report = json.loads((out_dir / "demo_cwv.json").read_text())
    verdicts = report["acceptance"]
    assert len(verdicts) == 3
    assert all(v["verdict"] == "covered" for v in verdicts), verdicts
