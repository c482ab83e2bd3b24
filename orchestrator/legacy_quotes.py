"""The quote choice of 918efa0 (``brt synthesize`` before issue 10): in each chunk, the sentence closest to the
question by cosine, grown with its neighbours while they score nearly as well. ``quote_mode="legacy"`` of
``synthesize.evidence_candidates`` runs it, for the benchmarks' baseline; the answer path is ``quotes.py``."""

from __future__ import annotations

from dataclasses import dataclass

from concept_index.text import LIST_MARKER, is_heading

from .quotes import collapse, prose_under_top_heading

MAX_QUOTE_WORDS = 60


def _clip_words(text: str, limit: int) -> str:
    words = text.split()
    if len(words) <= limit:
        return " ".join(words)
    return " ".join(words[:limit]) + " …"


@dataclass
class QuoteChoice:
    """A quote chosen from a chunk, with the heading it stands under in that chunk (context for scoring it)."""

    quote: str
    heading: str | None = None
    by_heading: bool = False  # chosen because its heading matched the question better than any sentence

    @property
    def in_context(self) -> str:
        """The quote as it reads under its heading: what its score is measured on."""
        return f"{self.heading}: {self.quote}" if self.heading else self.quote


def choose_quote(chunk_text: str, sentence_scores: list[float], spans: list[tuple[int, int]]) -> str:
    """The verbatim span of ``chunk_text`` that best answers the query (see ``choose_quote_in_context``)."""
    return choose_quote_in_context(chunk_text, sentence_scores, spans).quote


def choose_quote_in_context(
    chunk_text: str,
    sentence_scores: list[float],
    spans: list[tuple[int, int]],
    *,
    named: list[bool] | None = None,
) -> QuoteChoice:
    """The verbatim span of ``chunk_text`` that best answers the query: the best sentence, grown with its
    neighbours while they score nearly as well and the quote stays under MAX_QUOTE_WORDS words. Headings
    are neither chosen (while prose exists) nor glued onto a quote; but when a heading scores better than
    every sentence (by ``quotes.HEADING_MARGIN``), the quote is taken from the prose under that heading. ``named`` marks
    the sentences that name what the question names: when some do, the quote starts at one of them."""
    if not spans:
        return QuoteChoice(_clip_words(chunk_text, MAX_QUOTE_WORDS))
    heading = [is_heading(chunk_text[a:b]) for a, b in spans]
    owner: list[int | None] = []  # the heading each span stands under, within this chunk
    current: int | None = None
    for i, heads in enumerate(heading):
        owner.append(current)
        if heads:
            current = i
    prose = [i for i in range(len(spans)) if not heading[i]]
    if named is not None and any(named[i] for i in prose):
        prose = [i for i in prose if named[i]]
    candidates = prose or list(range(len(spans)))
    best = max(candidates, key=lambda i: sentence_scores[i])
    by_heading = False
    if prose:
        best, top = prose_under_top_heading(prose, owner, heading, best, lambda i: sentence_scores[i])
        by_heading = top is not None
    lo = hi = best

    def words(a: int, b: int) -> int:
        return len(chunk_text[spans[a][0] : spans[b][1]].split())

    # Each list item is a statement of its own: a quote grows within its item, never into the next one.
    item = [bool(LIST_MARKER.match(chunk_text[a:b])) for a, b in spans]

    while True:
        options = []
        if lo > 0 and not heading[lo - 1] and not item[lo]:
            options.append((sentence_scores[lo - 1], lo - 1, hi))
        if hi < len(spans) - 1 and not heading[hi + 1] and not item[hi + 1]:
            options.append((sentence_scores[hi + 1], lo, hi + 1))
        options = [o for o in options if words(o[1], o[2]) <= MAX_QUOTE_WORDS]
        if not options:
            break
        score, new_lo, new_hi = max(options)
        # A neighbour joins when the quote is still short, or when it is nearly as relevant as the best one.
        if words(lo, hi) < 15 or score >= sentence_scores[best] - 0.05:
            lo, hi = new_lo, new_hi
        else:
            break
    start = spans[lo][0]
    marker = LIST_MARKER.match(chunk_text[start : spans[lo][1]])
    if marker:  # a list item's bullet is layout, not words of the page
        start += marker.end()
    quote = collapse(chunk_text[start : spans[hi][1]])
    if len(quote.split()) > MAX_QUOTE_WORDS:
        quote = _clip_words(quote, MAX_QUOTE_WORDS)
    prefix = "… " if lo > 0 and not _starts_sentence(chunk_text, start) else ""
    title = owner[lo]
    context = collapse(chunk_text[spans[title][0] : spans[title][1]]) if title is not None else None
    return QuoteChoice(prefix + quote, context, by_heading)


def _starts_sentence(text: str, start: int) -> bool:
    return start == 0 or text[start].isupper() or text[start].isdigit()
