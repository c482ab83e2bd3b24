"""How well given passages answer (or support) a question or a claim, by the evidence scorer: each passage is read
as synthesis reads a retrieved chunk (its sentences and windows are candidate quotes, scored with the reader),
and its probability is its best quote's. Acceptance verdicts and ``brt check`` use it to judge text that is
already chosen (a block's quote, the chunks of a cited page) against a criterion or a claim."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memory_store import Memory


@dataclass(frozen=True)
class Passage:
    """A passage to judge: its text, and the page it comes from when known."""

    text: str
    url: str | None = None
    title: str | None = None


@dataclass(frozen=True)
class Support:
    """A passage's best quote for the question and that quote's probability of answering it."""

    p: float
    quote: str


def passage_support(memory: Memory, question: str, passages: Sequence[Passage]) -> list[Support]:
    """One ``Support`` per passage (p 0 and no quote for an empty one)."""
    from memory_store.records import Hit, make_snippet

    from ..charter import Section
    from .scorer import load_scorer
    from .section import candidates_for, score_candidates

    if not passages:
        return []
    embedder = memory.embedder
    qvec = embedder.embed_queries([question])[0]
    vecs = embedder.embed_documents([p.text for p in passages])
    hits = [
        Hit(
            id=f"passage:{i}",
            score=float(v @ qvec),
            text=p.text,
            snippet=make_snippet(p.text),
            metadata={"url": p.url or f"passage:{i}", "title": p.title, "last_updated": None},
        )
        for i, (p, v) in enumerate(zip(passages, vecs, strict=True))
    ]
    cands = candidates_for(memory, Section(title=question), hits)
    best: dict[str, Support] = {}
    for c in score_candidates(question, cands, load_scorer()):
        hid = c.span.hit.id
        if hid not in best or c.p > best[hid].p:
            best[hid] = Support(c.p, c.quote)
    return [best.get(h.id, Support(0.0, "")) for h in hits]
