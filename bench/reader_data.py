"""The evidence reader's data: every question of the training and evaluation sets with the candidate quotes of its
page(s), each labelled, as ``bench/train_reader.py`` and ``bench/reader_eval.py`` read them.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/reader_data.py --eval-dir ../shared/eval --out /tmp/brt-reader/data.jsonl.gz

The file is written outside the repository (it holds third-party page text) and is rebuilt from ``shared/eval`` by
this script, deterministically.

Sources (``source`` field; ``train`` says whether its licence lets it train the shipped weights):

- ``squad``: SQuAD 2.0 dev (27 shared articles, answerable and unanswerable) and the 13 articles of SQuAD 1.1 dev
  that 2.0 lacks; CC BY-SA 4.0; trains;
- ``wqt``: ``web-qa-train/web-qa-train.json``, news pages of the article-extraction benchmark; the pages may be
  used to evaluate and train this project's models only; trains;
- ``wqt-te``: ``web-qa-train/web-qa-train-te.json``, English pages of trafilatura's evaluation corpus; the same;
  trains;
- ``sci``: ``web-qa-train/sci-qa-train.json``, SciFact abstracts; CC BY-NC 2.0: evaluation and cross-validation
  only, never the shipped weights;
- ``wqd``: ``web-qa/web-qa-dev.json``, Readability's test pages; evaluation only;
- ``wikiqa``: the WikiQA test split; research-only licence: evaluation only.

Pages are read as the harvest reads them (``orchestrator.harvest.extract.extract_page`` on the raw HTML, the
static path), split as a stored chunk is split (``orchestrator.evidence.spans``: sentences, headings, windows of
two or three sentences of at most 60 words), and each candidate carries what the reader reads (``reading``: the
quote under its heading). SQuAD articles are one page (paragraphs as lines); a WikiQA question's page is its
candidate sentences in order.

Labels follow each set's scoring rule: a candidate holds the answer when it contains a key phrase (web sets,
lower-cased, whitespace collapsed), a gold answer (SQuAD), or a sentence labelled correct (WikiQA). For each
question the record keeps: ``pos`` (candidates of the answering page that hold the answer), ``near`` (for
explanatory and definitional questions: candidates made only of the sentences next to an answering sentence,
which often explain too and are neither positives nor negatives) and ``amb`` (candidates elsewhere that hold the
answer string by chance: SQuAD's short answers). Unanswerable questions have no positive; their candidates are
every page of their charter (web sets), their paragraph's article (SQuAD) or their page (WikiQA).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import io
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

#: Explanatory and definitional answers often run over into the next sentence: its neighbours are not negatives.
SOFT_KINDS = ("explanatory", "definitional")


def norm(text: str) -> str:
    return " ".join(text.lower().split())


def kind_of(question: str) -> str:
    """A SQuAD or WikiQA question's kind, by what it asks (``queries.analyse``): why/how are explanatory, "what
    is/are X" definitional, the rest factoid."""
    from orchestrator.evidence.queries import analyse

    asks = analyse(question).asks
    if asks in ("why", "how"):
        return "explanatory"
    q = norm(question)
    if asks == "what" and (q.startswith(("what is ", "what are ", "what was ", "what were ", "what does ")) and
                           len(q.split()) <= 6):
        return "definitional"
    return "factoid"


# --- pages -> candidates ---------------------------------------------------------------------------------------


def page_candidates(url: str, text: str, focus: frozenset[str] = frozenset()) -> list[dict]:
    """The candidate quotes of one page's text, as ``orchestrator.evidence.spans`` makes them from a chunk."""
    from memory_store import Hit
    from orchestrator.evidence.spans import chunk_spans, split_chunk

    hit = Hit(id=f"page:{url}", score=0.0, text=text, snippet="", metadata={"url": url})
    chunk = split_chunk(hit, 0)
    out = []
    for s in chunk_spans(chunk, focus):
        out.append({"quote": s.quote, "reading": s.reading, "lo": s.lo, "hi": s.hi, "url": url,
                    "heading": s.is_heading, "para": chunk.para[s.lo]})
    return out


def extract(html: bytes, url: str) -> str:
    from orchestrator.harvest.extract import decode_html, extract_page

    doc = extract_page(decode_html(html) or "", url)
    return doc.text if doc is not None else ""


# --- sources ------------------------------------------------------------------------------------------------------


def _web_charters(eval_dir: Path, name: str, source: str, train: bool, html_of) -> Iterator[dict]:
    spec = json.loads((eval_dir / name).read_text(encoding="utf-8"))
    for c in spec:
        texts = {p["case"]: (p["url"], html_of(p)) for p in c["pages"]}
        pages = {case: {"url": url, "text": text} for case, (url, text) in texts.items()}
        for s in c["sections"]:
            yield {"source": source, "train": train, "group": c["id"], "kind": s["kind"],
                   "question": s["question"].strip(), "keys": list(s.get("answers") or []),
                   "case": s.get("case"), "answer_sentence": s.get("answer_sentence"), "pages": pages}


def web_train(eval_dir: Path) -> Iterator[dict]:
    def aeb(p: dict) -> str:
        return extract(gzip.decompress((eval_dir / p["path"]).read_bytes()), p["url"])

    yield from _web_charters(eval_dir, "web-qa-train/web-qa-train.json", "wqt", True, aeb)
    yield from _web_charters(eval_dir, "web-qa-train/web-qa-train-te.json", "wqt-te", True, aeb)


def sci(eval_dir: Path) -> Iterator[dict]:
    corpus: dict[str, dict] = {}
    with gzip.open(eval_dir / "beir-scifact" / "corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            corpus[d["_id"]] = d

    def text(p: dict) -> str:
        d = corpus[p["doc_id"]]
        return f"{d['title']}\n\n{d['text']}"

    yield from _web_charters(eval_dir, "web-qa-train/sci-qa-train.json", "sci", False, text)


def web_dev(eval_dir: Path) -> Iterator[dict]:
    pages_dir = eval_dir / "readability-test-pages" / "pages"

    def html(p: dict) -> str:
        return extract(gzip.decompress((pages_dir / p["case"] / "source.html.gz").read_bytes()), p["url"])

    spec = json.loads((eval_dir / "web-qa" / "web-qa-dev.json").read_text(encoding="utf-8"))
    for c in spec:
        pages = {p["case"]: {"url": p["url"], "text": html(p)} for p in c["pages"]}
        for s in c["sections"]:
            yield {"source": "wqd", "train": False, "group": c["id"], "kind": s["kind"],
                   "question": s["question"].strip(), "keys": list(s.get("answers") or []), "case": s.get("case"),
                   "answer_sentence": None, "pages": pages}


def squad(eval_dir: Path) -> Iterator[dict]:
    with gzip.open(eval_dir / "squad" / "dev-v2.0.json.gz", "rt", encoding="utf-8") as fh:
        v2 = json.load(fh)["data"]
    with gzip.open(eval_dir / "squad" / "dev-v1.1.json.gz", "rt", encoding="utf-8") as fh:
        titles = {a["title"] for a in v2}
        v1 = [a for a in json.load(fh)["data"] if a["title"] not in titles]
    for art in [*v2, *v1]:
        squad_set = "v2" if art in v2 else "v1-extra"  # the shipped reader before this one learned from v1-extra
        text = "\n".join(" ".join(p["context"].split()) for p in art["paragraphs"])
        url = f"https://squad.test/wiki/{art['title']}"
        pages = {art["title"]: {"url": url, "text": text}}
        for i, p in enumerate(art["paragraphs"]):
            for qa in p["qas"]:
                answers = [a["text"] for a in qa["answers"] if a["text"].strip()]
                plausible = [a["text"] for a in qa.get("plausible_answers") or [] if a["text"].strip()]
                yield {"source": "squad", "train": True, "group": art["title"], "kind":
                       "unanswerable" if not answers else kind_of(qa["question"]),
                       "question": qa["question"].strip(), "keys": answers, "case": art["title"] if answers else None,
                       "answer_sentence": None, "paragraph": i, "plausible": plausible, "squad_set": squad_set,
                       "pages": pages}


def wikiqa(eval_dir: Path) -> Iterator[dict]:
    raw = gzip.decompress((eval_dir / "wikiqa" / "WikiQA-test.tsv.gz").read_bytes()).decode("utf-8")
    rows = list(csv.reader(io.StringIO(raw), delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    by_q: dict[str, list[list[str]]] = {}
    for r in rows:
        by_q.setdefault(r[0], []).append(r)
    for qid, rs in by_q.items():
        sents = [" ".join(r[5].split()) for r in rs]
        good = [s for s, r in zip(sents, rs, strict=True) if r[6] == "1"]
        url = f"https://wikiqa.test/{rs[0][2]}"
        q = rs[0][1].strip()
        yield {"source": "wikiqa", "train": False, "group": rs[0][2], "kind":
               kind_of(q) if good else "unanswerable", "question": q, "keys": good, "case": rs[0][2] if good else None,
               "answer_sentence": None, "qid": qid,
               "pages": {rs[0][2]: {"url": url, "text": "\n".join(sents)}}}


SOURCES = {"squad": squad, "wqt": web_train, "sci": sci, "wqd": web_dev, "wikiqa": wikiqa}


# --- labelling ----------------------------------------------------------------------------------------------------


#: An unanswerable web question's candidates: the best of its charter's pages by BM25 (the reader reads what
#: retrieval brings; a page far from the question is never read).
UNANSWERABLE_CANDIDATES = 200
#: A SQuAD question's candidates: its paragraph and the paragraphs of its article nearest it by BM25.
SQUAD_PARAGRAPHS = 4


def label(q: dict, cache: dict) -> dict | None:
    """The question's record: its candidates with ``pos`` / ``near`` / ``amb`` index lists; None when an
    answerable question's page holds no key (extraction lost it)."""
    from orchestrator.evidence.queries import analyse

    focus = analyse(q["question"]).terms
    pages = q["pages"]
    if q["source"] == "squad":
        cands = _squad_candidates(q, focus, cache)
    elif q["case"] is not None:
        cands = _cached(pages[q["case"]], focus, cache)
    else:
        cands = [c for case in pages for c in _cached(pages[case], focus, cache)]
        cands = _best_bm25(q["question"], cands, UNANSWERABLE_CANDIDATES)
    keys = [norm(k) for k in q["keys"] if k.strip()]
    own_url = pages[q["case"]]["url"] if q["case"] is not None else None
    pos, amb = [], []
    for i, c in enumerate(cands):
        if not (keys and any(k in norm(c["quote"]) for k in keys)):
            continue
        own = c.get("para_idx") == q.get("paragraph") if q["source"] == "squad" else c["url"] == own_url
        (pos if own else amb).append(i)
    if keys and not pos:
        return None
    near = _near(cands, pos) if q["kind"] in SOFT_KINDS else []
    rec = {k: v for k, v in q.items() if k != "pages"}
    rec.update(candidates=[{k: c[k] for k in ("quote", "reading", "lo", "hi", "url", "heading", "para")}
                           for c in cands], pos=pos, near=near, amb=amb)
    return rec


def _cached(page: dict, focus: frozenset[str], cache: dict) -> list[dict]:
    key = (page["url"], hashlib.sha1(page["text"].encode()).hexdigest(), focus)
    if key not in cache:
        cache[key] = page_candidates(page["url"], page["text"], focus)
    return cache[key]


def _best_bm25(question: str, cands: list[dict], n: int) -> list[dict]:
    from memory_store.text import terms
    from orchestrator.evidence.features import bm25_scores

    scores = bm25_scores(set(terms(question)), [terms(c["quote"]) for c in cands])
    order = sorted(range(len(cands)), key=lambda i: -scores[i])[:n]
    return [cands[i] for i in sorted(order)]


def _squad_candidates(q: dict, focus: frozenset[str], cache: dict) -> list[dict]:
    """The candidates of the question's paragraph and of the SQUAD_PARAGRAPHS - 1 paragraphs nearest it (BM25 of
    the question against each paragraph), each paragraph split as a page of its own."""
    from memory_store.text import terms
    from orchestrator.evidence.features import bm25_scores

    page = next(iter(q["pages"].values()))
    paras = page["text"].split("\n")
    key = ("paras", page["url"])
    if key not in cache:
        cache[key] = [terms(p) for p in paras]
    scores = bm25_scores(set(terms(q["question"])), cache[key])
    others = sorted((i for i in range(len(paras)) if i != q["paragraph"]), key=lambda i: -scores[i])
    out = []
    for i in sorted([q["paragraph"], *others[: SQUAD_PARAGRAPHS - 1]]):
        for c in _cached({"url": f"{page['url']}#p{i}", "text": paras[i]}, focus, cache):
            out.append({**c, "para_idx": i})
    return out


def _near(cands: list[dict], pos: list[int]) -> list[int]:
    """Candidates of the answering page made only of sentences next to an answering single sentence."""
    answer_sents = {(cands[i]["url"], cands[i]["lo"]) for i in pos if cands[i]["lo"] == cands[i]["hi"]}
    around = {(u, lo + d) for u, lo in answer_sents for d in (-1, 1)} - answer_sents
    out = []
    for i, c in enumerate(cands):
        if i in pos:
            continue
        sents = {(c["url"], j) for j in range(c["lo"], c["hi"] + 1)}
        if sents <= around:
            out.append(i)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eval-dir", default=str(REPO_ROOT.parent / "shared" / "eval"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--sources", nargs="*", default=list(SOURCES))
    args = ap.parse_args(argv)
    eval_dir = Path(args.eval_dir)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    counts: dict[str, list[int]] = {}
    t0 = time.monotonic()
    cache: dict = {}
    with gzip.open(out, "wt", encoding="utf-8") as fh:
        for name in args.sources:
            for q in SOURCES[name](eval_dir):
                c = counts.setdefault(q["source"], [0, 0])
                rec = label(q, cache)
                if rec is None:
                    c[1] += 1
                    continue
                c[0] += 1
                fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
            cache.clear()
            print(f"[reader-data] {name}: {time.monotonic() - t0:.0f} s", file=sys.stderr)
    kept = {s: {"kept": a, "dropped (no key in the extracted page)": b} for s, (a, b) in counts.items()}
    print(json.dumps(kept, indent=1))
    from bench._common import write_result

    write_result("reader_data", {"out": args.out, "sources": kept})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
