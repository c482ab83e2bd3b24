"""The report as Markdown: the recorded synthesis (evidence blocks, gaps, conflicts, acceptance verdicts),
then the sources table and the harvest summary."""

from __future__ import annotations

from .bundle import AuditBundle

__all__ = ["render_md"]


def _cell(text: object) -> str:
    return " ".join(str(text if text is not None else "").split()).replace("|", "\\|")


def render_md(bundle: AuditBundle) -> str:
    syn = bundle.synthesis
    body = str(syn.get("markdown") or "").rstrip()
    if not body:  # a synthesis recorded without its Markdown: the blocks' own lines
        lines = [f"# {bundle.title}", ""]
        for s in bundle.sections:
            lines += [f"## {s.get('title')}", ""]
            lines += [str(b.get("markdown")) + "\n" for b in s.get("blocks") or []]
            lines += [str(g.get("markdown")) + "\n" for g in s.get("gaps") or []]
        body = "\n".join(lines).rstrip()
    out = [body, "", "## Sources", "", "| URL | Title | Last updated | Chunks cited | Blocks |"]
    out.append("|---|---|---|---|---|")
    for src in bundle.sources():
        out.append(
            f"| {_cell(src.url)} | {_cell(src.title)} | {src.last_updated or 'unknown'} | "
            f"{src.chunks_cited} of {src.chunks} | {src.blocks} |"
        )
    h = bundle.harvest()
    out += ["", "## Harvest", ""]
    out.append(f"- runs: {h['runs']}; URLs attempted: {h['urls_attempted']}; "
               + ", ".join(f"{n} {k}" for k, n in sorted(h["outcomes"].items())))
    last = h["last_summary"]
    if last:
        for outcome in ("skipped", "blocked", "failed"):
            for reason, n in sorted((last.get(outcome) or {}).items()):
                out.append(f"- last run, {outcome}: {n} × {_cell(reason)}")
        out.append(f"- last run: {last.get('stored', 0)} stored, {int(last.get('bytes') or 0)} bytes in "
                   f"{float(last.get('elapsed_s') or 0):.1f} s")
    origin = (f"snapshot {bundle.path.name} (sha256 {str((bundle.manifest or {}).get('sha256'))[:16]}…)"
              if bundle.origin == "snapshot" else f"the store of charter {bundle.charter_id}")
    out += ["", f"_Report of {origin}._", ""]
    return "\n".join(out)
