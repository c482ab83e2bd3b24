"""Conflicts between sources on seeded edits of real pages (the seed's ``contradiction_find_rate``).

    nice -n 10 .venv/bin/python bench/conflicts.py [--eval-dir ../shared/eval] [--pages 40] [--json out.json]

1. Pages: the English pages of ``article-extraction-benchmark`` (every page of its topic clusters first, so that
   several articles on one event meet in a section, then others in id order), read from ``--eval-dir`` at run
   time and never copied into the repository.
2. Seeds: in each of ``--pages`` pages, the first sentence of the gold article text that states a quantity of
   the kinds the issue names (a number followed by a unit or counted noun, a percentage, a currency amount, a
   month-day date), chosen with this script's own regular expressions (not brt's extractor), whose number can
   be edited in the raw HTML. Each seeded page is served three times: the original at its own URL, an *edited*
   copy at ``https://mirror.brt-bench.example/<host><path>`` with that one number changed (integers +30%, at
   least +1; decimals x1.5; a day of the month +2), and an *unedited* copy at
   ``https://archive.brt-bench.example/<host><path>`` whose only change is the word "about" inserted before
   that number or amount (same value: the copy is stored and quoted separately, and must agree). The other
   pages of the clusters are served as they are.
3. A HAR holding every page is built at run time and replayed through the real harvest (``harvest(...,
   replay=HAR)``, Chromium, JavaScript off as the pages were captured, max_depth 0), then the real
   ``synthesize`` (k = 5, concept index off) answers one section per seed, whose question is the seeded sentence
   with its number taken out.

Measured:
- ``found``: the share of seeds whose section flags a conflict between the edited value (mirror URL) and the
  original value (original or archive URL). Target >= 0.8.
- ``baseline_naive``: the same two rates for a naive rule on the same synthesis (two blocks from different
  pages conflict when the numbers they contain differ), for scale.
- ``false_flag_rate``: the share of unedited pages quoted anywhere in the synthesis (originals, archive copies,
  other articles) that appear in a conflict whose both sides are unedited pages. Target <= 0.05. The flagged
  pairs are listed (quantities only, no page text) so that a reader can tell a false flag from two articles
  that really disagree.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlsplit

REPO_ROOT = Path(__file__).resolve().parent.parent
for p in (REPO_ROOT, REPO_ROOT / "bench"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from bench._common import AEB, emit_report, load_aeb, machine_info, resolve_eval_dir, setup_env, write_har  # noqa: E402

MIRROR = "mirror.brt-bench.example"
ARCHIVE = "archive.brt-bench.example"
_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
_STOP = set(
    """a an the of to in on for and or but is are was were be been has have had that which who whom as at by with
    from into than then this these those it its their there they he she we you his her our your not no yet so
    if when while after before over under about per th st nd rd am pm""".split()
)
# this script's own idea of a quantity: a number and the word after it (a unit, a counted noun, %), a currency
# amount, or a month-day date
_NUMBER_WORD = re.compile(
    r"(?<![\w.,$€£/-])(?P<num>\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?P<after>\s?%|\s(?:percent|per cent)\b"
    r"|\s(?P<word>[a-z][a-z-]{2,})\b)"
)
_CURRENCY = re.compile(r"(?P<pre>[$€£]\s?)(?P<num>\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?![\d,])")
_DATE = re.compile(r"\b(?P<pre>(?:" + _MONTHS + r")\.?\s)(?P<num>\d{1,2})\b(?!,?\d)")
_WORDS_EN = re.compile(r"\b(?:the|and|of|to|in|is|that|for|was|with)\b", re.IGNORECASE)


@dataclass
class Seed:
    page_id: str
    url: str
    mirror: str
    archive: str
    sentence: str
    original: str  # the number as written
    edited: str
    fragment: str  # number + what follows it (as found in the HTML)
    question: str


def english(text: str) -> bool:
    words = max(1, len(text.split()))
    return len(_WORDS_EN.findall(text)) / words > 0.08


def sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+(?=[A-Z\"“])|\n+", text) if s.strip()]


def edited_value(num: str, kind: str) -> str:
    if kind == "date":
        day = int(num)
        return str(day + 2 if day <= 26 else day - 2)
    plain = num.replace(",", "")
    if "." in plain:
        decimals = len(plain.split(".")[1])
        return f"{float(plain) * 1.5:.{decimals}f}"
    value = int(plain)
    new = value + max(1, round(value * 0.3))
    return f"{new:,}" if "," in num else str(new)


def find_seed(page, html: str) -> Seed | None:
    for sentence in sentences(page.gold):
        if len(sentence.split()) < 8 or len(sentence) > 400:
            continue
        candidates = []
        for m in _NUMBER_WORD.finditer(sentence):
            if m.group("word") and m.group("word") in _STOP:
                continue
            if re.fullmatch(r"(?:19|20)\d\d", m.group("num")):
                continue  # a year: left to the date pattern's day-of-month edits
            before = sentence[: m.start("num")].split()
            if before and before[-1][:1].isupper() and len(before) > 1:
                continue  # a name with a number ("Fortune 500", "Boeing 777"), not a quantity
            candidates.append((m.start("num"), m.group("num"), sentence[m.start("num") : m.end()], "number"))
        for m in _CURRENCY.finditer(sentence):
            candidates.append((m.start("num"), m.group("num"), sentence[m.start("pre") : m.end("num") + 8], "number"))
        for m in _DATE.finditer(sentence):
            candidates.append((m.start("num"), m.group("num"), sentence[m.start("pre") : m.end("num") + 6], "date"))
        for _, num, fragment, kind in sorted(candidates):
            fragment = fragment.rstrip()
            if html.count(fragment) < 1 or sentence.count(num) != 1:
                continue
            new = edited_value(num, kind)
            host = urlsplit(page.url)
            tail = f"{host.hostname}{host.path or '/'}" + (f"?{host.query}" if host.query else "")
            question = " ".join(sentence.replace(num, "", 1).split())
            return Seed(page.id, page.url.split("#", 1)[0], f"https://{MIRROR}/{tail}", f"https://{ARCHIVE}/{tail}",
                        sentence, num, new, fragment, question)
    return None


def edit(html: str, seed: Seed, new_fragment: str) -> str:
    return html.replace(seed.fragment, new_fragment)


_DIGITS = re.compile(r"\d[\d,]*(?:\.\d+)?")


def naive_baseline(doc: dict, seeds: list[Seed], mirrors: set[str]) -> dict:
    """The same synthesis judged by a naive rule (measured in the same run, for scale): two blocks of one
    section from different pages conflict when the sets of numbers they contain differ."""
    found = 0
    flagged: set[str] = set()
    quoted: set[str] = set()
    for i, section in enumerate(doc["sections"]):
        blocks = section["blocks"]
        quoted |= {b["url"] for b in blocks if b["url"] not in mirrors}
        pairs = []
        for x in range(len(blocks)):
            for y in range(x + 1, len(blocks)):
                a, b = blocks[x], blocks[y]
                na, nb = set(_DIGITS.findall(a["quote"])), set(_DIGITS.findall(b["quote"]))
                if a["url"] != b["url"] and na and nb and na != nb:
                    pairs.append((a["url"], b["url"]))
        seed = seeds[i] if i < len(seeds) else None
        if seed and any(seed.mirror in p and ({seed.url, seed.archive} & set(p)) for p in pairs):
            found += 1
        for p in pairs:
            if not set(p) & mirrors:
                flagged |= set(p)
    return {"found_rate": round(found / len(seeds), 3) if seeds else None,
            "false_flag_rate": round(len(flagged) / len(quoted), 3) if quoted else None}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--eval-dir", default=None)
    ap.add_argument("--pages", type=int, default=40, help="seeded pages (default 40)")
    ap.add_argument("--k", type=int, default=5, help="evidence blocks per section")
    ap.add_argument("--json", default=None, help="also write the report here")
    ap.add_argument("--keep", default=None, help="keep the work folder here (HAR, store, outputs)")
    args = ap.parse_args()
    eval_dir = resolve_eval_dir(args.eval_dir)
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="brt-bench-conflicts-"))
    work.mkdir(parents=True, exist_ok=True)
    setup_env(work)
    t_start = time.perf_counter()

    from orchestrator.charter import parse_charter
    from orchestrator.harvest import harvest
    from orchestrator.synthesize import synthesize

    pages = [p for p in load_aeb(eval_dir) if english(p.gold)]
    clusters = json.loads((eval_dir / AEB / "topic-clusters.json").read_text())["clusters"]
    cluster_ids = [page["id"] for members in clusters.values() for page in members]
    by_id = {p.id: p for p in pages}
    order = [by_id[i] for i in cluster_ids if i in by_id] + [p for p in pages if p.id not in set(cluster_ids)]
    seeds: list[Seed] = []
    served: dict[str, bytes] = {}
    for page in order:
        html = page.html.decode("utf-8", "replace")
        url = page.url.split("#", 1)[0]
        seed = find_seed(page, html) if len(seeds) < args.pages else None
        if seed is None:
            if page.id in cluster_ids:
                served[url] = page.html  # a distractor: another article on the same event
            continue
        seeds.append(seed)
        served[url] = page.html
        served[seed.mirror] = edit(html, seed, seed.fragment.replace(seed.original, seed.edited, 1)).encode("utf-8")
        served[seed.archive] = edit(html, seed, "about " + seed.fragment).encode("utf-8")
    har = write_har(served.items(), work / "pages.har")
    hosts = sorted({urlsplit(u).hostname for u in served} - {None})
    charter = parse_charter(
        {
            "id": "bench_conflicts",
            "title": "Seeded conflicts",
            "allowed_domains": hosts,
            "seeds": list(served),
            "outputs": {
                "doc": str(work / "out" / "conflicts.md"),
                "sections": [{"title": f"Seed {i + 1:02d}", "question": s.question} for i, s in enumerate(seeds)],
            },
            "harvest": {"max_pages": len(served) + 5, "max_depth": 0, "concurrency": 2, "timeout_s": 30,
                        "javascript": False, "obey_robots": False},
            "memory": {"use_concept_index": False},
            "retrieval": {"k": args.k},
        }
    )
    t0 = time.perf_counter()
    report = harvest(charter, replay=har)
    t_harvest = time.perf_counter() - t0
    t0 = time.perf_counter()
    result = synthesize(charter)
    t_synth = time.perf_counter() - t0
    doc = result.to_json()

    mirrors = {s.mirror for s in seeds}
    found = []
    for i, s in enumerate(seeds):
        title = f"Seed {i + 1:02d}"
        hit = False
        for c in doc["conflicts"]:
            if c["section"] != title:
                continue
            sides = {c["a"]["url"]: c["a"]["value"], c["b"]["url"]: c["b"]["value"]}
            edited_side = sides.get(s.mirror)
            other = [v for u, v in sides.items() if u in (s.url, s.archive)]
            if edited_side and s.edited in edited_side and other and s.original in other[0]:
                hit = True
        section = doc["sections"][i]
        quoted = {b["url"] for b in section["blocks"]}
        found.append({"seed": title, "page": s.page_id[:12], "original": s.original, "edited": s.edited,
                      "found": hit, "mirror_quoted": s.mirror in quoted,
                      "original_quoted": bool(quoted & {s.url, s.archive})})
    quoted_unedited = {b["url"] for sec in doc["sections"] for b in sec["blocks"] if b["url"] not in mirrors}
    false_conflicts = [c for c in doc["conflicts"] if c["a"]["url"] not in mirrors and c["b"]["url"] not in mirrors]
    flagged = {c[k]["url"] for c in false_conflicts for k in ("a", "b")}
    n_found = sum(f["found"] for f in found)
    naive = naive_baseline(doc, seeds, mirrors)
    out = {
        "benchmark": "conflicts between sources on seeded edits (bench/conflicts.py)",
        "command": " ".join(["bench/conflicts.py", *sys.argv[1:]]),
        "seeds": len(seeds),
        "pages_served": len(served),
        "pages_stored": report.pages_stored,
        "found": n_found,
        "found_rate": round(n_found / len(seeds), 3) if seeds else None,
        "found_when_both_quoted": sum(f["found"] for f in found if f["mirror_quoted"] and f["original_quoted"]),
        "both_quoted": sum(1 for f in found if f["mirror_quoted"] and f["original_quoted"]),
        "unedited_pages_quoted": len(quoted_unedited),
        "unedited_pages_falsely_flagged": len(flagged),
        "false_flag_rate": round(len(flagged) / len(quoted_unedited), 3) if quoted_unedited else None,
        "conflicts_total": len(doc["conflicts"]),
        "conflicts_between_unedited_pages": [
            {"section": c["section"], "kind": c["kind"], "a": c["a"]["value"], "b": c["b"]["value"],
             "about": c["about"], "pages": [urlsplit(c["a"]["url"]).hostname, urlsplit(c["b"]["url"]).hostname]}
            for c in false_conflicts
        ],
        "agreements": len(doc["agreements"]),
        "baseline_naive": naive,
        "per_seed": found,
        "seeded_kinds": [asdict(s)["fragment"].replace(s.original, "N", 1)[:40] for s in seeds],
        "timings_s": {"harvest": round(t_harvest, 1), "synthesize": round(t_synth, 1),
                      "total": round(time.perf_counter() - t_start, 1)},
        "machine": machine_info(),
        "work_dir": str(work),
    }
    emit_report(out, args.json, name="conflicts")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    raise SystemExit(main())
