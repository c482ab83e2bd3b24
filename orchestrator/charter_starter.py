"""``brt charter init QUESTION URL...``: a commented starter charter, valid by construction.

The question becomes the goal and the first output section (more with ``--section``); the URLs become the
seeds; their hosts, ``www.`` dropped, the allowed domains (a domain allows its subdomains; an IP address or
``localhost`` only itself). The id and title come from the question unless given. The text is checked with
the charter schema before it is written, so an invalid input (a URL that is not absolute http(s), a bad id)
is a CharterError naming the field, and nothing is written.
"""

from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import dataclass
from pathlib import Path

from memory_store.text import SLUG_STOP_WORDS, tokens

from .errors import CharterError, StarterExists

__all__ = ["StarterCharter", "charter_init", "starter_text"]


@dataclass
class StarterCharter:
    charter_id: str
    text: str
    path: Path | None


def _slug(question: str) -> str:
    words = [w for w in tokens(question.lower(), "ascii") if w not in SLUG_STOP_WORDS]
    slug = ""
    for w in words:
        if len(slug) + len(w) + 1 > 40:
            break
        slug = f"{slug}_{w}" if slug else w
    return slug or "research"


#: The longest title taken from a question; a longer question gives its first clause, or its first words.
TITLE_CHARS = 60
#: Where a question's first clause may end, tried in this order: a comma before a conjunction or a question word
#: ("..., and what ..."), a semicolon, colon or dash; never a comma inside a list ("LCP, INP and CLS").
_CLAUSE_ENDS = (
    re.compile(r",\s+(?=(?:and|or|but|so|which|what|how|why|when|where|who|whose)\b)", re.IGNORECASE),
    re.compile(r"\s*(?:[;:]|\s[—–-]\s)\s*"),
)


def _title(question: str) -> str:
    """A title that reads as one: the question's own words, as written (a short question is its own title;
    a long one gives its first clause, or its first words up to a word that can end a phrase, with "…")."""
    text = " ".join(question.split()).strip().rstrip("?!.").strip()
    if len(text) > TITLE_CHARS:
        clauses = [pattern.split(text, maxsplit=1)[0].strip() for pattern in _CLAUSE_ENDS]
        text = next((c for c in clauses if len(c.split()) >= 3 and len(c) <= TITLE_CHARS), None) or _cut(text)
    text = text or "Answer"
    return text[:1].upper() + text[1:]


def _cut(text: str) -> str:
    """``text``'s first words within TITLE_CHARS, not ending on a word that cannot end a phrase, then "…"."""
    words: list[str] = []
    for word in text.split():
        if len(" ".join([*words, word])) > TITLE_CHARS - 1:
            break
        words.append(word)
    while len(words) > 1 and words[-1].lower().strip(",;:") in SLUG_STOP_WORDS:
        words.pop()
    return " ".join(words).rstrip(",;:") + " …"


def _domain(url: str, field: str) -> str:
    from .url_safety import web_url

    parts = web_url(url)  # the host the browser reads (WHATWG), http(s) only
    if parts is None:
        raise CharterError("<charter init>", [(field, f"{url!r} is not an absolute http(s) URL")])
    host = parts.hostname.lower().rstrip(".")
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    return host[4:] if host.startswith("www.") and host.count(".") >= 2 else host


def _check_id(charter_id: str) -> None:
    """CharterError naming ``id`` unless ``charter_id`` is an id exactly as given (a trailing newline, a tab or an
    ideographic space is an error, not whitespace to drop: the starter's file is named after it)."""
    from .charter import CHARTER_ID_RE

    if not isinstance(charter_id, str) or not CHARTER_ID_RE.match(charter_id):
        raise CharterError("<charter init>", [("id", f"{charter_id!r} must match [a-z0-9][a-z0-9_-]{{0,63}} exactly "
                                                     "(lower-case letters, digits, '_' and '-'; no spaces)")])


def _q(text: str) -> str:
    """A YAML scalar for any text (a JSON string is a valid YAML double-quoted scalar)."""
    return json.dumps(" ".join(str(text).split()), ensure_ascii=False)


def starter_text(
    question: str,
    urls: list[str],
    *,
    charter_id: str | None = None,
    title: str | None = None,
    sections: list[str] | None = None,
) -> tuple[str, str]:
    """(charter id, commented YAML text) of a starter charter; raises CharterError on bad input."""
    from .charter import parse_charter

    question = " ".join(question.split())
    if not question:
        raise CharterError("<charter init>", [("question", "must not be empty")])
    if not urls:
        raise CharterError("<charter init>", [("urls", "give at least one URL to start from")])
    domains = list(dict.fromkeys(_domain(u, f"urls.{i}") for i, u in enumerate(urls)))
    if charter_id is not None:
        _check_id(charter_id)  # the id names the file: checked as given, never tidied first
    cid = charter_id or _slug(question)
    questions = [question, *[" ".join(s.split()) for s in sections or [] if s.strip()]]
    criterion = question.rstrip("?. ") + ": answered with at least one verbatim, dated quote"
    lines = [
        "# A brt task charter: a starter written by `brt charter init`. Edit it, then check it with",
        "# `brt charter validate FILE`. The fields are explained in docs/charters.md; the JSON Schema",
        "# comes from `brt charter schema`. Paths are relative to this file's folder.",
        f"id: {json.dumps(cid)}  # names the store; [a-z0-9][a-z0-9_-]{{0,63}}",
        f"title: {_q(title or _title(question))}",
        f"goal: {_q(question)}",
        "# Pages are read only from these hosts: a domain allows its subdomains, an IP address or localhost",
        "# only itself. Redirects and subresources are checked too.",
        "allowed_domains:",
        *[f"  - {_q(d)}" for d in domains],
        "# Where the harvest starts: absolute http(s) URLs on allowed_domains.",
        "seeds:",
        *[f"  - {_q(u)}" for u in urls],
        "# What the synthesis is judged by: `brt synthesize` gives each criterion a verdict (covered, partial,",
        "# not covered) with the blocks that support it. Name what must be cited.",
        "acceptance:",
        f"  - {_q(criterion)}",
        "outputs:",
        f"  doc: {_q(f'out/{cid}.md')}  # the Markdown report; the JSON goes beside it (same stem)",
        "  sections:  # one per question; each is answered with evidence blocks or a Gap",
    ]
    for q in questions:
        lines += [
            f"    - title: {_q(_title(q))}",
            f"      question: {_q(q)}",
            "      # label: SHORT        # optional short name printed in evidence blocks",
            "      # concept: Topic > Subtopic   # optional routing hint for the concept index",
        ]
    lines += [
        "harvest:",
        "  max_pages: 50     # pages stored at most",
        "  max_depth: 1      # link hops from the seeds (0 = the seeds only), within allowed_domains",
        "  concurrency: 4",
        "  timeout_s: 30     # a page's whole time budget",
        "  obey_robots: true",
        "  javascript: true",
        "memory:",
        "  use_concept_index: true",
        "  persist: false    # true: /clean writes the snapshot but keeps the store",
        "retrieval:",
        "  k: 5              # evidence blocks per section at most",
        "  min_score: null   # the evidence bar, a probability (0-1); null = the threshold fitted with the scorer",
        "",
    ]
    text = "\n".join(lines)
    import yaml

    parse_charter(yaml.safe_load(text), source="<charter init>")  # valid by construction, or a clear error
    return cid, text


def charter_init(
    question: str,
    urls: list[str],
    *,
    charter_id: str | None = None,
    title: str | None = None,
    sections: list[str] | None = None,
    out: str | Path | None = None,
    force: bool = False,
    within: list[Path] | None = None,
) -> StarterCharter:
    """Write a starter charter to ``out`` (default ``./<id>.yaml``); refuses to overwrite unless ``force`` (a
    symlink there counts as a file, and is replaced, never followed: ``files.write_file``; ``within``: no
    symlinked folder below these roots)."""
    import os

    from .files import write_file

    cid, text = starter_text(question, urls, charter_id=charter_id, title=title, sections=sections)
    path = Path(out).expanduser() if out is not None else Path.cwd() / f"{cid}.yaml"
    if os.path.lexists(path) and not force:
        raise StarterExists(f"{path} exists", advice="init_exists")
    path = write_file(path, text, within=within)
    return StarterCharter(cid, text, path)
