"""Evidence selection on BEIR SciFact: does a section cite the right abstract, and does it stay silent (a Gap)
rather than cite a wrong one? Each claim is a section (title = the claim); its evidence goes through the real
synthesis code (signature queries, hybrid retrieval with MMR, quote choice, the quote checks of
``orchestrator.synthesize.select_evidence`` and the section rules of ``section_evidence``) over the store that
``bench/retrieval_scifact.py`` builds.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/evidence_scifact.py --eval-dir ../shared/eval/beir-scifact \\
        --store-dir /tmp/brt-scifact-store [--split train|test] [--k 3] [--limit N] [--json out.json]

Rules compared in the same run, on the same candidates, for every evidence threshold of ``--thresholds``:
- ``retrieval``: the rule before quote checks: the first k hits (retrieval order) whose chunk cosine, best over
  the signature queries, meets the threshold (the baseline);
- ``quote``: the quote's own cosine to the question (read under its heading) meets the threshold, whatever the
  chunk's (an ablation: ``select_evidence(..., named=False)``);
- ``quote+names``: ``quote`` plus the names check (when the first remaining candidate's page names what the claim
  names, pages that never do are dropped): ``select_evidence`` as ``brt synthesize`` calls it;
- ``section``: what ``brt synthesize`` prints: ``quote+names`` given the section's question, then
  ``section_evidence`` (the answer-type rule, index entries, the quantity Gap). A claim is not a question, so
  it asks for no type: the two rules should agree.

Per rule and threshold, over the queries: ``p@1`` (the first block cites a relevant abstract), ``precision``
(relevant blocks / blocks), ``supported`` (some block is relevant), ``wrong_only`` (blocks given, none relevant:
the failure "cites what does not support the claim"), ``gap`` (no block at all). SciFact claims have about one
relevant abstract each, so precision is bounded by about 1/k. Tune with ``--split train``; report ``test``.
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

DEFAULT_THRESHOLDS = "0.25,0.30,0.35,0.40,0.45,0.50,0.55,0.60"


def doc_ids(hit) -> set[str]:
    urls = [hit.metadata["url"], *(hit.metadata.get("also_seen_at") or [])]
    return {u[len(URL_PREFIX) :] for u in urls if u.startswith(URL_PREFIX)}


def rule_blocks(rule: str, candidates, *, k: int, threshold: float, question: str = ""):
    """The blocks a rule picks (see the module docstring)."""
    from orchestrator.synthesize import section_evidence, select_evidence

    if rule == "retrieval":
        # one per chunk: a chunk's second quote comes right after its first
        firsts = [c for i, c in enumerate(candidates) if i == 0 or candidates[i - 1].hit is not c.hit]
        return [c for c in firsts if c.hit.score >= threshold][:k]
    # the threshold is the quotes' bar only: synthesize retrieves its candidates without a chunk-level one
    if rule != "section":
        return select_evidence(candidates, k=k, min_score=threshold, named=rule == "quote+names")
    return section_evidence(question, select_evidence(candidates, k=k, min_score=threshold, question=question))[0]


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
    ap.add_argument("--json", dest="json_out", default=None)
    args = ap.parse_args(argv)

    from memory_store import Memory
    from orchestrator.charter import Retrieval, Section
    from orchestrator.synthesize import evidence_candidates

    eval_dir = Path(args.eval_dir).expanduser().resolve()
    store_dir = Path(args.store_dir).expanduser()
    if not (store_dir / CHARTER_ID).is_dir():
        raise SystemExit(f"no store at {store_dir / CHARTER_ID}: build it with bench/retrieval_scifact.py --index-only")
    mem = Memory(CHARTER_ID, basepath=store_dir)
    queries = load_queries(eval_dir)
    qrels = load_qrels(eval_dir, args.split)
    qids = sorted(qrels, key=int)[: args.limit or None]
    thresholds = [float(x) for x in args.thresholds.split(",")]
    rules = ["retrieval", "quote", "quote+names", "section"]

    t0 = time.perf_counter()
    retrieval = Retrieval()
    low = min(thresholds)
    relevant: dict[str, dict[float, list[list[bool]]]] = {r: {t: [] for t in thresholds} for r in rules}
    latencies = []
    for n, qid in enumerate(qids, 1):
        section = Section(title=queries[qid])
        t1 = time.perf_counter()
        cands = evidence_candidates(mem, section, k=args.k, min_score=low, retrieval=retrieval)
        latencies.append(time.perf_counter() - t1)
        for rule in rules:
            for t in thresholds:
                blocks = rule_blocks(rule, cands, k=args.k, threshold=t, question=section.effective_question)
                relevant[rule][t].append([bool(doc_ids(c.hit) & qrels[qid]) for c in blocks])
        if n % 50 == 0:
            print(f"{n}/{len(qids)} queries, {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)

    results = {rule: {f"{t:.2f}": summarise(relevant[rule][t]) for t in thresholds} for rule in rules}
    machine = store_machine_info()
    report = {
        "split": args.split,
        "queries": len(qids),
        "k": args.k,
        "model": mem.model_name,
        "chunks": mem.count_chunks(),
        "candidates_median_ms": round(statistics.median(latencies) * 1000, 1),
        "results": results,
        "machine": machine,
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
    }
    emit_report(report, args.json_out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
