"""Split page text into overlapping windows measured in model tokens.

Boundaries snap to paragraph or sentence ends: the text is cut into units (sentences inside paragraphs),
whole units are packed greedily up to the window, and the next window starts at a unit boundary so that the
overlap is as large as possible but at most ``overlap`` tokens. A unit longer than the window is hard-split by
token offsets. Every chunk's text is an exact slice ``text[start:end]`` of the page, so quotes stay verbatim.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .text import long_run_pattern, sentence_spans, word_pattern

DEFAULT_WINDOW = 800
DEFAULT_OVERLAP = 160
OVERLAP_RATIO = 0.2

_WS = re.compile(r"\s+")


@dataclass
class Chunk:
    """One window of a page: ``text == page_text[start:end]``."""

    id: str
    text: str
    tokens: int
    start: int
    end: int


def normalize_text(text: str) -> str:
    """NFC, whitespace collapsed to single spaces, stripped."""
    return _WS.sub(" ", unicodedata.normalize("NFC", text)).strip()


def chunk_id(text: str) -> str:
    """Content id: ``sha256:`` + hex digest of the normalised text."""
    return "sha256:" + hashlib.sha256(normalize_text(text).encode("utf-8")).hexdigest()


def split_algo(window: int, overlap: int) -> str:
    """The ``split_algo`` label recorded on chunk rows."""
    return f"sliding_{window}_{overlap}"


def window_for(
    embedder: Any, window: int = DEFAULT_WINDOW, overlap: int = DEFAULT_OVERLAP
) -> tuple[int, int]:
    """(window, overlap) for a model: the defaults clipped to its max input, overlap kept at 20%."""
    limit = int(embedder.max_tokens) - int(getattr(embedder, "special_tokens", 2))
    if window > limit:
        window = limit
        overlap = int(window * OVERLAP_RATIO)
    return window, overlap


def _strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def split_units(text: str) -> list[tuple[int, int]]:
    """Sentence spans inside line/paragraph spans (stripped, non-empty), in order (``memory_store.text``)."""
    return sentence_spans(text)


# A WordPiece tokenizer (the bundled MiniLM's) reads a run of more than 100 letters and digits as one [UNK]
# token, so a token count says nothing about the length of such a run (2 MB without a space "is" 1 token).
# Hard splits cut such runs into pieces of at most this many characters, each its own unit.
MAX_WORD_CHARS = 100
_LONG_WORD = long_run_pattern(MAX_WORD_CHARS + 1)


def _split_long_words(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """``text[start:end]`` with every run of more than MAX_WORD_CHARS letters/digits cut into pieces of at
    most MAX_WORD_CHARS characters (each its own span); the text between runs stays whole."""
    out: list[tuple[int, int]] = []
    pos = start
    for m in _LONG_WORD.finditer(text, start, end):
        s, e = _strip_span(text, pos, m.start())
        if s < e:
            out.append((s, e))
        out.extend((k, min(k + MAX_WORD_CHARS, m.end())) for k in range(m.start(), m.end(), MAX_WORD_CHARS))
        pos = m.end()
    s, e = _strip_span(text, pos, end)
    if s < e:
        out.append((s, e))
    return out


def _word_offsets(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in word_pattern("spaced").finditer(text)]


def _hard_split(
    text: str,
    start: int,
    end: int,
    piece: int,
    token_offsets: Callable[[str], Sequence[tuple[int, int]]] | None,
) -> list[tuple[int, int]]:
    """Cut ``text[start:end]`` into spans of about ``piece`` tokens, preferring cuts at word starts."""
    sub = text[start:end]
    offsets = list(token_offsets(sub)) if token_offsets is not None else _word_offsets(sub)
    if not offsets:
        return _split_long_words(text, start, end) or [(start, end)]
    spans: list[tuple[int, int]] = []
    i = 0
    n = len(offsets)
    while i < n:
        j = min(i + piece, n)
        if j < n:
            # back off to a token that begins a word (preceded by whitespace), within the piece
            k = j
            while k > i + 1 and not (offsets[k][0] > 0 and sub[offsets[k][0] - 1].isspace()):
                k -= 1
            if k > i + 1 or (offsets[k][0] > 0 and sub[offsets[k][0] - 1].isspace()):
                j = k
        s = offsets[i][0]
        e = offsets[j - 1][1] if j >= n else offsets[j][0]
        s, e = _strip_span(text, start + s, start + e)
        if s < e:
            spans.extend(_split_long_words(text, s, e))
        i = j
    return spans


def chunk_text(
    text: str,
    count_tokens: Callable[[str], int],
    window: int = DEFAULT_WINDOW,
    overlap: int = DEFAULT_OVERLAP,
    *,
    count_tokens_batch: Callable[[list[str]], list[int]] | None = None,
    token_offsets: Callable[[str], Sequence[tuple[int, int]]] | None = None,
) -> list[Chunk]:
    """Split ``text`` into chunks of at most ``window`` tokens overlapping by at most ``overlap`` tokens.

    ``count_tokens`` counts model tokens (no special tokens); ``count_tokens_batch`` and ``token_offsets``
    (from the tokenizer) make it faster and the hard split of over-long units exact.
    """
    if window <= 0:
        raise ValueError("window must be positive")
    overlap = max(0, min(overlap, window - 1))
    if not text or not text.strip():
        return []

    def counts(texts: list[str]) -> list[int]:
        if count_tokens_batch is not None:
            return list(count_tokens_batch(texts))
        return [count_tokens(t) for t in texts]

    units = split_units(text)
    unit_tokens = counts([text[s:e] for s, e in units])
    piece = overlap if overlap > 0 else window
    long_words = _LONG_WORD.search(text) is not None  # runs a token count cannot measure
    if long_words or any(t > window for t in unit_tokens):
        new_units: list[tuple[int, int]] = []
        for (s, e), t in zip(units, unit_tokens, strict=True):
            if t > window or (long_words and _LONG_WORD.search(text, s, e)):
                new_units.extend(_hard_split(text, s, e, piece, token_offsets))
            else:
                new_units.append((s, e))
        units = new_units
        unit_tokens = counts([text[s:e] for s, e in units])

    chunks: list[Chunk] = []
    i, n = 0, len(units)
    while i < n:
        total, j = 0, i
        while j < n and (j == i or total + unit_tokens[j] <= window):
            total += unit_tokens[j]
            j += 1
        ctext = text[units[i][0] : units[j - 1][1]]
        toks = counts([ctext])[0]
        # the count of joined units can differ slightly from the sum: drop whole units while over
        while toks > window and j - i > 1:
            j -= 1
            ctext = text[units[i][0] : units[j - 1][1]]
            toks = counts([ctext])[0]
        chunks.append(
            Chunk(id=chunk_id(ctext), text=ctext, tokens=toks, start=units[i][0], end=units[j - 1][1])
        )
        if j >= n:
            break
        # next start: smallest i2 in (i, j] with tokens(units[i2:j]) <= overlap, leaving room for unit j
        i2, tail = j, 0
        while i2 - 1 > i and tail + unit_tokens[i2 - 1] <= overlap:
            i2 -= 1
            tail += unit_tokens[i2]
        while i2 < j and tail + unit_tokens[j] > window:
            tail -= unit_tokens[i2]
            i2 += 1
        i = i2
    return chunks


def chunk_with(
    embedder: Any, text: str, window: int | None = None, overlap: int | None = None
) -> list[Chunk]:
    """``chunk_text`` with an ``Embedder``'s tokenizer and its ``window_for`` window."""
    w, o = window_for(embedder)
    return chunk_text(
        text,
        embedder.count_tokens,
        window if window is not None else w,
        overlap if overlap is not None else o,
        count_tokens_batch=embedder.count_tokens_batch,
        token_offsets=embedder.token_offsets,
    )
