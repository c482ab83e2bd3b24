"""The report as Markdown: the recorded synthesis (evidence blocks, gaps, conflicts, agreement, acceptance
verdicts), then the sources table and the harvest summary.

Everything is rebuilt from the synthesis's records, never copied from the Markdown it recorded (a snapshot's
records are whatever its file says), and every text that a page, a server, a charter or a snapshot controls is
escaped (``untrusted.markdown_escape``: one line stays one line, and no link, image, code span, emphasis or HTML
can appear): a title ``<img src=x onerror=…>`` or ``[x](javascript:…)`` is shown as written, never rendered.
"""

from __future__ import annotations

from typing import Any

from ..evidence import display_url
from ..evidence.results import ADDED_MARK, origin_mark
from ..untrusted import evidence_line, gap_line, markdown_escape
from .bundle import AuditBundle

__all__ = ["render_md", "synthesis_markdown"]


def _md(value: object) -> str:
    """A value as one escaped line of Markdown (None: empty)."""
    return markdown_escape(" ".join(str(value if value is not None else "").split()))


def _int(value: object) -> int:
    try:
        return int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError):
        return 0


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _mark(bundle: AuditBundle, source: dict[str, Any]) -> str:
    """`` (added without a harvest)`` after a source no harvest stored (``bundle.added``)."""
    return origin_mark("add_page" if bundle.added(source.get("url"), source.get("origin")) else "harvest")


def _block_line(bundle: AuditBundle, label: str, block: dict[str, Any]) -> str:
    line = evidence_line(_md(label), _int(block.get("n")), str(block.get("quote") or ""),
                         display_url(str(block.get("url") or "")), _date(block.get("last_updated")))
    line += _mark(bundle, block)
    for src in _list(block.get("also_at")):
        src = _dict(src)
        line += (f"; also at {markdown_escape(display_url(str(src.get('url') or '')))}"
                 f" (last updated: {_md(_date(src.get('last_updated')) or 'unknown')}){_mark(bundle, src)}")
    return line


def _date(value: object) -> str | None:
    return None if value is None else str(value)


def _gap_line(label: str, gap: dict[str, Any], question: object) -> str:
    asked = gap.get("question") or question
    return gap_line(_md(label), _md(asked), _int(gap.get("searched_chunks")), _int(gap.get("searched_pages")))


def _section_lines(bundle: AuditBundle, syn: dict[str, Any], section: dict[str, Any]) -> list[str]:
    """The section's conflicts (each side with its block) and agreement between its sources."""
    title, label = section.get("title"), section.get("label") or section.get("title")
    by_n = {_int(b.get("n")): b for b in map(_dict, _list(section.get("blocks")))}
    lines: list[str] = []
    for c in map(_dict, _list(syn.get("conflicts"))):
        if c.get("section") != title:
            continue
        a, b = _dict(c.get("a")), _dict(c.get("b"))
        about = ", ".join(_md(w) for w in _list(c.get("about")))
        sides = " vs ".join(f"{_md(x.get('value'))} (last updated: {_md(_date(x.get('last_updated')) or 'unknown')})"
                            for x in (a, b))
        lines.append(f"[{_md(label)} Conflict] the sources disagree, newest first: {sides}"
                     + (f" (about: {about})" if about else ""))
        for claim in (a, b):  # a block as listed; a page no block cites: its sentence, URL and date
            block = by_n.get(_int(claim.get("n"))) if _int(claim.get("n")) else None
            lines.append("  - " + (_block_line(bundle, str(label), block) if block else
                                   f'"{_md(claim.get("quote"))}" — {_md(display_url(str(claim.get("url") or "")))} '
                                   f"(last updated: {_md(_date(claim.get('last_updated')) or 'unknown')})"
                                   f"{_mark(bundle, claim)}"))
        lines.append("")
    said = [
        f"{_int(g.get('sources'))} sources agree on {_md(g.get('value'))} "
        f"({', '.join(f'#{_int(n)}' for n in _list(g.get('blocks')))})"
        for g in map(_dict, _list(syn.get("agreements"))) if g.get("section") == title
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
    lines += [f"Charter {_md(bundle.charter_id)} · generated {_md(syn.get('generated_at'))} · embedding model "
              f"{_md(syn.get('embedding_model'))}", ""]
    for s in map(_dict, bundle.sections):
        label = str(s.get("label") or s.get("title") or "")
        lines += [f"## {_md(s.get('title'))}", ""]
        if s.get("question") and s.get("question") != s.get("title"):
            lines += [f"_{_md(s.get('question'))}_", ""]
        lines += [x for b in map(_dict, _list(s.get("blocks"))) for x in (_block_line(bundle, label, b), "")]
        lines += [x for g in map(_dict, _list(s.get("gaps"))) for x in (_gap_line(label, g, s.get("question")), "")]
        lines += _section_lines(bundle, syn, s)
    verdicts = [_dict(v) for v in _list(syn.get("acceptance"))]
    if verdicts:
        lines += ["## Acceptance criteria", ""]
        lines += [f"- **{_md(v.get('verdict'))}**: {_md(v.get('criterion'))} — {_md(v.get('reason'))}"
                  for v in verdicts]
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
