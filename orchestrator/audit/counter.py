"""Other pages that state a block's quantity: what conflict detection (``conflicts.py``) compares a section's blocks
with, beyond the blocks themselves.

A section's blocks come from the chunks most similar to its question; a page that states the same quantity with
another value (an older page, or a newer one: "650 bikes" in 2024, "now has 700 bikes" in 2025) can lose its
place to the one that wins the block, and then no one sees that the sources disagree. So for each quantity a block
states (not a bare date), the sentence that states it is searched for in the store (hybrid BM25 + vector, without
MMR's diversity cut, ``HITS_PER_QUERY`` chunks), and every sentence of a chunk on a page the section does not cite
that states a quantity of the same kind becomes a statement conflict detection may pair with the block (a
verbatim span of that chunk, with its page's URL and last-updated date). Offline and deterministic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .quantities import quantities, sentence_spans

if TYPE_CHECKING:
    from memory_store import Memory

__all__ = ["HITS_PER_QUERY", "MAX_QUERIES", "other_statements"]

#: Chunks read per searched sentence.
HITS_PER_QUERY = 10
#: Sentences searched per section at most (the first blocks' first).
MAX_QUERIES = 8


def other_statements(memory: Memory, blocks: list[dict[str, Any]], page_key: Any) -> list[dict[str, Any]]:
    """Sentences of stored chunks on pages none of ``blocks`` cites that state a quantity of a kind the blocks
    state: each ``{"n": 0, "quote", "url", "last_updated", "chunk_id"}``. ``page_key`` maps a URL to the page it
    stands for (``conflicts._page_key``)."""
    cited = {page_key(str(b.get("url") or "")) for b in blocks}
    kinds: set[str] = set()
    queries: list[str] = []
    for b in blocks:
        for q in quantities(str(b.get("quote") or "")):
            if q.kind == "date":
                continue
            kinds.add(q.kind)
            if q.sentence not in queries:
                queries.append(q.sentence)
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for query in queries[:MAX_QUERIES]:
        for hit in memory.search(query, k=HITS_PER_QUERY, mmr_lambda=None):
            url = str(hit.metadata.get("url") or "")
            if page_key(url) in cited:
                continue
            for start, end in sentence_spans(hit.text):
                sentence = hit.text[start:end].strip()
                if (hit.id, sentence) in seen or not any(q.kind in kinds for q in quantities(sentence)):
                    continue
                seen.add((hit.id, sentence))
                out.append({"n": 0, "quote": sentence, "url": url, "last_updated": hit.metadata.get("last_updated"),
                            "chunk_id": hit.id})
    return out
