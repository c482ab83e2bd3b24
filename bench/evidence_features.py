"""Dev data for the evidence scorer: every candidate quote of every section, its ``Features`` and whether it holds
the answer, for the three dev domains (web-qa, SQuAD, news). ``bench/fit_evidence_scorer.py`` fits on the dumps.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/evidence_features.py --dataset webqa|squad|news \\
        --eval-dir ../shared/eval --out /tmp/features-webqa.json.gz [--per-article 30 --unanswerable 10]

Each dataset's pages are served from a HAR written at run time and harvested with the real CLI (``brt harvest
CHARTER --replay HAR``), exactly as its evidence benchmark does; then, in this process, each section's candidates
come from the code ``brt synthesize`` runs (``orchestrator.evidence.section_candidates``), so the features are the
ones the scorer will see. Labels follow each set's scoring rule: web-qa: the quote contains one of the key phrases
(lower-cased, whitespace collapsed); SQuAD: it contains one of the gold answers; news: the answer's pattern
matches. Unanswerable questions label every candidate 0.

Recipe of the shipped scorer's data (the defaults): web-qa all 82 questions (3 charters); SQuAD 2.0 dev, the 27
shared articles in one charter, 30 answerable and 10 unanswerable questions per article, evenly spaced in file
order; news all questions of ``bench/data/news_questions.json``, one charter per event. The CV groups are the
charter (web-qa), the article (SQuAD) and the event (news).
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

from bench._common import write_har, write_result  # noqa: E402
from bench.evidence_squad import run_cli  # noqa: E402


@dataclass
class DevQuestion:
    dataset: str
    group: str  # the cross-validation group: charter, article or event
    charter: str
    section: int  # index of the section in its charter
    kind: str
    answerable: bool
    question: str
    holds: object  # callable quote -> bool


def norm(text: str) -> str:
    return " ".join(text.lower().split())


def _contains(answers: list[str]):
    keys = [norm(a) for a in answers if a.strip()]
    return lambda quote: any(k in norm(quote) for k in keys)


def _matches(pattern: re.Pattern | None):
    return (lambda quote: bool(pattern.search(" ".join(quote.split())))) if pattern is not None else (lambda _q: False)


def webqa(eval_dir: Path, tmp: Path, which: str = "dev") -> tuple[list[Path], Path, list[DevQuestion]]:
    """A web-qa set (``dev``, or a written training set ``train``, ``train-te``, ``sci``), one charter each."""
    from bench.evidence_webqa import load_webqa, write_charter

    charters, pages = load_webqa(eval_dir, which)
    har = write_har(pages.items(), tmp / f"web-qa-{which}.har")
    dataset = {"dev": "webqa", "train": "wqt", "train-te": "wqt-te", "sci": "sci"}[which]
    paths, qs = [], []
    for c in charters:
        paths.append(write_charter(tmp / f"{c.id}.yaml", c, javascript=True))
        qs += [DevQuestion(dataset, c.id, c.id, i, q.kind, q.answerable, q.question, _contains(q.answers))
               for i, q in enumerate(c.questions)]
    return paths, har, qs


def squad(eval_dir: Path, tmp: Path, per_article: int, unanswerable: int) -> tuple[list[Path], Path, list[DevQuestion]]:
    from bench.evidence_squad import _spaced, load_articles, page_html, write_charter

    articles = load_articles(eval_dir, 0)
    for a in articles:
        yes = [q for q in a.questions if q.answerable]
        no = [q for q in a.questions if not q.answerable]
        a.questions = _spaced(yes, per_article) + _spaced(no, unanswerable)
    har = write_har(((a.url, page_html(a)) for a in articles), tmp / "squad.har")
    path = write_charter(tmp / "squad_all.yaml", "squad_all", articles, concept_index=False)
    qs, i = [], 0
    for a in articles:
        for q in a.questions:
            kind = "factoid" if q.answerable else "unanswerable"
            qs.append(DevQuestion("squad", a.title, "squad_all", i, kind, q.answerable, q.question,
                                  _contains(q.answers)))
            i += 1
    return [path], har, qs


def news(eval_dir: Path, tmp: Path, questions: Path) -> tuple[list[Path], Path, list[DevQuestion]]:
    from bench.evidence_news import load_clusters, write_charter

    clusters, pages = load_clusters(eval_dir, questions)
    har = write_har(pages.items(), tmp / "news.har")
    paths, qs = [], []
    for n, c in enumerate(clusters):
        cid = f"news_{n}"
        paths.append(write_charter(tmp / f"{cid}.yaml", cid, [c], javascript=True))
        qs += [DevQuestion("news", c.name, cid, i, q.kind if q.answerable else "unanswerable", q.answerable,
                           q.question, _matches(q.answer)) for i, q in enumerate(c.questions)]
    return paths, har, qs


#: ``--dataset`` names of the web-qa sets (``bench/evidence_webqa.py``'s ``--set``).
WEB_SETS = {"webqa": "dev", "wqt": "train", "wqt-te": "train-te", "sci": "sci"}


def dump(charter_paths: list[Path], questions: list[DevQuestion]) -> list[dict]:
    """Every section's candidates as rows: the question's fields, and per candidate its features, label and
    what selection needs (url, sentence keys, words, chunk rank, quote)."""
    from orchestrator.charter import load_charter
    from orchestrator.config import open_memory
    from orchestrator.evidence import SynthesisCache, section_candidates

    by_charter: dict[str, list[DevQuestion]] = {}
    for q in questions:
        by_charter.setdefault(q.charter, []).append(q)
    out = []
    for path in charter_paths:
        charter = load_charter(path)
        mem = open_memory(charter, create=False)
        cache = SynthesisCache.for_memory(mem)
        sections = charter.outputs.sections
        for q in by_charter.get(charter.id, []):
            cands = section_candidates(mem, sections[q.section], k=charter.retrieval.k,
                                       retrieval=charter.retrieval, cache=cache)
            rows = []
            qvec = mem.embedder.embed_queries([q.question])[0]
            for s, f in zip(cands.spans, cands.features, strict=True):
                sent_cos = cache.vectors(s.chunk.sentences[s.lo : s.hi + 1]) @ qvec
                rows.append({
                    "x": [round(v, 5) for v in f.row()],
                    "y": int(q.answerable and q.holds(s.quote)),
                    "url": s.url, "keys": sorted(s.keys), "words": s.words, "rank": s.chunk.rank, "quote": s.quote,
                    "reading": s.reading, "n": s.n_sentences, "best": int(sent_cos.argmax()),
                })
            out.append({"dataset": q.dataset, "group": q.group, "charter": q.charter, "section": q.section,
                        "kind": q.kind, "answerable": q.answerable, "question": q.question, "candidates": rows})
        print(f"[features] {charter.id}: {len(by_charter.get(charter.id, []))} sections", file=sys.stderr)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", choices=["webqa", "wqt", "wqt-te", "sci", "squad", "news"], required=True)
    ap.add_argument("--eval-dir", default=str(REPO_ROOT.parent / "shared" / "eval"))
    ap.add_argument("--questions", default=str(REPO_ROOT / "bench" / "data" / "news_questions.json"))
    ap.add_argument("--per-article", type=int, default=30, help="SQuAD: answerable questions per article")
    ap.add_argument("--unanswerable", type=int, default=10, help="SQuAD: unanswerable questions per article")
    ap.add_argument("--brt-home", default=None, help="reuse the stores harvested under this BRT_HOME")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)

    eval_dir = Path(args.eval_dir).expanduser().resolve()
    tmp = Path(tempfile.mkdtemp(prefix=f"brt-features-{args.dataset}-"))
    home = Path(args.brt_home) if args.brt_home else tmp / "brt_home"
    env = dict(os.environ, BRT_HOME=str(home), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    os.environ.update(BRT_HOME=str(home), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    if args.dataset in WEB_SETS:
        paths, har, qs = webqa(eval_dir, tmp, WEB_SETS[args.dataset])
    elif args.dataset == "squad":
        paths, har, qs = squad(eval_dir, tmp, args.per_article, args.unanswerable)
    else:
        paths, har, qs = news(eval_dir, tmp, Path(args.questions))
    t0 = time.monotonic()
    if not args.brt_home:
        for p in paths:
            run_cli(["harvest", str(p), "--replay", str(har)], pythonpath=REPO_ROOT, env=env)
    t1 = time.monotonic()
    rows = dump(paths, qs)
    with gzip.open(args.out, "wt", encoding="utf-8") as fh:
        json.dump({"dataset": args.dataset, "recipe": vars(args), "features_version": _features(), "questions": rows},
                  fh)
    n = sum(len(r["candidates"]) for r in rows)
    write_result(f"evidence_features_{args.dataset}", {"questions": len(rows), "candidates": n, "out": args.out,
                                                        "harvest_s": round(t1 - t0, 1),
                                                        "features_s": round(time.monotonic() - t1, 1)})
    print(f"[features] {len(rows)} questions, {n} candidates; harvest {t1 - t0:.0f} s, features "
          f"{time.monotonic() - t1:.0f} s -> {args.out} (stores under {home})", file=sys.stderr)
    return 0


def _features() -> list[str]:
    from orchestrator.evidence import FEATURES

    return list(FEATURES)


if __name__ == "__main__":
    raise SystemExit(main())
