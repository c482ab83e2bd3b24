"""How well a passage of a cited page supports a claim that cites it without quoting it: one function,
:func:`support_scores`, returning a value in 0..1 per passage (the evidence model may replace it; its callers
need only the values and the two cut-offs below).

The value combines what the store's embedder and brt's text utilities (``memory_store.text``) see:

- **meaning**: the cosine of the claim's and the passage's embeddings, mapped linearly from ``COS_FLOOR``
  (nothing in common) to ``COS_CEIL`` (a paraphrase) onto 0..1;
- **words**: the share of the claim's content words (stems) and numbers that the passage holds;

``score = (meaning + words) / 2``, then multiplied by ``MISMATCH`` (0.3) for each explicit signal that the
passage says something else:

- **numbers**: a number the claim states (digits or a number word: "20", "twenty", "1,500", "4.5") that the
  passage does not state;
- **negation**: the claim is negated and the passage's closest sentence is not, or the other way round
  (an odd number of "not", "no", "never", "without", "n't", ...);
- **direction**: the claim says one side of an opposed pair ("rose", "more", "before", "won", "allowed") and
  the passage's closest sentence says the other ("fell", "less", "after", "lost", "banned") but not the
  claim's side.

A reversed paraphrase ("rose" for "fell", a negation added or dropped, a changed number) thus scores at most
0.3, below ``WEAK``. The page's **closest statements** decide: a passage whose score before the mismatches
lies more than ``ALIGN_MARGIN`` below the best passage's supports the claim no more than the best does (so a
loosely related passage elsewhere on the page cannot outweigh the sentence that says the opposite). The
cosine is computed for the ``EMBED_TOP`` passages sharing the most words with the claim (the others count
with meaning 0). Cut-offs (measured on the real syntheses of ``bench/check_report.py``, figures in
``bench/results/check_report.json``): a claim is **supported** by a passage scoring at least ``SUPPORTED``,
**weakly supported** at least ``WEAK``, else **not found there**.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ALIGN_MARGIN", "COS_CEIL", "COS_FLOOR", "EMBED_TOP", "MISMATCH", "SUPPORTED", "WEAK", "ScoreParts",
    "aligned_scores", "numbers", "passages", "score_parts", "signals", "support_scores", "words_score",
]

#: At or above: the claim is supported by the passage.
SUPPORTED = 0.55
#: At or above (and below SUPPORTED): weakly supported. Below: not found there.
WEAK = 0.4
#: The cosine that maps to 0 (unrelated text of the same language) and to 1 (a paraphrase).
COS_FLOOR = 0.25
COS_CEIL = 0.8
#: The factor of each explicit mismatch (a number, negation, direction).
MISMATCH = 0.3
#: The passages (most words in common with the claim first) whose cosine is computed.
EMBED_TOP = 16
#: Passages scoring (before the mismatches) within this of the best one are the page's closest statements.
ALIGN_MARGIN = 0.1

_NUMBER = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\d)|(?<![\w.,])\d+(?:\.\d+)?(?![\d])")
_UNITS = {
    "zero": 0, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19,
}
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
         "ninety": 90}
_SCALE = {"hundred": 100, "thousand": 1000, "million": 10**6, "billion": 10**9}
_NUMBER_WORDS = re.compile(
    r"\b(?:(?P<tens>" + "|".join(_TENS) + r")(?:[-\s](?P<unit1>" + "|".join(k for k in _UNITS if _UNITS[k] < 10)
    + r"))?|(?P<unit>" + "|".join(sorted(_UNITS, key=len, reverse=True)) + r"))"
    r"(?:\s+(?P<scale>" + "|".join(_SCALE) + r"))?\b",
    re.IGNORECASE,
)
_NEGATION = re.compile(
    r"\b(?:not|no|never|none|nobody|nothing|neither|nor|without|cannot|hardly|barely)\b(?!-)|n['’]t\b",
    re.IGNORECASE,
)
#: Opposed pairs of words, as stems (``memory_store.text.stem``): one side of a pair in the claim and only the
#: other side in the passage is a reversal.
_OPPOSED: list[tuple[frozenset[str], frozenset[str]]] = []


def _pair(up: str, down: str) -> None:
    from memory_store.text import stem

    _OPPOSED.append((frozenset(stem(w) for w in up.split()), frozenset(stem(w) for w in down.split())))


def _opposed() -> list[tuple[frozenset[str], frozenset[str]]]:
    if not _OPPOSED:
        _pair("rise rose risen rising increase increased grew grow grown growth gain gained climb climbed jump "
              "jumped surge surged soar soared up higher raise raised boost boosted",
              "fall fell fallen falling decrease decreased decline declined drop dropped shrink shrank shrunk "
              "loss lose plunge plunged slump slumped down lower cut reduce reduced")
        _pair("more most greater larger largest bigger biggest above over exceed exceeded maximum highest best",
              "less least fewer smaller smallest below under minimum lowest worst")
        _pair("first earliest", "last latest")
        _pair("before earlier prior", "after later")
        _pair("win won victory", "defeat defeated lost")
        _pair("allow allowed permit permitted legal approve approved accept accepted",
              "ban banned forbid forbidden prohibit prohibited illegal reject rejected refuse refused deny denied")
        _pair("open opened", "close closed shut")
        _pair("start started begin began", "stop stopped end ended")
        _pair("success succeeded", "failure failed")
        _pair("true correct", "false wrong")
        _pair("positive", "negative")
    return _OPPOSED


@functools.lru_cache(maxsize=1 << 15)
def numbers(text: str) -> frozenset[str]:
    """The numbers ``text`` states, normalised ("1,500" -> "1500", "4.50" -> "4.5", "twenty-five" -> "25"; "one"
    is left out: it is a pronoun as often as a number)."""
    out = set()
    for m in _NUMBER.finditer(text):
        value = m.group(0).replace(",", "")
        if "." in value:
            value = value.rstrip("0").rstrip(".")
        out.add(value)
    for m in _NUMBER_WORDS.finditer(text):
        value = _TENS.get((m.group("tens") or "").lower(), 0) + _UNITS.get(
            (m.group("unit1") or m.group("unit") or "").lower(), 0)
        if m.group("scale"):
            value = max(value, 1) * _SCALE[m.group("scale").lower()]
        out.add(str(value))
    return frozenset(out)


def negated(text: str) -> bool:
    """Whether ``text`` is negated: an odd number of negations ("not", "no", "never", "n't", "without", ...;
    "not without" is not negated; "no-" in a compound such as "no-cors" is no negation)."""
    return len(_NEGATION.findall(text)) % 2 == 1


@functools.lru_cache(maxsize=1 << 15)
def _terms(text: str) -> frozenset[str]:
    from memory_store.text import terms

    return frozenset(terms(text))


@functools.lru_cache(maxsize=1 << 15)
def _all_stems(text: str) -> frozenset[str]:
    """The stems of every word of ``text``, stop words included ("more", "before", "down" are direction words)."""
    from memory_store.text import stem, words

    return frozenset(stem(w) for w in words(text))


@functools.lru_cache(maxsize=1 << 13)
def _sentences(text: str) -> tuple[str, ...]:
    from memory_store.text import sentences

    return tuple(sentences(text)) or (text,)


def signals(claim: str, passage: str) -> dict[str, bool]:
    """The explicit mismatches between ``claim`` and ``passage``: ``numbers`` (a number of the claim the
    passage lacks, or the claim's statement in the passage gives other numbers), ``negation`` (the claim is
    negated and its statement in the passage is not, or the other way round) and ``direction`` (an opposed
    pair). The claim's *statement* in the passage is the passage's sentence sharing the most words with it,
    narrowed to the clauses of that sentence that share words with it (a negation in another clause of the
    sentence, "… — and I will never be the same", says nothing about the claim)."""
    stated = _statement(claim, passage)
    claim_stems, near = _all_stems(claim), _all_stems(stated)
    direction = any(
        (claim_stems & a and near & b and not near & a) or (claim_stems & b and near & a and not near & b)
        for a, b in _opposed()
    )
    claimed, said = numbers(claim), numbers(stated)
    return {
        # a number the passage lacks, or the claim's statement gives other numbers instead of the claim's
        "numbers": bool(claimed - numbers(passage)) or bool(claimed - said and said - claimed),
        "negation": negated(claim) != negated(stated),
        "direction": bool(direction),
    }


# clause breaks: punctuation followed by a space (never the comma of "1,500"), brackets, quote marks, dashes
_CLAUSE = re.compile(r"\s*(?:[,;:](?=\s)|[()\[\]“”\"—–]|\s-\s)\s*")


def _statement(claim: str, passage: str) -> str:
    """The clauses of the passage's sentence closest to ``claim`` that share a word with it (the whole sentence
    when none does on its own)."""
    wanted = _terms(claim)
    closest = max(_sentences(passage), key=lambda s: len(wanted & _terms(s)))
    clauses = [c for c in _CLAUSE.split(closest) if wanted & _terms(c)]
    return " ".join(clauses) if clauses else closest


def words_score(claim: str, passage: str) -> float:
    """The share of the claim's content stems and numbers that the passage holds."""
    wanted = _terms(claim) | numbers(claim)
    if not wanted:
        return 0.0
    return len(wanted & (_terms(passage) | numbers(passage))) / len(wanted)


@dataclass
class ScoreParts:
    """The parts of one passage's score: ``meaning`` (the mapped cosine), ``words`` and the mismatches."""

    meaning: float
    words: float
    mismatches: dict[str, bool]

    @property
    def score(self) -> float:
        value = (self.meaning + self.words) / 2
        for mismatch in self.mismatches.values():
            if mismatch:
                value *= MISMATCH
        return round(value, 4)


def score_parts(claim: str, passages: list[str], embedder: Any) -> list[ScoreParts]:
    """The parts of :func:`support_scores` for each passage (the benchmark compares them one by one). The
    cosine is computed for the ``EMBED_TOP`` passages that hold the most of the claim's words; the others
    (meaning 0) score at most half, below any passage that shares words and meaning with the claim."""
    if not passages:
        return []
    words = [words_score(claim, p) for p in passages]
    top = sorted(range(len(passages)), key=lambda i: -words[i])[:EMBED_TOP]
    vectors = _embed(embedder, [claim, *(passages[i] for i in top)])
    meaning = [0.0] * len(passages)
    for i, cos in zip(top, vectors[1:] @ vectors[0], strict=True):
        meaning[i] = min(1.0, max(0.0, (float(cos) - COS_FLOOR) / (COS_CEIL - COS_FLOOR)))
    return [ScoreParts(meaning[i], words[i], signals(claim, passages[i])) for i in range(len(passages))]


def support_scores(claim: str, passages: list[str], embedder: Any) -> list[float]:
    """How well each passage supports ``claim``, in 0..1 (see the module docstring; ``SUPPORTED`` and
    ``WEAK`` are the cut-offs). ``embedder`` has ``embed_documents(texts)`` returning L2-normalised vectors."""
    return aligned_scores(score_parts(claim, passages, embedder))


def aligned_scores(parts: list[ScoreParts]) -> list[float]:
    """The scores of ``parts``, where a passage much less like the claim than the closest ones (its score
    before the mismatches more than ``ALIGN_MARGIN`` below the best) supports it no more than they do: when
    the page's closest statements contradict a claim, a loosely related passage elsewhere cannot support it."""
    if not parts:
        return []
    before = [(p.meaning + p.words) / 2 for p in parts]
    floor = max(before) - ALIGN_MARGIN
    cap = max(p.score for p, b in zip(parts, before, strict=True) if b >= floor)
    return [p.score if b >= floor else min(p.score, cap) for p, b in zip(parts, before, strict=True)]


_CACHE: dict[tuple[int, str], Any] = {}
_CACHE_MAX = 20_000


def _embed(embedder: Any, texts: list[str]) -> Any:
    """Embeddings of ``texts``, each passage embedded once per embedder (claims citing one page share them)."""
    import numpy as np

    key = id(embedder)
    missing = [t for t in dict.fromkeys(texts) if (key, t) not in _CACHE]
    if missing:
        if len(_CACHE) + len(missing) > _CACHE_MAX:
            _CACHE.clear()
        for text, vec in zip(missing, embedder.embed_documents(missing), strict=True):
            _CACHE[(key, text)] = vec
    return np.stack([_CACHE[(key, t)] for t in texts])


def passages(text: str, *, max_words: int = 90, span: int = 3) -> list[str]:
    """The passages of a page's text a claim is scored against: every sentence, and every run of up to
    ``span`` consecutive sentences (a claim may join them; lines count as sentences) under ``max_words``
    words, whitespace collapsed."""
    from memory_store.text import sentence_spans

    spans = sentence_spans(text)
    out = []
    for i, (a, _) in enumerate(spans):
        for j in range(i, min(i + span, len(spans))):
            joined = " ".join(text[a:spans[j][1]].split())
            if j > i and len(joined.split()) > max_words:
                break
            out.append(joined)
    return list(dict.fromkeys(out))
