"""``brt check`` on reports written from real syntheses, seeded with the errors agents make.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/check_report.py --eval-dir ../shared/eval \\
        [--sets web-qa,news] [--per-kind 25] [--json OUT.json]

The latest result is written to ``bench/results/check_report.json`` (``write_result``).

Evidence: the three web-qa charters (``web-qa/web-qa-dev.json``, 32 real pages of
``readability-test-pages/``) and one charter over the 33 news pages of
``article-extraction-benchmark/topic-clusters.json`` with the questions of ``bench/data/news_questions.json``;
every page served from a HAR written at run time under its charter URL (never copied into the repository),
harvested and synthesized through the real CLI (``brt harvest --replay``, ``brt synthesize --json``).

The clean report of each charter is written from its synthesis the way an agent writes one: per answered
section its evidence-block lines (as printed), a sentence quoting the first block with an inline link and the
date, and, for each of its first two blocks, a **restated claim**: a sentence of the block's quote stated
without quote marks (a leading connective and parenthetical asides dropped; for the second block only its
first clause; no paraphrasing model is available offline), cited in turn by an inline link, a footnote or an
``[Label Evidence #n]`` reference; per gap section a claim marked ``(unsupported)``.

Seeded errors, each in its own report (the clean report's evidence lines and footnotes, plus the one altered
claim): ``altered_quote`` (one content word of a quote replaced by another word of the same page),
``moved_quote`` (the quote cited to another harvested page, with that page's date), ``wrong_date``,
``invented_url`` (half a new path on a harvested host, half a host off the allowlist), ``uncited`` (a restated
claim with its citation removed), ``reversed`` (a restated claim with a number changed, a direction word
swapped for its opposite, a negation added or dropped, or else prefixed "It is not true that"), and
``misattributed`` (a restated claim cited to another page of the charter that does not state it). A seeded
error is **detected** when the check fails that claim with the expected problem.

False alarms: claims of the clean report that fail the check (every claim the check reads in it).
Baselines (same claims, same cut-offs, and each one's AUROC, which needs no cut-off): the support score without
the closest-statement rule, without the explicit number/negation/direction signals, the cosine alone, and the
evidence reader (``orchestrator/evidence``'s cross-encoder, the claim read as the question).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench._common import hosts_of, machine_info, write_har, write_result  # noqa: E402
from bench.evidence_squad import run_cli, write_bench_charter  # noqa: E402

KINDS = ["altered_quote", "moved_quote", "wrong_date", "invented_url", "uncited", "reversed", "misattributed"]
EXPECTED = {
    "altered_quote": {"quote_not_verbatim", "quote_elsewhere"},
    "moved_quote": {"quote_not_verbatim", "quote_elsewhere"},
    "wrong_date": {"wrong_date"},
    "invented_url": {"not_harvested", "off_allowlist"},
    "uncited": {"uncited"},
    "reversed": {"not_found"},
    "misattributed": {"not_found"},
}


# -- evidence: charters, pages, HAR ---------------------------------------------------------------------------


@dataclass
class BenchCharter:
    cid: str
    title: str
    domains: list[str]
    pages: dict[str, bytes]  # url -> html
    sections: list[dict]


def web_qa(eval_dir: Path) -> list[BenchCharter]:
    spec = json.loads((eval_dir / "web-qa" / "web-qa-dev.json").read_text())
    pages_dir = eval_dir / "readability-test-pages" / "pages"
    out = []
    for c in spec:
        pages = {p["url"]: gzip.decompress((pages_dir / p["case"] / "source.html.gz").read_bytes()) for p in c["pages"]}
        sections = [{"title": s["question"], "label": f"Q{i + 1}", "question": s["question"]}
                    for i, s in enumerate(c["sections"])]
        out.append(BenchCharter(c["id"].replace("-", "_"), c["title"], list(c["allowed_domains"]), pages, sections))
    return out


def news(eval_dir: Path) -> list[BenchCharter]:
    from bench.evidence_news import DEFAULT_QUESTIONS, load_clusters

    clusters, pages = load_clusters(eval_dir, DEFAULT_QUESTIONS)
    sections = [{"title": q.question, "label": f"N{i + 1}", "question": q.question}
                for i, q in enumerate(q for c in clusters for q in c.questions)]
    urls = [u for c in clusters for u in c.urls]
    return [BenchCharter("news_check", "News events", hosts_of(urls), {u: pages[u] for u in urls}, sections)]


# -- the clean report -----------------------------------------------------------------------------------------


@dataclass
class Item:
    """One line of a report: an evidence line, a quoting sentence, a restated claim, a marked gap claim."""

    kind: str  # "evidence", "quote", "restated", "gap"
    label: str
    n: int
    text: str  # the claim's words (the quote for evidence/quote items)
    url: str | None
    date: str | None
    style: str = "link"  # how a restated claim cites: link, footnote, ref
    title: str = "source"
    cited: bool = True
    mutation: str | None = None  # the seeded error, if any


_CONNECTIVE = re.compile(r"^(?:but|and|however|also|still|yet|so|in addition|moreover|meanwhile|instead),?\s+",
                         re.IGNORECASE)


def restate(sentence: str, *, partial: bool = False) -> str:
    """A sentence stated as a claim: without a leading connective or parenthetical asides, capitalised, ending
    with a full stop; ``partial``: only its first clause (up to a comma, semicolon or dash) when that clause
    has six words or more."""
    text = re.sub(r"\s*\([^)]*\)", "", sentence).strip()
    if partial:
        clause = re.split(r"[,;:]\s|\s[—–-]\s", text, maxsplit=1)[0]
        text = clause if len(clause.split()) >= 6 else text
    text = _CONNECTIVE.sub("", text).strip(" \"'“”")
    if text.count('"') % 2:  # a quote the sentence split cut open
        text = text.replace('"', "")
    if text.count("“") != text.count("”"):
        text = text.replace("“", "").replace("”", "")
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


def clean_items(synthesis: dict) -> list[Item]:
    from memory_store.text import sentences

    items: list[Item] = []
    styles = ["link", "footnote", "ref"]
    for s in synthesis["sections"]:
        label = s["label"]
        if not s["blocks"]:
            items.append(Item("gap", label, 0, f"The sources do not answer: {s['question'].rstrip('?')}.", None,
                              None, cited=False))
            continue
        for b in s["blocks"]:
            items.append(Item("evidence", label, b["n"], b["quote"], b["url"], b["last_updated"] or "unknown"))
        first = s["blocks"][0]
        items.append(Item("quote", label, first["n"], first["quote"], first["url"], first["last_updated"] or "unknown"))
        for b in s["blocks"][:2]:
            candidates = [x for x in sentences(b["quote"].strip("… "))
                          if 8 <= len(x.split()) <= 45 and "|" not in x and not x.endswith("?")]
            if candidates:
                style = styles[len(items) % 3]
                items.append(Item("restated", label, b["n"], restate(candidates[0], partial=b["n"] > 1), b["url"],
                                  b["last_updated"] or "unknown", style))
    return items


def _md(text: str) -> str:
    from orchestrator.untrusted import markdown_quote

    return markdown_quote(text)


def _display(url: str) -> str:
    return re.sub(r"^[a-z]+://", "", url)


def render(items: list[Item], title: str) -> tuple[str, dict[int, int]]:
    """The report's Markdown, and item index -> line number of its claim."""
    lines = [f"# {title}", ""]
    notes: list[str] = []
    where: dict[int, int] = {}
    for i, it in enumerate(items):
        where[i] = len(lines) + 1
        lines.append(_line(it, notes))
    if notes:
        lines.append("")
        lines += notes
    return "\n".join(lines) + "\n", where


def _line(it: Item, notes: list[str]) -> str:
    if it.kind == "evidence":
        return f'[{it.label} Evidence #{it.n}] "{_md(it.text)}" — {_display(it.url or "")} (last updated: {it.date})'
    if it.kind == "gap":
        return f"{it.text} (unsupported)"
    if it.kind == "quote":
        return f'The source states "{_md(it.text)}" ([{it.title}]({it.url}), last updated: {it.date}).'
    body = it.text.rstrip(".")
    if not it.cited:
        return body + "."
    if it.style == "footnote":
        notes.append(f"[^{len(notes) + 1}]: [{it.title}]({it.url}) (last updated: {it.date})")
        return f"{body} [^{len(notes)}]."
    if it.style == "ref":
        return f"{body} [{it.label} Evidence #{it.n}]."
    return f"{body} ([{it.title}]({it.url}), last updated: {it.date})."


# -- seeded errors --------------------------------------------------------------------------------------------

_OPPOSITE = {
    "rose": "fell", "fell": "rose", "increased": "decreased", "decreased": "increased", "rise": "fall",
    "fall": "rise", "more": "less", "less": "more", "higher": "lower", "lower": "higher", "before": "after",
    "after": "before", "won": "lost", "lost": "won", "larger": "smaller", "smaller": "larger", "most": "least",
    "above": "below", "below": "above", "increase": "decrease", "decrease": "increase", "allowed": "banned",
    "first": "last", "up": "down", "down": "up", "gained": "lost", "earlier": "later", "later": "earlier",
}
_AUX = re.compile(r"\b(is|are|was|were|has|have|had|can|could|will|would|should|may|might|must|does|did|do)\b")
_NEG = re.compile(r"\s+(?:not|never)\b|n't\b")


def reverse(text: str) -> tuple[str, str]:
    """``text`` with its meaning reversed, and how: a number changed, an opposite word, a negation added or
    dropped, or "It is not true that"."""
    m = re.search(r"(?<![\w.,\[])(\d+)(?![\w,\]]*\d)(?!\])", text)  # not a footnote mark such as [5]
    if m:
        return text[: m.start()] + str(int(m.group(1)) + 1) + text[m.end():], "number"
    for word, opposite in _OPPOSITE.items():
        w = re.search(rf"\b{word}\b", text)
        if w:
            return text[: w.start()] + opposite + text[w.end():], "opposite word"
    if _NEG.search(text):
        return _NEG.sub("", text, count=1), "negation dropped"
    aux = _AUX.search(text)
    if aux:
        return text[: aux.end()] + " not" + text[aux.end():], "negation added"
    return "It is not true that " + text[:1].lower() + text[1:], "it is not true that"


def alter_word(quote: str, vocabulary: list[str], rng: random.Random) -> str | None:
    words = [m for m in re.finditer(r"\b[A-Za-z]{5,}\b", quote)]
    if not words:
        return None
    target = rng.choice(words)
    choices = [w for w in vocabulary if w.lower() != target.group(0).lower()]
    return quote[: target.start()] + rng.choice(choices) + quote[target.end():] if choices else None


def seeded(items: list[Item], source: Any, kind: str, per_kind: int, rng: random.Random) -> list[tuple[int, Item]]:
    """Up to ``per_kind`` (item index, altered item) pairs of one error kind."""
    pages = {p.url: p for p in source.pages}
    out: list[tuple[int, Item]] = []
    order = list(range(len(items)))
    rng.shuffle(order)
    for i in order:
        altered = _seed_one(items[i], source, pages, kind, rng)
        if altered is not None:
            out.append((i, altered))
        if len(out) >= per_kind:
            break
    return out


def _seed_one(it: Item, source: Any, pages: dict, kind: str, rng: random.Random) -> Item | None:
    if it.kind not in _ELIGIBLE[kind] or (kind in ("wrong_date", "invented_url") and it.style == "ref"
                                          and it.kind == "restated"):
        return None
    others = [u for u in pages if u != it.url]
    return _SEEDERS[kind](it, source, pages, others, rng)


def _altered_quote(it: Item, source: Any, pages: dict, others: list[str], rng: random.Random) -> Item | None:
    from orchestrator.audit.check import quote_in_text

    page = pages.get(it.url or "")
    vocab = sorted(set(re.findall(r"\b[a-z]{5,}\b", page.text or ""))) if page else []
    text = alter_word(it.text, vocab, rng)
    if text is None or any(quote_in_text(text, c.text) for c in source.chunks_of(page)):
        return None
    return replace(it, text=text, mutation="altered_quote")


def _moved_quote(it: Item, source: Any, pages: dict, others: list[str], rng: random.Random) -> Item | None:
    from orchestrator.audit.check import quote_in_text

    elsewhere = [u for u in others if not any(quote_in_text(it.text, c.text) for c in source.chunks_of(pages[u]))]
    if not elsewhere:
        return None
    u = rng.choice(elsewhere)
    return replace(it, url=u, date=pages[u].last_updated or "unknown", mutation="moved_quote")


def _wrong_date(it: Item, source: Any, pages: dict, others: list[str], rng: random.Random) -> Item | None:
    return replace(it, date="2019-03-14" if it.date != "2019-03-14" else "2021-07-02", mutation="wrong_date")


def _invented_url(it: Item, source: Any, pages: dict, others: list[str], rng: random.Random) -> Item | None:
    host = re.sub(r"^[a-z]+://", "", it.url or "").split("/")[0]
    if rng.random() < 0.5:
        return replace(it, url=f"https://{host}/archive/{rng.randrange(10**6)}", mutation="invented_url:same host")
    return replace(it, url=f"https://news.example.org/story/{rng.randrange(10**6)}",
                   mutation="invented_url:off the allowlist")


def _uncited(it: Item, source: Any, pages: dict, others: list[str], rng: random.Random) -> Item | None:
    return replace(it, cited=False, mutation="uncited")


def _reversed(it: Item, source: Any, pages: dict, others: list[str], rng: random.Random) -> Item | None:
    text, how = reverse(it.text)
    return replace(it, text=text, mutation=f"reversed:{how}")


def _misattributed(it: Item, source: Any, pages: dict, others: list[str], rng: random.Random) -> Item | None:
    if not others:
        return None
    u = rng.choice(others)
    return replace(it, url=u, date=pages[u].last_updated or "unknown", style="link", mutation="misattributed")


_SEEDERS = {"altered_quote": _altered_quote, "moved_quote": _moved_quote, "wrong_date": _wrong_date,
            "invented_url": _invented_url, "uncited": _uncited, "reversed": _reversed,
            "misattributed": _misattributed}
_ELIGIBLE = {"altered_quote": {"evidence", "quote"}, "moved_quote": {"evidence", "quote"},
             "wrong_date": {"evidence", "quote", "restated"}, "invented_url": {"evidence", "quote", "restated"},
             "uncited": {"restated"}, "reversed": {"restated"}, "misattributed": {"restated"}}


# -- running --------------------------------------------------------------------------------------------------


@dataclass
class Tally:
    seeded: Counter = field(default_factory=Counter)
    detected: Counter = field(default_factory=Counter)  # failed with the expected problem
    failed: Counter = field(default_factory=Counter)  # failed (any failing problem)
    verdicts: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    clean_claims: int = 0
    false_alarms: list[dict] = field(default_factory=list)
    clean_verdicts: Counter = field(default_factory=Counter)
    restated_scores: list[float] = field(default_factory=list)
    reversed_scores: list[float] = field(default_factory=list)
    misattributed_scores: list[float] = field(default_factory=list)
    misses: dict[str, list[dict]] = field(default_factory=lambda: defaultdict(list))
    ablation: dict[str, dict[str, list[float]]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(list)))
    check_s: list[float] = field(default_factory=list)


def mini_report(items: list[Item], index: int, altered: Item, title: str) -> tuple[str, int]:
    """The clean report's evidence lines (and footnotes) plus the one altered claim; its line number."""
    kept = [it for j, it in enumerate(items) if it.kind == "evidence" and j != index]
    text, where = render([*kept, altered], title)
    return text, where[len(kept)]


def _parts_of(result: Any, line: int, source: Any, text: str) -> Any:
    """The support score parts of the best passage for the claim at ``line`` (for the baselines)."""
    from orchestrator.audit.claims import parse_report
    from orchestrator.audit.support import passages, score_parts

    claim = next((c for c in parse_report(text).claims if c.line == line), None)
    res = next((c for c in result.claims if c.line == line), None)
    if claim is None or res is None or not res.citations or not res.citations[0].page_url:
        return None
    page = source.page_for(res.citations[0].page_url)
    texts = [p for c in source.chunks_of(page) for p in passages(c.text)]
    texts = list(dict.fromkeys(texts))
    parts = score_parts(claim.plain, texts, source.embedder())
    return (parts, claim.plain, texts) if parts else None


def _reader_support(claim: str, texts: list[str]) -> float:
    """The evidence reader's view of support: the claim read as the question, the sigmoid of its best logit
    over the page's passages."""
    import math

    from orchestrator.evidence.reader import load_reader

    logits = load_reader().logits(claim, texts)
    return 1 / (1 + math.exp(-max(logits))) if logits else 0.0


def _ablate(tally: Tally, key: str, found: Any) -> None:
    if not found:
        return
    from orchestrator.audit.support import aligned_scores

    parts, claim, texts = found
    tally.ablation["the evidence reader (claim as the question, sigmoid of the best logit)"][key].append(
        _reader_support(claim, texts))
    tally.ablation["brt (meaning + words, signals, closest statements)"][key].append(max(aligned_scores(parts)))
    tally.ablation["without the closest-statement rule"][key].append(max(p.score for p in parts))
    tally.ablation["without the number/negation/direction signals"][key].append(
        max((p.meaning + p.words) / 2 for p in parts))
    tally.ablation["cosine alone (mapped)"][key].append(max(p.meaning for p in parts))


def run_charter(bc: BenchCharter, synthesis: dict, tally: Tally, per_kind: int, rng: random.Random) -> dict:
    from orchestrator.audit.check import check_text
    from orchestrator.audit.evidence_source import from_store
    from orchestrator.charter import load_charter

    charter = load_charter(Path(synthesis["_charter_path"]))
    source = from_store(charter)
    titles = {p.url: (p.title or "source").replace("[", "(").replace("]", ")")[:60] for p in source.pages}
    items = [replace(it, title=titles.get(it.url or "", "source")) for it in clean_items(synthesis)]
    text, where = render(items, bc.title)
    t0 = time.monotonic()
    clean = check_text(text, source, report=f"{bc.cid}-clean.md")
    tally.check_s.append(time.monotonic() - t0)
    item_at = {where[i]: it for i, it in enumerate(items)}
    for res in clean.claims:  # every claim the check reads in the clean report (one line may hold several)
        it = item_at.get(res.line)
        tally.clean_claims += 1
        tally.clean_verdicts[res.verdict] += 1
        if it is not None and it.kind == "restated" and it.cited and res.text.startswith(it.text[:20]):
            tally.restated_scores.append(res.evidence.score if res.evidence and res.evidence.score is not None else 0)
            _ablate(tally, "clean", _parts_of(clean, res.line, source, text))
        if not res.ok:
            tally.false_alarms.append({"charter": bc.cid, "line": res.line, "item": it.kind if it else None,
                                       "verdict": res.verdict,
                                       "problems": [p.message for p in res.problems if p.failing],
                                       "text": res.text[:300]})
    for kind in KINDS:
        for index, altered in seeded(items, source, kind, per_kind, rng):
            report, line = mini_report(items, index, altered, bc.title)
            t0 = time.monotonic()
            result = check_text(report, source, report=f"{bc.cid}-{kind}.md")
            tally.check_s.append(time.monotonic() - t0)
            res = next((c for c in result.claims if c.line == line), None)
            kinds = {p.kind for p in res.problems if p.failing} if res else set()
            sub = altered.mutation or kind
            tally.seeded[sub] += 1
            tally.detected[sub] += bool(kinds & EXPECTED[kind])
            tally.failed[sub] += bool(kinds)
            if not kinds & EXPECTED[kind] and len(tally.misses[kind]) < 8:
                tally.misses[kind].append({
                    "charter": bc.cid, "how": sub, "verdict": res.verdict if res else "not parsed",
                    "line": report.splitlines()[line - 1][:400],
                    "score": res.evidence.score if res and res.evidence else None,
                    "passage": (res.evidence.passage or "")[:300] if res and res.evidence else None,
                    "problems": [p.message for p in res.problems] if res else []})
            tally.verdicts[sub][res.verdict if res else "not parsed"] += 1
            if kind in ("reversed", "misattributed") and res is not None:
                score = res.evidence.score if res.evidence and res.evidence.score is not None else 0.0
                (tally.reversed_scores if kind == "reversed" else tally.misattributed_scores).append(score)
                _ablate(tally, kind, _parts_of(result, line, source, report))
    return {"charter": bc.cid, "pages": len(source.pages), "sections": len(synthesis["sections"]),
            "items": Counter(it.kind for it in items), "clean_claims": len(clean.claims),
            "clean_ok": clean.ok, "clean_rates": clean.rates(), "report_path": None}


def cli_exit_codes(charter: Path, tmp: Path, items_text: str, bad_text: str, env: dict) -> dict[str, int]:
    """``brt check`` through the real CLI on a clean and on a seeded report: the exit codes."""
    out = {}
    for name, text in (("clean", items_text), ("seeded", bad_text)):
        path = tmp / f"cli-{name}.md"
        path.write_text(text, encoding="utf-8")
        r = subprocess.run([sys.executable, "-m", "orchestrator.cli", "check", str(path), "--charter", str(charter)],
                           env=dict(env, PYTHONPATH=str(REPO_ROOT)), cwd=str(REPO_ROOT), capture_output=True,
                           text=True)
        out[name] = r.returncode
    return out


def _quantiles(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    v = sorted(values)
    pick = lambda q: round(v[min(len(v) - 1, int(q * len(v)))], 3)  # noqa: E731
    return {"n": len(v), "min": round(v[0], 3), "p10": pick(0.1), "p25": pick(0.25), "median": pick(0.5),
            "p75": pick(0.75), "p90": pick(0.9), "max": round(v[-1], 3)}


def summarize(tally: Tally) -> dict:
    from orchestrator.audit.support import SUPPORTED, WEAK

    kinds: dict[str, dict] = {}
    for kind in KINDS:
        subs = sorted(k for k in tally.seeded if k == kind or k.startswith(kind + ":"))
        n = sum(tally.seeded[k] for k in subs)
        d = sum(tally.detected[k] for k in subs)
        f = sum(tally.failed[k] for k in subs)
        kinds[kind] = {"seeded": n, "detected": d, "rate": round(d / n, 4) if n else None, "failed": f,
                       "failed_rate": round(f / n, 4) if n else None, "misses": tally.misses.get(kind, [])}
        if len(subs) > 1 or (subs and subs[0] != kind):
            kinds[kind]["by_how"] = {k.split(":", 1)[1]: {"seeded": tally.seeded[k], "detected": tally.detected[k],
                                                          "verdicts": dict(tally.verdicts[k])} for k in subs}
        else:
            kinds[kind]["verdicts"] = dict(tally.verdicts.get(kind, {}))
    baselines = {}
    for name, groups in tally.ablation.items():
        clean, rev, mis = groups.get("clean", []), groups.get("reversed", []), groups.get("misattributed", [])
        baselines[name] = {
            "restated claims below WEAK (false alarms)": _share(clean, lambda s: s < WEAK),
            "restated claims supported": _share(clean, lambda s: s >= SUPPORTED),
            "reversed claims below WEAK (detected)": _share(rev, lambda s: s < WEAK),
            "misattributed claims below WEAK (detected)": _share(mis, lambda s: s < WEAK),
            # threshold-free: how well the score orders restated claims above reversed / misattributed ones
            "AUROC restated vs reversed": _auroc(clean, rev),
            "AUROC restated vs misattributed": _auroc(clean, mis),
        }
    return {
        "thresholds": {"supported": SUPPORTED, "weakly_supported": WEAK},
        "detection": kinds,
        "clean": {"claims": tally.clean_claims, "false_alarms": len(tally.false_alarms),
                  "false_alarm_rate": round(len(tally.false_alarms) / tally.clean_claims, 4) if tally.clean_claims
                  else None, "verdicts": dict(tally.clean_verdicts), "false_alarm_examples": tally.false_alarms[:25]},
        "support_scores": {"restated (clean)": _quantiles(tally.restated_scores),
                           "reversed": _quantiles(tally.reversed_scores),
                           "misattributed": _quantiles(tally.misattributed_scores)},
        "baselines (same claims, same cut-offs)": baselines,
        "check_time_s": _quantiles(tally.check_s),
    }


def _auroc(positives: list[float], negatives: list[float]) -> float | None:
    """P(a positive scores above a negative), ties counting half."""
    if not positives or not negatives:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return round(wins / (len(positives) * len(negatives)), 4)


def _share(values: list[float], test: Any) -> dict | None:
    return {"n": len(values), "share": round(sum(1 for v in values if test(v)) / len(values), 4)} if values else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eval-dir", default=str(REPO_ROOT.parent / "shared" / "eval"))
    ap.add_argument("--sets", default="web-qa,news", help="comma-separated: web-qa, news")
    ap.add_argument("--per-kind", type=int, default=25, help="seeded errors of each kind per charter at most")
    ap.add_argument("--seed", type=int, default=36)
    ap.add_argument("--keep-tmp", action="store_true")
    ap.add_argument("--json", dest="json_out", default=None)
    args = ap.parse_args(argv)

    eval_dir = Path(args.eval_dir).expanduser().resolve()
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    charters = (web_qa(eval_dir) if "web-qa" in sets else []) + (news(eval_dir) if "news" in sets else [])
    tmp = Path(tempfile.mkdtemp(prefix="brt-bench-check-"))
    env = dict(os.environ, BRT_HOME=str(tmp / "brt_home"), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    os.environ.update(BRT_HOME=env["BRT_HOME"], HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    rng = random.Random(args.seed)
    tally = Tally()
    runs, timings = [], {}
    exit_codes: dict[str, int] = {}
    try:
        for bc in charters:
            har = write_har(bc.pages.items(), tmp / f"{bc.cid}.har")
            charter = write_bench_charter(tmp / f"{bc.cid}.yaml", bc.cid, bc.title, bc.domains, list(bc.pages),
                                          bc.sections, javascript=True)
            t0 = time.monotonic()
            run_cli(["harvest", str(charter), "--replay", str(har)], pythonpath=REPO_ROOT, env=env)
            timings[f"harvest {bc.cid}"] = round(time.monotonic() - t0, 1)
            r = run_cli(["synthesize", str(charter), "--json"], pythonpath=REPO_ROOT, env=env)
            synthesis = dict(json.loads(r.stdout), _charter_path=str(charter))
            t0 = time.monotonic()
            runs.append(run_charter(bc, synthesis, tally, args.per_kind, rng))
            timings[f"check {bc.cid}"] = round(time.monotonic() - t0, 1)
            print(f"[check] {bc.cid}: {runs[-1]['clean_claims']} clean claims, check {timings[f'check {bc.cid}']} s",
                  file=sys.stderr)
            if not exit_codes:
                items = clean_items(synthesis)
                clean_text, _ = render(items, bc.title)
                bad = [replace(items[0], text=items[0].text + " Invented words here.")] + items[1:]
                exit_codes = cli_exit_codes(charter, tmp, clean_text, render(bad, bc.title)[0], env)
        report = {"sets": sets, "charters": runs, **summarize(tally), "cli_exit_codes": exit_codes,
                  "timings_s": timings, "machine": machine_info(),
                  "command": " ".join([Path(sys.executable).name, *sys.argv])}
        text = json.dumps(report, indent=2, default=lambda o: dict(o) if isinstance(o, Counter) else str(o))
        print(text)
        if args.json_out:
            Path(args.json_out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.json_out).write_text(text + "\n")
        write_result("check_report", json.loads(text))  # bench/results/check_report.json: the latest result
    finally:
        if args.keep_tmp:
            print(f"[check] kept {tmp}", file=sys.stderr)
        else:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
