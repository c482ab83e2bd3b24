"""``brt check`` on reports written from real syntheses in five writing styles, clean and seeded with the
errors agents make; the current main's check measured on the same reports in the same run as the baseline.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/check_report.py --eval-dir ../shared/eval \\
        [--per-kind 8] [--baseline-repo ../main] [--json OUT.json]

The latest result is written to ``bench/results/check_report.json`` (``write_result``).

Evidence: six charters, harvested and synthesized through the real CLI (``brt harvest --replay``, ``brt
synthesize --json``) from HARs written at run time (the pages are read from ``--eval-dir`` and never copied
into the repository): the three web-qa charters (``web-qa/web-qa-dev.json``, 32 pages of
``readability-test-pages/``) and three news charters over the ten events of
``article-extraction-benchmark/topic-clusters.json`` (33 pages; the questions of ``bench/data/news_questions.json``).
None of these pages is one the support model was fitted on (``bench/fit_support.py``: the web-qa-train pages).

Reports. From each synthesis: brt's **own** outputs (the Markdown ``brt synthesize`` writes, its JSON, ``brt
report``'s Markdown and HTML), and four reports an agent would write, one per style: **inline** links,
**numbered** references with a References list, **footnotes**, and a **table** of claims with a Sources list of
bare links (a ``|`` a quote holds written ``\\|`` in its cell, as Markdown escapes it). Each agent report opens
with a framing sentence, quotes the first block of each answered section (every other quote with its first letter
lower-cased, dates every third citation written "18 March 2025"),
restates the first sentence of its first two blocks as claims (every third with a phrase moved, "…, in 2023." as
"In 2023, …", every third a word or two reworded with a synonym of ``SYNONYMS`` here, none of which the fitting
script uses),
joins two restated claims of different pages into one sentence cited per clause, and marks each gap section's
claim ``(unsupported)``.

Seeded errors, one per report (a style's report of the one altered item): ``altered_quote`` (a content word of
a quote replaced by another word of the page), ``short_quote`` (a two-word quote with a word changed or given a
negative prefix), ``moved_quote`` (cited to another harvested page), ``elision`` (a quote elided across a
negation, a number or two sentences), ``wrong_date``, ``invented_url`` (a citation to a new path on a harvested
host or to a host off the allowlist), ``invented_listed_url`` (such a URL added to the report's Sources or
References list, cited by nothing), ``uncited``, ``reversed`` (a restated claim reversed in one of the ways of
``bench/_claim_variants.py``: negation, an antonym from ``OPPOSITES`` here, none of which the fitting script
uses, a negative prefix, a number changed, two numbers swapped, a name replaced, two words or names swapped)
and ``misattributed`` (a restated claim cited to another page that does not state it). A seeded error is
**detected** when the check fails its line with the expected problem.

False alarms: claims of the clean reports that fail (brt's own outputs separately: the target is 0). The MCP
``check_report`` result for a 100-claim report (half of it failing) is measured against its 8,000-character
bound. The support model's figures on the restated, reversed and misattributed claims are held out twice over:
other pages than it was fitted on, opposites it never saw.
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

from bench._claim_variants import moved, page_names, restate, reversals, reworded, symmetric  # noqa: E402
from bench._common import hosts_of, machine_info, write_har, write_result  # noqa: E402
from bench.evidence_squad import run_cli, write_bench_charter  # noqa: E402

STYLES = ["inline", "numbered", "footnotes", "table"]
KINDS = ["altered_quote", "short_quote", "moved_quote", "elision", "wrong_date", "invented_url",
         "invented_listed_url", "uncited", "reversed", "misattributed"]
QUOTE_PROBLEMS = {"quote_not_verbatim", "quote_elsewhere", "elision_changes_quote"}
URL_PROBLEMS = {"not_harvested", "off_allowlist", "not_a_web_url"}
EXPECTED = {
    "altered_quote": QUOTE_PROBLEMS, "short_quote": QUOTE_PROBLEMS, "moved_quote": QUOTE_PROBLEMS,
    "elision": QUOTE_PROBLEMS, "wrong_date": {"wrong_date"}, "invented_url": URL_PROBLEMS,
    "invented_listed_url": URL_PROBLEMS, "uncited": {"uncited"}, "reversed": {"not_found"},
    "misattributed": {"not_found"},
}
#: Opposites the seeded reversals use: none is a pair of bench/fit_support.py's OPPOSITES.
OPPOSITES = symmetric(
    "arrive:depart arrived:departed entered:left enter:leave attack:defend attacked:defended friend:enemy "
    "friends:enemies include:exclude included:excluded includes:excludes add:remove added:removed "
    "public:private rural:urban ancient:modern wet:dry heavy:light thick:thin wide:narrow deep:shallow "
    "fast:slow faster:slower quick:slow quickly:slowly loud:quiet full:empty hard:soft dark:bright "
    "same:different similar:different local:foreign domestic:international simple:complex simpler:complexer "
    "temporary:permanent guilty:innocent victory:defeat profit:loss profits:losses push:pull present:absent "
    "win:draw beginning:end inner:outer upper:lower left:right send:receive sent:received give:take "
    "gave:took teach:learn asked:answered male:female husband:wife men:women man:woman boys:girls boy:girl "
    "father:mother son:daughter brother:sister king:queen morning:evening day:night summer:winter "
    "spring:autumn monday:friday tuesday:thursday january:july march:september"
)
PREFIXED = symmetric(
    "aware:unaware available:unavailable fortunate:unfortunate necessary:unnecessary stable:unstable "
    "limited:unlimited paid:unpaid employed:unemployed willing:unwilling acceptable:unacceptable "
    "complete:incomplete correct:incorrect dependent:independent formal:informal direct:indirect "
    "accurate:inaccurate moral:immoral mature:immature relevant:irrelevant connected:disconnected "
    "satisfied:dissatisfied loyal:disloyal"
)

#: Synonyms the clean reports reword claims with: none is a pair (nor a word) of bench/fit_support.py's SYNONYMS.
SYNONYMS = symmetric(
    "reported:noted explained:described asked:requested allowed:permitted allow:permit allows:permits "
    "huge:enormous launched:introduced launch:introduce revealed:disclosed reveal:disclose sought:pursued "
    "choose:select chose:selected choice:option choices:options purpose:intention primarily:mostly "
    "currently:presently recently:lately usually:typically correct:accurate error:mistake errors:mistakes "
    "talk:speak talked:spoke consumer:customer consumers:customers worker:employee workers:employees "
    "doctor:physician doctors:physicians lawyer:attorney lawyers:attorneys film:movie films:movies "
    "photo:picture photos:pictures student:pupil students:pupils shop:store shops:stores injured:hurt "
    "damaged:harmed replied:responded reply:respond journey:trip vessels:ships couple:pair afterwards:later "
    "shut:closed unclear:uncertain goods:products"
)


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


def news(eval_dir: Path, parts: int = 3) -> list[BenchCharter]:
    """The ten news events in ``parts`` charters (consecutive events together)."""
    from bench.evidence_news import DEFAULT_QUESTIONS, load_clusters

    clusters, pages = load_clusters(eval_dir, DEFAULT_QUESTIONS)
    out = []
    size = -(-len(clusters) // parts)
    for k in range(parts):
        group = clusters[k * size:(k + 1) * size]
        if not group:
            continue
        sections = [{"title": q.title, "label": f"N{k + 1}-{i + 1}", "question": q.question}
                    for i, q in enumerate(q for c in group for q in c.questions)]
        urls = [u for c in group for u in c.urls]
        out.append(BenchCharter(f"news_check_{k + 1}", f"News events, part {k + 1}", hosts_of(urls),
                                {u: pages[u] for u in urls}, sections))
    return out


# -- items and styles ---------------------------------------------------------------------------------------


@dataclass
class Item:
    """One statement of an agent's report: a quote, a restated claim, two claims cited per clause, a gap."""

    kind: str  # "quote", "restated", "pair", "gap"
    text: str  # the quote (quote items) or the claim
    url: str | None
    date: str | None
    label: str = ""
    title: str = "source"
    url2: str | None = None  # a pair's second source
    date2: str | None = None
    text2: str | None = None
    title2: str = "source"
    cited: bool = True
    mutation: str | None = None
    lower: bool = False  # a quote whose first letter is lower-cased
    written_date: bool = False  # "18 March 2025"
    listed_extra: str | None = None  # an invented URL added to the Sources / References list
    how: str = ""  # a restated claim: "restated", "partial", "moved" or "reworded"


def clean_items(synthesis: dict, titles: dict[str, str]) -> list[Item]:
    from memory_store.text import sentences

    items: list[Item] = []
    restated: list[Item] = []
    for s in synthesis["sections"]:
        if not s["blocks"]:
            items.append(Item("gap", f"The sources do not answer: {s['question'].rstrip('?')}.", None, None,
                              s["label"], cited=False))
            continue
        first = s["blocks"][0]
        items.append(Item("quote", first["quote"].strip("… "), first["url"], first["last_updated"] or "unknown",
                          s["label"], lower=len(items) % 2 == 1))
        for b in s["blocks"][:2]:
            candidates = [x for x in sentences(b["quote"].strip("… "))
                          if 8 <= len(x.split()) <= 45 and "|" not in x and not x.endswith("?")]
            if candidates:
                text = restate(candidates[0], partial=b["n"] > 1)
                how = "partial" if text != restate(candidates[0]) else "restated"
                if len(restated) % 3 == 1 and moved(text):  # every third: a phrase moved
                    text, how = moved(text) or text, "moved"
                elif len(restated) % 3 == 2 and reworded(text, random.Random(text), SYNONYMS):  # a word or two
                    text, how = reworded(text, random.Random(text), SYNONYMS) or text, "reworded"
                restated.append(Item("restated", text, b["url"], b["last_updated"] or "unknown", s["label"],
                                     how=how))
                items.append(restated[-1])
    pairs = [(a, b) for a, b in zip(restated, restated[1:], strict=False) if a.url != b.url][:2]
    for a, b in pairs:
        items.append(Item("pair", a.text.rstrip("."), a.url, a.date, a.label, url2=b.url, date2=b.date,
                          text2=b.text[:1].lower() + b.text[1:]))
    for i, it in enumerate(items):
        it.title = titles.get(it.url or "", "source")
        it.title2 = titles.get(it.url2 or "", "source")
        it.written_date = i % 3 == 2
    return items


def _date(date: str | None, written: bool) -> str:
    import datetime as dt

    if written and date and re.fullmatch(r"\d{4}-\d{2}-\d{2}", date):
        d = dt.date.fromisoformat(date)
        return f"{d.day} {d.strftime('%B %Y')}"
    return date or "unknown"


class _Refs:
    """The numbered references (or footnotes) of a report, in order of first citation."""

    def __init__(self) -> None:
        self.order: list[tuple[str, str, str]] = []  # (url, date, title)

    def n(self, url: str, date: str, title: str) -> int:
        key = (url, date, title)
        if key not in self.order:
            self.order.append(key)
        return self.order.index(key) + 1


def _q(it: Item) -> str:
    quote = it.text[:1].lower() + it.text[1:] if it.lower and it.text[:1].isupper() else it.text
    return quote.replace('"', "'")


def _cite(style: str, it: Item, refs: _Refs, second: bool = False) -> str:
    url, date, title = (it.url2, it.date2, it.title2) if second else (it.url, it.date, it.title)
    date = _date(date, it.written_date)
    if style == "inline":
        return f"([{title}]({url}), last updated: {date})"
    n = refs.n(url or "", date, title)
    return f"[^{n}]" if style == "footnotes" else f"[{n}]"


def _sentence(style: str, it: Item, refs: _Refs) -> str:
    if it.kind == "gap":
        return f"{it.text[:-1]} (unsupported)."
    if it.kind == "quote":
        body = f'The page says that "{_q(it)}"'
    else:
        body = it.text.rstrip(".")
    if not it.cited:
        return body + "."
    if it.kind == "pair":
        return f"{body} {_cite(style, it, refs)}, and {it.text2.rstrip('.')} {_cite(style, it, refs, True)}."
    return f"{body} {_cite(style, it, refs)}."


def render(style: str, items: list[Item], title: str) -> tuple[str, dict[int, int], dict[str, int]]:
    """A report in ``style``: its Markdown, item index -> line of its claim, and extra listed URL -> its line."""
    refs = _Refs()
    lines = [f"# {title}", "", "Below is a summary of what the pages say.", ""]
    where: dict[int, int] = {}
    if style == "table":
        lines += ["| Finding | Source |", "|---|---|"]
    for i, it in enumerate(items):
        where[i] = len(lines) + 1
        text = _sentence(style, it, refs)
        if style == "table":
            text = "| " + text.replace("|", "\\|") + " |"
            text = re.sub(r" (\[\d+\])\.? \|$", r" | \1 |", text) if it.cited and it.kind != "pair" else text
        lines += [text] if style == "table" else [text, ""]
    extra = [it.listed_extra for it in items if it.listed_extra]
    listed: dict[str, int] = {}
    lines += [""]
    if style == "inline":
        lines += ["## Sources", ""]
        for url in dict.fromkeys([u for it in items for u in (it.url, it.url2) if u] + extra):
            listed[url] = len(lines) + 1
            lines.append(f"- <{url}>")
    elif style == "numbered":
        lines += ["## References", ""]
        for k, (url, date, t) in enumerate(refs.order, 1):
            lines += [f"[{k}] [{t}]({url}) (last updated: {date})"]
        for url in extra:
            listed[url] = len(lines) + 1
            lines.append(f"[{len(refs.order) + 1 + extra.index(url)}] {url}")
    elif style == "footnotes":
        for k, (url, date, t) in enumerate(refs.order, 1):
            lines += [f"[^{k}]: [{t}]({url}) (last updated: {date})"]
        for url in extra:
            listed[url] = len(lines) + 1
            lines.append(f"[^x{extra.index(url)}]: <{url}>")
    else:
        lines += ["## Sources", ""]
        for k, (url, date, _t) in enumerate(refs.order, 1):
            lines.append(f"{k}. {url} (last updated: {date})")
        for url in extra:
            listed[url] = len(lines) + 1
            lines.append(f"{len(refs.order) + 1 + extra.index(url)}. {url}")
    return "\n".join(lines) + "\n", where, listed


# -- seeded errors --------------------------------------------------------------------------------------------


def alter_word(quote: str, vocabulary: list[str], rng: random.Random) -> str | None:
    words = list(re.finditer(r"\b[A-Za-z]{5,}\b", quote))
    if not words:
        return None
    target = rng.choice(words)
    choices = [w for w in vocabulary if w.lower() != target.group(0).lower()]
    return quote[: target.start()] + rng.choice(choices) + quote[target.end():] if choices else None


@dataclass
class Seeder:
    source: Any
    rng: random.Random
    pages: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.pages = {p.url: p for p in self.source.pages}

    def on_page(self, quote: str, url: str | None) -> bool:
        from orchestrator.audit.check import quote_in_text

        page = self.pages.get(url or "")
        return page is not None and any(quote_in_text(quote, c.text) for c in self.source.chunks_of(page))

    def vocab(self, url: str | None) -> list[str]:
        page = self.pages.get(url or "")
        return sorted(set(re.findall(r"\b[a-z]{5,}\b", page.text or ""))) if page else []

    def altered_quote(self, it: Item) -> Item | None:
        if it.kind != "quote":
            return None
        text = alter_word(it.text, self.vocab(it.url), self.rng)
        return replace(it, text=text, mutation="altered_quote") if text and not self.on_page(text, it.url) else None

    def short_quote(self, it: Item) -> Item | None:
        if it.kind != "quote":
            return None
        pairs = re.findall(r"\b([A-Za-z]{3,} [a-z]{4,})\b", it.text)
        if not pairs:
            return None
        a, b = self.rng.choice(pairs).split()
        changed = f"{a} un{b}" if self.rng.random() < 0.5 else f"{a} {self.rng.choice(self.vocab(it.url) or [b])}"
        if self.on_page(changed, it.url):
            return None
        return replace(it, text=changed, lower=False, mutation="short_quote")

    def moved_quote(self, it: Item) -> Item | None:
        if it.kind != "quote":
            return None
        elsewhere = [u for u in self.pages if u != it.url and not self.on_page(it.text, u)]
        if not elsewhere:
            return None
        u = self.rng.choice(elsewhere)
        return replace(it, url=u, date=self.pages[u].last_updated or "unknown", mutation="moved_quote")

    def elision(self, it: Item) -> Item | None:
        """A quote elided across a negation or number (the words around it kept), or across two sentences."""
        from memory_store.text import sentences

        if it.kind != "quote":
            return None
        m = re.search(r"(\b\w+(?: \w+){2}) (?:not|no|never|\w+n't|\d[\d,.]*) (\w+(?: \w+){2}\b)", it.text)
        if m:
            return replace(it, text=f"{m.group(1)} … {m.group(2)}", lower=False, mutation="elision:dropped word")
        parts = sentences(it.text)
        if len(parts) >= 2 and len(parts[0].split()) >= 4 and len(parts[-1].split()) >= 4:
            head, tail = " ".join(parts[0].split()[:3]), " ".join(parts[-1].split()[-3:])
            return replace(it, text=f"{head} … {tail}", lower=False, mutation="elision:across sentences")
        return None

    def wrong_date(self, it: Item) -> Item | None:
        if it.kind not in ("quote", "restated"):
            return None
        return replace(it, date="2019-03-14" if it.date != "2019-03-14" else "2021-07-02", written_date=False,
                       mutation="wrong_date")

    def invented_url(self, it: Item) -> Item | None:
        if it.kind not in ("quote", "restated"):
            return None
        host = re.sub(r"^[a-z]+://", "", it.url or "").split("/")[0]
        if self.rng.random() < 0.5:
            return replace(it, url=f"https://{host}/archive/{self.rng.randrange(10**6)}",
                           mutation="invented_url:same host")
        return replace(it, url=f"https://news.example.org/story/{self.rng.randrange(10**6)}",
                       mutation="invented_url:off the allowlist")

    def invented_listed_url(self, it: Item) -> Item | None:
        if it.kind != "restated":
            return None
        host = re.sub(r"^[a-z]+://", "", it.url or "").split("/")[0]
        url = (f"https://{host}/archive/{self.rng.randrange(10**6)}" if self.rng.random() < 0.5
               else f"https://news.example.org/story/{self.rng.randrange(10**6)}")
        return replace(it, listed_extra=url, mutation="invented_listed_url")

    def uncited(self, it: Item) -> Item | None:
        return replace(it, cited=False, mutation="uncited") if it.kind == "restated" else None

    def reversed(self, it: Item) -> Item | None:
        if it.kind != "restated":
            return None
        page = self.pages.get(it.url or "")
        made = reversals(it.text, self.rng, opposites=OPPOSITES, prefixed=PREFIXED,
                         names=page_names(page.text or "") if page else [])
        if not made:
            return None
        how = self.rng.choice(sorted(made))
        return replace(it, text=made[how], mutation=f"reversed:{how}")

    def misattributed(self, it: Item) -> Item | None:
        if it.kind != "restated":
            return None
        others = [u for u in self.pages if u != it.url]
        if not others:
            return None
        u = self.rng.choice(others)
        return replace(it, url=u, date=self.pages[u].last_updated or "unknown", mutation="misattributed")


# -- running --------------------------------------------------------------------------------------------------


@dataclass
class Tally:
    seeded: Counter = field(default_factory=Counter)
    detected: Counter = field(default_factory=Counter)
    baseline_detected: Counter = field(default_factory=Counter)
    by_style: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    clean: Counter = field(default_factory=Counter)  # style -> claims
    clean_how: Counter = field(default_factory=Counter)  # how a clean restated claim was written -> claims
    false_how: Counter = field(default_factory=Counter)  # ... -> false alarms
    false_alarms: dict[str, list[dict]] = field(default_factory=lambda: defaultdict(list))
    baseline_false: Counter = field(default_factory=Counter)
    own: list[dict] = field(default_factory=list)
    misses: dict[str, list[dict]] = field(default_factory=lambda: defaultdict(list))
    scores: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    check_s: list[float] = field(default_factory=list)
    manifest: list[dict] = field(default_factory=list)  # every report, for the baseline


def _failing(result: Any, line: int) -> set[str]:
    return {p.kind for c in result.claims if c.line == line for p in c.problems if p.failing}


def _check(text: str, source: Any, name: str, tally: Tally) -> Any:
    from orchestrator.audit.check import check_text

    t0 = time.monotonic()
    result = check_text(text, source, report=name)
    tally.check_s.append(time.monotonic() - t0)
    return result


def run_clean(bc: BenchCharter, items: list[Item], source: Any, tmp: Path, charter: Path, tally: Tally) -> None:
    for style in STYLES:
        text, where, _ = render(style, items, bc.title)
        how = {line: items[i].how for i, line in where.items() if items[i].how}
        name = f"{bc.cid}-clean-{style}.md"
        (tmp / "reports" / name).write_text(text, encoding="utf-8")
        result = _check(text, source, name, tally)
        tally.manifest.append({"report": name, "charter": str(charter), "role": "clean", "style": style})
        for c in result.claims:
            tally.clean[style] += 1
            tally.clean_how[how.get(c.line, "other")] += 1
            tally.false_how[how.get(c.line, "other")] += not c.ok
            if c.kind in ("restated", "sentence", "row", "bullet", "clause") and c.evidence is not None \
                    and c.evidence.score is not None:
                tally.scores["faithful"].append(c.evidence.score)
            if not c.ok:
                tally.false_alarms[style].append({"charter": bc.cid, "line": c.line, "kind": c.kind,
                                                  "verdict": c.verdict, "text": c.text[:240],
                                                  "problems": [p.message[:240] for p in c.problems if p.failing]})


def run_own(bc: BenchCharter, charter: Path, tmp: Path, source: Any, env: dict, tally: Tally) -> None:
    """brt's own outputs of the charter, each checked against its store."""
    outputs = {"synthesize.md": tmp / "out" / f"{bc.cid}.md", "synthesize.json": tmp / f"{bc.cid}.json"}
    for fmt in ("md", "html"):
        out = tmp / f"{bc.cid}-report.{fmt}"
        run_cli(["report", str(charter), "--format", fmt, "--out", str(out)], pythonpath=REPO_ROOT, env=env)
        outputs[f"report.{fmt}"] = out
    for what, path in outputs.items():
        name = f"{bc.cid}-own-{what.replace('.', '-')}{path.suffix}"
        (tmp / "reports" / name).write_bytes(path.read_bytes())
        result = _check(path.read_text(encoding="utf-8"), source, name, tally)
        tally.manifest.append({"report": name, "charter": str(charter), "role": "own", "style": what})
        failing = [{"line": c.line, "kind": c.kind, "text": c.text[:200],
                    "problems": [p.message[:200] for p in c.problems if p.failing]} for c in result.claims if not c.ok]
        tally.own.append({"charter": bc.cid, "output": what, "claims": len(result.claims), "false_alarms": failing})


def run_seeded(bc: BenchCharter, items: list[Item], source: Any, tmp: Path, charter: Path, tally: Tally,
               per_kind: int, rng: random.Random) -> None:
    seeder = Seeder(source, rng)
    for kind in KINDS:
        order = list(range(len(items)))
        rng.shuffle(order)
        done = 0
        for i in order:
            altered = getattr(seeder, kind)(items[i])
            if altered is None:
                continue
            style = STYLES[(done + KINDS.index(kind)) % len(STYLES)]
            text, where, listed = render(style, [altered], bc.title)
            line = listed[altered.listed_extra] if altered.listed_extra else where[0]
            name = f"{bc.cid}-{kind}-{done}-{style}.md"
            (tmp / "reports" / name).write_text(text, encoding="utf-8")
            result = _check(text, source, name, tally)
            tally.manifest.append({"report": name, "charter": str(charter), "role": "seeded", "kind": kind,
                                   "sub": altered.mutation, "line": line, "style": style})
            found = _failing(result, line)
            sub = altered.mutation or kind
            hit = bool(found & EXPECTED[kind])
            tally.seeded[sub] += 1
            tally.detected[sub] += hit
            tally.by_style[style]["seeded"] += 1
            tally.by_style[style]["detected"] += hit
            if kind in ("reversed", "misattributed"):
                claim = next((c for c in result.claims if c.line == line), None)
                if claim is not None and claim.evidence is not None and claim.evidence.score is not None:
                    tally.scores[kind].append(claim.evidence.score)
            if not hit and len(tally.misses[kind]) < 10:
                tally.misses[kind].append({"charter": bc.cid, "how": sub, "style": style,
                                           "line": text.splitlines()[line - 1][:300], "problems": sorted(found)})
            done += 1
            if done >= per_kind:
                break


def mcp_size(bc: BenchCharter, items: list[Item], source: Any, tally: Tally) -> dict[str, Any]:
    """The MCP ``check_report`` result of a 100-claim report, half of its claims failing, against its bound."""
    from orchestrator.audit.check import report_json
    from orchestrator.mcp.audit_tools import CHECK_RESULT_CHARS, check_result
    from orchestrator.untrusted import agent_document, quote_untrusted, safe_url

    pool = [it for it in items if it.kind in ("quote", "restated")]
    seeder = Seeder(source, random.Random(7))
    long: list[Item] = []
    k = 0
    while len(long) < 100 and pool:
        it = pool[k % len(pool)]
        bad = seeder.altered_quote(it) if it.kind == "quote" else seeder.misattributed(it)
        long.append(bad if (k % 2 and bad is not None) else it)
        k += 1
    text, _, _ = render("inline", long, bc.title)
    result = _check(text, source, f"{bc.cid}-100.md", tally)
    doc = check_result(result)
    size = len(json.dumps(agent_document(doc), indent=2, ensure_ascii=False))
    full = len(json.dumps(agent_document(report_json(result, quote_untrusted, safe_url)), indent=2,
                          ensure_ascii=False))
    return {"claims": len(result.claims), "failing": sum(1 for c in result.claims if not c.ok),
            "result_chars": size, "bound": CHECK_RESULT_CHARS, "within": size <= CHECK_RESULT_CHARS,
            "failing_listed": len(doc["claims"]), "more": doc["more"], "full_json_chars": full}


def baseline(repo: Path, tmp: Path, manifest: list[dict], env: dict) -> dict[str, Any]:
    """The check of ``repo`` (the current main) on every report: failing problem kinds per line."""
    path = tmp / "manifest.json"
    path.write_text(json.dumps(manifest))
    worker = REPO_ROOT / "bench" / "_check_baseline_worker.py"
    r = subprocess.run([sys.executable, str(worker), "--repo", str(repo), "--manifest", str(path),
                        "--reports", str(tmp / "reports")], env=dict(env, PYTHONPATH=str(repo)), cwd=str(repo),
                       capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": r.stderr[-2000:]}
    return json.loads(r.stdout)


def _auroc(positives: list[float], negatives: list[float]) -> float | None:
    if not positives or not negatives:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return round(wins / (len(positives) * len(negatives)), 4)


def summarize(tally: Tally, base: dict[str, Any]) -> dict[str, Any]:
    from orchestrator.audit.support import SUPPORTED, WEAK, load_model

    kinds: dict[str, Any] = {}
    base_results = base.get("results", {})
    base_hit: Counter = Counter()
    for entry in tally.manifest:
        if entry["role"] == "seeded":
            found = set(base_results.get(entry["report"], {}).get(str(entry["line"]), []))
            base_hit[entry["sub"] or entry["kind"]] += bool(found & EXPECTED[entry["kind"]])
    for kind in KINDS:
        subs = sorted(k for k in tally.seeded if k == kind or k.startswith(kind + ":"))
        n, d = sum(tally.seeded[k] for k in subs), sum(tally.detected[k] for k in subs)
        b = sum(base_hit[k] for k in subs)
        kinds[kind] = {"seeded": n, "detected": d, "rate": round(d / n, 4) if n else None,
                       "baseline_detected": b if base_results else None,
                       "by_how": {k: {"seeded": tally.seeded[k], "detected": tally.detected[k],
                                      "baseline": base_hit[k] if base_results else None} for k in subs},
                       "misses": tally.misses.get(kind, [])}
    clean_total = sum(tally.clean.values())
    false_total = sum(len(v) for v in tally.false_alarms.values())
    base_false = Counter()
    for entry in tally.manifest:
        if entry["role"] in ("clean", "own"):
            base_false[entry["role"]] += sum(1 for _ in base_results.get(entry["report"], {}).values())
    model = load_model()
    return {
        "detection": kinds,
        "clean": {"claims": clean_total, "false_alarms": false_total,
                  "false_alarm_rate": round(false_total / clean_total, 4) if clean_total else None,
                  "by_style": {s: {"claims": tally.clean[s], "false_alarms": len(tally.false_alarms[s])}
                               for s in STYLES},
                  "by_how": {h: {"claims": n, "false_alarms": tally.false_how[h]}
                             for h, n in sorted(tally.clean_how.items())},
                  "examples": [x for s in STYLES for x in tally.false_alarms[s]][:25],
                  "baseline_failing_lines": base_false.get("clean") if base_results else None},
        "brt_own_outputs": {"reports": len(tally.own), "claims": sum(o["claims"] for o in tally.own),
                            "false_alarms": sum(len(o["false_alarms"]) for o in tally.own),
                            "baseline_failing_lines": base_false.get("own") if base_results else None,
                            "details": [o for o in tally.own if o["false_alarms"]][:10]},
        "by_style": {s: dict(c) for s, c in tally.by_style.items()},
        "support_model": {
            "sha256": model.sha256, "cutoffs": {"supported": SUPPORTED, "weak": WEAK},
            "held_out_auroc": {"faithful vs reversed": _auroc(tally.scores["faithful"], tally.scores["reversed"]),
                               "faithful vs misattributed": _auroc(tally.scores["faithful"],
                                                                   tally.scores["misattributed"])},
            "scores_n": {k: len(v) for k, v in tally.scores.items()},
        },
        "baseline": {"repo": base.get("repo"), "commit": base.get("commit"), "error": base.get("error"),
                     "check_time_s": base.get("check_time_s")},
        "check_time_s": {"n": len(tally.check_s), "total": round(sum(tally.check_s), 1),
                         "median": round(sorted(tally.check_s)[len(tally.check_s) // 2], 3) if tally.check_s
                         else None, "max": round(max(tally.check_s), 2) if tally.check_s else None},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eval-dir", default=str(REPO_ROOT.parent / "shared" / "eval"))
    ap.add_argument("--sets", default="web-qa,news", help="comma-separated: web-qa, news")
    ap.add_argument("--per-kind", type=int, default=8, help="seeded errors of each kind per charter at most")
    ap.add_argument("--seed", type=int, default=36)
    ap.add_argument("--baseline-repo", default=str(REPO_ROOT.parent / "main"),
                    help="the checkout whose brt check is the baseline (empty: none)")
    ap.add_argument("--keep-tmp", action="store_true")
    ap.add_argument("--json", dest="json_out", default=None)
    args = ap.parse_args(argv)

    from orchestrator.audit.evidence_source import from_store
    from orchestrator.charter import load_charter

    eval_dir = Path(args.eval_dir).expanduser().resolve()
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    charters = (web_qa(eval_dir) if "web-qa" in sets else []) + (news(eval_dir) if "news" in sets else [])
    tmp = Path(tempfile.mkdtemp(prefix="brt-bench-check-"))
    (tmp / "reports").mkdir()
    env = dict(os.environ, BRT_HOME=str(tmp / "brt_home"), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    os.environ.update(BRT_HOME=env["BRT_HOME"], HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    rng = random.Random(args.seed)
    tally = Tally()
    timings: dict[str, float] = {}
    sizes = []
    try:
        for bc in charters:
            har = write_har(bc.pages.items(), tmp / f"{bc.cid}.har")
            charter = write_bench_charter(tmp / f"{bc.cid}.yaml", bc.cid, bc.title, bc.domains, list(bc.pages),
                                          bc.sections, javascript=True)
            t0 = time.monotonic()
            run_cli(["harvest", str(charter), "--replay", str(har)], pythonpath=REPO_ROOT, env=env)
            r = run_cli(["synthesize", str(charter), "--json"], pythonpath=REPO_ROOT, env=env)
            (tmp / f"{bc.cid}.json").write_text(r.stdout, encoding="utf-8")
            timings[f"harvest+synthesize {bc.cid}"] = round(time.monotonic() - t0, 1)
            synthesis = json.loads(r.stdout)
            source = from_store(load_charter(charter))
            titles = {p.url: (p.title or "source").replace("[", "(").replace("]", ")")[:60] for p in source.pages}
            items = clean_items(synthesis, titles)
            t0 = time.monotonic()
            run_own(bc, charter, tmp, source, env, tally)
            run_clean(bc, items, source, tmp, charter, tally)
            run_seeded(bc, items, source, tmp, charter, tally, args.per_kind, rng)
            if not sizes or len(items) > sizes[-1].get("items", 0):
                sizes.append(dict(mcp_size(bc, items, source, tally), charter=bc.cid, items=len(items)))
            timings[f"check {bc.cid}"] = round(time.monotonic() - t0, 1)
            print(f"[check] {bc.cid}: {len(items)} items, {timings[f'check {bc.cid}']} s", file=sys.stderr)
        t0 = time.monotonic()
        base = baseline(Path(args.baseline_repo), tmp, tally.manifest, env) if args.baseline_repo else {}
        timings["baseline"] = round(time.monotonic() - t0, 1)
        report = {"sets": sets, "charters": [bc.cid for bc in charters], "styles": ["brt's own", *STYLES],
                  **summarize(tally, base), "mcp_check_report": sizes[-1] if sizes else None,
                  "timings_s": timings, "machine": machine_info(),
                  "command": " ".join([Path(sys.executable).name, *sys.argv])}
        text = json.dumps(report, indent=2, default=lambda o: dict(o) if isinstance(o, Counter) else str(o))
        print(text)
        if args.json_out:
            Path(args.json_out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.json_out).write_text(text + "\n")
        write_result("check_report", json.loads(text))
    finally:
        if args.keep_tmp:
            print(f"[check] kept {tmp}", file=sys.stderr)
        else:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
