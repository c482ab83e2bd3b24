"""Vector search at scale: 100,000 synthetic chunks (unit vectors, dim 384) in the store's LanceDB chunks table,
searched through the store's own ``LanceStore.search``, against exact brute force with numpy on the same vectors
in the same run (same queries, interleaved): median / p95 latency and recall@10 against the exact top 10.

    .venv/bin/python bench/vector_scale.py [--rows 100000] [--dim 384] [--queries 200] [--json out.json]

Data: ``--clusters`` Gaussian clusters (default 1,000; centre + noise, normalised), which is how real embeddings
look (topics), and queries that are noisy copies of random stored vectors. ``--clusters 0`` gives uniformly
random unit vectors instead (no structure at all: the hardest case for any partitioning index; reported too).

Rows: flat = exact scan (the store below ``VECTOR_INDEX_MIN_ROWS``); index = the store's vector index
(``VECTOR_INDEX_TYPE`` with ``VECTOR_NPROBES`` partitions probed and ``VECTOR_REFINE_FACTOR`` exact re-ranking),
built by ``LanceStore.ensure_indexes`` exactly as a harvest would; plus any ``--sweep`` nprobes:refine pairs.
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

from bench._common import emit_report, store_machine_info  # noqa: E402


def make_data(rows: int, dim: int, clusters: int, queries: int, seed: int = 0):
    import numpy as np

    rng = np.random.default_rng(seed)
    if clusters:
        centres = rng.standard_normal((clusters, dim)).astype(np.float32)
        assign = rng.integers(0, clusters, rows)
        data = centres[assign] + 0.6 * rng.standard_normal((rows, dim)).astype(np.float32)
    else:
        data = rng.standard_normal((rows, dim)).astype(np.float32)
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    if clusters:
        base = data[rng.integers(0, rows, queries)]
        q = base + 0.05 * rng.standard_normal((queries, dim)).astype(np.float32)
    else:
        q = rng.standard_normal((queries, dim)).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return data, q.astype(np.float32)


def numpy_topk(data, q, k):
    import numpy as np

    scores = data @ q
    idx = np.argpartition(-scores, k)[:k]
    return idx[np.argsort(-scores[idx])]


def summarise(lat: list[float]) -> dict:
    s = sorted(lat)
    return {
        "median_ms": round(statistics.median(s) * 1000, 2),
        "p95_ms": round(s[int(0.95 * (len(s) - 1))] * 1000, 2),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--clusters", type=int, default=1000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--sweep", default="", help="extra nprobes:refine pairs, e.g. 10:5,40:10")
    ap.add_argument("--no-flat", action="store_true", help="skip the flat LanceDB scan row")
    ap.add_argument("--dir", default=None, help="where the table is built (default: a temp dir)")
    ap.add_argument("--json", dest="json_out", default=None)
    args = ap.parse_args(argv)

    from memory_store import store as store_mod
    from memory_store.store import LanceStore

    data, queries = make_data(args.rows, args.dim, args.clusters, args.queries)
    exact = [numpy_topk(data, q, args.k) for q in queries]
    base = Path(args.dir or tempfile.mkdtemp(prefix="vector-scale-"))
    store = LanceStore(base, args.dim)
    t0 = time.perf_counter()
    batch = 10_000
    for start in range(0, args.rows, batch):
        stop = min(args.rows, start + batch)
        rows = [
            {
                "id": f"sha256:{i:064x}",
                "charter_id": "scale",
                "url": f"https://synthetic.example/{i // 8}",
                "selector": "body",
                "text": f"synthetic chunk {i}",
                "tokens": 3,
                "split_algo": "synthetic",
                "created_at": "2026-01-01T00:00:00Z",
                "also_seen_at": [],
            }
            for i in range(start, stop)
        ]
        store.upsert_chunks(rows, data[start:stop])
    load_s = time.perf_counter() - t0
    index_of = {f"sha256:{i:064x}": i for i in range(args.rows)}

    def run_both() -> tuple[dict, float, dict]:
        """Each query: numpy exact, then the store's search (interleaved, so both see the same machine load)."""
        lat, rec, np_lat = [], [], []
        for q, ex in zip(queries, exact, strict=True):
            t = time.perf_counter()
            numpy_topk(data, q, args.k)
            np_lat.append(time.perf_counter() - t)
            t = time.perf_counter()
            hits = store.search(q, args.k)
            lat.append(time.perf_counter() - t)
            got = {index_of[h["id"]] for h in hits}
            rec.append(len(got & set(ex.tolist())) / args.k)
        return summarise(lat), statistics.fmean(rec), summarise(np_lat)

    results: list[dict] = []
    # warm-up (page cache, table handles)
    for q in queries[:5]:
        store.search(q, args.k)
        numpy_topk(data, q, args.k)
    if not args.no_flat:
        flat_lat, flat_rec, np_lat = run_both()
        results.append(
            {
                "method": "lancedb flat (exact scan)",
                **flat_lat,
                "recall@10": round(flat_rec, 4),
                "numpy_median_ms": np_lat["median_ms"],
            }
        )
    t0 = time.perf_counter()
    old_min = store_mod.VECTOR_INDEX_MIN_ROWS
    store_mod.VECTOR_INDEX_MIN_ROWS = min(old_min, args.rows)
    store.ensure_indexes()
    store_mod.VECTOR_INDEX_MIN_ROWS = old_min
    index_s = time.perf_counter() - t0
    assert store.has_vector_index(), "vector index was not built"
    pairs = [(store_mod.VECTOR_NPROBES, store_mod.VECTOR_REFINE_FACTOR)]
    for item in filter(None, args.sweep.split(",")):
        p, r = item.split(":")
        pairs.append((int(p), int(r)))
    for nprobes, refine in pairs:
        store_mod.VECTOR_NPROBES, store_mod.VECTOR_REFINE_FACTOR = nprobes, refine
        for q in queries[:5]:
            store.search(q, args.k)
        lat, rec, np_lat = run_both()
        results.append(
            {
                "method": f"lancedb {store_mod.VECTOR_INDEX_TYPE} nprobes={nprobes} refine_factor={refine}",
                **lat,
                "recall@10": round(rec, 4),
                "numpy_median_ms": np_lat["median_ms"],
                "numpy_p95_ms": np_lat["p95_ms"],
            }
        )
    for r in results:
        r["ratio_to_numpy"] = round(r["median_ms"] / r["numpy_median_ms"], 2)
        print(json.dumps(r), file=sys.stderr, flush=True)
    machine = store_machine_info()
    report = {
        "rows": args.rows,
        "dim": args.dim,
        "clusters": args.clusters,
        "queries": args.queries,
        "k": args.k,
        "load_s": round(load_s, 1),
        "index_build_s": round(index_s, 1),
        "index_type": store_mod.VECTOR_INDEX_TYPE,
        "index_min_rows": store_mod.VECTOR_INDEX_MIN_ROWS,
        "results": results,
        "machine": machine,
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
    }
    emit_report(report, args.json_out, name="vector_scale")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
