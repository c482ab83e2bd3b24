"""Cost of one store write as the store grows: every write reconciles all chunk rows with the pages table.

The same one-page writes (``Memory.add_many`` of one short page, real embedding) go into an empty store (the
baseline) and into a copy of a big store, e.g. the SciFact store that ``bench/retrieval_scifact.py`` builds. The
copy is made in a temp folder, so the big store itself is never changed.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/store_write.py --store-dir /tmp/brt-scifact-store \\
        --charter-id beir_scifact [--writes 10] [--json out.json]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench._common import emit_report, store_machine_info  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def time_writes(mem, label: str, writes: int) -> list[float]:
    times = []
    for i in range(writes):
        text = f"Page {i}: the harbour lamp and the tides."
        page = {"url": f"https://bench.test/{label}/{i}", "text": text, "title": "t"}
        t0 = time.perf_counter()
        mem.add_many([page])
        times.append(time.perf_counter() - t0)
    return times


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store-dir", required=True, help="folder holding the big store (its charter folder inside)")
    ap.add_argument("--charter-id", default="beir_scifact")
    ap.add_argument("--writes", type=int, default=10)
    ap.add_argument("--json", dest="json_out", default=None)
    args = ap.parse_args(argv)

    from memory_store import Memory

    source = Path(args.store_dir).expanduser() / args.charter_id
    if not source.is_dir():
        raise SystemExit(f"no store at {source}")
    with tempfile.TemporaryDirectory(prefix="brt-store-write-") as tmp:
        shutil.copytree(source, Path(tmp) / "big" / args.charter_id)
        big = Memory(args.charter_id, basepath=Path(tmp) / "big")
        empty = Memory("empty_store", basepath=Path(tmp) / "empty")
        big.embedder.embed_documents(["warm up"])
        time_writes(empty, "warm-empty", 1)  # first writes create tables and indexes
        time_writes(big, "warm-big", 1)
        results = {}
        for label, mem in (("empty", empty), ("big", big)):
            chunks_before = mem.count_chunks()
            times = time_writes(mem, label, args.writes)
            results[label] = {
                "chunks_before": chunks_before,
                "median_s": round(statistics.median(times), 4),
                "max_s": round(max(times), 4),
            }
    results["ratio_big_over_empty"] = round(results["big"]["median_s"] / results["empty"]["median_s"], 2)
    report = {
        "writes": args.writes,
        "results": results,
        "machine": store_machine_info(),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
    }
    emit_report(report, args.json_out, name="store_write")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
