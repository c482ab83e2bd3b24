"""The report as one self-contained HTML file: inline CSS, an inline SVG concept map, no script, no font,
no image, nothing fetched when it is opened (a Content-Security-Policy of ``default-src 'none'`` says so to
the browser too). Every string that comes from a page (quotes, titles, URLs) or from the charter is escaped;
links go only to http(s) URLs.

Contents: the sections with their evidence blocks (quote, link to the source, last-updated date, score,
chunk id, conflict marks) and gaps; the acceptance table; conflicts and agreement between sources; the
sources table (URL, title, last updated, chunks cited); the harvest summary; the concept map.
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..evidence.results import ADDED_MARK
from .bundle import AuditBundle
from .check import CheckReport, ClaimResult
from .concept_svg import render_svg

if TYPE_CHECKING:
    from ..synthesis_record import BlockRecord, ClaimRecord, GapRecord, SourceRecord, SynthesisRecord

__all__ = ["render_check_html", "render_html"]

_CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"

_CSS = """
:root { --ink:#1d232b; --muted:#5b6672; --line:#d9dee4; --bg:#fbfcfd; --accent:#0b5cad; --good:#17733a;
  --part:#8a5a00; --bad:#b3261e; --card:#ffffff; }
* { box-sizing: border-box; }
body { margin:0; font: 15px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif;
  color:var(--ink); background:var(--bg); }
header, main, footer { max-width: 1060px; margin: 0 auto; padding: 0 24px; }
header { padding-top: 28px; }
h1 { font-size: 1.7em; margin: 0 0 6px; }
h2 { font-size: 1.3em; margin: 34px 0 8px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
.meta, .question, .note { color: var(--muted); }
.question { font-style: italic; margin: 0 0 10px; }
nav ul { display:flex; flex-wrap:wrap; gap:6px 14px; padding:0; list-style:none; margin:14px 0 0; }
nav a { color: var(--accent); text-decoration:none; }
.block { background:var(--card); border:1px solid var(--line); border-left:4px solid var(--accent);
  border-radius:6px; padding:10px 14px; margin:10px 0; }
.block.conflict { border-left-color: var(--bad); }
.block blockquote { margin:0 0 6px; font-size:1.02em; }
.cite { font-size: .88em; color: var(--muted); margin:0; overflow-wrap:anywhere; }
.cite a { color: var(--accent); }
.tag { display:inline-block; font-size:.78em; font-weight:600; padding:1px 7px; border-radius:10px;
  background:#e8eef6; color:var(--accent); margin-right:6px; }
.gap { background:#fff7e6; border:1px solid #f0d9a8; border-radius:6px; padding:10px 14px; }
.flag { color: var(--bad); font-weight: 600; }
.agree { color: var(--good); }
table { border-collapse: collapse; width:100%; background:var(--card); font-size:.92em; }
th, td { border:1px solid var(--line); padding:6px 8px; text-align:left; vertical-align:top;
  overflow-wrap:anywhere; }
th { background:#eef2f6; }
td.v-covered, td.v-partial, td.v-not-covered { white-space: nowrap; }
.v-covered { color: var(--good); font-weight:700; }
.v-partial { color: var(--part); font-weight:700; }
.v-not-covered { color: var(--bad); font-weight:700; }
.conflict-card { border:1px solid #efc2bf; background:#fff6f5; border-radius:6px; padding:8px 12px; margin:8px 0; }
.map { overflow-x:auto; background:var(--card); border:1px solid var(--line); border-radius:6px; padding:8px; }
.concept-map text { font: 12px system-ui, sans-serif; fill: var(--ink); }
.concept-map rect { fill:#f3f6fa; stroke:#9aa7b5; stroke-width:1; }
.concept-map .hl rect { fill:#e3efff; stroke: var(--accent); stroke-width:3; }
.concept-map .root rect { fill:#e9ecef; }
.concept-map .tentative rect { stroke-dasharray: 4 3; }
.concept-map path { fill:none; stroke:#7d8a97; stroke-width:1.3; }
.concept-map .e-part { stroke-dasharray: 6 4; }
.concept-map .e-infl { stroke:#b9c2cc; stroke-dasharray: 2 4; }
footer { color: var(--muted); font-size:.85em; padding: 30px 24px 40px; }
@media print { nav { display:none; } .block, .gap { break-inside: avoid; } }
"""


def _e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def _link(url: str, text: str | None = None) -> str:
    """A link to an http(s) URL, as its WHATWG serialisation without userinfo (anything else is shown as text,
    never linked: the one scheme rule, ``url_safety.web_url``)."""
    from ..url_safety import web_url

    shown = _e(text if text is not None else url)
    parsed = web_url(url)
    if parsed is not None:
        return f'<a href="{_e(parsed.href)}" rel="noopener noreferrer nofollow">{shown}</a>'
    return shown


def _display(url: str) -> str:
    from ..url_safety import display

    return display(url)


def _slug(i: int) -> str:
    return f"s{i + 1}"


def render_html(bundle: AuditBundle) -> str:
    """The whole report as one HTML document."""
    syn = bundle.synthesis
    conflicts = bundle.conflict_blocks()
    body: list[str] = []
    nav = [f'<li><a href="#{_slug(i)}">{_e(s.title)}</a></li>' for i, s in enumerate(bundle.sections)]
    nav += ['<li><a href="#acceptance">Acceptance</a></li>', '<li><a href="#conflicts">Conflicts</a></li>',
            '<li><a href="#sources">Sources</a></li>', '<li><a href="#harvest">Harvest</a></li>',
            '<li><a href="#concepts">Concept map</a></li>']
    origin = (f"snapshot {_e(bundle.path.name)} · sha256 {_e(str((bundle.manifest or {}).get('sha256'))[:16])}…"
              if bundle.origin == "snapshot" else f"store of charter {_e(bundle.charter_id)}")
    header = [
        "<header>",
        f"<h1>{_e(bundle.title)}</h1>",
        f'<p class="question">{_e(bundle.goal)}</p>' if bundle.goal else "",
        f'<p class="notes">{_e(bundle.notes)}</p>' if bundle.notes else "",
        f'<p class="meta">Charter <code>{_e(bundle.charter_id)}</code> · generated {_e(syn.generated_at)} · '
        f"evidence threshold {syn.min_score:.2f} ({_e(syn.embedding_model)}) · {origin}</p>",
        f"<nav><ul>{''.join(nav)}</ul></nav>",
        "</header>",
    ]
    for i, s in enumerate(bundle.sections):
        body.append(f'<section id="{_slug(i)}" class="section">')
        body.append(f"<h2>{_e(s.title)}</h2>")
        if s.question and s.question != s.title:
            body.append(f'<p class="question">{_e(s.question)}</p>')
        label = s.label or s.title
        for b in s.blocks:
            marks = conflicts.get((str(s.title), b.n), [])
            flag = "".join(f'<span class="flag">conflict with {_e(m)}</span> ' for m in marks)
            body.append(
                f'<article class="block{" conflict" if marks else ""}" id="{_slug(i)}-b{_e(b.n)}">'
                f"<blockquote>“{_e(b.quote)}”</blockquote>"
                f'<p class="cite"><span class="tag">{_e(label)} Evidence #{_e(b.n)}</span>'
                f"{_link(b.url, _display(b.url))}{_added(bundle, b)} · last updated: "
                f"{_e(b.last_updated or 'unknown')} · "
                f"score {b.score:.3f} · <code>{_e(str(b.chunk_id)[:19])}…</code> {flag}</p>"
                f"{_also_at(bundle, b)}</article>"
            )
        for g in s.gaps:
            body.append(f'<p class="gap"><span class="tag">{_e(label)} Gap</span>{_e(_gap_text(g, s.question))}</p>')
        for a in (a for a in syn.agreements if a.section == s.title):
            body.append(f'<p class="agree">{_e(a.sources)} sources agree on {_e(a.value)} '
                        f'({_e(", ".join(f"#{n}" for n in a.blocks))})</p>')
        body.append("</section>")
    body += _acceptance(syn)
    body += _conflicts(bundle, syn)
    body += _sources(bundle)
    body += _harvest(bundle)
    body += _concepts(bundle)
    footer = (f"<footer>brt {_e(__version__)} · report of {_e(bundle.origin)} {_e(bundle.path.name)} · "
              "no evidence, no claim.</footer>")
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
            '<meta name="referrer" content="no-referrer">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{_e(bundle.title)} · brt report</title>",
            f"<style>{_CSS}</style></head><body>",
            *header,
            "<main>",
            *body,
            "</main>",
            footer,
            "</body></html>",
            "",
        ]
    )


def _gap_text(gap: GapRecord, question: str | None) -> str:
    """What the Gap says beside its tag (``untrusted.gap_text``, the words of every Gap line)."""
    from ..untrusted import gap_text

    return gap_text(str(gap.question or question), gap.searched_chunks, gap.searched_pages)


def _acceptance(syn: SynthesisRecord) -> list[str]:
    rows = syn.acceptance
    out = ['<section id="acceptance"><h2>Acceptance criteria</h2>']
    if not rows:
        return out + ['<p class="note">The charter states no acceptance criteria.</p></section>']
    out.append("<table><thead><tr><th>Criterion</th><th>Verdict</th><th>Why</th></tr></thead><tbody>")
    for v in rows:
        cls = "v-" + str(v.verdict).replace(" ", "-")
        out.append(f"<tr><td>{_e(v.criterion)}</td><td class=\"{_e(cls)}\">{_e(v.verdict)}</td>"
                   f"<td>{_e(v.reason)}</td></tr>")
    return out + ["</tbody></table></section>"]


def _added(bundle: AuditBundle, source: BlockRecord | SourceRecord | ClaimRecord) -> str:
    """A flag after a source no harvest stored (``bundle.added``: a page an agent added with add_page)."""
    if not bundle.added(source.url, source.origin):
        return ""
    return f' <span class="flag added">{_e(ADDED_MARK)}</span>'


def _also_at(bundle: AuditBundle, block: BlockRecord) -> str:
    """The other pages a block cites, each with its date (and flag)."""
    items = []
    for src in block.also_at:
        items.append(f"{_link(src.url, _display(src.url))}{_added(bundle, src)} (last updated: "
                     f"{_e(src.last_updated or 'unknown')})")
    return f'<p class="cite also">also at {"; ".join(items)}</p>' if items else ""


def _conflicts(bundle: AuditBundle, syn: SynthesisRecord) -> list[str]:
    conflicts = syn.conflicts
    agreements = syn.agreements
    out = ['<section id="conflicts"><h2>Conflicts between sources</h2>']
    if not conflicts:
        out.append('<p class="note">No two sources state different values for the same quantity.</p>')
    for c in conflicts:
        out.append('<div class="conflict-card">')
        about = ", ".join(c.about)
        sides = " vs ".join(f"{_e(x.value)} ({_e(x.last_updated or 'undated')})" for x in (c.a, c.b))
        out.append(f'<p><span class="flag">conflict</span> in <b>{_e(c.section)}</b>, newest first: '
                   f'{sides}{" (about: " + _e(about) + ")" if about else ""}</p><ul>')
        for claim in (c.a, c.b):
            which = f"#{_e(claim.n)}" if claim.n else "a page no block cites:"
            out.append(f"<li>{which} “{_e(claim.quote)}” — {_link(claim.url, _display(claim.url))}"
                       f"{_added(bundle, claim)} (last updated: {_e(claim.last_updated or 'unknown')})</li>")
        out.append("</ul></div>")
    if agreements:
        out.append("<h3>Agreement</h3><ul>")
        for a in agreements:
            out.append(f"<li class=\"agree\">{_e(a.section)}: {_e(a.sources)} sources agree on {_e(a.value)}</li>")
        out.append("</ul>")
    return out + ["</section>"]


def _sources(bundle: AuditBundle) -> list[str]:
    out = ['<section id="sources"><h2>Sources</h2>',
           "<table><thead><tr><th>URL</th><th>Title</th><th>Last updated</th><th>Chunks cited</th><th>Blocks</th>"
           "<th>Origin</th></tr></thead><tbody>"]
    for s in bundle.sources():
        origin = f'<span class="flag added">{_e(ADDED_MARK)}</span>' if s.added else "harvest"
        out.append(f"<tr><td>{_link(s.url, _display(s.url))}</td><td>{_e(s.title)}</td>"
                   f"<td>{_e(s.last_updated or 'unknown')}</td><td>{s.chunks_cited} of {s.chunks}</td>"
                   f"<td>{s.blocks}</td><td>{origin}</td></tr>")
    return out + ["</tbody></table></section>"]


def _harvest(bundle: AuditBundle) -> list[str]:
    h = bundle.harvest()
    rows = [("runs", h["runs"]), ("URLs attempted", h["urls_attempted"])]
    rows += [(f"outcome: {k}", n) for k, n in sorted(h["outcomes"].items())]
    rows += [("first started", h["first_started"] or "–"), ("last started", h["last_started"] or "–")]
    last = h["last_summary"] or {}
    for outcome in ("skipped", "blocked", "failed"):
        for reason, n in sorted((last.get(outcome) or {}).items()):
            rows.append((f"last run, {outcome}: {reason}", n))
    if last:
        rows += [("last run: retried", f"{last.get('retried_urls', 0)} URLs, {last.get('retries', 0)} retries"),
                 ("last run: bytes", last.get("bytes", 0)),
                 ("last run: time", f"{float(last.get('elapsed_s') or 0):.1f} s")]
    for r in h["restored"]:
        rows.append(("restored from", f"{r.get('snapshot')} at {r.get('restored_at')}"))
    out = ['<section id="harvest"><h2>Harvest</h2><table><tbody>']
    out += [f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows]
    return out + ["</tbody></table></section>"]


def _concepts(bundle: AuditBundle) -> list[str]:
    recorded = bundle.synthesis.recorded
    routes = {str(p) for p in (recorded.routes if recorded else {}).values() if p}
    highlight = {str(c["id"]) for c in bundle.concepts if c.get("path") in routes}
    svg = render_svg(bundle.concepts, bundle.edges, highlight)
    out = ['<section id="concepts"><h2>Concept map</h2>']
    if not svg:
        return out + ['<p class="note">No concept index was built for this charter.</p></section>']
    return out + [f'<div class="map">{svg}</div>',
                  '<p class="note">Thick border: a section was routed there. Solid: is-a; dashed: part-of; '
                  "dotted: influences.</p></section>"]


# -- the check of a report (``brt report SOURCE --check REPORT.md``) -------------------------------------------

_UNRESOLVED = ' <span class="flag">unresolved</span>'
_VERDICT_CLASS = {"quoted": "v-covered", "supported": "v-covered", "marked unsupported": "v-partial",
                  "weakly supported": "v-partial"}


def render_check_html(check: CheckReport) -> str:
    """``brt check`` of a report as one self-contained HTML document: the verdict and rates, then one row per
    claim (line, verdict, text, citations, evidence, problems). Every string is escaped; links go only to
    http(s) URLs."""
    rates = check.rates()
    totals = check.totals()
    status = "passed" if check.ok else "failed"
    shown = " · ".join(f"{k.replace('_', ' ')} {v:.2f}" if v is not None else f"{k.replace('_', ' ')} n/a"
                       for k, v in rates.items())
    counts = ", ".join(f"{n} {v}" for v, n in totals["verdicts"].items())
    rows = [_check_row(c) for c in check.claims]
    body = [
        "<header>",
        f"<h1>Check of {_e(check.report.name)}</h1>",
        f'<p class="meta">Charter <code>{_e(check.charter_id)}</code> · checked against the {_e(check.origin)} '
        f"{_e(check.source_path.name)} · brt {_e(__version__)}</p>",
        f'<p><span class="{"v-covered" if check.ok else "v-not-covered"}">{_e(status.upper())}</span> · '
        f"{_e(shown)}</p>",
        f'<p class="meta">{totals["claims"]} claims: {_e(counts) or "none"}; {totals["quotes"]} quotes, '
        f'{totals["citations"]} citations ({totals["citations_resolved"]} resolved), {totals["gaps"]} gaps.</p>',
        "</header><main>",
        '<section id="claims"><h2>Claims</h2>',
        "<table><thead><tr><th>Line</th><th>Verdict</th><th>Claim</th><th>Citations</th><th>Evidence</th>"
        "<th>Problems</th></tr></thead><tbody>",
        *rows,
        "</tbody></table></section></main>",
        '<footer>no evidence, no claim.</footer>',
    ]
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
            '<meta name="referrer" content="no-referrer">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>Check of {_e(check.report.name)} · brt</title>",
            f"<style>{_CSS}</style></head><body>",
            *body,
            "</body></html>",
            "",
        ]
    )


def _check_row(c: ClaimResult) -> str:
    cls = _VERDICT_CLASS.get(c.verdict, "v-not-covered")
    cites = "<br>".join(
        f"{_link(x.page_url or x.url or '', _display(x.page_url or x.url or x.text))}"
        f" · {_e(x.date or 'no date')}{'' if x.resolved else _UNRESOLVED}"
        for x in c.citations
    )
    evidence = ""
    if c.evidence is not None:
        passage = f"“{_e(c.evidence.passage)}”" if c.evidence.passage else _e(c.evidence.chunk_id or "")
        score = f" · score {c.evidence.score:.2f}" if c.evidence.score is not None else ""
        where = _link(c.evidence.url or "", _display(c.evidence.url or ""))
        evidence = f'{passage}<br><span class="cite">{where}{score}</span>'
    for q in c.quotes:
        if not q.verbatim and q.closest:
            evidence += f'<br><span class="cite">closest on the cited page: “{_e(q.closest)}”</span>'
    problems = "<br>".join(_e(p.message) for p in c.problems)
    return (f'<tr id="line-{c.line}"><td>{c.line}</td><td class="{cls}">{_e(c.verdict)}</td><td>{_e(c.text)}</td>'
            f"<td>{cites}</td><td>{evidence}</td><td>{problems}</td></tr>")
