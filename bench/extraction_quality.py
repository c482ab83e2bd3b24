"""Extraction quality on article-extraction-benchmark (181 real pages), through the real harvest path.

The pages are replayed from a HAR file (built in a temp dir from the eval data) under their ORIGINAL
URLs; a charter whose allowed_domains are the pages' hosts and whose seeds are all 181 URLs (max_depth 0)
is harvested into a throw-away store (BRT_HOME in the temp dir); each stored page's text is scored against
the gold with the benchmark's 4-gram shingle metric (see bench/_common.py). In the same run,
``trafilatura.extract(raw_html)`` with its defaults is scored as the baseline, and (diagnostic) our
extractor on the raw HTML without a browser.

    .venv/bin/python bench/extraction_quality.py --eval-dir ../shared/eval \
        [--javascript both] [--check-metric]

Pages that are not stored count as empty output (recall 0; the metric skips them for precision).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import (  # noqa: E402
    check_metric,
    evaluate,
    hosts_of,
    load_aeb,
    machine_info,
    resolve_eval_dir,
    setup_env,
    write_har,
    write_result,
)

TARGET_F1 = 0.95


def _ev(event, key: str, default=None):
    """A field of a harvest event (a record dict, or an object on older versions of the API)."""
    if isinstance(event, dict):
        return event.get(key, default)
    return getattr(event, key, default)


def _url_key(url: str) -> str:
    from orchestrator.harvest.net.urls import canonical_url

    return canonical_url(url)


def harvest_pages(
    pages, har: Path, *, javascript: bool, concurrency: int | None, timeout_s: float | None, tag: str
) -> tuple[dict[str, str], dict]:
    """Harvest all pages from ``har`` through orchestrator.harvest; returns ({page id: stored text}, info)."""
    from orchestrator.charter import parse_charter
    from orchestrator.config import open_memory
    from orchestrator.harvest import harvest

    harvest_cfg: dict = {
        "max_pages": len(pages) + 10,
        "max_depth": 0,
        "obey_robots": False,
        "javascript": javascript,
    }
    if concurrency:
        harvest_cfg["concurrency"] = concurrency
    if timeout_s:
        harvest_cfg["timeout_s"] = timeout_s
    charter = parse_charter(
        {
            "id": f"bench_aeb_{tag}",
            "title": f"article-extraction-benchmark replay ({tag})",
            "allowed_domains": hosts_of(p.url for p in pages),
            "seeds": [p.url for p in pages],
            "harvest": harvest_cfg,
            "memory": {"enabled": True, "use_concept_index": False},
        },
        source="<bench>",
    )
    memory = open_memory(charter, create=True)
    t0 = time.monotonic()
    report = harvest(charter, replay=har, memory=memory)
    wall = time.monotonic() - t0

    by_key: dict[str, str] = {}
    for rec in memory.pages():
        for u in (getattr(rec, "requested_url", None), getattr(rec, "url", None)):
            if u:
                by_key.setdefault(_url_key(u), rec.text or "")
    texts: dict[str, str] = {}
    for p in pages:
        t = by_key.get(_url_key(p.url))
        if t is not None:
            texts[p.id] = t
    events = {_url_key(_ev(e, "url")): e for e in report.events}
    not_stored = []
    for p in pages:
        if p.id not in texts:
            e = events.get(_url_key(p.url))
            not_stored.append(
                {
                    "id": p.id[:12],
                    "url": p.url,
                    "outcome": _ev(e, "outcome", "no event") if e is not None else "no event",
                    "reason": _ev(e, "reason") if e is not None else None,
                }
            )
    info = {
        "javascript": javascript,
        "wall_s": round(wall, 2),
        "elapsed_s": report.elapsed_s,
        "outcomes": report.counts(),
        "pages_stored": report.pages_stored,
        "chunks_total": report.chunks_total,
        "pages_scored_nonempty": len(texts),
        "not_stored": not_stored,
        "final_url_changed": sum(
            1 for e in report.events if _ev(e, "final_url") and _url_key(_ev(e, "final_url")) != _url_key(_ev(e, "url"))
        ),
        "blocked_requests": len(report.blocked_requests),
    }
    try:
        memory.close()  # type: ignore[attr-defined]
    except Exception:
        pass
    return texts, info


def trafilatura_baseline(pages) -> tuple[dict[str, str], float]:
    import trafilatura

    out: dict[str, str] = {}
    t0 = time.monotonic()
    for p in pages:
        out[p.id] = trafilatura.extract(p.html.decode("utf-8", errors="replace")) or ""
    return out, time.monotonic() - t0


def ours_offline(pages) -> tuple[dict[str, str], float]:
    """Our extractor (orchestrator.extract.extract_page) on the raw HTML, no browser: separates the effect of
    extraction options from the effect of the rendered DOM."""
    from orchestrator.harvest.extract import extract_page

    out: dict[str, str] = {}
    t0 = time.monotonic()
    for p in pages:
        page = extract_page(p.html.decode("utf-8", errors="replace"), p.url)
        out[p.id] = page.text if page else ""
    return out, time.monotonic() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--eval-dir",
        default=None,
        help="folder holding article-extraction-benchmark/ (default: ../shared/eval relative to the repo root)",
    )
    ap.add_argument(
        "--javascript",
        choices=["true", "false", "both"],
        default="true",
        help="harvest with JavaScript on (our default), off, or both (two harvests)",
    )
    ap.add_argument(
        "--concurrency", type=int, default=None, help="charter harvest.concurrency (default: charter default)"
    )
    ap.add_argument(
        "--timeout-s", type=float, default=None, help="charter harvest.timeout_s (default: charter default)"
    )
    ap.add_argument("--limit", type=int, default=None, help="only the first N pages (quick check)")
    ap.add_argument(
        "--check-metric",
        action="store_true",
        help="first assert the metric reproduces the published F1 of the reference outputs",
    )
    ap.add_argument("--worst", type=int, default=12, help="list the N pages where we lose most to the baseline")
    ap.add_argument("--json-out", default=None, help="also write the full result (per page) to this JSON file")
    ap.add_argument("--keep-tmp", action="store_true", help="keep the temp dir (HAR, store)")
    args = ap.parse_args(argv)

    eval_dir = resolve_eval_dir(args.eval_dir)
    if args.check_metric:
        check_metric(eval_dir, ("trafilatura", "readability_js", "html-text", "AutoExtract"))

    tmp = Path(tempfile.mkdtemp(prefix="brt-bench-extract-"))
    setup_env(tmp)
    try:
        pages = load_aeb(eval_dir)
        if args.limit:
            pages = pages[: args.limit]
        gold = {p.id: p.gold for p in pages}
        har = write_har(((p.url.split("#", 1)[0], p.html) for p in pages), tmp / "aeb.har")

        systems: dict[str, dict[str, str]] = {}
        extra: dict[str, dict] = {}
        modes = {"true": [True], "false": [False], "both": [True, False]}[args.javascript]
        for js in modes:
            name = f"brt harvest (JS {'on' if js else 'off'})"
            print(f"[bench] harvesting {len(pages)} pages from HAR, javascript={js} ...", file=sys.stderr)
            texts, info = harvest_pages(
                pages,
                har,
                javascript=js,
                concurrency=args.concurrency,
                timeout_s=args.timeout_s,
                tag="js" if js else "nojs",
            )
            systems[name] = texts
            extra[name] = info
            print(f"[bench]   done in {info['wall_s']} s: {info['outcomes']}", file=sys.stderr)

        print("[bench] baseline: trafilatura.extract(raw_html) ...", file=sys.stderr)
        base, base_s = trafilatura_baseline(pages)
        systems["trafilatura.extract(raw HTML), defaults"] = base
        extra["trafilatura.extract(raw HTML), defaults"] = {"wall_s": round(base_s, 2)}
        print("[bench] diagnostic: orchestrator.extract.extract_page(raw_html) ...", file=sys.stderr)
        offline, off_s = ours_offline(pages)
        systems["extract_page(raw HTML), no browser"] = offline
        extra["extract_page(raw HTML), no browser"] = {"wall_s": round(off_s, 2)}

        results = {}
        per_doc = {}
        for name, pred in systems.items():
            m, docs = evaluate(gold, pred)
            results[name] = m
            per_doc[name] = docs

        import trafilatura

        print()
        print(
            f"article-extraction-benchmark, {len(pages)} pages, 4-gram shingle metric "
            f"(trafilatura {trafilatura.__version__})"
        )
        print(f"{'system':44s} {'F1':>6s} {'±':>6s} {'P':>6s} {'R':>6s} {'acc':>6s} {'empty':>6s}")
        for name, m in results.items():
            empty = sum(1 for p in pages if not (systems[name].get(p.id) or "").strip())
            print(
                f"{name:44s} {m.f1:6.3f} {m.f1_std:6.3f} {m.precision:6.3f} {m.recall:6.3f} "
                f"{m.accuracy:6.3f} {empty:6d}"
            )

        base_name = "trafilatura.extract(raw HTML), defaults"
        worst_lists = {}
        for name in systems:
            if not name.startswith("brt harvest"):
                continue
            info = extra[name]
            print(
                f"\n{name}: {info['pages_stored']} stored, outcomes {info['outcomes']}, "
                f"{len(info['not_stored'])} not stored (scored as empty), "
                f"{info['final_url_changed']} final URL != requested, wall {info['wall_s']} s"
            )
            for ns in info["not_stored"]:
                print(f"   not stored: {ns['url']} -> {ns['outcome']}: {ns['reason']}")
            diffs = []
            for p in pages:
                a, b = per_doc[name][p.id], per_doc[base_name][p.id]
                diffs.append((a.f1 - b.f1, p, a, b))
            diffs.sort(key=lambda x: x[0])
            worst_lists[name] = [
                {
                    "id": p.id[:12],
                    "url": p.url,
                    "delta_f1": round(d, 3),
                    "ours_p": round(a.precision or 0, 3),
                    "ours_r": round(a.recall or 0, 3),
                    "base_p": round(b.precision or 0, 3),
                    "base_r": round(b.recall or 0, 3),
                    "offline_f1": round(per_doc["extract_page(raw HTML), no browser"][p.id].f1, 3),
                }
                for d, p, a, b in diffs[: args.worst]
            ]
            wins = sum(1 for d, *_ in diffs if d > 0.005)
            losses = sum(1 for d, *_ in diffs if d < -0.005)
            print(f"   per page vs baseline: {wins} better, {losses} worse, {len(pages) - wins - losses} same (±0.005)")
            print("   worst pages (ΔF1 vs baseline; P/R ours vs baseline; F1 of extract_page on raw HTML):")
            for w in worst_lists[name]:
                print(
                    f"   {w['delta_f1']:+.3f}  ours P {w['ours_p']:.2f} R {w['ours_r']:.2f} | "
                    f"base P {w['base_p']:.2f}"
                    f" R {w['base_r']:.2f} | offline F1 {w['offline_f1']:.2f}  {w['url'][:90]}"
                )

        main_name = next((n for n in systems if n.startswith("brt harvest")), None)
        summary = {
            "bench": "extraction_quality",
            "pages": len(pages),
            "trafilatura": trafilatura.__version__,
            "results": {n: m.as_dict() for n, m in results.items()},
            "harvest": {
                n: {k: v for k, v in extra[n].items() if k != "not_stored"}
                | {"not_stored": len(extra[n].get("not_stored", []))}
                for n in extra
                if n.startswith("brt")
            },
            "target": {"f1_min": TARGET_F1, "f1_ge_baseline": True},
            "reached": {
                "f1_min": bool(main_name and results[main_name].f1 >= TARGET_F1),
                "f1_ge_baseline": bool(main_name and results[main_name].f1 >= results[base_name].f1),
            },
            "machine": machine_info(),
        }
        print()
        print(json.dumps(summary))
        write_result("extraction_quality", summary)
        if args.json_out:
            full = dict(summary)
            full["not_stored"] = {n: extra[n].get("not_stored") for n in extra if n.startswith("brt")}
            full["worst"] = worst_lists
            full["per_page"] = {
                n: {k: {"p": d.precision, "r": d.recall, "f1": round(d.f1, 4)} for k, d in docs.items()}
                for n, docs in per_doc.items()
            }
            Path(args.json_out).write_text(json.dumps(full, indent=1))
    finally:
        if args.keep_tmp:
            print(f"[bench] kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
