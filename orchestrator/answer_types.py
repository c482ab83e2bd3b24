"""Answer-type cues: what kind of answer a question asks for, and whether a sentence carries one (pure functions).

Deterministic rules, read from the question's wording (README, "Quote checks"):

- ``currency``: "how much" with a money word (cost, price, pay, worth, fee, budget, ...), "what is the price/cost
  of"; carried by a currency amount (``$5``, ``€2.5 million``, ``10 dollars``, ``USD 40``).
- ``person``: who / whom / whose; which or what person, physician, scientist, official, executive, ... (up to
  three words between: "which regional disease-control official"); carried by a name (two or more capitalised
  words, initials and ``de``/``van``/``of`` inside, leading "The"/"In" dropped) or a title (``Dr.``, ``King``)
  before a capitalised word.
- ``date``: when; what/which year, date, day, month, decade, century, era, period; since when; how long ago;
  carried by a year (1000-2099), a month, a decade (``1960s``), a century, an ISO date, ``BC``/``AD``; for a
  question that opens with "when", also by a weekday or a time said relative to the story ("on Monday", "last
  week", "two years later", "next spring"), which answer when but not on what date.
- ``number``: how many / much (no money word) / long / far / old / big / tall / high / fast / often; what share,
  percentage, proportion, number, population, rate, size; a threshold (what ... time / value / level / score ...
  counts as / is considered ...: "What Largest Contentful Paint time counts as good?"); carried by a numeral
  (``42``, ``3.5``, ``1,200``, a unit glued to it: ``100Wh``, ``2.4GHz``), a number word (``twelve``,
  ``million``) or a percentage, not by a date's digits (a year, a day of the month, a clock time: "on July 22"
  counts no concerts). "How many <unit> ...?" (kilograms, weeks, miles, degrees, ...: ``asked_unit``) is carried
  only by an amount in that unit ("500 kilograms", "5 kg", "six full weeks", "thousands of years", "45°").
- ``place``: where; what/which city, country, region, river, ...; carried by a capitalised word after
  ``in``/``at``/``from``/``near``/``to``/``of``.
- ``org``: which/what company, firm, agency, hospital, university, team, ...; carried by capitalised words or an
  acronym that do not open the sentence (none in a title-case line, where every word is capitalised).
  ``names_asked_org`` asks more: a name beside the question's noun ("Chaoyang Hospital" for "which hospital",
  "the ad agency Broadhead Co." for "which firm"; ``synthesize`` reaches beyond its margin for one).
- ``term``: what is the term / name / word for ...; what is ... called / known as; what does ... stand for;
  carried by the words that give a name (``called``, ``known as``, ``termed``, ``named``, ``referred to as``,
  ``stands for``, ``short for``, ``dubbed``): the answer is the name they introduce. What an acronym stands for
  (``asked_acronym``) is answered more exactly by words whose initials spell it (``expands_acronym``).

The question's first wh-word decides first: how → currency or number (a date for "how long ago"), who / whom /
whose → person, when → date, where → place, why → none (a later "who" often opens a relative clause: "How many
people who had been near him ...?"). Otherwise the first rule that matches wins, in the order above.
A typed span the question itself contains does not count (``"What happened in 1066?"`` asks for no date).
"""

from __future__ import annotations

import re
from typing import Literal

AnswerType = Literal["currency", "date", "number", "person", "place", "org", "term"]

_MONEY_WORDS = (
    r"cost|costs|costing|price|priced|prices|pay|paid|pays|spend|spent|worth|money|fund|funded|funding|budget|fee|"
    r"fees|charge|charged|salary|wage|wages|earn|earned|earns|revenue|revenues|income|profit|sell for|sold for|"
    r"dollars?|euros?|pounds?|sterling|yen|afford|loan|debt|fine|fined|tax|taxes|donat\w*|invest\w*|raise[ds]?"
)
_CURRENCY_Q = re.compile(
    rf"\bhow\s+much\b.*\b(?:{_MONEY_WORDS})\b|\b(?:{_MONEY_WORDS})\b.*\bhow\s+much\b|"
    r"\b(?:what|which)\s+(?:is|was|were|are)?\s*(?:the\s+)?(?:\w+\s+){0,2}(?:price|cost|fee|salary|budget)\b|"
    # "value" is money as a named thing's value ("the value of the collection", "of NASA's contracts") or a money
    # word's; most other "value" questions ask for an idea ("the idealized value of imperialism", "what value
    # does it depend on", "under what law is value of a worker determined": 4 of 5 in SQuAD dev)
    r"\b(?:what|which)\s+(?:is|was|were|are)\s+(?:the\s+)?(?:\w+\s+){0,2}value\s+of\s+"
    r"(?:(?:the|a|an|his|her|its|their|this|that|these|those)\s|(?-i:[A-Z])|[$€£\d])|"
    r"\b(?:market|dollar|monetary|cash)\s+value\b|"
    r"\bhow\s+much\s+(?:money|cash)\b",
    re.IGNORECASE,
)
_DATE_Q = re.compile(
    r"^\s*when\b|\bwhen\s+(?:did|was|were|is|does|do|will|had|has|have|could|would)\b|"
    r"\b(?:what|which|in\s+what|in\s+which)\s+(?:\w+\s+)?(?:year|years|date|day|month|decade|century|centuries|era|"
    r"period|time\s+period|season|dynasty)\b|\bsince\s+when\b|\bhow\s+long\s+ago\b|\bwhat\s+time\b",
    re.IGNORECASE,
)
_NUMBER_Q = re.compile(
    r"\bhow\s+(?:many|much|long|far|old|big|tall|high|large|fast|often|wide|deep|heavy|hot|cold|small|"
    r"frequently|quickly|low)\b|"
    r"\b(?:what|which)\s+(?:is\s+|was\s+|are\s+|were\s+)?(?:the\s+)?(?:\w+\s+)?(?:share|percentage|percent|"
    r"proportion|fraction|number|amount|population|temperature|rate|speed|size|length|distance|height|"
    r"weight|age|ratio|quantity|capacity|total)\b",
    re.IGNORECASE,
)
# a threshold: "What Largest Contentful Paint time counts as good?", "Which LDL level is considered high?"
_THRESHOLD_Q = re.compile(
    r"\b(?:what|which)\s+(?:[\w/-]+\s+){0,5}?(?:time|value|score|level|reading|threshold|limit|delay|latency|"
    r"duration|rating|size|speed|rate|temperature|dose|weight|count)s?\s+(?:counts?\s+as|qualif(?:y|ies)\s+as|"
    r"(?:is|are)\s+(?:considered|rated|classed|classified|deemed|regarded))\b",
    re.IGNORECASE,
)
# up to three words between "which" and its noun: "which regional disease-control official"
_MODIFIERS = (
    r"(?:(?!(?:is|was|were|are|be|been|did|does|do|has|had|have|will|would|can|could|should|may|might|must|the|a|an|"
    r"of|in|on|at|to|for|by|with|from|that|who|which)\b)[\w'’-]+\s+){0,3}?"
)
_PERSON_NOUNS = (
    r"person|people|man|men|woman|women|physician|doctor|scientist|author|writer|king|queen|emperor|president|"
    r"leader|general|minister|chemist|physicist|mathematician|philosopher|artist|composer|painter|poet|inventor|"
    r"engineer|explorer|architect|actor|actress|player|singer|pope|bishop|saint|prince|princess|duke|ruler|"
    r"founder|ceo|chairman|director|economist|historian|astronomer|biologist|professor|individual|figure|"
    r"governor|senator|mayor|judge|lawyer|officer|commander|coach|manager|owner|member|son|daughter|wife|husband|"
    # the roles news asks about ("Which SpaceX executive ...?", "Which chest specialist ...?")
    r"official|specialist|expert|executive|spokesperson|spokesman|spokeswoman|researcher|analyst|investigator|"
    r"reporter|journalist|editor|critic|reviewer|consultant|surgeon|nurse|pulmonologist|radiologist|psychologist|"
    r"psychiatrist|head|chief|deputy|candidate|athlete|musician|guitarist|drummer|astronaut|pilot|designer|"
    r"producer|secretary|commissioner|attorney|prosecutor|detective|patient|victim|employee|student|teacher|"
    r"captain|chancellor|premier|diplomat|ambassador|representative|lawmaker|politician|activist|entrepreneur|"
    r"investor|billionaire|adviser|advisor|aide|comedian|host|filmmaker|novelist|playwright|photographer|"
    r"scholar|geologist|lecturer|dean"
)
_PERSON_Q = re.compile(
    rf"^\s*(?:who|whom|whose)\b|\b(?:who|whom|whose)\s+(?:was|is|were|are|did|had|has|discovered|invented|"
    rf"wrote|founded|led|said)\b|\b(?:which|what)\s+{_MODIFIERS}(?:{_PERSON_NOUNS})s?\b|"
    rf"\bwhat\s+(?:was|is)\s+(?:the\s+)?name\s+of\s+the\s+{_MODIFIERS}(?:{_PERSON_NOUNS})\b",
    re.IGNORECASE,
)
# the same without "who" after a noun: in "How many people who had been near him ...?" it opens a relative clause
_PERSON_HEAD_Q = re.compile(
    rf"^\s*(?:who|whom|whose)\b|\b(?:which|what)\s+{_MODIFIERS}(?:{_PERSON_NOUNS})s?\b|"
    rf"\bwhat\s+(?:was|is)\s+(?:the\s+)?name\s+of\s+the\s+{_MODIFIERS}(?:{_PERSON_NOUNS})\b",
    re.IGNORECASE,
)
_PLACE_Q = re.compile(
    r"^\s*where\b|\bwhere\s+(?:did|was|were|is|are|does|do|can|could)\b|"
    r"\b(?:what|which|in\s+what|in\s+which)\s+(?:\w+\s+)?(?:city|cities|country|countries|place|region|state|"
    r"province|town|village|continent|river|island|location|county|area|nation|capital)\b",
    re.IGNORECASE,
)

_ORG_Q = re.compile(
    rf"\b(?:what|which|in\s+what|in\s+which|at\s+what|at\s+which|by\s+which|for\s+which)\s+{_MODIFIERS}(?P<noun>"
    r"company|companies|firm|firms|agency|agencies|organi[sz]ations?|group|groups|team|teams|band|newspaper|"
    r"network|publication|outlet|manufacturer|supplier|suppliers|maker|brand|airline|bank|university|"
    r"universities|school|college|hospital|clinic|institute|institution|observatory|telescope|party|club|studio|"
    r"label|publisher|retailer|startup|sponsor|promoter|operator|provider|vendor|contractor|developer|"
    r"laboratory|lab|department|ministry|court|journal|magazine|broadcaster|channel|website|app|platform)\b",
    re.IGNORECASE,
)

# "What is the term for the lack of observable free quarks?", "What is another name for State Route 168?",
# "What is it called when ...?", "What does LGM stand for?"
_TERM_Q = re.compile(
    r"\b(?:what|which)\s+(?:is|was|are|were)\s+(?:the\s+|another\s+|an?\s+|its\s+|their\s+)?(?:\w+\s+)?"
    r"(?:term|name|word|nickname|phrase|label)s?\s+(?:for|of|given|used)\b|"
    r"\b(?:what|how)\s+(?:is|was|are|were)\s+.{1,80}?\s+(?:called|known\s+as|termed|named|referred\s+to)\b|"
    r"\bwhat\s+(?:does|did|do)\s+.{1,40}?\s+stands?\s+for\b|\bwhat\s+(?:is|was)\s+.{1,40}?\s+short\s+for\b",
    re.IGNORECASE,
)

_QUESTION = re.compile(
    r"^\s*(?:(?:in|on|at|to|for|from|by|of|with|since|during|until)\s+)?(?:who|whom|whose|what|which|when|where|why|"
    r"how)\b|\?\s*$",
    re.IGNORECASE,
)


def is_question(text: str) -> bool:
    """Whether ``text`` is worded as a question (a wh-word first, or a question mark last), not as a claim or a
    topic ("Aspirin lowers the risk of stroke", "Pricing")."""
    return bool(_QUESTION.search(text))


_WH = re.compile(r"\b(who|whom|whose|what|which|when|where|why|how)\b", re.IGNORECASE)


def _first_wh(question: str) -> str:
    """The question's first wh-word, lower-cased ("" when it has none): it decides what is asked."""
    lead = _WH.search(question)
    return lead.group(1).lower() if lead else ""


def expected_type(question: str) -> AnswerType | None:
    """The answer type ``question`` asks for (see the module table), or None when its wording names none.

    The question's first wh-word decides before any later one: "How many people who had been near him were
    quarantined?" asks for a number (its "who" opens a relative clause), "Who heads the office that ...?" for a
    person; "why" asks for none of the types."""
    q = " ".join(question.split())
    lead = _WH.search(q)
    wh = lead.group(1).lower() if lead else ""  # as _first_wh; the match itself is needed below
    if wh == "how":
        rest = q[lead.start():]
        if _CURRENCY_Q.search(rest):
            return "currency"
        if _DATE_Q.search(rest):  # how long ago
            return "date"
        return "number" if _NUMBER_Q.search(rest) else None
    if wh in ("who", "whom", "whose"):
        return "person"
    if wh == "when":
        return "date"
    if wh == "where":
        return "place"
    if wh == "why":
        return None
    person = _PERSON_HEAD_Q if wh in ("what", "which") else _PERSON_Q
    if _THRESHOLD_Q.search(q):
        return "number"
    if _CURRENCY_Q.search(q):
        return "currency"
    if person.search(q):
        return "person"
    if _DATE_Q.search(q):
        return "date"
    if _NUMBER_Q.search(q):
        return "number"
    if _PLACE_Q.search(q):
        return "place"
    if _ORG_Q.search(q):
        return "org"
    if _TERM_Q.search(q):
        return "term"
    return None


_CURRENCY = re.compile(
    r"(?:[$€£¥₹₩]|\b(?:US|USD|EUR|GBP|A|C|NZ|HK|S)\$?\s?)\s?\d[\d,.]*(?:\s?(?:million|billion|trillion|bn|m|k))?|"
    r"\b\d[\d,.]*\s?(?:million\s+|billion\s+|thousand\s+|trillion\s+)?(?:dollars?|euros?|pounds?|yen|yuan|"
    r"francs?|marks?|rupees?|cents?|pence|guilders?|florins?|shillings?|roubles?|rubles?|pesos?|USD|EUR|GBP)\b",
    re.IGNORECASE,
)
_MONTHS = (
    r"January|February|March|April|May|June|July|August|September|October|November|December|"
    r"Jan\.|Feb\.|Mar\.|Apr\.|Jun\.|Jul\.|Aug\.|Sept?\.|Oct\.|Nov\.|Dec\."
)
_DATE = re.compile(
    rf"\b(?:1[0-9]{{3}}|20[0-9]{{2}})s?\b|\b(?:{_MONTHS})(?=\W|$)|\b\d{{1,2}}(?:st|nd|rd|th)[\s-]+centur(?:y|ies)\b|"
    r"\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|"
    r"fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|twenty-first)\s+centur(?:y|ies)\b|"
    r"\b\d{1,4}\s?(?:BC|BCE|AD|CE)\b|\b\d{4}-\d{2}-\d{2}\b|\b'\d0s\b|\b\d0s\b",
)
_NUMBER = re.compile(
    r"\b\d[\d,]*(?:\.\d+)?(?:[a-zA-Zµ]{1,5})?\b|"
    r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|"
    r"seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|hundreds|"
    r"thousand|thousands|million|millions|billion|billions|dozen|dozens|half|quarter|third|single|double|"
    r"twice|thrice)\b|%|\bper\s?cent\b",
    re.IGNORECASE,
)
_NAME_WORD = r"(?:[A-Z][a-zà-ÿ'’\-]+|[A-Z]\.(?:\s?[A-Z]\.)*|[A-Z]{2,})"
_PERSON = re.compile(
    rf"\b{_NAME_WORD}(?:\s+(?:de|da|di|van|von|der|del|la|le|of|the|bin|ibn|al-)?\s*{_NAME_WORD})+|"
    r"\b(?:Dr|Mr|Mrs|Ms|Prof|Sir|Dame|St|King|Queen|Emperor|President|Pope|Saint|Lord|Lady|General|Captain)\.?\s+"
    rf"{_NAME_WORD}"
)
_PLACE = re.compile(rf"\b(?:in|at|from|near|to|of|across|into|throughout)\s+(?:the\s+)?{_NAME_WORD}")
# an organisation's name: capitalised words (or an acronym) that do not open the sentence
_ORG = re.compile(
    rf"(?<=[\w,;:()–—-] ){_NAME_WORD}(?:\s+(?:&\s+|of\s+|and\s+|for\s+|de\s+)?{_NAME_WORD})*"
)
_TERM = re.compile(
    r"\b(?:called|known\s+as|termed|named|referred\s+to\s+as|stands?\s+for|short\s+for|dubbed|nicknamed|"
    r"so-called)\b",
    re.IGNORECASE,
)
# the digits of a date or a time, which count nothing: "July 22", "5 June 1990", "2024", "10 a.m.", "18:30"
_DATE_DIGITS = re.compile(
    rf"\b(?:{_MONTHS})\s*\d{{1,2}}(?:st|nd|rd|th)?\b(?:,?\s*\d{{4}})?|"
    rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTHS})|\b(?:1[0-9]{{3}}|20[0-9]{{2}})s?\b(?![,.]?\d)|"
    r"\b\d{1,2}(?::\d{2})?\s?(?:a\.m\.|p\.m\.|am\b|pm\b)|\b\d{1,2}:\d{2}\b"
)
_PATTERNS = {
    "currency": _CURRENCY, "date": _DATE, "number": _NUMBER, "person": _PERSON, "place": _PLACE, "org": _ORG,
    "term": _TERM,
}
# a day or a time of year said relative to the story: news answers "when" with them ("NASA said on Monday")
_RELATIVE_DATE = re.compile(
    r"\b(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|today|yesterday|tomorrow|tonight)\b|"
    r"\b(?:last|next|this|early|late|later|earlier)\s+(?:week|weekend|month|year|spring|summer|autumn|fall|winter|"
    r"decade)\b|\b(?:spring|summer|autumn|winter)\b|"
    r"\b(?:\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|several|few)\s+(?:days?|weeks?|months?|years?)\s+"
    r"(?:ago|later|earlier|before|after)\b",
    re.IGNORECASE,
)
_MONTH_OR_DAY = re.compile(rf"^(?:{_MONTHS}|Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)\b")


def typed_spans(text: str, kind: AnswerType) -> list[str]:
    """The spans of ``text`` that are answers of type ``kind`` (see the module table)."""
    matches = list(_PATTERNS[kind].finditer(text))
    if kind == "number":  # a year, a day of the month, a clock time: a date's digits count nothing
        dated = [m.span() for m in _DATE_DIGITS.finditer(text)]
        matches = [m for m in matches if not any(a <= m.start() < b for a, b in dated)]
    found = [m.group(0).strip() for m in matches]
    if kind == "person":
        names = []
        for f in found:
            words = f.split()
            while words and words[0].lower() in _LEADING:  # "The Normans", "In Paris": a capital of position
                words.pop(0)
            if len(words) >= 2 and not _MONTH_OR_DAY.match(words[0]):
                names.append(" ".join(words))
        found = names
    if kind == "place":
        found = [f.split(None, 1)[1] for f in found if len(f.split(None, 1)) == 2]
    if kind == "org":  # a month or weekday is capitalised too; in a title-case headline every word is
        words = re.findall(r"[^\W\d_][\w'’-]*", text)
        if words and sum(w[0].isupper() for w in words) > 0.6 * len(words):
            return []
        found = [f for f in found if not _MONTH_OR_DAY.match(f) and f not in ("I", "I'm", "I’m")]
    return [f for f in found if f]


_HOW_MANY_MUCH = re.compile(r"\bhow\s+(?:many|much)\b", re.IGNORECASE)

# Units of measure a "how many <unit>" question names: its answer is a quantity in that unit ("How many kilograms
# of payload ...?" is not answered by "five companies"). Key: the question's word; value: how a text writes it.
_UNITS = {
    "second": r"seconds?|secs?|s", "minute": r"minutes?|mins?", "hour": r"hours?|hrs?|h", "day": r"days?",
    "week": r"weeks?", "month": r"months?", "year": r"years?|yrs?", "decade": r"decades?",
    "centur": r"centur(?:y|ies)", "kilogram": r"kilograms?|kilos?|kg", "gram": r"grams?|g",
    "pound": r"pounds?|lbs?|lb", "ton": r"tons?|tonnes?|t", "kilomet": r"kilomet(?:er|re)s?|km",
    "met": r"met(?:er|re)s?|m", "mile": r"miles?|mi", "feet": r"feet|foot|ft",
    "inch": r"inch(?:es)?|in", "centimet": r"centimet(?:er|re)s?|cm", "millimet": r"millimet(?:er|re)s?|mm",
    "acre": r"acres?", "hectare": r"hectares?|ha", "lit": r"lit(?:er|re)s?|l", "gallon": r"gallons?|gal",
    "degree": r"degrees?|°", "watt": r"watts?|w", "volt": r"volts?|v",
}
_UNIT_Q = re.compile(
    r"\bhow\s+many\s+(?:more\s+|fewer\s+|additional\s+|extra\s+|square\s+|sq\.?\s+|cubic\s+)?"
    r"(seconds|minutes|hours|days|weeks|months|years|decades|centuries|kilograms|grams|pounds|tons|tonnes|"
    r"kilomet(?:er|re)s|met(?:er|re)s|miles|feet|inches|centimet(?:er|re)s|millimet(?:er|re)s|acres|hectares|"
    r"lit(?:er|re)s|gallons|degrees|watts|volts)\b",
    re.IGNORECASE,
)
_AMOUNT = (
    r"(?:\d[\d,]*(?:\.\d+)?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|"
    r"thirty|forty|fifty|sixty|hundreds?|thousands?|millions?|billions?|dozens?|several|a\s+few|a|an|half)"
)
# between the amount and the unit: "1.5 million", "six full weeks", "thousands of years", "8,646 sq mi" ("many
# years" is no amount)
_AMOUNT_FILLER = (
    r"(?:[\s-]+(?:and\s+a\s+half|million|thousand|hundred|more|full|solid|straight|consecutive|additional|extra|"
    r"of|square|sq\.?|cubic|giga|mega|kilo))*[\s-]*(?:giga|mega|kilo)?"
)


def asked_unit(question: str) -> str | None:
    """The unit of measure a "how many <unit>" question names (the key of ``_UNITS``), or None."""
    m = _UNIT_Q.search(question)
    if not m:
        return None
    word = m.group(1).lower()
    return next((k for k in _UNITS if word.startswith(k)), None)


def _unit_amounts(text: str, unit: str) -> list[str]:
    """The amounts in ``unit`` that ``text`` states ("six weeks", "45°", "1.5 gigatons")."""
    pattern = rf"\b{_AMOUNT}{_AMOUNT_FILLER}(?:{_UNITS[unit]})\b"
    if unit == "degree":
        pattern += r"|\d°"
    return [m.group(0) for m in re.finditer(pattern, text, re.IGNORECASE)]


# A business is named beside any word for one: "Which advertising firm ...?" is answered by "the ad agency
# Broadhead Co."
_BUSINESS = frozenset(
    "company companies firm firms agency agencies organisation organisations organization organizations group "
    "groups".split()
)
_BUSINESS_WORDS = r"compan(?:y|ies)|firms?|agenc(?:y|ies)|corporations?|business(?:es)?|co|inc|corp|llc|ltd|plc"


def _noun_forms(noun: str) -> str:
    """A pattern for ``noun`` in the singular and the plural ("hospital" / "hospitals", "agency" / "agencies")."""
    if noun in _BUSINESS:
        return _BUSINESS_WORDS
    one = noun[:-3] + "y" if noun.endswith("ies") else noun[:-1] if noun.endswith("s") and len(noun) > 3 else noun
    many = one[:-1] + "ies" if one.endswith("y") else one + "es" if one.endswith(("s", "x", "ch", "sh")) else one + "s"
    return f"{re.escape(one)}|{re.escape(many)}"


# "how many <noun>" (up to two words before it): the noun counted, when it is no unit of measure
_COUNTED_STOP = (
    r"(?:are|is|was|were|did|do|does|have|has|had|will|would|can|could|should|may|might|must|of|in|on|at|for|by|to|"
    r"from|with|that|who|whom|which|be|been|the|a|an|and|or|per|each)\b"
)
_COUNTED_Q = re.compile(
    rf"\bhow\s+many\s+(?:(?!{_COUNTED_STOP})[\w'’-]+\s+){{0,2}}?(?!{_COUNTED_STOP})([\w'’-]+)"
    rf"(?=\s+{_COUNTED_STOP}|\s*[?,.]|$)",
    re.IGNORECASE,
)
_COUNT = (
    r"\d[\d,.]*|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|"
    r"seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand|million|"
    r"billion|dozen"
)


def counted_noun(question: str) -> str | None:
    """The noun a "how many" question counts ("In how many countries ...?" -> "countries"), or None (a unit of
    measure is ``asked_unit``'s)."""
    if not asks_quantity(question) or asked_unit(question):
        return None
    m = _COUNTED_Q.search(" ".join(question.split()))
    return m.group(1).lower() if m else None


def counts_asked(text: str, question: str) -> bool:
    """Whether ``text`` counts what ``question`` asks how many of: a number, then up to two words, then the noun
    ("in 14 countries", "22 new games"), not already in the question."""
    noun = counted_noun(question)
    if noun is None:
        return False
    pattern = rf"\b(?:{_COUNT})(?:[\s-]+[\w'’-]+){{0,2}}?[\s-]+(?:{_noun_forms(noun)})\b"
    asked = " ".join(question.lower().split())
    return any(" ".join(m.group(0).lower().split()) not in asked for m in re.finditer(pattern, text, re.IGNORECASE))


def asks_quantity(question: str) -> bool:
    """Whether ``question`` asks how many or how much (its first wh-word): only a quantity answers it."""
    lead = _WH.search(question)
    return bool(lead) and bool(_HOW_MANY_MUCH.match(question, lead.start()))


def quantity_unstated(question: str, quotes: list[str]) -> bool:
    """Whether ``question`` asks how many or how much and none of ``quotes`` states a quantity it does not
    already contain (a number or a number word; for a price, an amount of money too): then none answers it."""
    kind = expected_type(question)
    if not asks_quantity(question) or kind not in ("number", "currency"):
        return False
    return not any(carries(q, k, question) for q in quotes for k in {kind, "number"})


# the types whose carriers seldom miss an answer sentence and seldom stand in the others (SQuAD v2.0 dev, share of
# answer sentences / of other sentences that carry one: number 0.90 / 0.41, date 0.78 / 0.27; a name's, a place's
# or an organisation's capitalised words 0.63-0.74 / 0.44-0.59: typed_quotes would drop answers for them)
STRICT_TYPES: frozenset[AnswerType] = frozenset({"currency", "date", "number"})


def asked_type(question: str) -> AnswerType | None:
    """The answer type ``question`` asks for when it is worded as a question (``expected_type``); None for a
    claim or a topic, which ask for none."""
    return expected_type(question) if is_question(question) else None


def strict_type(question: str) -> AnswerType | None:
    """The type ``question`` asks for when quotes are held to it (``typed_quotes``): an amount of money, a date or
    a number (``STRICT_TYPES``); None otherwise. "How far / long / often ...?" is not held to it: "over any
    terrestrial distance" answers how far."""
    kind = asked_type(question)
    if kind not in STRICT_TYPES or (kind == "number" and _first_wh(question) == "how" and not asks_quantity(question)):
        return None
    return kind


def typed_quotes(question: str, quotes: list[str]) -> list[bool]:
    """Which of ``quotes`` may answer ``question``: when it asks for an amount of money, a date or a number
    (``strict_type``) and one of the quotes carries one it does not already contain, only those that do (a
    quote about the question's subject that states no date cannot say when); otherwise all of them."""
    kind = strict_type(question)
    if kind is None:
        return [True] * len(quotes)
    typed = [carries(q, kind, question) for q in quotes]
    return typed if any(typed) else [True] * len(quotes)


def carries(text: str, kind: AnswerType | None, question: str) -> bool:
    """Whether ``text`` holds an answer of type ``kind`` that ``question`` does not already contain."""
    if kind is None:
        return False
    if kind == "term":  # the naming words themselves: the question has them too ("what is it called?")
        return bool(typed_spans(text, kind))
    q = " ".join(question.lower().split())
    unit = asked_unit(question) if kind == "number" else None
    spans = _unit_amounts(text, unit) if unit else typed_spans(text, kind)
    if kind == "date" and _first_wh(question) == "when":  # "on Monday" says when, not on what date
        spans += [m.group(0) for m in _RELATIVE_DATE.finditer(text)]
    for span in spans:
        words = [w for w in re.findall(r"\w+", _POSSESSIVE.sub("", span.lower())) if w not in _GENERIC]
        if not words:
            continue
        if kind in ("person", "place", "org") and all(re.search(rf"\b{re.escape(w)}\b", q) for w in words):
            continue  # the subject of the question, not its answer
        if kind not in ("person", "place", "org") and " ".join(span.lower().split()) in q:
            continue
        return True
    return False


def names_asked_org(text: str, question: str) -> bool:
    """Whether ``text`` names an organisation of the kind ``question`` asks for ("which <noun>", an ``org``
    question): a name that stands beside the question's noun ("Chaoyang Hospital", "the hospital Chaoyang",
    "Broadhead, a Minneapolis agency"); for a business (company, firm, agency, group), beside any word for one
    ("the ad agency Broadhead Co."). A name the question holds itself ("Beijing Hospital" for "which Beijing
    hospital") does not count; neither does a capitalised word before a lower-case noun ("a Minneapolis-based
    firm")."""
    found = _ORG_Q.search(" ".join(question.split()))
    if found is None:
        return False
    nouns = _noun_forms(found.group("noun").lower())
    asked = _plain_words(question)
    names = (
        rf"((?:{_NAME_WORD}\s+)+)(?=[A-Z])(?i:{nouns})\b",  # "Chaoyang Hospital", "Broadhead Co."
        rf"\b(?:{nouns})(?:\s+of)?,?\s+((?:{_NAME_WORD}\s*)+)",  # "the ad agency Broadhead"
        rf"((?:{_NAME_WORD}\s*)+),\s+(?:a|an|the)\s+(?:[\w&'’-]+\s+){{0,5}}?(?i:{nouns})\b",  # "Broadhead, a ... firm"
    )
    for pattern in names:
        for m in re.finditer(pattern, text):
            words = _plain_words(m.group(1))
            if words and not words <= asked:
                return True
    return False


_ACRONYM = r"(?=(?:[a-z]*[A-Z]){2})[A-Za-z]{2,10}"  # two capitals or more: "UMC", "vBNS"
_ACRONYM_Q = re.compile(
    rf"(?<![\w'’])(?P<a>{_ACRONYM})[\"”'’]?(?:\s+(?i:acronym|abbreviation|initials))?"
    rf"\s+(?i:stands?|stood|(?:is\s+|was\s+)?short)\s+(?i:for)\b"  # "UMC stand for", "the AFC short for"
    rf"|\b(?i:acronym|abbreviation|initials)\s+[\"“'‘]?(?P<b>{_ACRONYM})(?![\w'’])"  # "the acronym TGIF"
)
_EXPANSION_WORD = re.compile(r"[^\W\d_][\w'’]*")  # a hyphen or a slash parts words: "Command/Service Module"
_INNER_WORDS = frozenset("and of in de du des la le the for on to".split())


def asked_acronym(question: str) -> str | None:
    """The acronym whose expansion ``question`` asks for ("What does UMC stand for?", "What is the AFC short
    for?", "What did the LMP acronym stand for ...?", "the acronym TGIF"): a word of two capitals or more
    before "stand(s) for" / "short for", or after "acronym" ("Who stands for election to the NHS board?" asks
    none)."""
    found = _ACRONYM_Q.search(question)
    return (found.group("a") or found.group("b")) if found else None


def expands_acronym(text: str, acronym: str) -> bool:
    """Whether ``text`` spells out ``acronym``: consecutive words whose initials are its letters ("United
    Methodist Church" for UMC, "Time and Relative Dimension in Space" for TARDIS, "Front Islamique de Salut" for
    FIS), small words inside ("and", "of", "de", ...) counted or skipped, the first and last word not small, the
    others capitalised. Words in lower case, and a two-letter acronym, which chance spells too often ("from Iraq
    and Syria" for FIS), count only beside the acronym in brackets ("alternating current (AC)", "AC (alternating
    current)")."""
    letters = [c.lower() for c in acronym if c.isalpha()]
    words = list(_EXPANSION_WORD.finditer(text))
    low = [w.group(0).lower() for w in words]
    bracketed = re.escape(acronym)

    def ends(i: int, j: int) -> list[int]:  # word indices where a spelling of letters[j:] from word i can end
        if i >= len(words) or low[i][0] != letters[j]:
            skip = j > 0 and i < len(words) and low[i] in _INNER_WORDS
            return ends(i + 1, j) if skip else []
        if j == len(letters) - 1:
            here = [] if low[i] in _INNER_WORDS else [i]
        else:
            here = ends(i + 1, j + 1)
        return here + (ends(i + 1, j) if low[i] in _INNER_WORDS and j > 0 else [])

    for i, word in enumerate(low):
        if word in _INNER_WORDS or word == acronym.lower() or word[0] != letters[0]:
            continue
        for last in ends(i, 0):
            spelled = [w.group(0) for w in words[i : last + 1] if w.group(0).lower() not in _INNER_WORDS]
            if len(letters) > 2 and all(w[0].isupper() for w in spelled):
                return True
            start, end = words[i].start(), words[last].end()
            if re.match(rf"\s*\(\s*{bracketed}\s*\)", text[end:]) or re.search(
                rf"\b{bracketed}\s*\(\s*$", text[:start]
            ):
                return True
    return False


def _plain_words(text: str) -> set[str]:
    """Lower-cased words less leading words and a plural ``s`` ("the Huguenots" -> {"huguenot"})."""
    return {w.rstrip("s") or w for w in re.findall(r"\w+", text.lower()) if w not in _LEADING}


_LEADING = frozenset(
    "the a an in on at of for from by with this that these those it its he she they his her their after before "
    "during when while since although however but and or as to".split()
)
_POSSESSIVE = re.compile(r"['’]s\b|['’](?!\w)")  # "Newton's constant" names the question's Newton, not an answer
_GENERIC = frozenset({"the", "of", "in", "at", "from", "near", "to", "across", "into", "throughout"})
