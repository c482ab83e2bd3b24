"""Cheap text signals for the concept index: tokens, headings found in page text, salient key phrases,
generality (specificity) scores and extractive micro-summaries. Pure Python, no model needed."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

# The heading rule and the list marker live in memory_store.text; synthesis still finds them here too.
from memory_store.text import HEADING_MAX_WORDS, LIST_MARKER, TOPIC_STOP_WORDS, is_heading, word_pattern  # noqa: F401

STOPWORDS = TOPIC_STOP_WORDS

_WORD = word_pattern("label")
_SEGMENT_BREAK = re.compile(r"[.!?;:,()\[\]{}\"“”|/\n\u2014\u2013]+")
_CONNECTORS = frozenset({"of", "for", "in", "and", "with", "on", "to", "by", "from", "vs", "versus", "or", "at"})


def norm_label(text: str) -> str:
    """Case- and whitespace-insensitive key of a label."""
    return " ".join(re.sub(r"[^\w\s()&+-]", " ", text.lower()).split())


def stem_key(text: str) -> str:
    """A label key that ignores a plural -s on each word (near-duplicate detection)."""
    return " ".join(
        w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in norm_label(text).split()
    )


def norm_path(path: str) -> str:
    return " > ".join(norm_label(p) for p in path.split(">") if p.strip())


def words(text: str) -> list[str]:
    return _WORD.findall(text)


def content_tokens(text: str) -> list[str]:
    return [w.lower() for w in words(text) if w.lower() not in STOPWORDS and len(w) > 1]


# -- headings ------------------------------------------------------------------------------------------------


@dataclass
class Heading:
    text: str
    level: int  # 1 = page title, 2 = a heading line, 3 = a heading directly under another heading
    parent: str | None = None  # the enclosing heading's text (nesting gives part-of)


def looks_like_heading(line: str) -> bool:
    """A heading (``is_heading``) that can name a concept: at most 10 words and 90 characters, not ending in a
    comma or a closing bracket, mostly letters and not only stop words (no bare number, date or boilerplate)."""
    n = len(line.split())
    if n == 0 or n > 10 or len(line) > 90 or len(line) < 3 or not is_heading(line):
        return False
    if re.search(r"[.!?…;,\"”')\]]$", line):
        return False
    toks = content_tokens(line)
    if not toks:
        return False
    alpha = sum(ch.isalpha() for ch in line)
    return alpha >= 0.6 * len(line.replace(" ", ""))


def page_headings(text: str, title: str | None = None, max_headings: int = 40) -> list[Heading]:
    """Headings of a page from its extracted text (the extractor keeps each heading as its own line).

    Level 1 is the page title; a heading line is level 2, and a heading line that directly follows another
    heading line (no prose between them) is level 3, nested under it. Each heading must be followed by a
    prose line somewhere before the next heading run, which rules out navigation lists."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    out: list[Heading] = []
    seen: set[str] = set()
    top = title.strip() if title and title.strip() else None
    if top:
        out.append(Heading(top, 1))
        seen.add(norm_label(top))
    run: list[str] = []  # consecutive heading lines
    for i, line in enumerate(lines):
        if looks_like_heading(line) and i + 1 < len(lines):
            run.append(line)
            continue
        if run and len(line.split()) >= 8:  # prose follows the run: keep it (a run of > 4 is a menu)
            if len(run) <= 4:
                parent = run[0]
                for j, h in enumerate(run):
                    key = norm_label(h)
                    if key in seen or (top and key == norm_label(top)):
                        continue
                    seen.add(key)
                    if j == 0:
                        out.append(Heading(h, 2, top))
                    else:
                        out.append(Heading(h, 3, parent))
        run = []
        if len(out) >= max_headings:
            break
    return out


# -- key phrases ---------------------------------------------------------------------------------------------


@dataclass
class PhraseStats:
    phrase: str
    df: int = 0  # pages
    tf: int = 0  # occurrences
    capitalised: int = 0
    surface: Counter = field(default_factory=Counter)
    pages: set = field(default_factory=set)


def candidate_phrases(text: str) -> list[tuple[str, str]]:
    """(key, surface) of every 1–3-word run of content words between stopwords and punctuation."""
    out = []
    for seg in _SEGMENT_BREAK.split(text):
        run: list[str] = []
        for w in words(seg) + [""]:
            if w and w.lower() not in STOPWORDS and len(w) > 2 and not w[0].isdigit():
                run.append(w)
                continue
            for n in (1, 2, 3):
                for i in range(len(run) - n + 1):
                    gram = run[i : i + n]
                    out.append((" ".join(g.lower() for g in gram), " ".join(gram)))
            run = []
    return out


def key_phrases(pages: dict[str, str], top: int = 12) -> list[PhraseStats]:
    """Salient key phrases across pages (method in docs/concept-index.md).

    Candidates are 1–3-word runs of content words (RAKE-style: stopwords and punctuation split them). A
    phrase's salience is ``df/N * log(1 + N/df) * w`` with ``df`` the pages containing it, ``N`` the pages
    and ``w`` 1.5 for multi-word phrases, 1 for capitalised single words (names) and 0 for other single
    words; a phrase must occur 3+ times and on ``min(2, N)`` pages and on at most 60% of the pages when
    N ≥ 5. Phrases contained in a kept longer phrase with ≥ 80% of its page count are dropped."""
    stats: dict[str, PhraseStats] = {}
    for url, text in pages.items():
        for key, surface in candidate_phrases(text):
            st = stats.get(key)
            if st is None:
                st = stats[key] = PhraseStats(key)
            st.tf += 1
            if surface[0].isupper():
                st.capitalised += 1
            st.surface[surface] += 1
            st.pages.add(url)
    n = max(1, len(pages))
    scored = []
    for st in stats.values():
        st.df = len(st.pages)
        if st.tf < 3 or st.df < min(2, n) or (n >= 5 and st.df > 0.6 * n):
            continue
        multi = " " in st.phrase
        if multi:
            w = 1.5
        elif st.capitalised >= 0.8 * st.tf and len(st.phrase) > 3:
            w = 1.0
        else:
            continue
        salience = (st.df / n) * math.log(1 + n / st.df) * w * math.log(1 + st.tf)
        scored.append((salience, st))
    scored.sort(key=lambda t: (-round(t[0], 9), -t[1].phrase.count(" "), t[1].phrase))
    kept: list[PhraseStats] = []
    for _, st in scored:
        dominated = any(
            (f" {st.phrase} " in f" {k.phrase} " and k.df >= 0.8 * st.df)
            or (f" {k.phrase} " in f" {st.phrase} " and st.df < 0.8 * k.df)
            for k in kept
        )
        if dominated:
            continue
        kept.append(st)
        if len(kept) >= top:
            break
    return kept


def phrase_surface(st: PhraseStats) -> str:
    surface = st.surface.most_common(1)[0][0]
    return surface if surface[:1].isupper() else surface[:1].upper() + surface[1:]


# -- generality ----------------------------------------------------------------------------------------------


class Rarity:
    """idf of words over a set of documents (labels and pages); unseen words count as rare."""

    def __init__(self, docs: Iterable[str] = ()) -> None:
        self.df: Counter = Counter()
        self.n = 0
        for d in docs:
            self.add(d)

    def add(self, doc: str) -> None:
        self.n += 1
        self.df.update(set(content_tokens(doc)))

    def idf(self, word: str) -> float:
        return math.log((1 + self.n) / (1 + self.df.get(word.lower(), 0))) + 1.0

    def max_idf(self) -> float:
        return math.log(1 + self.n) + 1.0


def noun_phrase_count(label: str) -> int:
    """Noun phrases in a label: runs of content words split by connectors (of, for, and…) and brackets."""
    count = 0
    for seg in re.split(r"[()\[\],:;/]", label):
        run = False
        for w in words(seg):
            if w.lower() in _CONNECTORS or w.lower() in STOPWORDS:
                run = False
                continue
            if not run:
                count += 1
                run = True
    return max(count, 1)


def specificity(label: str, rarity: Rarity | None = None) -> tuple[float, dict[str, float]]:
    """How specific a label is, from cheap signals: content-token length, tf-idf rarity of its words
    (normalised 0..1) and its noun-phrase count. Higher = more specific."""
    toks = content_tokens(label) or [w.lower() for w in words(label)] or [label.lower()]
    length = math.log2(1 + len(toks))
    if rarity is not None and rarity.n:
        rare = sum(rarity.idf(t) for t in toks) / len(toks) / rarity.max_idf()
    else:
        rare = 0.5
    nps = noun_phrase_count(label)
    score = 0.5 * length + 0.35 * rare + 0.15 * (nps - 1)
    return score, {"tokens": float(len(toks)), "rarity": round(rare, 4), "noun_phrases": float(nps)}


# -- micro-summaries -----------------------------------------------------------------------------------------

def sentences(text: str) -> list[str]:
    from memory_store.text import sentences as split

    out = []
    for s in split(text):
        s = " ".join(s.split())
        if 6 <= len(s.split()) <= 60 and not looks_like_heading(s):
            out.append(s)
    return out


def extractive_summary(texts: Iterable[str], focus: str = "", max_words: int = 50) -> str:
    """The most central sentences of ``texts`` (≤ ``max_words`` words): each sentence is scored by its mean
    bag-of-words cosine to the other sentences plus its overlap with ``focus`` (the node label); the best
    are taken in their original order until the word budget is spent."""
    sents: list[str] = []
    for t in texts:
        for s in sentences(t):
            if s not in sents:
                sents.append(s)
        if len(sents) >= 80:
            break
    if not sents:
        return ""
    bags = [Counter(content_tokens(s)) for s in sents]
    norms = [math.sqrt(sum(v * v for v in b.values())) or 1.0 for b in bags]
    focus_bag = Counter(content_tokens(focus))
    fnorm = math.sqrt(sum(v * v for v in focus_bag.values())) or 1.0
    scores = []
    for i, b in enumerate(bags):
        tot = 0.0
        for j, c in enumerate(bags):
            if i != j:
                tot += sum(v * c.get(w, 0) for w, v in b.items()) / (norms[i] * norms[j])
        central = tot / max(1, len(bags) - 1)
        focus_sim = sum(v * focus_bag.get(w, 0) for w, v in b.items()) / (norms[i] * fnorm)
        scores.append(central + 0.5 * focus_sim)
    order = sorted(range(len(sents)), key=lambda i: -scores[i])
    chosen: list[int] = []
    budget = max_words
    for i in order:
        n = len(sents[i].split())
        if n <= budget:
            chosen.append(i)
            budget -= n
        if budget < 6:
            break
    if not chosen:
        return " ".join(sents[order[0]].split()[: max_words - 1]) + " …"
    return " ".join(sents[i] for i in sorted(chosen))


def clip_words(text: str, max_words: int = 50) -> str:
    ws = text.split()
    return text.strip() if len(ws) <= max_words else " ".join(ws[: max_words - 1]) + " …"
