"""One section's evidence: retrieve chunks for its signature queries, cut them into candidate quotes, compute each
quote's features, score them, select the blocks (or a Gap)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memory_store.embeddings import TextVectors

from .features import Features, SectionVectors, featurize, with_reader
from .queries import QueryGenerator, analyse, signature_queries, topic_phrase
from .results import EvidenceBlock, Gap, SectionResult, Source
from .scorer import Scorer, evidence_threshold, load_scorer
from .select import Scored, select
from .spans import Chunk, Span, candidate_spans

if TYPE_CHECKING:
    from memory_store import Hit, Memory

    from ..charter import Retrieval, Section

log = logging.getLogger(__name__)

#: Chunks retrieved per section: this many times its ``k`` blocks (at least MIN_CHUNKS), so that the chunk
#: holding the answering sentence is among them even when its whole text is further from the question.
CHUNKS_PER_BLOCK = 2
MIN_CHUNKS = 10
#: Candidates fetched per signature query before fusion (``Memory.search``'s ``candidates``).
CANDIDATES_PER_QUERY = 20


def sentence_vectors(embedder: Any, limit: int = 200_000) -> TextVectors:
    """Sentence embeddings cached by text for one synthesis; missing ones are embedded in one batch."""
    return TextVectors(embedder.embed_documents, lambda: getattr(embedder, "dim", 1), limit)


@dataclass
class SynthesisCache:
    """What the sections of one synthesis share: sentence vectors and each chunk's place in its page."""

    memory: Memory
    vectors: TextVectors
    page_pos: dict[str, float] = field(default_factory=dict)
    _pages_seen: set[str] = field(default_factory=set)

    @classmethod
    def for_memory(cls, memory: Memory) -> SynthesisCache:
        return cls(memory, sentence_vectors(memory.feature_embedder))

    def positions(self, hits: Sequence[Hit]) -> dict[str, float]:
        for h in hits:
            url = str(h.metadata.get("url") or "")
            if url in self._pages_seen:
                continue
            self._pages_seen.add(url)
            page = self.memory.page(url)
            ids = list(page.chunk_ids) if page is not None else []
            for i, cid in enumerate(ids):
                self.page_pos[cid] = i / max(1, len(ids) - 1)
        return self.page_pos


@dataclass
class Candidates:
    """A section's retrieved chunks, candidate quotes and their features (the scorer's input)."""

    queries: list[str]
    hits: list[Hit]
    chunks: list[Chunk]
    spans: list[Span]
    features: list[Features]


def section_candidates(
    memory: Memory,
    section: Section,
    *,
    k: int,
    subtree: str | None = None,
    retrieval: Retrieval | None = None,
    queries: list[str] | None = None,
    cache: SynthesisCache | None = None,
) -> Candidates:
    """Retrieve ``section``'s chunks (all signature queries through one ``Memory.search``: fused before MMR) and
    turn them into candidate quotes with their features. The scorer orders the quotes, so a retrieval rerank runs
    only with an external reranker model named in the charter."""
    queries = queries or signature_queries(section)
    knobs = ("mode", "candidates", "mmr_lambda")
    opts: dict[str, Any] = {} if retrieval is None else {name: getattr(retrieval, name) for name in knobs}
    if retrieval is not None and retrieval.rerank and retrieval.reranker_model:
        opts.update(rerank=True, reranker_model=retrieval.reranker_model)
    opts.setdefault("candidates", CANDIDATES_PER_QUERY)
    n = max(MIN_CHUNKS, CHUNKS_PER_BLOCK * k)
    hits = memory.search(queries[0], k=n, subtree=subtree, extra_queries=queries[1:], **opts)
    return candidates_for(memory, section, hits, queries=queries, cache=cache)


def candidates_for(
    memory: Memory,
    section: Section,
    hits: list[Hit],
    *,
    queries: list[str] | None = None,
    cache: SynthesisCache | None = None,
) -> Candidates:
    """The candidate quotes of ``hits`` (retrieval order) for ``section``, with their features."""
    import numpy as np

    queries = queries or signature_queries(section)
    cache = cache or SynthesisCache.for_memory(memory)
    question = analyse(section.effective_question)
    chunks, spans = candidate_spans(hits, question.terms)
    if not spans:
        return Candidates(queries, hits, chunks, [], [])
    embedder = memory.feature_embedder
    qvec, tvec = embedder.embed_queries([section.effective_question, topic_phrase(section)])
    sentences = [cache.vectors(c.sentences) if c.sentences else np.zeros((0, len(qvec)), "float32") for c in chunks]
    titles = {str(h.metadata.get("url") or ""): (h.metadata.get("title") or "").strip() for h in hits}
    titled = {u: t for u, t in titles.items() if t}
    title_vecs = dict(zip(titled, cache.vectors(list(titled.values())), strict=True)) if titled else {}
    vectors = SectionVectors(qvec, tvec, sentences, title_vecs)
    features = featurize(question, spans, vectors, cache.positions(hits))
    return Candidates(queries, hits, chunks, spans, features)


def synthesize_section(
    memory: Memory,
    section: Section,
    *,
    k: int,
    min_score: float | None = None,
    subtree: str | None = None,
    retrieval: Retrieval | None = None,
    query_generator: QueryGenerator | None = None,
    cache: SynthesisCache | None = None,
    scorer: Scorer | None = None,
) -> SectionResult:
    """The evidence blocks of one section (``subtree``: its concept-index route), or a Gap. ``min_score`` (a
    probability) replaces the scorer's fitted threshold when given (``scorer.evidence_threshold``)."""
    scorer = scorer or load_scorer()
    threshold = evidence_threshold(min_score, scorer)
    label = section.effective_label
    queries = signature_queries(section, query_generator)
    question = section.effective_question
    result = SectionResult(section.title, label, question, queries)
    cands = section_candidates(memory, section, k=k, subtree=subtree, retrieval=retrieval, queries=queries,
                               cache=cache)
    scored = score_candidates(question, cands, scorer)
    for c in select(scored, k=k, threshold=threshold, second=scorer.second):
        result.blocks.append(_block(label, len(result.blocks) + 1, c, queries[0]))
    if not result.blocks:
        best = max((c.p for c in scored), default=0.0)
        log.info("%s: a Gap (best quote %.3f under %.3f) for %r", label, best, threshold, question)
        result.gaps.append(Gap(label, question, memory.count_chunks(), memory.count_pages()))
    return result


def score_candidates(question: str, cands: Candidates, scorer: Scorer) -> list[Scored]:
    """The probability of each candidate that can be evidence: with a reader stage, the ``read_top`` best by the
    ``pre`` model are read and scored (the rest are not candidates); without, every candidate is scored."""
    spans, feats = cands.spans, cands.features
    if scorer.pre is not None and scorer.read_top and feats:
        pre = scorer.pre_logits(feats)
        top = sorted(range(len(feats)), key=lambda i: -pre[i])[: scorer.read_top]
        spans, feats = [spans[i] for i in top], [feats[i] for i in top]
        from .reader import load_reader

        with_reader(feats, load_reader().logits(question, [s.reading for s in spans]))
    probs = scorer.probabilities(feats)
    return [Scored(s, f, p) for s, f, p in zip(spans, feats, probs, strict=True)]


def _block(label: str, n: int, c: Scored, query: str) -> EvidenceBlock:
    hit = c.span.hit
    also = [
        Source(a.url, a.span.hit.metadata.get("last_updated"), a.span.hit.id, a.quote, a.p) for a in c.also
    ]
    return EvidenceBlock(
        label=label,
        n=n,
        quote=c.quote,
        url=c.url,
        last_updated=hit.metadata.get("last_updated"),
        score=c.p,
        chunk_id=hit.id,
        query=hit.metadata.get("query") or query,
        heading=c.span.is_heading,
        also_at=also,
    )
