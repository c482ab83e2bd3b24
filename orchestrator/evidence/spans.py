"""Candidate quotes: every sentence of the retrieved chunks, and every window of two or three consecutive sentences
(the sentence that answers often follows the one that restates the question, or the heading that names what the
prose under it answers), each a verbatim span of its chunk. The reader reads a quote under its heading
(``Span.reading``). A quote that a heading opens prints the heading's words too: the shipped scorer was fitted on
such windows, and a refit on windows without the heading is measured in the model card, not shipped."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from concept_index.text import LIST_MARKER, is_heading
from memory_store.text import collapse, sentence_spans, sentence_windows, terms

if TYPE_CHECKING:
    from memory_store import Hit

#: A quote's longest, in words (docs/contracts.md, "Evidence blocks": at most about 60); a longer single sentence
#: is cut around the question's terms, "…" marking the cut.
MAX_QUOTE_WORDS = 60
#: Windows of up to this many consecutive sentences are candidates.
MAX_WINDOW = 3


@dataclass
class Chunk:
    """One retrieved chunk split into sentences, with the heading each sentence stands under."""

    hit: Hit
    rank: int  # 0-based place in retrieval order
    spans: list[tuple[int, int]]  # sentence (start, end) offsets in hit.text
    sentences: list[str]  # collapsed sentence texts
    heading: list[bool]  # the sentence is a heading line
    owner: list[int | None]  # index of the heading line above each sentence, within the chunk
    para: list[int]  # index of each sentence within its line (paragraph): 0 opens it
    line: list[int]  # the line (paragraph) each sentence belongs to


@dataclass
class Span:
    """A candidate quote: sentences ``lo..hi`` of chunk ``chunk``."""

    chunk: Chunk
    lo: int
    hi: int
    quote: str  # verbatim, whitespace collapsed, "…" where cut
    words: int
    keys: frozenset[str] = field(default_factory=frozenset)  # its sentences' texts: overlap with another quote

    @property
    def hit(self) -> Hit:
        return self.chunk.hit

    @property
    def url(self) -> str:
        return str(self.chunk.hit.metadata.get("url") or "")

    @property
    def n_sentences(self) -> int:
        return self.hi - self.lo + 1

    @property
    def is_heading(self) -> bool:
        return self.lo == self.hi and self.chunk.heading[self.lo]

    @property
    def reading(self) -> str:
        """The quote as the reader reads it: under the heading it stands under in its chunk ("How to minimise
        layout shift — Give every image width and height attributes"), a heading-led quote as it is."""
        owner = self.chunk.owner[self.lo]
        if owner is None or self.chunk.heading[self.lo]:
            return self.quote
        return f"{self.chunk.sentences[owner]} — {self.quote}"


def split_chunk(hit: Hit, rank: int) -> Chunk:
    """``hit``'s text as sentences, with headings, the heading above each sentence and paragraph positions."""
    text = hit.text
    spans = sentence_spans(text) or ([(0, len(text))] if text.strip() else [])
    sentences = [collapse(text[a:b]) for a, b in spans]
    # a short line right after a colon is what the colon introduces (a list of dates, of names), not a heading
    heading = [is_heading(s) and not (i > 0 and sentences[i - 1].endswith(":")) for i, s in enumerate(sentences)]
    owner: list[int | None] = []
    current: int | None = None
    para: list[int] = []
    line: list[int] = []
    n_line, prev_end = -1, -1
    for i, (a, _b) in enumerate(spans):
        owner.append(current)
        if heading[i]:
            current = i
        new_line = i == 0 or "\n" in text[prev_end:a]
        n_line += new_line
        para.append(0 if new_line else para[-1] + 1)
        line.append(n_line)
        prev_end = spans[i][1]
    return Chunk(hit, rank, spans, sentences, heading, owner, para, line)


def chunk_spans(chunk: Chunk, focus: frozenset[str], max_words: int = MAX_QUOTE_WORDS) -> list[Span]:
    """The candidate quotes of ``chunk``: each sentence and each window of up to MAX_WINDOW consecutive sentences
    that fits ``max_words``; a heading only opens a window (it says what the prose under it answers), never stands
    inside or at the end of one; a longer single sentence is cut around the ``focus`` terms."""

    def take(lo: int, hi: int) -> Span | None:
        return None if hi > lo and chunk.heading[hi] else _make_span(chunk, lo, hi, focus, max_words)

    return sentence_windows(len(chunk.spans), MAX_WINDOW, take)


def _make_span(chunk: Chunk, lo: int, hi: int, focus: frozenset[str], max_words: int) -> Span | None:
    text = chunk.hit.text
    start = chunk.spans[lo][0]
    marker = LIST_MARKER.match(text[start : chunk.spans[lo][1]])
    if marker:  # a list item's bullet is layout, not words of the page
        start += marker.end()
    body = collapse(text[start : chunk.spans[hi][1]])
    words = len(body.split())
    if words > max_words:
        if hi > lo:
            return None
        body, cut_head = clip_around(body, focus, max_words)
    else:
        cut_head = False
    if not body:
        return None
    if cut_head or (lo > 0 and not _opens_sentence(text[start])):
        body = "… " + body
    return Span(chunk, lo, hi, body, min(words, max_words), frozenset(chunk.sentences[lo : hi + 1]))


_OPENERS = "\"“‘'([$€£"


def _opens_sentence(ch: str) -> bool:
    return ch.isupper() or ch.isdigit() or ch in _OPENERS


def clip_around(quote: str, focus: frozenset[str], max_words: int) -> tuple[str, bool]:
    """``quote`` cut to ``max_words`` words ("…" where cut), and whether its head was cut: the window is
    centred on the shortest run of words that holds the most distinct ``focus`` terms (the answer stands beside
    them), the head when it holds none."""
    words = quote.split()
    if len(words) <= max_words:
        return quote, False
    held = [set(terms(w)) & focus for w in words]
    want = len(set().union(*held))
    first = 0
    if want:
        run = (0, len(words) - 1)
        for i in range(len(words)):  # the shortest run from each word that holds all ``want`` terms
            seen: set[str] = set()
            for j in range(i, min(len(words), i + run[1] - run[0] + 1)):
                seen |= held[j]
                if len(seen) == want:
                    if j - i < run[1] - run[0]:
                        run = (i, j)
                    break
        spare = max_words - (run[1] - run[0] + 1)
        first = min(max(0, run[0] - spare // 2), len(words) - max_words)
    end = first + max_words
    return " ".join(words[first:end]) + (" …" if end < len(words) else ""), first > 0


def candidate_spans(hits: Sequence[Hit], focus: frozenset[str]) -> tuple[list[Chunk], list[Span]]:
    """The chunks of ``hits`` and their candidate quotes, a quote that an earlier chunk of the same page already
    offers (chunks overlap) dropped."""
    chunks = [split_chunk(h, i) for i, h in enumerate(hits)]
    seen: set[tuple[str, str]] = set()
    spans: list[Span] = []
    for chunk in chunks:
        for span in chunk_spans(chunk, focus):
            key = (span.url, span.quote.strip("… "))
            if key not in seen:
                seen.add(key)
                spans.append(span)
    return chunks, spans
