"""A Markdown report read the way ``brt check`` needs it, in time linear in its length.

The block structure (paragraphs, list items, table rows, headings, fences, link reference definitions) and the
inline structure (links, autolinks, escapes, code, emphasis) come from **markdown-it-py**, a CommonMark parser
built to resist pathological input. What CommonMark does not know is found by :func:`scan`, one pass of
bounded patterns over each text run: bare ``http(s)://`` URLs, the scheme-less URL of brt's evidence lines
(``— host/path (last updated: …)``), ``[Label Evidence #n]`` references, ``[Label Gap]`` marks, footnote
references ``[^id]`` and numbered references ``[1]``, ``[2, 3]``. Footnote definitions (``[^id]: …`` with their
indented continuation lines) are taken out before markdown-it sees the text (it would read some of them as link
definitions) and read on their own.

Each paragraph, list item paragraph, table row or footnote becomes one :class:`Flat`: its text with every
citation replaced by ``⟦i⟧`` (no dot, no space: the sentence splitter keeps it whole, and a URL's dots end no
sentence), the citation tokens, and the line each part of the text came from. Quotes are found on that text
by :func:`find_quotes`, a linear scan.

Every pattern here either cannot fail once it has started to match (a URL runs to the next delimiter) or is
bounded in length, so no position of the text is read more than a constant number of times;
``tests/unit/test_check_linear.py`` holds the time bound on adversarial input.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from functools import cache, cached_property
from typing import Any

__all__ = ["Block", "Flat", "Token", "find_quotes", "read_blocks", "scan", "unescape"]

#: An escaped ``"`` (``\\"``) inside the text: not a quote mark (brt's evidence lines escape quote marks so);
#: escaped brackets likewise open no reference. :func:`unmask` gives them back.
ESCAPED_QUOTE = "\ue000"
_ESCAPED = {'"': ESCAPED_QUOTE, "[": "\ue001", "]": "\ue002"}
_UNESCAPE = str.maketrans({v: k for k, v in _ESCAPED.items()})
_MASK = "\u27e6{}\u27e7"  # ⟦n⟧
MASKED = re.compile("\u27e6(\\d+)\u27e7")
# characters a report's own text may not use (they would read as masks or escapes)
_RESERVED = str.maketrans({"\u27e6": "[", "\u27e7": "]", ESCAPED_QUOTE: "", "\ue001": "", "\ue002": ""})


def unescape(text: str) -> str:
    """Text of a :class:`Flat` with its escaped characters given back."""
    return text.translate(_UNESCAPE)


@dataclass
class Token:
    """A citation-like token: ``kind`` is link, url, dashurl, evidence, gap, footnote or ref (numbered)."""

    kind: str
    text: str  # as written
    url: str | None = None
    label: str | None = None
    n: int | None = None
    refs: tuple[int, ...] = ()  # a numbered reference's numbers
    fid: str | None = None  # a footnote reference's id
    start: int = 0  # offset of its mask in Flat.text
    end: int = 0


@dataclass
class Flat:
    """One paragraph (list item paragraph, table row, footnote) as text with its citations masked."""

    text: str
    tokens: list[Token]
    lines: list[tuple[int, int]]  # (offset in text, line number) where each source line starts
    lead: str | None = None  # the text of a leading **strong** run (brt's acceptance verdicts)

    @cached_property
    def offsets(self) -> list[int]:
        """Where each source line starts in ``text``."""
        return [o for o, _ in self.lines]

    @cached_property
    def starts(self) -> list[int]:
        """Where each token's mask starts in ``text``."""
        return [t.start for t in self.tokens]

    def line_at(self, offset: int) -> int:
        i = bisect.bisect_right(self.offsets, offset) - 1
        return self.lines[max(i, 0)][1]

    def plain(self, start: int = 0, end: int | None = None) -> str:
        """The text between ``start`` and ``end`` with its masks restored as written."""
        piece = self.text[start:end]
        return unescape(MASKED.sub(lambda m: self.tokens[int(m.group(1))].text, piece))


@dataclass
class Block:
    """A unit of the report: a paragraph, list item, table row or footnote definition, with its context."""

    kind: str  # "paragraph", "item", "row", "header row", "footnote", "html"
    flat: Flat
    line: int  # first line (1-based)
    heading: str  # the nearest heading above it (its text), "" when none
    number: int | None = None  # an ordered list item's number
    fid: str | None = None  # a footnote definition's id
    depth: int = 0  # list nesting


# -- the parser ------------------------------------------------------------------------------------------------


@cache
def _md() -> Any:
    from markdown_it import MarkdownIt

    # images are read as "!" + a link (the image rule is quadratic on "![![![…"); flatten() drops them
    md = MarkdownIt("commonmark").enable("table").disable(["text_join", "image"])
    md.validateLink = lambda url: True  # every link is read (a javascript: or file: link fails as a citation)
    md.normalizeLink = lambda url: url  # the URL as written: the one URL parser reads it (check.web_url)
    md.normalizeLinkText = lambda url: url
    return md


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_FOOTNOTE_DEF = re.compile(r"^ {0,3}\[\^([^\]\s]{1,64})\]:[ \t]?(.*)$")


def _take_footnotes(lines: list[str]) -> list[tuple[str, int, str]]:
    """Footnote definitions (id, first line, body) taken out of ``lines`` (blanked in place: line numbers
    stay). Fenced code is left alone."""
    out: list[tuple[str, int, str]] = []
    fence: str | None = None
    current: list[Any] | None = None  # [id, line, parts]
    for i, raw in enumerate(lines):
        opened = _FENCE.match(raw)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            continue
        if opened:
            fence, current = opened.group(1), None
            continue
        m = _FOOTNOTE_DEF.match(raw)
        if m:
            current = [m.group(1), i + 1, [m.group(2)]]
            out.append((m.group(1), i + 1, ""))
            lines[i] = ""
        elif current is not None and raw.startswith(("  ", "\t")) and raw.strip():
            current[2].append(raw.strip())
            lines[i] = ""
        elif raw.strip():
            current = None
        if current is not None:
            out[-1] = (current[0], current[1], " ".join(current[2]))
    return out


def read_blocks(text: str) -> tuple[list[Block], dict[str, tuple[str, int]], list[tuple[int, str]]]:
    """The blocks of a Markdown report in order; the link reference definitions (label -> (URL, line)); and
    the headings (line, text)."""
    lines = text.translate(_RESERVED).splitlines()
    notes = _take_footnotes(lines)
    env: dict[str, Any] = {}
    tokens = _md().parse("\n".join(lines), env)
    blocks, headings = _walk(tokens)
    for fid, line, body in notes:
        inline = _md().parseInline(body, env)
        flat = flatten(inline[0].children or [] if inline else [], line)
        blocks.append(Block("footnote", flat, line, _heading_at(headings, line), fid=fid))
    blocks.sort(key=lambda b: b.line)
    refs = {label: (str(ref.get("href") or ""), int((ref.get("map") or [0])[0]) + 1)
            for label, ref in (env.get("references") or {}).items()}
    return blocks, refs, headings


def _heading_at(headings: list[tuple[int, str]], line: int) -> str:
    i = bisect.bisect_right([h for h, _ in headings], line) - 1
    return headings[i][1] if i >= 0 else ""


@dataclass
class _Walk:
    blocks: list[Block] = field(default_factory=list)
    headings: list[tuple[int, str]] = field(default_factory=list)
    heading: str = ""
    depth: int = 0
    numbers: list[int | None] = field(default_factory=list)
    row: list[Any] | None = None  # the inline tokens of a table row's cells
    row_line: int = 0
    header: bool = False
    in_heading: bool = False


def _walk(tokens: list[Any]) -> tuple[list[Block], list[tuple[int, str]]]:
    w = _Walk()
    for t in tokens:
        _step(w, t)
    return w.blocks, w.headings


def _step(w: _Walk, t: Any) -> None:
    kind = t.type
    if kind == "heading_open":
        w.in_heading = True
    elif kind == "heading_close":
        w.in_heading = False
    elif kind in ("bullet_list_open", "ordered_list_open"):
        w.depth += 1
    elif kind in ("bullet_list_close", "ordered_list_close"):
        w.depth -= 1
    elif kind == "list_item_open":
        w.numbers.append(int(t.info) if t.info.isdigit() else None)
    elif kind == "list_item_close":
        w.numbers.pop()
    elif kind == "tr_open":
        w.row, w.row_line = [], (t.map[0] + 1 if t.map else 0)
    elif kind == "thead_open":
        w.header = True
    elif kind == "thead_close":
        w.header = False
    elif kind == "tr_close" and w.row is not None:
        _row(w)
    elif kind == "inline":
        _inline(w, t)
    elif kind == "html_block" and not t.content.lstrip().startswith("<!--"):
        line = (t.map[0] + 1) if t.map else 0
        flat = Flat(_TAG.sub(" ", t.content.translate(_RESERVED)), [], [(0, line)])
        w.blocks.append(Block("html", flat, line, w.heading))


_TAG = re.compile(r"<[^<>\n]{0,2000}>")


def _inline(w: _Walk, t: Any) -> None:
    line = (t.map[0] + 1) if t.map else 0
    if w.in_heading:
        text = " ".join(c.content for c in (t.children or []) if c.type in ("text", "code_inline", "text_special"))
        w.heading = " ".join(text.split())
        w.headings.append((line, w.heading))
    elif w.row is not None:
        w.row.append(t)
    else:
        number = w.numbers[-1] if w.numbers else None
        kind = "item" if w.depth else "paragraph"
        w.blocks.append(Block(kind, flatten(t.children or [], line), line, w.heading, number=number, depth=w.depth))


def _row(w: _Walk) -> None:
    """A table row as one block: its cells joined with `` | `` (a header row is kept apart)."""
    children: list[Any] = []
    for i, cell in enumerate(w.row or []):
        if i:
            children.append(_Sep())
        children.extend(cell.children or [])
    flat = flatten(children, w.row_line)
    w.blocks.append(Block("header row" if w.header else "row", flat, w.row_line, w.heading))
    w.row = None


class _Sep:
    """The boundary between two table cells (flattened as `` | ``)."""

    type = "cell"
    content = " | "


# -- flattening an inline run ------------------------------------------------------------------------------


@dataclass
class _Out:
    parts: list[str] = field(default_factory=list)
    size: int = 0
    tokens: list[Token] = field(default_factory=list)
    lines: list[tuple[int, int]] = field(default_factory=list)

    def add(self, text: str) -> None:
        self.parts.append(text)
        self.size += len(text)

    def token(self, token: Token) -> None:
        token.start = self.size
        self.add(_MASK.format(len(self.tokens)))
        token.end = self.size
        self.tokens.append(token)

    def text_run(self, text: str) -> None:
        """Plain text: the tokens :func:`scan` finds in it are masked."""
        pos = 0
        for m in _SCAN.finditer(text):
            token = _token_of(m)
            if token is None:
                continue
            if m.start() > pos:
                self.add(text[pos:m.start()])
            self.token(token)
            pos = m.end() if token.kind != "url" else m.start() + len(token.text)
        if pos < len(text):
            self.add(text[pos:])


def flatten(children: list[Any], line: int) -> Flat:
    """An inline token's children as a :class:`Flat` (see the module docstring)."""
    out = _Out(lines=[(0, line)])
    run: list[str] = []  # text waiting to be scanned (text runs joined, so a URL split by escapes is one)
    link: list[Any] | None = None  # [href, text parts, markup, is an image]
    lead: str | None = None
    strong: list[str] | None = None
    for c in children:
        kind = c.type
        if link is not None:
            if kind == "link_close":
                if link[3]:  # an image: neither a citation nor text of the claim
                    run[-1] = run[-1][:-1]
                else:
                    _flush(out, run)
                    out.token(Token("link", f"[{''.join(link[1])}]({link[0]})" if link[2] != "autolink"
                                    else f"<{link[0]}>", url=link[0]))
                link = None
            elif kind in ("text", "code_inline", "text_special"):
                link[1].append(c.content)
            continue
        if kind == "link_open":
            image = bool(run) and run[-1].endswith("!") and c.markup != "autolink"
            link = [str(c.attrs.get("href") or ""), [], c.markup, image]
        elif kind == "strong_open" and lead is None and not out.size and not "".join(run).strip():
            strong = []
        elif kind == "strong_close" and strong is not None:
            lead, strong = "".join(strong), None
        elif kind in ("softbreak", "hardbreak"):
            _flush(out, run)
            out.add(" ")
            line += 1
            out.lines.append((out.size, line))
        elif kind in ("text", "code_inline", "html_inline", "cell"):
            run.append(c.content)
            if strong is not None:
                strong.append(c.content)
        elif kind == "text_special":
            run.append(_ESCAPED.get(c.content, c.content))
            if strong is not None:
                strong.append(c.content)
    _flush(out, run)
    return Flat("".join(out.parts), out.tokens, out.lines, lead)


def _flush(out: _Out, run: list[str]) -> None:
    if run:
        out.text_run("".join(run))
        run.clear()


# -- scanning a text run ---------------------------------------------------------------------------------------

# Alternatives tried at each position, each bounded or unable to fail once started (module docstring).
_SCAN = re.compile(
    # any scheme://… is a URL cited (only http(s) ones can name a page: the check says so of the others)
    r"(?P<url>(?<![\w.+-])[A-Za-z][A-Za-z0-9+.-]{0,20}://[^\s<>\"“”\[\]\u27e6\u27e7\ue000-\ue002]+)"
    r"|\[(?P<elabel>[^\[\]\n]{1,100}?) Evidence #(?P<n>\d{1,6})\]"
    r"|\[(?P<glabel>[^\[\]\n]{1,100}?) Gap\]"
    r"|\[\^(?P<fid>[^\]\s]{1,64})\]"
    r"|\[(?P<refs>\d{1,4}(?:\s{0,3}[,;–-]\s{0,3}\d{1,4}){0,30})\]"
    # the lookahead takes the whole word at once (an atomic group): no backtracking into it
    r"|(?:—|–|--)[ \t]{0,8}(?=(?P<dash>[A-Za-z0-9][^\s(\[\]]{0,300}))(?P=dash)"
    r"(?=[ \t]{0,8}\((?:last[ -])?updated)",
    re.IGNORECASE,
)
_HOSTLIKE = re.compile(r"^(?:\[[0-9a-f:.]{2,45}\]|[a-z0-9](?:[a-z0-9-]{0,62}\.){1,}[a-z0-9-]{1,63}|localhost)"
                       r"(?::\d{1,5})?(?:[/?#]|$)", re.IGNORECASE)


def _token_of(m: re.Match[str]) -> Token | None:
    g = m.groupdict()
    if g["url"] is not None:
        url = g["url"].rstrip(".,;:!?'’")
        while url.endswith(")") and url.count("(") < url.count(")"):
            url = url[:-1]  # "(see https://x.test/a)": the bracket closes the aside
        return Token("url", url, url=url)
    if g["elabel"] is not None:
        return Token("evidence", m.group(0), label=g["elabel"].strip(), n=int(g["n"]))
    if g["glabel"] is not None:
        return Token("gap", m.group(0), label=g["glabel"].strip())
    if g["fid"] is not None:
        return Token("footnote", m.group(0), fid=g["fid"])
    if g["refs"] is not None:
        return Token("ref", m.group(0), refs=_numbers(g["refs"]))
    dash = g["dash"]
    if dash is not None and _HOSTLIKE.match(dash):
        return Token("dashurl", m.group(0), url=dash)
    return None


def _numbers(spec: str) -> tuple[int, ...]:
    """``1, 3-5`` -> (1, 3, 4, 5) (a range spans at most 50 numbers)."""
    out: list[int] = []
    for part in re.split(r"[,;]", spec):
        nums = [int(p) for p in re.split(r"[–-]", part) if p.strip().isdigit()]
        if len(nums) == 2 and 0 <= nums[1] - nums[0] <= 50:
            out += range(nums[0], nums[1] + 1)
        else:
            out += nums[:1]
    return tuple(dict.fromkeys(out))


def scan(text: str) -> list[Token]:
    """The citation-like tokens of a plain text run (for tests and for text that is not Markdown)."""
    out = _Out()
    out.text_run(text.translate(_RESERVED))
    return out.tokens


# -- quotes ---------------------------------------------------------------------------------------------------

_OPENERS = {'"': '"', "“": "”", "„": "“"}


def find_quotes(text: str) -> list[tuple[int, int]]:
    """(start, end) of each quotation in ``text``, quote marks included: ``"…"``, ``“…”`` or ``„…“``, one
    left-to-right pass. A quote holds no citation that stands apart: a stray opening mark before one is dropped (so
    it cannot swallow the next citation), and the scan goes on after the mask. A mark glued to the word before it
    ("… in 1893.[51] The …") is the page's own footnote mark, copied with its words, and stays in the quote."""
    out: list[tuple[int, int]] = []
    open_at, close = -1, ""
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if open_at >= 0:
            if ch == close:
                if i > open_at + 1:
                    out.append((open_at, i + 1))
                open_at = -1
            elif ch == "\u27e6" and (i == 0 or text[i - 1].isspace()):
                open_at = -1  # a citation inside: the opening mark was stray
        elif ch in _OPENERS:
            open_at, close = i, _OPENERS[ch]
        i += 1
    return out
