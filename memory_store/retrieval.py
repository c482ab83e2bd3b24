"""The retrieval pipeline behind ``Memory.search``: candidates from both sides, fusion, thresholds, optional
cross-encoder rerank, MMR.

1. **Candidates.** For every query: the vector top-N (cosine, LanceDB) and the BM25 top-N (LanceDB's native
   full-text index over chunk text), N = ``max(candidates, k)`` (``candidates`` defaults to 20). ``mode="vector"``
   or ``"bm25"`` keeps one side only. The candidate lists are unioned, deduplicated by chunk id.
2. **Fusion: reciprocal rank fusion** (Cormack, Clarke & Büttcher, SIGIR 2009):
   ``fused(d) = sum over lists L containing d of 1 / (RRF_K + rank_L(d))`` with ranks from 1 and ``RRF_K = 60``
   (the paper's constant). RRF needs no score calibration between cosine similarities and BM25 scores (which
   have unrelated scales and distributions), and the constant damps the weight of the very top ranks so that one
   list cannot dominate. With several queries (signature queries) every query contributes its two lists.
3. **Threshold on every path.** ``Hit.score`` is always the cosine similarity between a query and the chunk's
   stored embedding (the best over the queries), also for a chunk that only BM25 found: its vector score is
   computed from its embedding, and ``min_similarity`` (equivalently max cosine distance ``1 - min_similarity``)
   is applied to it. A BM25-only candidate therefore never passes a threshold the vector path would refuse.
4. **Rerank (optional, off by default).** The fused top ``max(candidates, k)`` are re-scored with a
   cross-encoder through FlagEmbedding's ``FlagReranker`` (``rerank.py``) against the first query and reordered
   by that score.
5. **MMR** (Carbonell & Goldstein 1998), λ = 0.7 by default, over the candidates' stored embeddings:
   repeatedly pick ``argmax λ·rel(d) − (1−λ)·max_{s∈picked} cos(d, s)``, where ``rel`` is the fused (or rerank)
   score min-max scaled to [0, 1] over the pool. ``mmr_lambda=None`` keeps the fused order.

Every hit says how it was found in ``matched_via``: ``vector``, ``bm25`` or ``vector+bm25``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .records import Hit, make_snippet

if TYPE_CHECKING:
    import numpy as np

    from .embeddings import Embedder
    from .store import LanceStore

log = logging.getLogger(__name__)

MODES = ("hybrid", "vector", "bm25")
DEFAULT_MODE = "hybrid"
DEFAULT_CANDIDATES = 20
RRF_K = 60
DEFAULT_MMR_LAMBDA = 0.7


@dataclass
class Candidate:
    id: str
    row: dict[str, Any]
    vector: Any  # np.ndarray, the stored (normalised) embedding
    fused: float = 0.0
    score: float = -1.0  # best cosine similarity over the queries
    query: str = ""  # the query that gave that best cosine
    via: set[str] = field(default_factory=set)
    vector_rank: int | None = None  # best rank over the queries' vector lists (1-based)
    bm25_rank: int | None = None
    bm25_score: float | None = None
    rerank_score: float | None = None


def rrf(rank: int, k: int = RRF_K) -> float:
    """Reciprocal rank fusion term of a 1-based rank."""
    return 1.0 / (k + rank)


def matched_via(via: set[str]) -> str:
    return "+".join(s for s in ("vector", "bm25") if s in via)


def mmr_order(vectors: np.ndarray, relevance: Sequence[float], k: int, lam: float = DEFAULT_MMR_LAMBDA) -> list[int]:
    """Indices of ``k`` items chosen by maximal marginal relevance over unit ``vectors`` (rows)."""
    import numpy as np

    n = len(relevance)
    if n == 0 or k <= 0:
        return []
    rel = np.asarray(relevance, dtype=np.float64)
    span = float(rel.max() - rel.min())
    rel = (rel - rel.min()) / span if span > 0 else np.ones_like(rel)
    vecs = np.asarray(vectors, dtype=np.float32)
    sims = vecs @ vecs.T
    picked: list[int] = []
    max_sim = np.full(n, -np.inf)
    free = np.ones(n, dtype=bool)
    for _ in range(min(k, n)):
        redundancy = np.where(np.isfinite(max_sim), max_sim, 0.0)
        value = lam * rel - (1.0 - lam) * redundancy
        value[~free] = -np.inf
        i = int(np.argmax(value))
        picked.append(i)
        free[i] = False
        max_sim = np.maximum(max_sim, sims[i])
    return picked


def search(
    store: LanceStore,
    embedder: Embedder,
    queries: Sequence[str],
    *,
    k: int = 5,
    min_similarity: float | None = None,
    only_ids: list[str] | None = None,
    mode: str = DEFAULT_MODE,
    candidates: int = DEFAULT_CANDIDATES,
    rrf_k: int = RRF_K,
    rerank: bool = False,
    reranker_model: str | None = None,
    mmr_lambda: float | None = DEFAULT_MMR_LAMBDA,
) -> list[Hit]:
    """Run the pipeline for ``queries`` (the first is the main one) over ``store``; best first. ``embedder``
    embeds the queries. A BM25 side needs the store's full-text index (``Memory.search`` makes sure it exists)."""
    import numpy as np

    if mode not in MODES:
        raise ValueError(f"unknown retrieval mode {mode!r}: expected one of {', '.join(MODES)}")
    if mmr_lambda is not None and not 0.0 <= mmr_lambda <= 1.0:
        raise ValueError(f"mmr_lambda must be within [0, 1] or None, got {mmr_lambda}")
    queries = [q for q in dict.fromkeys(q.strip() for q in queries if q and q.strip())]
    if not queries or k <= 0:
        return []
    n = max(int(candidates), k)
    qvecs = embedder.embed_queries(queries)
    pool = _candidates(store, queries, qvecs, n, only_ids, mode, rrf_k)
    if not pool:
        return []
    cands = list(pool.values())
    # vector score of every candidate (also the BM25-only ones) from its stored embedding: threshold on it
    mat = np.stack([c.vector for c in cands])
    cos = mat @ np.asarray(qvecs, dtype=np.float32).T  # (candidates, queries)
    for c, row_cos in zip(cands, cos, strict=True):
        j = int(np.argmax(row_cos))
        c.score, c.query = float(row_cos[j]), queries[j]
    if min_similarity is not None:
        cands = [c for c in cands if c.score >= min_similarity]
    cands.sort(key=lambda c: (-c.fused, -c.score, c.id))
    if not cands:
        return []
    relevance: list[float] = [c.fused for c in cands]
    if rerank:
        cands = _rerank(cands[:n], queries[0], reranker_model)  # the reranked head is the pool MMR and the cut use
        relevance = [c.rerank_score or 0.0 for c in cands]
    if mmr_lambda is not None and len(cands) > 1:
        order = mmr_order(np.stack([c.vector for c in cands]), relevance, k, mmr_lambda)
        cands = [cands[i] for i in order]
    return [_hit(c) for c in cands[:k]]


def _candidates(
    store: LanceStore,
    queries: list[str],
    qvecs: np.ndarray,
    n: int,
    only_ids: list[str] | None,
    mode: str,
    rrf_k: int,
) -> dict[str, Candidate]:
    """The union of every query's vector and BM25 top ``n`` (as ``mode`` asks) by chunk id, each candidate's
    reciprocal-rank terms summed in ``fused``."""
    import numpy as np

    pool: dict[str, Candidate] = {}

    def take(row: dict[str, Any]) -> Candidate:
        cand = pool.get(row["id"])
        if cand is None:
            vec = np.asarray(row.pop("embedding"), dtype=np.float32)
            cand = Candidate(id=row["id"], row=row, vector=vec)
            pool[row["id"]] = cand
        return cand

    for q, qv in zip(queries, qvecs, strict=True):
        if mode in ("hybrid", "vector"):
            for rank, row in enumerate(store.search(qv, n, only_ids, with_vectors=True), 1):
                cand = take(row)
                cand.fused += rrf(rank, rrf_k)
                cand.via.add("vector")
                cand.vector_rank = rank if cand.vector_rank is None else min(cand.vector_rank, rank)
        if mode in ("hybrid", "bm25"):
            for rank, row in enumerate(store.fts_search(q, n, only_ids, with_vectors=True), 1):
                cand = take(row)
                cand.fused += rrf(rank, rrf_k)
                cand.via.add("bm25")
                if cand.bm25_rank is None or rank < cand.bm25_rank:
                    cand.bm25_rank, cand.bm25_score = rank, float(row.get("_score") or 0.0)
    return pool


def _rerank(head: list[Candidate], query: str, reranker_model: str | None) -> list[Candidate]:
    """``head`` re-scored by the cross-encoder against ``query`` and sorted by that score."""
    from .rerank import get_reranker

    scores = get_reranker(reranker_model).score(query, [c.row["text"] for c in head])
    for c, s in zip(head, scores, strict=True):
        c.rerank_score = float(s)
    head.sort(key=lambda c: (-(c.rerank_score or 0.0), -c.fused, c.id))
    return head


def _hit(c: Candidate) -> Hit:
    row = c.row
    return Hit(
        id=c.id,
        score=c.score,
        text=row["text"],
        snippet=make_snippet(row["text"]),
        metadata={
            "url": row["url"],
            "last_updated": row["last_updated"],
            "title": row["title"],
            "selector": row["selector"],
            "also_seen_at": list(row["also_seen_at"] or []),
            "charter_id": row["charter_id"],
            "tokens": row["tokens"],
            "query": c.query,
            "retrieval": {
                "fused": round(c.fused, 6),
                "vector_rank": c.vector_rank,
                "bm25_rank": c.bm25_rank,
                "bm25_score": c.bm25_score,
                "rerank_score": c.rerank_score,
            },
        },
        matched_via=matched_via(c.via),
    )


__all__ = ["DEFAULT_CANDIDATES", "DEFAULT_MMR_LAMBDA", "DEFAULT_MODE", "MODES", "RRF_K", "mmr_order", "search"]
