"""Synthesis: for each output section, signature queries over the charter's store, a score threshold, and cited
evidence blocks (verbatim quotes with URL and last-updated date), or a Gap line when nothing meets the bar."""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory_store import Hit, Memory

    from .charter import Charter, Retrieval, Section

log = logging.getLogger(__name__)

MAX_QUOTE_WORDS = 60
# Candidates fetched per signature query before merging, thresholding and cutting to k.
CANDIDATES_PER_QUERY = 20


@dataclass
class EvidenceBlock:
    label: str
    n: int
    quote: str
    url: str
    last_updated: str | None
    score: float
    chunk_id: str
    query: str

    @property
    def markdown(self) -> str:
        return (
            f'[{self.label} Evidence #{self.n}] "{self.quote}" — {display_url(self.url)} '
            f"(last updated: {self.last_updated or 'unknown'})"
        )


@dataclass
class Gap:
    label: str
    question: str
    searched_chunks: int
    searched_pages: int

    @property
    def markdown(self) -> str:
        return (
            f'[{self.label} Gap] No evidence met the threshold for "{self.question}" '
            f"(searched {self.searched_chunks} chunks from {self.searched_pages} pages)."
        )


@dataclass
class SectionResult:
    title: str
    label: str
    question: str
    queries: list[str]
    blocks: list[EvidenceBlock] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)

    @property
    def answered(self) -> bool:
        return bool(self.blocks)


@dataclass
class SynthesisResult:
    charter_id: str
    title: str
    sections: list[SectionResult]
    min_score: float
    model: str
    generated_at: str
    t_synth_s: float
    markdown: str = ""
    doc_path: Path | None = None
    json_path: Path | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "charter_id": self.charter_id,
            "title": self.title,
            "generated_at": self.generated_at,
            "embedding_model": self.model,
            "min_score": self.min_score,
            "t_synth_s": round(self.t_synth_s, 3),
            "sections": [
                {
                    "title": s.title,
                    "label": s.label,
                    "question": s.question,
                    "queries": s.queries,
                    "blocks": [
                        {
                            "n": b.n,
                            "chunk_id": b.chunk_id,
                            "url": b.url,
                            "last_updated": b.last_updated,
                            "score": round(b.score, 4),
                            "quote": b.quote,
                            "query": b.query,
                            "markdown": b.markdown,
                        }
                        for b in s.blocks
                    ],
                    "gaps": [dict(asdict(g), markdown=g.markdown) for g in s.gaps],
                }
                for s in self.sections
            ],
        }


def display_url(url: str) -> str:
    """A URL without its scheme, as evidence blocks print it."""
    return re.sub(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", "", url)


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
_FRAME = re.compile(
    r"^\s*(?:(?:how|what|which|why|when|where|who|whom|whose)\b(?:\s+(?:do|does|did|can|could|should|would|"
    r"will|is|are|was|were|must|to|much|many|exactly))?(?:\s+(?:i|we|you|they|one|it|a|an|the|site|sites|"
    r"page|pages))?|(?:do|does|did|can|could|should|would|will|is|are|must)\s+(?:i|we|you|they|one|it|a|an|the)"
    r")\b\s*",
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

_SENTENCE_END = re.compile(r"([.!?…][\"')\]”’]*)\s+|\n+")


def split_sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) character spans of the sentences of ``text``, whitespace trimmed."""
    spans: list[tuple[int, int]] = []
    pos = 0
    for m in _SENTENCE_END.finditer(text):
        end = m.end(1) if m.group(1) else m.start()
        spans.append((pos, end))
        pos = m.end()
    spans.append((pos, len(text)))
    out = []
    for start, end in spans:
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if end > start:
            out.append((start, end))
    return out


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _clip_words(text: str, limit: int) -> str:
    words = text.split()
    if len(words) <= limit:
        return " ".join(words)
    return " ".join(words[:limit]) + " …"


def _is_heading(text: str) -> bool:
    """A short line without sentence punctuation: a heading or a label, never part of a quote's prose."""
    return len(text.split()) <= 12 and not re.search(r"[.!?…:;\"”]$", text)


def choose_quote(chunk_text: str, sentence_scores: list[float], spans: list[tuple[int, int]]) -> str:
    """The verbatim span of ``chunk_text`` that best answers the query: the best sentence, grown with its
    neighbours while they score nearly as well and the quote stays under MAX_QUOTE_WORDS words. Headings
    are neither chosen (while prose exists) nor glued onto a quote."""
    if not spans:
        return _clip_words(chunk_text, MAX_QUOTE_WORDS)
    heading = [_is_heading(chunk_text[a:b]) for a, b in spans]
    candidates = [i for i in range(len(spans)) if not heading[i]] or list(range(len(spans)))
    best = max(candidates, key=lambda i: sentence_scores[i])
    lo = hi = best

    def words(a: int, b: int) -> int:
        return len(chunk_text[spans[a][0] : spans[b][1]].split())

    while True:
        options = []
        if lo > 0 and not heading[lo - 1]:
            options.append((sentence_scores[lo - 1], lo - 1, hi))
        if hi < len(spans) - 1 and not heading[hi + 1]:
            options.append((sentence_scores[hi + 1], lo, hi + 1))
        options = [o for o in options if words(o[1], o[2]) <= MAX_QUOTE_WORDS]
        if not options:
            break
        score, new_lo, new_hi = max(options)
        # A neighbour joins when the quote is still short, or when it is nearly as relevant as the best one.
        if words(lo, hi) < 15 or score >= sentence_scores[best] - 0.05:
            lo, hi = new_lo, new_hi
        else:
            break
    quote = _collapse(chunk_text[spans[lo][0] : spans[hi][1]])
    if len(quote.split()) > MAX_QUOTE_WORDS:
        quote = _clip_words(quote, MAX_QUOTE_WORDS)
    prefix = "… " if lo > 0 and not _starts_sentence(chunk_text, spans[lo][0]) else ""
    return prefix + quote


def _starts_sentence(text: str, start: int) -> bool:
    return start == 0 or text[start].isupper() or text[start].isdigit()


def _quotes_for(memory: Memory, query: str, hits: list[Hit]) -> list[str]:
    import numpy as np

    embedder = memory.embedder
    qvec = embedder.embed_queries([query])[0]
    all_spans = [split_sentences(h.text) for h in hits]
    flat = [h.text[a:b] for h, spans in zip(hits, all_spans, strict=True) for a, b in spans]
    vecs = embedder.embed_documents(flat) if flat else np.zeros((0, len(qvec)), dtype="float32")
    scores = (vecs @ qvec).tolist() if len(flat) else []
    quotes, pos = [], 0
    for h, spans in zip(hits, all_spans, strict=True):
        quotes.append(choose_quote(h.text, scores[pos : pos + len(spans)], spans))
        pos += len(spans)
    return quotes


# -- the stage ---------------------------------------------------------------------------------------------


def synthesize_section(
    memory: Memory,
    section: Section,
    *,
    k: int,
    min_score: float,
    subtree: str | None = None,
    retrieval: Retrieval | None = None,
    query_generator: QueryGenerator | None = None,
) -> SectionResult:
    """Retrieve, threshold and quote the evidence for one section (``subtree``: concept-index route).

    All signature queries go through one ``Memory.search`` call: their candidates are fused (RRF) before the
    optional rerank and MMR, and every hit's score (cosine, best over the queries) meets ``min_score``."""
    label = section.effective_label
    queries = signature_queries(section, query_generator)
    opts: dict[str, Any] = {}
    if retrieval is not None:
        opts = {
            "mode": retrieval.mode,
            "candidates": retrieval.candidates,
            "rerank": retrieval.rerank,
            "reranker_model": retrieval.reranker_model,
            "mmr_lambda": retrieval.mmr_lambda,
        }
    opts.setdefault("candidates", CANDIDATES_PER_QUERY)
    hits = memory.search(
        queries[0], k=k, min_score=min_score, subtree=subtree, extra_queries=queries[1:], **opts
    )
    ranked = [(h.score, h, h.metadata.get("query") or queries[0]) for h in hits]
    result = SectionResult(
        title=section.title, label=label, question=section.effective_question, queries=queries
    )
    chosen: list[tuple[float, Hit, str]] = [t for t in ranked if t[0] >= min_score][:k]
    if not chosen:
        result.gaps.append(
            Gap(label, section.effective_question, memory.count_chunks(), memory.count_pages())
        )
        return result
    quotes = _quotes_for(memory, section.effective_question, [h for _, h, _ in chosen])
    seen_quotes: set[str] = set()
    for (score, hit, q), quote in zip(chosen, quotes, strict=True):
        if quote in seen_quotes:
            continue
        seen_quotes.add(quote)
        result.blocks.append(
            EvidenceBlock(
                label=label,
                n=len(result.blocks) + 1,
                quote=quote,
                url=hit.metadata["url"],
                last_updated=hit.metadata.get("last_updated"),
                score=score,
                chunk_id=hit.id,
                query=q,
            )
        )
    return result


def render_markdown(charter: Charter, result: SynthesisResult) -> str:
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
    if charter.acceptance:
        lines += ["## Acceptance criteria", ""] + [f"- {a}" for a in charter.acceptance] + [""]
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
) -> SynthesisResult:
    """Answer every output section of ``charter`` from its store; write the Markdown and the JSON beside it.

    Raises memory_store.StoreNotFound when the charter was never harvested."""
    from .config import open_memory

    started = time.perf_counter()
    mem = memory if memory is not None else open_memory(charter, create=False)
    min_score = charter.retrieval.min_score
    if min_score is None:
        min_score = mem.default_min_score
    ci, routes = concept_routes(charter, mem)
    sections = [
        synthesize_section(
            mem,
            s,
            k=charter.retrieval.k,
            min_score=min_score,
            subtree=routes.get(i),
            retrieval=charter.retrieval,
            query_generator=query_generator,
        )
        for i, s in enumerate(charter.outputs.sections)
    ]
    result = SynthesisResult(
        charter_id=charter.id,
        title=charter.title,
        sections=sections,
        min_score=min_score,
        model=mem.model_name,
        generated_at=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        t_synth_s=0.0,
    )
    result.markdown = render_markdown(charter, result) + concept_diagram(ci, routes)
    doc = Path(out) if out is not None else charter.doc_path
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(result.markdown, encoding="utf-8")
    result.t_synth_s = time.perf_counter() - started
    json_path = doc.with_suffix(".json")
    json_path.write_text(json.dumps(result.to_json(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    result.doc_path, result.json_path = doc, json_path
    log.info("synthesized %d sections into %s", len(sections), doc)
    return result
