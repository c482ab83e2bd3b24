"""Evidence on the real model and the real reader: sentences, the answering quote first, a Gap where nothing
answers, one block per fact, verbatim quotes, and the lead recovered from a page's metadata."""

from __future__ import annotations

import json

import pytest

from memory_store.text import sentence_spans, sentences

#: Known misses of the shipped reader (the model card's Limits): it never learned that nothing answers, and it
#: ranks a sentence that restates a why-question above the one that answers it.
AMOUNT_MISS = pytest.mark.xfail(strict=True, reason="a known miss of the shipped reader (model card, Limits): a "
                                "quote that carries an amount clears the bar for a 'how much' question no page answers")
RESTATEMENT_MISS = pytest.mark.xfail(strict=True, reason="a known miss of the shipped reader (model card, Limits): "
                                     "it ranks the restatement of a why-question above the answering sentence")


def _store(name: str, pages: dict[str, str]):
    """A real store in the test's BRT_HOME holding ``pages`` (url -> text), embedded with the bundled model."""
    from memory_store import Memory

    mem = Memory(name)
    mem.add_many([{"url": url, "text": text, "last_updated": "2025-05-01"} for url, text in pages.items()])
    return mem


FILLER = (
    "The harbour district grew quickly after the railway arrived, and warehouses lined the waterfront for a "
    "century. Today the old warehouses hold galleries, cafés and a weekend market. The ferry terminal was "
    "rebuilt in 1998 with a glass roof, and commuters cross the bay every twenty minutes on weekdays."
)


def test_the_answering_window_outranks_a_restatement_and_a_one_word_match(brt_home, embedder):
    from orchestrator.charter import Section
    from orchestrator.evidence import synthesize_section

    bridge = (
        "The Harbour Bridge\n"
        "Visitors often ask how the harbour bridge came to be painted in its famous orange-red colour. "
        "The engineers chose the colour because it stays visible to ships in the thick fog that covers the bay "
        "most summer mornings, and it blends with the hills around the strait.\n"
        + FILLER
    )
    buses = "City transport\nThe city's buses are painted orange-red as well, a colour the transport board adopted " \
        "for its new fleet. " + FILLER
    mem = _store("evidence_window", {"https://guide.example/bridge": bridge, "https://transit.example/buses": buses})
    result = synthesize_section(mem, Section(title="Colour", question="Why was the harbour bridge painted "
                                             "orange-red?"), k=5)
    assert result.blocks, result.gaps
    first = result.blocks[0]
    assert "stays visible to ships in the thick fog" in first.quote, [b.quote for b in result.blocks]
    assert first.url == "https://guide.example/bridge"
    # neither the restatement alone nor the page that shares the colour word comes first
    assert first.quote != "Visitors often ask how the harbour bridge came to be painted in its famous orange-red " \
        "colour."
    assert 0.0 < first.score <= 1.0 and all(b.score <= first.score for b in result.blocks)


@AMOUNT_MISS
def test_an_unanswerable_question_over_a_page_with_a_tempting_number_is_a_gap(brt_home, embedder):
    from orchestrator.charter import Section
    from orchestrator.evidence import synthesize_section

    company = (
        "Northwind Traders annual report\n"
        "Northwind Traders reported revenue of $4.2 billion for the year, up 8 percent, and now employs 3,100 "
        "people in eleven countries. The company opened two distribution centres and cut delivery times by a "
        "day. Its chief executive said the online store now brings in a third of all sales.\n" + FILLER
    )
    mem = _store("evidence_gap", {"https://northwind.example/report": company})
    question = "How much did Northwind Traders pay for the football club it bought?"
    # the same page answers what it does state
    staff = synthesize_section(mem, Section(title="Staff", question="How many people does Northwind Traders "
                                            "employ?"), k=5)
    assert staff.blocks and "3,100" in staff.blocks[0].quote
    result = synthesize_section(mem, Section(title="Club price", question=question), k=5)
    assert not result.blocks, [(b.score, b.quote) for b in result.blocks]
    assert result.gaps and "No evidence met the threshold" in result.gaps[0].markdown


def test_every_quote_is_a_verbatim_span_of_its_chunk(brt_home, embedder):
    from orchestrator.charter import Section
    from orchestrator.evidence import synthesize_section

    page = (
        "Service workers\n"
        "A service worker is a script that the browser runs in the background, separate from a web page. "
        "It can intercept network requests, cache responses and serve them when the user is offline.\n"
        "- Register it from the page with navigator.serviceWorker.register().\n"
        "- It only runs over HTTPS, except on localhost.\n" + FILLER
    )
    mem = _store("evidence_verbatim", {"https://docs.example/sw": page})
    chunks = {h.id: " ".join(h.text.split()) for h in mem.search("service worker", k=10)}
    for question in ("What is a service worker?", "What can a service worker intercept?"):
        result = synthesize_section(mem, Section(title=question), k=5)
        assert result.blocks, question
        for b in result.blocks:
            assert b.quote.strip("… ") in chunks[b.chunk_id]


def test_the_reader_loads_matches_its_recorded_hash_and_reads_the_answer_higher():
    import hashlib

    from orchestrator.evidence.reader import READER_FILE, TOKENIZER_FILE, load_reader
    from orchestrator.evidence.scorer import recorded_sha256

    for path in (READER_FILE, TOKENIZER_FILE):
        assert recorded_sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest(), path
    reader = load_reader()
    logits = reader.logits("When did the ferry terminal reopen?", [
        "The ferry terminal reopened in May 2004 after a two-year rebuild.",
        "The ferry terminal is the busiest in the region.",
        "Bananas are rich in potassium.",
    ])
    assert logits[0] > logits[1] > logits[2]
    # 0 is the reader's "none of these": an answer stands above it, an unrelated sentence below
    assert logits[0] > 0 > logits[2]


# A page whose opening sentence is on the question's topic and whose second sentence restates the question, while
# the sentence that answers comes later: the shape of page the reader used to get wrong.
REASONS_PAGE = (
    "Night trains in the Alps\n"
    "Night trains across the Alps have become a popular way to travel between northern Europe and Italy. "
    "Many travellers ask why the operators moved the evening departures of their sleeper services earlier. "
    "The timetable was published in the spring and the carriages were refurbished over the winter. "
    "The departures moved to seven in the evening because track maintenance now closes the Brenner line "
    "every night from midnight, so the trains must clear the pass before the work crews arrive. "
    "Tickets can be booked up to six months ahead on the operators' websites."
)


@RESTATEMENT_MISS
def test_the_reader_puts_the_answer_above_the_on_topic_opening_and_the_restatement():
    from orchestrator.evidence.reader import load_reader

    reader = load_reader()
    question = "Why were the sleeper trains' evening departures moved earlier?"
    opening = ("Night trains across the Alps have become a popular way to travel between northern Europe and "
               "Italy.")
    restatement = ("Many travellers ask why the operators moved the evening departures of their sleeper services "
                   "earlier.")
    answer = ("The departures moved to seven in the evening because track maintenance now closes the Brenner "
              "line every night from midnight, so the trains must clear the pass before the work crews arrive.")
    heading = "Night trains in the Alps — "
    z = reader.logits(question, [heading + opening, heading + restatement, heading + answer])
    assert z[2] > max(z[0], z[1]), z


@RESTATEMENT_MISS
def test_the_section_quotes_the_answer_not_the_opening_or_the_restatement(brt_home, embedder):
    from orchestrator.charter import Section
    from orchestrator.evidence import synthesize_section

    mem = _store("evidence_reasons", {"https://rail.example/night-trains": REASONS_PAGE + "\n" + FILLER})
    result = synthesize_section(mem, Section(title="Departures", question="Why were the sleeper trains' evening "
                                             "departures moved earlier?"), k=3)
    assert result.blocks, result.gaps
    assert "track maintenance now closes the Brenner line" in result.blocks[0].quote, \
        [b.quote for b in result.blocks]


def test_segmenter_knows_abbreviations_initials_decimals_quotes_and_list_items():
    assert sentences("The minister later spoke to Dr. Amelia Okafor about it. She declined.") == [
        "The minister later spoke to Dr. Amelia Okafor about it.",
        "She declined.",
    ]
    assert sentences("Prices rose in the U.S. and Canada. Then they fell.") == [
        "Prices rose in the U.S. and Canada.",
        "Then they fell.",
    ]
    assert sentences("Use a short flash, e.g. one of 2.5 s or less. Longer ones blur.") == [
        "Use a short flash, e.g. one of 2.5 s or less.",
        "Longer ones blur.",
    ]
    assert sentences("The Hobbit was written by J. R. R. Tolkien in 1937. It sold well.") == [
        "The Hobbit was written by J. R. R. Tolkien in 1937.",
        "It sold well.",
    ]
    assert sentences('"We will be back next year." The band left. "Thank you!" he said.') == [
        '"We will be back next year."',
        "The band left.",
        '"Thank you!" he said.',
    ]
    assert sentences("Steps:\n1. Preheat the oven. Wait ten minutes.\n2) Add the flour.\n- Stir it") == [
        "Steps:",
        "1. Preheat the oven.",
        "Wait ten minutes.",
        "2) Add the flour.",
        "- Stir it",
    ]
    # a title before a function word, a month before a day, a Wikipedia tag after a full stop
    assert sentences("He met Dr. Who on Oct. 5 in Cardiff. It rained.[citation needed] Then it cleared.") == [
        "He met Dr. Who on Oct. 5 in Cardiff.",
        "It rained.[citation needed]",
        "Then it cleared.",
    ]
    text = "  A first one.  And a second one!\n\nThird?"
    assert [text[a:b] for a, b in sentence_spans(text)] == ["A first one.", "And a second one!", "Third?"]


def test_two_pages_with_the_same_fact_give_one_block_with_two_sources(brt_home, embedder):
    from memory_store import Memory
    from orchestrator.charter import Section
    from orchestrator.evidence import synthesize_section

    mem = Memory("evidence_merge")
    filler = " ".join(f"Unrelated sentence number {i} talks about gardening and the weather." for i in range(3))
    mem.add_many(
        [
            {
                "url": "https://one.example/x1",
                "text": "Acme X1 review\nThe Acme X1 console will retail for $499 "
                "in the United States from March. " + filler,
                "last_updated": "2025-01-02",
            },
            {
                "url": "https://two.example/x1",
                "text": "Acme news\nFrom March, the Acme X1 console will retail in "
                "the United States for $499. " + filler,
                "last_updated": "2025-01-03",
            },
        ]
    )
    result = synthesize_section(mem, Section(title="Price", question="How much will the Acme X1 console cost?"), k=5)
    assert len(result.blocks) == 1, [b.markdown for b in result.blocks]
    block = result.blocks[0]
    assert "$499" in block.quote
    urls = {block.url, *(s.url for s in block.also_at)}
    assert urls == {"https://one.example/x1", "https://two.example/x1"}
    assert block.markdown.count("\n") == 0 and "; also at " in block.markdown


def test_lead_recovered_from_json_ld():
    from orchestrator.harvest.extract import extract_page

    lead = (
        "Acme today cut the price of its X1 console to 399 dollars in all markets, a drop of one hundred "
        "dollars that takes effect on Monday."
    )
    body = "".join(
        f"<p>Paragraph {i} of the story goes on about the console market, its rivals and the holiday season "
        "that analysts expect to be busy this year.</p>"
        for i in range(8)
    )
    ld = json.dumps({"@type": "NewsArticle", "headline": "Acme cuts X1 price", "description": lead})
    html = (
        f'<html><head><title>Acme cuts X1 price</title><script type="application/ld+json">{ld}</script></head>'
        f'<body><div class="story"><h1>Acme cuts X1 price</h1><div class="byline"><p>{lead}</p>'
        f"<span>By A. Writer</span></div><article>{body}</article></div><footer>Copyright</footer></body></html>"
    )
    page = extract_page(html, "https://news.example/x1")
    assert page is not None and page.lead_recovered == "json-ld description"
    assert page.text.startswith(lead + "\n") and page.text.count(lead) == 1
    # a teaser that the body never shows as an article paragraph is not page text
    teaser = html.replace(f'<div class="byline"><p>{lead}</p>', '<div class="byline"><p>By the desk.</p>')
    page = extract_page(teaser, "https://news.example/x1")
    assert page is not None and page.lead_recovered is None and lead not in page.text


def test_search_rerank_orders_the_chunks_by_evidence(brt_home, embedder):
    from orchestrator.evidence.rerank import rerank_hits

    pages = {
        "https://a.example/ferry": "Ferry timetable\nThe ferry terminal reopened in May 2004 after a two-year "
        "rebuild, and boats leave every twenty minutes. " + FILLER,
        "https://b.example/terminal": "The ferry terminal\nThe ferry terminal is the busiest building of the "
        "harbour and the ferry terminal's café is open late. " + FILLER,
    }
    mem = _store("evidence_rerank", pages)
    question = "When did the ferry terminal reopen?"
    hits = mem.search(question, k=10)
    worst_first = sorted(hits, key=lambda h: h.url != "https://b.example/terminal")  # the order to undo
    assert worst_first[0].url == "https://b.example/terminal"
    ranked = rerank_hits(mem, question, worst_first, 2)
    assert len(ranked) == 2 and ranked[0].url == "https://a.example/ferry"
    scores = [h.metadata["retrieval"]["rerank_score"] for h in ranked]
    assert scores[0] >= scores[1] and 0.0 <= scores[1] <= 1.0
