"""Cold start of the query path: wall time of ``brt search --json`` (and ``brt synthesize --json``) on a small
store, each run a new process, next to ``python -c "import lancedb"`` and ``python -c "pass"``, all in one run.

    nice -n 10 .venv/bin/python bench/cold_start.py [--repeats 5] [--baseline-repo ../main] [--json out.json]

The store: the 7 pages of the offline demo site (orchestrator/demo_site), extracted as a harvest extracts them,
in a temporary BRT_HOME. Every command runs ``--repeats`` times (median reported), rounds interleaved so load
changes on a shared machine hit all commands alike, after one unmeasured warm-up round (OS file cache).
``--baseline-repo`` also times the same commands with another checkout of brt first on PYTHONPATH (e.g. the
commit before this work) against the same store: before and after in the same run. ``-X importtime`` of one
``brt search`` per code base gives the import breakdown (cumulative seconds per top-level package).
Targets: ``brt search`` <= 1.5 x the lancedb import, and <= 2.5 s on this machine when idle.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench._common import emit_report, store_machine_info  # noqa: E402

QUERY = "What Largest Contentful Paint time counts as good?"
BREAKDOWN = (
    "torch",
    "transformers",
    "FlagEmbedding",
    "peft",
    "lancedb",
    "lance_namespace",
    "lance_namespace_urllib3_client",
    "pyarrow",
    "pandas",
    "numpy",
    "onnxruntime",
    "tokenizers",
    "pydantic",
    "click",
    "yaml",
    "rich",
    "networkx",
    "trafilatura",
    "orchestrator",
    "memory_store",
    "concept_index",
)


def build_store(home: Path) -> Path:
    """The demo site's pages in the demo charter's store under ``home``; returns the charter path."""
    from memory_store import Memory
    from orchestrator.harvest.extract import extract_page

    site = REPO_ROOT / "orchestrator" / "demo_site"
    mem = Memory("demo_cwv", basepath=home / "memory")
    pages = []
    for html_file in sorted(site.glob("*.html")):
        url = f"http://127.0.0.1:8765/{html_file.name}"
        page = extract_page(html_file.read_text(encoding="utf-8"), url)
        if page is not None:
            pages.append({"url": url, "text": page.text, "title": page.title})
    mem.add_many(pages)
    return REPO_ROOT / "charters" / "demo.yaml"


def _commit(repo: Path) -> str:
    r = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() or "?"


def _cwd(env: dict[str, str]) -> str:
    # ``python -m`` puts the working folder first on sys.path: run each code base from its own checkout
    return env.get("PYTHONPATH") or str(REPO_ROOT)


def timed(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=_cwd(env))
    elapsed = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"command failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr[-2000:]}")
    return elapsed


def import_breakdown(cmd: list[str], env: dict[str, str]) -> dict:
    """Cumulative import seconds per top-level package (and the total) of one run under ``-X importtime``."""
    r = subprocess.run(
        [cmd[0], "-X", "importtime", *cmd[1:]], env=env, capture_output=True, text=True, cwd=_cwd(env)
    )
    per: dict[str, float] = {}
    total = 0.0
    for line in r.stderr.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \|(\s*)(\S+)", line)
        if not m:
            continue
        cumulative, depth, name = int(m.group(1)) / 1e6, len(m.group(2)) // 2, m.group(3)
        if depth == 0:
            total += cumulative
        top = name.split(".")[0]
        # the outermost import of a package holds its cumulative time; nested ones are inside it
        if top in BREAKDOWN and (name == top or top not in per):
            per[top] = max(per.get(top, 0.0), cumulative)
    return {"total_import_s": round(total, 3), **{k: round(v, 3) for k, v in sorted(per.items(), key=lambda x: -x[1])}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--baseline-repo", default=None, help="another brt checkout to time the same way (before)")
    ap.add_argument("--json", dest="json_out", default=None)
    args = ap.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="brt-cold-"))
    try:
        home = tmp / "brt_home"
        env = {
            **os.environ,
            "BRT_HOME": str(home),
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "PYTHONPATH": str(REPO_ROOT),
        }
        os.environ.update({k: env[k] for k in ("BRT_HOME", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")})
        charter = build_store(home)
        py = sys.executable
        search = [py, "-m", "orchestrator.cli", "search", str(charter), QUERY, "--json"]
        synth = [py, "-m", "orchestrator.cli", "synthesize", str(charter), "--json", "--out", str(tmp / "out.md")]
        commands: dict[str, tuple[list[str], dict[str, str]]] = {
            "python -c pass": ([py, "-c", "pass"], env),
            "python -c 'import lancedb'": ([py, "-c", "import lancedb"], env),
            "brt search --json": (search, env),
            "brt synthesize --json": (synth, env),
        }
        if args.baseline_repo:
            base_env = {**env, "PYTHONPATH": str(Path(args.baseline_repo).resolve())}
            commands["baseline: brt search --json"] = (search, base_env)
            commands["baseline: brt synthesize --json"] = (synth, base_env)
        for cmd, e in commands.values():  # warm-up: file cache, model export (if missing), FTS index
            timed(cmd, e)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for r in range(args.repeats):
            for name, (cmd, e) in commands.items():
                times[name].append(timed(cmd, e))
            print(f"round {r + 1}: " + ", ".join(f"{n} {t[-1]:.2f}s" for n, t in times.items()), file=sys.stderr)
        medians = {name: round(statistics.median(t), 3) for name, t in times.items()}
        lance = medians["python -c 'import lancedb'"]
        breakdown = {"brt search": import_breakdown(search, env)}
        if args.baseline_repo:
            breakdown["baseline: brt search"] = import_breakdown(search, commands["baseline: brt search --json"][1])
        report = {
            "repeats": args.repeats,
            "median_s": medians,
            "runs_s": {n: [round(x, 3) for x in t] for n, t in times.items()},
            "search_over_lancedb_import": round(medians["brt search --json"] / lance, 2),
            "targets": {"search_over_lancedb_import_max": 1.5, "search_idle_max_s": 2.5},
            "import_breakdown_s": breakdown,
            "machine": store_machine_info(),
            "command": " ".join([Path(sys.executable).name, *sys.argv]),
        }
        report["commit"] = _commit(REPO_ROOT)
        if args.baseline_repo:
            base = Path(args.baseline_repo).resolve()
            report["baseline_repo"] = f"{base} @ {_commit(base)}"
            report["baseline_search_over_lancedb_import"] = round(medians["baseline: brt search --json"] / lance, 2)
        emit_report(report, args.json_out, name="cold_start")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
