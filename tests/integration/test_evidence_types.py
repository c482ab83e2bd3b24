"""Evidence that answers (issue 10), by the answer type a question asks for, on the real model: a quote that
cannot hold a date, a number or an amount does not answer a question asking for one; what an acronym stands for
is answered by the sentence that spells it out."""

from __future__ import annotations

from orchestrator.synthesize import select_evidence


def _store(name: str, pages: dict[str, str]):
    """A real store in the test's BRT_HOME holding ``pages`` (url -> text), embedded with the bundled model."""
    from memory_store import Memory

    mem = Memory(name)
    mem.add_many([{"url": url, "text": text} for url, text in pages.items()])
    return mem


def test_a_question_asking_for_a_date_keeps_only_the_quotes_that_state_one(brt_home, embedder):
    # Three on-topic passages meet the bar and stand within the rank margin; only one says when. The others
    # restate the question's subject: padding that cannot answer "on what date".
    from orchestrator.charter import Section
    from orchestrator.synthesize import evidence_candidates, synthesize_section

    report = (
        "A hunter who killed and ate a wild rabbit has been diagnosed with bubonic plague in Inner Mongolia, the "
        "regional health commission said. The man is being treated in hospital and is in a stable condition."
    )
    agency = (
        "The patient hunted and ate a wild rabbit on Nov. 5, according to the state news agency. Twenty-eight "
        "people who had been in close contact with him were put under medical quarantine."
    )
    background = (
        "Eating wild rabbits and marmots that carry the plague bacterium is a known way to catch the disease, "
        "and health officials warn hunters every autumn not to eat wild animals they catch."
    )
    mem = _store(
        "evidence_types_date",
        {"https://news.example/plague": report, "https://agency.example/hunter": agency,
         "https://health.example/advice": background},
    )
    section = Section(title="Meal date", question="On what date did the hunter eat the wild rabbit he caught?")
    selected = select_evidence(evidence_candidates(mem, section, k=5, min_score=0.35), k=5, min_score=0.35)
    assert len(selected) >= 2 and any("Nov. 5" not in c.choice.quote for c in selected)
    result = synthesize_section(mem, section, k=5, min_score=0.35)
    assert [b.url for b in result.blocks] == ["https://agency.example/hunter"]
    assert "Nov. 5" in result.blocks[0].quote and not result.gaps
    # the JSON says what was asked for and whether each block states it
    from orchestrator.evidence import SynthesisResult

    doc = SynthesisResult("c", "t", [result], 0.35, "m", "2026-01-01T00:00:00Z", 0.1).to_json()["sections"][0]
    assert doc["answer_type"] == "date" and doc["blocks"][0]["states_answer_type"] is True
    # a claim asks for no type: nothing is dropped for it, and its blocks say so with null
    claim = synthesize_section(
        mem, Section(title="Rabbits", question="Hunters catch plague from the wild rabbits they eat."), k=5,
        min_score=0.35,
    )
    assert claim.answer_type is None and claim.blocks
    assert all(b.states_answer_type is None for b in claim.blocks)


def test_how_many_with_no_quantity_in_any_quote_is_a_gap(brt_home, embedder):
    # On-topic quotes meet the bar, but a question asking how many is answered only by a quantity: when no
    # chosen quote states one, the section is a Gap that says why, not a block that cannot answer.
    from orchestrator.charter import Section
    from orchestrator.synthesize import evidence_candidates, synthesize_section

    text = (
        "The island has a small harbour used by fishing boats. Puffins nest on the northern cliffs from April to "
        "August, and birdwatchers come from the mainland to see them. The warden counts the nesting puffins "
        "every summer and reports to the bird trust."
    )
    ferry_text = "Getting there\nThe ferry calls at the harbour twice a week in summer, weather permitting."
    mem = _store("evidence_quantity", {"https://isle.example/birds": text, "https://isle.example/ferry": ferry_text})
    puffins = Section(title="Puffins", question="How many puffins nest on the northern cliffs?")
    assert select_evidence(evidence_candidates(mem, puffins, k=5, min_score=0.35), k=5, min_score=0.35)
    result = synthesize_section(mem, puffins, k=5, min_score=0.35)
    assert not result.blocks and result.gaps[0].reason == "no quote states a quantity"
    ferry = synthesize_section(
        mem, Section(title="Ferry", question="How many times a week does the ferry call in summer?"), k=5,
        min_score=0.35,
    )
    assert ferry.blocks and "twice" in ferry.blocks[0].quote and not ferry.gaps


def test_what_an_acronym_stands_for_is_answered_by_the_sentence_that_spells_it_out(brt_home, embedder):
    # The real model ranks a sentence that uses the acronym beside "stands" above the one that defines it.
    from orchestrator.charter import Section
    from orchestrator.synthesize import evidence_candidates, synthesize_section

    about = (
        "The Northern Coastal Rail Authority (NCRA) is the public body that runs the regional trains along the "
        "coast. It was set up by the province in 1998."
    )
    fares = (
        "The NCRA raised its fares by four percent in January. Commuters who travel daily with the NCRA can buy a "
        "monthly pass, and the NCRA says the pass pays for itself after eleven return trips."
    )
    works = (
        "Weekend engineering works will close the NCRA line between the harbour and the airport. The NCRA stands "
        "by its decision to run replacement buses every twenty minutes."
    )
    mem = _store(
        "evidence_acronym",
        {"https://rail.example/about": about, "https://rail.example/fares": fares, "https://news.example/works": works},
    )
    section = Section(title="NCRA", question="What does NCRA stand for?")
    plain = select_evidence(evidence_candidates(mem, section, k=5, min_score=0.35), k=5, min_score=0.35)
    assert "Northern Coastal Rail Authority" not in plain[0].choice.quote  # retrieval order alone
    result = synthesize_section(mem, section, k=5, min_score=0.35)
    assert result.blocks[0].url == "https://rail.example/about"
    assert "Northern Coastal Rail Authority (NCRA)" in result.blocks[0].quote
