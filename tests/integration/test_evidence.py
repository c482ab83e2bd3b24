"""Evidence that answers (issue 10): sentences, answer types, answer-bearing quotes on the real model, no padding,
one block per fact, and the lead recovered from a page's metadata."""

from __future__ import annotations

import json

import pytest

from memory_store.text import sentences
from orchestrator.quotes import (
    MIN_QUOTE_WORDS,
    SECOND_QUOTE_MARGIN,
    Quote,
    SentenceVectors,
    choose_span,
    quote_hits,
    same_facts,
    second_span,
)
from orchestrator.synthesize import (
    COVERAGE_WEIGHT,
    QUOTE_SCORE_WEIGHT,
    RETRIEVAL_PRIOR,
    Candidate,
    answer_candidates,
    candidate_rank,
    select_evidence,
    split_sentences,
)


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
    assert [text[a:b] for a, b in split_sentences(text)] == ["A first one.", "And a second one!", "Third?"]


def test_a_line_after_a_colon_is_what_it_introduces_unit():
    text = (
        "Long considered one of the great slights, the band last month was finally nominated for induction.\n"
        "The 50th Anniversary Tour 2020 dates:\n"
        "June 9 -- Coral Sky Amphitheatre, West Palm Beach, FL\n"
        "June 10 -- Credit Union Amphitheatre, Tampa, FL"
    )
    spans = split_sentences(text)
    assert len(spans) == 4
    # the intro line ranks best and carries a date (2020): before, the quote grew backwards and never held the
    # first date, since a short line without a full stop reads as a heading
    q = choose_span(text, spans, [0.5, 0.8, 0.4, 0.3], typed=[False, True, True, True], want_type=True)
    assert "June 9 -- Coral Sky" in q.quote and "June 10" not in q.quote


def test_quote_grows_into_the_neighbour_that_carries_the_expected_type_unit():
    text = "The X1 console ships in matte black with 2 TB of storage and two controllers. It retails for $499."
    spans = split_sentences(text)
    # the first sentence restates the question's subject and ranks best; the next one holds the price
    q = choose_span(text, spans, [0.8, 0.5], typed=[False, True], want_type=True)
    assert q.quote == text and q.carries_type
    # without an expected type it grows only while it is shorter than MIN_QUOTE_WORDS
    long_first = (
        "The X1 console ships in matte black with two terabytes of storage, two wireless controllers, a vertical "
        "stand, a charging dock, a headset, a remote and a voucher for three months of the online service, all "
        "inside one sturdy box. It retails for $499."
    )
    spans = split_sentences(long_first)
    assert len(long_first[: spans[0][1]].split()) >= MIN_QUOTE_WORDS
    q = choose_span(long_first, spans, [0.8, 0.5], typed=[False, False], want_type=False)
    assert q.quote.endswith("inside one sturdy box.")
    q = choose_span(long_first, spans, [0.8, 0.5], typed=[False, True], want_type=True)
    assert q.quote.endswith("$499.") and q.carries_type
    short = "The X1 ships today. It comes in black. Reviews are mixed. It retails for $499. Stock is low."
    spans = split_sentences(short)
    q = choose_span(short, spans, [0.5, 0.8, 0.4, 0.6, 0.3], typed=[False] * 5, want_type=False)
    assert q.quote == short  # under MIN_QUOTE_WORDS: grown into its neighbours, best-ranked first


def test_a_short_sentence_with_a_footnote_marker_is_prose_not_a_heading_unit():
    from concept_index.text import is_heading

    assert not is_heading("This is a form of jail solidarity.[page needed]")
    assert not is_heading("It retails for $499.[12][13]")
    assert not is_heading("He said it was 'over.'") and not is_heading("It sold out (twice.)")
    assert is_heading("History[edit]") and is_heading("Pricing and availability")
    text = (
        "In modern times, some activists who commit civil disobedience as a group collectively refuse to sign "
        "bail until certain demands are met. This is a form of jail solidarity.[4] Thoreau went to jail alone."
    )
    spans = split_sentences(text)
    # a heading is never grown into: before the fix the short second sentence was one, and the quote stopped
    q = choose_span(text, spans, [0.8, 0.5, 0.3], typed=[False] * 3, want_type=False)
    assert "jail solidarity" in q.quote


def test_a_chunk_offers_a_second_quote_apart_from_its_first_unit():
    text = (
        "The X1 console ships in matte black with two terabytes of storage and two wireless controllers. "
        "It comes with a vertical stand, a charging dock, a headset and a remote in one sturdy box. "
        "Reviewers praised the quiet fan and the fast menus across the whole of its first week on sale. "
        "Stock was short in most countries, and the queues outside the shops were long on launch day. "
        "It retails for $499 in the United States and for 549 euros in most of Europe."
    )
    spans = split_sentences(text)
    rank = [0.8, 0.3, 0.2, 0.1, 0.65]
    first = choose_span(text, spans, rank, typed=[False] * 5, want_type=False)
    assert first.sentences == (0, 2)  # grown into its neighbours up to MIN_QUOTE_WORDS
    second = second_span(text, spans, rank, typed=[False] * 5, want_type=False, first=first)
    # its best passage, grown towards MIN_QUOTE_WORDS but never into the first quote
    assert second is not None and second.sentences == (3, 4) and "$499" in second.quote
    assert second.rank == 0.65 and second.quote.startswith("Stock was short")
    # a passage ranked further than SECOND_QUOTE_MARGIN below the first is no second quote
    far = [0.8, 0.3, 0.2, 0.1, 0.8 - SECOND_QUOTE_MARGIN - 0.01]
    assert second_span(text, spans, far, typed=[False] * 5, want_type=False, first=first) is None
    # a chunk the first quote covers whole has none
    two = "The X1 console ships in black. It retails for $499."
    spans2 = split_sentences(two)
    first2 = choose_span(two, spans2, [0.8, 0.7], typed=[False, False], want_type=False)
    assert first2.sentences == (0, 1)
    assert second_span(two, spans2, [0.8, 0.7], typed=[False, False], want_type=False, first=first2) is None


class _Hit:
    def __init__(self, text, url="https://news.example/a", score=0.6):
        self.text = text
        self.id = "sha256:" + str(abs(hash(text)))
        self.score = score
        self.metadata = {"url": url, "last_updated": "2025-01-02", "title": ""}


@pytest.mark.parametrize(
    ("question", "chunk", "answer"),
    [
        (
            "How much will the Acme X1 console cost at launch?",
            "The Acme X1 console comes in matte black with two terabytes of storage and a redesigned controller. "
            "It will sell for $499 when it launches in the United States.\nReviews follow later.",
            "$499",
        ),
        (
            "When was the Treaty of Lindau signed?",
            "The Treaty of Lindau settled the border dispute between the two river cities after years of talks. "
            "Its text was signed on 14 March 1822 in the town hall.\nTrade grew afterwards.",
            "1822",
        ),
        (
            "How many turbines does the Korsfjord wind farm have?",
            "The Korsfjord wind farm stands on the exposed western coast of the island. "
            "Its operator runs 84 turbines there.\nThe site opened to visitors.",
            "84 turbines",
        ),
        (
            "Which physician first described Halvorsen syndrome?",
            "Halvorsen syndrome is a rare inherited disorder of the inner ear that causes dizziness. "
            "It was first described by the Norwegian doctor Ingrid Halvorsen Berg.\nIt has no cure.",
            "Ingrid Halvorsen Berg",
        ),
        (
            "What is the term for the absence of observable free quarks?",
            "Decades of experiments at particle accelerators around the world have searched for free quarks, in "
            "collisions of protons, electrons and heavy ions at ever higher energies, and every one of these "
            "searches has failed to observe a single quark on its own outside of a hadron. "
            "This absence is known as colour confinement.\nThe theory is hard to test.",
            "colour confinement",
        ),
    ],
)
def test_quote_holds_the_answer_from_the_next_sentence(embedder, question, chunk, answer):
    hits = [_Hit(chunk)]
    ((quote, score), *_), = quote_hits(  # one hit: its first quote
        question,
        hits,
        SentenceVectors(embedder),
        embedder.embed_queries([question])[0],
        split=split_sentences,
    )
    assert answer in quote.quote, quote
    # the block's score is the quote's own cosine to the question
    direct = float(embedder.embed_documents([quote.in_context])[0] @ embedder.embed_queries([question])[0])
    assert score == pytest.approx(direct, abs=1e-4)


def test_a_headline_is_quoted_when_it_holds_the_answer(embedder):
    question = "How much does the Acme X1 console cost?"
    chunk = (
        "Acme X1 console costs $499\n"
        "Acme today unveiled its new console, the X1, with a matte finish and two terabytes of storage. "
        "Pre-orders open next week in most countries."
    )
    ((quote, _), *_), = quote_hits(
        question,
        [_Hit(chunk)],
        SentenceVectors(embedder),
        embedder.embed_queries([question])[0],
        split=split_sentences,
    )
    assert quote.is_heading and quote.quote == "Acme X1 console costs $499"


_BRIDGE = (
    "The Harbour Bridge in Norrvik is a steel arch bridge that carries road and rail traffic across the harbour to "
    "the northern shore. The bridge was opened in 1932 after eight years of construction, and it remains the widest "
    "long-span bridge in the region. Its granite pylons were quarried near the town of Moruya and shipped north by "
    "boat. The city council later added a walkway for visitors along the eastern side of the arch. Sixteen workers "
    "died during its construction, most of them in falls from the arch."
)


def test_the_answer_three_sentences_from_the_restating_one_is_a_second_block(embedder):
    question = "How many workers died building the Harbour Bridge in Norrvik?"
    hit = _Hit(_BRIDGE)
    quoted = quote_hits(
        question, [hit], SentenceVectors(embedder), embedder.embed_queries([question])[0], split=split_sentences
    )
    first, second = [q for q, _ in quoted[0] if not q.is_core]  # each may be followed by its core
    assert "Sixteen workers died" not in first.quote and "Sixteen workers died" in second.quote
    cands = [Candidate(hit, q, score, True, candidate_rank(q.rank, 0)) for q, score in quoted[0]]
    blocks = select_evidence(cands, k=5, min_score=0.35)
    assert any("Sixteen workers died" in c.choice.quote for c in blocks)
    # a claim is matched by the passage that states it: one quote per chunk
    claim = "Sixteen workers died building the Harbour Bridge in Norrvik."
    (quotes,) = quote_hits(
        claim, [hit], SentenceVectors(embedder), embedder.embed_queries([claim])[0], split=split_sentences
    )
    assert len([q for q, _ in quotes if not q.is_core]) == 1


_INQUIRY = (
    "Shares of its largest investor fell four percent in Tokyo trading. The company, which is expected to lay off "
    "thousands of employees beginning this week as it faces ballooning losses, confirmed on Monday that it had been "
    "contacted by the office of the state attorney general, Letitia James. \u201cWe received an inquiry from the "
    "office of the New York State Attorney General and are cooperating in the matter,\u201d a company spokesperson "
    "said when contacted by reporters on Monday."
)


def test_a_questions_quote_holds_two_long_sentences_a_claims_stays_shorter(embedder):
    from orchestrator.quotes import MAX_CLAIM_QUOTE_WORDS, MAX_QUOTE_WORDS

    question = "Who heads the state law-enforcement office that has opened an inquiry into the company?"
    ((quote, _), *_), = quote_hits(
        question, [_Hit(_INQUIRY)], SentenceVectors(embedder), embedder.embed_queries([question])[0],
        split=split_sentences,
    )
    # the spokesperson's sentence restates the question; the one before it, too long to join under 60 words, answers
    assert "Letitia James" in quote.quote and "We received an inquiry" in quote.quote
    assert MAX_CLAIM_QUOTE_WORDS < len(quote.quote.split()) <= MAX_QUOTE_WORDS
    claim = "The state attorney general's office opened an inquiry into the company."
    ((quote, _), *_), = quote_hits(
        claim, [_Hit(_INQUIRY)], SentenceVectors(embedder), embedder.embed_queries([claim])[0], split=split_sentences
    )
    assert len(quote.quote.split()) <= MAX_CLAIM_QUOTE_WORDS


_ROWING = (
    "Norrvik rowing club ranked 9th in the national regatta series for the 2006 season. "
    "Norrvik was also a regional powerhouse in rowing. "
    "However, its dominance has been eroded by quarrels within the now defunct Norrvik Rowing Association, leading "
    "to a ban by the league which was lifted in March 2007."
)


def test_a_quote_that_grew_offers_its_core_unit():
    text = "The museum is free. It covers 12.5 acres and 145 galleries. Its collection spans five thousand years."
    spans = split_sentences(text)
    grown = choose_span(text, spans, [0.2, 0.8, 0.3], typed=[False] * 3, want_type=False)
    assert grown.sentences == (0, 2) and not grown.is_core
    assert grown.core is not None and grown.core.is_core and grown.core.sentences == (1, 1)
    assert grown.core.quote == "It covers 12.5 acres and 145 galleries." and grown.core.rank == grown.rank
    long = "The museum covers 12.5 acres" + ", and galleries of art and design" * 7 + ". It is free."
    alone = choose_span(long, split_sentences(long), [0.8, 0.3], typed=[False] * 2, want_type=False)
    assert alone.sentences == (0, 0) and alone.core is None  # MIN_QUOTE_WORDS words already: no growth, no core


def test_the_core_of_a_quote_its_neighbours_pull_under_the_bar_is_a_block(embedder):
    question = "When was the ban by the league lifted?"
    hit = _Hit(_ROWING, score=0.30)
    quoted = quote_hits(
        question, [hit], SentenceVectors(embedder), embedder.embed_queries([question])[0], split=split_sentences
    )
    (grown, grown_score), (core, core_score) = quoted[0]
    assert core is grown.core and "March 2007" in grown.quote
    assert grown_score < 0.35 <= core_score  # the two sentences before it say nothing of the ban
    blocks = select_evidence(answer_candidates(question, [hit], quoted), k=5, min_score=0.35)
    assert [c.choice.quote for c in blocks] == [core.quote] and blocks[0].score == core_score
    assert core.quote.startswith("However, its dominance") and "lifted in March 2007" in core.quote


def test_a_core_needs_the_questions_terms_and_is_no_second_block_of_its_quote():
    from orchestrator.synthesize import FAR_COVERAGE

    grown = Quote("Tools report data for one URL. It has enough traffic.", rank=0.8)
    core = Quote("It has enough traffic.", rank=0.8, is_core=True)
    grown.core = core
    page = "https://crux.example/a"
    weak, bare = _cand(grown.quote, 0.8, page, score=0.30), _cand(core.quote, 0.8, page, score=0.48)
    weak.choice, bare.choice = grown, core
    bare.covers = FAR_COVERAGE - 0.01  # one short sentence that shares a word with the question: no evidence
    assert select_evidence([weak, bare], k=5, min_score=0.35) == []
    bare.covers = FAR_COVERAGE
    assert select_evidence([weak, bare], k=5, min_score=0.35) == [bare]
    weak.score = 0.40  # the quote it grew into is a block: its core adds nothing
    assert select_evidence([weak, bare], k=5, min_score=0.35) == [weak]


def test_a_quote_inside_an_earlier_block_of_its_page_is_dropped_though_its_numbers_differ():
    wide = "The V&A covers 12.5 acres. It has 145 galleries."
    cands = [
        _cand(wide, 0.8, "https://va.example/"),
        _cand("It has 145 galleries.", 0.7, "https://va.example/"),
        _cand("It has 145 galleries.", 0.6, "https://mirror.example/"),
    ]
    assert not same_facts(cands[1].choice.quote, wide)  # other numbers: not the same facts
    chosen = select_evidence(cands, k=5, min_score=0.35)
    assert [c.choice.quote for c in chosen] == [wide, "It has 145 galleries."]  # another page's words stay


def _cand(quote, rank, url, score=0.6, chunk_score=0.6):
    return Candidate(_Hit(quote, url, score=chunk_score), Quote(quote, rank=rank), score, True, rank)


def test_retrieval_order_breaks_near_ties_of_the_quote_rank():
    # retrieval's first chunk quotes a little less well than its fourth: retrieval judged the whole chunk, so the
    # first stays first; a fourth chunk whose quote is far better comes first
    quotes = [
        ("Aspirin lowered the risk of stroke in the trial.", 0.70),
        ("Stroke risk fell with aspirin.", 0.72),
        ("Trials of many drugs were run.", 0.60),
        ("Aspirin and stroke were both studied here.", 0.74),
    ]
    cands = [
        Candidate(_Hit(q, f"https://s{i}.example/"), Quote(q, rank=r), 0.6, True, candidate_rank(r, i))
        for i, (q, r) in enumerate(quotes)
    ]
    chosen = select_evidence(cands, k=5, min_score=0.35)
    assert chosen[0].choice.quote == quotes[0][0]
    assert [c.choice.quote for c in chosen[:2]] == [quotes[0][0], quotes[1][0]]
    cands[3].rank = candidate_rank(0.95, 3)
    assert select_evidence(cands, k=5, min_score=0.35)[0].choice.quote == quotes[3][0]


def test_the_whole_quote_weighs_in_the_order_of_the_blocks():
    # the headline and lead repeat the question's words (their best sentence ranks first), but the passage as a
    # whole is about the hunt; the next chunk's quote answers and is closer to the question as a whole
    question = "How many people who had been near the rabbit-eating hunter were placed in medical quarantine?"
    lead = (
        "Hunter diagnosed with bubonic plague after eating a rabbit. A hunter who killed and ate a wild rabbit "
        "in China has been hit by the deadly bubonic plague."
    )
    answer = "Health bosses said that 28 people in close contact with the hunter were initially quarantined."
    hits = [_Hit(lead), _Hit(answer)]
    quoted = [[(Quote(lead, rank=0.96), 0.58)], [(Quote(answer, rank=0.94), 0.85)]]
    cands = answer_candidates(question, hits, quoted)
    lead_rank = candidate_rank(0.96, 0) + QUOTE_SCORE_WEIGHT * 0.58 + COVERAGE_WEIGHT * cands[0].covers
    assert cands[0].rank == pytest.approx(lead_rank)
    assert candidate_rank(0.96, 0) > candidate_rank(0.94, 1)  # by the best sentence alone, the lead came first
    chosen = select_evidence(cands, k=5, min_score=0.35)
    assert chosen[0].choice.quote == answer


def test_the_quote_that_holds_more_of_the_questions_terms_ranks_first():
    # two passages alike to the model; the one that names the branches and what they discharge to answers
    question = "Where do the branches Waal and Nederrijn-Lek discharge to?"
    other = "The discharge of the Rhine is divided among three branches: the River Waal and two others."
    answer = "At present, the branches Waal and Nederrijn-Lek discharge to the North Sea, near Rotterdam."
    hits = [_Hit(other), _Hit(answer)]
    quoted = [[(Quote(other, rank=1.0), 0.6)], [(Quote(answer, rank=0.99), 0.6)]]
    cands = answer_candidates(question, hits, quoted)
    assert cands[1].covers > cands[0].covers
    assert cands[1].rank - cands[0].rank == pytest.approx(
        -RETRIEVAL_PRIOR - 0.01 + COVERAGE_WEIGHT * (cands[1].covers - cands[0].covers)
    )
    assert select_evidence(cands, k=5, min_score=0.35)[0].choice.quote == answer


def test_one_good_block_prints_one_not_k():
    cands = [
        _cand("The X1 console retails for $499 in the United States.", 0.95, "https://a.example/1"),
        _cand("Consoles are popular gifts during the holiday season.", 0.55, "https://b.example/2"),
        _cand("Our newsletter covers games, consoles and more.", 0.50, "https://c.example/3"),
    ]
    chosen = select_evidence(cands, k=5, min_score=0.35)
    assert [c.choice.quote for c in chosen] == ["The X1 console retails for $499 in the United States."]
    assert len(select_evidence(cands, k=5, min_score=0.35, margin=None)) == 3  # the margin is what drops them


def test_same_facts_on_two_pages_merge_but_other_numbers_do_not():
    a = "The Acme X1 console will retail for $499 in the United States from March."
    b = "From March, the Acme X1 console will retail in the United States for $499."
    assert same_facts(a, b)
    assert not same_facts(a, b.replace("$499", "$549"))


def test_a_quote_that_says_more_than_an_earlier_block_is_not_merged_into_it():
    first = (
        "Together with Coke, Wesley sent a revision of the Prayerbook which was adopted by the Baltimore "
        "Christmas Conference, officially establishing the Methodist Episcopal Church."
    )
    grown = first + " The conference was held at the Lovely Lane Methodist Church, considered the mother church."
    assert not same_facts(grown, first)  # the later quote holds the answer the earlier one lacks
    assert same_facts(first, grown)  # a later quote inside an earlier block repeats it
    # on another page the longer quote is a block of its own, not a second source of the first
    cands = [_cand(first, 0.60, "https://umc.example/h"), _cand(grown, 0.58, "https://mirror.example/h")]
    chosen = select_evidence(cands, k=5, min_score=0.35)
    assert [c.choice.quote for c in chosen] == [first, grown] and chosen[0].also == []
    cands = [_cand(grown, 0.60, "https://umc.example/h"), _cand(first, 0.58, "https://umc.example/h")]
    chosen = select_evidence(cands, k=5, min_score=0.35)
    assert [c.choice.quote for c in chosen] == [grown] and chosen[0].also == []  # same page: no second source


def test_a_wider_quote_of_the_same_page_replaces_the_earlier_block_in_its_place():
    first = "The conference adopted the Articles of Religion and established the Methodist Episcopal Church."
    grown = first + " The conference was held at the Lovely Lane Methodist Church in Baltimore."
    other = "Methodism spread quickly along the frontier through circuit riders and camp meetings."
    cands = [
        _cand(first, 0.80, "https://umc.example/h", score=0.62),
        _cand(other, 0.70, "https://other.example/m"),
        _cand(grown, 0.60, "https://umc.example/h", score=0.55),  # another chunk of the same page
    ]
    chosen = select_evidence(cands, k=5, min_score=0.35)
    assert [c.choice.quote for c in chosen] == [grown, other]  # one block of the page, not its text twice
    assert chosen[0].score == 0.55 and chosen[0].rank == 0.80  # the quote's own score; the block keeps its place
    # a wider quote that holds two earlier blocks of its page replaces the first in its place; the second goes
    later = "The conference also ordained Francis Asbury as superintendent of the new church in America."
    cands = [
        _cand(first, 0.80, "https://umc.example/h", score=0.62),
        _cand(other, 0.70, "https://other.example/m"),
        _cand(later, 0.65, "https://umc.example/h"),
        _cand(f"{first} {later}", 0.60, "https://umc.example/h", score=0.57),
    ]
    chosen = select_evidence(cands, k=5, min_score=0.35)
    assert [c.choice.quote for c in chosen] == [f"{first} {later}", other] and chosen[0].score == 0.57
    # on another page the same words are a second source of one block (same facts), not a wider quote
    cands = [cands[0], cands[1], _cand(first, 0.60, "https://mirror.example/h")]
    chosen = select_evidence(cands, k=5, min_score=0.35)
    assert [c.choice.quote for c in chosen] == [first, other] and len(chosen[0].also) == 1


def test_two_pages_with_the_same_fact_give_one_block_with_two_sources(brt_home, embedder):
    from memory_store import Memory
    from orchestrator.charter import Section
    from orchestrator.synthesize import synthesize_section

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
    result = synthesize_section(
        mem, Section(title="Price", question="How much will the Acme X1 console cost?"), k=5, min_score=0.35
    )
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


def test_the_bar_is_the_quotes_not_the_chunks(brt_home, embedder):
    # the answer stands in a long chunk about other things: the whole chunk is far from the question (cosine
    # under min_score), its sentence is close; min_score is the bar of the quote, so the block is there. An
    # unrelated question still gets a Gap.
    from memory_store import Memory
    from orchestrator.charter import Section
    from orchestrator.synthesize import synthesize_section

    filler = (
        "The island has a small harbour used by fishing boats. Sheep graze on the western slopes, and a ferry "
        "calls twice a week in summer. The chapel on the hill dates from the twelfth century and was restored in "
        "1890. Puffins nest on the northern cliffs from April to August. The school closed when the last family "
        "with children moved to the mainland. "
    )
    answer = "The keeper of the lighthouse was paid 40 pounds a year."
    mem = Memory("evidence_bar")
    mem.add_many([{"url": "https://isle.example/guide", "text": filler + answer + " " + filler}])
    question = "What was the salary of the lighthouse keeper?"
    (chunk,) = mem.search(question, k=1)
    assert chunk.score < 0.35  # the chunk alone would not pass
    result = synthesize_section(mem, Section(title="Salary", question=question), k=5, min_score=0.35)
    assert [b.url for b in result.blocks] == ["https://isle.example/guide"]
    assert "40 pounds" in result.blocks[0].quote and result.blocks[0].score >= 0.35
    off_topic = synthesize_section(
        mem, Section(title="Cup", question="Who won the 1998 football world cup?"), k=5, min_score=0.35
    )
    assert not off_topic.blocks and off_topic.gaps


def test_a_quote_from_a_far_chunk_must_clear_the_bar_by_a_margin():
    from orchestrator.synthesize import FAR_CHUNK_MARGIN

    near = _cand("CrUX reports data per URL.", 0.9, "https://a.example/1", score=0.37, chunk_score=0.40)
    far = _cand("CrUX reports data per origin.", 0.9, "https://b.example/2", score=0.37, chunk_score=0.30)
    assert select_evidence([near, far], k=5, min_score=0.35) == [near]
    far.score = 0.35 + FAR_CHUNK_MARGIN
    assert select_evidence([far], k=5, min_score=0.35) == [far]


def test_a_far_chunks_quote_that_holds_the_questions_terms_needs_no_margin():
    from orchestrator.synthesize import FAR_COVERAGE, answer_candidates

    question = "What is another name for State Route 168?"
    quotes = [
        "State Route 168, the Sierra Freeway, heads east to the city of Clovis and Huntington Lake.",
        "Fresno is served by State Route 99, the main north/south freeway of the valley.",
        "The city has a large Armenian community and many vineyards.",
    ]
    hits = [_Hit(q, f"https://f.example/{i}", score=0.30) for i, q in enumerate(quotes)]
    cands = answer_candidates(question, hits, [[(Quote(q, rank=0.8), 0.37)] for q in quotes])
    named, partial, none = (c.covers for c in cands)
    assert named >= FAR_COVERAGE > partial and none == 0.0  # "168" is the rare term: "State Route" is shared
    assert select_evidence(cands, k=5, min_score=0.35) == [cands[0]]
    # below min_score it is no evidence, whatever words it holds
    cands[0].score = 0.34
    assert select_evidence(cands, k=5, min_score=0.35) == []
