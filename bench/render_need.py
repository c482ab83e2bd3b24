"""The thresholds of ``harvest.render: auto`` (``orchestrator/harvest/render_need.py``), measured.

For each of the 181 article-extraction-benchmark pages: the signals of its served HTML (extracted as the static
path extracts it), and its F1 against the gold read from the served HTML (``never``) and rendered (``always``),
taken from a ``bench/harvest_static.py`` result (``--from``, default ``bench/results/harvest_static.json``). For the
JavaScript test site (``tests/sites/js.py``): the signals of every page, and whether it needs a browser.

Then each threshold is varied alone around its default: for each value, the share of benchmark pages ``auto``
would render, the benchmark's F1 had it decided so (a rendered page scores its rendered F1, another its static
F1), how many of the benchmark pages that gain from rendering (rendered F1 above static F1 by ``--gain``) it
renders, and whether it renders every test-site page that needs a browser and no other. The defaults are the
lowest values that render every test-site page that needs a browser and lose no F1 on the benchmark.

    python bench/render_need.py --eval-dir ../shared/eval [--from bench/results/harvest_static.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import RESULTS_DIR, load_aeb, resolve_eval_dir, write_result  # noqa: E402

#: The values tried for each threshold (one varied at a time, the others at their defaults).
SWEEP: dict[str, list[Any]] = {
    "short_chars": [50, 100, 150, 200, 300, 400],
    "article_chars": [300, 400, 450, 500, 600, 800, 1000],
    "min_text_share": [0.05, 0.1, 0.15, 0.2, 0.25, 0.35, 0.5],
    "promise_chars": [200, 400, 800],
    "promise_missing": [0.3, 0.5, 0.7],
    "script_links_min": [2, 3, 5, 10],
    "script_prose_chars": [100, 150, 200, 250, 300, 400, 500],
}


def static_signals(html: bytes | str, url: str) -> Any:
    """The signals of a page as ``static.read_static`` measures them (decoded, extracted, measured)."""
    from orchestrator.harvest.extract import decode_html, extract_page
    from orchestrator.harvest.render_need import measure

    text = html if isinstance(html, str) else decode_html(html, {"content-type": "text/html; charset=utf-8"}) or ""
    extracted = extract_page(text, url)
    return measure(text, extracted.text if extracted is not None else None)


def js_site_signals() -> dict[str, tuple[Any, bool]]:
    """path -> (signals, needs a browser) for every page of the JavaScript test site."""
    from tests.sites.js import NEEDS_JS, STATIC, page_html

    out = {}
    for path in (*NEEDS_JS, *STATIC):
        served = "spa/" if path.startswith("spa/") else path  # the app's shell answers every route
        out[path] = (static_signals(page_html(served or "/"), f"http://127.0.0.1/{path}"), path in NEEDS_JS)
    return out


def _f1(scores: list[list[float | None]]) -> float:
    """The benchmark's F1 of per-page (precision, recall, F1): from the mean precision and the mean recall, as
    ``bench/_common.evaluate`` computes it."""
    ps = [s[0] for s in scores if s[0] is not None]
    rs = [s[1] for s in scores if s[1] is not None]
    p, r = (sum(ps) / len(ps) if ps else 0.0), (sum(rs) / len(rs) if rs else 0.0)
    return 2 * p * r / (p + r) if p + r else 0.0


def score(limits: Any, aeb: dict[str, Any], per_page: dict[str, dict[str, list[float | None]]],
          js: dict[str, tuple[Any, bool]], gain: float) -> dict[str, Any]:
    """What ``auto`` with ``limits`` would do on the benchmark and the test site."""
    from orchestrator.harvest.render_need import decide

    render = {pid: decide(s, limits).render for pid, s in aeb.items()}
    always, never = per_page["always"], per_page["never"]
    chosen = [always[pid] if render[pid] else never[pid] for pid in aeb]
    gainers = [pid for pid in aeb if (always[pid][2] or 0) - (never[pid][2] or 0) > gain]
    js_rendered = {path: decide(s, limits).render for path, (s, _) in js.items()}
    return {
        "aeb_rendered_share": round(sum(render.values()) / len(render), 4),
        "aeb_f1": round(_f1(chosen), 4),
        "aeb_gainers_rendered": f"{sum(render[p] for p in gainers)}/{len(gainers)}",
        "js_needs_rendered": f"{sum(js_rendered[p] for p, (_, need) in js.items() if need)}/"
                             f"{sum(1 for _, need in js.values() if need)}",
        "js_static_rendered": f"{sum(js_rendered[p] for p, (_, need) in js.items() if not need)}/"
                              f"{sum(1 for _, need in js.values() if not need)}",
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eval-dir", default=None)
    ap.add_argument("--from", dest="source", default=str(RESULTS_DIR / "harvest_static.json"),
                    help="a bench/harvest_static.py result with per-page F1 of its always and never runs")
    ap.add_argument("--gain", type=float, default=0.02, help="a page gains from rendering above this F1 difference")
    args = ap.parse_args(argv)
    from orchestrator.harvest.render_need import THRESHOLDS

    eval_dir = resolve_eval_dir(args.eval_dir)
    per_page = json.loads(Path(args.source).read_text())["per_page"]
    pages = [p for p in load_aeb(eval_dir) if p.id in per_page["always"] and p.id in per_page["never"]]
    aeb = {p.id: static_signals(p.html, p.url) for p in pages}
    js = js_site_signals()
    rows = [{"threshold": "defaults", "value": None, **score(THRESHOLDS, aeb, per_page, js, args.gain)}]
    for name, values in SWEEP.items():
        for value in values:
            limits = dataclasses.replace(THRESHOLDS, **{name: value})
            rows.append({"threshold": name, "value": value, **score(limits, aeb, per_page, js, args.gain)})
    f1 = {m: {pid: s[2] or 0.0 for pid, s in per_page[m].items()} for m in ("always", "never")}
    gainers = sorted(((round(f1["always"][p] - f1["never"][p], 4), p) for p in aeb), reverse=True)[:10]
    always_f1, never_f1 = _f1(list(per_page["always"].values())), _f1(list(per_page["never"].values()))
    print(f"benchmark F1: every page rendered {always_f1:.4f}, none rendered {never_f1:.4f}")
    print(f"{'threshold':20} {'value':>6} {'rendered':>9} {'F1':>7} {'gainers':>8} {'js need':>8} {'js static':>9}")
    for r in rows:
        print(f"{r['threshold']:20} {r['value']!s:>6} {r['aeb_rendered_share']:>9.1%} {r['aeb_f1']:>7.4f} "
              f"{r['aeb_gainers_rendered']:>8} {r['js_needs_rendered']:>8} {r['js_static_rendered']:>9}")
    print("largest gains from rendering (rendered F1 - static F1, page):", gainers)
    write_result("render_need", {
        "bench": "render_need",
        "source": args.source,
        "pages": len(pages),
        "defaults": dataclasses.asdict(THRESHOLDS),
        "gain": args.gain,
        "rows": rows,
        "f1_always": round(always_f1, 4),
        "f1_never": round(never_f1, 4),
        "largest_gains": gainers,
        "signals": {pid: s.as_record() for pid, s in aeb.items()},
    })
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
