"""The claims of a report written by a person, an agent or brt itself, with the quotes and citations they carry.

``parse_report(text)`` reads the Markdown (``report_markdown.read_blocks``: markdown-it-py and one linear scan)
and returns one :class:`ReportClaim` per statement:

- brt's own line types, each checked as what it says (``check.py``): an **evidence-block line**
  (``[CLS Evidence #1] "quote" — web.dev/x (last updated: 2025-09-14); also at …``), the **header**
  (``Charter `id` · generated … ·``: the charter it names), an **Agreement** line (``[X Agreement] 2 sources
  agree on 4 seconds (#1, #2)``: against the blocks it names), a **Conflict** line, the **acceptance
  verdicts** (``- **covered**: criterion — reason``: against the recorded synthesis). ``[X Gap]`` lines are gaps;
  the Goal and Notes lines (the charter's own words), the section questions, the harvest summary and the footer
  of ``brt report --format md`` and code blocks (the concepts diagram) are no claims;
- every **sentence** of a paragraph, every list item and table row: a **claim** when it states something
  checkable. A question, an introduction ending in ``:``, a heading, a sentence of fewer than three words and
  an uncited **framing sentence** ("Below is a summary of what the pages say": no number, no quote, and only
  words about the report itself, ``META_WORDS``, and at most two topic words qualifying them) are not. A
  sentence that cites different pages in different clauses ("A holds [1], and B holds [2].") is one claim per
  clause, each with its own citations;
- a **source listing**: a list item, table row or line that holds citations and next to nothing else (a
  Sources or References list, an unreferenced link definition or footnote). Every URL a report lists is
  checked, cited by a claim or not.

Citations: inline links ``[text](url)``, reference links with their ``[id]: url`` definitions, autolinks, bare
``http(s)://`` URLs, the scheme-less URL after a dash that evidence lines use, ``[Label Evidence #n]``,
footnotes ``[^id]`` (the definition's citations), numbered references ``[1]`` / ``[1, 3]`` (defined by a
``[1] URL`` line, a numbered list item of a References/Sources list, or ``[1]: URL``). The date of a citation is
written ``(last updated: …)``, ``updated``/``modified`` (``on``, ``:`` optional), or in parentheses right after
it; ISO dates, ``18 March 2025``, ``March 18, 2025``, ``2025/03/18`` and ``unknown`` are read (``iso_date``), and
each date goes to the nearest citation of its sentence. Markers such as ``(unsupported)``, ``[no evidence]``,
``[Label Gap]`` or a leading ``Unsupported:`` mark a claim as knowingly unsupported.

Every quote a claim attributes is checked, however short. Pure functions over text: no store, no model.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field, replace
from typing import Any

from memory_store.text import month_number, word_pattern

from .report_markdown import MASKED, Block, Flat, Token, find_quotes, read_blocks, unescape

__all__ = ["Citation", "ParsedReport", "ReportClaim", "iso_date", "parse_report", "unescape_markdown"]

#: Statements shorter than this many words (citations and dates left out) are not claims.
MIN_CLAIM_WORDS = 3
#: Words a framing sentence is made of ("Below is a summary of what the pages say"): an uncited sentence of
#: only these (and stop words, and at most two topic words that qualify one of these: "the harbour pages"),
#: without a number or a quote, says nothing checkable.
META_WORDS = frozenset(
    "below above follow following follows here summary summaries summarise summarize summarised summarized overview "
    "report reports section sections page pages source sources say says said state states stated find finds "
    "found finding findings result results evidence detail details list lists listed note notes key main point "
    "points answer answers question questions brief briefly look looks turn next first finally lastly "
    "conclusion conclude concludes overall document documents topic topics research read show shows shown "
    "discuss discusses discussed describe describes described information gathered collected available based "
    "according cover covers covered let us we start begin now then".split()
)
_REFERENCE_HEADINGS = re.compile(
    r"^(?:\d+[.)]?\s+)?(?:references?|sources?|bibliography|citations?|works cited|links|notes|footnotes|"
    r"further reading|sources and references)\b", re.IGNORECASE)
_VERDICTS = ("covered", "partial", "not covered", "partly covered")


@dataclass
class Citation:
    """One citation as written: a URL (``url``, maybe without its scheme) or an evidence-block reference
    (``label`` and ``n``), and the date given for it (``None``: no date given). ``kind`` ``footnote`` /
    ``ref`` is a reference the report does not define."""

    kind: str  # "link", "url", "evidence", "also at", "footnote", "ref"
    text: str
    url: str | None = None
    date: str | None = None
    label: str | None = None
    n: int | None = None
    quote: str | None = None  # the quote an evidence-block line gives for this reference

    @property
    def ref(self) -> str | None:
        return f"[{self.label} Evidence #{self.n}]" if self.label is not None and self.n is not None else None


@dataclass
class ReportClaim:
    """A statement of the report: its line (1-based), its text as written (one line), the quotes it
    attributes, its citations, whether it is marked as unsupported; ``kind`` says what it is (``sentence``,
    ``clause``, ``bullet``, ``row``, ``footnote``, ``source``, ``evidence line``, ``header``, ``agreement``,
    ``conflict``, ``acceptance``) and ``info`` holds what a brt line type states."""

    line: int
    text: str
    kind: str
    quotes: list[str] = field(default_factory=list)
    citations: list[Citation] = field(default_factory=list)
    marked_unsupported: bool = False
    plain: str = ""  # the text without its citations and quote marks (what a cited claim is scored by)
    outside: str = ""  # its words outside its quotes and citations
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class ParsedReport:
    claims: list[ReportClaim]
    gaps: int  # ``[Label Gap]`` lines
    evidence_lines: dict[tuple[str, int], Citation]  # (label, n) -> the report's own evidence-block line
    skipped: int = 0  # sentences read and found to be no claim (framing, questions, headings' lines)


def unescape_markdown(text: str) -> str:
    """``text`` with Markdown backslash escapes removed (``\\"`` -> ``"``), as brt's evidence lines escape quotes."""
    return re.sub(r"\\([\\`*_{}\[\]()#+\-.!|<>\"'~])", r"\1", text)


# -- dates ----------------------------------------------------------------------------------------------------

_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?"
          r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
_ORD = r"(?:st|nd|rd|th)?"
_DATE = (r"(?:\d{4}-\d{2}-\d{2}(?:T[\d:.]{2,15}Z?)?|\d{4}/\d{1,2}/\d{1,2}|\d{1,2}" + _ORD + r"\s{1,3}(?:of\s{1,3})?"
         + _MONTH + r",?\s{1,3}\d{4}|" + _MONTH + r"\s{1,3}\d{1,2}" + _ORD + r",?\s{1,3}\d{4}|unknown)")
_DATE_NEAR = re.compile(
    r"\(?\s{0,3}(?:last[- ])?(?:updated|modified)(?:\s{1,3}on)?\s{0,3}:?\s{0,3}(?P<date>" + _DATE + r")\s{0,3}\)?"
    r"|\(\s{0,3}(?P<pdate>" + _DATE + r")\s{0,3}\)"
    r"|[,;]\s{0,3}(?P<cdate>" + _DATE + r")(?=\s{0,3}\))",
    re.IGNORECASE,
)


def iso_date(text: str) -> str:
    """A date as written, as ``YYYY-MM-DD`` ("18 March 2025", "March 18, 2025", "2025/03/18", an ISO time
    cut to its day); ``unknown`` lower-cased; anything else as given."""
    t = " ".join(text.split()).strip().lower().rstrip(".")
    if t == "unknown":
        return t
    m = re.fullmatch(r"(\d{4})[-/](\d{1,2})[-/](\d{1,2})(?:t.*)?", t)
    if m:
        return _ymd(int(m.group(1)), int(m.group(2)), int(m.group(3))) or text
    m = re.fullmatch(r"(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?([a-z]+)\.?,?\s+(\d{4})", t) or None
    if m:
        return _ymd(int(m.group(3)), month_number(m.group(2)), int(m.group(1))) or text
    m = re.fullmatch(r"([a-z]+)\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})", t)
    if m:
        return _ymd(int(m.group(3)), month_number(m.group(1)), int(m.group(2))) or text
    return text


def _ymd(y: int, m: int, d: int) -> str | None:
    import datetime as dt

    try:
        return dt.date(y, m, d).isoformat()
    except ValueError:
        return None


# -- brt's own line types ---------------------------------------------------------------------------------------

_EVIDENCE_LINE = re.compile(
    "^\\s*\u27e6(?P<ev>\\d+)\u27e7\\s*[\"“](?P<quote>[^\u27e6]*?)[\"”]\\s*\u27e6(?P<src>\\d+)\u27e7"
    r"\s{0,8}\(last updated:\s{0,8}(?P<date>[^)]{0,40})\)(?P<rest>.*)$", re.DOTALL)
_ALSO_AT = re.compile(r"(?<=\));\s{0,8}also at\s{1,8}(?P<url>[^\s(]{1,2000})\s{0,8}\(last updated:\s{0,8}"
                      r"(?P<date>[^)]{0,40})\)")
_AGREEMENT = re.compile(r"^\[(?P<label>[^\[\]\n]{1,100}?) Agreement\]\s*(?P<body>.*)$", re.DOTALL)
AGREE_PART = re.compile(r"(?P<count>\d{1,4}) sources agree on (?P<value>.{1,300}?) \((?P<blocks>#\d{1,4}"
                         r"(?:,\s{0,3}#\d{1,4}){0,50})\)")
_CONFLICT = re.compile(r"^\[(?P<label>[^\[\]\n]{1,100}?) Conflict\]\s*(?P<a>.{1,300}?) vs (?P<b>.{1,300}?)"
                       r"(?: \(about: (?P<about>[^)]{0,500})\))?\s*$", re.DOTALL)
_HEADER = re.compile(r"^Charter (?P<id>\S{1,200}) · generated (?P<at>\S{1,40}) · (?P<rest>.*)$", re.DOTALL)
_FOOTER = re.compile(r"^Report of (?:the store of charter (?P<id>\S{1,200})|snapshot (?P<snap>\S{1,300}) .*)\.$")
_HARVEST = re.compile(r"^(?:runs: \d+; URLs attempted: \d+|last run(?:, \w+)?: )")


def _brt_line(block: Block, flat: Flat, ctx: _Ctx) -> ReportClaim | None | bool:
    """A line of one of brt's own types as its claim; True when it is one that is no claim; None otherwise."""
    text = flat.text
    tokens = flat.tokens
    line = flat.lines[0][1]
    first = MASKED.match(text)
    if first is not None and tokens[int(first.group(1))].kind == "gap":
        ctx.gaps += 1
        return True
    m = _EVIDENCE_LINE.match(text)
    if m and tokens[int(m.group("ev"))].kind == "evidence" and tokens[int(m.group("src"))].url:
        return _evidence_claim(line, flat, m)
    plain = flat.plain().strip()
    if block.kind == "paragraph" and (plain.startswith(("Goal: ", "Notes: ")) or _FOOTER.match(plain)):
        return True
    if _HARVEST.match(plain) and block.heading.lower().startswith("harvest"):
        return True
    for pattern, kind in ((_AGREEMENT, "agreement"), (_CONFLICT, "conflict"), (_HEADER, "header")):
        found = pattern.match(plain)
        if found:
            return ReportClaim(line, " ".join(plain.split()), kind, info=found.groupdict())
    if flat.lead is not None and flat.lead.strip().lower() in _VERDICTS and plain[len(flat.lead):].startswith(":"):
        criterion, _, reason = plain[len(flat.lead) + 1:].strip().partition(" — ")
        return ReportClaim(line, " ".join(plain.split()), "acceptance", info={
            "verdict": flat.lead.strip().lower(), "criterion": " ".join(criterion.split()), "reason": reason})
    return None


def _evidence_claim(line: int, flat: Flat, m: re.Match[str]) -> ReportClaim:
    ev, src = flat.tokens[int(m.group("ev"))], flat.tokens[int(m.group("src"))]
    quote = unescape(MASKED.sub(lambda q: flat.tokens[int(q.group(1))].text, m.group("quote")))
    main = Citation("evidence", flat.plain(0, m.end("date") + 1).strip(), url=src.url, date=m.group("date").strip(),
                    label=ev.label, n=ev.n, quote=quote)
    citations = [main]
    rest = flat.plain(m.start("rest"))
    for also in _ALSO_AT.finditer(")" + rest):
        citations.append(Citation("also at", also.group(0), url=also.group("url"), date=also.group("date").strip()))
    text = " ".join(flat.plain().split())
    return ReportClaim(line, text, "evidence line", [quote], citations, False, quote)


# -- parsing ----------------------------------------------------------------------------------------------------


@dataclass
class _Ctx:
    """What the blocks of one report share: footnotes, numbered references, link definitions."""

    footnotes: dict[str, list[Citation]] = field(default_factory=dict)
    refs: dict[int, list[Citation]] = field(default_factory=dict)
    used_footnotes: set[str] = field(default_factory=set)
    used_refs: set[int] = field(default_factory=set)
    cited_urls: set[str] = field(default_factory=set)
    gaps: int = 0
    skipped: int = 0
    conflict_line: int = -10  # the last [X Conflict] line: the quotes listed under it are its sides


def parse_report(text: str) -> ParsedReport:
    """The claims of a Markdown report (see the module docstring)."""
    blocks, linkrefs, _ = read_blocks(text)
    ctx = _Ctx()
    claims: list[ReportClaim] = []
    for block in blocks:
        if block.kind == "footnote" and block.fid is not None:
            note = _footnote(block, ctx)
            if note is not None:
                claims.append(note)
        else:
            _definition(block, ctx)
    for block in blocks:
        if block.kind not in ("footnote", "header row"):
            claims += _block_claims(block, ctx)
    for claim in claims:
        claim.citations = [c for cite in claim.citations for c in _expand(cite, ctx)]
    claims += _unused_listings(blocks, linkrefs, ctx)
    claims.sort(key=lambda c: c.line)
    evidence: dict[tuple[str, int], Citation] = {}
    for c in claims:
        if c.kind == "evidence line":
            evidence.setdefault((c.citations[0].label or "", c.citations[0].n or 0), c.citations[0])
    return ParsedReport(claims, ctx.gaps, evidence, ctx.skipped)


def _footnote(block: Block, ctx: _Ctx) -> ReportClaim | None:
    """A footnote definition: its citations are what ``[^id]`` cites; it is a claim of its own when it quotes."""
    flat = block.flat
    cites = _citations(flat, flat.tokens)
    _assign_dates(flat, 0, len(flat.text), [t for t in flat.tokens if t.url], cites)
    ctx.footnotes[block.fid or ""] = [c for t in flat.tokens for c in cites.get(id(t), [])]
    spans = find_quotes(flat.text)
    if not spans:
        return None
    quotes = [_quote_text(flat, a, b) for a, b in spans]
    return ReportClaim(block.line, f"[^{block.fid}]: {' '.join(flat.plain().split())}", "footnote", quotes,
                       list(ctx.footnotes[block.fid or ""]), False, _plain(flat, 0, len(flat.text)))


def _definition(block: Block, ctx: _Ctx) -> None:
    """The numbered references the block defines: ``[1] URL …`` lines (a paragraph may hold several, one a
    line), or an item of a numbered list under a References/Sources heading or that holds a citation and
    little else."""
    flat = block.flat
    if not any(t.url for t in flat.tokens):
        return
    spans = _line_spans(flat)
    defined = [(a, b, n) for a, b in spans if (n := _defines(flat, a)) is not None]
    if not defined and block.number is not None and _listing(flat, block.heading):
        defined = [(0, len(flat.text), block.number)]
    starts = flat.starts
    for a, b, number in defined:
        cited = [t for t in flat.tokens[bisect.bisect_left(starts, a):bisect.bisect_left(starts, b)] if t.url]
        cites = _citations(flat, cited)
        _assign_dates(flat, a, b, cited, cites)
        ctx.refs.setdefault(number, [c for t in cited for c in cites[id(t)]])


def _line_spans(flat: Flat) -> list[tuple[int, int]]:
    offsets = [*flat.offsets, len(flat.text)]
    return [(offsets[i], offsets[i + 1]) for i in range(len(offsets) - 1)]


def _defines(flat: Flat, a: int) -> int | None:
    """The number of the reference a line starting at ``a`` defines (``[1] https://…``), or None."""
    pos = a + _lead_space(flat.text[a:])
    m = MASKED.match(flat.text, pos)
    if m is None:
        return None
    token = flat.tokens[int(m.group(1))]
    return token.refs[0] if token.kind == "ref" and len(token.refs) == 1 else None


def _lead_space(text: str) -> int:
    return len(text) - len(text.lstrip())


def _unused_listings(blocks: list[Block], linkrefs: dict[str, tuple[str, int]], ctx: _Ctx) -> list[ReportClaim]:
    """Link definitions and footnotes that no claim cites, as source listings: their URLs are checked too."""
    out = []
    for label, (url, line) in linkrefs.items():
        if url not in ctx.cited_urls:
            out.append(ReportClaim(line, f"[{label}]: {url}", "source", citations=[Citation("link", url, url=url)]))
    for block in blocks:
        if block.kind == "footnote" and block.fid not in ctx.used_footnotes and ctx.footnotes.get(block.fid or ""):
            notes = ctx.footnotes[block.fid or ""]
            out.append(ReportClaim(block.line, f"[^{block.fid}]: {' '.join(block.flat.plain().split())}", "source",
                                   citations=list(notes)))
    return out


def _expand(c: Citation, ctx: _Ctx) -> list[Citation]:
    """A footnote or numbered reference as the citations its definition gives (itself when undefined)."""
    if c.kind == "footnote" and c.label is None:
        fid = c.text[2:-1]
        ctx.used_footnotes.add(fid)
        notes = ctx.footnotes.get(fid)
        return [replace(n, date=n.date if c.date is None else c.date) for n in notes] if notes else [c]
    if c.kind == "ref":
        out: list[Citation] = []
        if c.n is not None:
            ctx.used_refs.add(c.n)
            out = [replace(x, date=x.date if c.date is None else c.date) for x in ctx.refs.get(c.n, [])]
        return out or [c]
    return [c]


_TAGGED = re.compile(r"\s{0,3}(?:\u27e6\d+\u27e7|\[[^\[\]\n]{1,100}? (?:Agreement|Conflict)\])")


def _block_claims(block: Block, ctx: _Ctx) -> list[ReportClaim]:
    flat = block.flat
    if not flat.text.strip():
        return []
    lines = _line_spans(flat)
    if block.kind == "paragraph" and len(lines) > 1 and any(_tagged(flat, a) for a, _ in lines[1:]):
        out: list[ReportClaim] = []  # brt's lines one after another without a blank line between them
        for a, b in _tagged_lines(flat, lines):
            sub = Flat(flat.text[a:b], flat.tokens, [(o - a, n) for o, n in flat.lines if a <= o < b],
                       flat.lead if a == 0 else None)
            own = _brt_line(block, sub, ctx)
            if isinstance(own, ReportClaim):
                out.append(own)
            elif own is None:
                out += _span_claims(block, flat, [(a, b)], ctx)
        return out
    own = _brt_line(block, flat, ctx)
    if own is True:
        return []
    if isinstance(own, ReportClaim):
        if own.kind == "conflict":
            ctx.conflict_line = own.line
        return [own]
    if block.kind == "item" and block.line <= ctx.conflict_line + 3 and _only_a_quote(flat):
        return []  # '  - "quote"': a side of the conflict above, shown without its block
    if block.kind == "paragraph" and any(_defines(flat, a) is not None for a, _ in _line_spans(flat)):
        spans = _line_spans(flat)  # "[1] https://…" lines: each a listing
    elif block.kind in ("item", "row") or _listing(flat, block.heading):
        spans = [(0, len(flat.text))]
    else:
        from memory_store.text import sentence_spans

        spans = _merge_quotes(flat.text, sentence_spans(flat.text), find_quotes(flat.text))
    return _span_claims(block, flat, spans, ctx)


def _tagged_lines(flat: Flat, lines: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The lines of a paragraph of brt's lines, an evidence line not yet complete (its quote holds a line break)
    joined with the lines that complete it."""
    out: list[tuple[int, int]] = []
    for a, b in lines:
        if out and _incomplete(flat, *out[-1]) and not _tagged(flat, a):
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def _incomplete(flat: Flat, a: int, b: int) -> bool:
    """Whether ``a:b`` opens with an evidence tag but is not yet a whole evidence line."""
    m = MASKED.match(flat.text, a + _lead_space(flat.text[a:b]))
    return (m is not None and flat.tokens[int(m.group(1))].kind == "evidence"
            and _EVIDENCE_LINE.match(flat.text[a:b]) is None)


def _only_a_quote(flat: Flat) -> bool:
    spans = find_quotes(flat.text)
    return len(spans) == 1 and not flat.text[:spans[0][0]].strip() and not flat.text[spans[0][1]:].strip(" .")


def _tagged(flat: Flat, a: int) -> bool:
    """Whether the line at ``a`` opens with one of brt's tags (evidence, gap, agreement, conflict)."""
    m = _TAGGED.match(flat.text, a)
    if m is None:
        return False
    masked = MASKED.search(m.group(0))
    return masked is None or flat.tokens[int(masked.group(1))].kind in ("evidence", "gap")


def _listing(flat: Flat, heading: str = "") -> bool:
    """Citations and next to nothing else (a title, a date, a few words), or citations under a heading such as
    References or Sources: a source listing (decided once per block: the scan is of the whole block)."""
    cached = flat.__dict__.get("_listing", {})
    if heading not in cached:
        cached[heading] = _is_listing(flat, heading)
        flat.__dict__["_listing"] = cached
    return cached[heading]


def _is_listing(flat: Flat, heading: str) -> bool:
    cited = [t for t in flat.tokens if t.url]
    if not cited:
        return False
    if _REFERENCE_HEADINGS.match(heading) and not find_quotes(flat.text):
        return True
    words = _words(_DATE_NEAR.sub(" ", MASKED.sub(" ", flat.text)))
    return words < MIN_CLAIM_WORDS or (
        len(cited) == 1 and all(t.kind == "link" for t in cited) and words <= 12
        and not find_quotes(flat.text) and flat.text.lstrip().startswith("\u27e6"))


def _merge_quotes(text: str, spans: list[tuple[int, int]], quotes: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sentence spans, with those a quote runs across joined (a quote of several sentences is one claim)."""
    out: list[tuple[int, int]] = []
    qi = 0
    for a, b in spans:
        if out:
            end = out[-1][1]
            while qi < len(quotes) and quotes[qi][1] <= end:
                qi += 1
            inside = qi < len(quotes) and quotes[qi][0] < end < quotes[qi][1]
            if inside or text[out[-1][0]:end].rstrip().endswith(";"):
                out[-1] = (out[-1][0], b)  # it ends inside a quote, or at a semicolon: "A; B [1]." is one claim
                continue
        out.append((a, b))
    return out


_MARK = (
    r"[\[(]\s{0,3}(?:unsupported|no evidence(?: found)?|not supported(?: by (?:the )?evidence)?|uncited|unverified"
    r"|no source)\s{0,3}[\])]"
)
_LEADING_MARK = re.compile(r"\s*" + _MARK + r"\s*", re.IGNORECASE)
_UNSUPPORTED = re.compile(_MARK + r"|^\s*(?:\*\*|_)?(?:unsupported|no evidence|unverified)(?:\*\*|_)?\s*:",
                          re.IGNORECASE)
_LEADING_CITES = re.compile("\\s*(?:[—–-]\\s*)?(?:\u27e6(\\d+)\u27e7[.,;:]?"
                            "|\\((?:last[- ])?(?:updated|modified)[^)]{0,60}\\)[.,;:]?)")
_WORDS = word_pattern("contraction")


def _span_claims(block: Block, flat: Flat, spans: list[tuple[int, int]], ctx: _Ctx) -> list[ReportClaim]:
    out: list[ReportClaim] = []
    starts = flat.starts
    for a, b in spans:
        while a < b and flat.text[a] in ".,;:) ":
            a += 1
        mark = _LEADING_MARK.match(flat.text, a, b) if out else None
        if mark is not None and mark.end() < b:
            out[-1].marked_unsupported = True
            a = mark.end()
        lead = _leading(flat, a, b) if _defines(flat, a) is None else []  # "[4] URL" names its line
        if lead and out:
            out[-1].citations += _cites_of(flat, lead, ctx, a, b)
            a = lead[-1].end
        lo, hi = bisect.bisect_left(starts, a), bisect.bisect_left(starts, b)
        made = _claims_of(block, flat, a, b, flat.tokens[lo:hi], ctx)
        if made:
            out += made
        elif out and flat.tokens[lo:hi] and all(t.url or t.kind in ("footnote", "ref", "evidence")
                                                for t in flat.tokens[lo:hi]):
            out[-1].citations += _cites_of(flat, flat.tokens[lo:hi], ctx, a, b)
        elif out and (_UNSUPPORTED.search(flat.text, a, b) or any(t.kind == "gap" for t in flat.tokens[lo:hi])):
            out[-1].marked_unsupported = True
        else:
            ctx.skipped += 1
    return out


def _leading(flat: Flat, a: int, b: int) -> list[Token]:
    """The citations that open the span before any word ("⟦3⟧ Next sentence"): they close the one before."""
    lead: list[Token] = []
    pos = a
    while pos < b:
        m = _LEADING_CITES.match(flat.text, pos, b)
        if m is None or m.end() == pos:
            break
        if m.group(1) is not None:
            token = flat.tokens[int(m.group(1))]
            if not (token.url or token.kind in ("footnote", "ref", "evidence")):
                break
            lead.append(token)
        pos = m.end()
    return lead if lead and pos < b and _words(MASKED.sub(" ", flat.text[pos:b])) else []


def _cites_of(flat: Flat, tokens: list[Token], ctx: _Ctx, a: int, b: int) -> list[Citation]:
    """The citations of ``tokens``, dated by what ``a:b`` says."""
    tokens = [t for t in tokens if t.url or t.kind in ("footnote", "ref", "evidence")]
    cites = _citations(flat, tokens)
    _assign_dates(flat, a, b, tokens, cites)
    out = [c for t in tokens for c in cites.get(id(t), [])]
    ctx.cited_urls.update(c.url for c in out if c.url)
    return out


def _citations(flat: Flat, tokens: list[Token]) -> dict[int, list[Citation]]:
    """Each citation token's citations (before their dates are assigned)."""
    out: dict[int, list[Citation]] = {}
    for t in tokens:
        if t.kind in ("link", "url", "dashurl"):
            out[id(t)] = [Citation("link" if t.kind != "url" else "url", t.text, url=t.url)]
        elif t.kind == "evidence":
            out[id(t)] = [Citation("evidence", t.text, label=t.label, n=t.n)]
        elif t.kind == "footnote":
            out[id(t)] = [Citation("footnote", t.text)]
        elif t.kind == "ref":
            out[id(t)] = [Citation("ref", t.text, n=n) for n in t.refs]
    return out


def _claims_of(block: Block, flat: Flat, a: int, b: int, tokens: list[Token], ctx: _Ctx) -> list[ReportClaim]:
    """The claim (or, cited per clause, the claims) of the span ``a:b``."""
    quotes = find_quotes(flat.text[a:b])
    defined = _defines(flat, a)  # "[1] https://…": the [1] names the line, it cites nothing
    lead = defined is not None and tokens and any(t.url for t in tokens[1:])
    cited = _page_marks([t for i, t in enumerate(tokens) if (t.url or t.kind in ("footnote", "ref", "evidence"))
                         and not (i == 0 and lead)], ctx, [(a + x, a + y) for x, y in quotes])
    cites = _citations(flat, cited)
    _assign_dates(flat, a, b, cited, cites)
    restored = flat.plain(a, b).strip()
    words = _words(_DATE_NEAR.sub(" ", MASKED.sub(" ", flat.text[a:b])))
    if not quotes and (words < MIN_CLAIM_WORDS or restored.rstrip("*_ ").endswith(("?", ":"))):
        return [_source(block, flat, a, b, cited, cites)] if cited and _listing(flat, block.heading) else []
    marked = bool(_UNSUPPORTED.search(restored)) or any(t.kind == "gap" for t in tokens)
    if not cited and not quotes and not marked and _framing(flat.text[a:b]):
        return []
    if _listing(flat, block.heading) and not quotes:
        return [_source(block, flat, a, b, cited, cites)]
    parts = _clauses(flat, a, b, cited)
    kind = {"item": "bullet", "row": "row"}.get(block.kind, "sentence")
    out = []
    for x, y, group in parts:
        claim = _claim(block, flat, x, y, group, cites, kind if len(parts) == 1 else "clause")
        claim.marked_unsupported = marked
        out.append(claim)
    for c in out:
        ctx.cited_urls.update(x.url for x in c.citations if x.url)
    return out


def _page_marks(cited: list[Token], ctx: _Ctx, quotes: list[tuple[int, int]]) -> list[Token]:
    """``cited`` less the numbered marks the report's references do not define or that stand inside a quotation
    (``quotes``), when something else there cites: those are the page's own footnote marks copied with its words
    ("… in 1893.[51] ([Page](url))", "\"… in 1893.[4] The …\" [9]", where the report's [4] is another source).
    Marks that are all a span cites stay (and fail when the report never lists them)."""
    marks = {id(t) for t in cited if t.kind == "ref" and (not all(n in ctx.refs for n in t.refs)
                                                          or any(x < t.start and t.end < y for x, y in quotes))}
    if not marks or not any(id(t) not in marks and (t.kind != "footnote" or t.text[2:-1] in ctx.footnotes)
                            for t in cited):
        return cited
    return [t for t in cited if id(t) not in marks]


def _source(block: Block, flat: Flat, a: int, b: int, cited: list[Token], cites: dict[int, list[Citation]]
            ) -> ReportClaim:
    dates = [m for m in re.finditer(r"(?:^|\|)\s*(" + _DATE + r")\s*(?=\||$)", flat.text[a:b], re.IGNORECASE)]
    citations = [c for t in cited for c in cites[id(t)]]
    if dates and len(citations) == 1 and citations[0].date is None:
        citations[0].date = iso_date(dates[0].group(1))  # a table's "Last updated" cell
    return ReportClaim(flat.line_at(a), " ".join(flat.plain(a, b).split()), "source", citations=citations)


def _framing(text: str) -> bool:
    """An uncited sentence about the report itself ("Below is a summary of what the pages say")."""
    from memory_store.text import content_words

    if any(c.isdecimal() for c in text) or find_quotes(text):
        return False
    words = content_words(MASKED.sub(" ", text))
    # up to two topic words, each naming what a word about the report is about ("the harbour pages"): a word
    # the next word does not qualify says something ("the evidence shows growth")
    topic = [i for i, w in enumerate(words) if w not in META_WORDS]
    return (len(words) <= 15 and len(topic) <= 2 and len(words) > 2 * len(topic)
            and all(i + 1 < len(words) and words[i + 1] in META_WORDS for i in topic))


def _clauses(flat: Flat, a: int, b: int, cited: list[Token]) -> list[tuple[int, int, list[Token]]]:
    """``a:b`` cut after each group of citations but the last, when the groups cite different sources and
    each part states something (three words or more): "A holds [1], and B holds [2]." -> two clauses."""
    groups: list[list[Token]] = []
    for t in cited:
        if groups and _only_glue(flat.text[groups[-1][-1].end:t.start]):
            groups[-1].append(t)
        else:
            groups.append([t])
    keys = {tuple(sorted(str(t.url or t.text) for t in g)) for g in groups}
    if len(groups) < 2 or len(keys) < 2:
        return [(a, b, cited)]
    parts: list[tuple[int, int, list[Token]]] = []
    start = a
    for g in groups:
        end = g[-1].end
        if parts and _words(MASKED.sub(" ", flat.text[start:end])) < MIN_CLAIM_WORDS:
            x, _, gg = parts.pop()
            parts.append((x, end, gg + g))
        else:
            parts.append((start, end, g))
        start = end
    if start < b:
        x, _, g = parts.pop()
        parts.append((x, b, g))
    if len(parts) > 1 and _words(MASKED.sub(" ", flat.text[parts[0][0]:parts[0][1]])) < MIN_CLAIM_WORDS:
        (x, _, g1), (_, y, g2) = parts[0], parts[1]
        parts[:2] = [(x, y, g1 + g2)]
    return parts


def _only_glue(text: str) -> bool:
    return not _WORDS.search(_DATE_NEAR.sub(" ", text)) or text.strip(" ,;") in ("and", "or", "&")


def _claim(block: Block, flat: Flat, a: int, b: int, cited: list[Token], cites: dict[int, list[Citation]],
           kind: str) -> ReportClaim:
    spans = find_quotes(flat.text[a:b])
    quotes = [_quote_text(flat, a + x, a + y) for x, y in spans]
    text = " ".join(flat.plain(a, b).strip(" ,;").split())
    citations = [c for t in cited for c in cites[id(t)]]
    return ReportClaim(flat.line_at(a), text, kind, quotes, citations, False, _plain(flat, a, b),
                       _outside(flat, a, b, spans))


def _quote_text(flat: Flat, a: int, b: int) -> str:
    """The words of the quote at ``a:b`` (marks excluded): a numbered mark in it as written (the page's own), any
    other citation as a space."""
    def restore(m: re.Match[str]) -> str:
        token = flat.tokens[int(m.group(1))]
        return token.text if token.kind == "ref" else " "

    return unescape(MASKED.sub(restore, flat.text[a + 1:b - 1]))


def _plain(flat: Flat, a: int, b: int) -> str:
    """The words of ``a:b`` without citations, dates and quote marks (a quote's words kept as written)."""
    piece = _DATE_NEAR.sub(" ", flat.text[a:b])
    piece = MASKED.sub(" ", piece).replace('"', " ").replace("“", " ").replace("”", " ")
    return _tidy(unescape(piece))


def _outside(flat: Flat, a: int, b: int, spans: list[tuple[int, int]]) -> str:
    piece = flat.text[a:b]
    for x, y in reversed(spans):
        piece = piece[:x] + " " + piece[y:]
    return _tidy(unescape(MASKED.sub(" ", _DATE_NEAR.sub(" ", piece))))


def _tidy(text: str) -> str:
    """Collapsed whitespace, and no punctuation left stranded where a citation was ("( , )")."""
    text = re.sub(r"\( ?[,;.:]* ?\)| [,;:](?= |$)", " ", " ".join(text.split()))  # collapsed first: linear
    return " ".join(text.split())


def _assign_dates(flat: Flat, a: int, b: int, cited: list[Token], cites: dict[int, list[Citation]]) -> None:
    """Give each date written in ``a:b`` (outside quotes) to the nearest citation by characters."""
    urls = [t for t in cited if t.url or t.kind in ("footnote", "ref")]
    if not urls:
        return
    quotes = [(a + x, a + y) for x, y in find_quotes(flat.text[a:b])]
    qstarts = [q[0] for q in quotes]
    ends = [t.end for t in urls]
    for m in _DATE_NEAR.finditer(flat.text, a, b):
        i = bisect.bisect_right(qstarts, m.start()) - 1
        if i >= 0 and quotes[i][0] <= m.start() < quotes[i][1]:
            continue  # a date inside a quote is the page's text
        date = iso_date(m.group("date") or m.group("pdate") or m.group("cdate"))
        j = bisect.bisect_right(ends, m.start())
        near = [urls[k] for k in (j - 1, j) if 0 <= k < len(urls)]
        token = min(near, key=lambda t: min(abs(m.start() - t.end), abs(t.start - m.end())))
        for c in cites.get(id(token), []):
            if c.date is None:
                c.date = date


def _words(text: str) -> int:
    return len(_WORDS.findall(text))
