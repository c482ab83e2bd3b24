"""Names a question or a criterion asks about (pure functions): ``named_subjects`` finds them (capitalised runs
and acronyms) and ``mentions`` looks for one in a text. The audit uses them to tell which blocks speak of what an
acceptance criterion names."""

from __future__ import annotations

import re

from memory_store.text import STOP_WORDS, word_pattern

# Words that may join the capitalised words of one name ("Interaction to Next Paint", "Bank of England").
_NAME_CONNECTORS = frozenset({"of", "to", "for", "and", "the", "de", "von", "van", "in", "on", "at"})
_TOKEN = word_pattern("name")


def _is_name_word(word: str) -> bool:
    return word[0].isupper() or (any(c.isdigit() for c in word) and any(c.isupper() for c in word))


def named_subjects(question: str) -> list[str]:
    """The names a question asks about: runs of capitalised words (with connectors such as "to" or "of" inside
    them) and acronyms: "Largest Contentful Paint", "Interaction to Next Paint", "Lighthouse", "INP", "HTTP/3".
    The first word is capitalised anyway: it counts only as an acronym or as the start of a longer name. "I"
    never counts."""
    tokens = _TOKEN.findall(question)
    capitalised = [w for w in tokens[1:] if w[0].isalpha() and _is_name_word(w)]
    if len(capitalised) > 0.6 * max(1, len(tokens) - 1):
        return []  # Title Case: capitals say nothing about names
    names: list[str] = []
    run: list[str] = []

    def close() -> None:
        while run and run[-1].lower() in _NAME_CONNECTORS:
            run.pop()
        if run:
            names.append(" ".join(run))
        run.clear()

    for i, word in enumerate(tokens):
        lowered = word.lower()
        first_alone = i == 0 and not (
            word.isupper() or any(c.isdigit() for c in word) or (len(tokens) > 1 and _is_name_word(tokens[1]))
        )
        starts = not run and (lowered in STOP_WORDS or first_alone)
        if _is_name_word(word) and word != "I" and not starts:
            run.append(word)
        elif run and lowered in _NAME_CONNECTORS and i + 1 < len(tokens) and _is_name_word(tokens[i + 1]):
            run.append(word)
        else:
            close()
    close()
    return list(dict.fromkeys(names))


def mentions(text: str, name: str) -> bool:
    """Whether ``text`` contains ``name`` as whole words (case and spacing ignored), its last word perhaps in the
    plural or possessive ("Normans", "Huguenots", "Google's" mention "Norman", "Huguenot", "Google"); an acronym
    is also mentioned by the capitalised words it abbreviates ("United Methodist Church" for "UMC", "Victoria
    and Albert Museum" for "V&A")."""
    words = [re.escape(w) for w in name.split()]
    pattern = r"(?<![\w])" + r"\s+".join(words) + r"(?:['’]?s|es)?(?![\w])"
    if re.search(pattern, text, re.IGNORECASE) is not None:
        return True
    return _ACRONYM.fullmatch(name) is not None and re.search(_expansion(name), text) is not None


# An acronym of 2-6 capitals ("&" between them allowed), and the capitalised words that spell it, one word per
# letter, connectors ("of", "and", ...) between them: case-sensitive, so "the united methodist church" is not it.
_ACRONYM = re.compile(r"[A-Z](?:&?[A-Z]){1,5}")
_EXPANSION_GAP = r"[\s-]+(?:(?:" + "|".join(sorted(_NAME_CONNECTORS)) + r"|&)\s+)*"


def _expansion(acronym: str) -> str:
    letters = [c for c in acronym if c.isalpha()]
    return r"(?<![\w])" + _EXPANSION_GAP.join(rf"{c}[^\W\d_]*" for c in letters) + r"(?![\w])"
