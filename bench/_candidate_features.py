"""Candidate feature groups of the evidence scorer: signals that cross-validation did not keep in the shipped
``orchestrator.evidence.features.Features`` (``bench/fit_evidence_scorer.py --candidates GROUP ...`` tries them
again on the dumps of ``bench/evidence_features.py``).

- ``shape``: a quote's length, its number of sentences, and whether its best sentence (by cosine to the question)
  stands first or last;
- ``answer_type``: what the question asks for (who, when, where, a quantity, why, how, what, yes/no, a statement)
  and whether the quote holds what such a question wants (a name or number the question lacks, a year or date, an
  amount, a percentage, a causal, instructional or defining construction), and their products.

Last fitted (with the reader trained on SQuAD only) they added nothing: section accuracy of the held-out folds
0.553 with them, 0.567 without; the figures with the current reader are in ``docs/benchmarks.md``.
"""

from __future__ import annotations

import math
import re

from orchestrator.evidence.queries import ASKS, analyse

_NUMBER = re.compile(r"\d[\d,.]*")
_YEAR = re.compile(r"\b(?:1[5-9]\d\d|20\d\d)s?\b")
_MONTHS = (
    r"Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|"
    r"Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?"
)
_DATE = re.compile(
    rf"\b(?:{_MONTHS})\.?\s+\d{{1,2}}\b|\b\d{{1,2}}\s+(?:{_MONTHS})\b|\b\d{{1,4}}[/-]\d{{1,2}}[/-]\d{{1,4}}\b"
)
_CURRENCY = re.compile(r"[$€£¥]\s?\d|\b\d[\d,.]*\s?(?:dollars|euros|pounds|yen|cents|USD|EUR|GBP)\b", re.IGNORECASE)
_PERCENT = re.compile(r"\d\s?%|\bper\s?cent\b|\bpercent\b", re.IGNORECASE)
_CAPITAL = re.compile(r"(?<=[\w,;:)] )[A-Z][\w'’-]+")
_CAUSAL = re.compile(
    r"\b(?:because|since|due to|owing to|as a result|result(?:s|ed)? in|so that|in order to|therefore|thus|hence|"
    r"caus(?:e|es|ed|ing)|reasons?|lead(?:s)? to|led to|allow(?:s|ed)?|enabl(?:e|es|ed)|prevent(?:s|ed)?|"
    r"mean(?:s|t)? that|which is why|that is why|otherwise)\b",
    re.IGNORECASE,
)
_INSTRUCT = re.compile(
    r"\b(?:by (?:\w+ing)|you (?:can|could|need|must|should|have to|may)|to do (?:so|this)|simply|instead|"
    r"click|select|choose|open|press|go to|type|enter|set|use|using|enable|disable|install|run|add|remove|"
    r"uncheck|check)\b|^(?:[A-Z][a-z]+)\s",
    re.IGNORECASE,
)
_DEFINES = re.compile(
    r"\b(?:is|are|was|were) (?:a|an|the|one of)\b|\brefers? to\b|\bmeans?\b|\bdefined as\b|\bknown as\b|"
    r"\bstands? for\b|\bcalled\b|\bi\.e\.|\bis when\b",
    re.IGNORECASE,
)

SHAPE = ("log_words", "two_sentences", "three_sentences", "best_first", "best_last")
SIGNALS = ("new_number", "year", "date", "amount", "percent", "new_name", "causal", "instruct", "defines")
PRODUCTS = ("who_name", "where_name", "when_date", "quantity_number", "why_causal", "how_instruct", "how_causal",
            "what_defines")
ANSWER_TYPE = (*SIGNALS, *(f"asks_{a}" for a in ASKS), *PRODUCTS)
GROUPS = {"shape": SHAPE, "answer_type": ANSWER_TYPE}


def shape(words: int, n: int, best: int) -> dict[str, float]:
    """``words`` of the quote, its ``n`` sentences, the index of its best sentence."""
    return {"log_words": math.log1p(words), "two_sentences": float(n == 2), "three_sentences": float(n == 3),
            "best_first": float(n > 1 and best == 0), "best_last": float(n > 1 and best == n - 1)}


def answer_type(question: str, quote: str) -> dict[str, float]:
    q = analyse(question)
    numbers = {m.strip(".,") for m in _NUMBER.findall(quote)} - q.numbers
    names = {w.lower().strip("'’") for w in _CAPITAL.findall(quote)} - q.capitals
    sig = {
        "new_number": float(bool(numbers)), "year": float(_YEAR.search(quote) is not None),
        "date": float(_DATE.search(quote) is not None), "amount": float(_CURRENCY.search(quote) is not None),
        "percent": float(_PERCENT.search(quote) is not None), "new_name": float(bool(names)),
        "causal": float(_CAUSAL.search(quote) is not None), "instruct": float(_INSTRUCT.search(quote) is not None),
        "defines": float(_DEFINES.search(quote) is not None),
    }
    asks = {f"asks_{a}": float(q.asks == a) for a in ASKS}
    products = {
        "who_name": asks["asks_who"] * sig["new_name"],
        "where_name": asks["asks_where"] * sig["new_name"],
        "when_date": asks["asks_when"] * max(sig["year"], sig["date"]),
        "quantity_number": asks["asks_quantity"] * max(sig["new_number"], sig["amount"], sig["percent"]),
        "why_causal": asks["asks_why"] * sig["causal"],
        "how_instruct": asks["asks_how"] * sig["instruct"],
        "how_causal": asks["asks_how"] * sig["causal"],
        "what_defines": asks["asks_what"] * sig["defines"],
    }
    return {**sig, **asks, **products}


def columns(groups: list[str]) -> list[str]:
    return [name for g in groups for name in GROUPS[g]]


def candidate_row(groups: list[str], question: str, cand: dict) -> list[float]:
    """The candidate groups' values of one dumped candidate (``bench/evidence_features.py``'s rows carry
    ``words``, ``n`` and ``best``)."""
    values: dict[str, float] = {}
    if "shape" in groups:
        values.update(shape(cand["words"], cand.get("n", 1), cand.get("best", 0)))
    if "answer_type" in groups:
        values.update(answer_type(question, cand["quote"]))
    return [values[c] for c in columns(groups)]
