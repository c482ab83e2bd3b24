"""Rendering the concept DAG: an indented tree, JSON, Mermaid and Graphviz dot."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from .dag import INFLUENCES, PART_OF, ROOT
from .graph import ConceptIndex

_ARROWS = {"is-a": "-->", "part-of": "-.->|part-of|", "influences": "==>|influences|"}


def render_tree(ci: ConceptIndex) -> str:
    """Indented tree along primary parents; extra parents and influences are noted on the node's line."""
    lines = ["root"]

    def walk(n: str, depth: int) -> None:
        for c in ci.children(n):
            if ci.primary_parent(c) != n:
                continue
            d = ci.node(c)
            extra = [p for p in ci.parents(c) if p != n]
            notes = [f"{len(d['support'])} docs", d["status"]]
            if ci.edge_type(n, c) == PART_OF:
                notes.append("part-of")
            if extra:
                notes.append("also under " + ", ".join(ci.label(p) for p in extra))
            infl = [v for v in ci.G.successors(c) if ci.edge_type(c, v) == INFLUENCES]
            if infl:
                notes.append("influences " + ", ".join(ci.label(v) for v in infl))
            lines.append("  " * depth + f"- {d['label']}  [{'; '.join(notes)}]")
            walk(c, depth + 1)

    walk(ROOT, 1)
    return "\n".join(lines) + "\n"


def render_json(ci: ConceptIndex) -> str:
    return json.dumps(ci.to_json(), indent=2, ensure_ascii=False) + "\n"


def _mid(node_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", node_id)


def _mlabel(text: str) -> str:
    return text.replace('"', "'").replace("[", "(").replace("]", ")")


def render_mermaid(ci: ConceptIndex, nodes: Iterable[str] | None = None, *, highlight: Iterable[str] = ()) -> str:
    """A Mermaid flowchart of the whole DAG, or of ``nodes`` with their ancestors."""
    keep = set(ci.G.nodes) if nodes is None else set()
    if nodes is not None:
        for n in nodes:
            if n in ci.G:
                keep |= {n} | ci.ancestors(n)
    keep.add(ROOT)
    hl = set(highlight)
    lines = ["flowchart TD"]
    for n in ci.ordered_nodes():
        if n in keep:
            shape = f'(("{_mlabel(ci.label(n))}"))' if n == ROOT else f'["{_mlabel(ci.label(n))}"]'
            lines.append(f"  {_mid(n)}{shape}")
    for u, v, d in ci.G.edges(data=True):
        if u in keep and v in keep:
            lines.append(f"  {_mid(u)} {_ARROWS[d['type']]} {_mid(v)}")
    for n in sorted(hl & keep):
        lines.append(f"  style {_mid(n)} stroke-width:3px")
    return "\n".join(lines) + "\n"


def render_dot(ci: ConceptIndex) -> str:
    lines = ["digraph concepts {", "  rankdir=TB;", "  node [shape=box];"]
    for n in ci.ordered_nodes():
        d = ci.node(n)
        style = ", style=dashed" if d["status"] == "tentative" else ""
        label = ci.label(n).replace('"', '\\"')
        lines.append(f'  "{n}" [label="{label}"{style}];')
    styles = {
        "is-a": "",
        "part-of": ' [style=dashed, label="part-of"]',
        "influences": ' [color=gray, label="influences"]',
    }
    for u, v, d in ci.G.edges(data=True):
        lines.append(f'  "{u}" -> "{v}"{styles[d["type"]]};')
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(ci: ConceptIndex, fmt: str) -> str:
    return {"tree": render_tree, "json": render_json, "mermaid": render_mermaid, "dot": render_dot}[fmt](ci)
