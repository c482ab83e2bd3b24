"""Run another checkout's ``brt check`` (``--repo``, e.g. the current main) on the reports of
``bench/check_report.py``: one process, its modules only. Prints ``{"results": {report: {line: [failing
problem kinds]}}, "repo", "commit", "check_time_s"}``; a report it cannot read gets ``{"error": ...}``.

    python bench/_check_baseline_worker.py --repo ../main --manifest MANIFEST.json --reports DIR
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True)
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--reports", required=True)
    args = ap.parse_args()
    repo = str(Path(args.repo).resolve())
    sys.path.insert(0, repo)  # that checkout's orchestrator, not this one's
    from orchestrator.audit.check import check_text
    from orchestrator.audit.evidence_source import from_store
    from orchestrator.charter import load_charter

    sources: dict[str, object] = {}
    results: dict[str, object] = {}
    t0 = time.monotonic()
    for entry in json.loads(Path(args.manifest).read_text()):
        charter = entry["charter"]
        if charter not in sources:
            sources[charter] = from_store(load_charter(charter))
        text = (Path(args.reports) / entry["report"]).read_text(encoding="utf-8")
        try:
            result = check_text(text, sources[charter], report=entry["report"])
        except Exception as exc:  # the baseline may not read every input (JSON, HTML)
            results[entry["report"]] = {"error": str(exc)[:300]}
            continue
        failing: dict[str, list[str]] = {}
        for c in result.claims:
            kinds = sorted({p.kind for p in c.problems if p.failing})
            if kinds:
                failing.setdefault(str(c.line), [])
                failing[str(c.line)] = sorted(set(failing[str(c.line)]) | set(kinds))
        results[entry["report"]] = failing
    commit = subprocess.run(["git", "-C", repo, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    print(json.dumps({"results": results, "repo": repo, "commit": commit,
                      "check_time_s": round(time.monotonic() - t0, 1)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
