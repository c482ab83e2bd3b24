"""Answer-bearing quotes (issue 10): which sentences of the retrieved chunks answer a section's question.

Every sentence of the candidate chunks gets a *rank score* that fuses three kinds of evidence:

    rank = cosine(sentence, question)                      the embedding model
         + W_LEXICAL · bm25(sentence) / max bm25            exact terms of the question ("retail price", a name)
         + W_TYPE    · [carries the expected answer type]   answer_types: currency, date, number, person, place

W_LEXICAL is W_LEXICAL_QUESTION for a section worded as a question (``answer_types.is_question``): the sentence
that answers a question repeats its rare terms (the name, the thing measured) where the answer to a claim is
more often a paraphrase.

BM25 (k1 = 1.2, b = 0.75) is computed over the candidates' sentences (lower-cased words less stop words, each
reduced to its Snowball English stem: "salaries" and "salary", "ranged" and "range" match; an agent or relation
noun loses its "-er" / "-or" / "-al" where five letters stay: "suppliers" and "supplying", "inventor" and
"invented"), so its idf says which of the question's words are rare among the candidates. In each chunk the quote
starts at its best sentence and **grows into the neighbouring sentence** (next first) when that one carries the
expected type and the best one does not, then into its better-ranked neighbours while it is shorter than
MIN_QUOTE_WORDS (the answer often stands beside the sentence that restates the question); a quote that grew so
offers its **core** (the sentences before that growth) as a quote of its own, since neighbours that say little of
the question can pull a sentence that answers it under the bar (``select_evidence`` holds a core to the question's
terms and drops it where the grown quote is a block). A heading or headline line is quoted (marked ``heading``)
only when it carries the expected type and out-ranks the chunk's prose. For a question, a chunk offers a **second
quote** when another of its passages, apart from the first quote, ranks within SECOND_QUOTE_MARGIN of it: the
answer may stand three sentences from the one that restates the question; the two are separate blocks of one page
(``select_evidence`` holds each to the section's bars). Sentence vectors are cached by text (``SentenceVectors``)
so one synthesis never embeds a sentence twice, and embedded in one batch.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from concept_index.text import LIST_MARKER, is_heading
from memory_store.text import collapse
from memory_store.text import terms as _terms

from .answer_types import AnswerType, carries, expected_type, is_question

if TYPE_CHECKING:
    from memory_store import Hit

W_LEXICAL = 0.15
# Exact terms weigh more when the section asks a question: SQuAD answer@1 0.762 -> 0.781 and precision +8 points
# (0.25: 0.772), while 0.30 for claims lost SciFact p@1 (BENCHMARKS.md, "Evidence that answers").
W_LEXICAL_QUESTION = 0.35
W_TYPE = 0.10
# A quote's longest, for a question: two long news sentences (30-40 words each) must fit, or a sentence that
# restates the question never grows into the one beside it that answers ("... contacted by the office of the NYAG,
# Letitia James." before "We received an inquiry from the office of the New York State Attorney General ...").
# 80 against 60: news answer@k 0.897 -> 0.936, SQuAD held out 0.915 -> 0.923, 47 -> 53 words a quote on average;
# 70 lost SQuAD held-out answers, 90 and 100 quote more still at more words. A claim's quote keeps 60: the
# sentence that states a claim is its evidence, and 80 cost SciFact p@1 2 of 300 (BENCHMARKS.md "Stop 31").
MAX_QUOTE_WORDS = 80
MAX_CLAIM_QUOTE_WORDS = 60
# A quote shorter than this grows into its better-ranked neighbour: the sentence that matches the question best
# often restates its subject while the next (or previous) one holds the answer. 40 words (about two sentences)
# measured against 15, 25 and 30 on SQuAD and SciFact (BENCHMARKS.md, "Evidence that answers").
MIN_QUOTE_WORDS = 40
# A chunk's second quote (sections worded as a question only) must rank within this of its first: SQuAD
# answer@k 0.846 -> 0.877 for 1.84 -> 2.11 blocks per question in process, 0.824 -> 0.874 through the CLI
# (0.3: 0.886, 2.24 blocks; 0.4: 0.889, 2.29).
# A claim is matched by the passage that states it: on SciFact second quotes raised blocks per claim 2.07 -> 2.45
# and lost one supported claim (BENCHMARKS.md).
SECOND_QUOTE_MARGIN = 0.20
HEADING_MARGIN = 0.05  # a heading this much above every sentence quotes the prose under it


def prose_under_top_heading(
    prose: Sequence[int], owner: Sequence[int | None], heading: Sequence[bool], best: int, score: Any
) -> tuple[int, int | None]:
    """A heading that out-ranks the best sentence ``best`` by HEADING_MARGIN ("How to minimise layout shift"
    above a list of fixes that never repeat those words) points at the prose under it: (its best sentence, the
    heading); otherwise (``best``, None). ``owner[i]`` is the heading sentence ``i`` stands under."""
    under = {h: [i for i in prose if owner[i] == h] for h in range(len(heading)) if heading[h]}
    titled = [h for h, body in under.items() if body]
    if titled:
        top = max(titled, key=score)
        if score(top) > score(best) + HEADING_MARGIN:
            return max(under[top], key=score), top
    return best, None
BM25_K1, BM25_B = 1.2, 0.75


def terms(text: str) -> list[str]:
    """Lower-cased content words, each reduced to its stem (``memory_store.text.terms``)."""
    return _terms(text)


def _idf(n: int, df: int) -> float:
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def bm25_scores(query: str, docs: Sequence[str]) -> list[float]:
    """BM25 of ``query`` against each of ``docs``, idf over ``docs`` themselves."""
    toks = [terms(d) for d in docs]
    n = len(toks)
    if not n:
        return []
    avg = sum(len(t) for t in toks) / n or 1.0
    df: Counter[str] = Counter()
    for t in toks:
        df.update(set(t))
    q = set(terms(query))
    out = []
    for t in toks:
        tf = Counter(t)
        s = 0.0
        for w in q:
            if tf[w]:
                s += _idf(n, df[w]) * tf[w] * (BM25_K1 + 1) / (tf[w] + BM25_K1 * (1 - BM25_B + BM25_B * len(t) / avg))
        out.append(s)
    return out


def term_coverage(query: str, docs: Sequence[str]) -> list[float]:
    """The share of ``query``'s term weight each of ``docs`` holds (0 to 1): the idf (over ``docs``) of the
    query's terms it contains over the idf of all of them. A rare term of the query (a name, "State Route 168")
    weighs more than a word every candidate shares."""
    toks = [set(terms(d)) for d in docs]
    q = set(terms(query))
    if not toks or not q:
        return [0.0] * len(toks)
    weight = {w: _idf(len(toks), sum(w in t for t in toks)) for w in q}
    total = sum(weight.values())
    return [sum(weight[w] for w in q & t) / total for t in toks]


class SentenceVectors:
    """Sentence embeddings cached by text for the life of one synthesis; missing ones are embedded in one batch."""

    def __init__(self, embedder: Any, limit: int = 200_000):
        self.embedder = embedder
        self.limit = limit
        self._vecs: dict[str, Any] = {}

    def __call__(self, texts: Sequence[str]) -> Any:
        import numpy as np

        missing = list(dict.fromkeys(t for t in texts if t not in self._vecs))
        if missing:
            if len(self._vecs) + len(missing) > self.limit:
                self._vecs.clear()
            for t, v in zip(missing, self.embedder.embed_documents(missing), strict=True):
                self._vecs[t] = v
        if not texts:
            return np.zeros((0, 1), dtype="float32")
        return np.stack([self._vecs[t] for t in texts])


@dataclass
class Quote:
    """A quote chosen in one chunk: verbatim text, the heading it stands under, and how it was chosen."""

    quote: str
    heading: str | None = None  # the heading line above it in the chunk (context for scoring)
    by_heading: bool = False
    is_heading: bool = False  # the quote is itself a heading/headline that states the answer
    rank: float = 0.0  # best rank score among its sentences
    carries_type: bool = False
    sentences: tuple[int, int] = (0, -1)  # the chunk's first and last sentence in the quote (spans' indices)
    core: Quote | None = None  # the quote before it grew to MIN_QUOTE_WORDS (None when it did not grow)
    is_core: bool = False  # this quote is another quote's core, offered beside it (``quote_hits``)

    @property
    def in_context(self) -> str:
        return f"{self.heading}: {self.quote}" if self.heading and not self.is_heading else self.quote



def choose_span(
    text: str,
    spans: list[tuple[int, int]],
    rank: list[float],
    *,
    typed: list[bool],
    want_type: bool = False,
    barred: range = range(0),
    focus: frozenset[str] = frozenset(),
    max_words: int = MAX_QUOTE_WORDS,
) -> Quote:
    """The quote of one chunk: its best-ranked prose sentence, grown into a neighbour that carries the expected
    type when the best one does not, and with its better-ranked neighbours while the quote is under
    MIN_QUOTE_WORDS words; never across a heading or from one list item into the next; at most ``max_words``
    words (a longer one keeps the ``max_words`` words that hold most of the ``focus`` terms, the question's:
    the answer of a long sentence may stand at its end). A heading is quoted itself only when it carries the
    expected type and out-ranks every sentence; a heading that out-ranks every sentence by HEADING_MARGIN
    otherwise points at the prose under it (the quote then ranks as its heading). Sentences in ``barred``
    (another quote's) are left out."""
    if not spans:
        words = text.split()
        return Quote(" ".join(words[:max_words]) + (" …" if len(words) > max_words else ""))
    # a short line right after a colon is what the colon introduces (a list of dates, of names), not a heading
    heading = [
        is_heading(text[a:b]) and not (i > 0 and text[spans[i - 1][0] : spans[i - 1][1]].rstrip().endswith(":"))
        for i, (a, b) in enumerate(spans)
    ]
    item = [bool(LIST_MARKER.match(text[a:b])) for a, b in spans]
    owner: list[int | None] = []
    current: int | None = None
    for i, h in enumerate(heading):
        owner.append(current)
        if h:
            current = i
    free = [i for i in range(len(spans)) if i not in barred]
    prose = [i for i in free if not heading[i]]
    best = max(prose or free, key=lambda i: rank[i])
    titled = [i for i in free if heading[i] and typed[i]]
    if want_type and titled:
        top = max(titled, key=lambda i: rank[i])
        if not prose or rank[top] > rank[best]:
            h_text = collapse(text[spans[top][0] : spans[top][1]])
            return Quote(h_text, None, False, True, rank[top], True, (top, top))
    by_heading, heading_rank = False, None
    if prose:
        best, top_h = prose_under_top_heading(prose, owner, heading, best, lambda i: rank[i])
        if top_h is not None:
            by_heading, heading_rank = True, rank[top_h]
    lo = hi = best

    def words(a: int, b: int) -> int:
        return len(text[spans[a][0] : spans[b][1]].split())

    def joinable(j: int, into_next: bool) -> bool:
        if heading[j] or j in barred:
            return False
        return not item[j] if into_next else not item[lo]

    has_type = typed[best]
    if want_type and not has_type:
        for j, nxt in ((hi + 1, True), (lo - 1, False)):
            if 0 <= j < len(spans) and typed[j] and joinable(j, nxt):
                a, b = (lo, j) if nxt else (j, hi)
                if words(a, b) <= max_words:
                    lo, hi, has_type = a, b, True
                    break
    # a sentence that ends in a colon introduces what follows it ("The tour's dates:", then the list): the
    # quote holds the first of it, whatever the ranks
    while (
        text[spans[hi][0] : spans[hi][1]].rstrip().endswith(":")
        and hi + 1 < len(spans)
        and hi + 1 not in barred
        and words(lo, hi + 1) <= max_words
    ):
        hi += 1
        has_type = has_type or typed[hi]
    core_span = (lo, hi)  # before it grows to MIN_QUOTE_WORDS
    while words(lo, hi) < MIN_QUOTE_WORDS:
        options = []
        if lo > 0 and joinable(lo - 1, False):
            options.append((rank[lo - 1], lo - 1, hi))
        if hi < len(spans) - 1 and joinable(hi + 1, True):
            options.append((rank[hi + 1], lo, hi + 1))
        options = [o for o in options if words(o[1], o[2]) <= max_words]
        if not options:
            break
        _, lo, hi = max(options)

    def quote_of(lo: int, hi: int) -> Quote:
        start = spans[lo][0]
        marker = LIST_MARKER.match(text[start : spans[lo][1]])
        if marker:
            start += marker.end()
        quote, cut_head = _window(collapse(text[start : spans[hi][1]]), focus, max_words)
        if cut_head or (lo > 0 and not (text[start].isupper() or text[start].isdigit() or text[start] in _OPENERS)):
            quote = "… " + quote
        title = owner[lo]
        context = collapse(text[spans[title][0] : spans[title][1]]) if title is not None else None
        best_rank = max(rank[lo : hi + 1])
        if heading_rank is not None:
            best_rank = max(best_rank, heading_rank)
        return Quote(quote, context, by_heading, False, best_rank, has_type or any(typed[lo : hi + 1]), (lo, hi))

    grown = quote_of(lo, hi)
    if (lo, hi) != core_span:
        grown.core = replace(quote_of(*core_span), is_core=True)
    return grown


_OPENERS = "\"“‘'([$€£"


def _window(quote: str, focus: frozenset[str], max_words: int) -> tuple[str, bool]:
    """``quote`` cut to ``max_words`` words ("…" where cut), and whether its head was cut: the window is
    centred on the shortest run of words that holds the most distinct ``focus`` terms (the question's: the
    answer stands beside them), the head when it holds none."""
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


def second_span(
    text: str,
    spans: list[tuple[int, int]],
    rank: list[float],
    *,
    typed: list[bool],
    want_type: bool,
    first: Quote,
    focus: frozenset[str] = frozenset(),
    max_words: int = MAX_QUOTE_WORDS,
) -> Quote | None:
    """The chunk's second quote: chosen as ``choose_span`` chooses, among the sentences outside ``first`` and
    never growing into it, when the best of them ranks within SECOND_QUOTE_MARGIN of ``first``; else None."""
    barred = range(first.sentences[0], first.sentences[1] + 1)
    rest = [i for i in range(len(spans)) if i not in barred]
    if not barred or not rest or max(rank[i] for i in rest) < first.rank - SECOND_QUOTE_MARGIN:
        return None
    return choose_span(
        text, spans, rank, typed=typed, want_type=want_type, barred=barred, focus=focus, max_words=max_words
    )


def quote_hits(
    question: str,
    hits: Sequence[Hit],
    vectors: SentenceVectors,
    qvec: Any,
    *,
    split: Any,
) -> list[list[tuple[Quote, float]]]:
    """Each hit's quotes for ``question`` (its best, then for a question a second one when ``second_span`` finds
    one; each followed by its core when it grew, ``Quote.core``), each with its score (the cosine of the quote,
    read under its heading, to the question). ``split`` gives a text's sentence spans."""
    kind: AnswerType | None = expected_type(question)
    asks = is_question(question)
    w_lexical = W_LEXICAL_QUESTION if asks else W_LEXICAL
    limit = MAX_QUOTE_WORDS if asks else MAX_CLAIM_QUOTE_WORDS
    all_spans = [split(h.text) for h in hits]
    flat = [h.text[a:b] for h, spans in zip(hits, all_spans, strict=True) for a, b in spans]
    if not flat:
        return [[] for _ in hits]
    cos = (vectors(flat) @ qvec).tolist()
    lex = bm25_scores(question, flat)
    top = max(lex) if lex and max(lex) > 0 else 1.0
    typed = [carries(t, kind, question) for t in flat]
    focus = frozenset(terms(question))
    rank = [c + w_lexical * b / top + (W_TYPE if ty else 0.0) for c, b, ty in zip(cos, lex, typed, strict=True)]
    per_hit: list[list[Quote]] = []
    pos = 0
    for h, spans in zip(hits, all_spans, strict=True):
        end = pos + len(spans)
        args = (h.text, spans, rank[pos:end])
        first = choose_span(*args, typed=typed[pos:end], want_type=kind is not None, focus=focus, max_words=limit)
        second = (
            second_span(
                *args, typed=typed[pos:end], want_type=kind is not None, first=first, focus=focus, max_words=limit
            )
            if asks
            else None
        )
        quotes = [first] if second is None else [first, second]
        per_hit.append([offered for q in quotes for offered in (q, q.core) if offered is not None])
        pos = end
    scores = iter((vectors([q.in_context for qs in per_hit for q in qs]) @ qvec).tolist())
    return [[(q, next(scores)) for q in qs] for qs in per_hit]


# -- one block per fact -------------------------------------------------------------------------------------

_NUMBERS = re.compile(r"\d[\d,.]*")


def same_facts(a: str, b: str, *, vec_cosine: float | None = None) -> bool:
    """Whether quote ``a`` repeats the facts of an earlier quote ``b``: 80% or more of ``a``'s content words
    are in ``b``, at least 4 words in each (or their embeddings' cosine is 0.92 or more), and they hold the same
    numbers. Directional: a quote that says more than ``b`` (``b``'s sentence and the one after it, which holds
    the answer) does not repeat it, while a shorter quote inside ``b`` does."""
    if {n.strip(".,") for n in _NUMBERS.findall(a)} != {n.strip(".,") for n in _NUMBERS.findall(b)}:
        return False
    if collapse(a).lower() == collapse(b).lower():
        return True
    ta, tb = set(terms(a)), set(terms(b))
    if min(len(ta), len(tb)) >= 4 and len(ta & tb) / len(ta) >= 0.8:
        return True
    return vec_cosine is not None and vec_cosine >= 0.92
