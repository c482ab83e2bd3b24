"""Text utilities of brt, used by every package: sentence spans, words and their stems, stop words.

Sentences: the one sentence splitter of brt (chunk snapping, quotes, concept summaries).

Text is first cut at line breaks (extraction puts every block, heading and list item on its own line), then
each line is segmented by a maintained rule-based segmenter that knows abbreviations ("Dr.", "U.S.", "e.g."),
initials ("J. R. R. Tolkien"), decimals ("2.5 s"), quotations and list items; a few rules of brt's own
overrule it where it cuts after a title ("Dr." | "Who") or a month before a day ("Oct." | "5") and keep a
Wikipedia tag ("[citation needed]") with the sentence it follows. The segmenter was chosen by measurement
(bench/segmentation.py, BENCHMARKS.md "Sentence segmentation"): **syntok** (boundary F1 0.994 on 455
hand-checked sentences, about 1 M characters a second); ``sentencex`` (faster, misses boundaries inside
quotations), ``pysbd`` and brt's former regex stay selectable for the benchmark.

Every span is an exact slice ``text[start:end]`` with surrounding whitespace trimmed, so quotes stay verbatim.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

__all__ = [
    "BACKENDS", "DEFAULT_BACKEND", "STOP_WORDS", "collapse", "content_words", "sentence_spans", "sentences",
    "split_lines", "stem", "terms", "words",
]

DEFAULT_BACKEND = "syntok"

_LINE = re.compile(r"[^\n]+")
# A bullet or number that opens a list item: the item is a sentence of its own, even without a full stop.
_LIST_MARKER = re.compile(r"^(?:[-*•–]|\d{1,3}[.)])\s+")
# A Wikipedia-style tag glued after a sentence end ("no more.[citation needed] Peace …") stays with it.
_TRAILING_TAG = re.compile(r"^\[[^\]\n]{1,40}\]")
_TAG_BOUNDARY = re.compile(r"[.!?]\[[^\]\n]{1,40}\]\s+(?=[A-Z\"“])")  # "… more.[vague] All EU …": a cut
# Titles that stand before a name and practically never end a sentence: a segmenter that cuts after one
# ("spoke to Dr." | "Who …", since sentencex breaks before a function word) is overruled.
_TITLE_END = re.compile(
    r"(?:^|[\s(\"“‘])(?:Dr|Mr|Mrs|Ms|Mx|Prof|Rep|Sen|Gov|Gen|Lt|Col|Capt|Cmdr|Sgt|Rev|Hon|Pres|Supt|Fr|Sr|Mme|Mlle)\.$"
)

# A month abbreviation before a day ("Oct." | "5–7, in Gladstone") does not end a sentence either.
_MONTH_END = re.compile(r"(?:^|\s|\()(?:Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept?|Oct|Nov|Dec)\.$")


def _strip(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def split_lines(text: str) -> list[tuple[int, int]]:
    """(start, end) of the non-blank lines of ``text``, whitespace trimmed."""
    out = []
    for m in _LINE.finditer(text):
        s, e = _strip(text, m.start(), m.end())
        if s < e:
            out.append((s, e))
    return out


# -- backends: each maps one line to the start offsets of its sentences after the first --------------------


def _starts_sentencex(line: str) -> list[int]:
    from sentencex import get_sentence_boundaries

    return [b["start_index"] for b in get_sentence_boundaries("en", line)[1:]]


@lru_cache(maxsize=1)
def _pysbd():
    import pysbd

    return pysbd.Segmenter(language="en", clean=False, char_span=True)


def _starts_pysbd(line: str) -> list[int]:
    return [span.start for span in _pysbd().segment(line)[1:]]


def _starts_syntok(line: str) -> list[int]:
    import syntok.segmenter as segmenter

    starts = []
    for paragraph in segmenter.analyze(line):
        for sentence in paragraph:
            if sentence:
                starts.append(sentence[0].offset)
    return starts[1:]


_REGEX_END = re.compile(r"[.!?…][\"')\]”’]*\s+")


def _starts_regex(line: str) -> list[int]:
    """brt's splitter before issue 10: a sentence ends at every . ! ? … followed by a space."""
    return [m.end() for m in _REGEX_END.finditer(line) if m.end() < len(line)]


BACKENDS: dict[str, Callable[[str], list[int]]] = {
    "syntok": _starts_syntok,
    "sentencex": _starts_sentencex,
    "pysbd": _starts_pysbd,
    "regex": _starts_regex,
}


def _line_spans(text: str, start: int, end: int, starts_of: Callable[[str], list[int]]) -> list[tuple[int, int]]:
    line = text[start:end]
    marker = _LIST_MARKER.match(line)
    floor = marker.end() if marker else 0  # "3. Preheat the oven." is one sentence, not "3." and the rest
    starts = [*starts_of(line), *(m.end() for m in _TAG_BOUNDARY.finditer(line))]
    cuts = sorted({0, *(c for c in starts if floor < c < len(line))})
    spans = []
    for a, b in zip(cuts, [*cuts[1:], len(line)], strict=True):
        s, e = _strip(text, start + a, start + b)
        if s < e:
            spans.append((s, e))
    # A tag such as "[citation needed]" that a segmenter cut off the end of a sentence goes back to it.
    merged: list[tuple[int, int]] = []
    for s, e in spans:
        before = text[merged[-1][0] : merged[-1][1]] if merged else ""
        if merged and (_TITLE_END.search(before) or (_MONTH_END.search(before) and text[s].isdigit())):
            merged[-1] = (merged[-1][0], e)
            continue
        if merged and _TRAILING_TAG.match(text[s:e]) and text[merged[-1][1] - 1] in ".!?":
            tag = _TRAILING_TAG.match(text[s:e])
            assert tag is not None
            merged[-1] = (merged[-1][0], s + tag.end())
            s, e = _strip(text, s + tag.end(), e)
            if s >= e:
                continue
        merged.append((s, e))
    return merged


def sentence_spans(text: str, *, backend: str = DEFAULT_BACKEND) -> list[tuple[int, int]]:
    """(start, end) character spans of the sentences of ``text`` in order: every line is one or more sentences
    (a list item or a heading is its own), whitespace trimmed, never empty."""
    if backend == DEFAULT_BACKEND and len(text) <= _CACHED_CHARS:
        return list(_cached_spans(text))
    return _sentence_spans(text, backend)


_CACHED_CHARS = 20_000  # chunks and quotes; whole pages are split once and not kept


@lru_cache(maxsize=4096)
def _cached_spans(text: str) -> tuple[tuple[int, int], ...]:
    return tuple(_sentence_spans(text, DEFAULT_BACKEND))


def _sentence_spans(text: str, backend: str) -> list[tuple[int, int]]:
    try:
        starts_of = BACKENDS[backend]
    except KeyError:
        raise ValueError(f"unknown sentence backend {backend!r} (one of {', '.join(BACKENDS)})") from None
    spans: list[tuple[int, int]] = []
    for start, end in split_lines(text):
        if end - start < 4 or not re.search(r"[.!?…]\S*\s", text[start:end]):
            spans.append((start, end))  # no sentence end inside the line: one span, no segmenter call
            continue
        spans.extend(_line_spans(text, start, end, starts_of))
    return spans


def sentences(text: str, *, backend: str = DEFAULT_BACKEND) -> list[str]:
    """The sentences of ``text`` as strings (see ``sentence_spans``)."""
    return [text[a:b] for a, b in sentence_spans(text, backend=backend)]


def is_list_item(sentence: str) -> bool:
    """Whether a sentence opens with a list bullet or number ("- ", "• ", "3. ", "2) ")."""
    return _LIST_MARKER.match(sentence) is not None


# -- words ----------------------------------------------------------------------------------------------------

# Function words: they carry no topic ("what", "is", "the"); a capitalised one starts no name.
STOP_WORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before being below
    between both but by can cannot could did do does doing down during each either else ever every few for from
    further get gets got had has have having he her here hers him his how i if in into is it its itself just may
    me might more most much must my no nor not now of off on once one only or other our ours out over own per
    same shall she should so some such than that the their theirs them then there these they this those through
    to too under until up upon us very via was we were what when where which while who whom whose why will with
    within without would yet you your yours""".split()
)

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def collapse(text: str) -> str:
    """``text`` with every run of whitespace (newlines too) as one space: how quotes are printed and compared."""
    return " ".join(text.split())


@functools.cache
def _stemmer() -> Any:
    from snowballstemmer.english_stemmer import EnglishStemmer

    return EnglishStemmer()


_DERIVATIONS = ("er", "or", "al")
# "-er" words whose four-letter rest is another word ("former" is not one who forms, "number" not numb)
_ER_KEEP = frozenset(
    "former number center corner master tender temper proper render butter latter bitter matter letter".split()
)


@functools.lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A lower-case word's stem: Snowball English, then an agent or relation noun folded onto its verb or noun
    ("supplier" / "supplying", "inventor" / "invented", "national" / "nation"); a plural ``s`` folded on words
    with digits ("1990s")."""
    if word.isalpha():
        base = _stemmer().stemWord(word)
        for suffix in _DERIVATIONS:
            shortest = 4 if suffix == "er" and base not in _ER_KEEP else 5
            if base.endswith(suffix) and len(base) - len(suffix) >= shortest:
                return base[: -len(suffix)]
        return base
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def words(text: str) -> list[str]:
    """Lower-cased words of ``text``, stop words included, in order."""
    return _WORD.findall(text.lower())


def content_words(text: str) -> list[str]:
    """Lower-cased words of ``text`` that are not stop words, in order."""
    return [w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS]


def terms(text: str) -> list[str]:
    """The stems of ``text``'s content words, in order ("prices" and "price", "founded" and "found" match)."""
    return [stem(w) for w in content_words(text)]
