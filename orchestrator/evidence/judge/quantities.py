"""Quantities stated in a text: numbers with units, currency amounts, percentages and dates (pure functions).

``quantities(text)`` finds each mention with its kind ("time", "currency:USD", "percent", "date", a count
noun such as "count:case"), its value in a base unit (seconds, metres, bytes, ...; a date is a (year, month,
day) triple), the precision of the figure as written (half a unit of its last digit: "4 seconds" may be a
rounding of 4.3) and its *context*: the content words around it in its sentence, and the names the sentence
mentions. Conflict detection (``conflicts.py``) compares mentions of the same kind whose contexts match.

Bare numbers without a unit ("Windows 10", "rated 7") are not quantities; a four-digit number from 1800 to
2100 without a unit is a year.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory_store.text import CONTEXT_STOP_WORDS, MONTHS, WEEKDAYS, number_pattern, singular, word_pattern

from .relevance import named_subjects

__all__ = [
    "Quantity", "context_similarity", "names_compatible", "names_overlap", "quantities", "same_value",
    "sentence_spans", "text_names",
]


@dataclass(frozen=True)
class Quantity:
    kind: str  # "time", "length", "percent", "currency:USD", "date", "count:case", ...
    value: float | tuple[int | None, int | None, int | None]
    text: str  # the mention as written ("2.5 seconds", "$4.2 million", "November 18, 2019")
    start: int
    end: int
    precision: float  # half a unit of the last written digit, in the base unit (0 for dates)
    context: dict[str, float]  # content words near the mention, in its sentence -> weight 1/(1 + distance)
    names: frozenset[str]  # names (capitalised runs, acronyms) of its sentence, lower-cased
    sentence: str

    @property
    def shown(self) -> str:
        return " ".join(self.text.split())


# -- units ---------------------------------------------------------------------------------------------------

_UNITS: dict[str, tuple[str, float]] = {}


def _unit(family: str, factor: float, *names: str) -> None:
    for name in names:
        _UNITS[name] = (family, factor)


_unit("time", 0.001, "ms", "msec", "millisecond", "milliseconds")
_unit("time", 1e-6, "µs", "microsecond", "microseconds")
_unit("time", 1.0, "s", "sec", "secs", "second", "seconds")
_unit("time", 60.0, "min", "mins", "minute", "minutes")
_unit("time", 3600.0, "h", "hr", "hrs", "hour", "hours")
_unit("time", 86400.0, "day", "days")
_unit("time", 604800.0, "week", "weeks")
_unit("time", 2629800.0, "month", "months")
_unit("time", 31557600.0, "year", "years", "yr", "yrs")
_unit("age", 1.0, "year-old", "years-old")
_unit("length", 0.001, "mm", "millimetre", "millimetres", "millimeter", "millimeters")
_unit("length", 0.01, "cm", "centimetre", "centimetres", "centimeter", "centimeters")
_unit("length", 1.0, "metre", "metres", "meter", "meters")
_unit("length", 1000.0, "km", "kilometre", "kilometres", "kilometer", "kilometers")
_unit("length", 1609.344, "mile", "miles", "mi")
_unit("length", 0.3048, "ft", "foot", "feet")
_unit("length", 0.0254, "inch", "inches")
_unit("mass", 0.001, "g", "gram", "grams")
_unit("mass", 1e-6, "mg", "milligram", "milligrams")
_unit("mass", 1.0, "kg", "kilogram", "kilograms", "kilo", "kilos")
_unit("mass", 1000.0, "tonne", "tonnes", "ton", "tons", "t")
_unit("mass", 0.45359237, "lb", "lbs")
_unit("data", 1.0, "byte", "bytes")
_unit("data", 1e3, "kb", "kilobyte", "kilobytes")
_unit("data", 1e6, "mb", "megabyte", "megabytes")
_unit("data", 1e9, "gb", "gigabyte", "gigabytes")
_unit("data", 1e12, "tb", "terabyte", "terabytes")
_unit("rate", 1e3, "kbps", "kbit/s")
_unit("rate", 1e6, "mbps", "mbit/s")
_unit("rate", 1e9, "gbps", "gbit/s")
_unit("frequency", 1.0, "hz")
_unit("frequency", 1e3, "khz")
_unit("frequency", 1e6, "mhz")
_unit("frequency", 1e9, "ghz")
_unit("speed", 0.44704, "mph")
_unit("speed", 1 / 3.6, "km/h", "kph", "kmh")
_unit("temperature_c", 1.0, "°c", "celsius")
_unit("temperature_f", 1.0, "°f", "fahrenheit")
_unit("power", 1.0, "w", "watt", "watts")
_unit("power", 1e3, "kw", "kilowatt", "kilowatts")
_unit("power", 1e6, "mw", "megawatt", "megawatts")
_unit("energy", 3.6e6, "kwh")
_unit("frame_rate", 1.0, "fps")
_unit("pixels", 1.0, "px", "pixel", "pixels")
_unit("resolution", 1.0, "p")  # 1080p
_unit("percent", 1.0, "%", "percent", "per cent")
_unit("percentage_points", 1.0, "percentage point", "percentage points")

_CURRENCY_PREFIX = {
    "us$": "USD", "$": "USD", "usd": "USD", "a$": "AUD", "c$": "CAD", "€": "EUR", "eur": "EUR",
    "£": "GBP", "gbp": "GBP", "¥": "JPY", "₹": "INR", "rs": "INR", "rs.": "INR",
}
_CURRENCY_WORD = {
    "dollar": "USD", "dollars": "USD", "euro": "EUR", "euros": "EUR", "yuan": "CNY", "yen": "JPY",
    "rupees": "INR", "pounds sterling": "GBP",
}
_MAGNITUDE = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12, "bn": 1e9, "mn": 1e6}
_MONEY_MAGNITUDE = {"k": 1e3, "m": 1e6, "b": 1e9}  # written straight after the number: "$5m", "10k"
_MONTH_RE = (
    r"(?P<month{i}>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_DAY = r"(?P<day{i}>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year{i}>1[89]\d\d|20\d\d)"
_DATE_RE = re.compile(
    "|".join(
        [
            r"\b" + _YEAR.format(i=0) + r"-(?P<mnum0>[01]\d)-(?P<dnum0>[0-3]\d)\b",
            r"\b" + _MONTH_RE.format(i=1) + r"\s+" + _DAY.format(i=1) + r"(?:,?\s+" + _YEAR.format(i=1) + r")?\b",
            r"\b" + _DAY.format(i=2) + r"\s+(?:of\s+)?" + _MONTH_RE.format(i=2) + r"(?:,?\s+" + _YEAR.format(i=2)
            + r")?\b",
            r"\b" + _MONTH_RE.format(i=3) + r",?\s+" + _YEAR.format(i=3) + r"\b",
        ]
    ),
    re.IGNORECASE,
)
_NUMBER = number_pattern("quantity")
_AFTER = re.compile(
    r"\s?(?:-(?=[a-z]))?(?P<word>%|°\s?[cf]\b|per cent\b|percentage points?\b|pounds sterling\b|years?-old\b"
    r"|[a-zµ][a-z]*(?:/[a-z]+)?)",
    re.IGNORECASE,
)
_RANGE_NEXT = re.compile(r"\s*(?:and|to|-|–|—)\s*(?=\$?\d)", re.IGNORECASE)
# Words between a number and its count noun that say nothing about what is counted ("3 new cases").
_FILLERS = frozenset({"new", "more", "other", "additional", "confirmed", "suspected", "reported", "further"})
_NOT_NOUNS = frozenset(
    """a an and are as at be been but by for from had has have in into is it its of on or per than that the
    their then there these they this to was were which who will with would out up down off over under about
    after before since times x""".split()
)
_STOP = CONTEXT_STOP_WORDS
_CONTEXT_WORDS = 6
_WORD = word_pattern("latin")


_SENTENCE = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+(?=[\"“(\[]?[A-Z])|\n+")


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of the sentences of ``text``."""
    spans, pos = [], 0
    for m in _SENTENCE.finditer(text):
        spans.append((pos, m.start()))
        pos = m.end()
    spans.append((pos, len(text)))
    return [(a, b) for a, b in spans if text[a:b].strip()]


def _plural(word: str) -> bool:
    irregular = ("people", "children", "men", "women")
    return len(word) > 3 and word.endswith("s") and not word.endswith("ss") or word in irregular


_CALENDAR = frozenset(MONTHS) | frozenset(WEEKDAYS)


def _names(sentence: str) -> frozenset[str]:
    """The sentence's names (lower-cased), without month and weekday names."""
    out = set()
    for name in named_subjects(sentence):
        kept = " ".join(w for w in name.lower().split() if w.rstrip(".") not in _CALENDAR)
        kept = re.sub(r"^(?:in|of|on|at|to|the|and)\s+|\s+(?:in|of|on|at|to|the|and)$", "", kept).strip()
        if kept and not kept.isdigit():
            out.add(kept)
    return frozenset(out)


def _precision(number: str) -> float:
    frac = number.split(".", 1)[1] if "." in number else ""
    return 0.5 * 10 ** (-len(frac))


def quantities(text: str) -> list[Quantity]:
    """Every quantity stated in ``text``, in text order."""
    out: list[Quantity] = []
    for s0, s1 in sentence_spans(text):
        sentence = text[s0:s1]
        names = _names(sentence)
        found = _dates(sentence) + _numbers(sentence, taken=[(a, b) for _, _, _, a, b, _ in _dates(sentence)])
        for kind, value, precision, a, b, _ in sorted(found, key=lambda f: f[3]):
            out.append(
                Quantity(
                    kind=kind,
                    value=value,
                    text=sentence[a:b],
                    start=s0 + a,
                    end=s0 + b,
                    precision=precision,
                    context=_context(sentence, a, b),
                    names=names,
                    sentence=" ".join(sentence.split()),
                )
            )
    return out


_Found = tuple[str, object, float, int, int, str]


def _dates(sentence: str) -> list[_Found]:
    found: list[_Found] = []
    for m in _DATE_RE.finditer(sentence):
        g = {k: v for k, v in m.groupdict().items() if v}
        year = next((int(v) for k, v in g.items() if k.startswith("year")), None)
        month_name = next((v for k, v in g.items() if k.startswith("month")), None)
        month = MONTHS.get(month_name.lower().rstrip(".")) if month_name else None
        if "mnum0" in g:
            month = int(g["mnum0"])
        day = next((int(v) for k, v in g.items() if k.startswith("day")), None)
        if "dnum0" in g:
            day = int(g["dnum0"])
        if day is not None and not 1 <= day <= 31 or month is not None and not 1 <= month <= 12:
            continue
        if month_name and month_name.lower() == "may" and day is None:
            continue  # "may 2019"? too rare to tell from the verb
        found.append(("date", (year, month, day), 0.0, m.start(), m.end(), m.group(0)))
    return found


def _numbers(sentence: str, taken: list[tuple[int, int]]) -> list[_Found]:
    found: list[_Found] = []
    pending: list[tuple[str, int, int, float]] = []  # a range's first number, waiting for its unit
    for m in _NUMBER.finditer(sentence):
        a, b = m.start(), m.end()
        if any(x <= a < y for x, y in taken):
            continue
        raw = m.group(0)
        currency = _currency_before(sentence, a)
        start = a - len(currency[1]) if currency else a
        cur = currency[0] if currency else None
        end, scale = b, 1.0
        mag = re.match(r"\s?(thousand|million|billion|trillion|bn|mn)\b", sentence[b:], re.IGNORECASE)
        if mag is None and cur is not None:
            mag = re.match(r"()(k|m|b)\b", sentence[b:], re.IGNORECASE)
        if mag is not None:
            word = (mag.group(1) or mag.group(2)).lower()
            scale = _MAGNITUDE.get(word) or _MONEY_MAGNITUDE[word]
            end = b + mag.end()
        kind, factor, end = _kind_after(sentence, end, cur)
        if kind is None and mag is not None:  # "a population of 1.4 million": a count of something
            kind = "count:"
        if kind is None:
            if mag is None and re.fullmatch(r"1[89]\d\d|20\d\d", raw):
                found.append(("date", (int(raw), None, None), 0.0, a, b, raw))
            elif _RANGE_NEXT.match(sentence, b):  # "between 2.5 and 4 seconds": the unit follows the 2nd number
                pending.append((raw, start, b, float(raw.replace(",", "")) * scale))
            continue
        number = float(raw.replace(",", ""))
        found.append((kind, number * scale * factor, _precision(raw) * scale * factor, start, end, sentence[start:end]))
        for p_raw, p_start, p_end, p_value in pending:
            if not sentence[p_end:start].strip(" andto-–—$"):
                found.append((kind, p_value * factor, _precision(p_raw) * factor, p_start, p_end, p_raw))
        pending = []
    return found


def _kind_after(sentence: str, pos: int, cur: str | None) -> tuple[str | None, float, int]:
    """The kind of a number that ends at ``pos`` (currency, a unit, or a count noun), the factor to its base
    unit, and where the mention ends."""
    tail = sentence[pos:]
    if cur is None:
        word_m = re.match(r"\s?(dollars?|euros?|yuan|yen|rupees|pounds sterling)\b", tail, re.IGNORECASE)
        if word_m is not None:
            return f"currency:{_CURRENCY_WORD[word_m.group(1).lower()]}", 1.0, pos + word_m.end()
    else:
        return f"currency:{cur}", 1.0, pos
    unit = _AFTER.match(tail)
    if unit is None:
        return None, 1.0, pos
    word = unit.group("word")
    key = " ".join(word.lower().replace("° ", "°").split())
    if key in _UNITS and (len(key) > 1 or word.islower() or key == "%"):
        family, factor = _UNITS[key]
        return family, factor, pos + unit.end()
    used = unit.end()
    noun = key
    nxt = re.match(r"\s+([a-z][a-z-]*)\b", tail[used:])
    if nxt is not None:
        second = nxt.group(1)
        if second in _UNITS and len(second) > 1 and word.islower():  # "20 nautical miles"
            family, factor = _UNITS[second]
            return family, factor, pos + used + nxt.end()
        # "3 new cases", "28 close contacts", "1.4 million Syrian refugees": an adjective before the noun
        if noun in _FILLERS or (second not in _STOP and second not in _NOT_NOUNS and _plural(second)
                                and (not _plural(noun) or not word.islower())):
            noun, word, used = second, second, used + nxt.end()
    if noun in _FILLERS:
        return None, 1.0, pos
    if len(noun) >= 3 and word.islower() and noun not in _NOT_NOUNS and noun not in _STOP and noun not in _UNITS:
        return f"count:{singular(noun)}", 1.0, pos + used
    return None, 1.0, pos


def _currency_before(sentence: str, a: int) -> tuple[str, str] | None:
    head = sentence[max(0, a - 4) : a]
    for sign in sorted(_CURRENCY_PREFIX, key=len, reverse=True):
        for sep in ("", " "):
            cand = sign + sep
            if head.lower().endswith(cand) and (len(sign) == 1 or not sign.isalpha() or _word_start(head, cand)):
                return _CURRENCY_PREFIX[sign], head[len(head) - len(cand) :]
    return None


def _word_start(head: str, cand: str) -> bool:
    i = len(head) - len(cand)
    return i == 0 or not head[i - 1].isalpha()


def _context(sentence: str, a: int, b: int) -> dict[str, float]:
    before = [w for w in _WORD.findall(sentence[:a]) if w.lower() not in _STOP and len(w) > 1][-_CONTEXT_WORDS:]
    after = [w for w in _WORD.findall(sentence[b:]) if w.lower() not in _STOP and len(w) > 1][:_CONTEXT_WORDS]
    out: dict[str, float] = {}
    for distance, word in [*enumerate(reversed(before)), *enumerate(after)]:
        key = singular(word)
        out[key] = max(out.get(key, 0.0), 1.0 / (1 + distance))
    return out


def context_similarity(a: Quantity, b: Quantity) -> float:
    """Weighted Jaccard index of two mentions' contexts (near words weigh more)."""
    keys = set(a.context) | set(b.context)
    top = sum(max(a.context.get(k, 0.0), b.context.get(k, 0.0)) for k in keys)
    low = sum(min(a.context.get(k, 0.0), b.context.get(k, 0.0)) for k in keys)
    return low / top if top else 0.0


def names_compatible(a: Quantity, b: Quantity) -> bool:
    """False when both sentences name things and no name of one is (within) a name of the other:
    "Largest Contentful Paint" and "Interaction to Next Paint" are different subjects, "Next Paint" and
    "Interaction to Next Paint" are not."""
    return names_overlap(a.names, b.names)


def names_overlap(a: frozenset[str], b: frozenset[str]) -> bool:
    """True when either set is empty or a name of one is (within) a name of the other (see names_compatible)."""
    if not a or not b:
        return True
    for x in a:
        for y in b:
            wx, wy = set(x.split()), set(y.split())
            if wx <= wy or wy <= wx:
                return True
    return False


def text_names(text: str) -> frozenset[str]:
    """The names (lower-cased) of every sentence of ``text``, months and weekdays left out."""
    out: set[str] = set()
    for s0, s1 in sentence_spans(text):
        out |= _names(text[s0:s1])
    return frozenset(out)


def same_value(a: Quantity, b: Quantity) -> bool:
    """Whether two mentions of one kind state the same value, allowing for rounding ("4 seconds" may be 4.3;
    "November 2019" and "November 18, 2019" agree on what both say)."""
    if a.kind != b.kind:
        return False
    if a.kind == "date":
        return all(x is None or y is None or x == y for x, y in zip(a.value, b.value, strict=True))  # type: ignore[arg-type]
    va, vb = float(a.value), float(b.value)  # type: ignore[arg-type]
    return abs(va - vb) + 1e-9 * max(abs(va), abs(vb)) < max(a.precision, b.precision)
