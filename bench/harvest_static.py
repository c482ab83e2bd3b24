"""Static-first harvest: ``harvest.render`` always (every page rendered in Chromium), auto (rendered only when the
page needs it) and never, against the Chromium-alone floor, on the 181 pages of the article-extraction benchmark
served by one local HTTP server (``http://127.0.0.1:PORT/aeb/<id>.html``: a page's own relative resources and
script navigations meet this server, its other hosts are off the allowlist), JavaScript on.

Every run is a harvest from scratch into a fresh store (the embedding model is loaded once beforehand): wall time,
pages stored per second, the share of pages the browser rendered, and the extracted text's F1 against the gold
(4-gram shingles, ``bench/_common.py``, as ``bench/extraction_quality.py`` scores it). The floor is Chromium alone
loading the same pages in one context with brt's launch flags, ``concurrency`` tabs, nothing read or stored
(hosts other than the server do not resolve). The modes alternate over ``--rounds`` rounds (the order rotates each
round) so that the machine's noise hits them alike; the summary gives each mode's medians and auto's speed-up over
always. Then ``harvest.render: auto`` on the JavaScript test site (``tests/sites/js.py``): which pages it rendered.

    python bench/harvest_static.py --eval-dir ../shared/eval [--rounds 3] [--concurrency 4]

The per-page scores of the always and never runs (last round) go into the result too: ``bench/render_need.py`` picks
the decision's thresholds from them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import evaluate, load_aeb, machine_info, resolve_eval_dir, setup_env, write_result  # noqa: E402

MODES = ("always", "auto", "never", "floor")
TARGET_SPEEDUP = 2.0
TARGET_F1 = 0.955


class CpuMeter:
    """CPU seconds of this process and every process under it (Chromium, Playwright's driver), sampled every
    0.5 s while a run lasts: the work a mode costs, which the machine's other load does not change the way it
    changes wall time (a process that exits between samples loses at most its last 0.5 s)."""

    def __init__(self) -> None:
        import psutil

        self._psutil = psutil
        self._me = psutil.Process()
        self._seen: dict[int, float] = {}
        self._start = self._total()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _total(self) -> float:
        try:
            procs = [self._me, *self._me.children(recursive=True)]
        except self._psutil.Error:
            procs = [self._me]
        for proc in procs:
            try:
                times = proc.cpu_times()
            except self._psutil.Error:
                continue
            self._seen[proc.pid] = times.user + times.system
        return sum(self._seen.values())

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            self._total()

    def stop(self) -> float:
        """CPU seconds spent since the meter started."""
        self._stop.set()
        self._thread.join()
        return round(self._total() - self._start, 1)


class PageServer:
    """The benchmark's pages on 127.0.0.1 (random port): ``/aeb/<id>.html``; anything else is a 404."""

    def __init__(self, pages: list[Any]) -> None:
        bodies = {f"/aeb/{p.id}.html": p.html for p in pages}

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
                pass

            def do_GET(self) -> None:  # noqa: N802 - stdlib name
                body = bodies.get(self.path.split("?", 1)[0])
                status, data = (200, body) if body is not None else (404, b"<html><body>not found</body></html>")
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name="bench-pages", daemon=True)
        self.thread.start()

    def url(self, page: Any) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/aeb/{page.id}.html"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _charter(run_id: str, urls: list[str], mode: str, concurrency: int) -> Any:
    from orchestrator.charter import parse_charter

    return parse_charter(
        {
            "id": run_id,
            "title": f"static-first harvest bench ({mode})",
            "allowed_domains": ["127.0.0.1"],
            "seeds": urls,
            "harvest": {
                "max_pages": len(urls) + 10,
                "max_depth": 0,
                "concurrency": concurrency,
                "per_domain_concurrency": concurrency,  # one host serves every page
                "obey_robots": False,
                "javascript": True,
                "render": mode,
            },
            "memory": {"enabled": True, "use_concept_index": False},
        },
        source="<bench>",
    )


def harvest_run(pages: list[Any], server: PageServer, mode: str, concurrency: int, run_id: str) -> dict:
    """One harvest of every page with ``harvest.render: mode``: time, outcomes, render share, F1."""
    from orchestrator.config import open_memory
    from orchestrator.harvest import harvest

    urls = [server.url(p) for p in pages]
    charter = _charter(run_id, urls, mode, concurrency)
    memory = open_memory(charter, create=True)
    load = [round(x, 2) for x in os.getloadavg()]
    meter = CpuMeter()
    t0 = time.monotonic()
    report = harvest(charter, memory=memory)
    wall = time.monotonic() - t0
    cpu = meter.stop()
    texts = {p.id: (memory.page(url).text if memory.page(url) else "") for p, url in zip(pages, urls, strict=True)}
    metrics, per_doc = evaluate({p.id: p.gold for p in pages}, texts, bootstrap=0)
    events = {e["url"]: e for e in report.events}
    rendered = {p.id: bool(events.get(url, {}).get("rendered")) for p, url in zip(pages, urls, strict=True)}
    reasons = Counter(r for e in report.events for r in e.get("render_reasons") or [])
    memory.reset()
    return {
        "mode": mode,
        "wall_s": round(wall, 2),
        "cpu_s": cpu,
        "loadavg_at_start": load,
        "outcomes": report.counts(),
        "pages_stored": report.pages_stored,
        "pages_per_s": round(report.pages_stored / wall, 3),
        "rendered_share": round(sum(rendered.values()) / len(pages), 4),
        "render_reasons": dict(reasons.most_common()),
        "f1": round(metrics.f1, 4),
        "precision": round(metrics.precision, 4),
        "recall": round(metrics.recall, 4),
        "not_stored": [{"url": e["url"], "outcome": e["outcome"], "reason": e["reason"]}
                       for e in report.events if e["outcome"] != "stored"][:10],
        "per_page": {pid: {"score": _page_score(s), "rendered": rendered[pid]} for pid, s in per_doc.items()},
    }


def _page_score(doc: Any) -> list[float | None]:
    """(precision, recall, F1) of one page, as ``evaluate`` averages them (None: not counted)."""
    return [None if v is None else round(v, 4) for v in (doc.precision, doc.recall, doc.f1)]


async def _floor(urls: list[str], concurrency: int) -> tuple[float, int]:
    """Chromium alone: every URL loaded (``load`` event) in one context, ``concurrency`` tabs, nothing read."""
    from playwright.async_api import Error as PlaywrightError
    from playwright.async_api import async_playwright

    from orchestrator.harvest.launch import LAUNCH_ARGS, find_browser

    queue: asyncio.Queue[str] = asyncio.Queue()
    for url in urls:
        queue.put_nowait(url)
    loaded = 0
    async with async_playwright() as p:
        args = [*LAUNCH_ARGS, "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]
        browser = await p.chromium.launch(executable_path=find_browser(), headless=True, args=args)
        context = await browser.new_context(java_script_enabled=True, service_workers="block")

        async def tab() -> None:
            nonlocal loaded
            page = await context.new_page()
            while not queue.empty():
                url = queue.get_nowait()
                try:
                    await page.goto(url, wait_until="load", timeout=30_000)
                    loaded += 1
                except PlaywrightError:
                    pass

        t0 = time.monotonic()
        await asyncio.gather(*(tab() for _ in range(concurrency)))
        wall = time.monotonic() - t0
        await browser.close()
    return wall, loaded


def floor_run(pages: list[Any], server: PageServer, concurrency: int) -> dict:
    load = [round(x, 2) for x in os.getloadavg()]
    meter = CpuMeter()
    wall, loaded = asyncio.run(_floor([server.url(p) for p in pages], concurrency))
    return {
        "mode": "floor",
        "wall_s": round(wall, 2),
        "cpu_s": meter.stop(),
        "loadavg_at_start": load,
        "pages_loaded": loaded,
        "pages_per_s": round(loaded / wall, 3),
        "rendered_share": 1.0,
    }


def js_site_run() -> dict:
    """``render: auto`` on the JavaScript test site: the pages it rendered, against those that need a browser."""
    from orchestrator.charter import parse_charter
    from orchestrator.config import open_memory
    from orchestrator.harvest import harvest
    from tests.sites.js import NEEDS_JS, STATIC, start_js_site

    site = start_js_site()
    try:
        charter = parse_charter(
            {"id": "bench_js_site", "title": "js site", "allowed_domains": ["127.0.0.1"], "seeds": [site.url("")],
             "harvest": {"max_depth": 2, "obey_robots": False}, "memory": {"use_concept_index": False}},
            source="<bench>",
        )
        memory = open_memory(charter, create=True)
        report = harvest(charter, memory=memory)
        memory.reset()
    finally:
        site.stop()
    rendered = {e["url"].split("/", 3)[3]: bool(e.get("rendered")) for e in report.events if e["outcome"] == "stored"}
    needs = [p for p in NEEDS_JS if p in rendered]
    return {
        "needs_js": len(NEEDS_JS),
        "needs_js_stored": len(needs),
        "needs_js_rendered": sum(rendered[p] for p in needs),
        "static": len(STATIC),
        "static_rendered": sum(rendered.get(p, False) for p in STATIC),
        "rendered": rendered,
    }


_SUMMED = ("wall_s", "cpu_s", "pages_per_s", "rendered_share", "f1", "precision", "recall")


def _median(runs: list[dict], key: str) -> float | None:
    values = [r[key] for r in runs if r.get(key) is not None]
    return round(statistics.median(values), 4) if values else None


def _pairs(runs: list[dict], first: str, second: str) -> list[tuple[dict, dict]]:
    """(run of ``first``, run of ``second``) of each round that has both."""
    rounds = sorted({r["round"] for r in runs})
    by = {(r["round"], r["mode"]): r for r in runs}
    return [(by[n, first], by[n, second]) for n in rounds if (n, first) in by and (n, second) in by]


def summarize(runs: list[dict]) -> dict:
    by_mode = {m: [r for r in runs if r["mode"] == m] for m in MODES}
    medians = {
        m: {k: _median(rs, k) for k in _SUMMED}
        | {"walls": [r["wall_s"] for r in rs]}
        for m, rs in by_mode.items()
        if rs
    }
    always, auto = medians.get("always", {}).get("wall_s"), medians.get("auto", {}).get("wall_s")
    speedup = round(always / auto, 3) if always and auto else None
    cpu_always, cpu_auto = medians.get("always", {}).get("cpu_s"), medians.get("auto", {}).get("cpu_s")
    paired = [a["wall_s"] / b["wall_s"] for a, b in _pairs(runs, "always", "auto")]
    return {
        "medians": medians,
        "speedup_auto_over_always": speedup,
        "speedup_per_round": [round(x, 3) for x in paired],
        "cpu_ratio_always_over_auto": round(cpu_always / cpu_auto, 3) if cpu_always and cpu_auto else None,
        "wall_ratio_auto_to_always": round(auto / always, 3) if always and auto else None,
        "target": {"speedup_min": TARGET_SPEEDUP, "auto_f1_min": TARGET_F1},
        "reached": {
            "speedup": bool(speedup and speedup >= TARGET_SPEEDUP),
            "auto_f1": bool((medians.get("auto", {}).get("f1") or 0) >= TARGET_F1),
        },
    }


def _print(summary: dict, runs: list[dict], js: dict | None) -> None:
    for r in runs:
        extra = f"F1 {r['f1']:.4f}, rendered {r['rendered_share']:.1%}" if "f1" in r else f"{r['pages_loaded']} loaded"
        print(f"round {r['round']} {r['mode']:6}: {r['wall_s']:7.1f} s ({r['cpu_s']} CPU-s), {r['pages_per_s']:.2f} "
              f"pages/s, {extra} (load {r['loadavg_at_start']})")
    for mode, m in summary["medians"].items():
        print(f"median {mode:6}: {m['wall_s']} s, {m['cpu_s']} CPU-s, {m['pages_per_s']} pages/s, rendered "
              f"{m['rendered_share']}, F1 {m['f1']} (walls {m['walls']})")
    print(f"auto is {summary['speedup_auto_over_always']}x faster than always (per round "
          f"{summary['speedup_per_round']}; target {TARGET_SPEEDUP}x), and spends "
          f"{summary['cpu_ratio_always_over_auto']}x less CPU; reached: {summary['reached']}")
    if js:
        print(f"JavaScript test site, auto: {js['needs_js_rendered']}/{js['needs_js']} pages that need a browser "
              f"rendered, {js['static_rendered']}/{js['static']} static pages rendered")


def _parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eval-dir", default=None, help="folder holding article-extraction-benchmark/")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated subset of " + ",".join(MODES))
    ap.add_argument("--limit", type=int, default=None, help="only the first N pages (quick check)")
    ap.add_argument("--skip-js-site", action="store_true")
    ap.add_argument("--keep-tmp", action="store_true")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    eval_dir = resolve_eval_dir(args.eval_dir)
    modes = [m for m in args.modes.split(",") if m in MODES]
    tmp = Path(tempfile.mkdtemp(prefix="brt-bench-static-"))
    setup_env(tmp)
    pages = load_aeb(eval_dir)[: args.limit] if args.limit else load_aeb(eval_dir)
    from memory_store import get_embedder

    get_embedder().embed_documents(["warm-up"])  # the model loads before anything is timed
    server = PageServer(pages)
    runs: list[dict] = []
    try:
        for rnd in range(args.rounds):
            order = modes[rnd % len(modes):] + modes[: rnd % len(modes)]
            for mode in order:
                print(f"[bench] round {rnd + 1}: {mode} (load {os.getloadavg()[0]:.2f}) ...", file=sys.stderr)
                if mode == "floor":
                    run = floor_run(pages, server, args.concurrency)
                else:
                    run = harvest_run(pages, server, mode, args.concurrency, f"bench_static_{mode}_{rnd}")
                runs.append(run | {"round": rnd + 1})
                print(f"[bench]   {run['wall_s']} s", file=sys.stderr)
        js = None if args.skip_js_site else js_site_run()
    finally:
        server.stop()
        if not args.keep_tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    summary = summarize(runs)
    _print(summary, runs, js)
    last = {r["mode"]: r for r in runs}
    kept = [m for m in ("always", "never") if m in last]
    per_page: dict[str, Any] = {m: {pid: v["score"] for pid, v in last[m]["per_page"].items()} for m in kept}
    if "auto" in last:
        per_page["auto_rendered"] = {pid: v["rendered"] for pid, v in last["auto"]["per_page"].items()}
    write_result("harvest_static", {
        "bench": "harvest_static",
        "pages": len(pages),
        "concurrency": args.concurrency,
        "rounds": args.rounds,
        "javascript": True,
        "summary": summary,
        "runs": [{k: v for k, v in r.items() if k != "per_page"} for r in runs],
        "js_site": js,
        "per_page": per_page,  # (precision, recall, F1) of each page in the last round's always and never runs
        "machine": machine_info(),
    })
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
