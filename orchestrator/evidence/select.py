"""Which scored candidates become a section's blocks: best probability first; the first must reach the threshold
(else the section is a Gap). A further block is a distinct answer: it shares no sentence with a block of the same
page and does not repeat a block's facts. From a page no block cites yet it needs the threshold too (another
source answering the question: an auditor must see where sources differ); from a page already cited it needs the
``second`` bar as well (another passage of the same source must earn its place). The same facts on another page
are merged into the block ("also at") rather than printed twice. No padding: nothing below the bars fills a
slot."""

from __future__ import annotations

from dataclasses import dataclass, field

from memory_store.text import collapse, number_pattern, terms

from .features import Features
from .spans import Span


@dataclass
class Scored:
    """A candidate quote with its features and probability, and the candidates merged into it (other pages)."""

    span: Span
    features: Features
    p: float
    also: list[Scored] = field(default_factory=list)

    @property
    def quote(self) -> str:
        return self.span.quote

    @property
    def url(self) -> str:
        return self.span.url


_NUMBERS = number_pattern("run")


def same_facts(a: str, b: str) -> bool:
    """Whether quote ``a`` repeats the facts of quote ``b``: the same numbers, and 80% or more of ``a``'s content
    words are in ``b`` (at least 4 words in each). Directional: a shorter quote inside ``b`` repeats it; a quote
    that says more than ``b`` does not."""
    if {n.strip(".,") for n in _NUMBERS.findall(a)} != {n.strip(".,") for n in _NUMBERS.findall(b)}:
        return False
    if collapse(a).lower() == collapse(b).lower():
        return True
    ta, tb = set(terms(a)), set(terms(b))
    return min(len(ta), len(tb)) >= 4 and len(ta & tb) / len(ta) >= 0.8


def repeats(span: Span, quote: str) -> bool:
    """Whether ``span`` repeats the facts of ``quote``: as a whole, or in one of its sentences (a window that
    adds an unrelated sentence to the same facts is the same answer, not a new one)."""
    return same_facts(span.quote, quote) or any(
        len(s.split()) >= 4 and same_facts(s, quote) for s in span.keys if s != span.quote
    )


def overlaps(a: Span, b: Span) -> bool:
    """Whether two quotes of the same page share a sentence, or one's words lie within the other's (chunks
    overlap, so the same sentence may come from two chunks)."""
    if a.url != b.url:
        return False
    if a.keys & b.keys:
        return True
    x, y = collapse(a.quote.strip("… ")), collapse(b.quote.strip("… "))
    return bool(x and y) and (x in y or y in x)


def select(candidates: list[Scored], *, k: int, threshold: float, second: float) -> list[Scored]:
    """The blocks of one section, best first (see the module's docstring). A quote that repeats a block's facts
    on another page needs only the threshold to join it: it is a second source of an answer already given."""
    ranked = sorted(candidates, key=lambda c: (-c.p, c.span.words, c.span.chunk.rank))
    chosen: list[Scored] = []
    for c in ranked:
        if c.p < threshold:
            break
        if any(overlaps(c.span, o.span) for o in chosen):
            continue
        twin = next((o for o in chosen if repeats(c.span, o.quote)), None)
        if twin is not None:
            if c.url not in {twin.url, *(a.url for a in twin.also)}:
                twin.also.append(c)
            continue
        cited = c.url in {o.url for o in chosen}
        if len(chosen) < k and (not cited or c.p >= second):
            chosen.append(c)
    return chosen
