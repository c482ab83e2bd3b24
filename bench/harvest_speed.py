"""Harvest speed on article-extraction-benchmark (181 real pages replayed from a HAR under their original
URLs).

1. One harvest from scratch (empty store in a temp BRT_HOME; the embedding model is loaded beforehand and its
   load time reported apart): wall time, pages/s, chunks/s, time per stage (fetch, extract, embed, chunk,
   write) from the report, its events, and timers wrapped around the store's embedder and chunker.
2. In the same process, the time to embed exactly the stored chunk texts alone (``embedder.embed_documents``,
   same embedder, same batch size) -> ratio harvest_wall / embed_alone (target <= 1.5).
3. A re-harvest of the same unchanged pages (same charter, same store, ``refresh=True``) -> speed-up
   first/second (target >= 5x) and the second run's chunks_embedded (should be 0).

``--compare-text-mode``: before the timed first harvest, the same first harvest with text mode off
(``harvest.block_resources: []``) into a second fresh store, so both are measured in one run against the same
embed-alone baseline. ``--block-resources`` sets the charter's list for the main harvests (default: the charter's
default, images, media and fonts).

``--cpu-account``: the CPU seconds of this process and of every process under it (Playwright's node driver,
Chromium's browser, renderer, GPU and utility processes), sampled every 0.5 s, over the first harvest and over
the embed-alone baseline (with its read of the chunk texts back from the store, a fraction of a second). From
them, a floor for the ratio on this machine: the browser side's CPU plus the embedding's CPU alone, spread over
every core, against the embed-alone wall time. No pipeline on this machine can reach a ratio below it, however
well it overlaps its stages.

    .venv/bin/python bench/harvest_speed.py --eval-dir ../shared/eval
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import (  # noqa: E402
    hosts_of,
    load_aeb,
    machine_info,
    resolve_eval_dir,
    setup_env,
    write_har,
    write_result,
)

TARGET_RATIO = 1.5
TARGET_SPEEDUP = 5.0


class _Timer:
    """Accumulates the wall time of calls to a wrapped function (thread-safe enough: one writer thread)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0
        self.items = 0

    def wrap(self, fn, count_arg: bool = False):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            t0 = time.monotonic()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds += time.monotonic() - t0
                self.calls += 1
                if count_arg and args:
                    try:
                        self.items += len(args[0])
                    except TypeError:
                        pass

        return inner


class _CpuAccount:
    """CPU seconds of this process and its descendants by kind, sampled every 0.5 s in a thread (a process that
    exits between samples loses at most its last 0.5 s, so the account errs low)."""

    def __init__(self) -> None:
        import threading

        import psutil

        self._psutil = psutil
        self._me = psutil.Process()
        self._last: dict[int, tuple[str, float]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _kind(self, proc) -> str:
        if proc.pid == self._me.pid:
            return "python"
        name = proc.name().lower()
        if "chrom" in name or "headless_shell" in name:
            cmd = " ".join(proc.cmdline())
            kind = cmd.split("--type=", 1)[1].split()[0] if "--type=" in cmd else "browser"
            return f"chromium {kind}"
        return "node" if "node" in name else f"other ({name})"

    def _sample(self) -> None:
        ps = self._psutil
        try:
            procs = [self._me, *self._me.children(recursive=True)]
        except ps.Error:
            return
        for proc in procs:
            try:
                kind, cpu = self._kind(proc), proc.cpu_times()
            except ps.Error:
                continue
            with self._lock:
                self._last[proc.pid] = (kind, cpu.user + cpu.system)

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            self._sample()

    def totals(self) -> dict[int, tuple[str, float]]:
        """Every process seen so far, with its kind and CPU seconds at its last sample (taken now)."""
        self._sample()
        with self._lock:
            return dict(self._last)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()

    @staticmethod
    def between(before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]]) -> dict[str, float]:
        """CPU seconds spent between two ``totals()``, summed by kind."""
        spent: dict[str, float] = {}
        for pid, (kind, cpu) in after.items():
            gone = before.get(pid, (kind, 0.0))[1]
            spent[kind] = spent.get(kind, 0.0) + max(0.0, cpu - gone)
        return {k: round(v, 1) for k, v in sorted(spent.items())}


def cpu_floor(harvest_cpu: dict[str, float], embed_alone_cpu: float, embed_alone_s: float) -> dict:
    """The lowest ratio harvest_wall / embed_alone this machine allows: the browser side's CPU (every process
    but this one) and the embedding's CPU alone, run on every core at once with nothing else."""
    browser_side = sum(v for k, v in harvest_cpu.items() if k != "python")
    cores = os.cpu_count() or 1
    floor_s = (browser_side + embed_alone_cpu) / cores
    return {
        "browser_side_cpu_s": round(browser_side, 1),
        "embed_alone_cpu_s": round(embed_alone_cpu, 1),
        "cores": cores,
        "floor_wall_s": round(floor_s, 1),
        "ratio_floor": round(floor_s / embed_alone_s, 2) if embed_alone_s else None,
        "browser_side_alone_ratio": round(browser_side / cores / embed_alone_s, 2) if embed_alone_s else None,
    }


def _ev(event, key: str, default=None):
    if isinstance(event, dict):
        return event.get(key, default)
    return getattr(event, key, default)


def _event_stage_sums(events) -> dict[str, float]:
    sums = {"fetch_s": 0.0, "extract_s": 0.0, "store_s": 0.0}
    for e in events:
        t = _ev(e, "timings") or {}
        for k in sums:
            v = t.get(k) if isinstance(t, dict) else getattr(t, k, None)
            sums[k] += float(v or 0.0)
    return {k: round(v, 2) for k, v in sums.items()}


def run_harvest(charter, har, memory, *, refresh: bool, embed_t: _Timer, chunk_t: _Timer) -> dict:
    from orchestrator.harvest import harvest

    e0, c0 = embed_t.seconds, chunk_t.seconds
    ei0 = embed_t.items
    t0 = time.monotonic()
    report = harvest(charter, replay=har, memory=memory, refresh=refresh)
    wall = time.monotonic() - t0
    timings = report.timings
    store_s = float(getattr(timings, "store_s", 0.0))
    embed_s = embed_t.seconds - e0
    chunk_s = chunk_t.seconds - c0
    return {
        "wall_s": round(wall, 2),
        "elapsed_s": report.elapsed_s,
        "outcomes": report.counts(),
        "unchanged": sum(1 for e in report.events if e.get("unchanged")),  # refresh: not rendered again
        "pages_stored": report.pages_stored,
        "chunks_total": report.chunks_total,
        "chunks_embedded": report.chunks_embedded,
        "texts_embedded_timer": embed_t.items - ei0,
        "pages_per_s": round(report.pages_stored / wall, 3) if wall else None,
        "chunks_per_s": round(report.chunks_total / wall, 3) if wall else None,
        "report_timings": {k: round(float(v), 2) for k, v in vars(timings).items()},
        "event_timing_sums": _event_stage_sums(report.events),
        "embed_s": round(embed_s, 2),
        "chunk_s": round(chunk_s, 2),
        "write_s": round(max(0.0, store_s - embed_s - chunk_s), 2),
        "blocked_requests": len(report.blocked_requests),
        "aborted_requests": dict(getattr(report, "aborted_requests", {}) or {}),
        "not_stored": [
            {"url": e.get("url"), "outcome": e.get("outcome"), "reason": e.get("reason")}
            for e in report.events
            if e.get("outcome") != "stored"
        ][:20],
    }


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--eval-dir",
        default=None,
        help="folder holding article-extraction-benchmark/ (default: ../shared/eval relative to the repo root)",
    )
    ap.add_argument("--javascript", choices=["true", "false"], default="true", help="charter harvest.javascript")
    ap.add_argument(
        "--concurrency", type=int, default=None, help="charter harvest.concurrency (default: charter default)"
    )
    ap.add_argument("--limit", type=int, default=None, help="only the first N pages (quick check)")
    ap.add_argument(
        "--skip-no-refresh",
        action="store_true",
        help="do not time a third harvest with refresh=False (the library may skip pages already stored)",
    )
    ap.add_argument(
        "--block-resources",
        default=None,
        help="charter harvest.block_resources, comma-separated ('none' = text mode off; default: the charter's)",
    )
    ap.add_argument(
        "--compare-text-mode",
        action="store_true",
        help="also time a first harvest with text mode off (block_resources: []) in the same run",
    )
    ap.add_argument("--skip-refresh", action="store_true", help="time the first harvest(s) only")
    ap.add_argument(
        "--cpu-account", action="store_true", help="CPU seconds by process kind, and the ratio's floor on this machine"
    )
    ap.add_argument("--json-out", default=None)
    ap.add_argument("--keep-tmp", action="store_true")
    return ap.parse_args(argv)


def _harvest_settings(args: argparse.Namespace, n_pages: int) -> dict:
    harvest_cfg: dict = {
        "max_pages": n_pages + 10,
        "max_depth": 0,
        "obey_robots": False,
        "javascript": args.javascript == "true",
    }
    if args.concurrency:
        harvest_cfg["concurrency"] = args.concurrency
    if args.block_resources is not None:
        names = [] if args.block_resources in ("", "none") else args.block_resources.split(",")
        harvest_cfg["block_resources"] = [n.strip() for n in names if n.strip()]
    return harvest_cfg


class _Bench:
    """One run's set-up: the pages' HAR, the charter, its store with a warm embedder, and the timers wrapped
    around the store's embedder (an instance attribute wins over the class method) and chunker (the module
    global ``memory_store._writes.chunk_with``)."""

    def __init__(self, args: argparse.Namespace, eval_dir: Path, tmp: Path) -> None:
        from memory_store import _writes as writes_mod
        from orchestrator.config import open_memory

        self.args = args
        pages = load_aeb(eval_dir)
        self.pages = pages[: args.limit] if args.limit else pages
        self.har = write_har(((p.url.split("#", 1)[0], p.html) for p in self.pages), tmp / "aeb.har")
        self.harvest_cfg = _harvest_settings(args, len(self.pages))
        self.charter = self.make_charter("bench_speed", self.harvest_cfg)
        self.memory = open_memory(self.charter, create=True)
        # Load the model before timing the harvest (process start-up is not harvest throughput).
        t0 = time.monotonic()
        self.embedder = self.memory.embedder
        self.embedder.embed_documents(["warm-up"])
        self.model_load_s = time.monotonic() - t0
        self.embed_t, self.chunk_t = _Timer(), _Timer()
        self.writes_mod = writes_mod
        self.original_embed = self.embedder.embed_documents
        self.original_chunk_with = writes_mod.chunk_with
        self.embedder.embed_documents = self.embed_t.wrap(self.original_embed, count_arg=True)
        writes_mod.chunk_with = self.chunk_t.wrap(self.original_chunk_with)

    def make_charter(self, charter_id: str, settings: dict) -> object:
        from orchestrator.charter import parse_charter

        return parse_charter(
            {
                "id": charter_id,
                "title": "harvest speed, article-extraction-benchmark replay",
                "allowed_domains": hosts_of(p.url for p in self.pages),
                "seeds": [p.url for p in self.pages],
                "harvest": settings,
                "memory": {"enabled": True, "use_concept_index": False},
            },
            source="<bench>",
        )

    def harvest(self, charter, memory, *, refresh: bool) -> dict:
        return run_harvest(charter, self.har, memory, refresh=refresh, embed_t=self.embed_t, chunk_t=self.chunk_t)

    def embed_alone(self) -> tuple[int, float]:
        """The stored chunk texts embedded alone, same embedder and batch size: (chunks, seconds)."""
        texts = [row["text"] for row in self.memory.chunks(include_vectors=False)]
        self.embedder.embed_documents = self.original_embed
        t0 = time.monotonic()
        self.original_embed(texts)
        seconds = time.monotonic() - t0
        self.embedder.embed_documents = self.embed_t.wrap(self.original_embed, count_arg=True)
        return len(texts), seconds

    def restore(self) -> None:
        self.writes_mod.chunk_with = self.original_chunk_with
        self.embedder.embed_documents = self.original_embed


def _text_mode_off(bench: _Bench, load_start: list[float]) -> dict:
    from orchestrator.config import open_memory

    off_charter = bench.make_charter("bench_speed_text_off", dict(bench.harvest_cfg, block_resources=[]))
    off_memory = open_memory(off_charter, create=True)
    print(f"[bench] first harvest, text mode off (load average {load_start}) ...", file=sys.stderr)
    text_off = bench.harvest(off_charter, off_memory, refresh=False)
    text_off["loadavg_at_start"] = load_start
    text_off["block_resources"] = []
    print(f"[bench]   {text_off['wall_s']} s, {text_off['outcomes']}", file=sys.stderr)
    return text_off


def _first_and_baseline(bench: _Bench, cpu_account: bool) -> tuple[dict, int, float, dict | None]:
    """The timed first harvest, then the embed-alone baseline (with the CPU account around both when asked)."""
    load_first = [round(x, 2) for x in os.getloadavg()]
    print(f"[bench] first harvest of {len(bench.pages)} pages (load average {load_first}) ...", file=sys.stderr)
    account = _CpuAccount() if cpu_account else None
    cpu_marks = [account.totals()] if account else []
    first = bench.harvest(bench.charter, bench.memory, refresh=False)
    if account:
        cpu_marks.append(account.totals())
    first["loadavg_at_start"] = load_first
    first["block_resources"] = list(bench.charter.harvest.block_resources)
    print(f"[bench]   {first['wall_s']} s, {first['outcomes']}", file=sys.stderr)
    n_texts, embed_alone = bench.embed_alone()
    cpu = None
    if account:
        cpu_marks.append(account.totals())
        account.close()
        harvest_cpu = _CpuAccount.between(cpu_marks[0], cpu_marks[1])
        embed_cpu = _CpuAccount.between(cpu_marks[1], cpu_marks[2]).get("python", 0.0)
        cpu = {"first_harvest": harvest_cpu, **cpu_floor(harvest_cpu, embed_cpu, embed_alone)}
    print(f"[bench] embed alone: {n_texts} chunks in {embed_alone:.2f} s", file=sys.stderr)
    return first, n_texts, embed_alone, cpu


def _reharvests(bench: _Bench) -> tuple[dict | None, dict | None]:
    """The re-harvest with refresh, and the one without, unless skipped."""
    args = bench.args
    second = third = None
    if not args.skip_refresh:
        print("[bench] re-harvest (refresh=True) ...", file=sys.stderr)
        second = bench.harvest(bench.charter, bench.memory, refresh=True)
        print(
            f"[bench]   {second['wall_s']} s, {second['outcomes']}, chunks_embedded {second['chunks_embedded']}",
            file=sys.stderr,
        )
    if not args.skip_no_refresh and not args.skip_refresh:
        print("[bench] re-harvest without refresh (stored pages may be skipped) ...", file=sys.stderr)
        third = bench.harvest(bench.charter, bench.memory, refresh=False)
        print(f"[bench]   {third['wall_s']} s, {third['outcomes']}", file=sys.stderr)
    return second, third


def _print_runs(runs: list[tuple[str, dict]]) -> None:
    for name, r in runs:
        print(
            f"{name}: wall {r['wall_s']} s | {r['pages_stored']} pages stored "
            f"({r['pages_per_s']} pages/s) | "
            f"{r['chunks_total']} chunks ({r['chunks_per_s']} chunks/s) | {r['chunks_embedded']} embedded"
        )
        for miss in r["not_stored"]:
            print(f"   not stored: {miss['outcome']} {miss['url']} ({miss['reason']})")
        print(f"   aborted requests (text mode) {r['aborted_requests']}, blocked requests {r['blocked_requests']}")
        print(
            f"   stages: fetch {r['report_timings'].get('fetch_s')} s, extract "
            f"{r['report_timings'].get('extract_s')} s (both summed over pages, concurrent) | store "
            f"{r['report_timings'].get('store_s')} s = embed {r['embed_s']} + chunk {r['chunk_s']} + "
            f"write {r['write_s']} (writer thread, beside fetching) | outcomes {r['outcomes']}"
        )


def _print_report(bench: _Bench, m: dict) -> None:
    """The human-readable account of the measurements ``m`` (the keys of ``_measure``)."""
    first, second, third, text_off, cpu = m["first"], m["second"], m["third"], m["text_off"], m["cpu"]
    ratio, speedup, ratio_off, embed_alone = m["ratio"], m["speedup"], m["ratio_off"], m["embed_alone"]
    print()
    print(
        f"harvest speed, {len(bench.pages)} pages replayed from HAR, javascript={bench.harvest_cfg['javascript']}, "
        f"concurrency={bench.charter.harvest.concurrency}, batch size {getattr(bench.embedder, 'batch_size', '?')}, "
        f"model {bench.memory.model_name}"
    )
    print(
        f"model load (before timing): {bench.model_load_s:.2f} s; load average at start {m['load_start']}, "
        f"at end {[round(x, 2) for x in os.getloadavg()]} on {os.cpu_count()} CPUs"
    )
    runs = [("first harvest, text mode off", text_off)] if text_off else []
    runs.append((f"first harvest (block_resources {first['block_resources']})", first))
    if second is not None:
        runs.append(("re-harvest (refresh)", second))
    if third is not None:
        runs.append(("re-harvest (no refresh)", third))
    _print_runs(runs)
    n_texts = m["n_texts"]
    print(f"embed alone: {n_texts} chunk texts in {embed_alone:.2f} s ({n_texts / embed_alone:.1f} chunks/s)")
    print(
        f"harvest_wall / embed_alone = {ratio:.2f} (target <= {TARGET_RATIO}) -> "
        f"{'reached' if ratio is not None and ratio <= TARGET_RATIO else 'MISSED'}"
    )
    if cpu is not None:
        print(
            f"CPU seconds over the first harvest: {cpu['first_harvest']}; embedding alone "
            f"{cpu['embed_alone_cpu_s']} CPU-s. Floor on {cpu['cores']} cores: (browser side "
            f"{cpu['browser_side_cpu_s']} + embedding {cpu['embed_alone_cpu_s']}) / {cpu['cores']} = "
            f"{cpu['floor_wall_s']} s -> ratio >= {cpu['ratio_floor']} (the browser side alone: "
            f"{cpu['browser_side_alone_ratio']})"
        )
    if ratio_off is not None:
        print(
            f"text mode off: harvest_wall / embed_alone = {ratio_off:.2f}; text mode on/off wall = "
            f"{first['wall_s'] / text_off['wall_s']:.3f}"
        )
    if third is not None and third["wall_s"]:
        print(
            f"re-harvest without refresh: {third['wall_s']} s, speed-up {first['wall_s'] / third['wall_s']:.2f}x,"
            f" outcomes {third['outcomes']}, chunks_embedded {third['chunks_embedded']}"
        )
    if second is not None:
        print(
            f"re-harvest speed-up first/second = {speedup:.2f}x (target >= {TARGET_SPEEDUP}x) -> "
            f"{'reached' if speedup is not None and speedup >= TARGET_SPEEDUP else 'MISSED'}; "
            f"second run chunks_embedded = {second['chunks_embedded']} (target 0)"
        )


def _measure(bench: _Bench) -> dict:
    """Every timed run of the benchmark, and the ratios between them."""
    load_start = [round(x, 2) for x in os.getloadavg()]
    text_off = _text_mode_off(bench, load_start) if bench.args.compare_text_mode else None
    first, n_texts, embed_alone, cpu = _first_and_baseline(bench, bench.args.cpu_account)
    second, third = _reharvests(bench)
    bench.restore()
    return {
        "load_start": load_start,
        "text_off": text_off,
        "first": first,
        "n_texts": n_texts,
        "embed_alone": embed_alone,
        "cpu": cpu,
        "second": second,
        "third": third,
        "ratio": first["wall_s"] / embed_alone if embed_alone else None,
        "speedup": first["wall_s"] / second["wall_s"] if second and second["wall_s"] else None,
        "ratio_off": text_off["wall_s"] / embed_alone if text_off and embed_alone else None,
    }


def _summary(bench: _Bench, m: dict) -> dict:
    first, second, third = m["first"], m["second"], m["third"]
    ratio, speedup, ratio_off = m["ratio"], m["speedup"], m["ratio_off"]
    return {
        "bench": "harvest_speed",
        "pages": len(bench.pages),
        "javascript": bench.harvest_cfg["javascript"],
        "concurrency": bench.charter.harvest.concurrency,
        "batch_size": getattr(bench.embedder, "batch_size", None),
        "model": bench.memory.model_name,
        "model_load_s": round(bench.model_load_s, 2),
        "loadavg_at_start": m["load_start"],
        "first": first,
        "first_text_mode_off": m["text_off"],
        "ratio_text_mode_off_over_embed": round(ratio_off, 3) if ratio_off else None,
        "embed_alone": {"chunks": m["n_texts"], "seconds": round(m["embed_alone"], 2)},
        "second": second,
        "third_no_refresh": third,
        "speedup_first_over_no_refresh": round(first["wall_s"] / third["wall_s"], 3)
        if third and third["wall_s"]
        else None,
        "ratio_harvest_over_embed": round(ratio, 3) if ratio else None,
        "cpu_account": m["cpu"],
        "speedup_first_over_second": round(speedup, 3) if speedup else None,
        "target": {"ratio_max": TARGET_RATIO, "speedup_min": TARGET_SPEEDUP, "second_chunks_embedded": 0},
        "reached": {
            "ratio": bool(ratio is not None and ratio <= TARGET_RATIO),
            "speedup": bool(speedup is not None and speedup >= TARGET_SPEEDUP),
            "second_chunks_embedded": bool(second and second["chunks_embedded"] == 0),
        },
        "machine": machine_info(),
    }


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    eval_dir = resolve_eval_dir(args.eval_dir)
    tmp = Path(tempfile.mkdtemp(prefix="brt-bench-speed-"))
    setup_env(tmp)
    try:
        bench = _Bench(args, eval_dir, tmp)
        measured = _measure(bench)
        _print_report(bench, measured)
        summary = _summary(bench, measured)
        print()
        print(json.dumps(summary))
        if args.json_out:
            Path(args.json_out).write_text(json.dumps(summary, indent=1))
        write_result("harvest_speed", summary)
    finally:
        if args.keep_tmp:
            print(f"[bench] kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
