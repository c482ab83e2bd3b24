"""Other pages that answer a section with a quantity its blocks state: what conflict detection (``conflicts.py``)
compares a section's blocks with, beyond the blocks themselves.

A section's blocks come from the chunks most similar to its question, and a quote that repeats another's facts is
folded into it; a page that answers the same question with another figure (an older page, or a newer one: "650
bikes" in 2024, "now has 700 bikes" in 2025) can lose its place to the one that wins the block, and then no one
sees that the sources disagree. So for each quantity a block states (not a bare date), the sentence that states it
is searched for in the store (hybrid BM25 + vector, without MMR's diversity cut), and the chunks found on pages the
section does not cite are read as the section's own candidates are: their quotes scored by the evidence scorer for
the section's question (``evidence.section``). A quote that clears the synthesis threshold (it answers the
question) and states a quantity of a kind the blocks state becomes a statement conflict detection may pair with a
block. The scorer is what keeps a page about another subject out: "between 200 and 500 milliseconds it needs
improvement" on the INP page states a time in the very words of the LCP page's "between 2.5 and 4 seconds", but
it does not answer what LCP time counts as good. Offline and deterministic.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .quantities import quantities

if TYPE_CHECKING:
    from memory_store import Hit, Memory

    from ...charter import Section
    from ..section import SynthesisCache

__all__ = ["HITS_PER_QUERY", "MAX_QUERIES", "PER_PAGE", "other_statements"]

#: Chunks read per searched sentence.
HITS_PER_QUERY = 8
#: Sentences searched per section at most (the first blocks' first).
MAX_QUERIES = 6
#: Statements kept per page at most (its most probable answers).
PER_PAGE = 2


def other_statements(
    memory: Memory,
    section: Section,
    blocks: list[dict[str, Any]],
    *,
    threshold: float,
    page_key: Callable[[str], str],
    cache: SynthesisCache | None = None,
) -> list[dict[str, Any]]:
    """Quotes of pages none of ``blocks`` cites that answer ``section`` (the evidence scorer's probability at or
    above ``threshold``) and state a quantity of a kind the blocks state: each ``{"n": 0, "quote", "url",
    "last_updated", "chunk_id", "score"}``, a verbatim span of its chunk as a block's quote is. ``page_key`` maps
    a URL to the page it stands for (``conflicts.page_key``)."""
    kinds, queries = _quantities_of(blocks)
    if not queries:
        return []
    cited = {page_key(str(b.get("url") or "")) for b in blocks}
    hits = _uncited_hits(memory, queries, cited, page_key)
    if not hits:
        return []
    from ..scorer import load_scorer
    from ..section import candidates_for, score_candidates

    question = section.effective_question
    scored = score_candidates(question, candidates_for(memory, section, hits, cache=cache), load_scorer())
    kept: dict[str, list[dict[str, Any]]] = {}
    for s in sorted(scored, key=lambda s: -s.p):
        if s.p < threshold or not any(q.kind in kinds for q in quantities(s.quote)):
            continue
        page = kept.setdefault(page_key(s.url), [])
        if len(page) < PER_PAGE and not any(s.quote in k["quote"] or k["quote"] in s.quote for k in page):
            page.append({"n": 0, "quote": s.quote, "url": s.url, "last_updated": s.span.hit.metadata.get(
                "last_updated"), "chunk_id": s.span.hit.id, "score": round(float(s.p), 4)})
    return [entry for page in kept.values() for entry in page]


def _quantities_of(blocks: list[dict[str, Any]]) -> tuple[set[str], list[str]]:
    """The kinds of quantity the blocks state (dates aside) and the sentences that state them, first block first."""
    kinds: set[str] = set()
    queries: list[str] = []
    for b in blocks:
        for q in quantities(str(b.get("quote") or "")):
            if q.kind == "date":
                continue
            kinds.add(q.kind)
            if q.sentence not in queries:
                queries.append(q.sentence)
    return kinds, queries[:MAX_QUERIES]


def _uncited_hits(memory: Memory, queries: list[str], cited: set[str], page_key: Callable[[str], str]) -> list[Hit]:
    """The chunks the sentences find, in the order found, on pages the section does not cite."""
    found: dict[str, Hit] = {}
    for query in queries:
        for hit in memory.search(query, k=HITS_PER_QUERY, mmr_lambda=None):
            if hit.id not in found and page_key(str(hit.metadata.get("url") or "")) not in cited:
                found[hit.id] = hit
    return list(found.values())
