"""The Markdown of a synthesis: each section's blocks or Gap, the audit lines, and the concepts used."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..charter import Charter
    from .results import SynthesisResult


def render_markdown(charter: Charter, result: SynthesisResult) -> str:
    from ..audit.hooks import acceptance_lines, section_lines

    lines = [f"# {charter.title}", ""]
    if charter.goal:
        lines += [f"Goal: {charter.goal}", ""]
    lines += [
        f"Charter `{charter.id}` · generated {result.generated_at} · evidence threshold {result.min_score:.2f} "
        f"({result.model})",
        "",
    ]
    for s in result.sections:
        lines += [f"## {s.title}", ""]
        if s.question != s.title:
            lines += [f"_{s.question}_", ""]
        for b in s.blocks:
            lines += [b.markdown, ""]
        for g in s.gaps:
            lines += [g.markdown, ""]
        lines += section_lines(result, s)  # conflicts and agreement between sources
    lines += acceptance_lines(charter, result)  # each acceptance criterion with its verdict
    return "\n".join(lines).rstrip() + "\n"


def concept_diagram(ci: Any, routes: dict[int, str | None]) -> str:
    """A Mermaid diagram of the concepts the sections were routed to (with their ancestors)."""
    used = [n for n in (ci.find(p) for p in routes.values() if p) if n] if ci is not None else []
    if not used:
        return ""
    from concept_index import render_mermaid

    return "\n## Concepts used\n\n```mermaid\n" + render_mermaid(ci, used, highlight=used) + "```\n"
