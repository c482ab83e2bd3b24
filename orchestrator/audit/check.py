"""``brt check REPORT --charter C | --snapshot S``: check the report a person, an agent or brt wrote (Markdown, or
brt's JSON or HTML: ``report_text``) against the evidence the charter harvested (its store, or its snapshot after
``/clean``), offline. The evidence is verified first (``evidence_source``: the snapshot with ``brt verify``, the
store with its check) and refused when it fails.

For each claim of the report (``claims.py``):

- **citations resolve**: every cited or listed URL, read by ``evidence_source.web_url`` (http(s) only, as a
  browser parses it), is on the charter's allowlist and is a stored page; an ``[Label Evidence #n]`` reference
  is an evidence line of the report or a block of the recorded synthesis; a ``[^id]`` or ``[n]`` has its
  definition. The date given for a citation is the page's last-updated date (``unknown`` for a page without
  one); a citation without a date is noted (it lowers ``citation_rate``) but does not fail the check;
- **quotes are verbatim** (``quotes.match_quote``): every quote the claim attributes, of any length, is on a page
  it cites, after the normalisations a person accepts; an elision is checked fragment by fragment;
- **claims are cited**: a claim with no citation fails unless it is marked as unsupported;
- **support**: a claim that cites but does not quote is judged by the fitted support model (``support.py``) against
  the cited pages' passages: supported, weakly supported or not found there. A claim that quotes and says more
  (``SAYS_MORE_WORDS`` content words outside its quotes) is judged too, and fails when not found there;
- **brt's own lines** as what they state: the header's charter, an Agreement's sources and value, a Conflict's
  two values, an acceptance verdict as recorded.

Verdict of a claim, worst first: ``citation unresolved``, ``quote not verbatim``, ``wrong date``, ``uncited``,
``not found there``, ``weakly supported``, then ``quoted`` / ``supported`` / ``listed`` / ``as recorded`` /
``marked unsupported``. The report passes (``ok``, exit 0) when no claim has a failing problem.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .claims import Citation, ParsedReport, ReportClaim, parse_report
from .errors import AuditError
from .evidence_source import EvidenceSource, SourcePage, url_key

if TYPE_CHECKING:
    from ..charter import Charter

__all__ = [
    "FAILING",
    "MAX_REPORT_BYTES",
    "CheckError",
    "CheckReport",
    "CitationCheck",
    "ClaimResult",
    "Evidence",
    "Problem",
    "QuoteCheck",
    "check_report",
    "check_text",
    "quote_in_text",
]

#: The largest report brt checks (a report far larger is no report; parsing is linear, support scoring is not free).
MAX_REPORT_BYTES = 2_000_000
#: The most claims one check reads (a longer report is refused: split it). It bounds the time a check takes, and
#: so how soon the MCP ``check_report`` answers, whatever the report holds.
MAX_CLAIMS = 1_000
#: Problems that fail the check (exit 1). ``no_date`` is only noted.
FAILING = frozenset({"quote_not_verbatim", "quote_elsewhere", "elision_changes_quote", "wrong_date",
                     "off_allowlist", "not_harvested", "not_a_web_url", "unknown_reference", "missing_footnote",
                     "uncited", "not_found", "wrong_charter", "agreement_not_found", "conflict_not_found",
                     "acceptance_not_recorded"})
_ORDER = ["citation unresolved", "quote not verbatim", "wrong date", "uncited", "not found there",
          "weakly supported", "quoted", "supported", "listed", "as recorded", "marked unsupported"]
_OWN_KINDS = frozenset({"header", "agreement", "conflict", "acceptance"})
_UNRESOLVED = frozenset({"off_allowlist", "not_harvested", "not_a_web_url", "unknown_reference",
                         "missing_footnote"})


class CheckError(AuditError):
    """A report cannot be checked (unreadable file, no evidence to check it against)."""


@dataclass
class Problem:
    kind: str
    message: str

    @property
    def failing(self) -> bool:
        return self.kind in FAILING

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, "failing": self.failing}


@dataclass
class CitationCheck:
    text: str  # as written
    url: str | None  # the URL cited (for a reference: the URL its block cites)
    date: str | None  # the date given (None: none)
    page_url: str | None = None  # the stored page it resolved to
    page_last_updated: str | None = None
    resolved: bool = False
    ref: str | None = None  # "[Label Evidence #n]"

    def to_json(self, url: Any) -> dict[str, Any]:
        return {"text": self.text, "ref": self.ref, "url": url(self.url), "date": self.date,
                "resolved": self.resolved, "page_url": url(self.page_url),
                "page_last_updated": self.page_last_updated}


@dataclass
class QuoteCheck:
    text: str
    verbatim: bool
    url: str | None = None  # where it was found (a cited page, or another page for a moved quote)
    chunk_id: str | None = None
    closest: str | None = None  # the cited pages' passage closest to a quote that is not verbatim


@dataclass
class Evidence:
    """What backs (or fails to back) a claim: the page, and the passage that supports it best or the chunk
    that holds its quote."""

    url: str | None
    last_updated: str | None
    passage: str | None = None
    score: float | None = None
    chunk_id: str | None = None


@dataclass
class ClaimResult:
    line: int
    text: str
    kind: str
    verdict: str
    citations: list[CitationCheck] = field(default_factory=list)
    quotes: list[QuoteCheck] = field(default_factory=list)
    evidence: Evidence | None = None
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(p.failing for p in self.problems)

    @property
    def has_url_and_date(self) -> bool:
        return any(c.url and c.date for c in self.citations)


@dataclass
class CheckReport:
    report: Path
    origin: str  # "store" or "snapshot"
    source_path: Path
    charter_id: str
    claims: list[ClaimResult]
    gaps: int = 0
    verified: str | None = None  # what was verified before the check (the snapshot's or the store's verdict)
    warnings: list[str] = field(default_factory=list)  # what that verification warned of

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.claims)

    def totals(self) -> dict[str, Any]:
        verdicts = Counter(c.verdict for c in self.claims)
        problems = Counter(p.kind for c in self.claims for p in c.problems)
        quotes = [q for c in self.claims for q in c.quotes]
        citations = [x for c in self.claims for x in c.citations]
        return {
            "claims": len(self.claims),
            "cited": sum(1 for c in self.claims if c.citations),
            "with_url_and_date": sum(1 for c in self.claims if c.has_url_and_date),
            "quotes": len(quotes),
            "quotes_verbatim": sum(1 for q in quotes if q.verbatim),
            "citations": len(citations),
            "citations_resolved": sum(1 for x in citations if x.resolved),
            "gaps": self.gaps,
            "verdicts": {v: verdicts[v] for v in _ORDER if verdicts[v]},
            "problems": dict(sorted(problems.items())),
        }

    def rates(self) -> dict[str, float | None]:
        """``citation_rate`` (claims carrying a URL and a last-updated date, of all claims), ``quote_accuracy``
        (verbatim quotes, of the quotes checked) and ``supported_rate`` (claims quoted verbatim or supported,
        of the cited claims); None when there is nothing to divide by."""
        t = self.totals()
        statements = [c for c in self.claims if c.kind not in _OWN_KINDS]  # brt's header, agreement, ... aside
        stated = [c for c in statements if c.kind != "source" and c.citations]
        backed = sum(1 for c in stated if c.verdict in ("quoted", "supported"))
        return {
            "citation_rate": _ratio(sum(1 for c in statements if c.has_url_and_date), len(statements)),
            "quote_accuracy": _ratio(t["quotes_verbatim"], t["quotes"]),
            "supported_rate": _ratio(backed, len(stated)),
        }

    def lines(self, width: int = 100) -> list[str]:
        """The check as text: one line per claim (line number, verdict, text), its problems and evidence
        indented under it, then :meth:`verdict`."""
        out = []
        for c in self.claims:
            score = f" ({c.evidence.score:.2f})" if c.evidence and c.evidence.score is not None else ""
            out.append(f"L{c.line:<4} {c.verdict + score:<24} {_clip(c.text, width)}")
            for p in c.problems:
                out.append(f"       {'FAIL' if p.failing else 'note'}: {p.message}")
            if c.evidence is not None and c.evidence.passage and c.verdict != "supported":
                out.append(f"       best passage: {_clip(c.evidence.passage, width)}")
            out += [f"       closest: {_clip(q.closest, width)}" for q in c.quotes if not q.verbatim and q.closest]
        if self.verified:
            out.append(f"verified first: {self.verified}" + (f" ({len(self.warnings)} warning(s))"
                                                             if self.warnings else ""))
        return [*out, self.verdict()]

    def verdict(self) -> str:
        """One line: passed, or how many claims fail and why."""
        r = self.rates()
        rates = ", ".join(f"{k} {v:.2f}" if v is not None else f"{k} n/a" for k, v in r.items())
        failing = [c for c in self.claims if not c.ok]
        if not failing:
            return f"OK {self.report.name}: {len(self.claims)} claims checked against the {self.origin}; {rates}"
        kinds = Counter(p.kind for c in failing for p in c.problems if p.failing)
        detail = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
        return f"FAILED {self.report.name}: {len(failing)} of {len(self.claims)} claims ({detail}); {rates}"


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 4) if b else None


# -- quotes ---------------------------------------------------------------------------------------------------


def quote_in_text(quote: str, text: str) -> bool:
    """Whether ``quote`` is verbatim in ``text`` (``quotes.match_quote``: the normalisations a person accepts,
    elisions fragment by fragment within one sentence, changing nothing)."""
    from .quotes import match_quote

    return match_quote(quote, text).found


# -- checking -------------------------------------------------------------------------------------------------


@dataclass
class _Resolved:
    citation: CitationCheck
    page: SourcePage | None
    quote_here: bool  # the claim's quotes are attributed to this citation's page


def _resolve(c: Citation, parsed: ParsedReport, source: EvidenceSource, problems: list[Problem]) -> _Resolved:
    """A citation checked: its page, allowlist and date (problems appended)."""
    check = CitationCheck(c.text, c.url, c.date, ref=c.ref)
    if c.kind == "footnote":
        problems.append(Problem("missing_footnote", f"{c.text} has no footnote definition"))
        return _Resolved(check, None, False)
    if c.kind == "ref":
        problems.append(Problem("unknown_reference", f"[{c.n}] is not in the report's list of references"))
        return _Resolved(check, None, False)
    if c.kind == "evidence" and c.url is None:
        if not _from_reference(c, parsed, source, check):
            problems.append(Problem("unknown_reference", f"{c.ref} is neither an evidence line of the report nor "
                                                         f"a block of the charter's recorded synthesis"))
            return _Resolved(check, None, False)
    assert check.url is not None
    from .evidence_source import web_url

    url, why = web_url(check.url)
    if url is None:
        problems.append(Problem("not_a_web_url", f"{check.url} {why}"))
        return _Resolved(check, None, False)
    page = source.page_for(check.url)
    if page is None or not _allowed(url.href, source):
        kind, why = ("not_harvested", "is not a page the charter's store holds") if _allowed(url.href, source) else (
            "off_allowlist", "is not on the charter's allowed_domains")
        problems.append(Problem(kind, f"{check.url} {why}"))
        return _Resolved(check, None, False)
    check.page_url, check.page_last_updated, check.resolved = page.url, page.last_updated, True
    _check_date(check, problems)
    return _Resolved(check, page, c.kind != "also at")


def _from_reference(c: Citation, parsed: ParsedReport, source: EvidenceSource, check: CitationCheck) -> bool:
    """Fill a bare ``[Label Evidence #n]`` from the report's own evidence line, else the recorded synthesis."""
    key = (c.label or "", c.n or 0)
    line = parsed.evidence_lines.get(key)
    if line is not None:
        check.url, check.date = line.url, check.date or line.date
        return True
    block = source.blocks.get(key)
    if block is None or not block.get("url"):
        return False
    check.url = str(block["url"])
    check.date = check.date or str(block.get("last_updated") or "unknown")
    return True


def _allowed(href: str, source: EvidenceSource) -> bool:
    return source.egress is None or source.egress.permits(href)


def _check_date(check: CitationCheck, problems: list[Problem]) -> None:
    from .claims import iso_date

    expected = iso_date(check.page_last_updated[:10]) if check.page_last_updated else "unknown"
    if check.date is None:
        problems.append(Problem("no_date", f"{check.url}: no last-updated date given (the page says {expected})"))
    elif iso_date(check.date) != expected:
        problems.append(Problem("wrong_date", f"{check.url}: last updated {check.date} given, the page says "
                                              f"{expected}"))


def _check_quote(quote: str, pages: list[SourcePage], source: EvidenceSource, problems: list[Problem]) -> QuoteCheck:
    why: str | None = None
    for page in pages:
        where, reason = _find(quote, page, source)
        if where is not None:
            return QuoteCheck(quote, True, page.url, where)
        why = why or reason
    closest = _closest(quote, pages, source)
    cited = ", ".join(p.url for p in pages)
    if why is not None:
        problems.append(Problem("elision_changes_quote", f"the quote is not what {cited} says: {why}"))
        return QuoteCheck(quote, False, None, closest=closest)
    elsewhere = next((p for p in source.pages if p not in pages and _find(quote, p, source)[0] is not None), None)
    if elsewhere is not None:
        problems.append(Problem("quote_elsewhere", f"the quote is on {elsewhere.url}, not on the page cited "
                                                   f"({cited})"))
        return QuoteCheck(quote, False, elsewhere.url, closest=closest)
    problems.append(Problem("quote_not_verbatim", f"the quote is not verbatim on {cited}"))
    return QuoteCheck(quote, False, None, closest=closest)


def _find(quote: str, page: SourcePage, source: EvidenceSource) -> tuple[str | None, str | None]:
    """The id of a chunk of ``page`` holding ``quote`` ("page text" or "page title" when only the stored text or
    title does), or None and, when an elision is the trouble, why."""
    from .quotes import match_quote

    why = None
    texts = [(c.id, c.text) for c in source.chunks_of(page)]
    texts += [("page text", page.text)] if page.text else []
    texts += [("page title", page.title)] if page.title else []
    for where, text in texts:
        found = match_quote(quote, text)
        if found.found:
            return where, None
        why = why or found.why
    return None, why


def _closest(quote: str, pages: list[SourcePage], source: EvidenceSource) -> str | None:
    from memory_store.text import sentences, terms

    wanted = set(terms(quote))
    best, best_share = None, 0.0
    for page in pages:
        for chunk in source.chunks_of(page):
            for sentence in sentences(chunk.text):
                share = len(wanted & set(terms(sentence))) / len(wanted) if wanted else 0.0
                if share > best_share:
                    best, best_share = sentence, share
    return " ".join(best.split()) if best else None


def _support(claim: ReportClaim, pages: list[SourcePage], source: EvidenceSource) -> tuple[str, Evidence]:
    """The support model's verdict on a claim against the passages of the pages it cites (``support.py``),
    with the bundled embedding model the model was fitted with, whatever model the store uses; a claim said
    twice against the same pages is judged once."""
    key = (claim.plain, tuple(p.url for p in pages))
    cache = source.__dict__.setdefault("_support_cache", {})
    if key not in cache:
        cache[key] = _judge(claim, pages, source)
    verdict, evidence = cache[key]
    return verdict, replace(evidence)


def _judge(claim: ReportClaim, pages: list[SourcePage], source: EvidenceSource) -> tuple[str, Evidence]:
    from memory_store.embeddings import full_precision

    from .support import SUPPORTED, WEAK, closest, passages

    candidates: list[tuple[str, SourcePage]] = []
    for page in pages:
        texts = [c.text for c in source.chunks_of(page)] or ([page.text] if page.text else [])
        for text in texts:
            candidates += [(p, page) for p in passages(text)]
    candidates = list({(p, page.url): (p, page) for p, page in candidates}.values())
    read = closest(claim.plain, [p for p, _ in candidates], full_precision()) if candidates else []
    if not read:
        page = pages[0]
        return "not found there", Evidence(page.url, page.last_updated, None, 0.0)
    best = max(range(len(read)), key=lambda i: (read[i].probability, read[i].closeness))
    passage, page = candidates[best]
    score = round(read[best].probability, 4)
    verdict = "supported" if score >= SUPPORTED else "weakly supported" if score >= WEAK else "not found there"
    return verdict, Evidence(page.url, page.last_updated, passage, score)


def _check_claim(claim: ReportClaim, parsed: ParsedReport, source: EvidenceSource) -> ClaimResult:
    result = ClaimResult(claim.line, claim.text, claim.kind, "")
    own = _OWN_LINES.get(claim.kind)
    if own is not None:
        own(claim, parsed, source, result)
        result.verdict = _worst(result)
        return result
    if not claim.citations:
        if claim.marked_unsupported:
            result.verdict = "marked unsupported"
        else:
            result.problems.append(Problem("uncited", "the claim cites no source and is not marked unsupported"))
            result.verdict = "uncited"
        return result
    resolved = [_resolve(c, parsed, source, result.problems) for c in claim.citations]
    result.citations = [r.citation for r in resolved]
    if all(c.kind == "ref" for c in claim.citations):  # "… mozilla.org.[4]" with no [4] listed: nothing cited
        result.problems.append(Problem("uncited", "the claim cites only numbers the report's references do not "
                                                  "list"))
    pages = list({id(r.page): r.page for r in resolved if r.page is not None and r.quote_here}.values())
    if claim.kind == "source":
        result.verdict = "listed"
    elif pages and claim.quotes:
        result.quotes = [_check_quote(q, pages, source, result.problems) for q in claim.quotes]
        found = next((q for q in result.quotes if q.verbatim), None)
        page = next((p for p in pages if found is not None and p.url == found.url), pages[0])
        result.evidence = Evidence(page.url, page.last_updated, chunk_id=found.chunk_id if found else None)
        result.verdict = "quoted"
        if _says_more(claim):  # 'The page says "…", so the lamp was never lit': the rest is a claim too
            verdict, evidence = _support(claim, pages, source)
            if verdict == "not found there":
                result.verdict, result.evidence = verdict, evidence
    elif pages:
        result.verdict, result.evidence = _support(claim, pages, source)
    if result.verdict == "not found there":
        result.problems.append(Problem("not_found", "no passage of the cited page states the claim "
                                                    f"(best {result.evidence.score or 0:.2f})"))
    result.verdict = _worst(result)
    return result


# -- brt's own line types ---------------------------------------------------------------------------------------


def _header(claim: ReportClaim, parsed: ParsedReport, source: EvidenceSource, result: ClaimResult) -> None:
    """``Charter `id` · generated …``: the report is of the charter it is checked against."""
    named = str(claim.info.get("id") or "").strip("`")
    if named != source.charter_id:
        result.problems.append(Problem("wrong_charter", f"the report is of charter {named}, the {source.origin} "
                                                        f"of charter {source.charter_id}"))
    result.verdict = "as recorded"


def _blocks_of(label: str, parsed: ParsedReport, source: EvidenceSource) -> dict[int, list[str]]:
    """Block n of section ``label`` -> the URLs it cites (its own and "also at"), from the report's evidence
    lines or else the recorded synthesis."""
    out: dict[int, list[str]] = {}
    for (lab, n), c in parsed.evidence_lines.items():
        if lab == label and c.url:
            out[n] = [c.url]
    for claim in parsed.claims:
        if claim.kind == "evidence line" and claim.citations[0].label == label:
            out[claim.citations[0].n or 0] = [c.url for c in claim.citations if c.url]
    for (lab, n), block in source.blocks.items():
        recorded = [str(block.get("url"))] + [str(a.get("url")) for a in block.get("also_at") or []
                                              if isinstance(a, dict)]
        if lab == label and (n not in out or url_key(out[n][0]) == url_key(recorded[0])):
            out[n] = list(dict.fromkeys([*out.get(n, []), *recorded]))  # "also at" that the report leaves out
    return out


def _page_states(source: EvidenceSource, url: str, value: str) -> bool:
    """Whether the stored page at ``url`` states ``value``'s numbers (or, without numbers, its words)."""
    from .support import numbers

    page = source.page_for(url)
    if page is None:
        return False
    text = " ".join(c.text for c in source.chunks_of(page)) or page.text or ""
    wanted = numbers(value)
    if wanted:
        return wanted <= numbers(text)
    return quote_in_text(value, text)


def _agreement(claim: ReportClaim, parsed: ParsedReport, source: EvidenceSource, result: ClaimResult) -> None:
    """``[X Agreement] N sources agree on V (#a, #b)``: the blocks named cite N pages, and each states V."""
    from memory_store.text import number_pattern

    from .claims import AGREE_PART

    label = str(claim.info.get("label") or "")
    blocks = _blocks_of(label, parsed, source)
    parts = list(AGREE_PART.finditer(str(claim.info.get("body") or "")))
    if not parts:
        result.problems.append(Problem("agreement_not_found", "the line names no agreement brt can check"))
    for m in parts:
        ns = [int(x) for x in number_pattern("digits").findall(m.group("blocks"))]
        urls = list(dict.fromkeys(u for n in ns for u in blocks.get(n, [])))
        value, count = m.group("value"), int(m.group("count"))
        missing = [n for n in ns if n not in blocks]
        silent = [u for u in urls if not _page_states(source, u, value)]
        if missing or len(urls) < count or silent:
            why = (f"no block #{missing[0]} in {label}" if missing else
                   f"{len(urls)} source(s) cited, {count} said" if len(urls) < count else f"{silent[0]} does not "
                                                                                          f"state {value}")
            result.problems.append(Problem("agreement_not_found", f"{count} sources agree on {value}: {why}"))
    result.verdict = "as recorded"


def _conflict(claim: ReportClaim, parsed: ParsedReport, source: EvidenceSource, result: ClaimResult) -> None:
    """``[X Conflict] A vs B``: two different values, each stated by a page a block of the section cites."""
    from .support import numbers

    label = str(claim.info.get("label") or "")
    urls = list(dict.fromkeys(u for us in _blocks_of(label, parsed, source).values() for u in us))
    a, b = str(claim.info.get("a") or ""), str(claim.info.get("b") or "")
    said_a = [u for u in urls if _page_states(source, u, a)]
    said_b = [u for u in urls if _page_states(source, u, b)]
    if numbers(a) == numbers(b) or not said_a or not said_b or set(said_a) == set(said_b) == {said_a[0]}:
        result.problems.append(Problem("conflict_not_found", f"no two blocks of {label} state {a} and {b}"))
    result.verdict = "as recorded"


def _acceptance(claim: ReportClaim, parsed: ParsedReport, source: EvidenceSource, result: ClaimResult) -> None:
    """``- **covered**: criterion — reason``: the verdict the recorded synthesis gave that criterion."""
    from .quotes import fold

    criterion, verdict = str(claim.info.get("criterion") or ""), str(claim.info.get("verdict") or "")
    recorded = [v for v in source.acceptance or [] if fold(str(v.get("criterion") or "")) == fold(criterion)]
    if source.acceptance is None:
        result.problems.append(Problem("acceptance_not_recorded", "no acceptance verdicts are recorded: this one "
                                                                  "cannot be checked"))
    elif not recorded:
        result.problems.append(Problem("acceptance_not_recorded", "the recorded synthesis has no such criterion"))
    elif str(recorded[0].get("verdict")) != verdict:
        result.problems.append(Problem("acceptance_not_recorded", f"the recorded verdict is "
                                                                  f"{recorded[0].get('verdict')}, not {verdict}"))
    result.verdict = "as recorded"


_OWN_LINES = {"header": _header, "agreement": _agreement, "conflict": _conflict, "acceptance": _acceptance}


#: A claim that quotes is scored as a claim too when it holds this many content words outside its quotes.
SAYS_MORE_WORDS = 5


def _says_more(claim: ReportClaim) -> bool:
    from memory_store.text import content_words

    return len(content_words(claim.outside)) >= SAYS_MORE_WORDS


def _worst(result: ClaimResult) -> str:
    kinds = {p.kind for p in result.problems}
    if kinds & _UNRESOLVED:
        return "citation unresolved"
    if kinds & {"quote_not_verbatim", "quote_elsewhere", "elision_changes_quote"}:
        return "quote not verbatim"
    if "wrong_date" in kinds:
        return "wrong date"
    return result.verdict or "citation unresolved"


def check_text(text: str, source: EvidenceSource, *, report: str | Path = "report.md") -> CheckReport:
    """Check a report's ``text`` against ``source`` (see the module docstring): Markdown, or brt's JSON or
    HTML (``report_text.as_markdown``, by the name ``report`` or the text itself)."""
    from .report_text import as_markdown

    try:
        markdown = as_markdown(text, str(report))
    except ValueError as exc:
        raise CheckError(f"cannot read report {Path(report).name}: {exc}") from None
    parsed = parse_report(markdown)
    if len(parsed.claims) > MAX_CLAIMS:
        raise CheckError(f"report {Path(report).name} holds {len(parsed.claims)} claims, more than the "
                         f"{MAX_CLAIMS} one check reads: check it in parts")
    claims = [_check_claim(c, parsed, source) for c in parsed.claims]
    return CheckReport(Path(report), source.origin, source.path, source.charter_id, claims, parsed.gaps,
                       source.verified, list(source.warnings))


def read_report(report: str | Path, *, follow_links: bool = True) -> str:
    """The text of the report file (a regular file, at most ``MAX_REPORT_BYTES``, UTF-8); with
    ``follow_links`` False a symlink at the path is refused, not followed. CheckError otherwise."""
    from ..files import FileRefused, read_regular

    path = Path(report).expanduser()
    try:  # a regular file only, read without blocking (a FIFO or a device is refused at once), and bounded
        return read_regular(path, limit=MAX_REPORT_BYTES, what="report", follow_symlinks=follow_links).decode("utf-8")
    except FileRefused as exc:
        raise CheckError(str(exc)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CheckError(f"cannot read report {path}: {getattr(exc, 'strerror', None) or exc}") from None


def check_report(
    report: str | Path, *, charter: Charter | None = None, snapshot: str | Path | None = None, har: bool = True,
    follow_links: bool = True,
) -> CheckReport:
    """Check the report at ``report`` (Markdown, or brt's JSON or HTML) against the charter's store, or against
    ``snapshot`` (an audit snapshot; ``charter``, when given too, supplies the allowlist). The evidence is
    verified first: the snapshot with ``verify.verify`` (its HAR too unless ``har`` is False), the store with
    ``verify.verify_store`` (against its HARs); one that fails is refused (``evidence_source.SourceRefused``).
    CheckError for an unreadable report (a symlink too, unless ``follow_links``) or when neither source is
    given; StoreNotFound / SnapshotError / CharterError pass through."""
    from .evidence_source import from_snapshot, from_store

    if snapshot is None and charter is None:
        raise CheckError("give the charter (its store) or a snapshot to check the report against")
    path = Path(report).expanduser()
    text = read_report(path, follow_links=follow_links)
    source = from_snapshot(snapshot, charter, har=har) if snapshot is not None else from_store(charter)  # type: ignore[arg-type]
    return check_text(text, source, report=path)


# -- JSON -----------------------------------------------------------------------------------------------------


def _same(value: Any) -> Any:
    return value


def _plain(text: str | None, _source: str | None = None) -> str | None:
    return text


def report_json(result: CheckReport, quote: Any = None, url: Any = None) -> dict[str, Any]:
    """The check as one JSON document: per claim its line, text, verdict, citations, quotes, evidence and
    problems; the totals and rates; ``ok``. ``quote(text, source)`` wraps text taken from the report or a page
    (the MCP server's untrusted-content delimiters); ``url`` gives a URL as an agent may see it."""
    q, u = quote or _plain, url or _same
    where = f"the report {result.report.name} (may quote web pages)"
    claims = []
    for c in result.claims:
        claims.append({
            "line": c.line,
            "text": q(c.text, f"{where}, line {c.line}"),
            "kind": c.kind,
            "verdict": _own(c.verdict, quote),
            "ok": c.ok,
            "citations": [x.to_json(u) for x in c.citations],
            "quotes": [{"text": q(x.text, f"{where}, line {c.line}"), "verbatim": x.verbatim, "url": u(x.url),
                        "chunk_id": x.chunk_id, "closest": q(x.closest, x.url) if x.closest else None}
                       for x in c.quotes],
            "evidence": _evidence_json(c.evidence, q, u),
            "problems": [_problem_json(p, quote) for p in c.problems],
        })
    return {**summary_json(result, quote), "claims": claims}


def claim_brief(c: ClaimResult, quote: Any, url: Any, report: str, width: int = 240) -> dict[str, Any]:
    """One claim as an agent needs it to fix the report: its line, verdict and text (clipped), its failing
    problems, and for a quote that is not verbatim the closest passage, for an unsupported claim the best one."""
    where = f"the report {report} (may quote web pages), line {c.line}"
    doc: dict[str, Any] = {"line": c.line, "verdict": _own(c.verdict, quote), "ok": c.ok,
                           "text": quote(_clip(c.text, width), where)}
    failing = [p for p in c.problems if p.failing]
    if failing:
        doc["problems"] = [{"kind": p.kind, "message": _escape(_clip(p.message, width), quote)} for p in failing]
    closest = next((x for x in c.quotes if not x.verbatim and x.closest), None)
    if closest is not None:
        doc["closest"] = quote(_clip(closest.closest or "", width), closest.url)
    elif c.evidence is not None and c.evidence.passage and c.verdict in ("not found there", "weakly supported"):
        doc["best_passage"] = quote(_clip(c.evidence.passage, width), c.evidence.url)
        doc["score"] = c.evidence.score
    return doc


def summary_json(result: CheckReport, quote: Any = None) -> dict[str, Any]:
    """The check without its claims: verdict, rates, totals, what was verified (``claims`` left to the caller)."""
    from .support import SUPPORTED, WEAK

    totals = result.totals()
    totals["verdicts"] = {_own(v, quote): n for v, n in totals["verdicts"].items()}
    return {
        "report": _own(str(result.report), quote),
        "charter_id": result.charter_id,
        "checked_against": result.origin,
        "source_path": _own(str(result.source_path), quote),
        "verified": _own(result.verified, quote) if result.verified else None,
        "verification_warnings": [_escape(_clip(w, 240), quote) for w in result.warnings[:5]],
        "ok": result.ok,
        "verdict": _own(result.verdict(), quote),
        **result.rates(),
        "totals": totals,
        "thresholds": {"supported": SUPPORTED, "weakly_supported": WEAK},
    }


def _evidence_json(e: Evidence | None, q: Any, u: Any) -> dict[str, Any] | None:
    if e is None:
        return None
    return {"url": u(e.url), "last_updated": e.last_updated, "passage": q(e.passage, e.url) if e.passage else None,
            "score": e.score, "chunk_id": e.chunk_id}


def _problem_json(p: Problem, quote: Any) -> dict[str, Any]:
    doc = p.to_json()
    doc["message"] = _escape(p.message, quote)
    return doc


def _own(text: str, quote: Any) -> Any:
    """brt's own wording (counts, rates and the report's file name, which the caller gave): marked trusted for an
    agent (``untrusted.agent_document`` shows it outside the delimiters, escaped)."""
    if quote is None:
        return text
    from ..untrusted import trusted

    return trusted(text)


def _escape(text: str, quote: Any) -> str:
    """Messages name URLs and dates taken from the report: no delimiter may appear in them for an agent."""
    if quote is None:
        return text
    from ..untrusted import escape_untrusted

    return escape_untrusted(text)

