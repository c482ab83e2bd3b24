"""Evidence that answers, on SQuAD 2.0 dev: does the first evidence block quote the answer, and how many blocks
does a section print?

    HF_HUB_OFFLINE=1 .venv/bin/python bench/evidence_squad.py --eval-dir ../shared/eval \\
        [--dataset v2.0|v1.1-extra] [--charters all|per-article|both] [--per-article N] \\
        [--baseline-rev REV] [--no-plain] [--concept-index] [--render auto|always|never] \\
        [--embed-backend onnx|onnx-int8] [--json out.json]

Each article of ``squad/dev-v2.0.json.gz`` becomes one page (its title as ``<h1>``, its paragraphs as ``<p>``)
served from a HAR written at run time under ``https://squad.brt-bench.test/wiki/<title>``. Each article's
questions are the sections of a charter (label ``Q<n>``, question = the SQuAD question). ``--charters all``:
one charter holding all articles (one store, thousands of chunks); ``per-article``: one charter per article.
Every charter goes through the real CLI in a subprocess: ``brt harvest CHARTER --replay HAR`` then
``brt synthesize CHARTER --json``.

Systems scored in the same run, on the same store:
- ``brt``: this checkout's ``brt synthesize``;
- ``baseline <rev>`` (``--baseline-rev``): ``brt synthesize`` of that commit (a ``git worktree`` of it in a
  temp dir, run with ``PYTHONPATH`` pointing at it) over the same store;
- ``plain top-k cosine``: ``Memory.search(question, k)`` (hybrid + MMR, the defaults) and each hit's sentence
  with the highest cosine to the question, every hit at or above ``min_score`` a block;
- with ``--concept-index`` (``all`` charter only): ``brt`` with ``memory.use_concept_index`` true (the index
  built by the harvest) against false (kNN only).

Metrics, answerable and unanswerable questions separately: ``answer@1`` (the first block's quote contains a
gold answer, case- and space-insensitive), ``answer@k`` (any block does), ``blocks`` per section,
``precision`` (blocks whose quote contains a gold answer or is a span of the answer's paragraph, over all
blocks), ``gap`` (sections with no block). ``--per-article N`` keeps at most N answerable and N unanswerable
questions per article, evenly spaced in file order (deterministic); 0 = all 4,466 + 4,538.

``--dataset v1.1-extra`` scores held-out articles instead: the 13 articles of ``squad/dev-v1.1.json.gz`` that
the v2.0 file does not hold (Super_Bowl_50 … United_Methodist_Church; 856 paragraphs, 4,357 questions, all
answerable). The evidence reader (``bench/train_reader.py``) is trained on exactly these articles, so they are
not a held-out check of this checkout: the scorer's held-out SQuAD figures are its cross-validated folds
(``bench/fit_evidence_scorer.py``), and the 8 articles kept out of ``shared/eval`` are the held-out check.
"""

from __future__ import annotations

import argparse
import gzip
import html
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench._common import machine_info, write_har, write_result  # noqa: E402

HOST = "squad.brt-bench.test"


@dataclass
class Question:
    qid: str
    question: str
    answers: list[str]
    paragraph: str  # the context the question was written on
    answerable: bool


@dataclass
class Article:
    n: int
    title: str
    url: str
    paragraphs: list[str]
    questions: list[Question] = field(default_factory=list)


def norm(text: str) -> str:
    return " ".join(text.lower().split())


def _read(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)["data"]


def load_articles(eval_dir: Path, per_article: int, dataset: str = "v2.0") -> list[Article]:
    data = _read(eval_dir / "squad" / "dev-v2.0.json.gz")
    if dataset == "v1.1-extra":
        tuned_on = {art["title"] for art in data}
        data = [art for art in _read(eval_dir / "squad" / "dev-v1.1.json.gz") if art["title"] not in tuned_on]
    elif dataset != "v2.0":
        raise ValueError(f"unknown dataset {dataset!r}")
    articles = []
    for n, art in enumerate(data):
        title = art["title"]
        a = Article(n, title, f"https://{HOST}/wiki/{quote(title)}", [p["context"] for p in art["paragraphs"]])
        answerable, unanswerable = [], []
        for p in art["paragraphs"]:
            for qa in p["qas"]:
                q = Question(qa["id"], qa["question"].strip(), [x["text"] for x in qa["answers"]], p["context"],
                             not qa.get("is_impossible", False))
                (answerable if q.answerable else unanswerable).append(q)
        a.questions = _spaced(answerable, per_article) + _spaced(unanswerable, per_article)
        articles.append(a)
    return articles


def _spaced(items: list, n: int) -> list:
    if not n or len(items) <= n:
        return items
    return [items[int(i * len(items) / n)] for i in range(n)]


def page_html(article: Article) -> bytes:
    title = html.escape(article.title.replace("_", " "))
    paras = "\n".join(f"<p>{html.escape(p)}</p>" for p in article.paragraphs)
    return (
        f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title></head>"
        f"<body><article><h1>{title}</h1>\n{paras}\n</article></body></html>"
    ).encode()


def write_charter(
    path: Path, cid: str, articles: list[Article], *, concept_index: bool, render: str | None = None
) -> Path:
    sections = []
    for a in articles:
        for i, q in enumerate(a.questions):
            sections.append({"title": q.question, "label": f"A{a.n}Q{i}", "question": q.question})
    return write_bench_charter(path, cid, f"SQuAD evidence benchmark ({cid})", [HOST], [a.url for a in articles],
                               sections, javascript=False, concept_index=concept_index, render=render)


def write_bench_charter(
    path: Path, cid: str, title: str, domains: list[str], seeds: list[str], sections: list[dict], *,
    javascript: bool, concept_index: bool = False, render: str | None = None,
) -> Path:
    """The benchmarks' charter: ``seeds`` only (depth 0), robots not asked, k = 5, written to ``path``
    (``render``: its ``harvest.render``, the charter's default when None)."""
    import yaml

    charter = {
        "id": cid,
        "title": title,
        "allowed_domains": domains,
        "seeds": seeds,
        "outputs": {"doc": f"out/{cid}.md", "sections": sections},
        "harvest": {"max_pages": len(seeds) + 5, "max_depth": 0, "obey_robots": False, "javascript": javascript,
                    "concurrency": 2},
        "memory": {"use_concept_index": concept_index},
        "retrieval": {"k": 5},
    }
    if render is not None:
        charter["harvest"]["render"] = render
    path.write_text(yaml.safe_dump(charter, sort_keys=False, allow_unicode=True))
    return path


def run_cli(args: list[str], *, pythonpath: Path, env: dict) -> subprocess.CompletedProcess:
    e = dict(env, PYTHONPATH=str(pythonpath))
    cmd = [sys.executable, "-m", "orchestrator.cli", *args]
    r = subprocess.run(cmd, capture_output=True, text=True, env=e, cwd=str(pythonpath))
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(args[:2])} failed ({r.returncode}):\n{r.stderr[-3000:]}")
    return r


def synth_blocks(charter: Path, *, pythonpath: Path, env: dict, out: Path) -> tuple[list[list[dict]], float]:
    t0 = time.monotonic()
    r = run_cli(["synthesize", str(charter), "--out", str(out), "--json"], pythonpath=pythonpath, env=env)
    wall = time.monotonic() - t0
    doc = json.loads(r.stdout)
    return [s["blocks"] for s in doc["sections"]], wall


def plain_blocks(cid: str, questions: list[Question], *, k: int) -> list[list[dict]]:
    """Baseline: top-k hits of Memory.search, each quoted by its sentence closest to the question (cosine)."""
    from memory_store import Memory
    from memory_store.text import sentence_spans

    mem = Memory(cid)
    bar = mem.default_min_similarity
    emb = mem.embedder
    out = []
    for q in questions:
        hits = [h for h in mem.search(q.question, k=k) if h.score >= bar]
        qv = emb.embed_queries([q.question])[0]
        blocks = []
        for h in hits:
            sents = [h.text[a:b] for a, b in sentence_spans(h.text)] or [h.text]
            scores = emb.embed_documents(sents) @ qv
            blocks.append({"quote": sents[int(scores.argmax())], "url": h.metadata["url"]})
        out.append(blocks)
    return out


def score(questions: list[Question], blocks: list[list[dict]]) -> dict:
    def has_answer(b: dict, q: Question) -> bool:
        quote_ = norm(b["quote"])
        return any(norm(a) in quote_ for a in q.answers if a.strip())

    def from_paragraph(b: dict, q: Question) -> bool:
        return norm(b["quote"].strip("… ").strip()) in norm(q.paragraph)

    out = {}
    for kind, want in (("answerable", True), ("unanswerable", False)):
        pairs = [(q, b) for q, b in zip(questions, blocks, strict=True) if q.answerable == want]
        if not pairs:
            continue
        n = len(pairs)
        nblocks = sum(len(b) for _, b in pairs)
        row = {
            "sections": n,
            "blocks_per_section": round(nblocks / n, 3),
            "gap": round(sum(1 for _, b in pairs if not b) / n, 4),
        }
        if want:
            row["answer@1"] = round(sum(1 for q, b in pairs if b and has_answer(b[0], q)) / n, 4)
            row["answer@k"] = round(sum(1 for q, b in pairs if any(has_answer(x, q) for x in b)) / n, 4)
            good = sum(1 for q, b in pairs for x in b if has_answer(x, q) or from_paragraph(x, q))
            row["precision"] = round(good / nblocks, 4) if nblocks else None
        out[kind] = row
    return out


def baseline_tree(rev: str, tmp: Path) -> Path:
    path = tmp / f"baseline-{rev}"
    subprocess.run(["git", "-C", str(REPO_ROOT), "worktree", "add", "--detach", str(path), rev],
                   check=True, capture_output=True)
    return path


def emit(report: dict, timings: dict, json_out: str | None, name: str) -> None:
    """Finish ``report`` (timings, machine, command), print it, write it to ``json_out`` and as the latest
    result of benchmark ``name`` (``bench/results/<name>.json``)."""
    report["timings_s"] = timings
    report["machine"] = machine_info()
    report["command"] = " ".join([Path(sys.executable).name, *sys.argv])
    print(json.dumps(report, indent=2))
    if json_out:
        Path(json_out).write_text(json.dumps(report, indent=2) + "\n")
    write_result(name, report)


def add_embed_backend_option(ap: argparse.ArgumentParser) -> None:
    """``--embed-backend``: the bundled embedding model's engine for every CLI run of the benchmark."""
    ap.add_argument("--embed-backend", choices=["onnx", "onnx-int8"], default=None,
                    help="the bundled model's engine for every harvest and synthesis (BRT_EMBED_BACKEND; default: "
                         "brt's own default). Another than the default writes "
                         "bench/results/<name>_embed_<backend>.json")


def embed_backend(env: dict[str, str], backend: str | None) -> tuple[dict[str, str], str, str]:
    """``env`` with ``backend`` set for the CLI runs, the backend they use and the result name's suffix (empty
    for brt's default backend, so the default's run stays the benchmark's latest result)."""
    from memory_store.embeddings import BACKEND_ENV, DEFAULT_BACKEND, requested_backend

    used = backend or requested_backend() or DEFAULT_BACKEND
    env = dict(env, **{BACKEND_ENV: backend}) if backend else env
    return env, used, "" if used == DEFAULT_BACKEND else f"_embed_{used}"


def clean_up(base: Path | None, tmp: Path, *, keep: bool, tag: str) -> None:
    """Remove the baseline worktree and (unless ``keep``) the temp folder."""
    if base is not None:
        subprocess.run(["git", "-C", str(REPO_ROOT), "worktree", "remove", "--force", str(base)], capture_output=True)
    if keep:
        print(f"[{tag}] kept {tmp}", file=sys.stderr)
    else:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eval-dir", default=str(REPO_ROOT.parent / "shared" / "eval"))
    ap.add_argument("--dataset", choices=["v2.0", "v1.1-extra"], default="v2.0",
                    help="v2.0: the 27 articles (tuning); v1.1-extra: the 13 SQuAD 1.1 articles not in v2.0 (held out)")
    ap.add_argument("--charters", choices=["all", "per-article", "both"], default="all")
    ap.add_argument("--per-article", type=int, default=0, help="questions of each kind per article (0 = all)")
    ap.add_argument("--articles", type=int, default=0, help="only the first N articles (0 = all 27)")
    ap.add_argument("--baseline-rev", default="", help="commit whose brt synthesize is the baseline ('' = none)")
    ap.add_argument("--no-plain", action="store_true", help="skip the plain top-k cosine baseline")
    ap.add_argument("--concept-index", action="store_true", help="all charter: also synthesize with the index")
    ap.add_argument("--render", choices=["auto", "always", "never"], default=None,
                    help="the charters' harvest.render (default: the charter default, auto)")
    add_embed_backend_option(ap)
    ap.add_argument("--keep-tmp", action="store_true")
    ap.add_argument("--json", dest="json_out", default=None)
    args = ap.parse_args(argv)

    eval_dir = Path(args.eval_dir).expanduser().resolve()
    articles = load_articles(eval_dir, args.per_article, args.dataset)
    if args.articles:
        articles = articles[: args.articles]
    tmp = Path(tempfile.mkdtemp(prefix="brt-bench-squad-"))
    env = dict(os.environ, BRT_HOME=str(tmp / "brt_home"), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env, backend, suffix = embed_backend(env, args.embed_backend)
    os.environ.update(BRT_HOME=env["BRT_HOME"], HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    har = write_har(((a.url, page_html(a)) for a in articles), tmp / "squad.har")
    base = baseline_tree(args.baseline_rev, tmp) if args.baseline_rev else None
    report: dict = {"dataset": args.dataset, "articles": len(articles), "per_article": args.per_article, "runs": {}}
    try:
        groups: list[tuple[str, list[Article]]] = []
        if args.charters in ("all", "both"):
            groups.append(("squad_all", articles))
        if args.charters in ("per-article", "both"):
            groups += [(f"squad_a{a.n}", [a]) for a in articles]
        totals: dict[str, tuple[list[Question], list[list[dict]]]] = {}
        timings: dict[str, float] = {}

        def add(system: str, key: str, qs: list[Question], blocks: list[list[dict]]) -> None:
            allq, allb = totals.setdefault(f"{key} | {system}", ([], []))
            allq.extend(qs)
            allb.extend(blocks)

        for cid, arts in groups:
            key = "one charter for all articles" if cid == "squad_all" else "one charter per article"
            qs = [q for a in arts for q in a.questions]
            with_ci = args.concept_index and cid == "squad_all"
            charter = write_charter(tmp / f"{cid}.yaml", cid, arts, concept_index=with_ci, render=args.render)
            t0 = time.monotonic()
            run_cli(["harvest", str(charter), "--replay", str(har)], pythonpath=REPO_ROOT, env=env)
            timings[f"harvest {cid}"] = round(time.monotonic() - t0, 1)
            print(f"[squad] harvested {cid} in {timings[f'harvest {cid}']} s; {len(qs)} sections", file=sys.stderr)
            if with_ci:
                blocks, wall = synth_blocks(charter, pythonpath=REPO_ROOT, env=env, out=tmp / "out" / f"{cid}-ci.md")
                add("brt, use_concept_index: true", key, qs, blocks)
                timings[f"synthesize {cid} (concept index)"] = round(wall, 1)
                charter = write_charter(tmp / f"{cid}.yaml", cid, arts, concept_index=False, render=args.render)
            blocks, wall = synth_blocks(charter, pythonpath=REPO_ROOT, env=env, out=tmp / "out" / f"{cid}.md")
            add("brt", key, qs, blocks)
            timings[f"synthesize {cid}"] = round(wall, 1)
            print(f"[squad]   brt synthesize {wall:.0f} s", file=sys.stderr)
            if base is not None:
                blocks, wall = synth_blocks(charter, pythonpath=base, env=env, out=tmp / "out" / f"{cid}-base.md")
                add(f"baseline {args.baseline_rev} (today's quote choice)", key, qs, blocks)
                timings[f"synthesize {cid} (baseline)"] = round(wall, 1)
                print(f"[squad]   baseline synthesize {wall:.0f} s", file=sys.stderr)
            if not args.no_plain:
                add("plain top-k hits, best sentence by cosine", key, qs, plain_blocks(cid, qs, k=5))
        for name, (qs, blocks) in totals.items():
            report["runs"][name] = score(qs, blocks)
        report["render"] = args.render or "charter default (auto)"
        report["embed_backend"] = backend
        if args.render is None:
            emit(report, timings, args.json_out, f"evidence_squad{suffix}")
        else:  # a path's figures beside the shipped ones
            emit(report, timings, args.json_out, f"evidence_squad_render_{args.render}{suffix}")
    finally:
        clean_up(base, tmp, keep=args.keep_tmp, tag="squad")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
