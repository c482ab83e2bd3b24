"""Cost of one page's write as the store grows: the same real writes (``Memory.add_many`` of one page: chunking,
embedding with the bundled model, the LanceDB rows, the indexes) into an empty store and into stores of 1,000,
10,000 and 100,000 chunks.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/store_write.py [--sizes 1000,10000,100000] [--writes 12] [--rounds 3]

The big stores are built quickly, not harvested: ``Memory.load_rows`` (the public path ``brt restore`` uses)
loads pages of ten chunks of made-up text with random unit vectors, then the full-text index is built over them.
What is measured is the write path itself, unchanged: each write is a new page of its own text, or, every third
write, a page stored before, stored again with one paragraph changed (the re-harvest path: its old chunks dropped
or kept, new ones added). The stores take turns write by write (round-robin, the order rotated each round) so that
the machine's load hits them alike. For each store: the median wall time and process CPU time of a write;
the result is each store's median over the empty store's (target: at most 1.5 at 100,000 chunks). Not a write
but reported beside it: the first search after the writes, which folds their rows into the full-text index.
"""

from __future__ import annotations

import argparse
import os
import random
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

TARGET_RATIO = 1.5
CHUNKS_PER_PAGE = 10
_WORDS = (
    "harbour tide lamp keeper storm ferry pier gull rope anchor sail mast hull beacon reef cliff shore wave net "
    "boat fleet crew quay dock buoy chart compass mist fog gale current channel island lighthouse signal"
).split()


def _sentence(rng: random.Random, n: int = 14) -> str:
    words = [rng.choice(_WORDS) for _ in range(n)]
    return " ".join(words).capitalize() + f" {rng.randrange(10**9)}."


def build_store(mem, chunks: int, seed: int) -> None:
    """``chunks`` chunk rows in pages of ``CHUNKS_PER_PAGE``, random unit vectors, loaded with ``load_rows``."""
    import numpy as np

    from memory_store.chunking import chunk_id

    rng = random.Random(seed)
    dim = mem.embedder.dim
    split = mem.split_algo
    created = "2026-11-27T00:00:00.000000Z"
    pages, rows = [], []
    for p in range(max(1, chunks // CHUNKS_PER_PAGE)):
        url = f"https://big.test/{seed}/{p}"
        texts = [" ".join(_sentence(rng) for _ in range(8)) for _ in range(CHUNKS_PER_PAGE)]
        ids = [chunk_id(t) for t in texts]
        for cid, text in zip(ids, texts, strict=True):
            rows.append({"id": cid, "charter_id": mem.charter_id, "url": url, "selector": "body", "text": text,
                         "tokens": 120, "split_algo": split, "last_updated": None, "created_at": created,
                         "title": f"page {p}", "also_seen_at": []})
        pages.append({"url": url, "requested_url": url, "title": f"page {p}", "text": "\n\n".join(texts),
                      "selector": "body", "last_updated": None, "last_updated_source": None, "fetched_at": created,
                      "status": 200, "content_type": "text/html", "chunk_ids": ids, "stored_at": created})
    vecs = np.random.default_rng(seed).standard_normal((len(rows), dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    mem.load_rows(pages, rows, vecs, dim=dim, split_algo=split, precision=mem.embedder.precision,
                  recipe=getattr(mem.embedder, "recipe", None))


class Writer:
    """The writes into one store: new pages, and every third write a page of its own stored again, changed."""

    def __init__(self, mem, label: str) -> None:
        self.mem, self.label = mem, label
        self.rng = random.Random(label)
        self.mine: list[tuple[str, list[str]]] = []
        self.n = 0
        self.wall: list[float] = []
        self.cpu: list[float] = []

    def page(self) -> dict:
        self.n += 1
        if self.n % 3 == 0 and self.mine:
            url, paras = self.mine[self.rng.randrange(len(self.mine))]
            paras = [paras[0], " ".join(_sentence(self.rng) for _ in range(6))]  # one kept, one new, one dropped
        else:
            url = f"https://bench.test/{self.label}/{self.n}"
            paras = [" ".join(_sentence(self.rng) for _ in range(6)) for _ in range(2)]
        self.mine.append((url, paras))
        return {"url": url, "text": "\n\n".join(paras), "title": "bench page"}

    def write(self, measured: bool = True) -> None:
        page = self.page()
        c0, t0 = time.process_time(), time.perf_counter()
        self.mem.add_many([page])
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        if measured:
            self.wall.append(wall)
            self.cpu.append(cpu)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000,100000", help="chunks in each big store (comma-separated)")
    ap.add_argument("--writes", type=int, default=12, help="measured writes per store and round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", dest="json_out", default=None)
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]

    from memory_store import Memory

    tmp = Path(tempfile.mkdtemp(prefix="brt-store-write-"))
    try:
        writers = [Writer(Memory("store_empty", basepath=tmp), "empty")]
        writers[0].mem.embedder.embed_documents(["warm up"])
        built = {}
        for size in sizes:
            mem = Memory(f"store_{size}", basepath=tmp)
            t0 = time.perf_counter()
            build_store(mem, size, seed=size)
            built[size] = {"chunks": mem.count_chunks(), "pages": mem.count_pages(),
                           "build_s": round(time.perf_counter() - t0, 1)}
            print(f"[bench] store of {built[size]['chunks']} chunks built in {built[size]['build_s']} s",
                  file=sys.stderr)
            writers.append(Writer(mem, str(size)))
        for w in writers:  # the first writes create tables and indexes
            w.write(measured=False)
        for rnd in range(args.rounds):
            order = writers[rnd % len(writers):] + writers[: rnd % len(writers)]
            for _ in range(args.writes):
                for w in order:
                    w.write()
            print(f"[bench] round {rnd + 1} done", file=sys.stderr)
        folds = {}
        for w in writers:  # not a write: the first search after them folds their rows into the full-text index
            t0 = time.perf_counter()
            w.mem.search("harbour lamp keeper", k=3)
            folds[w.label] = round(time.perf_counter() - t0, 3)
        results = {}
        for w in writers:
            results[w.label] = {
                "first_search_after_s": folds[w.label],
                "chunks_at_end": w.mem.count_chunks(),
                "writes": len(w.wall),
                "median_s": round(statistics.median(w.wall), 4),
                "p90_s": round(sorted(w.wall)[int(0.9 * (len(w.wall) - 1))], 4),
                "median_cpu_s": round(statistics.median(w.cpu), 4),
            }
        base = results["empty"]
        for w in writers[1:]:
            r = results[w.label]
            r["ratio_wall"] = round(r["median_s"] / base["median_s"], 2)
            r["ratio_cpu"] = round(r["median_cpu_s"] / base["median_cpu_s"], 2)
        biggest = results[str(max(sizes))] if sizes else None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for label, r in results.items():
        extra = f", {r['ratio_wall']}x wall, {r['ratio_cpu']}x CPU of the empty store's" if "ratio_wall" in r else ""
        print(f"{label:>7}: {r['median_s'] * 1000:.0f} ms a write (p90 {r['p90_s'] * 1000:.0f} ms, "
              f"{r['median_cpu_s'] * 1000:.0f} CPU-ms){extra}")
    report = {
        "writes_per_store": args.writes * args.rounds,
        "rounds": args.rounds,
        "built": {str(k): v for k, v in built.items()},
        "results": results,
        "target": {"ratio_max": TARGET_RATIO, "at_chunks": max(sizes) if sizes else None},
        "reached": bool(biggest and biggest["ratio_wall"] <= TARGET_RATIO),
        "machine": store_machine_info(),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
    }
    emit_report(report, args.json_out, name="store_write")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
