"""Text utilities of brt, used by every package: sentence spans, headings and list items, words and their stems,
plurals, stop words, and the calendar (month and weekday names).

Sentences: the one sentence splitter of brt (chunk snapping, quotes, concept summaries).

Text is first cut at line breaks (extraction puts every block, heading and list item on its own line), then
each line is segmented by a maintained rule-based segmenter that knows abbreviations ("Dr.", "U.S.", "e.g."),
initials ("J. R. R. Tolkien"), decimals ("2.5 s"), quotations and list items; a few rules of brt's own
overrule it where it cuts after a title ("Dr." | "Who") or a month before a day ("Oct." | "5") and keep a
Wikipedia tag ("[citation needed]") with the sentence it follows. The segmenter was chosen by measurement
(bench/segmentation.py; docs/benchmarks.md, "Sentence segmentation"): **syntok** (boundary F1 0.994 on 455
hand-checked sentences, about 1 M characters a second); ``sentencex`` (faster, misses boundaries inside
quotations), ``pysbd`` and brt's former regex stay selectable for the benchmark.

Every span is an exact slice ``text[start:end]`` with surrounding whitespace trimmed, so quotes stay verbatim.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any, Literal, TypeVar

_T = TypeVar("_T")

__all__ = [
    "BACKENDS", "CALENDAR_WORDS", "CONTEXT_STOP_WORDS", "CRITERION_STOP_WORDS", "DEFAULT_BACKEND",
    "HEADING_MAX_WORDS", "LIST_MARKER", "MONTHS", "MONTH_NAMES", "SLUG_STOP_WORDS", "STOP_WORDS",
    "NUMBER_SHAPES", "TOPIC_STOP_WORDS", "WEEKDAYS", "WORD_SHAPES", "collapse", "content_words", "is_heading",
    "is_list_item", "long_run_pattern", "month_number", "number_pattern", "number_value", "sentence_spans",
    "sentence_windows", "sentences", "singular", "split_lines", "stem", "terms", "tokens", "word_pattern", "words",
]

DEFAULT_BACKEND = "syntok"

_LINE = re.compile(r"[^\n]+")
# A bullet or number that opens a list item: the item is a sentence of its own, even without a full stop.
LIST_MARKER = re.compile(r"^(?:[-*•–]|\d{1,3}[.)])\s+")
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
    """The plain rule, kept for comparison: a sentence ends at every . ! ? … followed by a space."""
    return [m.end() for m in _REGEX_END.finditer(line) if m.end() < len(line)]


BACKENDS: dict[str, Callable[[str], list[int]]] = {
    "syntok": _starts_syntok,
    "sentencex": _starts_sentencex,
    "pysbd": _starts_pysbd,
    "regex": _starts_regex,
}


def _line_spans(text: str, start: int, end: int, starts_of: Callable[[str], list[int]]) -> list[tuple[int, int]]:
    line = text[start:end]
    marker = LIST_MARKER.match(line)
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


_END_MARK = re.compile(r"[.!?…]")
_SPACE = re.compile(r"\s")


def _may_end_inside(text: str, start: int, end: int) -> bool:
    """Whether a sentence end (``. ! ? …``) stands before a space in ``text[start:end]``; in linear time
    (the pattern ``[.!?…]``, non-spaces, a space, searched so, is quadratic on a long run of ``!``)."""
    first = _END_MARK.search(text, start, end)
    return first is not None and _SPACE.search(text, first.end(), end) is not None


def _sentence_spans(text: str, backend: str) -> list[tuple[int, int]]:
    try:
        starts_of = BACKENDS[backend]
    except KeyError:
        raise ValueError(f"unknown sentence backend {backend!r} (one of {', '.join(BACKENDS)})") from None
    spans: list[tuple[int, int]] = []
    for start, end in split_lines(text):
        if end - start < 4 or not _may_end_inside(text, start, end):
            spans.append((start, end))  # no sentence end inside the line: one span, no segmenter call
            continue
        spans.extend(_line_spans(text, start, end, starts_of))
    return spans


def sentences(text: str, *, backend: str = DEFAULT_BACKEND) -> list[str]:
    """The sentences of ``text`` as strings (see ``sentence_spans``)."""
    return [text[a:b] for a, b in sentence_spans(text, backend=backend)]


def sentence_windows(count: int, size: int, take: Callable[[int, int], _T | None]) -> list[_T]:
    """brt's one passage windower: every run of 1 to ``size`` consecutive sentences ``lo..hi`` (inclusive) of
    ``count``, by ``lo`` then ``hi``; ``take(lo, hi)`` makes the item of a window, or None, which ends the
    longer windows from ``lo`` (too many words, a heading inside)."""
    out: list[_T] = []
    for lo in range(count):
        for hi in range(lo, min(count, lo + size)):
            item = take(lo, hi)
            if item is None:
                break
            out.append(item)
    return out


def is_list_item(sentence: str) -> bool:
    """Whether a sentence opens with a list bullet or number ("- ", "• ", "3. ", "2) ")."""
    return LIST_MARKER.match(sentence) is not None


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

# -- word and number shapes: every word or number regex of brt ----------------------------------------------
# Each use keeps the shape it was written and measured with (a change of shape changes verdicts and fitted
# features); they live here so that there is one list, and ``tests/unit/test_architecture.py`` forbids a word or
# number regex anywhere else.

WordShape = Literal["word", "identifier", "contraction", "alpha", "letters", "latin", "apostrophe", "term", "query",
                    "name", "label", "capitalised", "proper", "proper_apostrophe", "ascii", "spaced"]
#: A word as each use reads it.
WORD_SHAPES: dict[str, str] = {
    # letters and digits: ``words``/``content_words``/``terms``, the chunker's long runs
    "word": r"[^\W_]+",
    # letters, digits and the underscore: a lead's n-grams against the page (``harvest/lead.py``)
    "identifier": r"\w+",
    # a word with its contraction ("don't"): the support model's alignment, a claim's word count (audit)
    "contraction": r"[^\W_]+(?:['’][^\W_]+)?",
    # letters only: a quote's words that a dropped negating prefix may stand before (``audit/quotes``)
    "alpha": r"[^\W\d_]+",
    # letters only, hyphen and apostrophe compounds ("state-of-the-art"): prose in a script (``render_need``)
    "letters": r"[^\W\d_]+(?:[-'’][^\W\d_]+)*",
    # an ASCII word not glued to a word character: the context words around a quantity (``quantities``)
    "latin": r"(?<![\w])[A-Za-z][A-Za-z'’-]*",
    # ASCII letters and apostrophes: the words of a heading that may lean on its page (``concept_index.build``)
    "apostrophe": r"[A-Za-z']+",
    # ASCII letters and digits with ``/ + ' -`` inside ("HTTP/2", "C++"): a criterion's keywords (``acceptance``)
    "term": r"[A-Za-z0-9][A-Za-z0-9/+'’-]*",
    # a word with ``. + -`` inside ("node.js", "c++"): the words a signature query adds (``evidence/queries``)
    "query": r"[\w][\w.+-]*",
    # a name with ``/ + . -`` inside that neither starts nor ends with one ("HTTP/3"): ``relevance``
    "name": r"[^\W_][\w/+.-]*[^\W_]|[^\W_]",
    # an ASCII word of a concept label, apostrophes and hyphens inside: ``concept_index.text``
    "label": r"[A-Za-z][A-Za-z0-9'’\-]*[A-Za-z0-9]|[A-Za-z]",
    # a capitalised word, digits, apostrophes and hyphens after it: names a question mentions (``queries``)
    "capitalised": r"\b[A-Z][\w'’-]*",
    # a capitalised ASCII word of two letters or more: names a claim states (``audit/support``)
    "proper": r"\b[A-Z][a-zA-Z]+\b",
    # a capitalised name with an apostrophe inside ("O'Brien", "D'Arcy"), not a contraction or possessive
    # ("It's", "Don't", "We'll"): one name to the support model (``audit/support``)
    "proper_apostrophe": r"\b[A-Z][^\W\d_]*['’](?!(?:s|t|d|m|ll|re|ve)\b)[^\W\d_]+",
    # ASCII letters and digits: a charter id made from a question (``audit/starter``)
    "ascii": r"[A-Za-z0-9]+",
    # anything between spaces, as ``str.split`` cuts: the chunker's word offsets
    "spaced": r"\S+",
}

NumberShape = Literal["digits", "run", "figure", "quantity", "mention"]
#: A number as each use reads it.
NUMBER_SHAPES: dict[str, str] = {
    # digits alone: block numbers ("#3, #7") of an agreement line (``audit/check``)
    "digits": r"\d+",
    # digits with their separators, compared after ``strip(".,")``: a question's numbers, repeated facts
    "run": r"\d[\d,.]*",
    # a number not inside a word, thousands grouped or not: the numbers a claim and a page state (``support``)
    "figure": r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\d)|(?<![\w.,])\d+(?:\.\d+)?(?![\d])",
    # a stated quantity: not part of a code, a fraction or a list of digits ("COVID-19", "1/2", "3.4.5")
    "quantity": r"(?<![\w.,/])(?<![A-Za-z]-)(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\w]*[,.]?\d)",
    # any digit or number word: whether an elided part of a quote held a number (``audit/quotes``)
    "mention": r"\d|\b(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty"
    r"|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand|million|billion|half|twice|double|triple)\b",
}


@functools.cache
def word_pattern(shape: WordShape = "word") -> re.Pattern[str]:
    """The compiled pattern of a word shape (``WORD_SHAPES``)."""
    return re.compile(WORD_SHAPES[shape])


@functools.cache
def number_pattern(shape: NumberShape, *, ignore_case: bool = False) -> re.Pattern[str]:
    """The compiled pattern of a number shape (``NUMBER_SHAPES``); ``ignore_case`` for number words."""
    return re.compile(NUMBER_SHAPES[shape], re.IGNORECASE if ignore_case else 0)


@functools.cache
def long_run_pattern(min_chars: int) -> re.Pattern[str]:
    """Runs of ``min_chars`` or more letters and digits (a "word" of that length)."""
    return re.compile(WORD_SHAPES["word"][:-1] + "{" + str(min_chars) + ",}")


def tokens(text: str, shape: WordShape = "word") -> list[str]:
    """The words of ``text`` in order, as written, read with ``shape``."""
    return word_pattern(shape).findall(text)


def number_value(number: str) -> float:
    """The value of a number as written, thousands separators dropped ("1,500.5" -> 1500.5)."""
    return float(number.replace(",", ""))


_WORD = word_pattern("word")


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


def singular(word: str) -> str:
    """A word lower-cased, stripped of quotes and hyphens at its ends, with a plural folded ("cases" -> "case",
    "cities" -> "city"; "glass" stays)."""
    w = word.lower().strip("'’-")
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        return w[:-1]
    return w


# -- headings -------------------------------------------------------------------------------------------------

HEADING_MAX_WORDS = 12
_TRAILING_REFS = re.compile(r"(?:\s*\[[^\[\]]{1,40}\])+$")  # footnote / citation markers


def is_heading(line: str) -> bool:
    """brt's one heading rule. Extraction keeps each heading of a page on a line of its own; such a line is
    short (at most 12 words) and does not end like a sentence or a clause (``. ! ? … : ;`` or a closing quote,
    also before a closing bracket or quote and before footnote markers: ``solidarity.[4]``, ``'over.'``).
    List items are prose. Synthesis (quotes never take a heading) and the concept index (headings become
    concepts) both use this rule."""
    if LIST_MARKER.match(line):
        return False
    line = _TRAILING_REFS.sub("", line.strip())
    return len(line.split()) <= HEADING_MAX_WORDS and not re.search(r"[.!?…:;\"”]$|[.!?…][’'»)]+$", line)


# -- the calendar -----------------------------------------------------------------------------------------------

MONTH_NAMES = (
    "january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november",
    "december",
)
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
#: A month's number by its name or abbreviation ("sept" and "sep" both), lower case.
MONTHS: dict[str, int] = {
    **{name: i for i, name in enumerate(MONTH_NAMES, 1)},
    **{name[:3]: i for i, name in enumerate(MONTH_NAMES, 1)},
    "sept": 9,
}


def month_number(name: str) -> int:
    """A month's number from its name or abbreviation, any case, a final dot and anything past the first three
    letters ignored ("Sept.", "March", "mar"); 0 when it names no month."""
    return MONTHS.get(name.lower().rstrip(".")[:3], 0)


#: Words of dates and spans of time that name no topic.
CALENDAR_WORDS = frozenset(
    {*MONTH_NAMES, *WEEKDAYS, "today", "yesterday", "tomorrow", "day", "days", "week", "weeks", "month", "months"}
)


# -- stop words for particular uses -------------------------------------------------------------------------------
# Each use drops a different set of words, measured or written for it; they live here so that a reader finds
# every list of brt in one place.

#: Words that name no topic of a page (the concept index's key phrases, labels and summaries): function words,
#: contractions and their stray pieces, calendar words and the filler of news and web copy.
TOPIC_STOP_WORDS = CALENDAR_WORDS | frozenset(
    """a about above after again against all also am an and any are aren't as at be because been before being
    below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during
    each few for from further had hadn't has hasn't have haven't having he her here hers herself him himself his
    how i if in into is isn't it it's its itself just let's me more most mustn't my myself no nor not now of off
    on once only or other ought our ours ourselves out over own per same she should shouldn't so some such than
    that that's the their theirs them themselves then there there's these they this those through to too under
    until up upon very via was wasn't we were weren't what when where which while who whom why will with won't
    would wouldn't you your yours yourself yourselves one two three new said says say like get got use used
    using may might must shall us many much also well even still yet however though although since within without
    according among around across back way ways make makes made first last next year years time times people
    would've could've mr mrs ms dr inc ltd co etc re ve ll s t d m vs via amp nbsp""".split()
)

#: Words around a stated quantity that say nothing about what it measures (conflict detection's context).
CONTEXT_STOP_WORDS = frozenset(
    """a an and are as at be been being but by can could did do does for from had has have he her his i if in
    into is it its of on or our she so than that the their them then there these they this to was we were
    which while who will with would you your also just about it's said says say according""".split()
)

#: Words of an acceptance criterion that are not what it asks for: function words, and words about citing,
#: quoting and reporting themselves ("cited", "verbatim", "source", "section").
CRITERION_STOP_WORDS = frozenset(
    """a about above after all also an and any are as at be been being both but by can could did do does each
    either every for from has have how if in into is it its least more most must no not of on one or other
    our out over own per same should so some such than that the their them then there these they this those
    to too under up very was we were what when where which while who whom why will with would yet you your
    cite cited citation citations quote quoted quotes quotation verbatim source sources page pages evidence
    report reported reports given shown stated states mention mentioned named name concrete least each
    answer answered section sections block blocks criterion document documents""".split()
)

#: The few function words left out of a charter id or section title made from a question ("not", "more" and
#: the like stay: they change what is asked).
SLUG_STOP_WORDS = frozenset(
    """a an the of to in on for and or is are was were be do does did how what which why when where who whom
    whose can could should would must will i we you they it its my our your their this that these those with
    from by at as about into than then so if""".split()
)
