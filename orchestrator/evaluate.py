"""``brt eval``: the seed's keep-or-cut evaluation of the concept index.

For each charter (already harvested), synthesize twice on the same store — kNN only, and routed through the
concept index — and log per run: ``t_synth`` (seconds), ``citation_rate`` (share of evidence blocks with a
URL and a known last-updated date), ``coverage`` (distinct pages cited), ``answered`` (share of sections with
evidence) and, when an answer key is given, ``answer_hit`` (share of sections whose evidence cites a page
that holds the answer) and ``answer_in_quote`` (whose cited chunk holds it). Then the stop rule: keep the
index if, over the tasks, t_synth drops by >= 20% or citation_rate rises by >= 15%; else recommend kNN-only.
"""

from __future__ import annotations

import json
import logging
import re
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .charter import Charter

log = logging.getLogger(__name__)

T_SYNTH_DROP = 0.20
CITATION_LIFT = 0.15
MODES = ("knn", "concept")


@dataclass
class RunMetrics:
    charter_id: str
    mode: str  # "knn" | "concept"
    t_synth: float
    citation_rate: float
    coverage: int
    answered: float
    blocks: int
    sections: int
    answer_hit: float | None = None
    answer_in_quote: float | None = None
    routes: dict[str, str | None] = field(default_factory=dict)
    fallbacks: int = 0  # sections whose routed search fell back to the whole store


@dataclass
class EvalReport:
    runs: list[RunMetrics]
    verdict: str
    keep: bool
    t_synth_drop: float
    citation_lift: float
    answers_worse: bool
    summary: dict[str, dict[str, float | None]]

    def to_json(self) -> dict[str, Any]:
        return {
            "runs": [asdict(r) for r in self.runs],
            "summary": self.summary,
            "t_synth_drop": round(self.t_synth_drop, 4),
            "citation_lift": round(self.citation_lift, 4),
            "answers_worse": self.answers_worse,
            "keep": self.keep,
            "verdict": self.verdict,
        }


def _with_index(charter: Charter, on: bool) -> Charter:
    memory = charter.memory.model_copy(update={"use_concept_index": on})
    return charter.model_copy(update={"memory": memory})


def run_once(
    charter: Charter, mode: str, *, out_dir: Path, answers: dict[str, str] | None = None, memory: Any = None
) -> RunMetrics:
    """Synthesize ``charter`` in one mode and measure it."""
    from .config import open_memory
    from .synthesize import concept_routes, synthesize

    mem = memory if memory is not None else open_memory(charter, create=False)
    c = _with_index(charter, mode == "concept")
    routes: dict[str, str | None] = {}
    fallbacks = 0
    if mode == "concept":
        _, r = concept_routes(c, mem)
        routes = {s.title: r.get(i) for i, s in enumerate(c.outputs.sections)}
    result = synthesize(c, out=out_dir / f"{charter.id}-{mode}.md", memory=mem)
    blocks = [b for s in result.sections for b in s.blocks]
    cited = sum(1 for b in blocks if b.url and b.last_updated)
    n = len(result.sections) or 1
    m = RunMetrics(
        charter_id=charter.id,
        mode=mode,
        t_synth=round(result.t_synth_s, 4),
        citation_rate=round(cited / len(blocks), 4) if blocks else 0.0,
        coverage=len({b.url for b in blocks}),
        answered=round(sum(1 for s in result.sections if s.blocks) / n, 4),
        blocks=len(blocks),
        sections=len(result.sections),
        routes=routes,
    )
    if mode == "concept" and routes:
        from memory_store.pointers import chunk_ids_under

        for s in result.sections:
            path = routes.get(s.title)
            under = set(chunk_ids_under(mem.path, path)) if path else set()
            if path and s.blocks and not any(b.chunk_id in under for b in s.blocks):
                fallbacks += 1
        m.fallbacks = fallbacks
    if answers:
        texts = {p.url: p.text for p in mem.pages()}
        hit = quote = 0
        chunk_text = {}
        ids = [b.chunk_id for b in blocks]
        if ids:
            for row in mem.chunks(include_vectors=False):
                if row["id"] in ids:
                    chunk_text[row["id"]] = row["text"]
        for s in result.sections:
            pattern = answers.get(s.title)
            if not pattern:
                continue
            rx = re.compile(pattern, re.IGNORECASE)
            if any(rx.search(texts.get(b.url, "")) for b in s.blocks):
                hit += 1
            if any(rx.search(chunk_text.get(b.chunk_id, "")) for b in s.blocks):
                quote += 1
        keyed = sum(1 for s in result.sections if answers.get(s.title)) or 1
        m.answer_hit = round(hit / keyed, 4)
        m.answer_in_quote = round(quote / keyed, 4)
    return m


def evaluate(
    charters: list[Charter],
    *,
    answers: dict[str, dict[str, str]] | None = None,
    out_dir: str | Path | None = None,
    repeats: int = 3,
    rebuild_index: bool = False,
) -> EvalReport:
    """A/B every charter with and without the concept index (``repeats`` timed runs each, alternating the
    order; the median t_synth is kept) and apply the stop rule."""
    from concept_index import update_from_store

    from .config import open_memory

    out = Path(out_dir) if out_dir is not None else Path("out") / "eval"
    out.mkdir(parents=True, exist_ok=True)
    runs: list[RunMetrics] = []
    for charter in charters:
        mem = open_memory(charter, create=False)
        update_from_store(mem, charter.outputs.sections, rebuild=rebuild_index)  # routing needs the index
        mem.search("warm-up", k=1)  # model and tables loaded before timing
        per: dict[str, list[RunMetrics]] = {m: [] for m in MODES}
        for i in range(max(1, repeats)):
            order = MODES if i % 2 == 0 else tuple(reversed(MODES))
            for mode in order:
                per[mode].append(
                    run_once(charter, mode, out_dir=out, answers=(answers or {}).get(charter.id), memory=mem)
                )
        for mode in MODES:
            best = per[mode][-1]
            best.t_synth = round(statistics.median(r.t_synth for r in per[mode]), 4)
            runs.append(best)
            log.info("eval %s %s: %s", charter.id, mode, best)
    return verdict(runs)


def _mean(values: list[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return round(sum(vals) / len(vals), 4) if vals else None


def verdict(runs: list[RunMetrics]) -> EvalReport:
    summary: dict[str, dict[str, float | None]] = {}
    for mode in MODES:
        rs = [r for r in runs if r.mode == mode]
        summary[mode] = {
            "tasks": float(len(rs)),
            "t_synth_total": round(sum(r.t_synth for r in rs), 4),
            "citation_rate": _mean([r.citation_rate for r in rs]),
            "coverage": _mean([float(r.coverage) for r in rs]),
            "answered": _mean([r.answered for r in rs]),
            "answer_hit": _mean([r.answer_hit for r in rs]),
            "answer_in_quote": _mean([r.answer_in_quote for r in rs]),
        }
    k, c = summary["knn"], summary["concept"]
    t_k, t_c = k["t_synth_total"] or 0.0, c["t_synth_total"] or 0.0
    drop = (t_k - t_c) / t_k if t_k else 0.0
    cr_k, cr_c = k["citation_rate"] or 0.0, c["citation_rate"] or 0.0
    lift = (cr_c - cr_k) / cr_k if cr_k else (1.0 if cr_c else 0.0)
    worse = any(
        c[key] is not None and k[key] is not None and c[key] < k[key]  # type: ignore[operator]
        for key in ("answer_hit", "answer_in_quote", "answered")
    )
    keep = drop >= T_SYNTH_DROP or lift >= CITATION_LIFT
    tasks = int(k["tasks"] or 0)
    if keep:
        text = (
            f"KEEP the concept index: over {tasks} tasks t_synth dropped {drop:.0%} (rule: >= 20%) and "
            f"citation_rate changed {lift:+.0%} (rule: >= +15%)."
        )
    else:
        text = (
            f"CUT: over {tasks} tasks t_synth dropped {drop:.0%} (rule: >= 20%) and citation_rate changed "
            f"{lift:+.0%} (rule: >= +15%); recommend kNN-only (memory.use_concept_index: false)."
        )
    if tasks < 7:
        text += f" (The seed's rule asks for 7 tasks; only {tasks} were run.)"
    if worse:
        text += " WARNING: answers were worse with the index on some metric (see summary)."
    return EvalReport(runs, text, keep, drop, lift, worse, summary)


def load_answers(path: str | Path | None) -> dict[str, dict[str, str]] | None:
    if path is None:
        return None
    return json.loads(Path(path).read_text(encoding="utf-8"))


def format_table(report: EvalReport) -> str:
    head = "| charter | mode | t_synth s | citation_rate | coverage | answered | answer_hit | answer_in_quote |"
    lines = [head, "|---|---|---|---|---|---|---|---|"]
    for r in report.runs:
        lines.append(
            f"| {r.charter_id} | {r.mode} | {r.t_synth:.3f} | {r.citation_rate:.2f} | {r.coverage} | "
            f"{r.answered:.2f} | {_fmt(r.answer_hit)} | {_fmt(r.answer_in_quote)} |"
        )
    for mode, s in report.summary.items():
        lines.append(
            f"| **all** | {mode} | {s['t_synth_total']:.3f} | {_fmt(s['citation_rate'])} | {_fmt(s['coverage'])} | "
            f"{_fmt(s['answered'])} | {_fmt(s['answer_hit'])} | {_fmt(s['answer_in_quote'])} |"
        )
    return "\n".join(lines) + "\n\n" + report.verdict + "\n"


def _fmt(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}"
