"""Harvest of 500 local pages, a tenth of them misbehaving (503 with Retry-After then OK, 500 always, 404,
connection reset once, 2 s slow), from the test suite's misbehaving server on 127.0.0.1 (nothing else is
contacted). Reports pages/s, retries, outcomes, peak RSS (this process, and this process plus its
children: the Playwright driver and Chromium) and the count of Chromium processes started by this process
before, during (peak) and after the harvest.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/harvest_misbehaving.py [--pages 500] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _tree_stats() -> tuple[int, int]:
    """(Chromium processes among this process's descendants, RSS bytes of this process + descendants)."""
    import psutil

    me = psutil.Process()
    chromium = 0
    rss = me.memory_info().rss
    for child in me.children(recursive=True):
        try:
            if "chrom" in child.name().lower():
                chromium += 1
            rss += child.memory_info().rss
        except psutil.Error:
            pass
    return chromium, rss


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=500)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--json", type=Path, help="write the figures here too")
    ap.add_argument("--no-baseline", action="store_true", help="skip the same-run baseline (no misbehaving page)")
    args = ap.parse_args(argv)

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    home = Path(tempfile.mkdtemp(prefix="brt-bench-misbehaving-"))
    os.environ["BRT_HOME"] = str(home)

    from memory_store.embeddings import get_embedder
    from orchestrator.charter import parse_charter
    from orchestrator.config import open_memory
    from orchestrator.harvest import harvest
    from tests.sites.misbehaving import start_badserver

    get_embedder()  # model load is not part of the harvest figure

    def run(bad_every: int, charter_id: str) -> dict:
        srv = start_badserver(robots=None, pages=args.pages, fanout=args.pages, bad_every=bad_every)
        charter = parse_charter(
            {
                "id": charter_id,
                "title": "Misbehaving site benchmark",
                "allowed_domains": ["127.0.0.1"],
                "seeds": [srv.url("page/0.html")],
                "harvest": {
                    "max_pages": args.pages,
                    "max_depth": 1,
                    "concurrency": args.concurrency,
                    "timeout_s": 10,
                },
            }
        )
        chromium_before, _ = _tree_stats()
        peak = {"chromium": chromium_before, "rss_tree": 0}
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                n, rss = _tree_stats()
                peak["chromium"] = max(peak["chromium"], n)
                peak["rss_tree"] = max(peak["rss_tree"], rss)
                stop.wait(0.5)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        mem = open_memory(charter)
        t0 = time.monotonic()
        report = harvest(charter, memory=mem)
        wall = time.monotonic() - t0
        stop.set()
        sampler.join()
        time.sleep(1.0)
        chromium_after, _ = _tree_stats()
        srv.stop()
        summary = report.summary_table

        return {
            "pages_linked": args.pages,
            "misbehaving": sum(1 for n in range(args.pages) if bad_every and n % bad_every == bad_every - 1),
            "stored": report.pages_stored,
            "counts": report.counts(),
            "failed": summary["failed"],
            "retried_urls": summary["retried_urls"],
            "retries": summary["retries"],
            "requests_served": len(srv.log),
            "wall_s": round(wall, 2),
            "pages_per_s": round(report.pages_stored / wall, 2),
            "attempted_per_s": round(len(report.events) / wall, 2),
            "peak_rss_python_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "peak_rss_with_browser_mb": round(peak["rss_tree"] / 1e6, 1),
            "chromium_processes": {"before": chromium_before, "peak": peak["chromium"], "after": chromium_after},
            "store_check_ok": mem.check().ok,
        }

    figures = {"misbehaving": run(10, "misbehaving")}
    if not args.no_baseline:
        figures["baseline_all_well_behaved"] = run(0, "baseline")
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    from bench._common import write_result

    write_result("harvest_misbehaving", figures)
    import shutil

    shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
