"""Evidence that answers, on real news pages: the issue's own setting (a research charter over news pages,
JavaScript on, HAR replay), scored like ``bench/evidence_squad.py``.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/evidence_news.py --eval-dir ../shared/eval \\
        [--questions bench/data/news_questions.json] [--charters per-cluster|all|both] \\
        [--baseline-rev REV] [--javascript on|off] [--render auto|always|never] \\
        [--embed-backend onnx|onnx-int8] [--json out.json]

The pages are the 33 of ``article-extraction-benchmark/topic-clusters.json`` (10 news events, 2-5 pages each),
served from a HAR written at run time under their original URLs (never copied into the repository). The
questions (``bench/data/news_questions.json``) were written for this benchmark from the pages' gold article
bodies by people who had not seen brt's output: per event 6-8 answerable questions, each with a regular
expression matching its answer as the pages state it and the pages that state it, and 3 unanswerable ones
(on topic, but no page of the event answers them).

``--charters per-cluster``: one charter per event (its pages as seeds); ``all``: one charter over all 33
pages, every event's questions as its sections (topics side by side in one store). Every charter goes through
the real CLI: ``brt harvest CHARTER --replay HAR`` then ``brt synthesize CHARTER --json``; ``--baseline-rev``
adds ``brt synthesize`` of that commit over the same store.

Metrics: ``answer@1`` (the first block's quote matches the answer), ``answer@k`` (any block's does),
``blocks`` per section, ``precision`` (blocks whose quote matches the answer, over all blocks: stricter than
SQuAD's, which also counts the answer's paragraph), ``page precision`` (blocks cited from a page that states
the answer), ``gap`` on answerable and unanswerable sections.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench._common import hosts_of, write_har  # noqa: E402
from bench.evidence_squad import (  # noqa: E402
    add_embed_backend_option,
    baseline_tree,
    clean_up,
    embed_backend,
    emit,
    run_cli,
    synth_blocks,
    write_bench_charter,
)

DEFAULT_QUESTIONS = REPO_ROOT / "bench" / "data" / "news_questions.json"


@dataclass
class NewsQuestion:
    cluster: str
    title: str
    question: str
    answer: re.Pattern | None
    pages: list[str]  # urls of the pages that state the answer
    answerable: bool
    kind: str


@dataclass
class Cluster:
    name: str
    urls: list[str]
    questions: list[NewsQuestion]


def load_clusters(eval_dir: Path, questions_path: Path) -> tuple[list[Cluster], dict[str, bytes]]:
    """The events with their questions, and every page's HTML by URL."""
    bench = eval_dir / "article-extraction-benchmark"
    topics = json.loads((bench / "topic-clusters.json").read_text())["clusters"]
    spec = json.loads(questions_path.read_text())
    pages: dict[str, bytes] = {}
    clusters = []
    for name, entries in topics.items():
        by_prefix = {e["id"][:12]: e["url"] for e in entries}
        for e in entries:
            pages[e["url"]] = gzip.decompress((bench / "html" / f"{e['id']}.html.gz").read_bytes())
        qs = []
        for q in spec.get(name, []):
            qs.append(NewsQuestion(
                name, q["title"], q["question"],
                re.compile(q["answer"], re.I) if q.get("answerable", True) else None,
                [by_prefix[p[:12]] for p in q.get("pages", [])],
                bool(q.get("answerable", True)), q.get("type", "other"),
            ))
        if qs:
            clusters.append(Cluster(name, [e["url"] for e in entries], qs))
    return clusters, pages


def write_charter(
    path: Path, cid: str, clusters: list[Cluster], *, javascript: bool, render: str | None = None
) -> Path:
    sections = []
    for c in clusters:
        for i, q in enumerate(c.questions):
            sections.append({"title": q.title, "label": f"{c.name[:12]}-{i}", "question": q.question})
    urls = [u for c in clusters for u in c.urls]
    return write_bench_charter(path, cid, f"News evidence benchmark ({cid})", hosts_of(urls), urls, sections,
                               javascript=javascript, render=render)


def _same_page(a: str, b: str) -> bool:
    return a.split("#")[0].rstrip("/") == b.split("#")[0].rstrip("/")


def score(questions: list[NewsQuestion], blocks: list[list[dict]]) -> dict:
    def has_answer(b: dict, q: NewsQuestion) -> bool:
        return bool(q.answer and q.answer.search(" ".join(b["quote"].split())))

    def from_answer_page(b: dict, q: NewsQuestion) -> bool:
        urls = [b["url"], *[s.get("url", "") for s in b.get("also_at", []) if isinstance(s, dict)]]
        return any(_same_page(u, p) for u in urls for p in q.pages)

    out = {}
    for kind, want in (("answerable", True), ("unanswerable", False)):
        pairs = [(q, b) for q, b in zip(questions, blocks, strict=True) if q.answerable == want]
        if not pairs:
            continue
        n = len(pairs)
        nblocks = sum(len(b) for _, b in pairs)
        row = {"sections": n, "blocks_per_section": round(nblocks / n, 3),
               "gap": round(sum(1 for _, b in pairs if not b) / n, 4)}
        if want:
            row["answer@1"] = round(sum(1 for q, b in pairs if b and has_answer(b[0], q)) / n, 4)
            row["answer@k"] = round(sum(1 for q, b in pairs if any(has_answer(x, q) for x in b)) / n, 4)
            good = sum(has_answer(x, q) for q, b in pairs for x in b)
            row["precision"] = round(good / nblocks, 4) if nblocks else None
            row["page_precision"] = (
                round(sum(from_answer_page(x, q) for q, b in pairs for x in b) / nblocks, 4) if nblocks else None)
        out[kind] = row
    return out


def misses(questions: list[NewsQuestion], blocks: list[list[dict]]) -> list[dict]:
    """Answerable sections whose first block does not quote the answer (for reading, not scoring)."""
    rows = []
    for q, b in zip(questions, blocks, strict=True):
        if q.answerable and not (b and q.answer.search(" ".join(b[0]["quote"].split()))):
            rows.append({"cluster": q.cluster, "question": q.question, "answer": q.answer.pattern,
                         "at_k": any(q.answer.search(" ".join(x["quote"].split())) for x in b),
                         "blocks": [{"score": x.get("score"), "url": x["url"], "quote": x["quote"][:300]} for x in b]})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eval-dir", default=str(REPO_ROOT.parent / "shared" / "eval"))
    ap.add_argument("--questions", default=str(DEFAULT_QUESTIONS))
    ap.add_argument("--charters", choices=["per-cluster", "all", "both"], default="both")
    ap.add_argument("--javascript", choices=["on", "off"], default="on")
    ap.add_argument("--render", choices=["auto", "always", "never"], default=None,
                    help="the charters' harvest.render (default: the charter default, auto)")
    ap.add_argument("--baseline-rev", default="", help="commit whose brt synthesize is the baseline ('' = none)")
    ap.add_argument("--misses", default=None, help="write this checkout's misses (questions, blocks) here")
    add_embed_backend_option(ap)
    ap.add_argument("--keep-tmp", action="store_true")
    ap.add_argument("--json", dest="json_out", default=None)
    args = ap.parse_args(argv)

    eval_dir = Path(args.eval_dir).expanduser().resolve()
    clusters, pages = load_clusters(eval_dir, Path(args.questions))
    tmp = Path(tempfile.mkdtemp(prefix="brt-bench-news-"))
    env = dict(os.environ, BRT_HOME=str(tmp / "brt_home"), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env, backend, suffix = embed_backend(env, args.embed_backend)
    har = write_har(pages.items(), tmp / "news.har")
    base = baseline_tree(args.baseline_rev, tmp) if args.baseline_rev else None
    report: dict = {"clusters": len(clusters), "questions": sum(len(c.questions) for c in clusters),
                    "javascript": args.javascript, "runs": {}}
    missed: list[dict] = []
    try:
        groups: list[tuple[str, list[Cluster]]] = []
        if args.charters in ("per-cluster", "both"):
            groups += [(f"news_{i}", [c]) for i, c in enumerate(clusters)]
        if args.charters in ("all", "both"):
            groups.append(("news_all", clusters))
        totals: dict[str, tuple[list[NewsQuestion], list[list[dict]]]] = {}
        timings: dict[str, float] = {}
        for cid, cs in groups:
            key = "one charter for all events" if cid == "news_all" else "one charter per event"
            qs = [q for c in cs for q in c.questions]
            charter = write_charter(tmp / f"{cid}.yaml", cid, cs, javascript=args.javascript == "on",
                                    render=args.render)
            t0 = time.monotonic()
            run_cli(["harvest", str(charter), "--replay", str(har)], pythonpath=REPO_ROOT, env=env)
            timings[f"harvest {cid}"] = round(time.monotonic() - t0, 1)
            systems = [("brt", REPO_ROOT)] + ([(f"baseline {args.baseline_rev}", base)] if base else [])
            for system, tree in systems:
                out = tmp / "out" / f"{cid}-{system[:4]}.md"
                blocks, wall = synth_blocks(charter, pythonpath=tree, env=env, out=out)
                timings[f"synthesize {cid} ({system})"] = round(wall, 1)
                allq, allb = totals.setdefault(f"{key} | {system}", ([], []))
                allq.extend(qs)
                allb.extend(blocks)
                if system == "brt":
                    missed += [dict(m, charter=cid) for m in misses(qs, blocks)]
            print(f"[news] {cid}: {len(qs)} sections, harvest {timings[f'harvest {cid}']} s", file=sys.stderr)
        for name, (qs, blocks) in totals.items():
            report["runs"][name] = score(qs, blocks)
        report["render"] = args.render or "charter default (auto)"
        report["embed_backend"] = backend
        if args.render is None:
            emit(report, timings, args.json_out, f"evidence_news{suffix}")
        else:  # a path's figures beside the shipped ones
            emit(report, timings, args.json_out, f"evidence_news_render_{args.render}{suffix}")
        if args.misses:
            Path(args.misses).write_text(json.dumps(missed, indent=2, ensure_ascii=False) + "\n")
    finally:
        clean_up(base, tmp, keep=args.keep_tmp, tag="news")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
