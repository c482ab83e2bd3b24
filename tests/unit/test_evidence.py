"""Pure logic of evidence: signature queries, the question's shape, candidate quotes, features, the scorer's
weights file, selection (no padding, "also at"), and the block/Gap formats. No model: features get hand-made
vectors."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from orchestrator.charter import Section
from orchestrator.errors import EvidenceModelError
from orchestrator.evidence import EvidenceBlock, Gap, display_url, load_scorer, signature_queries
from orchestrator.evidence.features import FEATURES, SectionVectors, featurize, with_reader
from orchestrator.evidence.judge.relevance import mentions, named_subjects
from orchestrator.evidence.queries import analyse
from orchestrator.evidence.scorer import DEFAULT_SCORER, MANIFEST, recorded_sha256
from orchestrator.evidence.select import Scored, same_facts, select
from orchestrator.evidence.spans import MAX_QUOTE_WORDS, candidate_spans, clip_around


def _hit(text: str, url: str = "https://a.example/p", cid: str = "sha256:c", score: float = 0.5):
    return SimpleNamespace(text=text, id=cid, score=score, metadata={"url": url, "title": "A page"})


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


def test_why_cant_questions_keep_their_topic():
    s = Section(title="Lab versus field", label="Lab", question="Why can't a Lighthouse lab test measure INP?")
    assert signature_queries(s)[1] == "Lab versus field: Lighthouse lab test measure INP"
    s = Section(title="Loading", question="Why doesn't the page load?")
    assert signature_queries(s)[1] == "Loading: page load"


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


def test_the_question_says_what_it_asks_for():
    asks = {q: analyse(q).asks for q in (
        "Who registered the domain?", "When did the trial start?", "Where is the plant?",
        "How many people attended?", "How much does the plan cost?", "What percentage of users left?",
        "Why did the project fork?", "How do I turn off the feature?", "What is a service worker?",
        "Which tool replaced the old one?", "Is the API stable?", "Brighter screens use more power.")}
    assert list(asks.values()) == ["who", "when", "where", "quantity", "quantity", "quantity", "why", "how",
                                   "what", "what", "yesno", "statement"]
    q = analyse("How many of the 40 Firefox users left in 2015?")
    assert q.numbers == {"40", "2015"} and "firefox" in q.capitals and "user" in q.terms


CHUNK = (
    "Pricing\n"
    "The X1 console was announced in March. It retails for $499 in the United States. Stock is limited.\n"
    "- The bundle adds a second controller.\n"
    "Reviews\n"
    "critics liked it."
)


def test_candidates_are_verbatim_sentences_and_windows_that_never_hold_a_heading():
    chunks, spans = candidate_spans([_hit(CHUNK)], frozenset())
    quotes = [s.quote for s in spans]
    flat = " ".join(CHUNK.split())
    assert "The X1 console was announced in March. It retails for $499 in the United States." in quotes
    assert "The X1 console was announced in March. It retails for $499 in the United States. Stock is limited." \
        in quotes
    assert "The bundle adds a second controller." in quotes  # a list item's bullet is layout, not words
    assert all(s.n_sentences <= 3 and s.words <= MAX_QUOTE_WORDS for s in spans)
    # a heading is a candidate on its own and may open a window, never stand inside or at the end of one
    assert "Pricing" in quotes and "Pricing The X1 console was announced in March." in quotes
    assert not any(" Reviews" in q or " Pricing" in q for q in quotes)
    # the reader reads a sentence under its heading
    under = next(s for s in spans if s.quote.startswith("The X1 console"))
    assert under.reading.startswith("Pricing — The X1 console")
    for q in quotes:  # every quote is a span of the chunk ("…" aside)
        assert q.strip("… ") in flat
    # a quote that starts mid-sentence in lower case is marked as such
    assert "… critics liked it." in quotes
    # the same words from an overlapping chunk of the same page are offered once
    _, twice = candidate_spans([_hit(CHUNK), _hit(CHUNK, cid="sha256:d")], frozenset())
    assert len(twice) == len(spans)


def test_a_long_sentence_is_cut_around_the_questions_terms():
    words = [f"w{i}" for i in range(100)]
    words[45:47] = ["retail", "price"]
    quote, cut_head = clip_around(" ".join(words), frozenset({"retail", "price"}), 60)
    assert cut_head and quote.endswith(" …") and "retail price" in quote
    assert len(quote.rstrip(" …").split()) == 60


def _vectors(chunks, question_vec, sentence_vecs):
    return SectionVectors(np.array(question_vec, "float32"), np.array(question_vec, "float32"),
                          [np.array(v, "float32") for v in sentence_vecs], {})


def test_features_tell_a_restatement_from_the_answer():
    text = "Acme set the price of the X1 console. It costs $499 from March."
    chunks, spans = candidate_spans([_hit(text)], frozenset())
    q = analyse("What is the price of the Acme X1 console?")
    vecs = _vectors(chunks, [1.0, 0.0], [[[0.9, 0.1], [0.6, 0.8]]])
    feats = {s.quote: f for s, f in zip(spans, featurize(q, spans, vecs, {}), strict=True)}
    restate, answer = feats["Acme set the price of the X1 console."], feats["It costs $499 from March."]
    assert restate.cover > answer.cover and restate.restate > answer.restate and restate.novelty < answer.novelty
    both = feats[text]
    assert both.cos_first > both.cos_later > 0 and both.cos_max == both.cos_first
    assert max(f.cos_rel for f in feats.values()) == 0.0  # relative to the section's best
    assert len(both.row()) == len(FEATURES)
    with_reader([restate, answer], [-1.0, 2.0])
    assert answer.reader == 2.0 and answer.reader_rel == 0.0 and restate.reader_rel == -3.0


def _scored(quote: str, p: float, url: str = "https://a.example/p", rank: int = 0):
    span = SimpleNamespace(url=url, keys=frozenset({quote}), quote=quote, words=len(quote.split()),
                           chunk=SimpleNamespace(rank=rank))
    return Scored(span, None, p)  # type: ignore[arg-type]


def test_selection_gives_a_gap_below_the_threshold_and_never_pads():
    cands = [_scored("The X1 costs $499 in the United States.", 0.9),
             _scored("Acme makes consoles and controllers for families.", 0.45),
             _scored("The X1 ships in matte black with a stand.", 0.3)]
    assert select(cands, k=5, threshold=0.95, second=0.5) == []  # nothing reaches the bar: a Gap
    chosen = select(cands, k=5, threshold=0.4, second=0.5)
    assert [c.quote for c in chosen] == ["The X1 costs $499 in the United States."]  # 0.45 is under `second`
    assert len(select(cands, k=5, threshold=0.2, second=0.2)) == 3
    assert len(select(cands, k=2, threshold=0.2, second=0.2)) == 2


def test_the_same_facts_on_another_page_join_the_block_and_overlaps_are_dropped():
    a = _scored("The Acme X1 console will retail for $499 in the United States.", 0.9, "https://one.example/x")
    b = _scored("In the United States, the Acme X1 console will retail for $499.", 0.8, "https://two.example/x")
    c = _scored("The Acme X1 console will retail for $499 in the United States. It ships in March.", 0.85,
                "https://one.example/x")
    c.span.keys = frozenset({a.quote, "It ships in March."})
    chosen = select([a, b, c], k=5, threshold=0.5, second=0.5)
    assert chosen == [a] and [x.url for x in a.also] == ["https://two.example/x"]
    assert same_facts(b.quote, a.quote) and not same_facts("The X1 costs $399 in the United States.", a.quote)
    assert not same_facts("It ships in March, Acme said, with two controllers.", a.quote)


def test_the_shipped_scorer_loads_and_matches_its_recorded_hash(tmp_path, monkeypatch):
    import hashlib

    scorer = load_scorer()
    assert scorer.sha256 == hashlib.sha256(DEFAULT_SCORER.read_bytes()).hexdigest()
    assert recorded_sha256(DEFAULT_SCORER) == scorer.sha256
    assert set(json.loads(MANIFEST.read_text())["files"]) >= {"scorer.json"}
    assert scorer.features == FEATURES and 0.0 < scorer.threshold < 1.0 and scorer.second >= scorer.threshold
    # a copy elsewhere with a recorded hash that does not match is refused, as is a file of other features
    doc = json.loads(DEFAULT_SCORER.read_text())
    doc["threshold"] = 0.01
    edited = tmp_path / "scorer.json"
    edited.write_text(json.dumps(doc))
    (tmp_path / "scorer.json.sha256").write_text(scorer.sha256 + "  scorer.json\n")
    with pytest.raises(EvidenceModelError, match="does not match"):
        load_scorer(edited)
    (tmp_path / "scorer.json.sha256").unlink()
    assert load_scorer(edited).threshold == 0.01
    doc["model"]["features"] = doc["model"]["features"][:-1]
    edited.write_text(json.dumps(doc))
    with pytest.raises(EvidenceModelError, match="other features"):
        load_scorer(edited)
    monkeypatch.setenv("BRT_EVIDENCE_SCORER", str(tmp_path / "missing.json"))
    with pytest.raises(EvidenceModelError, match="cannot read"):
        load_scorer()


def test_the_threshold_comes_from_the_scorer_unless_the_charter_sets_one():
    from orchestrator.charter import Charter
    from orchestrator.synthesize import evidence_threshold

    base = {"id": "t", "title": "T", "allowed_domains": ["a.example"], "seeds": ["https://a.example/"]}
    assert evidence_threshold(Charter.model_validate(base)) == load_scorer().threshold
    assert evidence_threshold(Charter.model_validate(base | {"retrieval": {"min_score": 0.7}})) == 0.7
