"""How well a passage of a cited page supports a claim that cites it without quoting it: :func:`support_scores`,
a probability per passage from a **fitted logistic regression** (``models/support.json``, fitted by
``bench/fit_support.py``; its card is ``models/README.md``) over features this module computes, and the two
cut-offs ``SUPPORTED`` and ``WEAK`` that come with the weights.

The page's **closest statements** decide: every passage (every sentence and run of up to three sentences) gets
``closeness = (meaning + words) / 2``, where *meaning* is the cosine of the claim's and the passage's
embeddings mapped from ``COS_FLOOR`` (nothing in common) to ``COS_CEIL`` (a paraphrase) onto 0..1 (computed for
the ``EMBED_TOP`` passages sharing the most words with the claim) and *words* the share of the claim's content
stems and numbers the passage holds. The passages within ``ALIGN_MARGIN`` of the closest (at most
``READ_TOP`` of them) are read by the model; the others support the claim no more than those do, so a loosely
related passage elsewhere on the page cannot outweigh the sentence that says the opposite.

The model reads, between the claim and a passage's *statement* (the part of the passage's sentence whose words
align best with the claim's, in order, that the claim's words span), :data:`FEATURES`:

- ``words`` (above); ``stated``: the share of the claim's stems and numbers in the statement;
  ``cover``: the share of the statement's stems the claim holds; ``novel``: the share of the claim's words (stop
  words included, but articles, "be" and a few prepositions) that the statement lacks;
- ``negation``: one of the two is negated and the other is not (an odd number of "not", "no", "never", "n't",
  "without"...; closed-class words, not a list of opposites); ``prefix``: a word of one is a negative form of a
  word of the other ("unsafe" / "safe", "non-profit" / "profit");
- ``numbers``: a number the claim states that the passage does not, or the statement gives other numbers;
- ``order``: the share of the claim's shared words out of place (left out of the longest common subsequence
  while the statement holds them elsewhere): how far they stand in another order (swapped roles: "lab data as
  the verdict, field data as the microscope" against the opposite; two numbers swapped); ``runs``: in how
  many separate runs the words out of order stand (a phrase moved to the front is one, two words swapped are
  two);
- ``pivot``: cut into the pieces that stand together in both, the claim puts two of them on the other sides of
  a third ("B after A" for "A after B", "man bites dog", two words or numbers exchanged): a part kept in place
  while two others trade sides, which moving one phrase, whole, to the front, the end or the middle never does
  (two numbers side by side that trade places count too: a score or a range reversed);
- ``swap``: for the claim's words the statement lacks, the highest cosine (word embeddings) to a word of the
  statement the claim lacks: a near word put in another's place (an antonym, another entity, another
  weekday) rather than a word added;
- ``shift``: 1 - the cosine of the claim's and the statement's sentence embeddings: how far the words the claim
  puts in place of the statement's move its meaning (a synonym little, an opposite more);
- ``contrary``: how much closer the claim stands (sentence embeddings) to the statement with "not" put before
  the words the claim replaced than to the statement itself: a word replaced by its opposite brings the claim
  nearer the negated statement, a synonym takes it away (``contrary_rel``: the same over ``shift``);
- ``entity``: the claim names a capitalised name or number the passage lacks while the statement names others;
  ``entity_stated``: the same against the statement alone, names counted (the name put in may stand elsewhere
  on the page, the one replaced elsewhere in the sentence);
- ``synonym``: the share of the claim's words the statement lacks that share a meaning (the word lexicon,
  ``models/lexicon.json.gz``: WordNet 3.0's synsets, an adjective with its cluster) with a word of the statement
  the claim lacks; ``opposed``: one of them stands against one of those (WordNet's antonyms, between meaning
  clusters: "rapid" against "slow" through "fast").

Nothing here lists opposed words by hand: the lexicon is WordNet's, and the model learnt from pairs of real
sentences and their reversals how these signals weigh.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory_store.errors import BrtException
from memory_store.text import number_pattern, word_pattern

__all__ = [
    "ALIGN_MARGIN", "COS_CEIL", "COS_FLOOR", "EMBED_TOP", "FEATURES", "LEXICON_PATH", "MODEL_PATH", "READ_TOP",
    "SUPPORTED", "WEAK", "Lexicon", "SupportModel", "closest", "features", "load_lexicon", "load_model", "negated",
    "numbers", "passages", "signals", "support_scores", "words_score",
]

MODELS = Path(__file__).resolve().parent / "models"
#: The shipped weights (their sha256 is in ``models/manifest.json`` and checked on load).
MODEL_PATH = MODELS / "support.json"
#: The cosine that maps to 0 (unrelated text of the same language) and to 1 (a paraphrase).
COS_FLOOR = 0.25
COS_CEIL = 0.8
#: The passages (most words in common with the claim first) whose cosine is computed.
EMBED_TOP = 16
#: Passages whose closeness lies within this of the closest one are the page's closest statements ...
ALIGN_MARGIN = 0.1
#: ... of which at most this many are read by the model.
READ_TOP = 4
FEATURES = ("words", "stated", "cover", "novel", "negation", "prefix", "numbers", "order", "runs", "pivot",
            "swap", "shift", "contrary", "contrary_rel", "entity", "entity_stated", "synonym", "opposed")
#: The word lexicon (WordNet 3.0, built by ``scripts/build_lexicon.py``; its sha256 is in the manifest).
LEXICON_PATH = MODELS / "lexicon.json.gz"


class SupportModelError(BrtException, RuntimeError):
    """The support model's weights file (or its word lexicon) is missing, altered or malformed."""


@dataclass(frozen=True)
class SupportModel:
    """Logistic regression weights over the features it names (of :data:`FEATURES`; standardised with ``mean``
    and ``scale``), and the cut-offs it was fitted with."""

    features: tuple[str, ...]
    weights: tuple[float, ...]
    bias: float
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    supported: float
    weak: float
    sha256: str

    def probability(self, x: dict[str, float]) -> float:
        z = self.bias + sum(w * (x[f] - m) / s for w, f, m, s in zip(self.weights, self.features, self.mean,
                                                                     self.scale, strict=True))
        return 1.0 / (1.0 + math.exp(-max(-40.0, min(40.0, z))))


def load_model(path: str | None = None) -> SupportModel:
    """The weights at ``path`` (default: the shipped ones), checked against the sha256 recorded for them."""
    p = Path(path) if path else MODEL_PATH
    return _verified(p, "support model", lambda data, digest: _parse(str(p), data, digest))


#: What each model file gave, by the file's and its record's identity (inode, size, modification time): a file is
#: read and hash-checked again only once it or its record changed, not for every claim.
_VERIFIED: dict[tuple[str, Any, Any], Any] = {}


def _verified(p: Path, what: str, parse: Any) -> Any:
    """``parse(bytes, sha256)`` of the model file ``p`` (``_checked``), kept until the file or its record change."""
    key = (str(p), _stamp(p), _stamp(_record_file(p)))
    if key[1] is not None and key in _VERIFIED:
        return _VERIFIED[key]
    out = parse(*_checked(p, what))
    if key[1] is not None:
        if len(_VERIFIED) >= 16:
            _VERIFIED.clear()
        _VERIFIED[key] = out
    return out


def _stamp(p: Path) -> tuple[int, int, int] | None:
    try:
        st = p.stat()
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _checked(p: Path, what: str) -> tuple[bytes, str]:
    """The bytes of the model file ``p`` and their sha256, which must match the one recorded for it."""
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise SupportModelError(f"{what} {p}: cannot read ({exc.strerror or exc})") from None
    digest, recorded = hashlib.sha256(data).hexdigest(), _recorded(p)
    if recorded is not None and recorded != digest:
        raise SupportModelError(f"{what} {p}: sha256 {digest[:12]}… does not match the recorded {recorded[:12]}…")
    return data, digest


def _parse(p: str, data: bytes, digest: str) -> SupportModel:
    try:
        doc = json.loads(data)
        model = doc["model"]
        names = tuple(model["features"])
        if not set(names) <= set(FEATURES) or not (len(names) == len(model["weights"]) == len(model["mean"])
                                                   == len(model["scale"])):
            raise SupportModelError(f"support model {p}: features {list(names)} are not among {list(FEATURES)}")
        return SupportModel(names, tuple(map(float, model["weights"])), float(model["bias"]),
                            tuple(map(float, model["mean"])), tuple(map(float, model["scale"])),
                            float(doc["cutoffs"]["supported"]), float(doc["cutoffs"]["weak"]), digest)
    except (KeyError, TypeError, ValueError) as exc:
        raise SupportModelError(f"support model {p}: malformed ({exc})") from None


def _record_file(path: Path) -> Path:
    """Where the sha256 of the model file ``path`` is recorded: the manifest beside the shipped models, else a
    ``.sha256`` file beside it."""
    if path.resolve().parent == MODELS.resolve():
        return MODELS / "manifest.json"
    return path.with_name(path.name + ".sha256")


def _recorded(path: Path) -> str | None:
    record = _record_file(path)
    if not record.is_file():
        return None
    if record.name == "manifest.json":
        entry = json.loads(record.read_text(encoding="utf-8")).get("files", {}).get(path.name)
        return entry.get("sha256") if isinstance(entry, dict) else None
    return record.read_text(encoding="utf-8").split()[0]


def _cutoff(name: str, default: float) -> float:
    try:
        model = load_model()
    except SupportModelError:
        return default
    return model.supported if name == "supported" else model.weak


#: At or above: the claim is supported by the passage (the model's probability; shipped with its weights).
SUPPORTED = _cutoff("supported", 0.5)
#: At or above (and below SUPPORTED): weakly supported. Below: not found there.
WEAK = _cutoff("weak", 0.2)


# -- text signals ---------------------------------------------------------------------------------------------

_NUMBER = number_pattern("figure")
_UNITS = {
    "zero": 0, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19,
}
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
         "ninety": 90}
_SCALE = {"hundred": 100, "thousand": 1000, "million": 10**6, "billion": 10**9}
_NUMBER_WORDS = re.compile(
    r"\b(?:(?P<tens>" + "|".join(_TENS) + r")(?:[-\s](?P<unit1>" + "|".join(k for k in _UNITS if _UNITS[k] < 10)
    + r"))?|(?P<unit>" + "|".join(sorted(_UNITS, key=len, reverse=True)) + r"))"
    r"(?:\s+(?P<scale>" + "|".join(_SCALE) + r"))?\b",
    re.IGNORECASE,
)


@functools.lru_cache(maxsize=1 << 15)
def numbers(text: str) -> frozenset[str]:
    """The numbers ``text`` states, normalised ("1,500" -> "1500", "4.50" -> "4.5", "twenty-five" -> "25"; "one"
    is left out: it is a pronoun as often as a number)."""
    out = set()
    for m in _NUMBER.finditer(text):
        value = m.group(0).replace(",", "")
        if "." in value:
            value = value.rstrip("0").rstrip(".")
        out.add(value)
    for m in _NUMBER_WORDS.finditer(text):
        value = _TENS.get((m.group("tens") or "").lower(), 0) + _UNITS.get(
            (m.group("unit1") or m.group("unit") or "").lower(), 0)
        if m.group("scale"):
            value = max(value, 1) * _SCALE[m.group("scale").lower()]
        out.add(str(value))
    return frozenset(out)


_NOT = re.compile(
    r"\b(?:not|no|never|none|nobody|nothing|neither|nor|without|cannot|hardly|barely)\b(?!-)|n['’]t\b",
    re.IGNORECASE,
)


def negated(text: str) -> bool:
    """Whether ``text`` is negated: an odd number of negations ("not", "no", "never", "n't", "without", ...;
    "not without" is not negated; "no-" in a compound such as "no-cors" is no negation)."""
    return len(_NOT.findall(text)) % 2 == 1


@functools.lru_cache(maxsize=1 << 15)
def _terms(text: str) -> tuple[str, ...]:
    from memory_store.text import terms

    return tuple(terms(text))


@functools.lru_cache(maxsize=1 << 13)
def _sentences(text: str) -> tuple[str, ...]:
    from memory_store.text import sentences

    return tuple(sentences(text)) or (text,)


_TOKEN = word_pattern("contraction")


@functools.lru_cache(maxsize=1 << 14)
def _anchors(text: str) -> tuple[tuple[str, int, int, bool], ...]:
    """The words of ``text``: (stem, start, end, anchor), an anchor being a content word, a number or a negation
    (the words an alignment holds on to)."""
    from memory_store.text import STOP_WORDS, stem

    out = []
    for m in _TOKEN.finditer(text):
        w = m.group(0).lower()
        anchor = w not in STOP_WORDS or w[:1].isdigit() or bool(_NOT.fullmatch(w)) or w.endswith(("n't", "n’t"))
        out.append((stem(w) if w.isalpha() else w, m.start(), m.end(), anchor))
    return tuple(out)


def _aligned(claim: str, sentence: str) -> tuple[int, int, int]:
    """The claim's anchors aligned in order with the sentence's (longest common subsequence): how many, and the
    sentence's words they span, widened by the claim's words before its first and after its last aligned anchor."""
    c, s = _anchors(claim), _anchors(sentence)
    ca = [i for i, t in enumerate(c) if t[3]][:80]
    sa = [j for j, t in enumerate(s) if t[3]][:160]
    if not ca or not sa:
        return 0, 0, len(s)
    table = [[0] * (len(sa) + 1) for _ in range(len(ca) + 1)]
    for x in range(len(ca) - 1, -1, -1):
        for y in range(len(sa) - 1, -1, -1):
            table[x][y] = (table[x + 1][y + 1] + 1 if c[ca[x]][0] == s[sa[y]][0]
                           else max(table[x + 1][y], table[x][y + 1]))
    pairs, x, y = [], 0, 0
    while x < len(ca) and y < len(sa):
        if c[ca[x]][0] == s[sa[y]][0] and table[x][y] == table[x + 1][y + 1] + 1:
            pairs.append((ca[x], sa[y]))
            x, y = x + 1, y + 1
        elif table[x + 1][y] >= table[x][y + 1]:
            x += 1
        else:
            y += 1
    if not pairs:
        return 0, 0, len(s)
    (c0, s0), (c1, s1) = pairs[0], pairs[-1]
    start, end = max(0, s0 - c0), min(len(s), s1 + (len(c) - c1))
    aligned_c, aligned_s = {i for i, _ in pairs}, {j for _, j in pairs}
    for i in ca:  # a word of the claim out of order ("In 2023, …" for "… in 2023"): the span covers it too
        if i not in aligned_c:
            j = next((j for j in sa if j not in aligned_s and s[j][0] == c[i][0]), None)
            if j is not None:
                start, end = min(start, j), max(end, j + 1)
    return len(pairs), start, end


#: A claim is matched against several sentences at once only when that aligns this many more of its words.
_JOINED = 3


def _statement(claim: str, passage: str) -> str:
    """What the passage says where it says the claim: the passage's sentence (or the passage, for a claim that
    joins its sentences) whose words align best with the claim's (in order), cut to the words the alignment
    spans (widened by the claim's words before and after it), so a negation in another clause ("… — and I will
    never be the same") says nothing about the claim."""
    best, best_n = passage, -1
    sentences = _sentences(passage)
    for sentence in (*sentences, passage) if len(sentences) > 1 else sentences:
        n, a, b = _aligned(claim, sentence)
        if sentence is passage and n < best_n + _JOINED:
            continue  # the passage as a whole only for a claim that says much of two sentences, not a word of one
        if n > best_n:
            words = _anchors(sentence)
            best_n = n
            best = sentence[words[a][1]:words[b - 1][2]] if words and b > a else sentence
    return best


def signals(claim: str, passage: str) -> dict[str, bool]:
    """The explicit mismatches between ``claim`` and ``passage``'s statement: ``numbers`` (a number of the claim
    the passage lacks, or other numbers stated instead) and ``negation`` (one negated, the other not)."""
    stated = _statement(claim, passage)
    claimed, said = numbers(claim), numbers(stated)
    return {
        "numbers": bool(claimed - numbers(passage)) or bool(claimed - said and said - claimed),
        "negation": negated(claim) != negated(stated),
    }


def words_score(claim: str, passage: str) -> float:
    """The share of the claim's content stems and numbers that the passage holds."""
    wanted = set(_terms(claim)) | numbers(claim)
    if not wanted:
        return 0.0
    return len(wanted & (set(_terms(passage)) | numbers(passage))) / len(wanted)


_PREFIX = re.compile(r"^(?:un|in|im|ir|il|non|dis)-?(?=[a-z]{3,})")


def _prefix_pair(a: str, b: str) -> bool:
    """A word of one text is a negative form of a word of the other (un-, in-, im-, ir-, il-, non-, dis-)."""
    from memory_store.text import stem, words

    wa, wb = set(words(a)), set(words(b))
    for x, y in ((wa, wb), (wb, wa)):
        stems = {stem(w) for w in y}
        for w in x:
            m = _PREFIX.match(w)
            if m and (w[m.end():] in y or stem(w[m.end():]) in stems):
                return True
    return False


def _order(claim_seq: list[str], statement_seq: list[str]) -> tuple[float, float]:
    """How far the shared words stand in another order: the share of the claim's shared words that the longest
    common subsequence of the two sequences leaves out while the statement still holds them elsewhere (a word
    out of place, not a word added: an "and" joining two sentences is added); and in how many separate runs
    these stand in the claim (a phrase moved to the front is one run, two words swapped are two)."""

    shared = set(claim_seq) & set(statement_seq)
    a = [w for w in claim_seq if w in shared][:80]
    b = [w for w in statement_seq if w in shared][:120]
    if len(a) < 2:
        return 0.0, 0.0
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for x in range(len(a) - 1, -1, -1):
        for y in range(len(b) - 1, -1, -1):
            table[x][y] = table[x + 1][y + 1] + 1 if a[x] == b[y] else max(table[x + 1][y], table[x][y + 1])
    kept, matched, x, y = set(), set(), 0, 0
    while x < len(a) and y < len(b):
        if a[x] == b[y] and table[x][y] == table[x + 1][y + 1] + 1:
            kept.add(x)
            matched.add(y)
            x, y = x + 1, y + 1
        elif table[x + 1][y] >= table[x][y + 1]:
            x += 1
        else:
            y += 1
    left = Counter(b[j] for j in range(len(b)) if j not in matched)
    out = set()
    for i in range(len(a)):
        if i not in kept and left[a[i]] > 0:
            left[a[i]] -= 1
            out.add(i)
    runs = sum(1 for i in out if i - 1 not in out)
    return len(out) / len(a), float(runs)


def _pieces(a: list[str], b: list[str]) -> list[tuple[int, int, int]]:
    """``a`` cut into the pieces that stand together in ``b`` (longest first, from the left; an unused place of
    ``b`` and one near where the last piece ended preferred): (start in ``a``, length, start in ``b``)."""
    where: dict[str, list[int]] = {}
    for p, w in enumerate(b):
        where.setdefault(w, []).append(p)
    out: list[tuple[int, int, int]] = []
    used: set[int] = set()
    i, last = 0, 0
    while i < len(a):
        best: tuple[int, bool, int] | None = None
        at = 0
        for p in where.get(a[i], ()):
            k = 1
            while i + k < len(a) and p + k < len(b) and a[i + k] == b[p + k]:
                k += 1
            key = (k, p not in used, -abs(p - last))
            if best is None or key > best:
                best, at = key, p
        k = best[0] if best else 1
        out.append((i, k, at))
        used.update(range(at, at + k))
        i, last = i + k, at + k
    return out


def _pivot(claim_seq: list[str], statement_seq: list[str], content: set[str]) -> float:
    """1 when, cut into the pieces that stand together in both (over the words they share), the claim puts two
    pieces holding content words on the other sides of a third (module docstring), or two numbers side by side
    trade places; else 0."""
    shared = set(claim_seq) & set(statement_seq)
    a = [w for w in claim_seq if w in shared][:80]
    b = [w for w in statement_seq if w in shared][:120]
    cut = _pieces(a, b)
    for (i, k, at), (i2, k2, at2) in zip(cut, cut[1:], strict=False):
        if k == k2 == 1 and at2 + 1 == at and a[i][:1].isdigit() and a[i2][:1].isdigit():
            return 1.0  # two numbers side by side that trade places ("17-45" for "45-17")
    pieces = [(at, any(w in content for w in a[i:i + k])) for i, k, at in cut]
    for j, (mid, _) in enumerate(pieces):
        before = any(at > mid and c for at, c in pieces[:j])
        if before and any(at < mid and c for at, c in pieces[j + 1:]):
            return 1.0
    return 0.0


#: Words whose presence says nothing about what a claim states (articles, "be", a few prepositions): a word of
#: the claim that is not on the page counts as new unless it is one of these. (Opposites are never here.)
_FUNCTION = frozenset("a an the of to and is are was were be been being it its that this these those as by "
                      "for with at on in from which who".split())


_CAPITAL = word_pattern("proper")
_APOSTROPHE_NAME = word_pattern("proper_apostrophe")


def _one_word_names(text: str) -> str:
    """``text`` with the apostrophe taken out of its names ("O'Brien's" -> "OBrien's"): a name stays one word
    (its second part is no separate word, nor its first part a function word)."""
    return _APOSTROPHE_NAME.sub(lambda m: m.group(0).replace("'", "").replace("’", ""), text)


def _names(text: str) -> set[str]:
    """Capitalised words not opening a sentence, and numbers: the names and figures a text states."""
    return set(_name_counts(text))


def _name_counts(text: str) -> Counter[str]:
    """:func:`_names`, each counted as often as the text names it (numbers once)."""
    out: Counter[str] = Counter(numbers(text))
    for m in _CAPITAL.finditer(text):
        before = text[:m.start()].rstrip()
        if before and before[-1] not in ".!?:\"“":
            out[m.group(0).lower()] += 1
    return out


def _negate_words(statement: str, stems: set[str]) -> str:
    """``statement`` with "not" put before its words (at most three) whose stems are in ``stems``."""
    from memory_store.text import stem

    out, at, n = [], 0, 0
    for m in word_pattern("word").finditer(statement):
        if n < 3 and stem(m.group(0).lower()) in stems:
            out += [statement[at:m.start()], "not "]
            at, n = m.start(), n + 1
    return "".join(out) + statement[at:]


@dataclass(frozen=True)
class Lexicon:
    """Words and their meaning clusters, the opposed cluster pairs, and irregular forms (``forms``: "fell" ->
    "fall"), as ``scripts/build_lexicon.py`` wrote them."""

    words: dict[str, tuple[int, ...]]
    opposed: frozenset[tuple[int, int]]
    forms: dict[str, tuple[str, ...]]
    broader: dict[int, tuple[int, ...]]

    def meanings(self, word: str) -> frozenset[int]:
        """The clusters of every lemma ``word`` may be a form of (WordNet's irregular forms and its regular
        endings: "rapidly" is not "rapid", but "rose" is "rise" and "increased" is "increase")."""
        w = word.lower()
        lemmas = {w, *self.forms.get(w, ())}
        for end, repl in _ENDINGS:
            if w.endswith(end) and len(w) > len(end) + 1:
                lemmas.add(w[: len(w) - len(end)] + repl)
        return frozenset(c for lemma in lemmas for c in self.words.get(lemma, ()))

    def related(self, a: str, b: str) -> tuple[bool, bool]:
        """Whether ``a`` and ``b`` share a meaning (or a meaning of one is the next broader of, or grouped
        with, one of the other: "rise" and "increase"), and whether a meaning of one stands against one of the
        other."""
        ma, mb = self.meanings(a), self.meanings(b)
        near = bool(ma & mb) or any(set(self.broader.get(x, ())) & mb for x in ma) or any(
            set(self.broader.get(y, ())) & ma for y in mb)
        return near, any((min(x, y), max(x, y)) in self.opposed for x in ma for y in mb)


#: WordNet's regular endings (its "morphy" rules for nouns, verbs and adjectives): (ending, replacement).
_ENDINGS = (("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"), ("men", "man"),
            ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"), ("ing", ""),
            ("er", ""), ("est", ""), ("er", "e"), ("est", "e"))


def load_lexicon(path: str | None = None) -> Lexicon:
    """The word lexicon at ``path`` (default: the shipped one), checked against its recorded sha256."""
    p = Path(path) if path else LEXICON_PATH
    return _verified(p, "word lexicon", lambda data, _digest: _parse_lexicon(str(p), data))


def _parse_lexicon(p: str, data: bytes) -> Lexicon:
    import gzip

    try:
        doc = json.loads(gzip.decompress(data))
        return Lexicon({w: tuple(cs) for w, cs in doc["words"].items()},
                       frozenset((int(a), int(b)) for a, b in doc["opposed"]),
                       {f: tuple(ls) for f, ls in doc["forms"].items()},
                       {int(c): tuple(bs) for c, bs in doc["broader"].items()})
    except (OSError, KeyError, TypeError, ValueError) as exc:
        raise SupportModelError(f"word lexicon {p}: malformed ({exc})") from None


def _lexical(claim_words: list[str], statement_words: list[str], lexicon: Lexicon) -> tuple[float, float]:
    """``synonym`` and ``opposed`` (module docstring) for the words the claim puts where the statement has
    others (each list: the words one text holds and the other lacks, at most 12 and 24)."""
    if not claim_words or not statement_words:
        return 0.0, 0.0
    same = opposed = 0
    for a in claim_words[:12]:
        pairs = [lexicon.related(a, b) for b in statement_words[:24]]
        same += any(s for s, _ in pairs)
        opposed = opposed or any(o for _, o in pairs)
    return same / len(claim_words[:12]), float(opposed)


def _differing(text: str, stems: set[str]) -> list[str]:
    """The alphabetic words of ``text`` whose stems are in ``stems``, in order, each once."""
    from memory_store.text import stem, words

    return list(dict.fromkeys(w for w in (x.lower() for x in words(text)) if w.isalpha() and stem(w) in stems))


def _tokens(text: str) -> list[str]:
    from memory_store.text import stem, words

    return [stem(w) for w in words(text)]


def features(claim: str, passage: str, meaning: float, embedder: Any,
             lexicon: Lexicon | None = None) -> dict[str, float]:
    """The model's features for ``claim`` against ``passage`` (``lexicon``: the word lexicon, read if not given).
    ``meaning`` (the mapped cosine, which chooses the closest statements) is not one: fitted with it, its weight
    came out negative (every reversal is as close in meaning as the statement it reverses), so it was left out.
    A name with an apostrophe inside ("O'Brien") is read as one word."""
    claim, passage = _one_word_names(claim), _one_word_names(passage)
    statement = _statement(claim, passage)
    c_terms, s_terms = set(_terms(claim)) | numbers(claim), set(_terms(statement)) | numbers(statement)
    sig = signals(claim, passage)
    c_tokens, s_tokens = _tokens(claim), _tokens(statement)
    c_set, s_set = set(c_tokens) - _FUNCTION, set(s_tokens) - _FUNCTION
    # every word, "more" and "last" included; counted, so a word put in that the statement holds elsewhere counts
    # ("won … lost" for "lost … lost")
    c_count, s_count = Counter(t for t in c_tokens if t not in _FUNCTION), Counter(
        t for t in s_tokens if t not in _FUNCTION)
    missing, extra = sorted(c_count - s_count), sorted(s_count - c_count)
    swap = 0.0
    if missing and extra and embedder is not None:
        vecs = _embed(embedder, [*missing[:12], *extra[:24]])
        k = len(missing[:12])
        swap = float((vecs[:k] @ vecs[k:].T).max())
    shift = contrary = 0.0
    if embedder is not None:
        negated_ = _negate_words(statement, set(extra)) if missing and extra else statement
        vecs = _embed(embedder, [claim, statement, negated_])
        shift = 1.0 - float(vecs[0] @ vecs[1])
        contrary = float(vecs[0] @ vecs[2]) - float(vecs[0] @ vecs[1]) if negated_ != statement else 0.0
    names_c, names_p, names_s = _names(claim), _names(passage), _names(statement)
    counted_c, counted_s = _name_counts(claim), _name_counts(statement)  # one of two "Mozilla"s replaced counts
    order, runs = _order(c_tokens, s_tokens)
    synonym, opposed = _lexical(_differing(claim, set(missing)), _differing(statement, set(extra)),
                                lexicon or load_lexicon())
    return {
        "words": words_score(claim, passage),
        "stated": len(c_terms & s_terms) / len(c_terms) if c_terms else 0.0,
        "cover": len(c_terms & s_terms) / len(s_terms) if s_terms else 0.0,
        "novel": len(c_set - s_set) / len(c_set) if c_set else 0.0,
        "negation": float(sig["negation"]),
        "prefix": float(_prefix_pair(claim, statement)),
        "numbers": float(sig["numbers"]),
        "order": order,
        "runs": runs,
        "pivot": _pivot(c_tokens, s_tokens, c_terms),
        "swap": max(0.0, swap),
        "shift": min(1.0, max(0.0, shift)),
        "contrary": contrary,
        "contrary_rel": max(-5.0, min(2.0, contrary / max(shift, 0.01))),
        "entity": float(bool(names_c - names_p) and bool(names_s - names_c)),
        "entity_stated": float(bool(counted_c - counted_s) and bool(counted_s - counted_c)),
        "synonym": synonym,
        "opposed": opposed,
    }


@dataclass
class Candidate:
    """A passage and what the model read of it."""

    passage: str
    closeness: float
    features: dict[str, float] | None = None
    probability: float = 0.0


def closest(claim: str, passages_: list[str], embedder: Any, *, score: bool = True) -> list[Candidate]:
    """Every passage with its closeness; the page's closest statements (module docstring) with their features
    and (``score``) the model's probability."""
    if not passages_:
        return []
    words = [words_score(claim, p) for p in passages_]
    top = sorted(range(len(passages_)), key=lambda i: -words[i])[:EMBED_TOP]
    vectors = _embed(embedder, [claim, *(passages_[i] for i in top)])
    meaning = [0.0] * len(passages_)
    for i, cos in zip(top, vectors[1:] @ vectors[0], strict=True):
        meaning[i] = min(1.0, max(0.0, (float(cos) - COS_FLOOR) / (COS_CEIL - COS_FLOOR)))
    out = [Candidate(p, (meaning[i] + words[i]) / 2) for i, p in enumerate(passages_)]
    best = max(c.closeness for c in out)
    near = sorted((i for i, c in enumerate(out) if c.closeness >= best - ALIGN_MARGIN),
                  key=lambda i: -out[i].closeness)[:READ_TOP]
    model = load_model() if score else None  # read and hash-checked once per process, again if it changes
    lexicon = load_lexicon()
    for i in near:
        out[i].features = features(claim, out[i].passage, meaning[i], embedder, lexicon)
        out[i].probability = model.probability(out[i].features) if model is not None else 0.0
    return out


def support_scores(claim: str, passages_: list[str], embedder: Any) -> list[float]:
    """How well each passage supports ``claim``, in 0..1: the model's probability for the page's closest
    statements, and for every other passage no more than theirs (0). ``embedder`` has
    ``embed_documents(texts)`` returning L2-normalised vectors."""
    return [c.probability for c in closest(claim, passages_, embedder)]


_CACHE: dict[tuple[int, str], Any] = {}
_CACHE_MAX = 40_000


def _embed(embedder: Any, texts: list[str]) -> Any:
    """Embeddings of ``texts``, each text embedded once per embedder (claims citing one page share them)."""
    import numpy as np

    key = id(embedder)
    missing = [t for t in dict.fromkeys(texts) if (key, t) not in _CACHE]
    if missing:
        if len(_CACHE) + len(missing) > _CACHE_MAX:
            _CACHE.clear()
        for text, vec in zip(missing, embedder.embed_documents(missing), strict=True):
            _CACHE[(key, text)] = vec
    return np.stack([_CACHE[(key, t)] for t in texts])


def passages(text: str, *, max_words: int = 90, span: int = 3) -> list[str]:
    """The passages of a page's text a claim is scored against: every sentence, and every run of up to
    ``span`` consecutive sentences (a claim may join them; lines count as sentences) under ``max_words``
    words, whitespace collapsed."""
    from memory_store.text import sentence_spans, sentence_windows

    spans = sentence_spans(text)

    def take(i: int, j: int) -> str | None:
        joined = " ".join(text[spans[i][0]:spans[j][1]].split())
        return None if j > i and len(joined.split()) > max_words else joined

    return list(dict.fromkeys(sentence_windows(len(spans), span, take)))
