"""Evidence on research questions over real saved web pages (``web-qa``): does the first block quote the answer,
and does a question that no page answers get a Gap?

    HF_HUB_OFFLINE=1 .venv/bin/python bench/evidence_webqa.py --eval-dir ../shared/eval \\
        [--baseline-rev REV] [--scorer-folds DIR] [--javascript on|off] [--render auto|always|never] \\
        [--embed-backend onnx|onnx-int8] [--json out.json]

The set (``web-qa/web-qa-dev.json``, see its PROVENANCE.md) has three charters of 10-12 real pages (Readability's
test pages) and 82 questions: factoid, definitional, explanatory and unanswerable. Each page's raw
``source.html.gz`` is served from a HAR written at run time under the set's synthetic URL (never copied into the
repository; sub-resources are not in the HAR, so the replay aborts them). Each charter goes through the real CLI:
``brt harvest CHARTER --replay HAR``, then ``brt synthesize CHARTER --json``.

Systems, in the same run over the same stores:
- ``brt``: this checkout's ``brt synthesize`` with its shipped scorer;
- ``brt, held-out scorer`` (``--scorer-folds DIR``): the same, but each charter is synthesized with the scorer
  fitted without it (``DIR/<charter id>.json``, written by ``bench/fit_evidence_scorer.py --folds-dir``, selected
  with ``BRT_EVIDENCE_SCORER``): the figure that says how the scorer does on pages and questions it never saw;
- ``baseline <rev>`` (``--baseline-rev``): ``brt synthesize`` of that commit (a ``git worktree`` in a temp dir).

Metrics (PROVENANCE.md's scoring rule: a block holds the answer when its quote, lower-cased with whitespace
collapsed, contains one of the question's key phrases), overall and by kind: ``answer@1``, ``answer@k``,
``precision`` (blocks holding the answer over all blocks of answerable questions), ``blocks`` per section, ``gap``
(on unanswerable questions: the share answered with a Gap), ``verbatim`` (blocks whose quote, "…" aside, is a span
of the cited page's stored text) and the synthesis wall time.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
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

KINDS = ("factoid", "definitional", "explanatory")


@dataclass
class WebQuestion:
    charter: str
    label: str
    kind: str  # factoid | definitional | explanatory | unanswerable
    question: str
    answers: list[str]  # key phrases; empty when unanswerable
    case: str | None

    @property
    def answerable(self) -> bool:
        return self.kind != "unanswerable"


@dataclass
class WebCharter:
    id: str
    title: str
    domains: list[str]
    urls: list[str]
    questions: list[WebQuestion]


def norm(text: str) -> str:
    return " ".join(text.lower().split())


def holds_answer(quote: str, answers: list[str]) -> bool:
    q = norm(quote)
    return any(norm(a) in q for a in answers if a.strip())


#: The question sets this benchmark reads (``--set``): web-qa dev, and the three written training sets (their
#: held-out figures need the reader and scorer fitted without each charter: ``--reader-folds``/``--scorer-folds``).
SETS = {
    "dev": "web-qa/web-qa-dev.json",
    "train": "web-qa-train/web-qa-train.json",
    "train-te": "web-qa-train/web-qa-train-te.json",
    "sci": "web-qa-train/sci-qa-train.json",
}


def load_webqa(eval_dir: Path, which: str = "dev") -> tuple[list[WebCharter], dict[str, bytes]]:
    """A set's charters and every page's raw HTML by URL (SciFact abstracts, which have no HTML, as a page
    with the title as ``<h1>`` and the abstract as ``<p>``)."""
    spec = json.loads((eval_dir / SETS[which]).read_text(encoding="utf-8"))
    pages: dict[str, bytes] = {}
    charters = []
    abstracts = _scifact(eval_dir) if which == "sci" else {}
    for c in spec:
        for p in c["pages"]:
            pages[p["url"]] = _page_bytes(eval_dir, p, abstracts)
        qs = [
            WebQuestion(c["id"], s["label"], s["kind"], s["question"], list(s.get("answers") or []), s.get("case"))
            for s in c["sections"]
        ]
        charters.append(WebCharter(c["id"], c["title"], list(c["allowed_domains"]), [p["url"] for p in c["pages"]], qs))
    return charters, pages


def _page_bytes(eval_dir: Path, page: dict, abstracts: dict[str, dict]) -> bytes:
    if "doc_id" in page:
        import html

        d = abstracts[page["doc_id"]]
        return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(d['title'])}</title></head>"
                f"<body><article><h1>{html.escape(d['title'])}</h1><p>{html.escape(d['text'])}</p></article>"
                "</body></html>").encode()
    path = eval_dir / page["path"] if "path" in page else (
        eval_dir / "readability-test-pages" / "pages" / page["case"] / "source.html.gz")
    return gzip.decompress(path.read_bytes())


def _scifact(eval_dir: Path) -> dict[str, dict]:
    with gzip.open(eval_dir / "beir-scifact" / "corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
        return {d["_id"]: d for d in map(json.loads, fh)}


def write_charter(path: Path, charter: WebCharter, *, javascript: bool, render: str | None = None) -> Path:
    sections = [{"title": q.label, "label": f"Q{i}", "question": q.question} for i, q in enumerate(charter.questions)]
    domains = sorted(set(charter.domains) | set(hosts_of(charter.urls)))
    return write_bench_charter(path, charter.id, charter.title, domains, charter.urls, sections, javascript=javascript,
                               render=render)


def score(questions: list[WebQuestion], blocks: list[list[dict]], texts: dict[str, str] | None = None) -> dict:
    """The metrics above, overall (``all``) and per kind."""
    out: dict = {}
    groups = {"all": [(q, b) for q, b in zip(questions, blocks, strict=True)]}
    for kind in (*KINDS, "unanswerable"):
        groups[kind] = [(q, b) for q, b in groups["all"] if q.kind == kind]
    for name, pairs in groups.items():
        answerable = [(q, b) for q, b in pairs if q.answerable]
        unanswerable = [(q, b) for q, b in pairs if not q.answerable]
        row: dict = {"questions": len(pairs)}
        if answerable:
            n = len(answerable)
            nblocks = sum(len(b) for _, b in answerable)
            first = sum(1 for q, b in answerable if b and holds_answer(b[0]["quote"], q.answers))
            row["answer@1"] = round(first / n, 4)
            row["answer@k"] = round(
                sum(1 for q, b in answerable if any(holds_answer(x["quote"], q.answers) for x in b)) / n, 4)
            good = sum(holds_answer(x["quote"], q.answers) for q, b in answerable for x in b)
            row["precision"] = round(good / nblocks, 4) if nblocks else None
            row["blocks_per_section"] = round(nblocks / n, 3)
            row["words_per_block"] = (
                round(sum(len(x["quote"].split()) for _, b in answerable for x in b) / nblocks, 1) if nblocks else None)
        if unanswerable:
            row["gap_unanswerable"] = round(sum(1 for _, b in unanswerable if not b) / len(unanswerable), 4)
            row["blocks_unanswerable"] = round(sum(len(b) for _, b in unanswerable) / len(unanswerable), 3)
        if texts is not None:
            every = [x for _, b in pairs for x in b]
            if every:
                row["verbatim"] = round(sum(_verbatim(x, texts) for x in every) / len(every), 4)
        out[name] = row
    return out


def _verbatim(block: dict, texts: dict[str, str]) -> bool:
    page = norm(texts.get(block["url"], ""))
    parts = [p.strip() for p in block["quote"].split("…")]
    return all(norm(p) in page for p in parts if p)


def page_texts(cid: str) -> dict[str, str]:
    """The stored text of every page of charter ``cid`` (BRT_HOME must point at the run's home)."""
    from memory_store import Memory

    return {p.url: p.text for p in Memory(cid).pages()}


def misses(questions: list[WebQuestion], blocks: list[list[dict]]) -> list[dict]:
    """Answerable questions whose first block misses the answer and unanswerable ones that got blocks."""
    rows = []
    for q, b in zip(questions, blocks, strict=True):
        first_ok = bool(b) and holds_answer(b[0]["quote"], q.answers)
        if (q.answerable and not first_ok) or (not q.answerable and b):
            rows.append({"charter": q.charter, "kind": q.kind, "question": q.question, "answers": q.answers,
                         "at_k": any(holds_answer(x["quote"], q.answers) for x in b),
                         "blocks": [{"score": x.get("score"), "url": x["url"], "quote": x["quote"]} for x in b]})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eval-dir", default=str(REPO_ROOT.parent / "shared" / "eval"))
    ap.add_argument("--baseline-rev", default="", help="commit whose brt synthesize is the baseline ('' = none)")
    ap.add_argument("--scorer-folds", default=None, help="folder of per-charter held-out scorers (<charter id>.json)")
    ap.add_argument("--javascript", choices=["on", "off"], default="on")
    ap.add_argument("--render", choices=["auto", "always", "never"], default=None,
                    help="the charters' harvest.render (default: the charter default, auto)")
    ap.add_argument("--misses", default=None, help="write the misses of the last system run here")
    add_embed_backend_option(ap)
    ap.add_argument("--keep-tmp", action="store_true")
    ap.add_argument("--json", dest="json_out", default=None)
    args = ap.parse_args(argv)

    eval_dir = Path(args.eval_dir).expanduser().resolve()
    charters, pages = load_webqa(eval_dir)
    tmp = Path(tempfile.mkdtemp(prefix="brt-bench-webqa-"))
    env = dict(os.environ, BRT_HOME=str(tmp / "brt_home"), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env, backend, suffix = embed_backend(env, args.embed_backend)
    os.environ.update(BRT_HOME=env["BRT_HOME"], HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    har = write_har(pages.items(), tmp / "web-qa.har")
    base = baseline_tree(args.baseline_rev, tmp) if args.baseline_rev else None
    report: dict = {"charters": len(charters), "questions": sum(len(c.questions) for c in charters), "runs": {}}
    systems: list[tuple[str, Path, str | None]] = [("brt", REPO_ROOT, None)]
    if args.scorer_folds:
        systems.append(("brt, held-out scorer", REPO_ROOT, args.scorer_folds))
    if base is not None:
        systems.append((f"baseline {args.baseline_rev}", base, None))
    missed: list[dict] = []
    try:
        totals: dict[str, tuple[list[WebQuestion], list[list[dict]], dict[str, str]]] = {}
        timings: dict[str, float] = {}
        for c in charters:
            charter = write_charter(tmp / f"{c.id}.yaml", c, javascript=args.javascript == "on", render=args.render)
            t0 = time.monotonic()
            run_cli(["harvest", str(charter), "--replay", str(har)], pythonpath=REPO_ROOT, env=env)
            timings[f"harvest {c.id}"] = round(time.monotonic() - t0, 1)
            texts = page_texts(c.id)
            for system, tree, folds in systems:
                run_env = dict(env, BRT_EVIDENCE_SCORER=str(Path(folds) / f"{c.id}.json")) if folds else env
                blocks, wall = synth_blocks(charter, pythonpath=tree, env=run_env,
                                            out=tmp / "out" / f"{c.id}-{len(totals)}.md")
                timings[f"synthesize {c.id} ({system})"] = round(wall, 1)
                qs, bs, tx = totals.setdefault(system, ([], [], {}))
                qs.extend(c.questions)
                bs.extend(blocks)
                tx.update(texts)
                if system == systems[-1][0] or (folds is not None):
                    missed += [dict(m, system=system) for m in misses(c.questions, blocks)]
            print(f"[web-qa] {c.id}: {len(c.questions)} sections, harvest {timings[f'harvest {c.id}']} s",
                  file=sys.stderr)
        for system, (qs, bs, tx) in totals.items():
            report["runs"][system] = score(qs, bs, tx)
        report["render"] = args.render or "charter default (auto)"
        report["embed_backend"] = backend
        if args.render is None:
            emit(report, timings, args.json_out, f"evidence_webqa{suffix}")
        else:  # a path's figures beside the shipped ones
            emit(report, timings, args.json_out, f"evidence_webqa_render_{args.render}{suffix}")
        if args.misses:
            Path(args.misses).write_text(json.dumps(missed, indent=2, ensure_ascii=False) + "\n")
    finally:
        clean_up(base, tmp, keep=args.keep_tmp, tag="web-qa")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
