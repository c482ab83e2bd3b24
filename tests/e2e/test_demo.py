"""``brt demo`` as a user runs it: the built-in demo charter on the bundled demo site, harvested with real
Chromium, synthesized with the real model, then cleaned."""

from __future__ import annotations

import socket

import pytest


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.model
def test_run_demo_end_to_end(brt_home, tmp_path, monkeypatch):
    """`brt demo` on the built-in copy of the demo charter: evidence for the answered sections, a Gap for the
    HTTP/3 one, a snapshot, and no store left behind."""
    import orchestrator.demo as demo

    with socket.socket() as s:
        if s.connect_ex((demo.DEMO_HOST, demo.DEMO_PORT)) == 0:
            pytest.skip(f"port {demo.DEMO_PORT} is in use")
    monkeypatch.setattr(demo, "DEMO_CHARTER", tmp_path / "missing.yaml")  # use the built-in copy
    monkeypatch.chdir(tmp_path)
    lines: list[str] = []
    assert demo.run_demo(echo=lines.append) == 0
    output = "\n".join(lines)
    assert "[LCP Evidence #1]" in output and "[CLS Evidence #1]" in output
    assert "[HTTP3 Gap]" in output
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
