"""Acceptance criteria judged against a synthesis, deterministically (no LLM).

Each criterion of the charter gets a verdict, ``covered``, ``partial`` or ``not covered``, the reason, and the
blocks that support it. Two kinds of criteria:

**Evidence criteria** ("The good threshold of LCP and INP is cited"). Every evidence block's quote is judged
against the criterion by the evidence scorer, as synthesis judges a quote against a section's question
(``orchestrator.evidence.support``, the block's section title as its context): ``match`` is the probability
that the quote answers or supports the criterion. A block *supports* the criterion when its match reaches the
synthesis' evidence threshold (the same bar the blocks met) and it contains every phrase the criterion puts in
quotation marks in its quote. The keyword share is the share of the criterion's content words (stop words and
words about citing itself, such as "cited", "quoted", "verbatim", "source", are left out; plurals folded) that
the supporting blocks hold with their sections.

The criterion's *subjects* are the names it mentions (capitalised runs and acronyms, as synthesis finds them
in a question: "LCP", "INP"). A block speaks of a subject when its section or quote names it, or, for an
acronym, spells it out ("Largest Contentful Paint" for LCP). Then:

- with subjects: ``covered`` when every subject has a supporting block that speaks of it, ``partial`` when
  some do, ``not covered`` when none does;
- without subjects: ``covered`` when some block supports it and the supporting blocks together hold at least 60%
  of the criterion's keywords; ``partial`` when some block supports it; ``not covered`` otherwise.

**Gap criteria** (the criterion speaks of gaps, unanswered questions or padding: "A question the site does not
answer is reported as a Gap, not padded with weak evidence"). ``covered`` when at least one section reports a
Gap (when the criterion names subjects, a Gap section that names them) and no block lies below the evidence
threshold; ``partial`` when Gaps are reported but some block is below the threshold; ``not covered`` when no
section reports a Gap.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from memory_store.text import CRITERION_STOP_WORDS, singular

from ..relevance import mentions, named_subjects
from ..untrusted import trusted

if TYPE_CHECKING:
    from memory_store import Memory

__all__ = ["Support", "Verdict", "judge_acceptance"]

KEYWORDS_COVERED = 0.6
COVERED, PARTIAL, NOT_COVERED = "covered", "partial", "not covered"

_GAP_WORDS = re.compile(
    r"\bgaps?\b|\bunanswer|\bnot answer|\bdoes not answer|\bdoesn't answer|\bno evidence\b|\bpadd(?:ed|ing)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9/+'’-]*")
_QUOTED = re.compile(r"[\"“]([^\"”]{1,60})[\"”]")


@dataclass
class Support:
    """A block that supports a criterion."""

    section: str
    label: str
    n: int
    url: str
    match: float  # the scorer's probability that the block's quote answers or supports the criterion
    keywords: float

    def to_json(self) -> dict[str, Any]:
        return {"section": self.section, "label": self.label, "n": self.n, "url": self.url,
                "match": round(self.match, 4), "keywords": round(self.keywords, 4)}


@dataclass
class Verdict:
    criterion: str
    verdict: str  # covered | partial | not covered
    reason: str
    kind: str  # evidence | gap
    subjects: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    support: list[Support] = field(default_factory=list)
    gap_sections: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "criterion": self.criterion,
            "verdict": trusted(self.verdict),  # brt's own words (an agent reads them bare)
            "reason": self.reason,
            "kind": self.kind,
            "subjects": self.subjects,
            "missing": self.missing,
            "support": [s.to_json() for s in self.support],
            "gap_sections": self.gap_sections,
        }


def keywords(text: str) -> list[str]:
    """The content words of a criterion (stop words and words about citing left out), plural-folded."""
    out = [singular(w) for w in _WORD.findall(text) if w.lower() not in CRITERION_STOP_WORDS and len(w) > 1]
    return list(dict.fromkeys(out))


def _initials(run: str) -> str:
    return "".join(w[0] for w in run.split() if w[0].isupper())


def speaks_of(text: str, subject: str) -> bool:
    """Whether ``text`` names ``subject``, or spells out an acronym subject ("Largest Contentful Paint" for
    "LCP": the initials of a capitalised run of the text)."""
    if mentions(text, subject):
        return True
    letters = re.sub(r"[^A-Za-z]", "", subject)
    if len(letters) >= 2 and letters.isupper():
        for run in re.findall(r"[A-Z][\w-]*(?:\s+(?:of|to|for|and|the|[A-Z][\w-]*))*", text):
            if _initials(run) == letters:
                return True
    return False


def judge_acceptance(
    criteria: list[str], sections: list[dict[str, Any]], memory: Memory, *, min_score: float
) -> list[Verdict]:
    """One verdict per criterion, from the synthesis' sections (as in its JSON: title, label, question,
    blocks with n/quote/url/score, gaps); ``min_score`` is the synthesis' evidence threshold."""
    from ..evidence.support import Passage, passage_support

    if not criteria:
        return []
    blocks: list[tuple[dict[str, Any], dict[str, Any], str]] = []
    for s in sections:
        for b in s.get("blocks") or []:
            context = f"{s.get('title', '')}. {s.get('question', '')} {b.get('quote', '')}"
            blocks.append((s, b, context))
    passages = [Passage(str(b.get("quote") or ""), str(b.get("url") or ""), str(s.get("title") or ""))
                for s, b, _ in blocks]
    out = []
    for criterion in criteria:
        if _GAP_WORDS.search(criterion):
            out.append(_judge_gap(criterion, sections, min_score))
        else:
            probs = [x.p for x in passage_support(memory, criterion, passages)] if passages else []
            out.append(_judge_evidence(criterion, blocks, probs, min_score))
    return out


def subjects_of(criterion: str) -> list[str]:
    """The names a criterion mentions, a run joined by "and"/"or" split into its names ("LCP and INP")."""
    out: list[str] = []
    for name in named_subjects(criterion):
        out += [p.strip() for p in re.split(r"\s+(?:and|or|&)\s+", name) if p.strip()]
    return [x for x in dict.fromkeys(out) if not _GAP_WORDS.search(x)]


def _judge_evidence(
    criterion: str, blocks: list[tuple[dict[str, Any], dict[str, Any], str]], probs: list[float], bar: float
) -> Verdict:
    subjects = subjects_of(criterion)
    words = keywords(criterion)
    phrases = [p.strip().lower() for p in _QUOTED.findall(criterion) if p.strip()]
    supports: list[tuple[Support, str]] = []
    for (s, b, context), match in zip(blocks, probs, strict=True):
        have = {singular(w) for w in _WORD.findall(context)}
        kw = sum(1 for w in words if w in have) / len(words) if words else 0.0
        quote = str(b.get("quote") or "").lower()
        if match < bar or any(p not in quote for p in phrases):
            continue
        support = Support(str(s.get("title")), str(s.get("label") or s.get("title")), int(b.get("n") or 0),
                          str(b.get("url") or ""), match, kw)
        supports.append((support, f"{s.get('label', '')} {context}"))
    supports.sort(key=lambda x: -x[0].match)
    verdict = Verdict(criterion, NOT_COVERED, "", "evidence", subjects=subjects)
    verdict.support = [s for s, _ in supports]
    if subjects:
        found = {subj: [s for s, text in supports if speaks_of(text, subj)] for subj in subjects}
        verdict.missing = [subj for subj, found_by in found.items() if not found_by]
        covered = [subj for subj in subjects if found[subj]]
        verdict.support = [s for s, text in supports if any(speaks_of(text, subj) for subj in subjects)]
        parts = [f"{subj}: {_cite(found[subj])}" for subj in covered]
        if not verdict.missing:
            verdict.verdict = COVERED
            verdict.reason = "; ".join(parts)
        elif covered:
            verdict.verdict = PARTIAL
            verdict.reason = "; ".join(parts) + f"; no supporting block names {_and(verdict.missing)}"
        else:
            verdict.reason = f"no supporting block names {_and(verdict.missing)}" + _best(probs, bar)
        return verdict
    have_all = set()
    for _, text in supports:
        have_all |= {singular(w) for w in _WORD.findall(text)}
    share = sum(1 for w in words if w in have_all) / len(words) if words else 0.0
    best = supports[0][0].match if supports else max(probs, default=0.0)
    if supports and share >= KEYWORDS_COVERED:
        verdict.verdict = COVERED
        verdict.reason = f"{_cite([s for s, _ in supports])} (best match {best:.2f}; {share:.0%} of the keywords)"
    elif supports:
        verdict.verdict = PARTIAL
        verdict.reason = (
            f"{_cite([s for s, _ in supports])} match only in part (best match {best:.2f}; "
            f"{share:.0%} of the keywords, covered at {KEYWORDS_COVERED:.0%})"
        )
    else:
        verdict.reason = "no block matches it" + _best(probs, bar)
    return verdict


def _judge_gap(criterion: str, sections: list[dict[str, Any]], min_score: float) -> Verdict:
    subjects = subjects_of(criterion)
    gaps = [s for s in sections if s.get("gaps") and not s.get("blocks")]
    if subjects:
        gaps = [s for s in gaps if any(speaks_of(f"{s.get('title')} {s.get('label')} {s.get('question')}", x)
                                       for x in subjects)]
    weak = [
        (s, b) for s in sections for b in s.get("blocks") or [] if float(b.get("score") or 0.0) < min_score
    ]
    verdict = Verdict(criterion, NOT_COVERED, "", "gap", subjects=subjects)
    verdict.gap_sections = [str(s.get("title")) for s in gaps]
    if not gaps:
        verdict.reason = "no section is reported as a Gap" + (f" about {_and(subjects)}" if subjects else "")
        return verdict
    shown = "; ".join(f"{s.get('title')!s} is a Gap ({_gap_detail(s)})" for s in gaps)
    if weak:
        verdict.verdict = PARTIAL
        verdict.reason = f"{shown}; but {len(weak)} block(s) lie below the threshold {min_score:.2f}"
    else:
        verdict.verdict = COVERED
        verdict.reason = f"{shown}; every block meets the threshold {min_score:.2f}"
    return verdict


def _gap_detail(section: dict[str, Any]) -> str:
    gap = (section.get("gaps") or [{}])[0]
    if isinstance(gap, dict) and "searched_chunks" in gap:
        why = f": {gap['reason']}" if gap.get("reason") else ""
        return f"searched {gap['searched_chunks']} chunks from {gap['searched_pages']} pages{why}"
    return "no evidence met the threshold"


def _cite(supports: list[Support]) -> str:
    by_section: dict[str, list[str]] = {}
    for s in sorted(supports, key=lambda s: s.n):
        by_section.setdefault(s.section, []).append(f"#{s.n} ({_short(s.url)})")
    return "; ".join(f"{section} {', '.join(ns)}" for section, ns in by_section.items())


def _short(url: str) -> str:
    parts = urlsplit(url)
    tail = parts.path.rstrip("/").rsplit("/", 1)[-1]
    return f"{parts.hostname or ''}/{tail}" if tail else (parts.hostname or url)


def _best(probs: list[float], bar: float) -> str:
    return f" (best match {max(probs):.2f}, under the threshold {bar:.2f})" if probs else (
        " (the synthesis has no evidence blocks)")


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
