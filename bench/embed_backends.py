"""Embedding backends of the bundled model side by side, in one run: FlagEmbedding (torch fp32), ONNX Runtime
fp32 and ONNX Runtime int8. For each: chunks/s on the same chunk texts, cosine of its vectors to FlagEmbedding's,
and SciFact nDCG@10 (vector search only, so the embedding alone is judged). The first of ``--backends`` is the
reference for cosine and speed-up (flag by default); ``--chunks 0`` skips the throughput rounds and
``--no-scifact`` the SciFact part, so each half can run on its own.

    nice -n 10 .venv/bin/python bench/embed_backends.py --eval-dir ../shared/eval [--rounds 3] [--json out.json]

Chunk texts: the gold article bodies of article-extraction-benchmark, chunked as brt chunks them (256-token
windows of the default model), the first ``--chunks`` (1,000). Throughput: each round embeds all of them with
every backend in turn (so load changes on a shared machine hit all backends alike); chunks/s is the median over
rounds, after a warm-up batch, next to the process CPU time per chunk (less sensitive to other processes on a
loaded machine than wall time, though spinning worker threads count in it). SciFact: the 5,183 abstracts
(title + blank line + abstract) chunked the same way,
every chunk and the 300 test queries embedded with each backend; a document's score is its best chunk's cosine;
nDCG@10 with binary gains as in bench/retrieval_scifact.py (which runs the whole store pipeline instead: run it
with ``BRT_EMBED_BACKEND=flag|onnx|onnx-int8`` for the same comparison through the store).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench._common import AEB, DEFAULT_EVAL_DIR, emit_report, store_machine_info  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

BACKENDS = ("flag", "onnx", "onnx-int8")


def chunk_texts(embedder, eval_dir: Path, limit: int) -> list[str]:
    """The first ``limit`` chunks of the article-extraction-benchmark gold bodies (sorted by page id)."""
    from memory_store.chunking import chunk_with

    if limit <= 0:
        return []
    with gzip.open(eval_dir / AEB / "ground-truth.json.gz", "rt", encoding="utf-8") as fh:
        gt = json.load(fh)
    out: list[str] = []
    for key in sorted(gt):
        body = (gt[key].get("articleBody") or "").strip()
        if body:
            out.extend(c.text for c in chunk_with(embedder, body))
        if len(out) >= limit:
            break
    return out[:limit]


def cosine_stats(vecs, ref) -> dict:
    import numpy as np

    cos = np.sum(vecs * ref, axis=1)
    return {
        "min": round(float(cos.min()), 6),
        "p01": round(float(np.percentile(cos, 1)), 6),
        "mean": round(float(cos.mean()), 6),
    }


def scifact_ndcg(embedder, eval_dir: Path, limit_docs: int) -> dict:
    """Vector-only nDCG@10 on SciFact test with ``embedder`` (doc score = best chunk cosine)."""
    import numpy as np

    from bench.retrieval_scifact import doc_text, load_corpus, load_qrels, load_queries, ndcg_at
    from memory_store.chunking import chunk_with

    sci = eval_dir / "beir-scifact"
    corpus = load_corpus(sci)
    if limit_docs:
        corpus = corpus[:limit_docs]
    texts, owner = [], []
    for d in corpus:
        for c in chunk_with(embedder, doc_text(d)):
            texts.append(c.text)
            owner.append(str(d["_id"]))
    started = time.perf_counter()
    mat = embedder.embed_documents(texts)
    seconds = time.perf_counter() - started
    queries = load_queries(sci)
    qrels = load_qrels(sci, "test")
    qids = sorted(qrels, key=int)
    qv = embedder.embed_queries([queries[q] for q in qids])
    owners = np.asarray(owner)
    scores = []
    for qi, qid in enumerate(qids):
        sims = mat @ qv[qi]
        ranked: list[str] = []
        seen: set[str] = set()
        for i in np.argsort(-sims, kind="stable"):
            did = owners[i]
            if did not in seen:
                seen.add(did)
                ranked.append(did)
                if len(ranked) == 10:
                    break
        scores.append(ndcg_at(ranked, qrels[qid], 10))
    return {
        "ndcg@10": round(statistics.fmean(scores), 4),
        "queries": len(qids),
        "docs": len(corpus),
        "chunks": len(texts),
        "embed_s": round(seconds, 1),
        "chunks_per_s": round(len(texts) / seconds, 2),
        "vectors": mat,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eval-dir", default=str(DEFAULT_EVAL_DIR))
    ap.add_argument("--backends", default=",".join(BACKENDS))
    ap.add_argument("--chunks", type=int, default=1000, help="chunk texts for the throughput rounds (0: none)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-scifact", action="store_true")
    ap.add_argument("--scifact-docs", type=int, default=0, help="only the first N SciFact docs (0 = all)")
    ap.add_argument("--json", dest="json_out", default=None)
    args = ap.parse_args(argv)
    eval_dir = Path(args.eval_dir).expanduser().resolve()
    backends = [b for b in args.backends.split(",") if b]
    ref_name = backends[0]  # cosine reference: the first backend (flag, unless left out)

    import numpy as np

    from memory_store.embeddings import get_embedder

    embedders = {}
    for b in backends:
        t0 = time.perf_counter()
        embedders[b] = get_embedder(backend=b)
        print(f"{b}: loaded in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    texts = chunk_texts(embedders[ref_name], eval_dir, args.chunks)
    tokens = embedders[ref_name].count_tokens_batch(texts)
    for e in embedders.values():
        e.embed_documents(texts[:32])  # warm-up
    rates: dict[str, list[float]] = {b: [] for b in backends}
    cpu_ms: dict[str, list[float]] = {b: [] for b in backends}
    vectors: dict[str, np.ndarray] = {}
    for r in range(args.rounds if texts else 0):
        for b in backends:
            t0, c0 = time.perf_counter(), time.process_time()
            vectors[b] = embedders[b].embed_documents(texts)
            rates[b].append(len(texts) / (time.perf_counter() - t0))
            cpu_ms[b].append(1000 * (time.process_time() - c0) / len(texts))
            print(
                f"round {r + 1} {b}: {rates[b][-1]:.2f} chunks/s, {cpu_ms[b][-1]:.0f} CPU-ms/chunk, "
                f"load {os.getloadavg()[0]:.1f}",
                file=sys.stderr,
                flush=True,
            )
    results: dict[str, dict] = {b: {"precision": embedders[b].precision} for b in backends}
    if vectors:
        base = statistics.median(rates[ref_name])
        base_cpu = statistics.median(cpu_ms[ref_name])
        for b in backends:
            rate = statistics.median(rates[b])
            results[b].update(
                {
                    "chunks_per_s": round(rate, 2),
                    "rounds_chunks_per_s": [round(x, 2) for x in rates[b]],
                    f"speedup_vs_{ref_name}": round(rate / base, 2),
                    "cpu_ms_per_chunk": round(statistics.median(cpu_ms[b]), 1),
                    f"cpu_speedup_vs_{ref_name}": round(base_cpu / statistics.median(cpu_ms[b]), 2),
                    f"cosine_to_{ref_name}": cosine_stats(vectors[b], vectors[ref_name]),
                }
            )
    if not args.no_scifact:
        sci_ref = None
        for b in backends:
            print(f"SciFact with {b} ...", file=sys.stderr, flush=True)
            sci = scifact_ndcg(embedders[b], eval_dir, args.scifact_docs)
            vecs = sci.pop("vectors")
            if sci_ref is None:
                sci_ref = vecs
            sci[f"cosine_to_{ref_name}"] = cosine_stats(vecs, sci_ref)
            results[b]["scifact"] = sci
            print(f"SciFact {b}: {json.dumps(sci)}", file=sys.stderr, flush=True)
        ref_ndcg = results[ref_name]["scifact"]["ndcg@10"]
        for b in backends:
            delta = round(results[b]["scifact"]["ndcg@10"] - ref_ndcg, 4)
            results[b]["scifact"][f"ndcg@10_delta_vs_{ref_name}"] = delta
    report = {
        "chunks": len(texts),
        "tokens_mean": round(statistics.fmean(tokens), 1) if tokens else None,
        "tokens_max": max(tokens, default=None),
        "rounds": args.rounds,
        "batch_size": embedders[ref_name].batch_size,
        "results": results,
        "machine": store_machine_info(),
        "loadavg_at_start_of_report": [round(x, 2) for x in os.getloadavg()],
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
    }
    try:
        import onnxruntime

        report["machine"]["onnxruntime"] = onnxruntime.__version__
    except ImportError:
        pass
    emit_report(report, args.json_out, name="embed_backends")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
