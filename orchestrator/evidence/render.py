"""The Markdown of a synthesis: each section's blocks or Gap, the audit lines, and the concepts used."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .results import display_url, origin_mark

if TYPE_CHECKING:
    from ..charter import Charter
    from .results import SectionResult, SynthesisResult


def render_markdown(charter: Charter, result: SynthesisResult) -> str:
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


def section_lines(result: SynthesisResult, section: SectionResult) -> list[str]:
    """Markdown lines about conflicts and agreement between the section's sources (empty when none)."""
    from ..untrusted import markdown_escape as md  # values and quotes come from pages

    by_n = {b.n: b for b in section.blocks}
    lines: list[str] = []
    for c in getattr(result, "conflicts", []):
        if c.section != section.title:
            continue
        about = f" (about: {', '.join(md(w) for w in c.about)})" if c.about else ""
        sides = " vs ".join(f"{md(x.value)} (last updated: {md(x.last_updated or 'unknown')})" for x in (c.a, c.b))
        lines.append(f"[{section.label} Conflict] the sources disagree, newest first: {sides}{about}")
        for claim in (c.a, c.b):  # a block as printed above; a page no block cites: its sentence, URL and date
            block = by_n.get(claim.n) if claim.n else None
            date = md(claim.last_updated or "unknown")
            shown = block.markdown if block is not None else (
                f'"{md(claim.quote)}" — {md(display_url(claim.url))} (last updated: {date}){origin_mark(claim.origin)}'
            )
            lines.append(f"  - {shown}")
        lines.append("")
    agreements = [a for a in getattr(result, "agreements", []) if a.section == section.title]
    if agreements:
        said = "; ".join(
            f"{a.sources} sources agree on {md(a.value)} ({', '.join(f'#{n}' for n in a.blocks)})"
            for a in agreements
        )
        lines += [f"[{section.label} Agreement] {said}", ""]
    return lines


def acceptance_lines(charter: Charter, result: SynthesisResult) -> list[str]:
    """The "Acceptance criteria" section: each criterion with its verdict and the reason."""
    verdicts = getattr(result, "acceptance", [])
    if not charter.acceptance:
        return []
    lines = ["## Acceptance criteria", ""]
    if not verdicts:  # not judged (no audit hook ran)
        return lines + [f"- {a}" for a in charter.acceptance] + [""]
    for v in verdicts:
        lines.append(f"- **{v.verdict}**: {v.criterion} — {v.reason}")
    return lines + [""]


def concept_diagram(ci: Any, routes: dict[int, str | None]) -> str:
    """A Mermaid diagram of the concepts the sections were routed to (with their ancestors)."""
    used = [n for n in (ci.find(p) for p in routes.values() if p) if n] if ci is not None else []
    if not used:
        return ""
    from concept_index import render_mermaid

    return "\n## Concepts used\n\n```mermaid\n" + render_mermaid(ci, used, highlight=used) + "```\n"
