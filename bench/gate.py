"""The benchmark gate: fast, deterministic benchmarks on small fixed subsets, checked against pinned floors.

    python bench/gate.py [--eval-dir ../shared/eval]            # run them, write bench/results/gate.json, check
    python bench/gate.py --results FILE                         # check a results file (no run)
    python bench/gate.py --only segmentation,extraction         # some of them

Exit 0 when every metric is at or above its floor in ``bench/baseline.json``, 1 when one dropped below (each drop is
named), 2 for bad usage. The subsets (about a minute on 2 cores, no network, no browser):

- ``segmentation``: boundary F1 of brt's sentence splitter (syntok through ``memory_store.text``) on the 455
  hand-checked sentences of ``bench/data/sentence_gold.json``; baseline in the same run: the plain regex splitter.
- ``extraction``: 4-gram shingle F1 of brt's extractor (``extract_page`` on the raw HTML, no browser) on the first
  ``EXTRACTION_PAGES`` pages (by id) of article-extraction-benchmark; baseline: ``trafilatura.extract`` defaults.
- ``retrieval``: nDCG@10 of hybrid retrieval (the store's default, without MMR) on the first ``RETRIEVAL_QUERIES``
  SciFact test queries (by id) over their relevant abstracts plus the first others in corpus order,
  ``RETRIEVAL_DOCS`` in all, through the real ``Memory`` (chunking, ONNX embeddings, LanceDB); baselines: vector
  only and BM25 only.

The data is third-party and never copied into the repository: it is read from ``--eval-dir`` (default
``../shared/eval`` beside the repository). Where it is missing the gate says so and skips those benchmarks (exit 0,
or 2 with ``--require-data``), so a clone without the data still passes CI while a machine with it is held to the
floors. The floors sit a small margin under the values measured when they were pinned (``measured`` beside each
floor): a real drop fails, the last digits of a float do not.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench._common import DEFAULT_EVAL_DIR, store_machine_info, write_result  # noqa: E402

BASELINE = REPO_ROOT / "bench" / "baseline.json"
EXTRACTION_PAGES = 40
RETRIEVAL_QUERIES = 40
RETRIEVAL_DOCS = 300


class MissingData(Exception):
    """The eval data a gate benchmark needs is not there."""


# -- the benchmarks ---------------------------------------------------------------------------------------------


def run_segmentation(eval_dir: Path) -> dict[str, float]:
    from bench.segmentation import GOLD, load_texts, score

    squad = eval_dir / "squad"
    if not squad.is_dir() or not (eval_dir / "article-extraction-benchmark").is_dir():
        raise MissingData(f"{eval_dir} has no squad/ or article-extraction-benchmark/")
    pairs = load_texts(eval_dir, json.loads(GOLD.read_text(encoding="utf-8")))
    ours, plain = score(pairs, "syntok"), score(pairs, "regex")
    return {
        "syntok_f1": ours["f1"],
        "syntok_sentences_exact": ours["sentences_exact"],
        "baseline_regex_f1": plain["f1"],
        "sentences": sum(len(d["boundaries"]) + 1 for d, _ in pairs),
    }


def run_extraction(eval_dir: Path) -> dict[str, float]:
    import trafilatura

    from bench._common import AEB, evaluate, load_aeb
    from orchestrator.harvest.extract import extract_page

    if not (eval_dir / AEB / "ground-truth.json.gz").is_file():
        raise MissingData(f"{eval_dir} has no {AEB}/")
    pages = load_aeb(eval_dir)[:EXTRACTION_PAGES]
    gold = {p.id: p.gold for p in pages}
    ours, base = {}, {}
    for p in pages:
        html = p.html.decode("utf-8", errors="replace")
        page = extract_page(html, p.url)
        ours[p.id] = page.text if page else ""
        base[p.id] = trafilatura.extract(html) or ""
    m_ours, _ = evaluate(gold, ours, bootstrap=0)
    m_base, _ = evaluate(gold, base, bootstrap=0)
    return {
        "brt_f1": round(m_ours.f1, 4),
        "brt_precision": round(m_ours.precision, 4),
        "brt_recall": round(m_ours.recall, 4),
        "baseline_trafilatura_f1": round(m_base.f1, 4),
        "pages": len(pages),
    }


def run_retrieval(eval_dir: Path) -> dict[str, float]:
    from bench.retrieval_scifact import (
        build_store,
        corpus_subset,
        evaluate,
        load_corpus,
        load_qrels,
        load_queries,
    )
    from memory_store import Memory

    scifact = eval_dir / "beir-scifact"
    if not (scifact / "corpus.jsonl.gz").is_file():
        raise MissingData(f"{eval_dir} has no beir-scifact/")
    qrels = load_qrels(scifact, "test")
    qrels = {q: qrels[q] for q in sorted(qrels, key=int)[:RETRIEVAL_QUERIES]}
    corpus = corpus_subset(load_corpus(scifact), qrels, RETRIEVAL_DOCS)
    configs = {
        "hybrid": {"mode": "hybrid", "mmr_lambda": None},
        "vector": {"mode": "vector", "mmr_lambda": None},
        "bm25": {"mode": "bm25", "mmr_lambda": None},
    }
    with tempfile.TemporaryDirectory(prefix="brt-gate-") as tmp:
        mem = Memory("gate_scifact", basepath=Path(tmp))
        build_store(mem, corpus)
        out = evaluate(mem, load_queries(scifact), qrels, configs, k_chunks=100)
        chunks = mem.count_chunks()
    return {
        "hybrid_ndcg10": out["hybrid"]["ndcg@10"],
        "hybrid_recall100": out["hybrid"]["recall@100"],
        "baseline_vector_ndcg10": out["vector"]["ndcg@10"],
        "baseline_bm25_ndcg10": out["bm25"]["ndcg@10"],
        "queries": len(qrels),
        "docs": len(corpus),
        "chunks": chunks,
    }


BENCHMARKS: dict[str, Callable[[Path], dict[str, float]]] = {
    "segmentation": run_segmentation,
    "extraction": run_extraction,
    "retrieval": run_retrieval,
}


# -- the check --------------------------------------------------------------------------------------------------


def check(results: dict, baseline: dict) -> list[str]:
    """Every metric of ``results`` below its floor in ``baseline`` (``{bench: {metric: {"floor": x}}}``), and every
    pinned metric missing from a benchmark that ran. A benchmark that was skipped (absent from ``results``) is not
    checked."""
    failures = []
    for bench, metrics in baseline.get("floors", {}).items():
        got = results.get(bench)
        if got is None:
            continue
        for metric, pinned in metrics.items():
            value = got.get(metric)
            if not isinstance(value, int | float):
                failures.append(f"{bench}.{metric}: missing from the results")
            elif value < pinned["floor"]:
                failures.append(f"{bench}.{metric} = {value} is below its floor {pinned['floor']}"
                                f" (pinned at {pinned.get('measured')})")
    return failures


def run(names: list[str], eval_dir: Path) -> tuple[dict, list[str]]:
    """Run the named benchmarks; their metrics by name (with timings), and the names skipped for missing data."""
    results: dict = {}
    skipped = []
    for name in names:
        started = time.perf_counter()
        print(f"[gate] {name} ...", file=sys.stderr, flush=True)
        try:
            metrics = BENCHMARKS[name](eval_dir)
        except MissingData as exc:
            print(f"[gate] {name}: skipped, no eval data ({exc})", file=sys.stderr)
            skipped.append(name)
            continue
        metrics["seconds"] = round(time.perf_counter() - started, 1)
        results[name] = metrics
        print(f"[gate] {name}: {json.dumps(metrics)}", file=sys.stderr, flush=True)
    return results, skipped


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eval-dir", default=str(DEFAULT_EVAL_DIR), help="the eval data (default: ../shared/eval)")
    ap.add_argument("--baseline", default=str(BASELINE), help="the floors (default: bench/baseline.json)")
    ap.add_argument("--results", default=None, help="check this results file instead of running the benchmarks")
    ap.add_argument("--only", default=None, help="comma-separated subset of " + ",".join(BENCHMARKS))
    ap.add_argument("--require-data", action="store_true", help="missing eval data is an error (exit 2)")
    args = ap.parse_args(argv)
    try:
        baseline = json.loads(Path(args.baseline).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"[gate] error: cannot read the floors {args.baseline}: {exc}", file=sys.stderr)
        return 2
    if args.results:
        try:
            doc = json.loads(Path(args.results).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            print(f"[gate] error: cannot read {args.results}: {exc}", file=sys.stderr)
            return 2
        results, skipped = doc.get("results", doc), []
    else:
        names = args.only.split(",") if args.only else list(BENCHMARKS)
        unknown = [n for n in names if n not in BENCHMARKS]
        if unknown:
            print(f"[gate] error: unknown benchmark(s) {', '.join(unknown)}", file=sys.stderr)
            return 2
        results, skipped = run(names, Path(args.eval_dir).expanduser().resolve())
        if results:  # a run without data does not replace the last real result
            write_result("gate", {"results": results, "skipped": skipped, "machine": store_machine_info()})
    failures = check(results, baseline)
    for line in failures:
        print(f"[gate] FAIL {line}", file=sys.stderr)
    if failures:
        return 1
    if skipped and args.require_data:
        print(f"[gate] error: no eval data for {', '.join(skipped)} in {args.eval_dir}", file=sys.stderr)
        return 2
    checked = sum(len(m) for b, m in baseline.get("floors", {}).items() if b in results)
    print(f"[gate] ok: {checked} metric(s) at or above their floors"
          + (f"; skipped for missing data: {', '.join(skipped)}" if skipped else ""), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
