"""Retrieval quality on BEIR SciFact through the real store: nDCG@10 and recall@100 for vector-only, BM25-only,
hybrid (RRF) and hybrid + MMR, with median/p95 query latency, all measured in the same run.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/retrieval_scifact.py --eval-dir ../shared/eval/beir-scifact \
        --store-dir /tmp/brt-scifact-store [--split test|train] [--json out.json]

The 5,183 abstracts go through ``Memory.add_many`` (real chunking, embedding and LanceDB store; page text =
title + blank line + abstract; page url ``scifact://doc/<corpus-id>``). Every query goes through
``Memory.search``. A document's rank is the rank of its best chunk (hits are mapped chunk url -> doc id, first
occurrence wins; a chunk whose text several docs share counts for each). Embedding the corpus takes several
minutes on a small CPU (about 33 min for 9,880 chunks on a loaded 2-core machine), so the built store is kept in
``--store-dir`` and reused by later runs (it is only topped up with missing docs).

Metrics as trec_eval / pytrec_eval compute them: nDCG@10 with binary gains (all SciFact qrels are 1) and the
ideal DCG over the query's relevant docs; recall@100 = relevant docs in the first 100 distinct docs / relevant.
Tune anything only with ``--split train`` (qrels/train.tsv); the reported numbers are ``--split test``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
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

CHARTER_ID = "beir_scifact"
URL_PREFIX = "scifact://doc/"


def load_corpus(eval_dir: Path) -> list[dict]:
    with gzip.open(eval_dir / "corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def load_queries(eval_dir: Path) -> dict[str, str]:
    with gzip.open(eval_dir / "queries.jsonl.gz", "rt", encoding="utf-8") as fh:
        return {str(q["_id"]): q["text"] for q in map(json.loads, fh) if q}


def load_qrels(eval_dir: Path, split: str) -> dict[str, set[str]]:
    qrels: dict[str, set[str]] = {}
    lines = (eval_dir / "qrels" / f"{split}.tsv").read_text().splitlines()
    for line in lines[1:]:
        qid, did, score = line.split("\t")
        if int(score) > 0:
            qrels.setdefault(qid, set()).add(did)
    return qrels


def corpus_subset(corpus: list[dict], qrels: dict[str, set[str]], n: int) -> list[dict]:
    """Every doc relevant to ``qrels``, then the first other docs in corpus order, ``n`` in all (corpus order)."""
    relevant = set().union(*qrels.values())
    keep = {str(d["_id"]) for d in corpus if str(d["_id"]) in relevant}
    for d in corpus:
        if len(keep) >= n:
            break
        keep.add(str(d["_id"]))
    return [d for d in corpus if str(d["_id"]) in keep]


def doc_text(doc: dict) -> str:
    title = (doc.get("title") or "").strip()
    text = (doc.get("text") or "").strip()
    return f"{title}\n\n{text}" if title else text


def build_store(mem, corpus: list[dict], batch: int = 256) -> dict:
    """Add every doc not yet stored; returns timing info."""
    have = {p.url for p in mem.pages()}
    todo = [d for d in corpus if URL_PREFIX + str(d["_id"]) not in have]
    started = time.perf_counter()
    for i in range(0, len(todo), batch):
        part = todo[i : i + batch]
        mem.add_many(
            [{"url": URL_PREFIX + str(d["_id"]), "text": doc_text(d), "title": d.get("title") or None} for d in part]
        )
        done = i + len(part)
        el = time.perf_counter() - started
        print(
            f"indexed {done}/{len(todo)} docs, {mem.count_chunks()} chunks, {el:.0f} s",
            file=sys.stderr,
            flush=True,
        )
    return {"added_docs": len(todo), "index_s": round(time.perf_counter() - started, 1)}


def ndcg_at(ranked: list[str], rel: set[str], k: int = 10) -> float:
    dcg = sum(1.0 / math.log2(i + 2) for i, d in enumerate(ranked[:k]) if d in rel)
    idcg = sum(1.0 / math.log2(i + 2) for i in range(min(len(rel), k)))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: list[str], rel: set[str], k: int = 100) -> float:
    return len(set(ranked[:k]) & rel) / len(rel) if rel else 0.0


def docs_of(hits) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    for h in hits:  # a chunk stored once for several docs (identical text) counts for each of them
        for url in [h.metadata["url"], *(h.metadata.get("also_seen_at") or [])]:
            did = url[len(URL_PREFIX) :]
            if did not in seen:
                seen.add(did)
                out.append(did)
    return out


CONFIGS = {
    "vector": {"mode": "vector", "mmr_lambda": None},
    "bm25": {"mode": "bm25", "mmr_lambda": None},
    "hybrid": {"mode": "hybrid", "mmr_lambda": None},
    "hybrid+mmr": {"mode": "hybrid", "mmr_lambda": 0.7},
}


def evaluate(mem, queries: dict[str, str], qrels: dict[str, set[str]], configs: dict, k_chunks: int) -> dict:
    out = {}
    qids = sorted(qrels, key=lambda x: int(x))
    # warm up: model, tables, FTS index
    mem.search("warm up query", k=10)
    for name, opts in configs.items():
        nd, rc, lat = [], [], []
        for qid in qids:
            t0 = time.perf_counter()
            hits = mem.search(queries[qid], k=k_chunks, **opts)
            lat.append(time.perf_counter() - t0)
            ranked = docs_of(hits)
            nd.append(ndcg_at(ranked, qrels[qid], 10))
            rc.append(recall_at(ranked, qrels[qid], 100))
        lat_sorted = sorted(lat)
        out[name] = {
            "options": opts,
            "ndcg@10": round(statistics.fmean(nd), 4),
            "recall@100": round(statistics.fmean(rc), 4),
            "latency_median_ms": round(statistics.median(lat) * 1000, 1),
            "latency_p95_ms": round(lat_sorted[int(0.95 * (len(lat_sorted) - 1))] * 1000, 1),
            "queries": len(qids),
        }
        print(f"{name:12s} {json.dumps(out[name])}", file=sys.stderr, flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eval-dir", default=str(REPO_ROOT.parent / "shared" / "eval" / "beir-scifact"))
    ap.add_argument("--store-dir", default=None, help="where the built store is kept between runs")
    ap.add_argument("--split", default="test", choices=["test", "train"])
    ap.add_argument("--k-chunks", type=int, default=150, help="chunks asked of Memory.search per query")
    ap.add_argument("--index-only", action="store_true")
    ap.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated subset of " + ",".join(CONFIGS))
    ap.add_argument("--extra", default=None, help="JSON dict name -> search options, evaluated too (tuning)")
    ap.add_argument("--limit", type=int, default=0, help="only the first N queries (smoke runs)")
    ap.add_argument(
        "--docs",
        type=int,
        default=0,
        help="corpus subset (0 = all 5,183): every doc relevant to the split's qrels, then the first docs in"
        " corpus order up to N in all (for quick before/after runs; the numbers are not comparable to full runs)",
    )
    ap.add_argument("--json", dest="json_out", default=None)
    args = ap.parse_args(argv)

    eval_dir = Path(args.eval_dir).expanduser().resolve()
    store_dir = Path(args.store_dir).expanduser() if args.store_dir else Path(tempfile.mkdtemp(prefix="scifact-"))
    store_dir.mkdir(parents=True, exist_ok=True)

    from memory_store import Memory

    mem = Memory(CHARTER_ID, basepath=store_dir)
    corpus = load_corpus(eval_dir)
    if args.docs:
        corpus = corpus_subset(corpus, load_qrels(eval_dir, args.split), args.docs)
    info = build_store(mem, corpus)
    info.update(docs=mem.count_pages(), chunks=mem.count_chunks(), store=str(store_dir / CHARTER_ID))
    print(json.dumps(info), file=sys.stderr, flush=True)
    if args.index_only:
        return 0
    queries = load_queries(eval_dir)
    qrels = load_qrels(eval_dir, args.split)
    if args.limit:
        keep = sorted(qrels, key=lambda x: int(x))[: args.limit]
        qrels = {q: qrels[q] for q in keep}
    configs = {n: CONFIGS[n] for n in args.configs.split(",") if n}
    if args.extra:
        configs.update(json.loads(args.extra))
    results = evaluate(mem, queries, qrels, configs, args.k_chunks)
    machine = store_machine_info()
    report = {
        "split": args.split,
        "queries": len(qrels),
        "model": mem.model_name,
        "split_algo": mem.split_algo,
        "store": info,
        "k_chunks": args.k_chunks,
        "results": results,
        "machine": machine,
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
    }
    emit_report(report, args.json_out, name="retrieval_scifact")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
