"""Harvest on Ray vs a local harvest, on this machine.

The same generated site of N pages (default 500; ``tests/sites/hosts.py``: four host names on loopback, one
server, made at run time) is harvested from scratch four times, each run in a fresh process so that each pays its
own start-up (the local run loads the model in-process; the Ray run starts a local Ray instance, two browser
workers and one embedding worker, and shuts them down): a local harvest and a harvest on Ray (``--ray``, 2
workers), each with the store on local disk and on a SeaweedFS S3 server started for the run. Runs are
interleaved (local, ray, local, ray, ...) over ``--rounds`` rounds so drift from other load hits both alike.

Reported per run: wall time of ``harvest()`` (Ray start and shut-down included), the crawl's own elapsed time,
pages stored, pages/s, the load average before the run; and the ratios Ray/local (target <= 1.3) and S3/local
disk. Charter: max_depth 2, concurrency 4 (local: 4 tabs; Ray: 2 workers x 2 tabs), per-host politeness at its
default (2 per host), text mode on, no concept index.

    nice -n 10 .venv/bin/python bench/ray_harvest.py --pages 500 --json-out /tmp/ray_harvest.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import machine_info, write_result  # noqa: E402

HOSTS = 4


def child(cfg: dict) -> dict:
    """One harvest in this (fresh) process; returns its figures."""
    from orchestrator.charter import parse_charter
    from orchestrator.harvest import harvest

    charter = parse_charter(
        {
            "id": cfg["id"],
            "title": "ray harvest bench",
            "allowed_domains": cfg["allowed"],
            "seeds": [cfg["seed"]],
            "harvest": {"max_pages": 2000, "max_depth": 2, "concurrency": 4, "timeout_s": 30},
            "memory": {"use_concept_index": False, **cfg.get("memory", {})},
        },
        source="<bench>",
    )
    load = os.getloadavg()[0]
    t0 = time.monotonic()
    report = harvest(charter, ray="local" if cfg["engine"] == "ray" else None)
    wall = time.monotonic() - t0
    timings = report.timings
    return {
        "wall_s": round(wall, 2),
        "crawl_s": report.elapsed_s,
        "pages_stored": report.pages_stored,
        "chunks": report.chunks_total,
        "counts": report.counts(),
        "pages_per_s": round(report.pages_stored / wall, 3),
        "fetch_s_sum": round(timings.fetch_s, 2),
        "extract_s_sum": round(timings.extract_s, 2),
        "store_s_sum": round(timings.store_s, 2),
        "hars": len(report.har_paths),
        "load_before": round(load, 2),
    }


def run_child(cfg: dict, env: dict) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(cfg)], capture_output=True, text=True, env=env, timeout=3600
    )
    if out.returncode != 0:
        raise RuntimeError(f"run {cfg['id']} failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--no-s3", action="store_true", help="local disk only")
    ap.add_argument("--json-out", default=None)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return 0

    from tests.sites import seaweed
    from tests.sites.hosts import resolver_rules, start_hosts_site

    tmp = Path(tempfile.mkdtemp(prefix="brt-bench-ray-"))
    env = dict(os.environ, BRT_HOME=str(tmp / "home"), BRT_HOST_RESOLVER_RULES=resolver_rules(HOSTS))
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TRANSFORMERS_OFFLINE", "1")
    site = start_hosts_site(pages=args.pages, hosts=HOSTS)
    server = None if args.no_s3 else seaweed.start(tmp / "seaweed")
    stores = {"disk": {}}
    if server is not None:
        stores["s3"] = {"uri": f"s3://{server.default_bucket}/bench", "storage_options": server.storage_options()}
    runs: list[dict] = []
    try:
        for r in range(args.rounds):
            for store, memory in stores.items():
                for engine in ("local", "ray"):
                    cfg = {
                        "id": f"bench_{engine}_{store}_{r}",
                        "engine": engine,
                        "seed": site.seed,
                        "allowed": site.allowed,
                        "memory": memory,
                    }
                    print(f"[bench] round {r + 1}: {engine} harvest, store on {store} ...", file=sys.stderr)
                    res = run_child(cfg, env) | {"engine": engine, "store": store, "round": r + 1}
                    print(f"[bench]   {res['wall_s']} s, {res['pages_stored']} pages", file=sys.stderr)
                    runs.append(res)
    finally:
        site.stop()
        if server is not None:
            seaweed.stop(server)

    def wall(engine: str, store: str) -> float:
        return median(x["wall_s"] for x in runs if x["engine"] == engine and x["store"] == store)

    ratios = {f"ray/local ({s})": round(wall("ray", s) / wall("local", s), 3) for s in stores}
    if "s3" in stores:
        ratios.update({f"s3/disk ({e})": round(wall(e, "s3") / wall(e, "disk"), 3) for e in ("local", "ray")})
    result = {"pages": args.pages, "hosts": HOSTS, "machine": machine_info(), "runs": runs, "ratios": ratios}
    text = json.dumps(result, indent=2)
    print(text)
    if args.json_out:
        Path(args.json_out).write_text(text, encoding="utf-8")
    write_result("ray_harvest", result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
