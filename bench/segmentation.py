"""Sentence segmentation: accuracy on hand-checked boundaries of the eval texts, and speed.

    .venv/bin/python bench/segmentation.py [--eval-dir ../shared/eval] [--json out.json]

Gold: ``bench/data/sentence_gold.json`` holds, per text, the source file and item in ``--eval-dir`` (SQuAD 2.0
dev contexts and article-extraction-benchmark gold article bodies), the sha256 of the text and the character
offsets where its sentences start (how they were annotated: the file's ``method``). The texts themselves are
read from the eval data, never copied into the project; a text whose sha256 differs is an error.

Every backend of ``memory_store.text`` runs through the same wrapper brt uses (lines first, then the
segmenter per line). Per backend: boundary precision, recall and F1 (a boundary = a sentence start other than
0), the share of gold sentences reproduced exactly, and speed on all 181 article bodies (median of 3 runs).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import statistics
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench._common import emit_report, store_machine_info  # noqa: E402

GOLD = REPO_ROOT / "bench" / "data" / "sentence_gold.json"


def load_texts(eval_dir: Path, gold: dict) -> list[tuple[dict, str]]:
    cache: dict[str, object] = {}
    out = []
    for doc in gold["documents"]:
        src = doc["source"]
        if src not in cache:
            with gzip.open(eval_dir / src, "rt", encoding="utf-8") as fh:
                cache[src] = json.load(fh)
        data = cache[src]
        if "key" in doc:
            text = data[doc["key"]][doc["field"]]  # type: ignore[index]
        else:
            article = next(a for a in data["data"] if a["title"] == doc["title"])  # type: ignore[index]
            text = article["paragraphs"][doc["paragraph"]][doc["field"]]
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        if digest != doc["sha256"]:
            raise SystemExit(f"{src} {doc.get('key') or doc.get('title')}: text differs from the annotated one")
        out.append((doc, text))
    return out


def score(pairs: list[tuple[dict, str]], backend: str) -> dict:
    from memory_store.text import sentence_spans

    tp = fp = fn = 0
    exact = total = 0
    errors = []
    for doc, text in pairs:
        gold = set(doc["boundaries"])
        got = {a for a, _ in sentence_spans(text, backend=backend)} - {0}
        tp += len(gold & got)
        fp += len(got - gold)
        fn += len(gold - got)
        cuts = [0, *sorted(gold), len(text)]
        gold_sents = {(a, b) for a, b in zip(cuts, cuts[1:], strict=False)}
        got_cuts = [0, *sorted(got), len(text)]
        got_sents = set(zip(got_cuts, got_cuts[1:], strict=False))
        exact += len(gold_sents & got_sents)
        total += len(gold_sents)
        for b in sorted(got ^ gold)[:3]:
            errors.append(("extra" if b in got else "missed", text[max(0, b - 30) : b] + "‖" + text[b : b + 20]))
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return {
        "precision": round(p, 4),
        "recall": round(r, 4),
        "f1": round(2 * p * r / (p + r), 4) if p + r else 0.0,
        "sentences_exact": round(exact / total, 4),
        "errors_sample": errors[:12],
    }


def speed(texts: list[str], backend: str, repeats: int = 3) -> dict:
    from memory_store.text import sentence_spans

    sentence_spans("Warm up. Twice.", backend=backend)
    chars = sum(len(t) for t in texts)
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        n = sum(len(sentence_spans(t, backend=backend)) for t in texts)
        runs.append(time.perf_counter() - t0)
    s = statistics.median(runs)
    return {"seconds": round(s, 3), "chars_per_s": round(chars / s), "sentences": n, "texts": len(texts)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eval-dir", default=str(REPO_ROOT.parent / "shared" / "eval"))
    ap.add_argument("--json", dest="json_out", default=None)
    args = ap.parse_args(argv)
    from memory_store.text import BACKENDS

    eval_dir = Path(args.eval_dir).expanduser().resolve()
    gold = json.loads(GOLD.read_text())
    pairs = load_texts(eval_dir, gold)
    with gzip.open(eval_dir / "article-extraction-benchmark" / "ground-truth.json.gz", "rt") as fh:
        bodies = [v.get("articleBody") or "" for _, v in sorted(json.load(fh).items())]
    report = {
        "gold_texts": len(pairs),
        "gold_sentences": sum(len(d["boundaries"]) + 1 for d, _ in pairs),
        "speed_corpus_chars": sum(len(t) for t in bodies),
        "backends": {b: {**score(pairs, b), "speed": speed(bodies, b)} for b in BACKENDS},
        "machine": store_machine_info(),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
    }
    emit_report(report, args.json_out, name="segmentation")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
