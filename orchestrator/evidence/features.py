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
- reader: the cross-encoder's logit for the candidates it reads (the best by the other features), where 0 is its
  "none of these", and how far below the section's best read candidate it stands.

A group stays here only while cross-validation shows that it adds (``bench/fit_evidence_scorer.py``); the groups
that did not (a quote's shape, and the answer type a question asks for against what the quote holds) are kept as
candidate groups in ``bench/_candidate_features.py``, where a refit can try them again.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import astuple, dataclass, fields
from typing import Any

from memory_store.text import terms

from .queries import Question
from .spans import Span

BM25_K1, BM25_B = 1.2, 0.75


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
    # the reader (``reader.py``): filled for the candidates it reads (``with_reader``), 0 before
    reader: float = 0.0
    reader_rel: float = 0.0

    def row(self) -> list[float]:
        return list(astuple(self))


FEATURES: tuple[str, ...] = tuple(f.name for f in fields(Features))
READER_FEATURES = ("reader", "reader_rel")


def with_reader(rows: Sequence[Features], logits: Sequence[float]) -> None:
    """Fill the reader's features of ``rows`` (the candidates it read) from its ``logits``: the logit and how far
    below the best read candidate it stands."""
    if not rows:
        return
    best = max(logits)
    for f, z in zip(rows, logits, strict=True):
        f.reader = float(z)
        f.reader_rel = float(z) - best


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
    owner = chunk.owner[s.lo]
    heading_cos = float(sent_cos[id(chunk)][owner]) if owner is not None else 0.0
    title_vec = vectors.titles.get(s.url)
    title_cos = float(title_vec @ vectors.question) if title_vec is not None else 0.0
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
    }
