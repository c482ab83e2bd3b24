"""The report as Markdown: the recorded synthesis (evidence blocks, gaps, conflicts, agreement, acceptance
verdicts), then the sources table and the harvest summary.

Everything is rebuilt from the synthesis's records, never copied from the Markdown it recorded (a snapshot's
records are whatever its file says), and every text that a page, a server, a charter or a snapshot controls is
escaped (``untrusted.markdown_escape``: one line stays one line, and no link, image, code span, emphasis or HTML
can appear): a title ``<img src=x onerror=…>`` or ``[x](javascript:…)`` is shown as written, never rendered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..evidence import display_url
from ..evidence.results import ADDED_MARK, origin_mark
from ..untrusted import evidence_line, gap_line, markdown_escape
from .bundle import AuditBundle

if TYPE_CHECKING:
    from ..synthesis_record import BlockRecord, ClaimRecord, GapRecord, SectionRecord, SourceRecord, SynthesisRecord

__all__ = ["render_md", "synthesis_markdown"]


def _md(value: object) -> str:
    """A value as one escaped line of Markdown (None: empty)."""
    return markdown_escape(" ".join(str(value if value is not None else "").split()))


def _int(value: object) -> int:
    try:
        return int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError):
        return 0


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _mark(bundle: AuditBundle, source: BlockRecord | SourceRecord | ClaimRecord) -> str:
    """`` (added without a harvest)`` after a source no harvest stored (``bundle.added``)."""
    return origin_mark("add_page" if bundle.added(source.url, source.origin) else "harvest")


def _block_line(bundle: AuditBundle, label: str, block: BlockRecord) -> str:
    line = evidence_line(_md(label), block.n, block.quote, display_url(block.url), block.last_updated)
    line += _mark(bundle, block)
    for src in block.also_at:
        line += (f"; also at {markdown_escape(display_url(src.url))}"
                 f" (last updated: {_md(src.last_updated or 'unknown')}){_mark(bundle, src)}")
    return line


def _gap_line(label: str, gap: GapRecord, question: str | None) -> str:
    asked = gap.question or question
    return gap_line(_md(label), _md(asked), gap.searched_chunks, gap.searched_pages)


def _section_lines(bundle: AuditBundle, syn: SynthesisRecord, section: SectionRecord) -> list[str]:
    """The section's conflicts (each side with its block) and agreement between its sources."""
    title, label = section.title, section.label or section.title
    by_n = {b.n: b for b in section.blocks}
    lines: list[str] = []
    for c in syn.conflicts:
        if c.section != title:
            continue
        about = ", ".join(_md(w) for w in c.about)
        sides = " vs ".join(f"{_md(x.value)} (last updated: {_md(x.last_updated or 'unknown')})" for x in (c.a, c.b))
        lines.append(f"[{_md(label)} Conflict] the sources disagree, newest first: {sides}"
                     + (f" (about: {about})" if about else ""))
        for claim in (c.a, c.b):  # a block as listed; a page no block cites: its sentence, URL and date
            block = by_n.get(claim.n) if claim.n else None
            lines.append("  - " + (_block_line(bundle, str(label), block) if block else
                                   f'"{_md(claim.quote)}" — {_md(display_url(claim.url))} '
                                   f"(last updated: {_md(claim.last_updated or 'unknown')})"
                                   f"{_mark(bundle, claim)}"))
        lines.append("")
    said = [
        f"{g.sources} sources agree on {_md(g.value)} ({', '.join(f'#{n}' for n in g.blocks)})"
        for g in syn.agreements if g.section == title
    ]
    if said:
        lines += [f"[{_md(label)} Agreement] " + "; ".join(said), ""]
    return lines


def _synthesis_lines(bundle: AuditBundle) -> list[str]:
    syn = bundle.synthesis
    lines = [f"# {_md(bundle.title)}", ""]
    if bundle.goal:
        lines += [f"Goal: {_md(bundle.goal)}", ""]
    if bundle.notes:
        lines += [f"Notes: {_md(bundle.notes)}", ""]
    lines += [f"Charter {_md(bundle.charter_id)} · generated {_md(syn.generated_at)} · embedding model "
              f"{_md(syn.embedding_model)}", ""]
    for s in bundle.sections:
        label = str(s.label or s.title or "")
        lines += [f"## {_md(s.title)}", ""]
        if s.question and s.question != s.title:
            lines += [f"_{_md(s.question)}_", ""]
        lines += [x for b in s.blocks for x in (_block_line(bundle, label, b), "")]
        lines += [x for g in s.gaps for x in (_gap_line(label, g, s.question), "")]
        lines += _section_lines(bundle, syn, s)
    if syn.acceptance:
        lines += ["## Acceptance criteria", ""]
        lines += [f"- **{_md(v.verdict)}**: {_md(v.criterion)} — {_md(v.reason)}" for v in syn.acceptance]
        lines.append("")
    return lines


def synthesis_markdown(bundle: AuditBundle) -> str:
    """The synthesis part of the report (evidence, gaps, conflicts, agreement, acceptance) as Markdown: what
    ``brt check`` reads a synthesis JSON as."""
    return "\n".join(_synthesis_lines(bundle)).rstrip() + "\n"


def render_md(bundle: AuditBundle) -> str:
    out = ["\n".join(_synthesis_lines(bundle)).rstrip()]
    out += ["", "## Sources", "", "| URL | Title | Last updated | Chunks cited | Blocks | Origin |",
            "|---|---|---|---|---|---|"]
    for src in bundle.sources():
        out.append(
            f"| {_md(src.url)} | {_md(src.title)} | {_md(src.last_updated or 'unknown')} | "
            f"{src.chunks_cited} of {src.chunks} | {src.blocks} | {ADDED_MARK if src.added else 'harvest'} |"
        )
    h = bundle.harvest()
    out += ["", "## Harvest", ""]
    out.append(f"- runs: {h['runs']}; URLs attempted: {h['urls_attempted']}; "
               + ", ".join(f"{n} {_md(k)}" for k, n in sorted(h["outcomes"].items())))
    last = _dict(h["last_summary"])
    if last:
        for outcome in ("skipped", "blocked", "failed"):
            for reason, n in sorted(_dict(last.get(outcome)).items(), key=lambda kv: str(kv[0])):
                out.append(f"- last run, {outcome}: {_int(n)} × {_md(reason)}")
        out.append(f"- last run: {_int(last.get('stored'))} stored, {_int(last.get('bytes'))} bytes in "
                   f"{_float(last.get('elapsed_s')):.1f} s")
    origin = (f"snapshot {_md(bundle.path.name)} (sha256 {_md(str(_dict(bundle.manifest).get('sha256'))[:16])}…)"
              if bundle.origin == "snapshot" else f"the store of charter {_md(bundle.charter_id)}")
    out += ["", f"_Report of {origin}._", ""]
    return "\n".join(out)


def _float(value: object) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return 0.0
