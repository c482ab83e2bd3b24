"""``brt demo`` as a user runs it: the built-in demo charter on the bundled demo site, harvested with real
Chromium, synthesized with the real model, then cleaned."""

from __future__ import annotations

import socket

import pytest


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """`brt demo` on the built-in copy of the demo charter, once for the module: (its output, its folder, its
    BRT_HOME)."""
    import orchestrator.demo as demo

    with socket.socket() as s:
        if s.connect_ex((demo.DEMO_HOST, demo.DEMO_PORT)) == 0:
            pytest.skip(f"port {demo.DEMO_PORT} is in use")
    tmp_path = tmp_path_factory.mktemp("demo")
    home = tmp_path / "brt_home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BRT_HOME", str(home))
        mp.setattr(demo, "DEMO_CHARTER", tmp_path / "missing.yaml")  # use the built-in copy
        mp.chdir(tmp_path)
        lines: list[str] = []
        assert demo.run_demo(echo=lines.append) == 0
    return "\n".join(lines), tmp_path, home


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.model
def test_run_demo_end_to_end(demo_run):
    """`brt demo`: evidence for the answered sections, a snapshot, and no store left behind."""
    output, tmp_path, brt_home = demo_run
    assert "[LCP Evidence #1]" in output and "[CLS Evidence #1]" in output and "[Lab Evidence #1]" in output
    # the threshold questions ("What ... time counts as good?") cite only quotes that state a number
    import json

    report = json.loads((tmp_path / "out" / "demo_cwv.json").read_text())
    thresholds = [b for s in report["sections"] if s["label"] in ("LCP", "INP") for b in s["blocks"]]
    assert thresholds and all(any(ch.isdigit() for ch in b["quote"]) for b in thresholds)
    # the index page's one-line entry for the CLS page is not a block beside the CLS page's own
    cls = [b for s in report["sections"] if s["label"] == "CLS" for b in s["blocks"]]
    assert cls and all(b["url"].endswith("/cls.html") for b in cls)
    assert (tmp_path / "out" / "demo_cwv.md").is_file() and (tmp_path / "out" / "demo_cwv.json").is_file()
    snapshots = list((brt_home / "snapshots").glob("demo_cwv-*.jsonl"))
    assert len(snapshots) == 1
    assert not (brt_home / "memory" / "demo_cwv").exists()


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.model
def test_the_demo_reports_a_gap_for_the_question_the_site_never_answers(demo_run):
    output, _, _ = demo_run
    assert "[HTTP3 Gap]" in output
    assert "[HTTP3 Evidence" not in output


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.model
def test_the_demo_meets_its_own_acceptance_criteria(demo_run):
    """Every acceptance criterion of the demo charter is covered by the demo's own synthesis."""
    import json

    _, tmp_path, _ = demo_run
    report = json.loads((tmp_path / "out" / "demo_cwv.json").read_text())
    verdicts = report["acceptance"]
    assert len(verdicts) == 3
    assert all(v["verdict"] == "covered" for v in verdicts), verdicts
    # no quote glues a heading to the sentence after it
    headings = {"What counts as good", "How to minimise layout shift"}
    for s in report["sections"]:
        for b in s["blocks"]:
            assert not any(b["quote"].startswith(h + " ") for h in headings), b["quote"]
