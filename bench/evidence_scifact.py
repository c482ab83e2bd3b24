"""Evidence selection on BEIR SciFact: does a section cite the right abstract, and does it stay silent (a Gap)
rather than cite a wrong one? Each claim is a section (title = the claim); its evidence goes through the real
synthesis code (``orchestrator.evidence``: signature queries, hybrid retrieval with MMR, candidate quotes, the
fitted scorer and the selection) over the store that ``bench/retrieval_scifact.py`` builds.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/evidence_scifact.py --eval-dir ../shared/eval/beir-scifact \\
        --store-dir /tmp/brt-scifact-store [--split train|test] [--k 3] [--limit N] [--baseline-rev REV] \\
        [--json out.json]

Rules compared in the same run, on the same store:
- ``retrieval``: the first k retrieved chunks whose cosine, best over the signature queries, meets a threshold
  (no quote checks; the floor every evidence rule should beat);
- ``scorer``: what ``brt synthesize`` prints: the scorer's probability against each threshold of
  ``--thresholds`` (``fitted`` = the shipped scorer's own threshold);
- ``baseline <rev>`` (``--baseline-rev``): this benchmark as that commit had it, run from a ``git worktree`` of
  it on the same store and split (its ``section`` rule: what ``brt synthesize`` printed then).

Per rule and threshold, over the queries: ``p@1`` (the first block cites a relevant abstract), ``precision``
(relevant blocks / blocks), ``supported`` (some block is relevant), ``wrong_only`` (blocks given, none relevant:
the failure "cites what does not support the claim"), ``gap`` (no block at all). SciFact claims have about one
relevant abstract each, so precision is bounded by about 1/k. Nothing is fitted on SciFact: the scorer is fitted
on question-answering dev data (``bench/fit_evidence_scorer.py``), so these are held-out figures for claims.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
for p in (REPO_ROOT, REPO_ROOT / "bench"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from retrieval_scifact import CHARTER_ID, URL_PREFIX, load_qrels, load_queries  # noqa: E402

from bench._common import emit_report, store_machine_info  # noqa: E402

DEFAULT_THRESHOLDS = "0.05,0.10,0.20,0.30,0.40,0.50"
RETRIEVAL_THRESHOLDS = "0.25,0.30,0.35,0.40,0.45"


def doc_ids(hit) -> set[str]:
    urls = [hit.metadata["url"], *(hit.metadata.get("also_seen_at") or [])]
    return {u[len(URL_PREFIX) :] for u in urls if u.startswith(URL_PREFIX)}


def baseline_run(rev: str, args: argparse.Namespace) -> dict:
    """This benchmark as commit ``rev`` had it, on the same store and split: its ``section`` rule."""
    import json
    import subprocess
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="brt-scifact-base-"))
    tree = tmp / "tree"
    subprocess.run(["git", "-C", str(REPO_ROOT), "worktree", "add", "--detach", str(tree), rev], check=True,
                   capture_output=True)
    try:
        out = tmp / "base.json"
        cmd = [sys.executable, str(tree / "bench" / "evidence_scifact.py"), "--eval-dir", args.eval_dir,
               "--store-dir", args.store_dir, "--split", args.split, "--k", str(args.k), "--json", str(out)]
        if args.limit:
            cmd += ["--limit", str(args.limit)]
        subprocess.run(cmd, check=True, capture_output=True, env=dict(os.environ, PYTHONPATH=str(tree)), cwd=tree)
        return json.loads(out.read_text())["results"].get("section", {})
    finally:
        subprocess.run(["git", "-C", str(REPO_ROOT), "worktree", "remove", "--force", str(tree)], capture_output=True)


def summarise(per_query: list[list[bool]]) -> dict:
    n = len(per_query)
    blocks = sum(len(b) for b in per_query)
    return {
        "p@1": round(sum(1 for b in per_query if b and b[0]) / n, 4),
        "precision": round(sum(sum(b) for b in per_query) / blocks, 4) if blocks else None,
        "supported": round(sum(1 for b in per_query if any(b)) / n, 4),
        "wrong_only": round(sum(1 for b in per_query if b and not any(b)) / n, 4),
        "gap": round(sum(1 for b in per_query if not b) / n, 4),
        "blocks_per_query": round(blocks / n, 3),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eval-dir", default=str(REPO_ROOT.parent / "shared" / "eval" / "beir-scifact"))
    ap.add_argument("--store-dir", required=True, help="the store built by bench/retrieval_scifact.py")
    ap.add_argument("--split", default="test", choices=["test", "train"])
    ap.add_argument("--k", type=int, default=3, help="evidence blocks per section at most")
    ap.add_argument("--thresholds", default=DEFAULT_THRESHOLDS)
    ap.add_argument("--limit", type=int, default=0, help="only the first N queries")
    ap.add_argument("--baseline-rev", default="", help="commit whose evidence_scifact.py is run as the baseline")
    ap.add_argument("--json", dest="json_out", default=None)
    args = ap.parse_args(argv)

    from memory_store import Memory
    from orchestrator.charter import Retrieval, Section
    from orchestrator.evidence import SynthesisCache, load_scorer, section_candidates, select
    from orchestrator.evidence.section import score_candidates

    eval_dir = Path(args.eval_dir).expanduser().resolve()
    store_dir = Path(args.store_dir).expanduser()
    if not (store_dir / CHARTER_ID).is_dir():
        raise SystemExit(f"no store at {store_dir / CHARTER_ID}: build it with bench/retrieval_scifact.py --index-only")
    mem = Memory(CHARTER_ID, basepath=store_dir)
    queries = load_queries(eval_dir)
    qrels = load_qrels(eval_dir, args.split)
    qids = sorted(qrels, key=int)[: args.limit or None]
    scorer = load_scorer()
    thresholds = {f"{float(x):.2f}": float(x) for x in args.thresholds.split(",")} | {"fitted": scorer.threshold}
    cosines = [float(x) for x in RETRIEVAL_THRESHOLDS.split(",")]

    t0 = time.perf_counter()
    retrieval = Retrieval()
    cache = SynthesisCache.for_memory(mem)
    relevant: dict[str, dict[str, list[list[bool]]]] = {
        "retrieval": {f"{t:.2f}": [] for t in cosines}, "scorer": {t: [] for t in thresholds}}
    latencies = []
    for n, qid in enumerate(qids, 1):
        section = Section(title=queries[qid])
        t1 = time.perf_counter()
        cands = section_candidates(mem, section, k=args.k, retrieval=retrieval, cache=cache)
        scored = score_candidates(section.effective_question, cands, scorer)
        latencies.append(time.perf_counter() - t1)
        for t in cosines:
            hits = [h for h in cands.hits if h.score >= t][: args.k]
            relevant["retrieval"][f"{t:.2f}"].append([bool(doc_ids(h) & qrels[qid]) for h in hits])
        for name, t in thresholds.items():
            blocks = select(scored, k=args.k, threshold=t, second=scorer.second)
            relevant["scorer"][name].append([bool(doc_ids(c.span.hit) & qrels[qid]) for c in blocks])
        if n % 50 == 0:
            print(f"{n}/{len(qids)} queries, {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)

    results = {rule: {t: summarise(v) for t, v in by.items()} for rule, by in relevant.items()}
    if args.baseline_rev:
        results[f"baseline {args.baseline_rev}"] = baseline_run(args.baseline_rev, args)
    machine = store_machine_info()
    report = {
        "split": args.split,
        "queries": len(qids),
        "k": args.k,
        "model": mem.model_name,
        "scorer": {"sha256": scorer.sha256, "threshold": scorer.threshold, "second": scorer.second},
        "chunks": mem.count_chunks(),
        "candidates_median_ms": round(statistics.median(latencies) * 1000, 1),
        "results": results,
        "machine": machine,
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
    }
    emit_report(report, args.json_out, name="evidence_scifact")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
