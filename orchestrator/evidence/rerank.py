"""Search results ordered by evidence: each retrieved chunk ranks by the probability of its best candidate quote
for the query (the scorer and its reader), retrieval order breaking ties. ``brt search --rerank`` and the MCP
``search`` tool use it when no external reranker model is named."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memory_store import Hit, Memory

#: Chunks retrieved for a rerank: this many times the hits asked for (at least RERANK_MIN).
RERANK_FACTOR = 4
RERANK_MIN = 20


def rerank_hits(memory: Memory, query: str, hits: list[Hit], k: int) -> list[Hit]:
    """``hits`` reordered by their best quote's evidence probability for ``query``; the first ``k``. Each hit's
    ``metadata["retrieval"]["rerank_score"]`` holds that probability (0 when no quote of it was read)."""
    from ..charter import Section
    from .scorer import load_scorer
    from .section import candidates_for, score_candidates

    if not hits:
        return []
    section = Section(title=query)
    scored = score_candidates(query, candidates_for(memory, section, hits), load_scorer())
    best: dict[str, float] = {}
    for c in scored:
        best[c.span.hit.id] = max(best.get(c.span.hit.id, 0.0), c.p)
    order = sorted(range(len(hits)), key=lambda i: (-best.get(hits[i].id, 0.0), i))
    out = []
    for i in order[:k]:
        h = hits[i]
        h.metadata.setdefault("retrieval", {})["rerank_score"] = round(best.get(h.id, 0.0), 6)
        out.append(h)
    return out
