"""Pure logic of synthesis: signature queries, sentence spans, quote choice and the block/gap formats."""

from __future__ import annotations

from orchestrator.charter import Section
from orchestrator.synthesize import (
    MAX_QUOTE_WORDS,
    EvidenceBlock,
    Gap,
    choose_quote,
    display_url,
    signature_queries,
    split_sentences,
)

CHUNK = (
    "What counts as good\n"
    "An Interaction to Next Paint of 200 milliseconds or less is good. Between 200 and 500 milliseconds it "
    "needs improvement. A visit without any interaction has no INP value at all.\n"
    "How to improve it\n"
    "Break up long tasks."
)


def scores_for(text, best_phrase):
    spans = split_sentences(text)
    return spans, [1.0 if best_phrase in text[a:b] else 0.1 for a, b in spans]


def test_quote_is_verbatim_and_never_glues_a_heading():
    spans, scores = scores_for(CHUNK, "200 milliseconds or less")
    scores[0] = 0.99  # the heading scores high, but it is not prose
    quote = choose_quote(CHUNK, scores, spans)
    assert quote.startswith("An Interaction to Next Paint of 200 milliseconds or less is good.")
    assert "What counts as good" not in quote and "How to improve it" not in quote
    assert quote in " ".join(CHUNK.split())


def test_quote_is_at_most_60_words_with_elision_mark():
    long_sentence = " ".join(f"word{i}" for i in range(120)) + "."
    spans, scores = scores_for(long_sentence, "word1")
    quote = choose_quote(long_sentence, scores, spans)
    assert quote.endswith("…") and len(quote.rstrip(" …").split()) == MAX_QUOTE_WORDS


def test_signature_queries_base_paraphrase_counterfactual():
    s = Section(title="CLS mitigation", label="CLS", question="How do I minimise layout shift?")
    assert signature_queries(s) == [
        "How do I minimise layout shift?",
        "CLS mitigation: minimise layout shift",
        "CLS mitigation: minimise layout shift — limitations, failures, drawbacks and criticisms",
    ]
    assert signature_queries(Section(title="Tides")) == [
        "Tides",
        "Tides — limitations, failures, drawbacks and criticisms",
    ]
    # the label joins when it says something new; never more than 4 queries
    q = signature_queries(Section(title="Layout stability", label="CLS", question="What is a good score?"))
    assert q[0] == "What is a good score?" and q[1] == "Layout stability CLS: good score" and len(q) == 3
    # the optional generator (an LLM hook, off by default) adds queries; its failure changes nothing
    more = signature_queries(s, lambda sec: ["reserve space for images", "x", "y"])
    assert len(more) == 4 and more[2] == "reserve space for images" and "criticisms" in more[-1]

    def broken(sec):
        raise RuntimeError("no model")

    assert signature_queries(s, broken) == signature_queries(s)


def test_block_and_gap_formats():
    b = EvidenceBlock(
        "CLS",
        1,
        "Reserve space for images.",
        "https://web.dev/articles/cls",
        "2025-09-14",
        0.7,
        "sha256:x",
        "q",
    )
    assert b.markdown == (
        '[CLS Evidence #1] "Reserve space for images." — web.dev/articles/cls (last updated: 2025-09-14)'
    )
    b.last_updated = None
    assert b.markdown.endswith("(last updated: unknown)")
    g = Gap("CLS", "How do I minimise cumulative layout shift?", 412, 37)
    assert g.markdown == (
        '[CLS Gap] No evidence met the threshold for "How do I minimise cumulative layout '
        'shift?" (searched 412 chunks from 37 pages).'
    )
    assert display_url("http://127.0.0.1:8765/a.html") == "127.0.0.1:8765/a.html"


def test_heading_ending_in_parenthesis_is_not_glued():
    text = ("Cumulative Layout Shift (CLS)\nCumulative Layout Shift measures visual stability. "
            "A score of 0.1 or less is good.")
    spans, scores = scores_for(text, "measures visual stability")
    quote = choose_quote(text, scores, spans)
    assert quote.startswith("Cumulative Layout Shift measures visual stability.")
    assert "(CLS)" not in quote
