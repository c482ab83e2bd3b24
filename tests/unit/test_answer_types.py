"""Answer-type cues (orchestrator/answer_types.py, pure rules): which type a question asks for, and whether a
sentence carries one."""

from __future__ import annotations

from orchestrator.answer_types import (
    asked_acronym,
    asked_unit,
    asks_quantity,
    carries,
    counted_noun,
    counts_asked,
    expands_acronym,
    expected_type,
    is_question,
    names_asked_org,
    quantity_unstated,
    typed_quotes,
    typed_spans,
)


def test_questions_are_told_from_claims_and_topics():
    for q in (
        "What is the retail price of the X1?",
        "In which year did the bridge open",
        "how many piers",
        "Is it safe?",
    ):
        assert is_question(q), q
    for t in ("Aspirin lowers the risk of stroke in adults.", "Pricing", "Whatever the weather, the ferry runs"):
        assert not is_question(t), t


_TYPE_CUES = [
    ("What Largest Contentful Paint time counts as good?", "number"),  # a threshold
    ("What INP value counts as good?", "number"),  # not a price: "value" says threshold here
    ("Which LDL cholesterol level is considered high?", "number"),
    ("What counts as good evidence?", None),
    ("How much does the X1 console cost?", "currency"),
    ("What is the retail price of the X1?", "currency"),
    ("When did the Normans conquer England?", "date"),
    ("In what year was the bridge built?", "date"),
    ("How many people live in Fresno?", "number"),
    ("What share of sites use HTTP/3?", "number"),
    ("Who wrote The Hobbit?", "person"),
    ("Which physician treated the patient?", "person"),
    ("Where does the Rhine rise?", "place"),
    ("What is oxygen?", None),
    ("What is the term for the lack of observable free quarks?", "term"),
    ("What is another name for State Route 168?", "term"),
    ("What is it called when people refuse to be released?", "term"),
    ("What does LGM stand for?", "term"),
    ("Which city is named after the river?", "place"),  # the rules' order: place first
    # "value" is money only as a named thing's value; most "value" questions ask for an idea
    ("What was the value of the John Jones Collection when it was left to the museum?", "currency"),
    ("What is the maximum combined value of NASA's lunar delivery contracts?", "currency"),
    ("What is the market value of the firm?", "currency"),
    ("What was the idealized value of imperialism?", None),
    ("Under what law is value of a worker determined?", None),
    ("What value does the separation into fermions and bosons depend on?", None),
]


def test_answer_type_cues():
    for question, kind in _TYPE_CUES:
        assert expected_type(question) == kind, question
    assert carries("This absence is known as colour confinement.", "term", "What is the absence called?")
    assert carries("Route 168, also called the Sierra Freeway, heads east.", "term", "What is it called?")
    assert not carries("The absence of free quarks was observed.", "term", "What is the term for it?")
    assert carries("It will retail for $499 in the US.", "currency", "How much?")
    assert not carries("The price was announced.", "currency", "How much?")
    assert carries("It costs 40 euros.", "currency", "How much?")
    assert not carries("It happened in 1066.", "date", "What happened in 1066?")  # the question's own year
    assert carries("The Hobbit was written by J. R. R. Tolkien.", "person", "Who wrote the Hobbit?")
    assert not carries("The Hobbit is a book.", "person", "Who wrote The Hobbit?")
    # the possessive of the question's own name is its subject, not an answer
    assert not carries("It is known as Newton's Constant.", "person", "Who measured the Newton Constant?")
    assert not carries("The Joneses' farm was sold.", "person", "Who bought the Joneses farm?")
    assert carries("Newton's Constant was measured by Henry Cavendish.", "person", "Who measured the Newton Constant?")
    assert carries("About 520,000 people live there.", "number", "How many people live in Fresno?")


def test_the_first_wh_word_decides_the_answer_type():
    for question, kind in (
        # a later "who" opens a relative clause; before, these asked for a person
        ("How many people who had been near the hunter were quarantined?", "number"),
        ("When was the man who led the revolt born?", "date"),
        ("In what year did the man who founded it die?", "date"),
        ("Where did the woman who wrote it live?", "place"),
        ("Why did the minister who signed it resign?", None),
        ("Who heads the office that opened the inquiry?", "person"),
        # the roles news asks about, a few words after "which"
        ("Which regional disease-control official said the case was isolated?", "person"),
        ("Which SpaceX executive described the lander?", "person"),
        ("Which chest specialist found the cause?", "person"),
        ("What year did the king die?", "date"),  # no role noun behind a verb
    ):
        assert expected_type(question) == kind, question


def test_organisation_questions_and_their_answers():
    assert expected_type("Which advertising firm came up with the slogan?") == "org"
    assert expected_type("At which Beijing hospital were the patients treated?") == "org"
    assert expected_type("Which companies supply the keyboards?") == "org"
    q = "Which advertising firm came up with the slogan?"
    assert carries("The report says the Minneapolis ad agency Broadhead Co. came up with it.", "org", q)
    assert not carries("The slogan was written by an agency last year.", "org", q)
    # a title-case headline capitalises every word: no name stands out in it
    assert not carries("Ad Agency Behind Meth Campaign Defends The Slogan", "org", q)
    # the question's own names are not its answer
    assert not carries("Critics mocked the slogan in South Dakota.", "org", "Which firm wrote the South Dakota slogan?")


def test_the_noun_a_how_many_question_counts():
    countries = "In how many countries is Google's game streaming service available at launch?"
    assert counted_noun(countries) == "countries"
    assert counted_noun("How many concerts are scheduled on the reunion tour?") == "concerts"
    assert counted_noun("How many new Nobel laureates were named?") == "laureates"
    assert counted_noun("How many people who had been near him were quarantined?") == "people"
    assert counted_noun("How many kilograms of payload can it carry?") is None  # a unit: asked_unit's
    assert counted_noun("How much does it cost?") is None
    assert counted_noun("Which countries have it?") is None
    assert counts_asked("The editions launch tomorrow (November 19) in 14 countries, Google said.", countries)
    assert counts_asked("It is available in two European countries.", countries)
    assert counts_asked("Stadia launches in fourteen countries.", countries)
    # a number that counts something else, or countries not counted, is no count of them
    assert not counts_asked("Stadia Pro costs $9.99 a month and streams 4K in many countries.", countries)
    assert not counts_asked("It launches with 22 games in the US and other countries.", countries)
    assert not counts_asked("Stadia launches in 14 countries.", "Why did Stadia launch in Europe?")


def test_a_name_beside_the_asked_organisation_noun():
    hospital = "At which Beijing hospital were the married couple treated?"
    firm = "Which advertising firm came up with the controversial South Dakota slogan?"
    cases = [
        ("Li Jifeng, a doctor at Chaoyang Hospital where the patients were treated, wrote", hospital, True),
        ("They were moved to the hospital Chaoyang on Friday.", hospital, True),
        ("The Huguenot Hospital, a private hospital in the suburbs, took them.", hospital, True),
        ("Chaoyang, the district's largest hospital, admitted them.", hospital, True),
        # the question's own name is not its answer; a hospital unnamed is no answer either
        ("Beijing Hospital officials declined to comment.", hospital, False),
        ("The couple were treated at a hospital in the city, The Post reported.", hospital, False),
        # a business is named beside any word for one
        ("The report says the Minneapolis ad agency Broadhead Co. came up with the campaign.", firm, True),
        ("Broadhead, a Minneapolis advertising agency, declined to comment.", firm, True),
        ("It was made by Broadhead Company for the state.", firm, True),
        # a capitalised word before a lower-case noun describes it; a place before "agency" names no agency
        ("The campaign was run by a Minneapolis-based firm with a budget of $449,000.", firm, False),
        ("Spokane ad agencies were divided on the South Dakota campaign.", firm, False),
        # plurals fold: the question's "Huguenots" is not the answer's name
        ("A small group of Huguenots settled on Staten Island.", "What group opposed the Huguenots?", False),
        # not an organisation question: nothing is asked to be named
        ("Chaoyang Hospital treated them.", "Why were the couple treated in Beijing?", False),
    ]
    for text, question, named in cases:
        assert names_asked_org(text, question) is named, (text, question)


def test_the_acronym_asked_for_and_a_sentence_that_spells_it_out():
    assert asked_acronym("What does UMC stand for?") == "UMC"
    assert asked_acronym('What does the acronym "TGIF" stand for?') == "TGIF"
    assert asked_acronym("What is the AFC short for?") == "AFC"
    assert asked_acronym("What did the LMP acronym stand for regarding the Block II launch positions?") == "LMP"
    assert asked_acronym("what does vBNS stand for") == "vBNS"
    # no acronym, or no question of what one stands for
    assert asked_acronym("Which candidate stands for election in the NHS board?") is None
    assert asked_acronym("What does the party stand for?") is None
    assert asked_acronym("When was the UMC founded?") is None
    assert expands_acronym("The United Methodist Church (UMC) is a mainline Protestant denomination.", "UMC")
    assert expands_acronym("The Doctor's TARDIS (Time and Relative Dimension in Space) is a police box.", "TARDIS")
    assert expands_acronym("It was won by the Front Islamique de Salut in 1991.", "FIS")
    assert expands_acronym("The Command/Service Module docked.", "CSM")
    assert expands_acronym("It aired as Thank Goodness It's Funny on Fridays.", "TGIF")
    # lower-case words and two letters count only beside the acronym in brackets
    assert expands_acronym("Largest contentful paint (LCP) marks the render time.", "LCP")
    assert expands_acronym("AC (alternating current) won.", "AC")
    assert expands_acronym("Alternating current (AC) won.", "AC")
    assert not expands_acronym("A fully integrated alternating current system was shown.", "AC")
    assert not expands_acronym("It is mainly composed of Sunni Arabs from Iraq and Syria.", "FIS")
    assert not expands_acronym("Largest contentful paint marks the render time.", "LCP")
    # the acronym used, not spelled out; small words neither open nor close a spelling
    assert not expands_acronym("The UMC supports federal funding for research.", "UMC")
    assert not expands_acronym("And United Methodist Church members", "AUMC")
    assert not expands_acronym("United Methodist of", "UMO")


def test_numbers_with_their_units_and_the_digits_of_dates():
    question = "What is the capacity of the battery?"
    for sentence in ("Apple fitted a new 100Wh battery.", "It runs at 2.4GHz.", "It has 16GB of memory.",
                     "It plays 4K video at 60fps.", "It holds 2,300 tons.", "A 3.5mm jack stays."):
        assert carries(sentence, "number", question), sentence
    # a year, a day of the month or a clock time counts nothing: "How many concerts?" is not answered by them
    count = "How many concerts are scheduled?"
    for sentence in ("The tour stops at Blossom on July 22.", "Tickets go on sale at 10 a.m. on Dec. 6.",
                     "It returns to the moon by 2024.", "It was founded on 5 June 1990."):
        assert not carries(sentence, "number", count), sentence
    assert carries("The band plays 30 cities from June 9, 2020.", "number", count)
    assert typed_spans("The 30-date jaunt starts on June 9, 2020.", "number") == ["30"]



def test_a_quantity_question_no_quote_states_a_quantity_for():
    for q in ("How many concerts are scheduled?", "how much did the duvet cost", "How much water was released?"):
        assert asks_quantity(q), q
    for q in ("How long is the bridge?", "Who knows how many were there?", "What is the population of Fresno?"):
        assert not asks_quantity(q), q  # only "how many" / "how much" first: other wordings are answered otherwise
    count = "How many of the five companies submitted proposals?"
    assert quantity_unstated(count, ["The companies submitted proposals.", "The five companies bid."])
    assert not quantity_unstated(count, ["The companies bid.", "Eight companies submitted proposals."])
    assert quantity_unstated("How much did the duvet cost?", ["The duvet was expensive.", "It was sold in 2019."])
    assert not quantity_unstated("How much did the duvet cost?", ["It cost 40 in 2019."])  # a bare number may be one
    assert not quantity_unstated("How much did the duvet cost?", ["The duvet cost £40."])
    assert not quantity_unstated("When did the tour start?", ["It started in the spring."])  # not a quantity


def test_a_how_many_unit_question_is_answered_by_an_amount_in_that_unit():
    payload = "How many kilograms of payload can the lunar lander deliver to the Moon?"
    severance = "How many weeks of severance pay will laid-off employees receive?"
    assert (asked_unit(payload), asked_unit(severance)) == ("kilogram", "week")
    assert asked_unit("How many square miles per year were cleared?") == "mile"
    assert asked_unit("How many companies bid?") is None and asked_unit("How long is the bridge?") is None
    # a number in another unit, or a count, does not say how many kilograms
    assert not carries("NASA said the five companies had been selected.", "number", payload)
    assert not carries("The lander is 3 meters tall.", "number", payload)
    assert quantity_unstated(payload, ["NASA said the five companies had been selected.", "It flies in 2022."])
    for sentence in ("It can land 500 kilograms on the surface.", "It delivers up to 5 kg of payload.",
                     "It carries 1.5 million kilograms a year.", "Its payload is 250kg."):
        assert carries(sentence, "number", payload), sentence
    assert not carries("Workers will receive notice this week.", "number", severance)  # no amount
    for sentence in ("They will get six full weeks of pay.", "Staff get 12 weeks.", "It lasts a week."):
        assert carries(sentence, "number", severance), sentence
    assert carries("It has been inhabited for thousands of years.", "number", "For how many years was it inhabited?")
    assert carries("It reached as far south as 45°.", "number", "How many degrees south did it reach?")
    quotes = ["Eleven companies bid for the contract.", "Each lander carries 500 kilograms."]
    assert typed_quotes(payload, quotes) == [False, True]


def test_only_quotes_that_carry_a_date_number_or_amount_answer_a_question_asking_for_one():
    when = "On what date did the hunter eat the rabbit?"
    quotes = [
        "A hunter who killed and ate a wild rabbit was diagnosed with bubonic plague.",  # on topic, no date
        "The patient hunted and ate a wild rabbit on Nov. 5, the news agency said.",
        "The health commission said the man had been quarantined.",
    ]
    assert typed_quotes(when, quotes) == [False, True, False]
    # when none carries the type, nothing tells the answer from the rest: all stay
    assert typed_quotes(when, [quotes[0], quotes[2]]) == [True, True]
    # the question's own date is not an answer ("in 2018" asks how many, not when)
    many = "How many people died of overdoses in South Dakota in 2018?"
    assert typed_quotes(many, ["Overdoses rose in South Dakota in 2018.", "In 2018, 83 people died of overdoses."]) == [
        False,
        True,
    ]
    price = "How much do the tickets cost?"
    assert typed_quotes(price, ["Tickets go on sale on Friday.", "Tickets cost $45 to $150."]) == [False, True]
    # names, places and organisations are not held to it: capitals stand in almost every sentence
    who = "Who directed the study?"
    assert typed_quotes(who, ["The study was directed by a team in Oslo.", "Anna Berg led the study."]) == [True, True]
    assert typed_quotes("Why did the plume go unseen?", ["It was faint.", "It rose 200 km."]) == [True, True]
    # "when" is answered by a weekday or a time said relative to the story too; "on what date" is not
    announced = ["NASA announced the five companies on Monday.", "The program began in 2018."]
    assert typed_quotes("When did NASA announce the new companies?", announced) == [True, True]
    assert typed_quotes("On what date did NASA announce the new companies?", announced) == [False, True]
    assert carries("Two years later the plant closed.", "date", "When did the plant close?")
    assert not carries("The plant is open.", "date", "When did the plant close?")
    far = "How far could the energy be sent?"  # answered in words as often as in numbers
    assert typed_quotes(far, ["Over any terrestrial distance, he said.", "He built a tower 57 metres tall."]) == [
        True,
        True,
    ]
