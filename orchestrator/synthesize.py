"""Synthesis: for each output section, signature queries over the charter's store, a score threshold, and cited
evidence blocks (verbatim quotes with URL and last-updated date), or a Gap line when nothing meets the bar."""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_store.clock import now

from .answer_types import (
    asked_acronym,
    asked_type,
    carries,
    counts_asked,
    expands_acronym,
    names_asked_org,
    quantity_unstated,
    strict_type,
    typed_quotes,
)
from .api import make_module_callable
from .evidence import EvidenceBlock, Gap, SectionResult, Source, SynthesisResult, display_url
from .legacy_quotes import QuoteChoice, choose_quote_in_context
from .quotes import Quote, SentenceVectors, collapse, quote_hits, same_facts, term_coverage
from .relevance import index_entries, mentions, named_subjects

if TYPE_CHECKING:
    from memory_store import Hit, Memory

    from .charter import Charter, Retrieval, Section

__all__ = [  # the result records live in evidence.py; re-exported here, where users met them first
    "EvidenceBlock", "Gap", "SectionResult", "Source", "SynthesisResult", "display_url", "evidence_candidates",
    "render_markdown", "section_evidence", "select_evidence", "signature_queries", "synthesize", "synthesize_section",
]

log = logging.getLogger(__name__)

# Candidates fetched per signature query before merging, thresholding and cutting to k.
CANDIDATES_PER_QUERY = 20


# Signature queries (DESIGN "Signature & Retrieve"): 2-4 per section, built without an LLM:
#   1. base: the section's question (or its title);
#   2. paraphrase: a keyword restatement: the question without its interrogative frame ("how do I", "what is",
#      "should we", ...) and trailing "?", prefixed with the section title and label when their words are not
#      in it yet ("CLS mitigation: minimise layout shift");
#   3. counterfactual: the same topic asked from the other side: "<topic> — limitations, failures, drawbacks and
#      criticisms", so evidence against a claim is looked for as well as evidence for it;
#   4. the label alone when it says something none of the others does (an acronym, a product name).
# Duplicates (case-insensitive) are dropped. An optional generator (``QueryGenerator``, e.g. an LLM call) may
# supply more paraphrases/counterfactuals; it is off by default and its output is capped at 4 queries in all.
_AUX = r"(?:(?:do|does|did|could|should|would|is|are|was|were|must)(?:n['’]t|not)?|can(?:not|['’]t)?|will|won['’]t)"
_FRAME = re.compile(
    r"^\s*(?:(?:how|what|which|why|when|where|who|whom|whose)\b(?:\s+(?:" + _AUX + r"|to|much|many|exactly))?"
    r"(?:\s+(?:i|we|you|they|one|it|a|an|the|site|sites|page|pages))?"
    r"|" + _AUX + r"\s+(?:i|we|you|they|one|it|a|an|the))(?![\w'’])\s*",
    re.IGNORECASE,
)
_WORD = re.compile(r"[\w][\w.+-]*", re.UNICODE)
MAX_SIGNATURE_QUERIES = 4
COUNTERFACTUAL_SUFFIX = "limitations, failures, drawbacks and criticisms"

QueryGenerator = Callable[["Section"], list[str]]


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def topic_phrase(section: Section) -> str:
    """The section's topic as a keyword phrase: its question without the interrogative frame, prefixed with
    the title/label when their words are missing from it."""
    question = section.effective_question.strip()
    core = _FRAME.sub("", question, count=1).strip().rstrip("?!. ").strip() or question.rstrip("?!. ")
    prefix = []
    for extra in (section.title, section.label):
        if extra and extra.strip() and not _words(extra) <= _words(core) | _words(" ".join(prefix)):
            prefix.append(extra.strip())
    return f"{' '.join(prefix)}: {core}" if prefix and core else (core or " ".join(prefix))


def signature_queries(section: Section, generator: QueryGenerator | None = None) -> list[str]:
    """2-4 queries for ``section``: base, paraphrase, counterfactual (and the label); see above."""
    base = section.effective_question.strip()
    topic = topic_phrase(section)
    candidates = [base, topic, f"{topic} — {COUNTERFACTUAL_SUFFIX}"]
    if generator is not None:
        try:
            candidates[2:2] = [q for q in generator(section) if isinstance(q, str)]
        except Exception:  # an optional helper: its failure never stops a synthesis
            log.exception("signature query generator failed for section %r", section.title)
    label = (section.label or "").strip()
    if label and not any(label.lower() in q.lower() for q in candidates):
        candidates.append(label)
    queries: list[str] = []
    for q in candidates:
        q = " ".join(q.split())
        if q and q.lower() not in {x.lower() for x in queries}:
            queries.append(q)
    if len(queries) > MAX_SIGNATURE_QUERIES:  # keep base, paraphrase and the counterfactual
        queries = queries[: MAX_SIGNATURE_QUERIES - 1] + [f"{topic} — {COUNTERFACTUAL_SUFFIX}"]
        queries = list(dict.fromkeys(queries))
    return queries


# -- quotes ------------------------------------------------------------------------------------------------

def split_sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) character spans of the sentences of ``text``, whitespace trimmed (``memory_store.text``:
    the segmenter that knows abbreviations, initials and decimals; every line is at least one sentence)."""
    from memory_store.text import sentence_spans

    return sentence_spans(text)


def _quotes_for(memory: Memory, question: str, hits: list[Hit], names: list[str]) -> list[tuple[QuoteChoice, float]]:
    """Each hit's quote for ``question`` and the quote's score: the cosine of the quote, read under its heading,
    to the question. Sentences that name what the question names (``names``) are preferred as quotes."""
    import numpy as np

    embedder = memory.embedder
    qvec = embedder.embed_queries([question])[0]
    all_spans = [split_sentences(h.text) for h in hits]
    flat = [h.text[a:b] for h, spans in zip(hits, all_spans, strict=True) for a, b in spans]
    vecs = embedder.embed_documents(flat) if flat else np.zeros((0, len(qvec)), dtype="float32")
    scores = (vecs @ qvec).tolist() if len(flat) else []
    named = [any(mentions(text, name) for name in names) for text in flat]
    choices, pos = [], 0
    for h, spans in zip(hits, all_spans, strict=True):
        end = pos + len(spans)
        choices.append(choose_quote_in_context(h.text, scores[pos:end], spans, named=named[pos:end]))
        pos = end
    if not choices:
        return []
    quote_scores = (embedder.embed_documents([c.in_context for c in choices]) @ qvec).tolist()
    return list(zip(choices, quote_scores, strict=True))


# -- the stage ---------------------------------------------------------------------------------------------

# More candidates than blocks are retrieved, so that blocks dropped by the quote checks leave room for others.
SPARE_CANDIDATES = 2


@dataclass
class Candidate:
    """A retrieved chunk with the quote it offers a section and the checks on that quote."""

    hit: Hit
    choice: QuoteChoice | Quote
    score: float  # cosine of the quote, read under its heading, to the section's question
    names: bool = True  # its page (title or a retrieved chunk) names what the question names (named_subjects)
    rank: float = 0.0  # orders the blocks (candidate_rank)
    covers: float = 0.0  # share of the question's term weight its quote holds (quotes.term_coverage)
    also: list[Candidate] = field(default_factory=list)  # candidates merged into this one (same facts)


def evidence_candidates(
    memory: Memory,
    section: Section,
    *,
    k: int,
    min_score: float | None,
    subtree: str | None = None,
    retrieval: Retrieval | None = None,
    queries: list[str] | None = None,
    vectors: SentenceVectors | None = None,
    quote_mode: str = "answer",
) -> list[Candidate]:
    """Retrieve a section's candidates, in retrieval order (all signature queries through one ``Memory.search``
    call: fused with RRF before the optional rerank and MMR), and quote each one for the section's question (a
    chunk may offer a second quote, ``quotes.second_span``, and a quote that grew its core, ``quotes.Quote.core``:
    more candidates right after its first).
    ``min_score`` is the bar of the quotes (``select_evidence``), not of the chunks: a chunk whose whole text
    is further from the question may hold the sentence that answers it (with ``quote_mode="legacy"`` each
    hit's cosine, best over the queries, meets it, as in 918efa0). ``quote_mode="answer"`` (the default) ranks
    sentences by embedding, BM25 and answer type (orchestrator/quotes.py); ``"legacy"`` is the quote choice of
    918efa0 (closest sentence by cosine, kept for the benchmarks). ``vectors`` caches sentence vectors across
    the sections of one synthesis."""
    queries = queries or signature_queries(section)
    knobs = ("mode", "candidates", "rerank", "reranker_model", "mmr_lambda")
    opts: dict[str, Any] = {} if retrieval is None else {name: getattr(retrieval, name) for name in knobs}
    opts.setdefault("candidates", CANDIDATES_PER_QUERY)
    # the bar of the chunks: none on the answer path (SQuAD: the answer's chunk among the hits 0.892 -> 0.969
    # with it gone; BENCHMARKS.md "Evidence that answers")
    floor = min_score if quote_mode == "legacy" else None
    hits = memory.search(
        queries[0], k=k * SPARE_CANDIDATES, min_score=floor, subtree=subtree, extra_queries=queries[1:], **opts
    )
    if floor is not None:
        hits = [h for h in hits if h.score >= floor]
    question = section.effective_question
    if quote_mode == "legacy":
        names = named_subjects(question)
        return [
            Candidate(hit, choice, score, _names_it(hit, names))
            for hit, (choice, score) in zip(hits, _quotes_for(memory, question, hits, names), strict=True)
        ]
    vectors = vectors if vectors is not None else SentenceVectors(memory.embedder)
    qvec = memory.embedder.embed_queries([question])[0]
    return answer_candidates(question, hits, quote_hits(question, hits, vectors, qvec, split=split_sentences))


def _names_it(hit: Hit, names: list[str]) -> bool:
    where = f"{hit.metadata.get('title') or ''}\n{hit.text}"
    return not names or any(mentions(where, name) for name in names)


def answer_candidates(question: str, hits: list[Hit], quoted: list[list[tuple[Quote, float]]]) -> list[Candidate]:
    """The candidates of ``hits`` (retrieval order) from their quotes (``quotes.quote_hits``), with whether the page
    names what the question names (its title or any of its chunks among ``hits``: a page's chunk about the
    couple's hospital need not repeat "Beijing"), the share of the question's terms each quote holds (idf over
    the section's quotes) and the rank."""
    names = named_subjects(question)
    naming = {h.metadata.get("url") for h in hits if _names_it(h, names)}
    covers = iter(term_coverage(question, [quote.quote for quotes in quoted for quote, _ in quotes]))
    candidates: list[Candidate] = []
    for position, (hit, quotes) in enumerate(zip(hits, quoted, strict=True)):
        for quote, score in quotes:
            share = next(covers)
            rank = candidate_rank(quote.rank, position, score, share)
            candidates.append(Candidate(hit, quote, score, hit.metadata.get("url") in naming, rank, share))
    return candidates


# A candidate's rank is its quote's rank score (orchestrator/quotes.py) less RETRIEVAL_PRIOR per place in the
# retrieval order: hybrid retrieval over the signature queries judges the whole chunk, the quote's rank only its
# sentences, and each corrects the other (0.05 against 0: SciFact p@1 0.757 -> 0.780 for SQuAD answer@1
# 0.762 -> 0.738; BENCHMARKS.md "Evidence that answers"). A block must stand within RANK_MARGIN of the section's
# best block: a block that ranks far below the best adds no evidence, it fills a slot (issue 10, "No padding").
# 0.35 is the narrowest margin that kept every SciFact claim's support (0.30 lost one of 300, 0.15 five).
# A quote's rank score is its best sentence's; the whole quote's score (cosine to the question, read under its
# heading) weighs in with QUOTE_SCORE_WEIGHT, so a headline and lead that repeat the question's subject no longer
# outrank the passage that answers (news answer@1 0.679 -> 0.718 in process; 0.5 and 1.0 cost SQuAD answer@1),
# and the share of the question's term weight the quote holds (``Candidate.covers``) with COVERAGE_WEIGHT: of two
# passages that match alike, the one naming more of what is asked answers it (SQuAD held out, per article:
# answer@1 0.792 -> 0.805, precision +2.3 points; 0.2 and 0.3 cost news answer@1; BENCHMARKS.md "Real news pages").
RETRIEVAL_PRIOR = 0.05
RANK_MARGIN = 0.35
QUOTE_SCORE_WEIGHT = 0.3
COVERAGE_WEIGHT = 0.1
# Candidates are retrieved without min_score (a far chunk may hold the answering sentence), but a quote from a
# chunk that misses min_score as a whole must clear it by this much: a sentence that merely brushes the bar in
# an off-topic chunk is a coincidence of wording, not evidence (the demo's HTTP/3 section; SQuAD unanswerable
# questions: Gap rate 0.053 with 0, 0.10 with 0.05, 0.133 with 0.10, 0.173 with the chunk bar; answerable ones'
# answer@k 0.846 with 0.05, 0.833 with 0.10; BENCHMARKS.md). The demo's HTTP/3 sentence (0.364) stays under 0.40.
# Unless the quote holds FAR_COVERAGE of the question's term weight (``Candidate.covers``): then its own words
# say it is about what was asked, not a coincidence of wording ("What is another name for State Route 168?" ->
# "State Route 168, the Sierra Freeway, ..." at 0.376 in a chunk at 0.31; the HTTP/3 sentence holds 0.14).
# A quote's core (the sentences it held before it grew to quotes.MIN_QUOTE_WORDS) is offered beside it: growth
# can pull a sentence that answers (0.56: "The V&A covers 12.5 acres ..." under its heading) under the bar (0.34
# with its two neighbours). The core must hold FAR_COVERAGE too: one short sentence matches by a coincidence of
# wording more easily than a passage (the demo's HTTP/3 section: "... when that URL has enough traffic ..." at
# 0.48, terms 0.11).
FAR_CHUNK_MARGIN = 0.05
FAR_COVERAGE = 0.30


def candidate_rank(quote_rank: float, position: int, quote_score: float = 0.0, covers: float = 0.0) -> float:
    """The rank that orders a section's blocks: the quote's rank score less RETRIEVAL_PRIOR per place (``position``,
    0-based) in retrieval order, plus QUOTE_SCORE_WEIGHT × its whole score and COVERAGE_WEIGHT × ``covers``."""
    return quote_rank - RETRIEVAL_PRIOR * position + QUOTE_SCORE_WEIGHT * quote_score + COVERAGE_WEIGHT * covers


def select_evidence(
    candidates: list[Candidate],
    *,
    k: int,
    min_score: float,
    named: bool = True,
    margin: float | None = RANK_MARGIN,
    question: str | None = None,
) -> list[Candidate]:
    """The evidence among ``candidates`` (in retrieval order): those whose quote score meets ``min_score`` (and
    ``min_score + FAR_CHUNK_MARGIN`` when the chunk as a whole does not and the quote holds under FAR_COVERAGE of
    the question's terms), a quote's core (``quotes.Quote.core``) only when it holds FAR_COVERAGE of them;
    when the first of them names what the question names (``named``), only those that do; best rank first
    (retrieval order among equals); only those within ``margin`` of the best rank (None: no margin); a quote
    stating the same facts as an earlier one (``quotes.same_facts``) is merged into it (``also``) instead of
    repeated, a quote inside an earlier block's quote of the same page is dropped, and a quote of the same page
    that holds an earlier block's quote and more replaces that block's quote (keeping its place; other blocks it
    holds go). At most ``k``. With the section's ``question``, a typed answer beyond the margin may come first
    (``_typed_beyond_margin``), else the expansion of the acronym asked for (``_expansion_first``), and the
    organisation asked for second (``_named_beyond_margin``)."""
    kept = [
        c
        for c in candidates
        if c.score >= min_score + (0.0 if c.hit.score >= min_score or c.covers >= FAR_COVERAGE else FAR_CHUNK_MARGIN)
        and (c.covers >= FAR_COVERAGE or not getattr(c.choice, "is_core", False))
    ]
    # Anchored on the first candidate: when retrieval's best page never names it, the sources may word the name
    # otherwise, and nothing is dropped. On SciFact the anchored check keeps p@1 and raises precision; dropping
    # unnamed pages whenever any page names it lost more supported claims (BENCHMARKS.md).
    if named and kept and kept[0].names:
        kept = [c for c in kept if c.names]
    kept = sorted(kept, key=lambda c: -c.rank)
    if margin is not None and kept:
        within = [c for c in kept if c.rank >= kept[0].rank - margin]
        named = _named_beyond_margin(question, kept, len(within))
        lead = _typed_beyond_margin(question, kept, len(within)) or _expansion_first(question, kept, len(within))
        within = [c for c in within if all(c is not o for o in lead)]
        kept = lead + within[:1] + named + within[1:]
    chosen: list[Candidate] = []
    for c in kept:
        if any(_widens(o, c) for o in chosen):  # its words are already a block's, from the same page
            continue
        twin = next((o for o in chosen if same_facts(c.choice.quote, o.choice.quote)), None)
        if twin is not None:
            urls = {twin.hit.metadata.get("url")} | {a.hit.metadata.get("url") for a in twin.also}
            if c.hit.metadata.get("url") not in urls:
                twin.also.append(c)
            continue
        inner = [o for o in chosen if _widens(c, o)]
        if inner:  # the first block it holds takes the wider quote (and its score), keeps its place and sources
            also = [a for o in inner for a in o.also]
            chosen[chosen.index(inner[0])] = replace(c, rank=inner[0].rank, also=also)
            chosen = [o for o in chosen if o not in inner[1:]]
        elif len(chosen) < k:
            chosen.append(c)
    return chosen


def _typed_beyond_margin(question: str | None, ranked: list[Candidate], within: int) -> list[Candidate]:
    """When ``question`` asks for an amount, a date or a number (``answer_types.strict_type``) and none of the
    ``within`` best of ``ranked`` (the margin's) states one, the best candidate beyond the margin that states one
    and holds at least as much of the question's term weight as the best block (and FAR_COVERAGE): the blocks
    within restate the subject ("Health authorities in China's Inner Mongolia have confirmed ...") while a
    passage further down holds the answer ("The first two illnesses were confirmed on November 12."). It comes
    first; the type rule (``section_evidence``) then drops the blocks that state no such type. A count of what a
    "how many" question counts ("in 14 countries", ``answer_types.counts_asked``) needs FAR_COVERAGE only: the
    block that restates the question holds more of its words than the one that answers it."""
    if not question or (kind := strict_type(question)) is None:
        return []
    if any(carries(c.choice.quote, kind, question) for c in ranked[:within]):
        return []
    beyond, floor = ranked[within:], max(FAR_COVERAGE, ranked[0].covers)
    counted = _best_beyond(beyond, FAR_COVERAGE, lambda quote: counts_asked(quote, question))
    return counted or _best_beyond(beyond, floor, lambda quote: carries(quote, kind, question))


def _expansion_first(question: str | None, ranked: list[Candidate], within: int) -> list[Candidate]:
    """When ``question`` asks what an acronym stands for (``answer_types.asked_acronym``) and the best block does
    not spell it out (``expands_acronym``), the first block within the margin that does, else the best candidate
    beyond it that spells it out beside the acronym itself: the best blocks use the acronym ("The UMC supports
    ...") while the sentence that defines it ("The United Methodist Church (UMC) is ...") ranks lower. No share
    of the question's terms is asked of it: beside the acronym, a question of this form has none but "stand"."""
    acronym = asked_acronym(question) if question else None
    if acronym is None or expands_acronym(ranked[0].choice.quote, acronym):
        return []

    def spells(quote: str) -> bool:
        return expands_acronym(quote, acronym)

    def defines(quote: str) -> bool:
        return spells(quote) and re.search(rf"\b{re.escape(acronym)}\b", quote) is not None

    return _best_beyond(ranked[1:within], 0.0, spells) or _best_beyond(ranked[within:], 0.0, defines)


def _named_beyond_margin(question: str | None, ranked: list[Candidate], within: int) -> list[Candidate]:
    """When ``question`` asks which organisation ("At which Beijing hospital ...?", "Which advertising firm
    ...?") and none of the ``within`` best of ``ranked`` names one of that kind (``answer_types.names_asked_org``),
    the best candidate beyond the margin that does and holds at least as much of the question's term weight as the
    best block: the blocks within describe the subject while a passage further down names it ("a doctor at
    Chaoyang Hospital where the patients were treated"). It comes second, after the best block: a name beside
    the asked noun is a weaker cue than an amount or a date, and in Wikipedia prose (SQuAD) such names stand
    everywhere ("the General Court" for "Which court is the highest ...?"), where the first place cost answer@1."""
    if not question or asked_type(question) != "org":
        return []
    if any(names_asked_org(c.choice.quote, question) for c in ranked[:within]):
        return []
    return _best_beyond(ranked[within:], ranked[0].covers, lambda quote: names_asked_org(quote, question))


def _best_beyond(beyond: list[Candidate], floor: float, holds: Callable[[str], bool]) -> list[Candidate]:
    """The first of ``beyond`` (candidates past the margin, or past the best block, best rank first) whose quote
    ``holds`` the answer's cue and that holds at least ``floor`` of the question's term weight, as a list of one;
    else empty."""
    return [c for c in beyond if c.covers >= floor and holds(c.choice.quote)][:1]


def _widens(wide: Candidate, narrow: Candidate) -> bool:
    """Whether ``wide`` quotes the same page as ``narrow`` (another chunk of it, perhaps: chunks overlap) and its
    quote holds all of ``narrow``'s and more (the sentence of an earlier block and the next one, which holds the
    answer): one block, not the same text twice."""
    if wide.hit.metadata.get("url") != narrow.hit.metadata.get("url"):
        return False
    inner = collapse(narrow.choice.quote.strip("… "))
    return len(inner) > 0 and inner in collapse(wide.choice.quote)


def section_evidence(question: str, chosen: list[Candidate]) -> tuple[list[Candidate], str | None]:
    """Of the blocks ``select_evidence`` chose, those a section prints (quotes that cannot hold the amount, date or
    number asked for go: ``answer_types.typed_quotes``; index entries of a page another block cites go:
    ``relevance.index_entries``) and, when a how-many / how-much question gets none, why (a Gap's reason)."""
    typed = typed_quotes(question, [c.choice.quote for c in chosen])
    entries = index_entries([(c.hit.metadata["url"], c.hit.title, c.choice.quote, c.hit.text) for c in chosen])
    chosen = [c for c, ok, entry in zip(chosen, typed, entries, strict=True) if ok and not entry]
    if chosen and quantity_unstated(question, [c.choice.quote for c in chosen]):
        return [], "no quote states a quantity"
    return chosen, None


def synthesize_section(
    memory: Memory,
    section: Section,
    *,
    k: int,
    min_score: float,
    subtree: str | None = None,
    retrieval: Retrieval | None = None,
    query_generator: QueryGenerator | None = None,
    vectors: SentenceVectors | None = None,
) -> SectionResult:
    """Retrieve, threshold and quote the evidence for one section (``subtree``: concept-index route).

    Candidates come from ``evidence_candidates``; then each quote is checked against the section's question
    itself (``select_evidence``): the quote, read under its heading, must meet ``min_score`` too, and when the
    best page names what the question names, pages that never do are dropped. A block's score is its quote's.
    Then the rules of ``section_evidence``: a section they leave without blocks is a Gap with their reason."""
    label = section.effective_label
    queries = signature_queries(section, query_generator)
    question, kind = section.effective_question, asked_type(section.effective_question)
    result = SectionResult(section.title, label, question, queries, answer_type=kind)
    candidates = evidence_candidates(memory, section, k=k, min_score=min_score, subtree=subtree, retrieval=retrieval,
                                     queries=queries, vectors=vectors)
    chosen = select_evidence(candidates, k=k, min_score=min_score, question=question)
    chosen, reason = section_evidence(question, chosen)
    for c in chosen:
        also = [
            Source(a.hit.metadata["url"], a.hit.metadata.get("last_updated"), a.hit.id, a.choice.quote, a.score)
            for a in c.also
        ]
        result.blocks.append(
            EvidenceBlock(
                label=label,
                n=len(result.blocks) + 1,
                quote=c.choice.quote,
                url=c.hit.metadata["url"],
                last_updated=c.hit.metadata.get("last_updated"),
                score=c.score,
                chunk_id=c.hit.id,
                query=c.hit.metadata.get("query") or queries[0],
                heading=bool(getattr(c.choice, "is_heading", False)),
                also_at=also,
                rank=c.rank,
                states_answer_type=carries(c.choice.quote, kind, question) if kind else None,
            )
        )
    if not result.blocks:
        log.info("%s: a Gap (%s) for %r", label, reason or "no quote meets the bar", question)
        result.gaps.append(Gap(label, question, memory.count_chunks(), memory.count_pages(), reason))
    return result


def render_markdown(charter: Charter, result: SynthesisResult) -> str:
    from .audit.hooks import acceptance_lines, section_lines

    lines = [f"# {charter.title}", ""]
    if charter.goal:
        lines += [f"Goal: {charter.goal}", ""]
    lines += [
        f"Charter `{charter.id}` · generated {result.generated_at} · evidence threshold {result.min_score:.2f} "
        f"({result.model})",
        "",
    ]
    for s in result.sections:
        lines += [f"## {s.title}", ""]
        if s.question != s.title:
            lines += [f"_{s.question}_", ""]
        for b in s.blocks:
            lines += [b.markdown, ""]
        for g in s.gaps:
            lines += [g.markdown, ""]
        lines += section_lines(result, s)  # audit (issue 14): conflicts and agreement between sources
    lines += acceptance_lines(charter, result)  # audit (issue 14): each criterion with its verdict
    return "\n".join(lines).rstrip() + "\n"


# -- concept index routing (issue 3) ------------------------------------------------------------------------


def concept_routes(charter: Charter, memory: Memory) -> tuple[Any, dict[int, str | None]]:
    """When ``memory.use_concept_index`` is on and the store has a concept index: the concept path of each
    section (index -> path), from its ``concept`` hint or else the resolved path of its question. Sections
    without a route search the whole store; a routed section falls back to it when its subtree has nothing
    above the threshold (Memory.search)."""
    if not charter.memory.use_concept_index:
        return None, {}
    try:
        from concept_index import ConceptIndex

        ci = ConceptIndex(memory=memory)
        if len(ci) <= 1:
            return None, {}
        routes = {
            i: ci.resolve_path(s.concept or s.effective_question) for i, s in enumerate(charter.outputs.sections)
        }
    except Exception:  # the index only routes; the store stays authoritative
        log.exception("concept routing unavailable for %s", charter.id)
        return None, {}
    log.info("concept routes of %s: %s", charter.id, routes)
    return ci, routes


def concept_diagram(ci: Any, routes: dict[int, str | None]) -> str:
    """A Mermaid diagram of the concepts the sections were routed to (with their ancestors)."""
    used = [n for n in (ci.find(p) for p in routes.values() if p) if n] if ci is not None else []
    if not used:
        return ""
    from concept_index import render_mermaid

    return "\n## Concepts used\n\n```mermaid\n" + render_mermaid(ci, used, highlight=used) + "```\n"


def synthesize(
    charter: Charter,
    *,
    out: str | Path | None = None,
    memory: Memory | None = None,
    query_generator: QueryGenerator | None = None,
    within: list[Path] | None = None,
) -> SynthesisResult:
    """Answer every output section of ``charter`` from its store; write the Markdown and the JSON beside it
    (``files.write_file``: a symlink at either path is replaced, never followed; ``within``: the folders an
    agent's path was confined to, no symlinked folder below them).

    Raises memory_store.StoreNotFound when the charter was never harvested."""
    from .config import open_memory

    started = time.perf_counter()
    mem = memory if memory is not None else open_memory(charter, create=False)
    min_score = charter.retrieval.min_score
    if min_score is None:
        min_score = mem.default_min_score
    ci, routes = concept_routes(charter, mem)
    vectors = SentenceVectors(mem.embedder)  # one cache of sentence vectors for all sections
    sections = [
        synthesize_section(
            mem,
            s,
            k=charter.retrieval.k,
            min_score=min_score,
            subtree=routes.get(i),
            retrieval=charter.retrieval,
            query_generator=query_generator,
            vectors=vectors,
        )
        for i, s in enumerate(charter.outputs.sections)
    ]
    result = SynthesisResult(
        charter_id=charter.id,
        title=charter.title,
        sections=sections,
        min_score=min_score,
        model=mem.model_name,
        generated_at=now(),
        t_synth_s=0.0,
    )
    from .audit.hooks import after_synthesis, audit_synthesis

    audit_synthesis(charter, result, mem)  # audit (issue 14): acceptance verdicts, conflicts between sources
    result.markdown = render_markdown(charter, result) + concept_diagram(ci, routes)
    from .files import write_file

    doc = Path(out) if out is not None else charter.doc_path
    write_file(doc, result.markdown, within=within)
    result.t_synth_s = time.perf_counter() - started
    json_path = doc.with_suffix(".json")
    write_file(json_path, json.dumps(result.to_json(), indent=2, ensure_ascii=False) + "\n", within=within)
    result.doc_path, result.json_path = doc, json_path
    after_synthesis(charter, result, mem, routes)  # audit (issue 14): the store keeps the result for /clean
    log.info("synthesized %d sections into %s", len(sections), doc)
    return result


make_module_callable(__name__, "synthesize")
