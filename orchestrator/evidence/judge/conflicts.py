"""Conflicts and agreement between sources, within each section of a synthesis (offline, deterministic).

Two evidence blocks of one section, quoted from different pages, *state the same quantity* when they hold
mentions (``quantities.py``) of the same kind (the same unit family, currency, count noun, or a date) whose
contexts match and the names of their sentences are compatible (one name within the other: "Next Paint" and
"Interaction to Next Paint"; never "Largest Contentful Paint" and "Interaction to Next Paint"). A context is
the content words within six words of the mention in its sentence, each weighted 1/(1 + its distance); two
contexts match by their weighted Jaccard index. Then:

- **agreement**: a pair whose contexts match at least ``AGREE_CONTEXT`` (0.3) states the same value, allowing
  for rounding ("4 seconds" and "4.3 seconds", "2 million" and "2.4 million" agree; "November 2019" and
  "November 18, 2019" agree on the month). Mentions that agree are grouped across pages: "3 sources agree on
  2.5 seconds".
- **conflict**: the best pair whose contexts match at least ``SAME_CONTEXT`` (0.5) states different values,
  no pair agrees, and neither page states the other's value about it elsewhere in its quote. Both quotes,
  URLs and last-updated dates are kept.

A page never conflicts with itself; a chunk seen on several pages counts once, for the URL its block cites.

A section's blocks are not all the pages that state a value: the most similar chunk wins the block, and a page
that says the same thing with another figure (an older or a newer page) may not be among them. ``others`` are
statements of pages the section does not cite, found in the store for the quantities its blocks state
(``counter.py``): a conflict may have one of them as a side (``n`` 0, its ``chunk_id`` and quote), never both,
and only when the names of its whole quote are compatible with the block's (a quote that names "Interaction to
Next Paint" is not about a block's "Largest Contentful Paint", whatever sentence of it states the figure); they
take no part in agreements. Each conflict lists its sides newest first (by the page's last-updated date;
an undated side last), so the report shows the newer value first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .quantities import (
    Quantity,
    context_similarity,
    names_compatible,
    names_overlap,
    quantities,
    same_value,
    text_names,
)

__all__ = [
    "AGREE_CONTEXT", "SAME_CONTEXT", "Agreement", "Claim", "Conflict", "SectionBlocks", "find_conflicts", "page_key",
]

SAME_CONTEXT = 0.5
AGREE_CONTEXT = 0.3


@dataclass
class SectionBlocks:
    """What conflict detection needs of one section: its title, label and blocks (n, quote, url, date), and
    ``others``: statements of pages it does not cite (n 0, quote, url, date, chunk_id)."""

    title: str
    label: str
    blocks: list[dict[str, Any]]  # each with n, quote, url, last_updated
    others: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Claim:
    """One side of a conflict: a block's statement of the quantity (``n`` its number), or a sentence of a page
    the section does not cite (``n`` 0, ``chunk_id`` the stored chunk it is a verbatim span of)."""

    n: int
    url: str
    last_updated: str | None
    quote: str
    value: str  # the mention as written
    chunk_id: str | None = None
    origin: str = "harvest"  # how the cited page entered the store ("add_page": added without a harvest)

    def to_json(self) -> dict[str, Any]:
        doc = {"n": self.n, "url": self.url, "last_updated": self.last_updated, "value": self.value,
               "quote": self.quote, "origin": self.origin}
        if self.chunk_id is not None:
            doc["chunk_id"] = self.chunk_id
        return doc


@dataclass
class Conflict:
    section: str
    label: str
    kind: str
    about: list[str]  # the context words both mentions share
    a: Claim
    b: Claim

    def to_json(self) -> dict[str, Any]:
        return {"section": self.section, "label": self.label, "kind": self.kind, "about": self.about,
                "a": self.a.to_json(), "b": self.b.to_json()}


@dataclass
class Agreement:
    section: str
    label: str
    kind: str
    value: str
    about: list[str]
    blocks: list[int] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)

    @property
    def sources(self) -> int:
        return len(self.urls)

    def to_json(self) -> dict[str, Any]:
        return {"section": self.section, "label": self.label, "kind": self.kind, "value": self.value,
                "about": self.about, "sources": self.sources, "blocks": self.blocks, "urls": self.urls}


def page_key(url: str) -> str:
    """The page a URL stands for however it is spelled (WHATWG: host case, default port, dot segments; the
    path without a trailing slash, the query)."""
    from ...url_safety import parse

    parts = parse(url)
    if parts is None:
        return url
    return f"{parts.hostname}{parts.path.rstrip('/') or '/'}{parts.query or '?'}"


def same_quantity(a: Quantity, b: Quantity) -> float:
    """How well two mentions match as statements of one quantity: the weighted Jaccard index of their
    contexts when they are of one kind and their sentences' names are compatible, else 0."""
    if a.kind != b.kind or not names_compatible(a, b):
        return 0.0
    return context_similarity(a, b)


def find_conflicts(sections: list[SectionBlocks]) -> tuple[list[Conflict], list[Agreement]]:
    """Conflicts and agreements between the blocks of each section (see the module docstring)."""
    conflicts: list[Conflict] = []
    agreements: list[Agreement] = []
    for section in sections:
        c, a = _section(section)
        conflicts += c
        agreements += a
    return conflicts, agreements


def _section(section: SectionBlocks) -> tuple[list[Conflict], list[Agreement]]:
    cited = len(section.blocks)
    blocks = [*section.blocks, *section.others]  # the others: after every block, never a pair of their own
    mentions = [quantities(str(b.get("quote") or "")) for b in blocks]
    named = [text_names(str(b.get("quote") or "")) for b in blocks]  # what each whole quote names
    pages = [page_key(str(b.get("url") or "")) for b in blocks]
    conflicts: list[Conflict] = []
    seen: set[tuple[frozenset[str], frozenset[str], str]] = set()  # one conflict per page pair and values
    # union-find over (block, mention) nodes linked by agreement across pages
    parent: dict[tuple[int, int], tuple[int, int]] = {}

    def find(x: tuple[int, int]) -> tuple[int, int]:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i in range(cited):
        for j in range(i + 1, len(blocks)):
            if pages[i] == pages[j]:
                continue
            other = j >= cited
            if other and not names_overlap(named[i], named[j]):
                continue  # a page no block cites that names another subject in its quote is about something else
            for ia, qa in enumerate(mentions[i]):
                scored = [(same_quantity(qa, qb), ib, qb) for ib, qb in enumerate(mentions[j])]
                agreeing = [m for m in scored if m[0] >= AGREE_CONTEXT and same_value(qa, m[2])]
                for _, ib, _ in [] if other else agreeing:  # an uncited page agrees with no one in the report
                    parent[find((i, ia))] = find((j, ib))
                matches = [m for m in scored if m[0] >= SAME_CONTEXT]
                if agreeing or not matches:
                    continue
                score, ib, qb = max(matches, key=lambda m: (m[0], -m[1]))
                # a page that states the other's value about the same thing elsewhere does not contradict it
                if any(same_value(o, qb) and same_quantity(o, qb) >= AGREE_CONTEXT for o in mentions[i]):
                    continue
                key = (frozenset((pages[i], pages[j])), frozenset((qa.shown, qb.shown)), qa.kind)
                if key in seen:
                    continue
                seen.add(key)
                a, b = _newest_first(_claim(blocks[i], qa), _claim(blocks[j], qb))
                conflicts.append(
                    Conflict(
                        section=section.title,
                        label=section.label,
                        kind=qa.kind,
                        about=sorted(set(qa.context) & set(qb.context)),
                        a=a,
                        b=b,
                    )
                )
    groups: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for node in list(parent):
        groups.setdefault(find(node), []).append(node)
    agreements: list[Agreement] = []
    for members in groups.values():
        members.sort()
        urls = list(dict.fromkeys(str(blocks[i].get("url")) for i, _ in members))
        if len({pages[i] for i, _ in members}) < 2:
            continue
        first = mentions[members[0][0]][members[0][1]]
        shared = set.intersection(*(set(mentions[i][k].context) for i, k in members))
        agreements.append(
            Agreement(
                section=section.title,
                label=section.label,
                kind=first.kind,
                value=first.shown,
                about=sorted(shared) or sorted(first.context),
                blocks=sorted({int(blocks[i].get("n") or 0) for i, _ in members}),
                urls=urls,
            )
        )
    agreements.sort(key=lambda a: (a.blocks, a.value))
    return conflicts, agreements


def _claim(block: dict[str, Any], q: Quantity) -> Claim:
    return Claim(
        n=int(block.get("n") or 0),
        url=str(block.get("url") or ""),
        last_updated=block.get("last_updated"),
        quote=str(block.get("quote") or ""),
        value=q.shown,
        chunk_id=None if block.get("n") else block.get("chunk_id"),
        origin=str(block.get("origin") or "harvest"),
    )


def _newest_first(a: Claim, b: Claim) -> tuple[Claim, Claim]:
    """The two sides with the more recently updated page first; an undated side after a dated one; else as
    found."""
    if b.last_updated and (not a.last_updated or b.last_updated > a.last_updated):
        return b, a
    return a, b
