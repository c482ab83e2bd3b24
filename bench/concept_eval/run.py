"""Concept index keep-or-cut benchmark: 7 charters, replayed from a HAR built at run time.

    .venv/bin/python bench/concept_eval/run.py [--eval-dir ../shared/eval] [--repeats 3] [--json results.json]

1. Builds ``bench/concept_eval/.build/pages.har`` from the third-party pages of
   ``shared/eval/article-extraction-benchmark`` (html/<id>.html.gz, each served under its original URL with
   ``text/html; charset=utf-8``). The pages are never copied into the repository (.build/ is git-ignored).
2. Harvests each charter in ``charters/`` from that HAR into a temporary BRT_HOME (concept index on).
3. Runs ``orchestrator.evaluate`` (the same code as ``brt eval``) with ``answers.json`` and prints the table
   and the stop-rule verdict; ``--json`` also writes the metrics (no page text) to a file.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))


def default_eval_dir() -> Path:
    for cand in (ROOT.parent / "shared" / "eval", Path("/work/shared/eval")):
        if cand.is_dir():
            return cand
    return ROOT.parent / "shared" / "eval"


def build_har(eval_dir: Path, dest: Path) -> tuple[Path, int]:
    """One HAR holding every page of the topic clusters (original URL -> benchmark HTML)."""
    bench = eval_dir / "article-extraction-benchmark"
    clusters = json.loads((bench / "topic-clusters.json").read_text())["clusters"]
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    entries = []
    seen = set()
    for pages in clusters.values():
        for page in pages:
            if page["url"] in seen:
                continue
            seen.add(page["url"])
            html = gzip.decompress((bench / "html" / f"{page['id']}.html.gz").read_bytes()).decode("utf-8")
            size = len(html.encode("utf-8"))
            entries.append(
                {
                    "startedDateTime": stamp,
                    "time": 1,
                    "request": {
                        "method": "GET",
                        "url": page["url"],
                        "httpVersion": "HTTP/1.1",
                        "cookies": [],
                        "headers": [],
                        "queryString": [],
                        "headersSize": -1,
                        "bodySize": 0,
                    },
                    "response": {
                        "status": 200,
                        "statusText": "OK",
                        "httpVersion": "HTTP/1.1",
                        "cookies": [],
                        "headers": [{"name": "Content-Type", "value": "text/html; charset=utf-8"}],
                        "content": {"size": size, "mimeType": "text/html; charset=utf-8", "text": html},
                        "redirectURL": "",
                        "headersSize": -1,
                        "bodySize": size,
                    },
                    "cache": {},
                    "timings": {"send": 0, "wait": 1, "receive": 0},
                }
            )
    doc = {
        "log": {
            "version": "1.2",
            "creator": {"name": "brt-concept-eval", "version": "1"},
            "pages": [],
            "entries": entries,
        }
    }
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(doc), encoding="utf-8")
    return dest, len(entries)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--eval-dir", type=Path, default=default_eval_dir())
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", type=Path, help="write the metrics here")
    ap.add_argument("--home", type=Path, help="BRT_HOME to use (default: a fresh temp folder)")
    ap.add_argument("--skip-harvest", action="store_true", help="reuse the stores already in --home")
    ap.add_argument("--rebuild-index", action="store_true", help="rebuild each concept index before the A/B")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    home = args.home or Path(tempfile.mkdtemp(prefix="brt-concept-eval-"))
    os.environ["BRT_HOME"] = str(home)

    from orchestrator.charter import load_charter
    from orchestrator.evaluate import evaluate, format_table, load_answers
    from orchestrator.harvest import harvest

    har, n = build_har(args.eval_dir, HERE / ".build" / "pages.har")
    print(f"HAR with {n} pages: {har}", file=sys.stderr)
    charters = [load_charter(p) for p in sorted((HERE / "charters").glob("*.yaml"))]
    harvest_s = {}
    for c in [] if args.skip_harvest else charters:
        t0 = time.perf_counter()
        rep = harvest(c, replay=har)
        harvest_s[c.id] = round(time.perf_counter() - t0, 2)
        print(f"harvested {c.id}: {rep.summary()}", file=sys.stderr)
    report = evaluate(
        charters,
        answers=load_answers(HERE / "answers.json"),
        out_dir=HERE / "out",
        repeats=args.repeats,
        rebuild_index=args.rebuild_index,
    )
    print(format_table(report))
    doc = report.to_json() | {"harvest_s": harvest_s, "brt_home": str(home)}
    if args.json:
        args.json.write_text(json.dumps(doc, indent=2) + "\n")
    from bench._common import write_result

    write_result("concept_eval", doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
