"""The evidence reader alone: among the candidate quotes of a question's page (every sentence and window of two or
three sentences, ``bench/reader_data.py``), does its best hold the answer (top-1), do its best three (top-3), and
does it say "none" where nothing answers? Several readers in one run, on the same candidates.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/reader_eval.py --data /tmp/brt-reader/data.jsonl.gz \\
        --model shipped --model new=DIR [--fold a|b] [--sources wqt wqt-te sci wqd squad wikiqa] \\
        [--max-candidates N] [--limit N] [--json out.json]
    ... --mine OUT.json.gz --model shipped --sources wqt wqt-te   # logits per question, for train_reader --mined

A model is ``shipped`` (this checkout's ``orchestrator/evidence/models``) or ``NAME=DIR`` (a folder holding
``reader.onnx`` and ``reader-tokenizer/``, as ``bench/train_reader.py`` writes it); each runs on ONNX Runtime
through the class synthesis uses (``orchestrator.evidence.reader.Reader``).

Held out: with ``--fold f`` the trainable sources (SQuAD, the two written web sets) are scored on the records of
fold ``f`` only (the fold model trained without them); SciFact questions, web-qa dev and WikiQA never train a
reader and are scored whole. SQuAD is scored on the 27 articles of SQuAD 2.0 dev only: the 13 articles only SQuAD
1.1 dev holds trained the reader ``--init`` starts from. ``--max-candidates N`` scores only each question's N best
candidates by BM25 (a quick look; the answering candidate may fall outside and count as a miss for every model
alike).

Figures per source and question kind: ``top1``, ``top3``; on unanswerable questions ``none`` (the share whose
best candidate's logit is below 0, the reader's "none of these"; meaningful for a reader trained with it) and
``auroc`` (how well the best candidate's logit tells answerable from unanswerable questions, threshold-free).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.train_reader import bm25_order, load_data  # noqa: E402

KINDS = ("factoid", "definitional", "explanatory")


def load_model(spec: str):
    from orchestrator.evidence.reader import READER_FILE, TOKENIZER_FILE, Reader

    if spec == "shipped":
        return "shipped", Reader(READER_FILE, TOKENIZER_FILE)
    name, _, folder = spec.partition("=")
    d = Path(folder)
    return name, Reader(d / "reader.onnx", d / "reader-tokenizer" / "tokenizer.json")


def auroc(pos: list[float], neg: list[float]) -> float | None:
    if not pos or not neg:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return round(wins / (len(pos) * len(neg)), 4)


def score(rows: list[dict]) -> dict:
    """Figures of one model over ``rows`` ({kind, hit1, hit3, best})."""
    out: dict = {}
    ans = [r for r in rows if r["kind"] != "unanswerable"]
    una = [r for r in rows if r["kind"] == "unanswerable"]
    for name, part in (("all", ans), *((k, [r for r in ans if r["kind"] == k]) for k in KINDS)):
        if part:
            out[name] = {"n": len(part), "top1": round(sum(r["hit1"] for r in part) / len(part), 4),
                         "top3": round(sum(r["hit3"] for r in part) / len(part), 4)}
    if una:
        out["unanswerable"] = {"n": len(una), "none": round(sum(r["best"] < 0 for r in una) / len(una), 4),
                               "auroc": auroc([r["best"] for r in ans], [r["best"] for r in una])}
        out["answered_below_0"] = round(sum(r["best"] < 0 for r in ans) / max(1, len(ans)), 4)
    return out


def selected(recs: list[dict], args: argparse.Namespace) -> list[dict]:
    out = []
    for r in recs:
        if r["source"] not in args.sources:
            continue
        if args.fold and r["train"] and r["fold"] != args.fold:
            continue
        if r.get("squad_set", "v2") != "v2":  # the reader this one may start from learned from these articles
            continue
        out.append(r)
    if args.limit:
        by: dict[str, list[dict]] = {}
        for r in out:
            by.setdefault(r["source"], []).append(r)
        out = [r for rs in by.values() for r in rs[:: max(1, len(rs) // args.limit)][: args.limit]]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True)
    ap.add_argument("--model", action="append", required=True, help="shipped | NAME=DIR (repeatable)")
    ap.add_argument("--fold", choices=("a", "b"), default=None)
    ap.add_argument("--sources", nargs="*", default=["wqt", "wqt-te", "sci", "wqd", "squad", "wikiqa"])
    ap.add_argument("--max-candidates", type=int, default=0)
    ap.add_argument("--limit", type=int, default=0, help="at most N questions per source, evenly spaced")
    ap.add_argument("--mine", default=None, help="write every model's first logits per question id here")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    recs = selected(load_data(Path(args.data)), args)
    models = [load_model(m) for m in args.model]
    rows: dict[str, dict[str, list[dict]]] = {name: {} for name, _ in models}
    mined: dict[str, list[float]] = {}
    t0 = time.monotonic()
    for n, r in enumerate(recs):
        cands = r["candidates"]
        idx = bm25_order(r)[: args.max_candidates] if args.max_candidates else list(range(len(cands)))
        pos = set(r["pos"])
        for name, reader in models:
            logits = reader.logits(r["question"], [cands[i]["reading"] for i in idx])
            order = sorted(range(len(idx)), key=lambda j: -logits[j])
            if args.mine and name == models[0][0]:
                full = [-1e4] * len(cands)
                for j, i in enumerate(idx):
                    full[i] = round(float(logits[j]), 3)
                mined[r["id"]] = full
            rows[name].setdefault(r["source"], []).append({
                "kind": r["kind"], "best": max(logits) if logits else -1e4,
                "hit1": bool(order) and idx[order[0]] in pos,
                "hit3": any(idx[j] in pos for j in order[:3]),
            })
        if (n + 1) % 100 == 0:
            print(f"[reader-eval] {n + 1}/{len(recs)} {time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)
    report = {"fold": args.fold, "max_candidates": args.max_candidates, "seconds": round(time.monotonic() - t0, 1),
              "models": {name: {src: score(rs) for src, rs in by_src.items()} for name, by_src in rows.items()}}
    text = json.dumps(report, indent=1)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")
    from bench._common import write_result

    write_result("reader_eval", report)
    if args.mine:
        Path(args.mine).write_bytes(gzip.compress(json.dumps(mined).encode()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
