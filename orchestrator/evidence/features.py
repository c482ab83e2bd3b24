"""One ``Features`` record per candidate quote: general signals of whether it answers the section's question.

Nothing here decides; ``scorer.py`` turns a record into a probability with weights fitted on dev data. The
signals are deliberately general (no word list or pattern written for one dataset's questions):

- embedding: cosine of the quote to the question (a window's vector is the length-weighted mean of its
  sentences'), of its best, first and later sentences, to the section's topic, of the heading above it and of its
  page's title, the retrieved chunk's cosine and place in the retrieval order; each also relative to the best
  candidate of the section (how far below the best it stands);
- lexical: BM25 over the section's candidates, the share of the question's terms it holds (idf-weighted and
  plain), the share of its own terms the question lacks (what it adds), a restatement signal (holds the
  question's terms and adds little), and the share of the question's terms that no candidate of the section
  holds (the pages never speak of what is asked);
- position: opens its paragraph, its place in the paragraph and in the page, right under a heading, is a heading;
- shape: length, number of sentences, where its best sentence stands (the topic sentence, then the answer);
- answer type: what the question asks (who, when, where, a quantity, why, how, what, yes/no, a statement) and
  whether the quote holds what such a question wants (a name or number the question lacks, a year or date, an
  amount, a causal, instructional or defining construction), and their products;
- reader: the cross-encoder's logit for the candidates it reads (the best by the other features).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import astuple, dataclass, fields
from typing import Any

from memory_store.text import terms

from .queries import ASKS, Question
from .spans import Span

BM25_K1, BM25_B = 1.2, 0.75

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
# General constructions, one list per kind of answer (English function words, not topic words).
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


@dataclass
class Features:
    """The signals of one candidate quote (see the module's docstring); all floats, in a fixed order."""

    # embedding
    cos: float
    cos_max: float
    cos_first: float
    cos_later: float
    cos_rel: float
    cos_max_rel: float
    cos_topic: float
    cos_heading: float
    cos_title: float
    chunk_cos: float
    chunk_rank: float
    section_best: float
    # lexical
    bm25: float
    bm25_log: float
    cover: float
    cover_plain: float
    cover_rel: float
    novelty: float
    restate: float
    question_terms: float
    unmatched: float
    # position
    opener: float
    para_pos: float
    page_pos: float
    after_heading: float
    is_heading: float
    crosses_paragraph: float
    # shape
    log_words: float
    two_sentences: float
    three_sentences: float
    best_first: float
    best_last: float
    # answer type: the quote
    new_number: float
    year: float
    date: float
    amount: float
    percent: float
    new_name: float
    causal: float
    instruct: float
    defines: float
    # answer type: the question, and the products
    asks_who: float
    asks_when: float
    asks_where: float
    asks_quantity: float
    asks_why: float
    asks_how: float
    asks_what: float
    asks_yesno: float
    asks_statement: float
    who_name: float
    where_name: float
    when_date: float
    quantity_number: float
    why_causal: float
    how_instruct: float
    how_causal: float
    what_defines: float
    # the reader (``reader.py``): filled for the candidates it reads (``with_reader``), 0 before
    reader: float = 0.0
    reader_rel: float = 0.0
    reader_why: float = 0.0
    reader_how: float = 0.0

    def row(self) -> list[float]:
        return list(astuple(self))


FEATURES: tuple[str, ...] = tuple(f.name for f in fields(Features))
READER_FEATURES = ("reader", "reader_rel", "reader_why", "reader_how")


def with_reader(rows: Sequence[Features], logits: Sequence[float]) -> None:
    """Fill the reader's features of ``rows`` (the candidates it read) from its ``logits``: the logit, how far
    below the best read candidate it stands, and its products with a why / how question."""
    if not rows:
        return
    best = max(logits)
    for f, z in zip(rows, logits, strict=True):
        f.reader = float(z)
        f.reader_rel = float(z) - best
        f.reader_why = float(z) * f.asks_why
        f.reader_how = float(z) * f.asks_how


@dataclass
class SectionVectors:
    """What the features need from the embedding model: the question's and the topic's vectors, one vector
    per sentence of each chunk (same order as ``Chunk.sentences``) and one per page title (by URL)."""

    question: Any
    topic: Any
    sentences: list[Any]  # per chunk: an array (n_sentences, dim)
    titles: dict[str, Any]


def _idf(n: int, df: int) -> float:
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def bm25_scores(query_terms: set[str], docs: Sequence[list[str]]) -> list[float]:
    """BM25 of a query's terms against each of ``docs`` (term lists), idf over ``docs`` themselves."""
    n = len(docs)
    if not n:
        return []
    avg = sum(len(t) for t in docs) / n or 1.0
    df: Counter[str] = Counter()
    for t in docs:
        df.update(set(t))
    out = []
    for t in docs:
        tf = Counter(t)
        s = 0.0
        for w in query_terms:
            if tf[w]:
                s += _idf(n, df[w]) * tf[w] * (BM25_K1 + 1) / (tf[w] + BM25_K1 * (1 - BM25_B + BM25_B * len(t) / avg))
        out.append(s)
    return out


def _unit(v: Any) -> Any:
    import numpy as np

    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v


def featurize(
    question: Question, spans: Sequence[Span], vectors: SectionVectors, page_pos: dict[str, float]
) -> list[Features]:
    """One ``Features`` per span of a section. ``page_pos``: each chunk id's place in its page (0 = first, 1 =
    last)."""
    import numpy as np

    if not spans:
        return []
    by_chunk = {id(s.chunk): s.chunk for s in spans}
    sent_cos = {cid: vectors.sentences[c.rank] @ vectors.question for cid, c in by_chunk.items()}
    win_vecs = []
    for s in spans:
        mat = vectors.sentences[s.chunk.rank][s.lo : s.hi + 1]
        weights = np.array([max(1, len(t.split())) for t in s.chunk.sentences[s.lo : s.hi + 1]], dtype="float32")
        win_vecs.append(_unit((mat * weights[:, None]).sum(axis=0)))
    win = np.stack(win_vecs)
    cos = win @ vectors.question
    cos_topic = win @ vectors.topic
    span_terms = [terms(s.quote) for s in spans]
    bm = bm25_scores(set(question.terms), span_terms)
    top_bm = max(bm) if bm and max(bm) > 0 else 1.0
    covers = _coverage(question.terms, span_terms)
    seen = set().union(*map(set, span_terms)) if span_terms else set()
    unmatched = len(question.terms - seen) / len(question.terms) if question.terms else 0.0
    sc = [sent_cos[id(s.chunk)][s.lo : s.hi + 1] for s in spans]
    best_cos, best_max = float(cos.max()), max(float(x.max()) for x in sc)
    best_cover = max(c for c, _ in covers)
    out = []
    for i, s in enumerate(spans):
        f = _one(question, s, float(cos[i]), sc[i], vectors, sent_cos)
        cover, plain = covers[i]
        novelty = _novelty(question.terms, span_terms[i])
        f.update(
            cos_rel=float(cos[i]) - best_cos,
            cos_max_rel=float(sc[i].max()) - best_max,
            cos_topic=float(cos_topic[i]),
            section_best=best_cos,
            bm25=bm[i] / top_bm,
            bm25_log=math.log1p(bm[i]),
            cover=cover,
            cover_plain=plain,
            cover_rel=cover - best_cover,
            novelty=novelty,
            restate=cover * (1.0 - novelty),
            question_terms=math.log1p(len(question.terms)),
            unmatched=unmatched,
            page_pos=page_pos.get(s.hit.id, 0.0),
        )
        out.append(Features(**f))
    return out


def _coverage(q: frozenset[str], docs: Sequence[list[str]]) -> list[tuple[float, float]]:
    """(idf-weighted share, plain share) of the question's terms each doc holds; idf over ``docs``."""
    sets = [set(d) for d in docs]
    if not q or not sets:
        return [(0.0, 0.0)] * len(sets)
    weight = {w: _idf(len(sets), sum(w in t for t in sets)) for w in q}
    total = sum(weight.values()) or 1.0
    return [(sum(weight[w] for w in q & t) / total, len(q & t) / len(q)) for t in sets]


def _novelty(q: frozenset[str], span_terms: list[str]) -> float:
    own = set(span_terms)
    return len(own - q) / len(own) if own else 0.0


def _one(
    question: Question,
    s: Span,
    cos: float,
    sc: Any,
    vectors: SectionVectors,
    sent_cos: dict[int, Any],
) -> dict[str, float]:
    chunk = s.chunk
    n = s.n_sentences
    best = int(sc.argmax())
    owner = chunk.owner[s.lo]
    heading_cos = float(sent_cos[id(chunk)][owner]) if owner is not None else 0.0
    title_vec = vectors.titles.get(s.url)
    title_cos = float(title_vec @ vectors.question) if title_vec is not None else 0.0
    text = s.quote
    numbers = {m.strip(".,") for m in _NUMBER.findall(text)} - question.numbers
    names = {w.lower().strip("'’") for w in _CAPITAL.findall(text)} - question.capitals
    signals = {
        "new_number": float(bool(numbers)),
        "year": float(_YEAR.search(text) is not None),
        "date": float(_DATE.search(text) is not None),
        "amount": float(_CURRENCY.search(text) is not None),
        "percent": float(_PERCENT.search(text) is not None),
        "new_name": float(bool(names)),
        "causal": float(_CAUSAL.search(text) is not None),
        "instruct": float(_INSTRUCT.search(text) is not None),
        "defines": float(_DEFINES.search(text) is not None),
    }
    asks = {f"asks_{a}": float(question.asks == a) for a in ASKS}
    products = {
        "who_name": asks["asks_who"] * signals["new_name"],
        "where_name": asks["asks_where"] * signals["new_name"],
        "when_date": asks["asks_when"] * max(signals["year"], signals["date"]),
        "quantity_number": asks["asks_quantity"] * max(signals["new_number"], signals["amount"], signals["percent"]),
        "why_causal": asks["asks_why"] * signals["causal"],
        "how_instruct": asks["asks_how"] * signals["instruct"],
        "how_causal": asks["asks_how"] * signals["causal"],
        "what_defines": asks["asks_what"] * signals["defines"],
    }
    return {
        "cos": cos,
        "cos_max": float(sc.max()),
        "cos_first": float(sc[0]),
        "cos_later": float(sc[1:].max()) if n > 1 else 0.0,
        "cos_heading": heading_cos,
        "cos_title": title_cos,
        "chunk_cos": float(s.hit.score),
        "chunk_rank": math.log1p(chunk.rank),
        "opener": float(chunk.para[s.lo] == 0),
        "para_pos": min(chunk.para[s.lo], 4) / 4.0,
        "after_heading": float(owner is not None and owner == s.lo - 1),
        "is_heading": float(s.is_heading),
        "crosses_paragraph": float(chunk.line[s.hi] != chunk.line[s.lo]),
        "log_words": math.log1p(s.words),
        "two_sentences": float(n == 2),
        "three_sentences": float(n == 3),
        "best_first": float(n > 1 and best == 0),
        "best_last": float(n > 1 and best == n - 1),
        **signals,
        **asks,
        **products,
    }
