"""Pure logic of synthesis: signature queries, sentence spans, quote choice and the block/gap formats."""

from __future__ import annotations

from orchestrator.charter import Section
from orchestrator.legacy_quotes import MAX_QUOTE_WORDS, QuoteChoice, choose_quote, choose_quote_in_context
from orchestrator.relevance import index_entries, mentions, named_subjects, title_head
from orchestrator.synthesize import (
    Candidate,
    EvidenceBlock,
    Gap,
    answer_candidates,
    display_url,
    section_evidence,
    select_evidence,
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


CLS_CHUNK = (
    "Cumulative Layout Shift (CLS)\n"
    "Cumulative Layout Shift measures visual stability.\n"
    "What counts as good\n"
    "A Cumulative Layout Shift score of 0.1 or less is good.\n"
    "How to minimise layout shift\n"
    "- Give every image width and height attributes. The browser then reserves the space.\n"
    "- Reserve space for ads and embeds."
)


def test_a_heading_that_matches_best_quotes_the_prose_under_it():
    spans = split_sentences(CLS_CHUNK)
    texts = [CLS_CHUNK[a:b] for a, b in spans]
    scores = {
        "How to minimise layout shift": 0.9,  # the heading answers "how do I minimise ..."
        "A Cumulative Layout Shift score of 0.1 or less is good.": 0.7,
        "Cumulative Layout Shift (CLS)": 0.8,
    }
    choice = choose_quote_in_context(CLS_CHUNK, [scores.get(t, 0.2) for t in texts], spans)
    # the first item under that heading, grown within its item, without its bullet and never into the next
    assert choice.quote == "Give every image width and height attributes. The browser then reserves the space."
    assert choice.heading == "How to minimise layout shift" and choice.by_heading
    assert choice.in_context.startswith("How to minimise layout shift: Give every image")

    # a sentence that scores as well as the best heading wins, and lends nothing of its heading to coverage
    scores["A Cumulative Layout Shift score of 0.1 or less is good."] = 0.88
    choice = choose_quote_in_context(CLS_CHUNK, [scores.get(t, 0.2) for t in texts], spans)
    assert choice.quote.startswith("A Cumulative Layout Shift score of 0.1 or less is good.")
    assert choice.heading == "What counts as good" and not choice.by_heading
    # a sentence that names what the question names is preferred to one that scores higher without it
    named = ["Cumulative Layout Shift measures" in t for t in texts]
    choice = choose_quote_in_context(CLS_CHUNK, [scores.get(t, 0.2) for t in texts], spans, named=named)
    assert choice.quote.startswith("Cumulative Layout Shift measures visual stability.")


def test_why_cant_questions_keep_their_topic():
    s = Section(title="Lab versus field", label="Lab", question="Why can't a Lighthouse lab test measure INP?")
    assert signature_queries(s)[1] == "Lab versus field: Lighthouse lab test measure INP"
    s = Section(title="Loading", question="Why doesn't the page load?")
    assert signature_queries(s)[1] == "Loading: page load"


class _Hit:
    def __init__(self, url):
        self.metadata = {"url": url}
        self.score = 0.9


def test_select_evidence_checks_each_quote():
    def cand(quote, score):
        return Candidate(_Hit("http://x/" + quote), QuoteChoice(quote), score)

    candidates = [
        cand("first", 0.40),
        cand("weak", 0.30),  # the chunk passed retrieval, but its quote is below the threshold
        cand("best", 0.80),
        cand("first", 0.55),  # the same quote again (another page)
        cand("third", 0.45),
    ]
    chosen = select_evidence(candidates, k=2, min_score=0.35)
    assert [(c.choice.quote, c.score) for c in chosen] == [("first", 0.40), ("best", 0.80)]  # retrieval order
    assert [c.choice.quote for c in select_evidence(candidates, k=9, min_score=0.35)] == ["first", "best", "third"]
    assert select_evidence(candidates, k=5, min_score=0.95) == []


def test_named_subjects_and_mentions():
    assert named_subjects("What Largest Contentful Paint time counts as good?") == ["Largest Contentful Paint"]
    assert named_subjects("What Interaction to Next Paint value counts as good?") == ["Interaction to Next Paint"]
    assert named_subjects("Why can't a Lighthouse lab test measure INP, and what should I do?") == ["Lighthouse", "INP"]
    assert named_subjects("How do I minimise cumulative layout shift?") == []
    assert named_subjects("What share of websites serve their traffic over HTTP/3?") == ["HTTP/3"]
    assert named_subjects("The Bank of England raised rates in June.") == ["Bank of England", "June"]
    assert named_subjects("Exposure to sunlight matters.") == []  # a first word is capitalised anyway
    assert named_subjects("ALDH1 expression predicts relapse.") == ["ALDH1"]
    assert named_subjects("What Is The Best Way To Cache?") == []  # Title Case says nothing
    assert mentions("An Interaction  to next Paint of 200 ms", "Interaction to Next Paint")
    assert mentions("(LCP) is good", "LCP") and not mentions("LCPX is good", "LCP")
    # a name's plural or possessive mentions it; a longer word does not
    assert mentions('The English name "Normans" comes from', "Norman") and mentions("Google's results", "Google")
    assert mentions("Some Huguenots settled in", "Huguenot") and mentions("two Bank of Englands", "Bank of England")
    assert not mentions("Normandy experienced a golden age", "Norman") and not mentions("Normanesque", "Norman")



def test_an_acronym_is_mentioned_by_the_words_it_abbreviates():
    assert mentions("The United Methodist Church (x) baptises infants.", "UMC")
    assert mentions("The Victoria and Albert Museum, London", "V&A")
    assert mentions("exports to the United States rose", "US")
    assert mentions("the Bank of England raised", "BE")  # connectors between the words
    # the capitals must spell it, word by word, case-sensitively: lower-case words and other initials do not
    assert not mentions("the united methodist church", "UMC")
    assert not mentions("United Methodist congregations", "UMC")
    assert not mentions("Ultra Methodist Church", "UMCX")
    # only acronyms expand: a capitalised name still needs its own words
    assert not mentions("Great Dining Room", "Green Dining Room")

def test_select_evidence_keeps_the_quotes_that_name_what_was_asked():
    def cand(quote, names):
        return Candidate(_Hit("http://x/" + quote), QuoteChoice(quote), 0.6, names)

    sibling = [cand("LCP threshold", True), cand("INP threshold", False), cand("LCP how-to", True)]
    assert [c.choice.quote for c in select_evidence(sibling, k=3, min_score=0.35)] == ["LCP threshold", "LCP how-to"]
    assert len(select_evidence(sibling, k=3, min_score=0.35, named=False)) == 3
    # when the first page does not name it (the sources word it otherwise), the check keeps what the threshold keeps
    unnamed_first = [cand("a", False), cand("b", True), cand("c", False)]
    assert len(select_evidence(unnamed_first, k=3, min_score=0.35)) == 3


def test_term_coverage_weighs_a_questions_rare_terms():
    from orchestrator.quotes import term_coverage

    docs = [
        "Marie Curie won the Nobel Prize in Physics.",
        "Marie Curie also won the prize in chemistry.",
        "The prize is awarded every year.",
        "Nothing here.",
    ]
    full, two, one, none = term_coverage("Who won the physics prize?", docs)
    assert full == 1.0 and none == 0.0
    assert full > two > one > 0.0
    # "physics" (one doc) weighs more than "prize" (three): the doc holding it alone would cover more
    physics_only, prize_only = term_coverage("physics prize", ["physics", "prize", "prize", "prize"])[:2]
    assert physics_only > prize_only
    assert term_coverage("the and of", docs) == [0.0] * 4 and term_coverage("physics", []) == []


def test_terms_are_stems():
    from orchestrator.quotes import bm25_scores, terms

    assert terms("Salaries ranged widely") == terms("salary range wide")
    assert terms("The franchise was founded in 1995") == terms("franchise founding 1995")
    assert terms("the 1990s and 1990") == ["1990", "1990"]  # a plural of a word with digits still folds
    # an agent or relation noun and its verb or noun share a term; short words keep their ending
    assert terms("suppliers invented national") == terms("supplying inventor nation")
    assert terms("former water order") == ["former", "water", "order"]
    assert sorted(terms("team leader, the reader")) == sorted(terms("who leads the team, read"))  # "-er", 4 letters
    assert terms("number signal factor") == ["number", "signal", "factor"]  # not numb, sign, fact
    # a sentence that says "salaries ... ranged" now scores for a question about "salary range"
    docs = ["Salaries for teachers ranged from 20,133 to 41,004.", "Teachers in Wales are paid well."]
    scores = bm25_scores("What was the high end of the salary range?", docs)
    assert scores[0] > 0 and scores[1] == 0


def test_a_long_sentences_quote_keeps_the_words_around_the_questions_terms():
    from orchestrator.quotes import MAX_QUOTE_WORDS, choose_span, terms

    filler = " ".join(f"and the expansion of cable network number {i}" for i in range(14))
    text = (
        "A second period of international expansion is linked to that of the sports network in the 1990s, "
        f"{filler}, although Disney also sold its 33% stake in Eurosport for $155 million in June 2000."
    )
    assert len(text.split()) > MAX_QUOTE_WORDS
    spans = [(0, len(text))]
    question = "How much did Disney sell its stake in Eurosport for?"
    quote = choose_span(text, spans, [0.5], typed=[True], want_type=True, focus=frozenset(terms(question))).quote
    assert "stake in Eurosport for $155 million" in quote and quote.startswith("… ")
    assert len(quote.strip("… ").split()) == MAX_QUOTE_WORDS
    assert quote.strip("… ") in text
    # without the question's terms (or when none is in it) the quote is the sentence's head, as before
    head = choose_span(text, spans, [0.5], typed=[True], want_type=True).quote
    assert head.startswith("A second period") and head.endswith(" …") and "$155" not in head


def test_an_index_entry_of_a_cited_page_is_told_from_evidence():
    assert title_head("Cumulative Layout Shift (CLS) | Fast Pages Field Guide") == "Cumulative Layout Shift (CLS)"
    assert title_head("Stadia review - The Daily Byte") == "Stadia review"
    assert title_head("COVID-19 in numbers") == "COVID-19 in numbers"
    index = (
        "Articles\n- Cumulative Layout Shift (CLS): visual stability and how to stop content from jumping around.\n"
        "2. Image sizes – why width and height matter for layout.\n"
        "Cumulative Layout Shift (CLS): our guide explains it all in one place."
    )
    cls = ("https://g.example/cls", "Cumulative Layout Shift (CLS) | Guide", "Give every image width and height.", "x")
    sizes = ("https://g.example/sizes", "Image sizes | Guide", "Images need sizes.", "y")
    entry = "Cumulative Layout Shift (CLS): visual stability and how to stop content from jumping around."
    numbered = "Image sizes – why width and height matter for layout."
    prose = "Cumulative Layout Shift (CLS): our guide explains it all in one place."
    blocks = [
        cls,
        sizes,
        ("https://g.example/", "Guide", entry, index),
        ("https://g.example/", "Guide", numbered, index),
        ("https://g.example/", "Guide", prose, index),  # not a list item: a sentence of the page's own
    ]
    assert index_entries(blocks) == [False, False, True, True, False]
    # the page it describes is not among the blocks: the entry may be all there is, and it stays
    assert index_entries([sizes, ("https://g.example/", "Guide", entry, index)]) == [False, False]
    # a page's own list item that opens with its own title is not an entry of another page
    assert index_entries([cls, ("https://g.example/cls", "Cumulative Layout Shift (CLS)", entry, index)]) == [
        False,
        False,
    ]


def test_section_evidence_applies_the_rules_after_selection():
    class Page(_Hit):
        title, text = "Plague report", "x"

    def cand(quote):
        return Candidate(Page("http://x/" + quote[:9]), QuoteChoice(quote), 0.6)

    lead = cand("A hunter who ate a wild rabbit was diagnosed with bubonic plague.")
    dated = cand("The hunter ate the rabbit on Nov. 5, the commission said.")
    # a date question: the block that cannot hold a date goes; the order of the rest is kept
    assert section_evidence("On what date did the hunter eat the rabbit?", [lead, dated]) == ([dated], None)
    # a claim asks for no type: nothing goes
    assert section_evidence("Hunters catch plague from rabbits.", [lead, dated]) == ([lead, dated], None)
    # how many, and no quote states a quantity: none, and the reason the Gap will give
    assert section_evidence("How many people were quarantined?", [lead]) == ([], "no quote states a quantity")


class _Page:
    def __init__(self, url, text="x", score=0.6):
        self.metadata = {"url": url}
        self.title, self.text, self.score = "News", text, score


def test_a_page_names_what_was_asked_when_any_of_its_chunks_does():
    from orchestrator.quotes import Quote

    texts = [
        ("https://n.example/plague", "Authorities in Beijing announced that two people had pneumonic plague."),
        ("https://n.example/plague", "Li Jifeng, a doctor at Chaoyang Hospital where the patients were treated, said."),
        ("https://n.example/other", "A hospital in Ulaanbaatar treated a herder for plague."),
    ]
    hits = [_Page(url, text) for url, text in texts]
    cands = answer_candidates(
        "At which Beijing hospital were the couple treated?", hits, [[(Quote(t, rank=0.8), 0.5)] for _, t in texts]
    )
    # the doctor's chunk never says "Beijing", but its page does; the other page never does
    assert [c.names for c in cands] == [True, True, False]
    assert [c.hit.text for c in select_evidence(cands, k=5, min_score=0.35)] == [t for _, t in texts[:2]]


def _ranked(quote, rank, covers):
    """A candidate with its rank and its share of the question's terms, as ``answer_candidates`` makes them."""
    from orchestrator.quotes import Quote

    return Candidate(_Page("https://n.example/" + quote[:12]), Quote(quote), 0.6, True, rank, covers)


def test_a_typed_answer_beyond_the_margin_comes_first_and_the_subjects_restatements_go():
    lead = _ranked("Health authorities have confirmed a third case of plague in the region.", 1.30, 0.10)
    more = _ranked("Pneumonic plague is the most virulent of the three forms.", 1.20, 0.20)
    answer = _ranked("The first two illnesses were confirmed on November 12.", 0.78, 0.35)
    thin = _ranked("Several people died of plague in 2009.", 0.90, 0.10)  # a date, but little of the question
    ranked = [lead, more, thin, answer]
    question = "On what date were the couple's plague infections officially confirmed?"
    assert select_evidence(ranked, k=5, min_score=0.35) == [lead, more]  # the margin alone
    chosen = select_evidence(ranked, k=5, min_score=0.35, question=question)
    assert chosen == [answer, lead, more]
    assert section_evidence(question, chosen) == ([answer], None)
    # a block within the margin states a date: nothing is reached for
    dated = _ranked("Health authorities confirmed the cases on Nov. 12, 2019.", 1.25, 0.30)
    assert select_evidence([lead, dated, answer], k=5, min_score=0.35, question=question) == [lead, dated]
    # a question that asks for no amount, date or number: the margin alone
    assert select_evidence(ranked, k=5, min_score=0.35, question="Why was the couple quarantined?") == [lead, more]
    # a count of what is asked needs FAR_COVERAGE only: the restatement holds more of the question's words
    countries = "In how many countries is Google's game streaming service available at launch?"
    top = _ranked("Google's game streaming service, Stadia, launches without many promised features.", 1.21, 0.52)
    price = _ranked("Google's game streaming service costs $9.99 a month for Stadia Pro.", 0.70, 0.52)
    count = _ranked("The Stadia editions launch tomorrow in 14 countries.", 0.60, 0.45)
    assert select_evidence([top, price, count], k=5, min_score=0.35, question=countries)[0] is count
    thin = _ranked("Stadia launches in 14 countries.", 0.60, 0.20)  # under FAR_COVERAGE: the price, which holds more
    assert select_evidence([top, price, thin], k=5, min_score=0.35, question=countries)[0] is price


def test_the_organisation_asked_for_beyond_the_margin_comes_second():
    lead = _ranked("Three cases of plague have been diagnosed in China, sparking fears of an outbreak.", 1.37, 0.33)
    more = _ranked("The patients, a husband and wife, are from Inner Mongolia.", 1.10, 0.13)
    answer = _ranked("Li Jifeng, a doctor at Chaoyang Hospital where the patients were treated, wrote.", 0.55, 0.44)
    thin = _ranked("Staff at Anzhen Hospital wore masks.", 0.60, 0.10)  # a hospital, little of the question
    ranked = [lead, more, thin, answer]
    question = "At which Beijing hospital were the married couple with pneumonic plague treated?"
    assert select_evidence(ranked, k=5, min_score=0.35) == [lead, more]  # the margin alone
    # second, not first: the best block keeps its place
    assert select_evidence(ranked, k=5, min_score=0.35, question=question) == [lead, answer, more]
    assert select_evidence(ranked, k=2, min_score=0.35, question=question) == [lead, answer]
    # a block within the margin names a hospital: nothing is reached for
    named = _ranked("The couple were taken to Beijing's Chaoyang Hospital on Tuesday.", 1.20, 0.30)
    assert select_evidence([lead, named, answer], k=5, min_score=0.35, question=question) == [lead, named]
    # a question that asks for no organisation: the margin alone
    assert select_evidence(ranked, k=5, min_score=0.35, question="Why was the couple quarantined?") == [lead, more]


def test_the_sentence_that_spells_out_the_acronym_asked_for_comes_first():
    uses = _ranked("The UMC supports federal funding for research on embryos.", 1.21, 1.0)
    more = _ranked("Comparatively, the UMC stands to the right of liberal Protestant groups.", 1.03, 1.0)
    defines = _ranked("The United Methodist Church (UMC) is a mainline Protestant denomination.", 0.61, 0.01)
    spelled = _ranked("Members of the United Methodist Church meet yearly.", 0.70, 0.01)  # spelled out, not defined
    question = "What does UMC stand for?"
    assert select_evidence([uses, more, spelled, defines], k=5, min_score=0.35) == [uses, more]  # the margin alone
    # beyond the margin, the definition (its expansion beside the acronym) comes first; it needs none of the
    # question's other words, of which "stand" is all there is
    assert select_evidence([uses, more, spelled, defines], k=5, min_score=0.35, question=question) == [
        defines, uses, more,
    ]
    # within the margin, the first block that spells it out moves up once
    near = _ranked("Members of the United Methodist Church meet yearly.", 1.10, 0.01)
    assert select_evidence([uses, near, more], k=5, min_score=0.35, question=question) == [near, uses, more]
    # the best block spells it out already, or the question asks for no acronym: the order stays
    assert select_evidence([defines, uses], k=5, min_score=0.35, question=question) == [defines, uses]
    assert select_evidence([uses, more, defines], k=5, min_score=0.35, question="Who leads the UMC?") == [uses, more]
