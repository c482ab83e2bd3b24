"""The concept map as an inline SVG, drawn without any library: a layered layout by depth.

Each concept sits in the row of its depth (the longest chain of is-a / part-of parents from the root);
within a row, concepts are ordered by the mean position of their parents (barycentre, two sweeps), so edges
cross less. is-a edges are solid, part-of dashed, influences dotted grey. Concepts the synthesis routed a
section to are drawn with a thick border. At most ``MAX_NODES`` concepts are drawn (those routed to, their
ancestors, then the best supported); the caption says how many were left out. Every label is escaped.
"""

from __future__ import annotations

from collections import defaultdict
from html import escape
from typing import Any

__all__ = ["MAX_NODES", "render_svg"]

MAX_NODES = 60
_ROW = 86
_NODE_H = 30
_GAP = 18
_CHAR = 6.6
_MAX_LABEL = 28


def _label(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= _MAX_LABEL else text[: _MAX_LABEL - 1] + "…"


def render_svg(concepts: list[dict[str, Any]], edges: list[dict[str, Any]], highlight: set[str] | None = None) -> str:
    """An ``<svg>`` element (empty string when there are no concepts besides the root)."""
    nodes = {str(c["id"]): c for c in concepts}
    if len(nodes) <= 1:
        return ""
    highlight = {h for h in (highlight or set()) if h in nodes}
    hier = [(str(e["source"]), str(e["target"])) for e in edges
            if e.get("relation", e.get("type")) != "influences" and e["source"] in nodes and e["target"] in nodes]
    parents: dict[str, list[str]] = defaultdict(list)
    for u, v in hier:
        parents[v].append(u)
    depth = _depths(nodes, parents)
    keep = _choose(nodes, parents, highlight)
    width = {n: max(60.0, len(_label(nodes[n].get("label") or n)) * _CHAR + 20) for n in keep}
    x, rows, total = _layout(nodes, keep, depth, parents, width)
    height = (max(rows) + 1) * _ROW + 20
    y = {n: 20 + depth[n] * _ROW for n in keep}
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="concept-map" role="img" width="{total:.0f}" '
        f'height="{height}" viewBox="0 0 {total:.0f} {height}" aria-label="concept map">',
        "<title>Concept map</title>",
    ]
    out += [_edge_path(e, x, y) for e in edges if str(e.get("source")) in keep and str(e.get("target")) in keep]
    for n in keep:
        c = nodes[n]
        label = str(c.get("label") or n)
        w = width[n]
        classes = ["node", "root" if depth[n] == 0 and not parents.get(n) else "",
                   "hl" if n in highlight else "", "tentative" if c.get("status") == "tentative" else ""]
        tip = f"{c.get('path') or label} · {c.get('support_docs', 0)} page(s) · {c.get('status', '')}"
        out.append(
            f'<g class="{" ".join(k for k in classes if k)}"><title>{escape(tip)}</title>'
            f'<rect x="{x[n] - w / 2:.1f}" y="{y[n]}" width="{w:.1f}" height="{_NODE_H}" rx="7"/>'
            f'<text x="{x[n]:.1f}" y="{y[n] + _NODE_H / 2 + 4:.1f}" text-anchor="middle">'
            f"{escape(_label(label))}</text></g>"
        )
    out.append("</svg>")
    hidden = len(nodes) - len(keep)
    note = f'<p class="note">{hidden} more concept(s) not drawn.</p>' if hidden > 0 else ""
    return "\n".join(out) + note


def _depths(nodes: dict[str, dict[str, Any]], parents: dict[str, list[str]]) -> dict[str, int]:
    """Each concept's depth: the longest chain of parents above it (a cycle is cut where it closes)."""
    depth: dict[str, int] = {}

    def depth_of(n: str, seen: frozenset[str] = frozenset()) -> int:
        if n in depth:
            return depth[n]
        ps = [p for p in parents.get(n, []) if p not in seen]
        depth[n] = 0 if not ps else 1 + max(depth_of(p, seen | {n}) for p in ps)
        return depth[n]

    for n in nodes:
        depth_of(n)
    return depth


def _layout(
    nodes: dict[str, dict[str, Any]],
    keep: set[str],
    depth: dict[str, int],
    parents: dict[str, list[str]],
    width: dict[str, float],
) -> tuple[dict[str, float], dict[int, list[str]], float]:
    """The x centre of each kept concept, the rows by depth (in drawing order) and the drawing's width: rows
    sorted by path, then two barycentre sweeps, then each row centred."""
    rows: dict[int, list[str]] = defaultdict(list)
    for n in nodes:
        if n in keep:
            rows[depth[n]].append(n)
    for d in rows:
        rows[d].sort(key=lambda n: str(nodes[n].get("path") or nodes[n].get("label")))
    x: dict[str, float] = {}

    def place() -> None:
        for d in sorted(rows):
            pos = 0.0
            for n in rows[d]:
                x[n] = pos + width[n] / 2
                pos += width[n] + _GAP

    place()
    for _ in range(2):  # barycentre sweeps
        for d in sorted(rows):
            if d == 0:
                continue
            rows[d].sort(key=lambda n: (sum(x[p] for p in parents.get(n, []) if p in x) /
                                        max(1, sum(1 for p in parents.get(n, []) if p in x)), x[n]))
            place()
    total = max(sum(width[n] + _GAP for n in row) for row in rows.values()) + 20
    for row in rows.values():  # centre each row
        used = sum(width[n] + _GAP for n in row)
        shift = (total - used) / 2
        for n in row:
            x[n] += shift
    return x, rows, total


def _edge_path(e: dict[str, Any], x: dict[str, float], y: dict[str, int]) -> str:
    """One edge as a curve: is-a solid, part-of dashed, influences dotted (drawn between the nodes' middles)."""
    u, v = str(e.get("source")), str(e.get("target"))
    relation = str(e.get("relation", e.get("type")))
    cls = {"part-of": "e-part", "influences": "e-infl"}.get(relation, "e-isa")
    x1, y1, x2, y2 = x[u], y[u] + _NODE_H, x[v], y[v]
    if relation == "influences" or y2 <= y1:
        y1, y2 = y[u] + _NODE_H / 2, y[v] + _NODE_H / 2
    mid = (y1 + y2) / 2
    return (f'<path class="{cls}" d="M{x1:.1f},{y1:.1f} C{x1:.1f},{mid:.1f} {x2:.1f},{mid:.1f} '
            f'{x2:.1f},{y2:.1f}"><title>{escape(relation)}</title></path>')


def _choose(nodes: dict[str, dict[str, Any]], parents: dict[str, list[str]], highlight: set[str]) -> set[str]:
    if len(nodes) <= MAX_NODES:
        return set(nodes)
    keep: set[str] = set()

    def with_ancestors(n: str) -> None:
        stack = [n]
        while stack:
            m = stack.pop()
            if m not in keep:
                keep.add(m)
                stack.extend(parents.get(m, []))

    for n in sorted(highlight):
        with_ancestors(n)
    for n in sorted(nodes, key=lambda n: (-int(nodes[n].get("support_docs") or 0), n)):
        if len(keep) >= MAX_NODES:
            break
        with_ancestors(n)
    return keep
