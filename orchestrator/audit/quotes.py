"""Whether a quote is verbatim on a page, as a careful reader would judge it (``brt check``).

A quote matches a text after the normalisations a person accepts and nothing more:

- whitespace collapsed, invisible format characters removed, Unicode NFC;
- quote marks and apostrophes, typographic or not, single or double, as one mark (``"“”„″‘’‛′`` -> ``'``): a
  quotation inside a quote is written with the other marks (the page's ``the "no-cors" mode`` quoted as
  ``"the 'no-cors' mode"``); dashes and minus signs (``‐‑‒–—―−``) as ``-``;
- the case of the first letter of the quote (and of each fragment after an elision): ``"largest Contentful …"``
  quotes "Largest Contentful …";
- word boundaries hold: ``"safe to use"`` is not in "unsafe to use".

An **elision** (``…``, ``...`` or ``. . .``) leaves words out. The quote is then checked fragment by fragment, in
order, and each omission must lie **within one sentence** of the page (an ellipsis cannot join the start of
one sentence to the end of another), and must not change what the quote says: the words left out may not hold a
negation (``not``, ``no``, ``never``, ``n't``, ``without``, ``unless``, ``except``…), a number (when the quote
states numbers itself, or the number stands within two words of the cut), or a negative
form of a word the quote keeps (``unsafe`` left out of a quote that says ``safe``). A quote that is verbatim as
it stands (its ``...`` part of the page's text) matches as it stands. Quotes of any length are checked.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass

from memory_store.text import number_pattern, tokens

__all__ = ["NEGATION", "QuoteMatch", "fold", "match_quote"]

_FOLD = str.maketrans({"‘": "'", "’": "'", "‛": "'", "′": "'", "“": "'", "”": "'", "„": "'", "″": "'", '"': "'",
                       "‐": "-", "‑": "-", "‒": "-", "–": "-", "—": "-", "―": "-", "−": "-"})
_ELISION = re.compile(r"\s*(?:…|\.\s?\.\s?\.)\s*")
#: Words that negate what follows them (a dropped one reverses a quote).
NEGATION = re.compile(
    r"\b(?:not|no|never|none|nobody|nothing|nowhere|neither|nor|without|cannot|hardly|barely|scarcely|unless"
    r"|except|lack|lacks|lacked|fails?|failed)\b(?!-)|n['’]t\b",
    re.IGNORECASE,
)
_NUMBER = number_pattern("mention", ignore_case=True)
_NEG_PREFIX = re.compile(r"\b(?:un|in|im|ir|il|non|dis)-?([a-z]{3,})\b", re.IGNORECASE)
_ENDS = re.compile(r"^(?:\s*(?:…|\.\s?\.\s?\.))+\s*|\s*(?:(?:…|\.\s?\.\s?\.)\s*)+$")
_MAX_TRIES = 200


@functools.lru_cache(maxsize=8192)
def fold(text: str) -> str:
    """``text`` normalised as quotes are compared (see the module docstring), but for the first letter's case."""
    from ..untrusted import strip_invisible

    return " ".join(strip_invisible(unicodedata.normalize("NFC", text)).translate(_FOLD).split())


@dataclass
class QuoteMatch:
    """Whether a quote is in a text: ``found``; else ``why`` (None: not there at all; or how the words it
    leaves out change it)."""

    found: bool
    why: str | None = None


def _bounded(hay: str, i: int, j: int) -> bool:
    """Whether ``hay[i:j]`` starts and ends at word boundaries."""
    left = i == 0 or not (hay[i - 1].isalnum() and hay[i].isalnum())
    right = j >= len(hay) or not (hay[j - 1].isalnum() and hay[j].isalnum())
    return left and right


def _occurrences(hay: str, part: str, start: int, end: int) -> list[int]:
    """Where ``part`` (or it with its first letter's case changed) starts in ``hay[start:end]``, at word
    boundaries, in order (at most ``_MAX_TRIES``)."""
    variants = [part]
    if part[:1].isalpha():
        variants.append(part[0].swapcase() + part[1:])
    found: set[int] = set()
    for v in variants:
        pos = start
        while len(found) < _MAX_TRIES:
            i = hay.find(v, pos, end)
            if i < 0:
                break
            if _bounded(hay, i, i + len(v)):
                found.add(i)
            pos = i + 1
    return sorted(found)


@functools.lru_cache(maxsize=4096)
def _sentence_ends(hay: str) -> tuple[int, ...]:
    from memory_store.text import sentence_spans

    return tuple(b for _, b in sentence_spans(hay))


def _sentence_end(hay: str, pos: int) -> int:
    """The end of the sentence of ``hay`` holding position ``pos``."""
    import bisect

    ends = _sentence_ends(hay)
    i = bisect.bisect_right(ends, pos)
    return ends[i] if i < len(ends) else len(hay)


def _near_edge(gap: str, num: re.Match[str]) -> bool:
    """Whether a number left out stands within two words of where the quote resumes or breaks off."""
    return len(gap[:num.start()].split()) <= 2 or len(gap[num.end():].split()) <= 2


def _changes_meaning(gap: str, kept: str) -> str | None:
    """How the words ``gap`` left out of a quote change it (``kept``: the quote's own words), or None."""
    neg = NEGATION.search(gap)
    if neg and not NEGATION.search(kept):
        return f"the elision leaves out {neg.group(0)!r}"
    if neg:
        return f"the elision leaves out {neg.group(0)!r} (the quote's polarity may change)"
    num = _NUMBER.search(gap)
    if num and (_NUMBER.search(kept) or _near_edge(gap, num)):
        return f"the elision leaves out a number ({gap[max(0, num.start() - 20):num.end() + 20].strip()!r})"
    words = {w.lower() for w in tokens(kept, "alpha") if len(w) >= 3}
    for m in _NEG_PREFIX.finditer(gap):
        if m.group(1).lower() in words:
            return f"the elision leaves out {m.group(0)!r}, the opposite of a word the quote keeps"
    return None


def match_quote(quote: str, text: str) -> QuoteMatch:
    """Whether ``quote`` is verbatim in ``text`` (see the module docstring)."""
    q, hay = fold(quote), fold(text)
    for whole in dict.fromkeys([q, _ENDS.sub("", q)]):
        if whole and _occurrences(hay, whole, 0, len(hay)):
            return QuoteMatch(True)
    parts = [p for p in (x.strip() for x in _ELISION.split(q)) if p]
    if len(parts) < 2:
        return QuoteMatch(False)
    kept = " ".join(parts)
    why: str | None = None
    for first in _occurrences(hay, parts[0], 0, len(hay)):
        found, reason = _rest(hay, parts, first + len(parts[0]), kept)
        if found:
            return QuoteMatch(True)
        why = why or reason
    return QuoteMatch(False, why)


def _rest(hay: str, parts: list[str], pos: int, kept: str) -> tuple[bool, str | None]:
    """Whether ``parts[1:]`` follow ``pos`` in order, each omission within one sentence and changing nothing."""
    why: str | None = None
    for part in parts[1:]:
        end = _sentence_end(hay, max(pos - 1, 0))
        nxt = None
        for i in _occurrences(hay, part, pos, min(end + len(part), len(hay))):
            if i >= end:
                break
            reason = _changes_meaning(hay[pos:i], kept)
            if reason is None:
                nxt = i
                break
            why = why or reason
        if nxt is None:
            if why is None and _occurrences(hay, part, end, len(hay)):
                why = "the elision joins words of different sentences"
            return False, why
        pos = nxt + len(part)
    return True, None
