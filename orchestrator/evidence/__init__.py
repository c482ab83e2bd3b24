"""Evidence: for each section of a charter, verbatim quotes that answer its question, or a Gap.

How a section's evidence is chosen, one module a step:

1. ``queries``: the section's signature queries (question, topic, counterfactual, label) and what its question
   asks for (who, when, a quantity, why, how, ...);
2. retrieval (``memory_store``): the chunks the queries find, fused and diversified (``section.py``);
3. ``spans``: every sentence of those chunks and every window of two or three consecutive sentences is a
   candidate quote, a verbatim span of its chunk;
4. ``features``: one ``Features`` record of general signals per candidate (embedding, lexical, position, shape,
   answer type);
5. ``scorer``: one fitted function turns a record into the probability that the quote answers the question
   (weights fitted with cross-validation on dev data by ``bench/fit_evidence_scorer.py``; the thresholds live in
   the same weights file);
6. ``select``: best first; a block only where it reaches the threshold, a Gap where none does; further blocks
   are distinct answers or the same facts on another page ("also at"), never padding;
7. ``results`` and ``render``: the typed records, their JSON and the Markdown lines (docs/contracts.md,
   "Evidence blocks").
"""

from __future__ import annotations

from .features import FEATURES, Features
from .queries import QueryGenerator, signature_queries, topic_phrase
from .results import EvidenceBlock, Gap, SectionResult, Source, SynthesisResult, acceptance_summary, display_url
from .scorer import Scorer, load_scorer
from .section import Candidates, SynthesisCache, section_candidates, synthesize_section
from .select import Scored, same_facts, select

__all__ = [
    "FEATURES",
    "Candidates",
    "EvidenceBlock",
    "Features",
    "Gap",
    "QueryGenerator",
    "Scored",
    "Scorer",
    "SectionResult",
    "Source",
    "SynthesisCache",
    "SynthesisResult",
    "acceptance_summary",
    "display_url",
    "load_scorer",
    "same_facts",
    "section_candidates",
    "select",
    "signature_queries",
    "synthesize_section",
    "topic_phrase",
]
