"""Claims made from a page's sentences, faithful or reversed: the data ``bench/fit_support.py`` fits brt check's
support model on and ``bench/check_report.py`` seeds its reports with.

A sentence is **restated** (``restate``: parenthetical asides and a leading connective dropped, first letter
capitalised; ``partial``: only its first clause; ``moved``: a phrase moved; ``reworded``: a word or two replaced
by synonyms from the caller's list), or **reversed** (``reversals``), each way that keeps most of its words:

- ``negation``: "not" added after the first auxiliary, or a "not"/"never"/"n't" dropped;
- ``antonym``: a word replaced by its opposite, from the opposites the caller gives (the fitting script and the
  benchmark use two lists with no pair in common, so the benchmark measures opposites the model never saw);
- ``prefix``: a word given or stripped of a negative prefix from the caller's list ("likely" / "unlikely");
- ``number``: a number changed; ``number swap``: two numbers exchanged;
- ``entity``: a capitalised name replaced by another name of the same page that the sentence does not hold;
- ``role swap``: two content words of the sentence exchanged (each once in it, not side by side), or two names
  with a word between them.

Pure functions of text and a seeded ``random.Random``.
"""

from __future__ import annotations

import random
import re

__all__ = ["REVERSALS", "joined", "moved", "page_names", "restate", "reversals", "reworded", "symmetric"]

REVERSALS = ("negation", "antonym", "prefix", "number", "number swap", "entity", "role swap")

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
    if text.count('"') % 2:
        text = text.replace('"', "")
    if text.count("“") != text.count("”"):
        text = text.replace("“", "").replace("”", "")
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


_TRAILING = re.compile(r"^(?P<body>.{20,}?),? (?P<pp>(?:in|on|at|after|before|during|since|by|until|from|for) "
                       r"[^,;:]{2,40})\.$")
_LEADING = re.compile(r"^(?P<pp>(?:In|On|At|After|Before|During|Since|By|Until|From|For) [^,;:]{2,40}), "
                      r"(?P<body>.{20,})$")


def moved(claim: str) -> str | None:
    """The claim with a phrase moved, meaning kept: a trailing "in 2023" to the front, or a leading "In 2023," to
    the end (None when it has neither)."""
    m = _LEADING.match(claim)
    if m:
        body = m.group("body").rstrip(".")
        return f"{body[:1].upper()}{body[1:]} {m.group('pp')[:1].lower()}{m.group('pp')[1:]}."
    m = _TRAILING.match(claim)
    if m:
        return f"{m.group('pp')[:1].upper()}{m.group('pp')[1:]}, {m.group('body')[:1].lower()}{m.group('body')[1:]}."
    return None


def reworded(claim: str, rng: random.Random, synonyms: dict[str, str], *, most: int = 2) -> str | None:
    """The claim with up to ``most`` of its words replaced by a synonym from the caller's list ("rose" as
    "increased"), meaning kept (None when it holds none)."""
    found = [m for m in re.finditer(r"\b[A-Za-z]+\b", claim) if m.group(0).lower() in synonyms]
    if not found:
        return None
    chosen = sorted(rng.sample(found, min(len(found), rng.randint(1, most))), key=lambda m: m.start())
    out, at = [], 0
    for m in chosen:
        other = synonyms[m.group(0).lower()]
        out += [claim[at: m.start()], other.capitalize() if m.group(0)[0].isupper() else other]
        at = m.end()
    return "".join(out) + claim[at:]


def joined(first: str, second: str) -> str:
    """Two consecutive sentences of a page as one claim: "A, and b."."""
    return f"{first.rstrip('.!?')}, and {second[:1].lower()}{second[1:]}"


_AUX = re.compile(r"\b(is|are|was|were|has|have|had|can|could|will|would|should|may|might|must|does|did|do)\b")
_NEG = re.compile(r"\s+(?:not|never)\b|n't\b")
_NUM = re.compile(r"(?<![\w.,\[])(\d+)(?![\w,\]]*\d)(?!\])")
_NAME = re.compile(r"(?<=[a-z,;] )[A-Z][a-z]{2,}\b")
_STOP = frozenset("the a an of to in on at for and or but with by from as is are was were be been has have had "
                  "that this it its their his her they he she we you not no".split())


def _negation(text: str, rng: random.Random, **_: object) -> str | None:
    if _NEG.search(text):
        return _NEG.sub("", text, count=1)
    aux = _AUX.search(text)
    return text[: aux.end()] + " not" + text[aux.end():] if aux else None


def _antonym(text: str, rng: random.Random, opposites: dict[str, str], **_: object) -> str | None:
    found = [(m, opposites[m.group(0).lower()]) for m in re.finditer(r"\b[A-Za-z]+\b", text)
             if m.group(0).lower() in opposites]
    if not found:
        return None
    m, other = rng.choice(found)
    other = other.capitalize() if m.group(0)[0].isupper() else other
    return text[: m.start()] + other + text[m.end():]


def _prefix(text: str, rng: random.Random, prefixed: dict[str, str], **_: object) -> str | None:
    return _antonym(text, rng, prefixed)


def _number(text: str, rng: random.Random, **_: object) -> str | None:
    found = list(_NUM.finditer(text))
    if not found:
        return None
    m = rng.choice(found)
    value = int(m.group(1))
    new = value + rng.choice([1, 2, 3]) if value < 1900 or value > 2100 else value + rng.choice([-2, -1, 1, 2])
    return text[: m.start()] + str(new) + text[m.end():]


def _number_swap(text: str, rng: random.Random, **_: object) -> str | None:
    found = [m for m in _NUM.finditer(text)]
    pairs = [(a, b) for i, a in enumerate(found) for b in found[i + 1:] if a.group(1) != b.group(1)]
    if not pairs:
        return None
    a, b = rng.choice(pairs)
    return text[: a.start()] + b.group(1) + text[a.end(): b.start()] + a.group(1) + text[b.end():]


def _entity(text: str, rng: random.Random, names: list[str], **_: object) -> str | None:
    found = list(_NAME.finditer(text))
    others = [n for n in names if n not in text]
    if not found or not others:
        return None
    m = rng.choice(found)
    return text[: m.start()] + rng.choice(others) + text[m.end():]


def _role_swap(text: str, rng: random.Random, **_: object) -> str | None:
    names = list(_NAME.finditer(text))
    # two names, a word of the text between them: the two halves of one name ("Michael Anastassiades") are no roles
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]
             if a.group(0) != b.group(0) and re.search(r"\b[a-z]+\b", text[a.end(): b.start()])]
    if not pairs:
        words = [m for m in re.finditer(r"\b[a-z]{4,}\b", text) if m.group(0) not in _STOP]
        counts = {w.group(0): sum(1 for x in words if x.group(0) == w.group(0)) for w in words}
        once = [w for w in words if counts[w.group(0)] == 1]
        pairs = [(a, b) for i, a in enumerate(once) for b in once[i + 2:]]
    if not pairs:
        return None
    a, b = rng.choice(pairs)
    return text[: a.start()] + b.group(0) + text[a.end(): b.start()] + a.group(0) + text[b.end():]


_MAKERS = {"negation": _negation, "antonym": _antonym, "prefix": _prefix, "number": _number,
           "number swap": _number_swap, "entity": _entity, "role swap": _role_swap}


def reversals(text: str, rng: random.Random, *, opposites: dict[str, str], prefixed: dict[str, str],
              names: list[str]) -> dict[str, str]:
    """Each way ``text`` can be reversed (``REVERSALS``) -> the reversed text (ways that do not apply left out)."""
    out = {}
    for kind in REVERSALS:
        made = _MAKERS[kind](text, rng, opposites=opposites, prefixed=prefixed, names=names)
        if made and made != text:
            out[kind] = made
    return out


def page_names(text: str) -> list[str]:
    """The capitalised names a page uses (not opening a sentence), most used first."""
    from collections import Counter

    counts = Counter(m.group(0) for m in _NAME.finditer(text))
    return [n for n, _ in counts.most_common(200)]


def symmetric(pairs: str) -> dict[str, str]:
    """``"a:b c:d"`` -> {a: b, b: a, c: d, d: c}."""
    out: dict[str, str] = {}
    for pair in pairs.split():
        a, b = pair.split(":")
        out.setdefault(a, b)
        out.setdefault(b, a)
    return out
