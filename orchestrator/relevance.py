"""Names a question asks about, for the evidence checks of synthesis (pure functions).

The bundled embedding model (MiniLM) scores sentences of the same shape alike: "An Interaction to Next Paint of
200 ms or less is good" is as close to "What Largest Contentful Paint time counts as good?" as the LCP sentence
itself. What tells them apart is the name the question asks about. ``named_subjects`` finds those names
(capitalised runs and acronyms) and ``mentions`` looks for one in a text; synthesis prefers quotes that name it,
and drops a page that never names it when other pages do. ``index_entries`` tells a site index's one-line entry
for a page ("- Cumulative Layout Shift (CLS): visual stability and ...") from evidence when that page is cited.
"""

from __future__ import annotations

import re

from concept_index.text import LIST_MARKER
from memory_store.text import STOP_WORDS

# Words that may join the capitalised words of one name ("Interaction to Next Paint", "Bank of England").
_NAME_CONNECTORS = frozenset({"of", "to", "for", "and", "the", "de", "von", "van", "in", "on", "at"})
_TOKEN = re.compile(r"[^\W_][\w/+.-]*[^\W_]|[^\W_]", re.UNICODE)


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


# " | Site name", " - Site name", " — Section": what follows the page's own name in a <title>
_TITLE_TAIL = re.compile(r"\s+[|·•–—-]\s+.*$", re.DOTALL)
_ENTRY_BREAK = re.compile(r"\s*[:–—-]\s")


def title_head(title: str | None) -> str:
    """A page's title without its site's name: "Cumulative Layout Shift (CLS) | Fast Pages Field Guide" ->
    "Cumulative Layout Shift (CLS)"."""
    return _TITLE_TAIL.sub("", " ".join((title or "").split()))


def index_entries(blocks: list[tuple[str, str | None, str, str]]) -> list[bool]:
    """Which of ``blocks`` (url, page title, quote, the chunk text it was quoted from) is an index entry of a page
    another block cites: a list item that opens with that page's title, then a colon or a dash ("- Cumulative
    Layout Shift (CLS): visual stability and how to stop content from jumping around." on a site's index page).
    It describes the page, whose own blocks say what it says: it adds no evidence."""
    heads = {url: head for url, title, _, _ in blocks if len((head := title_head(title).lower()).split()) >= 2}
    flags = []
    for url, _, quote, text in blocks:
        core = " ".join(quote.strip("… ").split())[:60]
        line = next((ln for ln in (" ".join(t.split()) for t in text.splitlines()) if core and core in ln), "")
        item = line[m.end():].lower() if (m := LIST_MARKER.match(line)) else ""
        cited = [head for other, head in heads.items() if other != url]
        flags.append(any(item.startswith(head) and _ENTRY_BREAK.match(item[len(head):]) for head in cited))
    return flags
