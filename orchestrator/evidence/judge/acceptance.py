"""Acceptance criteria judged against a synthesis, deterministically (no LLM).

Each criterion of the charter gets a verdict, ``covered``, ``partial`` or ``not covered``, the reason, and the
blocks that support it. Two kinds of criteria:

**Evidence criteria** ("The good threshold of LCP and INP is cited"). Every evidence block is read with its
section ("<section title>. <question> <quote>") and matched to the criterion by

    match = 0.5 · cosine(criterion, block) + 0.5 · keyword overlap

where the cosine comes from the store's embedding model (the criterion embedded as a query, the block as a
document) and the keyword overlap is the share of the criterion's content words (stop words and words about
citing itself, such as "cited", "quoted", "verbatim", "source", are left out; plurals folded) found in the
block. A block *supports* the criterion when its match is at least ``SUPPORT`` (0.35) and it contains every
phrase the criterion puts in quotation marks in its quote.

The criterion's *subjects* are the names it mentions (capitalised runs and acronyms, as synthesis finds them
in a question: "LCP", "INP"). A block speaks of a subject when its section or quote names it, or, for an
acronym, spells it out ("Largest Contentful Paint" for LCP). Then:

- with subjects: ``covered`` when every subject has a supporting block that speaks of it, ``partial`` when
  some do, ``not covered`` when none does;
- without subjects: ``covered`` when the best match is at least ``COVER`` (0.45) and the supporting blocks
  together hold at least 60% of the criterion's keywords; ``partial`` when some block supports it;
  ``not covered`` otherwise.

**Gap criteria** (the criterion speaks of gaps, unanswered questions or padding: "A question the site does not
answer is reported as a Gap, not padded with weak evidence"). ``covered`` when at least one section reports a
Gap (when the criterion names subjects, a Gap section that names them) and no block lies below the evidence
threshold (the synthesis' bar on the evidence scorer's probability); ``partial`` when Gaps are reported but some
block is below the threshold; ``not covered`` when no section reports a Gap.

The evidence criteria keep the embedding match: the evidence scorer was fitted on questions, not on criteria,
and its probability for a criterion is not calibrated (measured on the audit tests' charter, it missed a block
that supports half of a two-part criterion).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memory_store.text import CRITERION_STOP_WORDS, singular, word_pattern

from ...untrusted import trusted
from .relevance import mentions, named_subjects

if TYPE_CHECKING:
    from memory_store import Embedder

__all__ = ["COVER", "SUPPORT", "Support", "Verdict", "judge_acceptance"]

SUPPORT = 0.35
COVER = 0.45
KEYWORDS_COVERED = 0.6
COVERED, PARTIAL, NOT_COVERED = "covered", "partial", "not covered"

_GAP_WORDS = re.compile(
    r"\bgaps?\b|\bunanswer|\bnot answer|\bdoes not answer|\bdoesn't answer|\bno evidence\b|\bpadd(?:ed|ing)\b",
    re.IGNORECASE,
)
_WORD = word_pattern("term")
_QUOTED = re.compile(r"[\"“]([^\"”]{1,60})[\"”]")


@dataclass
class Support:
    """A block that supports a criterion."""

    section: str
    label: str
    n: int
    url: str
    match: float
    cosine: float
    keywords: float

    def to_json(self) -> dict[str, Any]:
        return {"section": self.section, "label": self.label, "n": self.n, "url": self.url,
                "match": round(self.match, 4), "cosine": round(self.cosine, 4), "keywords": round(self.keywords, 4)}


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
    criteria: list[str], sections: list[dict[str, Any]], embedder: Embedder, *, min_score: float
) -> list[Verdict]:
    """One verdict per criterion, from the synthesis' sections (as in its JSON: title, label, question,
    blocks with n/quote/url/score, gaps)."""
    if not criteria:
        return []
    blocks: list[tuple[dict[str, Any], dict[str, Any], str]] = []
    for s in sections:
        for b in s.get("blocks") or []:
            context = f"{s.get('title', '')}. {s.get('question', '')} {b.get('quote', '')}"
            blocks.append((s, b, context))
    cos: Any = None
    if blocks:
        qv = embedder.embed_queries(list(criteria))
        dv = embedder.embed_documents([c for _, _, c in blocks])
        cos = qv @ dv.T
    out = []
    for i, criterion in enumerate(criteria):
        if _GAP_WORDS.search(criterion):
            out.append(_judge_gap(criterion, sections, min_score))
        else:
            row = [float(x) for x in cos[i]] if cos is not None else []
            out.append(_judge_evidence(criterion, blocks, row))
    return out


def subjects_of(criterion: str) -> list[str]:
    """The names a criterion mentions, a run joined by "and"/"or" split into its names ("LCP and INP")."""
    out: list[str] = []
    for name in named_subjects(criterion):
        out += [p.strip() for p in re.split(r"\s+(?:and|or|&)\s+", name) if p.strip()]
    return [x for x in dict.fromkeys(out) if not _GAP_WORDS.search(x)]


def _judge_evidence(
    criterion: str, blocks: list[tuple[dict[str, Any], dict[str, Any], str]], cos: list[float]
) -> Verdict:
    subjects = subjects_of(criterion)
    words = keywords(criterion)
    phrases = [p.strip().lower() for p in _QUOTED.findall(criterion) if p.strip()]
    supports: list[tuple[Support, str]] = []
    for (s, b, context), c in zip(blocks, cos, strict=True):
        have = {singular(w) for w in _WORD.findall(context)}
        kw = sum(1 for w in words if w in have) / len(words) if words else 0.0
        match = 0.5 * c + 0.5 * kw
        quote = str(b.get("quote") or "").lower()
        if match < SUPPORT or any(p not in quote for p in phrases):
            continue
        support = Support(str(s.get("title")), str(s.get("label") or s.get("title")), int(b.get("n") or 0),
                          str(b.get("url") or ""), match, c, kw)
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
            verdict.reason = f"no supporting block names {_and(verdict.missing)}" + _best(supports, cos)
        return verdict
    have_all = set()
    for _, text in supports:
        have_all |= {singular(w) for w in _WORD.findall(text)}
    share = sum(1 for w in words if w in have_all) / len(words) if words else 0.0
    best = supports[0][0].match if supports else max(cos, default=0.0)
    if supports and best >= COVER and share >= KEYWORDS_COVERED:
        verdict.verdict = COVERED
        verdict.reason = f"{_cite([s for s, _ in supports])} (best match {best:.2f}; {share:.0%} of the keywords)"
    elif supports:
        verdict.verdict = PARTIAL
        verdict.reason = (
            f"{_cite([s for s, _ in supports])} match only in part (best match {best:.2f}, covered at {COVER}; "
            f"{share:.0%} of the keywords, covered at {KEYWORDS_COVERED:.0%})"
        )
    else:
        verdict.reason = "no block matches it" + _best(supports, cos)
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
    from ...url_safety import parse

    parts = parse(url)
    if parts is None:
        return url
    tail = parts.path.rstrip("/").rsplit("/", 1)[-1]
    return f"{parts.hostname}/{tail}" if tail else (parts.hostname or url)


def _best(supports: list[tuple[Support, str]], cos: list[float]) -> str:
    return f" (best cosine {max(cos):.2f})" if cos else " (the synthesis has no evidence blocks)"


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
