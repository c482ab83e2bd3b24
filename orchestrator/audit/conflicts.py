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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .quantities import Quantity, context_similarity, names_compatible, quantities, same_value

__all__ = ["AGREE_CONTEXT", "SAME_CONTEXT", "Agreement", "Claim", "Conflict", "SectionBlocks", "find_conflicts"]

SAME_CONTEXT = 0.5
AGREE_CONTEXT = 0.3


@dataclass
class SectionBlocks:
    """What conflict detection needs of one section: its title, label and blocks (n, quote, url, date)."""

    title: str
    label: str
    blocks: list[dict[str, Any]]  # each with n, quote, url, last_updated


@dataclass
class Claim:
    """One side of a conflict: a block's statement of the quantity."""

    n: int
    url: str
    last_updated: str | None
    quote: str
    value: str  # the mention as written
    origin: str = "harvest"  # how the cited page entered the store ("add_page": added without a harvest)

    def to_json(self) -> dict[str, Any]:
        return {"n": self.n, "url": self.url, "last_updated": self.last_updated, "value": self.value,
                "quote": self.quote, "origin": self.origin}


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


def _page_key(url: str) -> str:
    """One page however its URL is spelled (WHATWG: host case, default port, dot segments)."""
    from ..url_safety import parse

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
    blocks = section.blocks
    mentions = [quantities(str(b.get("quote") or "")) for b in blocks]
    pages = [_page_key(str(b.get("url") or "")) for b in blocks]
    conflicts: list[Conflict] = []
    seen: set[tuple[frozenset[str], frozenset[str], str]] = set()  # one conflict per page pair and values
    # union-find over (block, mention) nodes linked by agreement across pages
    parent: dict[tuple[int, int], tuple[int, int]] = {}

    def find(x: tuple[int, int]) -> tuple[int, int]:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i in range(len(blocks)):
        for j in range(i + 1, len(blocks)):
            if pages[i] == pages[j]:
                continue
            for ia, qa in enumerate(mentions[i]):
                scored = [(same_quantity(qa, qb), ib, qb) for ib, qb in enumerate(mentions[j])]
                agreeing = [m for m in scored if m[0] >= AGREE_CONTEXT and same_value(qa, m[2])]
                for _, ib, _ in agreeing:
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
                conflicts.append(
                    Conflict(
                        section=section.title,
                        label=section.label,
                        kind=qa.kind,
                        about=sorted(set(qa.context) & set(qb.context)),
                        a=_claim(blocks[i], qa),
                        b=_claim(blocks[j], qb),
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
        origin=str(block.get("origin") or "harvest"),
    )
