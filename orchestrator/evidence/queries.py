"""What a section asks: its signature queries (what retrieval searches for) and the shape of its question (what
kind of answer it wants), both built without a model."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memory_store.text import number_pattern, terms, word_pattern

if TYPE_CHECKING:
    from ..charter import Section

log = logging.getLogger(__name__)

# Signature queries: 2-4 per section:
#   1. base: the section's question (or its title);
#   2. topic: the question without its interrogative frame, prefixed with the section's title and label when
#      their words are not in it yet ("CLS mitigation: minimise layout shift");
#   3. counterfactual: the same topic asked from the other side, so evidence against a claim is looked for too;
#   4. the label alone when it says something none of the others does (an acronym, a product name).
# An optional generator (``QueryGenerator``, e.g. an LLM call) may add paraphrases; at most 4 queries in all.
_AUX = r"(?:(?:do|does|did|could|should|would|is|are|was|were|must)(?:n['’]t|not)?|can(?:not|['’]t)?|will|won['’]t)"
_FRAME = re.compile(
    r"^\s*(?:(?:how|what|which|why|when|where|who|whom|whose)\b(?:\s+(?:" + _AUX + r"|to|much|many|exactly))?"
    r"(?:\s+(?:i|we|you|they|one|it|a|an|the|site|sites|page|pages))?"
    r"|" + _AUX + r"\s+(?:i|we|you|they|one|it|a|an|the))(?![\w'’])\s*",
    re.IGNORECASE,
)
_WORD = word_pattern("query")
MAX_SIGNATURE_QUERIES = 4
COUNTERFACTUAL_SUFFIX = "limitations, failures, drawbacks and criticisms"

QueryGenerator = Callable[["Section"], list[str]]


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def topic_phrase(section: Section) -> str:
    """The section's topic as a keyword phrase: its question without the interrogative frame, prefixed with
    the title/label when their words are missing from it."""
    question = section.effective_question.strip()
    core = _FRAME.sub("", question, count=1).strip().rstrip("?!. ").strip() or question.rstrip("?!. ")
    prefix: list[str] = []
    for extra in (section.title, section.label):
        if extra and extra.strip() and not _words(extra) <= _words(core) | _words(" ".join(prefix)):
            prefix.append(extra.strip())
    return f"{' '.join(prefix)}: {core}" if prefix and core else (core or " ".join(prefix))


def signature_queries(section: Section, generator: QueryGenerator | None = None) -> list[str]:
    """2-4 queries for ``section``: base, topic, counterfactual (and the label); see above."""
    base = section.effective_question.strip()
    topic = topic_phrase(section)
    candidates = [base, topic, f"{topic} — {COUNTERFACTUAL_SUFFIX}"]
    if generator is not None:
        try:
            candidates[2:2] = [q for q in generator(section) if isinstance(q, str)]
        except Exception:  # an optional helper: its failure never stops a synthesis
            log.exception("signature query generator failed for section %r", section.title)
    label = (section.label or "").strip()
    if label and not any(label.lower() in q.lower() for q in candidates):
        candidates.append(label)
    queries: list[str] = []
    for q in candidates:
        q = " ".join(q.split())
        if q and q.lower() not in {x.lower() for x in queries}:
            queries.append(q)
    if len(queries) > MAX_SIGNATURE_QUERIES:  # keep base, topic and the counterfactual
        queries = queries[: MAX_SIGNATURE_QUERIES - 1] + [f"{topic} — {COUNTERFACTUAL_SUFFIX}"]
        queries = list(dict.fromkeys(queries))
    return queries


# -- the shape of a question ------------------------------------------------------------------------------------

#: What a question asks for, from its first interrogative: a coarse, general split (no per-dataset forms).
ASKS = ("who", "when", "where", "quantity", "why", "how", "what", "yesno", "statement")

_QUANTITY = re.compile(
    r"\bhow\s+(?:many|much|long|far|old|big|large|high|tall|often|fast|heavy|wide|deep)\b|"
    r"\bwhat\s+(?:percentage|proportion|share|number|amount|price|cost|size|fraction)\b",
    re.IGNORECASE,
)
_WH = re.compile(r"\b(who|whom|whose|when|where|why|how|what|which)\b", re.IGNORECASE)
_YESNO = re.compile(r"^\s*" + _AUX + r"\b", re.IGNORECASE)
_NUMBER = number_pattern("run")
_CAPITAL = word_pattern("capitalised")


@dataclass(frozen=True)
class Question:
    """A section's question as the evidence features read it."""

    text: str
    asks: str  # one of ASKS
    terms: frozenset[str]  # stems of its content words
    numbers: frozenset[str]
    capitals: frozenset[str]  # lower-cased capitalised words after the first (names it mentions)


def analyse(text: str) -> Question:
    """The shape of ``text``: what it asks for (``ASKS``), its terms, numbers and names."""
    t = " ".join(text.split())
    words = t.split()
    capitals = frozenset(w.lower().strip("'’") for w in _CAPITAL.findall(" ".join(words[1:])))
    numbers = frozenset(n.strip(".,") for n in _NUMBER.findall(t))
    return Question(t, _asks(t), frozenset(terms(t)), numbers, capitals)


def _asks(text: str) -> str:
    if _QUANTITY.search(text):
        return "quantity"
    wh = _WH.search(text)
    if wh is not None and (wh.start() < 40 or text.endswith("?")):
        word = wh.group(1).lower()
        return {"whom": "who", "whose": "who", "which": "what"}.get(word, word)
    if _YESNO.match(text) or text.endswith("?"):
        return "yesno"
    return "statement"
