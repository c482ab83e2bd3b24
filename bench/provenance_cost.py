"""What recording provenance costs a harvest: the end-of-harvest rewrite of its HAR (``harvest/har.py``
``add_provenance``), against the baseline of reading that HAR once (``json.load``, what ``brt clean``'s merge
does anyway), on a synthetic HAR of N pages with bodies of the given size.

    python bench/provenance_cost.py --pages 200 --body-kb 100 --repeats 3

Writes bench/results/provenance_cost.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench._common import machine_info, write_result  # noqa: E402
from orchestrator.harvest.har import add_provenance  # noqa: E402


def _har(pages: int, body_kb: int) -> dict:
    body = ("<p>" + "harbour " * 16 + "</p>") * max(1, body_kb * 1024 // 140)
    entries = [
        {"request": {"method": "GET", "url": f"http://site.test/p{i}.html", "headers": []},
         "response": {"status": 200, "headers": [], "content": {"mimeType": "text/html", "text": body}}}
        for i in range(pages)
    ]
    return {"log": {"version": "1.2", "creator": {"name": "bench"}, "pages": [], "entries": entries}}


def _records(pages: int) -> list[dict]:
    return [{"url": f"http://site.test/p{i}.html", "doc_sha256": "0" * 64, "text_sha256": "1" * 64,
             "chunk_ids": [f"sha256:{i:064d}"] * 4, "title": f"Page {i}", "last_updated": None} for i in range(pages)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--body-kb", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    base, prov = [], []
    with tempfile.TemporaryDirectory() as tmp:
        har = Path(tmp) / "run.har"
        for _ in range(args.repeats):
            har.write_text(json.dumps(_har(args.pages, args.body_kb)), encoding="utf-8")
            started = time.perf_counter()
            json.loads(har.read_text(encoding="utf-8"))
            base.append(time.perf_counter() - started)
            started = time.perf_counter()
            add_provenance(har, _records(args.pages))
            prov.append(time.perf_counter() - started)
        size = har.stat().st_size
    result = {
        "pages": args.pages, "body_kb": args.body_kb, "har_mb": round(size / 1e6, 1), "repeats": args.repeats,
        "baseline_read_s": round(statistics.median(base), 3), "add_provenance_s": round(statistics.median(prov), 3),
    }
    result["machine"] = machine_info()
    write_result("provenance_cost", result)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
