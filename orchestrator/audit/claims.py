"""The claims of a Markdown report written by a person or an agent, with the quotes and citations they carry.

``parse_report(text)`` reads the report line by line and returns one :class:`ReportClaim` per statement:

- an **evidence-block line** (``[CLS Evidence #1] "quote" — web.dev/x (last updated: 2025-09-14)``, as
  ``brt synthesize`` prints it, also inside a list item): its quote, attributed to its URL and date; its
  ``; also at URL (last updated: …)`` sources are citations too. ``[CLS Gap] …`` lines are gaps, not claims;
- every **sentence** of a paragraph and every **bullet** (list item, table row), split with brt's one sentence
  splitter (``memory_store.text``). Quotes (``"…"`` or ``“…”``) and citations are masked before the split, so
  a quote of several sentences stays in one claim and a URL's dots end no sentence;
- a **footnote definition** that quotes (``[^1]: "quote" — [title](https://…) (last updated: …)``).

Citations: inline links ``[text](url)``, reference links ``[text][id]`` with their ``[id]: url`` definition,
autolinks ``<https://…>``, bare ``https://…`` URLs, a scheme-less URL after a dash that is followed by its
date (``— host/path (last updated: …)``, the evidence-block style), ``[Label Evidence #n]`` references and
``[^id]`` footnote references (which take the footnote definition's citations). The date of a citation is an
ISO date (``YYYY-MM-DD``) or ``unknown`` given as ``last updated``/``updated``/``modified`` (``: `` optional),
or in parentheses right after it; each date goes to the nearest citation of its sentence.

A claim is a sentence or bullet that states something: at least three words outside its citations, not a
heading, not a question, not an introduction ending in ``:``. A sentence or line that holds only citations
("Source: [x](https://…)") attaches them to the claim before it. Markers such as ``(unsupported)``,
``[no evidence]``, ``[Label Gap]`` or a leading ``Unsupported:`` mark a claim as knowingly unsupported.
Quotes shorter than three words are read as part of the claim's text, not checked as quotes.

Pure functions over text: no store, no model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["Citation", "ReportClaim", "ParsedReport", "parse_report", "unescape_markdown"]

#: Quotes shorter than this many words are not checked as quotes (scare quotes, names).
MIN_QUOTE_WORDS = 3
#: Statements shorter than this many words (citations and quotes masked) are not claims.
MIN_CLAIM_WORDS = 3


@dataclass
class Citation:
    """One citation as written: a URL (``url``, maybe without its scheme) or an evidence-block reference
    (``label`` and ``n``), and the date given for it (``None``: no date given)."""

    kind: str  # "link", "url", "evidence", "footnote", "also at"
    text: str  # as written
    url: str | None = None
    date: str | None = None
    label: str | None = None
    n: int | None = None
    quote: str | None = None  # the quote an evidence-block line gives for this reference

    @property
    def ref(self) -> str | None:
        return f"[{self.label} Evidence #{self.n}]" if self.label is not None else None


@dataclass
class ReportClaim:
    """A statement of the report: its line (1-based), its text as written (one line), the quotes it
    attributes, its citations, and whether it is marked as unsupported."""

    line: int
    text: str
    kind: str  # "evidence line", "sentence", "bullet", "footnote"
    quotes: list[str] = field(default_factory=list)
    citations: list[Citation] = field(default_factory=list)
    marked_unsupported: bool = False
    plain: str = ""  # the text without its citations and quote marks (what a cited claim is scored by)
    outside: str = ""  # its words outside its quotes and citations


@dataclass
class ParsedReport:
    claims: list[ReportClaim]
    gaps: int  # ``[Label Gap]`` lines
    evidence_lines: dict[tuple[str, int], Citation]  # (label, n) -> the report's own evidence-block line


# -- patterns --------------------------------------------------------------------------------------------------

_DATE = r"(?P<date>\d{4}-\d{2}-\d{2}|unknown)"
_EVIDENCE_LINE = re.compile(
    r"^\s*(?:[-*+]\s+|\d{1,3}[.)]\s+)?\[(?P<label>[^\[\]\n]+?) Evidence #(?P<n>\d+)\]\s*"
    r"\"(?P<quote>(?:[^\"\\]|\\.)*)\"\s*(?:—|–|--?)\s*(?P<url>\S+)\s*\(last updated:\s*(?P<date>[^)]*)\)"
    r"(?P<rest>.*)$"
)
_ALSO_AT = re.compile(r";\s*also at\s+(?P<url>\S+)\s*\(last updated:\s*(?P<date>[^)]*)\)")
_GAP_LINE = re.compile(r"^\s*(?:[-*+]\s+)?\[[^\[\]\n]+ Gap\]")
_FOOTNOTE_DEF = re.compile(r"^\s{0,3}\[\^(?P<id>[^\]\s]+)\]:\s?(?P<text>.*)$")
_LINK_DEF = re.compile(r"^\s{0,3}\[(?P<id>[^\]^][^\]]*)\]:\s*<?(?P<url>[^\s>]+)>?(?:\s+[\"'(].*)?\s*$")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}(\s|$)")
_SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")
_RULE = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")
_LIST_ITEM = re.compile(r"^(?P<indent>\s*)(?:[-*+]|\d{1,3}[.)])\s+(?P<text>.*)$")
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_BLOCKQUOTE = re.compile(r"^\s{0,3}>\s?")

# Inline tokens, tried in this order at each position.
_INLINE = [
    ("image", re.compile(r"!\[[^\]\n]*\]\([^)\s]*(?:\s+\"[^\"]*\")?\)")),
    ("evidence", re.compile(r"\[(?P<label>[^\[\]\n]+?) Evidence #(?P<n>\d+)\](?!\()")),
    ("gap", re.compile(r"\[(?P<label>[^\[\]\n]+?) Gap\]")),
    ("footnote", re.compile(r"\[\^(?P<id>[^\]\s]+)\]")),
    ("link", re.compile(
        r"\[(?P<text>(?:[^\[\]\n]|\[[^\[\]\n]*\])*)\]\(\s*<?(?P<url>[^\s)>]+)>?(?:\s+\"[^\"]*\")?\s*\)")),
    ("reflink", re.compile(r"\[(?P<text>[^\[\]\n]+)\](?:\[(?P<id>[^\[\]\n]*)\])?")),
    ("autolink", re.compile(r"<(?P<url>https?://[^\s>]+)>")),
    ("url", re.compile(r"(?P<url>https?://[^\s<>\"“”)\]]+)")),
    ("dashurl", re.compile(
        r"(?:—|–|--)\s*(?P<url>[A-Za-z0-9][\w.-]*\.[A-Za-z0-9-]+(?::\d+)?(?:/\S*)?)(?=\s*\((?:last )?updated)")),
    # a quote never holds a Markdown link or footnote: a stray quote mark must not swallow the next citation
    ("quote", re.compile(
        r"\"(?P<q>(?:[^\"\\\n\]\[]|\\.|\[(?!\^)|\](?!\())+)\"|“(?P<cq>(?:[^”\n\]\[]|\[(?!\^)|\](?!\())+)”")),
]
_DATE_NEAR = re.compile(
    r"\(?\s*(?:(?:last[- ])?(?:updated|modified)(?:\s+on)?\s*:?\s*)" + _DATE + r"\s*\)?"
    r"|\(\s*" + _DATE.replace("date", "pdate") + r"\s*\)"
    r"|[,;]\s*" + _DATE.replace("date", "cdate") + r"(?=\s*\))",  # "(https://…, 2024-05-01)"
    re.IGNORECASE,
)
_MARK = (
    r"[\[(]\s*(?:unsupported|no evidence(?: found)?|not supported(?: by (?:the )?evidence)?|uncited|unverified"
    r"|no source)\s*[\])]"
)
_UNSUPPORTED = re.compile(
    _MARK + r"|^\s*(?:\*\*|_)?(?:unsupported|no evidence|unverified)(?:\*\*|_)?\s*:", re.IGNORECASE
)
#: A mark that opens a sentence belongs to the sentence before it ("… a claim. (unsupported) Next claim.").
_LEADING_MARK = re.compile(r"\s*" + _MARK + r"\s*", re.IGNORECASE)
_MD_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>\"'~])")
_WORDS = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")
_MASK = "\u27e6{}\u27e7"  # ⟦n⟧: a masked token (no dot, no space: the sentence splitter keeps it whole)
_MASKED = re.compile("\u27e6(\\d+)\u27e7")


def unescape_markdown(text: str) -> str:
    """``text`` with Markdown backslash escapes removed (``\\"`` -> ``"``), as brt's evidence lines escape quotes."""
    return _MD_ESCAPE.sub(r"\1", text)


# -- blocks: paragraphs and list items with their line numbers ----------------------------------------------


@dataclass
class _Block:
    kind: str  # "sentence" (a paragraph) or "bullet"
    parts: list[tuple[int, str]]  # (line number, text) of each line

    def text(self) -> str:
        return " ".join(t.strip() for _, t in self.parts)

    def line_at(self, offset: int) -> int:
        pos = 0
        for line, t in self.parts:
            pos += len(t.strip()) + 1
            if offset < pos:
                return line
        return self.parts[-1][0]


@dataclass
class _Scan:
    blocks: list[_Block] = field(default_factory=list)
    footnotes: dict[str, tuple[int, str]] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)
    evidence: list[tuple[int, re.Match[str]]] = field(default_factory=list)
    gaps: int = 0
    current: _Block | None = None
    footnote: str | None = None
    table: str | None = None  # inside a table: "header" (its first row), then "body"

    def close(self) -> None:
        if self.current is not None and self.current.parts:
            self.blocks.append(self.current)
        self.current = None
        self.footnote = None

    def add(self, kind: str, line: int, text: str) -> None:
        if self.current is None or self.current.kind != kind or kind == "bullet":
            self.close()
            self.current = _Block(kind, [])
        self.current.parts.append((line, text))


def _scan(text: str) -> _Scan:
    scan = _Scan()
    fence: str | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        if fence is not None:
            fence = None if raw.strip().startswith(fence) else fence
            continue
        opened = _FENCE.match(raw)
        if opened:
            scan.close()
            fence = opened.group(1)
            continue
        _scan_line(scan, number, raw)
    scan.close()
    return scan


def _scan_line(scan: _Scan, number: int, raw: str) -> None:
    line = _BLOCKQUOTE.sub("", raw)
    if not line.strip():
        scan.close()
        scan.table = None
        return
    if _HEADING.match(line) or _RULE.match(line) or (_SETEXT.match(line) and scan.current is not None):
        if _SETEXT.match(line) and scan.current is not None:
            scan.current = None  # the paragraph above was a heading
        scan.close()
        return
    if _continues_footnote(scan, number, raw):
        return
    if _definition(scan, number, line):
        return
    if _EVIDENCE_LINE.match(line):
        scan.close()
        scan.evidence.append((number, _EVIDENCE_LINE.match(line)))  # type: ignore[arg-type]
        return
    if _GAP_LINE.match(line):
        scan.close()
        scan.gaps += 1
        return
    _content_line(scan, number, line)


def _continues_footnote(scan: _Scan, number: int, raw: str) -> bool:
    if scan.footnote is None or not raw.startswith(("  ", "\t")):
        return False
    first, text = scan.footnotes[scan.footnote]
    scan.footnotes[scan.footnote] = (first, text + " " + raw.strip())
    return True


def _definition(scan: _Scan, number: int, line: str) -> bool:
    foot = _FOOTNOTE_DEF.match(line)
    if foot:
        scan.close()
        scan.footnotes[foot.group("id")] = (number, foot.group("text").strip())
        scan.footnote = foot.group("id")
        return True
    link = _LINK_DEF.match(line)
    if link and not _INLINE[1][1].match(line.strip()):
        scan.close()
        scan.links[link.group("id").strip().lower()] = link.group("url")
        return True
    return False


def _content_line(scan: _Scan, number: int, line: str) -> None:
    if not line.lstrip().startswith("|"):
        scan.table = None
    elif _TABLE_SEP.match(line):
        scan.table = "body"
        return
    elif scan.table is None:
        scan.table = "header"  # the header row: not a claim
        scan.close()
        return
    else:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        scan.add("bullet", number, " ".join(c for c in cells if c))
        return
    item = _LIST_ITEM.match(line)
    if item:
        scan.add("bullet", number, item.group("text"))
    elif scan.current is not None and scan.current.kind == "bullet" and line.startswith((" ", "\t")):
        scan.current.parts.append((number, line))  # a list item's continuation line
    else:
        scan.add("sentence", number, line)


# -- inline tokens ------------------------------------------------------------------------------------------


@dataclass
class _Token:
    kind: str
    start: int
    end: int
    text: str
    index: int = -1
    citations: list[Citation] = field(default_factory=list)
    quote: str | None = None


def _tokens(text: str, links: dict[str, str]) -> list[_Token]:
    out: list[_Token] = []
    pos = 0
    while pos < len(text):
        found = _token_at(text, pos, links)
        if found is None:
            pos += 1
            continue
        found.index = len(out)
        out.append(found)
        pos = found.end
    return out


def _token_at(text: str, pos: int, links: dict[str, str]) -> _Token | None:
    if text[pos] not in "![<h\"“—–-":
        return None
    for kind, pattern in _INLINE:
        m = pattern.match(text, pos)
        if m is None:
            continue
        token = _make_token(kind, m, links)
        if token is not None:
            return token
    return None


def _make_token(kind: str, m: re.Match[str], links: dict[str, str]) -> _Token | None:
    token = _Token(kind, m.start(), m.end(), m.group(0))
    if kind == "evidence":
        token.citations = [Citation("evidence", m.group(0), label=m.group("label").strip(), n=int(m.group("n")))]
    elif kind in ("link", "autolink", "url", "dashurl"):
        url = m.group("url").rstrip(".,;:!?") if kind == "url" else m.group("url")
        token.end = m.start() + m.group(0).find(url) + len(url) if kind == "url" else token.end
        token.text = m.group(0)[: token.end - m.start()]
        token.citations = [Citation("link" if kind != "url" else "url", token.text, url=url)]
    elif kind == "reflink":
        ref = (m.group("id") or m.group("text") or "").strip().lower()
        if ref not in links:
            return None
        token.citations = [Citation("link", m.group(0), url=links[ref])]
    elif kind == "quote":
        token.quote = unescape_markdown(m.group("q") if m.group("q") is not None else m.group("cq"))
    return token


# -- claims ---------------------------------------------------------------------------------------------------


def parse_report(text: str) -> ParsedReport:
    """The claims of a Markdown report (see the module docstring)."""
    scan = _scan(text)
    claims: list[tuple[int, ReportClaim]] = []  # (order key, claim)
    evidence: dict[tuple[str, int], Citation] = {}
    for line, m in scan.evidence:
        claim = _evidence_claim(line, m)
        evidence.setdefault((claim.citations[0].label or "", claim.citations[0].n or 0), claim.citations[0])
        claims.append((line, claim))
    footnotes = {fid: _footnote(fid, line, body, scan.links) for fid, (line, body) in scan.footnotes.items()}
    for block in scan.blocks:
        for claim in _block_claims(block, scan.links, footnotes):
            claims.append((claim.line, claim))
    for fid, (line, _body) in scan.footnotes.items():
        note = footnotes[fid]
        if note.quotes:
            claims.append((line, note))
    claims.sort(key=lambda pair: pair[0])
    return ParsedReport([c for _, c in claims], scan.gaps, evidence)


def _evidence_claim(line: int, m: re.Match[str]) -> ReportClaim:
    date = m.group("date").strip()
    quote = unescape_markdown(m.group("quote"))
    main = Citation("evidence", m.group(0).strip(), url=unescape_markdown(m.group("url")), date=date,
                    label=m.group("label").strip(), n=int(m.group("n")), quote=quote)
    citations = [main]
    for also in _ALSO_AT.finditer(m.group("rest")):
        citations.append(Citation("also at", also.group(0), url=unescape_markdown(also.group("url")),
                                  date=also.group("date").strip()))
    return ReportClaim(line, m.group(0).strip(), "evidence line", [quote], citations, False, quote)


def _footnote(fid: str, line: int, body: str, links: dict[str, str]) -> ReportClaim:
    """A footnote definition as a claim: its quotes and citations (kept as a claim only when it quotes)."""
    tokens = _tokens(body, links)
    citations = [c for t in tokens for c in t.citations]
    _assign_dates(body, tokens)
    quotes = [t.quote for t in tokens if t.quote is not None and _words(t.quote) >= MIN_QUOTE_WORDS]
    return ReportClaim(line, f"[^{fid}]: {body}", "footnote", quotes, citations, False, _plain(body, tokens))


def _block_claims(block: _Block, links: dict[str, str], footnotes: dict[str, ReportClaim]) -> list[ReportClaim]:
    from memory_store.text import sentence_spans

    text = block.text()
    tokens = _tokens(text, links)
    _assign_dates(text, tokens)
    masked, starts = _mask(text, tokens)
    out: list[ReportClaim] = []
    spans = [(0, len(masked))] if block.kind == "bullet" else _joined(sentence_spans(masked), masked)
    for a, b in spans:
        while a < b and masked[a] in ".,;:) ":
            a += 1  # a splitter may leave the end of the sentence before on this one
        mark = _LEADING_MARK.match(masked, a, b) if out else None
        if mark is not None and mark.end() < b:
            out[-1].marked_unsupported = True
            a = mark.end()
        piece = masked[a:b]
        ids = [int(i) for i in _MASKED.findall(piece)]
        lead = _leading_citations(piece, tokens)
        if lead and out and block.kind != "bullet":
            _attach(out[-1], [tokens[i] for i in lead], footnotes)  # "… end. [^1]" or "Source: [x](url)"
            ids = [i for i in ids if i not in lead]
        own = [tokens[i] for i in ids]
        start = starts[a] if a < len(starts) else 0
        claim = _claim(block, start, piece, own, footnotes)
        if claim is not None:
            out.append(claim)
        elif own and out and all(t.citations or t.kind == "footnote" for t in own):
            _attach(out[-1], own, footnotes)
        elif out and (_UNSUPPORTED.search(piece) or any(t.kind == "gap" for t in own)):
            out[-1].marked_unsupported = True  # "… a claim. (unsupported)": the mark follows its claim
    return out


def _joined(spans: list[tuple[int, int]], text: str) -> list[tuple[int, int]]:
    """Sentence spans with a span that ends in a semicolon joined to the next one: "A holds; B holds [1]." is
    one claim, cited once."""
    out: list[tuple[int, int]] = []
    for a, b in spans:
        if out and text[out[-1][0]:out[-1][1]].rstrip().endswith(";"):
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def _mask(text: str, tokens: list[_Token]) -> tuple[str, list[int]]:
    """``text`` with every token replaced by ``⟦i⟧`` (a quote that ends a sentence, and is not followed by its
    citation, keeps its full stop outside, so the splitter still ends the sentence there); ``starts[j]`` is the
    original offset of masked char j."""
    out: list[str] = []
    starts: list[int] = []
    pos = 0
    for i, t in enumerate(tokens):
        out.append(text[pos:t.start])
        starts.extend(range(pos, t.start))
        mark = _MASK.format(i)
        after = text[t.end:].lstrip()[:1]
        if t.quote is not None and t.quote.rstrip().endswith((".", "!", "?")) and after not in "(—–-,;:.":
            mark += "."  # '"… ends." Next sentence': the quote ends the sentence ('"… ends." (source)' does not)
        out.append(mark)
        starts.extend([t.start] * len(mark))
        pos = t.end
    out.append(text[pos:])
    starts.extend(range(pos, len(text)))
    return "".join(out), starts


def _leading_citations(piece: str, tokens: list[_Token]) -> list[int]:
    """The masked citations that open a sentence before any word ("⟦3⟧ Next sentence"): they close the
    sentence before it."""
    lead: list[int] = []
    pos = 0
    for m in _LEADING.finditer(piece):
        if m.start() != pos:
            break
        pos = m.end()
        if m.group(1) is not None:
            token = tokens[int(m.group(1))]
            if not (token.citations or token.kind == "footnote"):
                break
            lead.append(int(m.group(1)))
    return lead


_LEADING = re.compile(r"\s*(?:⟦(\d+)⟧[.,;:]?|\((?:last[- ])?(?:updated|modified)[^)]*\)[.,;:]?)")


def _attach(claim: ReportClaim, tokens: list[_Token], footnotes: dict[str, ReportClaim]) -> None:
    for t in tokens:
        claim.citations.extend(_expand(t, footnotes))


def _expand(token: _Token, footnotes: dict[str, ReportClaim]) -> list[Citation]:
    if token.kind == "footnote":
        note = footnotes.get(token.text[2:-1])
        if note is None:
            return [Citation("footnote", token.text)]  # a reference to a footnote the report does not define
        return [Citation(c.kind, c.text, c.url, c.date, c.label, c.n) for c in note.citations] or [
            Citation("footnote", token.text)]
    return list(token.citations)


def _claim(block: _Block, start: int, piece: str, own: list[_Token],
           footnotes: dict[str, ReportClaim]) -> ReportClaim | None:
    by_index = {t.index: t for t in own}
    restored = _RESTORE.sub(lambda m: _restore(m, by_index), piece).strip()
    quotes = [t.quote for t in own if t.quote is not None and _words(t.quote) >= MIN_QUOTE_WORDS]
    plain, outside = _plain_masked(piece, by_index)
    if not quotes and (_words(plain) < MIN_CLAIM_WORDS or restored.rstrip("*_ ").endswith(("?", ":"))):
        return None
    citations = [c for t in own for c in _expand(t, footnotes)]
    marked = bool(_UNSUPPORTED.search(restored)) or any(t.kind == "gap" for t in own)
    return ReportClaim(block.line_at(start), " ".join(restored.split()), block.kind, quotes, citations, marked,
                       plain, outside)


_RESTORE = re.compile("\u27e6(\\d+)\u27e7(\\.?)")


def _restore(m: re.Match[str], by_index: dict[int, _Token]) -> str:
    """A masked token back as written (without the full stop ``_mask`` put after a quote that ends a sentence)."""
    t = by_index.get(int(m.group(1)))
    if t is None:
        return ""
    ends = t.quote is not None and t.quote.rstrip().endswith((".", "!", "?"))
    return t.text + ("" if ends else m.group(2))


def _plain_masked(piece: str, by_index: dict[int, _Token]) -> tuple[str, str]:
    """The claim's words without its citations and dates (its quotes' words kept as written, without the quote
    marks), and its words outside its quotes. Dates and stranded punctuation go first, while the quotes are
    still masked, so a quote's own text is never touched."""
    masked = _tidy(_DATE_NEAR.sub(" ", piece))

    def sub(m: re.Match[str]) -> str:
        t = by_index.get(int(m.group(1)))
        if t is None or t.quote is None:
            return " "
        return t.quote + ("" if t.quote.rstrip().endswith((".", "!", "?")) else m.group(2))

    return " ".join(_RESTORE.sub(sub, masked).split()), _tidy(_RESTORE.sub(" ", masked))


def _tidy(text: str) -> str:
    """Collapsed whitespace, and no punctuation left stranded where a citation was ("( , )")."""
    text = re.sub(r"\(\s*[,;.:]*\s*\)?|\s+[,;:](?=\s|$)", " ", text)
    return " ".join(text.split())


def _plain(text: str, tokens: list[_Token]) -> str:
    masked, pos = [], 0
    for t in tokens:
        masked.append(text[pos:t.start])
        masked.append(_MASK.format(t.index))
        pos = t.end
    masked.append(text[pos:])
    return _plain_masked("".join(masked), {t.index: t for t in tokens})[0]


def _assign_dates(text: str, tokens: list[_Token]) -> None:
    """Give each date written in ``text`` to the nearest citation token (by characters)."""
    cited = [t for t in tokens if t.citations and t.kind != "footnote"]
    if not cited:
        return
    for m in _DATE_NEAR.finditer(text):
        if any(t.start <= m.start() < t.end for t in tokens if t.quote is not None):
            continue  # a date inside a quote is the page's text, not a citation's date
        date = (m.group("date") or m.group("pdate") or m.group("cdate")).lower()
        nearest = min(cited, key=lambda t: min(abs(m.start() - t.end), abs(t.start - m.end())))
        for c in nearest.citations:
            if c.date is None:
                c.date = date


def _words(text: str) -> int:
    return len(_WORDS.findall(_MASKED.sub(" ", text)))
