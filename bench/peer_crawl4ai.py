"""brt against Crawl4AI on the same pages: CPU-seconds of the whole process tree, wall time and extraction F1.

The 181 pages of article-extraction-benchmark are served by one local HTTP server (``/aeb/<id>.html``, as
``bench/harvest_static.py`` serves them). Three setups read all of them, four pages at a time, and end with the
text embedded by the same model (all-MiniLM-L6-v2, the copy brt bundles) in a LanceDB table:

- ``brt_auto``: ``brt harvest`` (the CLI, a process of its own) with ``harvest.render: auto``;
- ``c4ai_browser``: Crawl4AI with its browser (the system Chromium), JavaScript on;
- ``c4ai_http``: Crawl4AI over plain HTTP (``AsyncHTTPCrawlerStrategy``), no browser;
- ``brt_auto_int8`` (only when named in ``--setups``): ``brt_auto`` with ``BRT_EMBED_BACKEND=onnx-int8``, the
  opt-in int8 embedder (not the default: docs/storage.md, "Embeddings"), with its own ratios to the peers.

Crawl4AI's pages go the way its documentation shows for RAG: the "fit markdown" of its ``DefaultMarkdownGenerator``
with a ``PruningContentFilterLXML`` (boilerplate pruned; the raw markdown when that is empty), split into passages
of at most 180 words (about the model's 256 tokens: every word embedded, as brt's chunks are) at paragraph ends,
embedded with sentence-transformers (torch, CPU) and added to LanceDB. Each setup runs as a fresh process per round
(interpreter start, imports and model load count for all three), the setups in alternating order (rotated each
round) so that the machine's load hits them alike. CPU-seconds are those of the process and everything under it
(rusage of the reaped process tree, and psutil samples every 0.5 s: the larger), which hold on a loaded machine
where wall times do not. Extraction F1: 4-gram shingles against the gold text (``bench/_common.py``), brt's stored
page text and Crawl4AI's markdown.

Crawl4AI is installed by this script into a virtual environment of its own, outside the repository
(``--venv``, default ``~/.cache/brt-bench/crawl4ai-venv``: ``crawl4ai``, ``sentence-transformers``, ``lancedb``,
and torch from a local CPU wheel when ``--torch-wheel`` or ``/opt/wheels`` has one), and pointed at the system
Chromium (``--chromium``, default ``/usr/bin/chromium``, the browser brt uses): Crawl4AI has no setting for the
binary, so the run script gives Playwright's launch that ``executable_path``. Nothing of it is a dependency of brt,
and this benchmark is not part of CI.

    flock /tmp/brt-heavy.lock nice -n 5 .venv/bin/python bench/peer_crawl4ai.py --eval-dir ../shared/eval \\
        [--rounds 3] [--limit N] [--setups brt_auto,c4ai_browser,c4ai_http]

Writes ``bench/results/peer_crawl4ai.json``: per run and the medians per setup (``brt_auto_cpu_s``,
``c4ai_browser_cpu_s``, ``c4ai_http_cpu_s``, their walls, ``brt_auto_f1`` and the peer's F1) and the ratios the
targets of issue 45 name (brt ≤ 0.25× the browser peer's CPU, ≤ 0.40× the HTTP peer's, F1 ≥ 0.955).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench._common import evaluate, load_aeb, machine_info, resolve_eval_dir, write_result  # noqa: E402

SETUPS = ("brt_auto", "c4ai_browser", "c4ai_http", "brt_auto_int8")
DEFAULT_SETUPS = SETUPS[:3]
DEFAULT_VENV = Path("~/.cache/brt-bench/crawl4ai-venv").expanduser()
PEER_PACKAGES = ("crawl4ai", "sentence-transformers", "lancedb")
TARGETS = {"brt_over_c4ai_browser_cpu_max": 0.25, "brt_over_c4ai_http_cpu_max": 0.40, "brt_auto_f1_min": 0.955}
CONCURRENCY = 4


# -- the peer's environment -------------------------------------------------------------------------------------


def _venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def ensure_peer_venv(venv: Path, torch_wheel: Path | None) -> Path:
    """The peer's virtual environment (created and filled on first use; a second call is quick). Returns its
    Python."""
    python = _venv_python(venv)
    marker = venv / ".brt-peer-ready"
    if marker.is_file() and python.is_file():
        return python
    base = getattr(sys, "_base_executable", sys.executable)
    print(f"[peer] creating {venv} (Crawl4AI and its dependencies: several minutes, once)", file=sys.stderr)
    venv.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([base, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    wheel = torch_wheel
    if wheel is None and Path("/opt/wheels").is_dir():
        wheel = next(iter(sorted(Path("/opt/wheels").glob("torch-*cpu*.whl"))), None)
    if wheel is not None and Path(wheel).is_file():
        subprocess.run([*pip, str(wheel)], check=True)  # the CPU build first: pip would pull a CUDA one
    subprocess.run([*pip, *PEER_PACKAGES], check=True)
    marker.write_text(json.dumps({"packages": PEER_PACKAGES, "torch_wheel": str(wheel) if wheel else None}))
    return python


def peer_versions(python: Path) -> dict[str, str]:
    code = (
        "import json, importlib.metadata as m; "
        f"print(json.dumps({{p: m.version(p) for p in {list(PEER_PACKAGES) + ['torch', 'playwright']!r}}}))"
    )
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=False)
    try:
        return json.loads(out.stdout)
    except ValueError:
        return {}


# -- measuring a process tree ------------------------------------------------------------------------------------


class TreeMeter:
    """CPU seconds of a child process and everything under it: psutil samples of the live tree every 0.5 s, and
    the rusage of reaped children when it ends (the larger of the two)."""

    def __init__(self, proc: subprocess.Popen) -> None:
        import psutil

        self._psutil = psutil
        self._root = psutil.Process(proc.pid)
        self._seen: dict[int, float] = {}
        self._stop = threading.Event()
        self._usage0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        try:
            procs = [self._root, *self._root.children(recursive=True)]
        except self._psutil.Error:
            return
        for p in procs:
            try:
                t = p.cpu_times()
            except self._psutil.Error:
                continue
            self._seen[p.pid] = t.user + t.system  # (children's time is counted where the child is sampled)

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            self._sample()

    def stop(self) -> float:
        """CPU seconds of the tree (call after the child was waited for)."""
        self._stop.set()
        self._thread.join()
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        reaped = (usage.ru_utime - self._usage0.ru_utime) + (usage.ru_stime - self._usage0.ru_stime)
        sampled = sum(self._seen.values())
        return round(max(reaped, sampled), 1)


def run_measured(cmd: list[str], env: dict[str, str], log: Path, timeout_s: float) -> tuple[float, float, int]:
    """Run ``cmd`` as a child process; (CPU seconds of its tree, wall seconds, exit code)."""
    with open(log, "wb") as out:
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=REPO_ROOT)
        meter = TreeMeter(proc)
        try:
            rc = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
        wall = time.monotonic() - t0
        cpu = meter.stop()
    return cpu, round(wall, 2), rc


# -- the setups --------------------------------------------------------------------------------------------------


def brt_run(urls: list[str], work: Path, rnd: int, env: dict[str, str], timeout_s: float,
            tag: str = "brt_auto") -> dict[str, Any]:
    """``brt harvest`` with ``render: auto`` in a process of its own (a fresh BRT_HOME); the texts read back from
    its store afterwards (not measured)."""
    import yaml

    home = work / f"{tag}_home_{rnd}"
    charter = work / f"{tag}_{rnd}.yaml"
    charter.write_text(yaml.safe_dump({
        "id": "peer_bench",
        "title": "peer benchmark (brt, render auto)",
        "allowed_domains": ["127.0.0.1"],
        "seeds": urls,
        "harvest": {"max_pages": len(urls) + 10, "max_depth": 0, "concurrency": CONCURRENCY,
                    "per_domain_concurrency": CONCURRENCY, "obey_robots": False, "javascript": True,
                    "render": "auto"},
        "memory": {"use_concept_index": False},
    }))
    cmd = [sys.executable, "-m", "orchestrator.cli", "--quiet", "harvest", str(charter)]
    log = work / f"{tag}_{rnd}.log"
    cpu, wall, rc = run_measured(cmd, {**env, "BRT_HOME": str(home)}, log, timeout_s)
    texts: dict[str, str] = {}
    chunks = 0
    if rc == 0:
        from memory_store import Memory

        mem = Memory("peer_bench", basepath=home / "memory", create=False)
        texts = {p.url: p.text for p in mem.pages()}
        chunks = mem.count_chunks()
    shutil.rmtree(home, ignore_errors=True)
    return {"cpu_s": cpu, "wall_s": wall, "rc": rc, "texts": texts, "chunks": chunks, "log": str(log)}


_PEER_RUN = r'''
"""One Crawl4AI run (inside the peer's venv): crawl the URLs, split the markdown, embed, write LanceDB."""
import asyncio, json, re, sys

args = json.loads(sys.argv[1])


def passages(text, words=180):
    """Passages of at most ``words`` words (about the model's 256 tokens), cut at paragraph ends and, in a
    longer paragraph, every ``words`` words: every word of the page is embedded, as brt's chunks embed it."""
    out, cur, n = [], [], 0
    for para in [p.strip() for p in re.split(r"\n\s*\n", text or "") if p.strip()]:
        ws = para.split()
        pieces = [" ".join(ws[i:i + words]) for i in range(0, len(ws), words)] if len(ws) > words else [para]
        for piece in pieces:
            w = len(piece.split())
            if cur and n + w > words:
                out.append("\n\n".join(cur)); cur, n = [], 0
            cur.append(piece); n += w
    if cur:
        out.append("\n\n".join(cur))
    return out


def use_system_chromium(path):
    """Crawl4AI launches Playwright's own Chromium and has no setting for another binary: every launch of this
    process gets ``executable_path`` (the system Chromium brt uses too)."""
    from playwright.async_api._generated import BrowserType

    launch = BrowserType.launch

    async def launch_system(self, *a, **kw):
        kw.setdefault("executable_path", path)
        return await launch(self, *a, **kw)

    BrowserType.launch = launch_system


async def crawl(urls):
    from crawl4ai import AsyncWebCrawler, BrowserConfig, CacheMode, CrawlerRunConfig
    from crawl4ai.async_dispatcher import SemaphoreDispatcher

    try:  # the lxml pruning Crawl4AI 0.9.5 recommends (the BeautifulSoup one is about 10x slower, same output)
        from crawl4ai.content_filter_strategy_lxml import PruningContentFilterLXML as Pruning
    except ImportError:
        from crawl4ai.content_filter_strategy import PruningContentFilter as Pruning
    from crawl4ai.markdown_generation_strategy import DefaultMarkdownGenerator

    markdown = DefaultMarkdownGenerator(content_filter=Pruning())  # "fit markdown": boilerplate pruned
    run = CrawlerRunConfig(cache_mode=CacheMode.BYPASS, stream=False, verbose=False, markdown_generator=markdown)
    dispatcher = SemaphoreDispatcher(semaphore_count=args["concurrency"], max_session_permit=args["concurrency"])
    if args["mode"] == "http":
        from crawl4ai.async_crawler_strategy import AsyncHTTPCrawlerStrategy
        from crawl4ai.async_configs import HTTPCrawlerConfig

        strategy = AsyncHTTPCrawlerStrategy(browser_config=HTTPCrawlerConfig())
        crawler = AsyncWebCrawler(crawler_strategy=strategy)
    else:
        use_system_chromium(args["chromium"])
        browser = BrowserConfig(browser_type="chromium", headless=True, java_script_enabled=True, verbose=False,
                                extra_args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
        crawler = AsyncWebCrawler(config=browser)
    async with crawler:
        results = await crawler.arun_many(urls, config=run, dispatcher=dispatcher)
    texts = {}
    for r in results:
        md = r.markdown if r.success else None
        fit = getattr(md, "fit_markdown", None) if md is not None else None
        texts[r.url] = str(fit or getattr(md, "raw_markdown", md) or "") if md is not None else ""
    return texts


texts = asyncio.run(crawl(args["urls"]))
rows = [(url, p) for url, t in texts.items() for p in passages(t)]
from sentence_transformers import SentenceTransformer
import lancedb

model = SentenceTransformer(args["model"], device="cpu")
vecs = model.encode([p for _, p in rows], batch_size=32, normalize_embeddings=True, show_progress_bar=False)
db = lancedb.connect(args["db"])
db.create_table("chunks", [{"url": u, "text": p, "vector": v.tolist()} for (u, p), v in zip(rows, vecs)])
json.dump({"texts": texts, "chunks": len(rows)}, open(args["out"], "w"))
'''


def peer_run(python: Path, mode: str, urls: list[str], work: Path, rnd: int, env: dict[str, str], chromium: str,
             model: str, timeout_s: float) -> dict[str, Any]:
    """One Crawl4AI run (``mode``: browser or http) in a process of its own, in the peer's venv."""
    script = work / "c4ai_run.py"
    if not script.is_file():
        script.write_text(_PEER_RUN)
    out = work / f"c4ai_{mode}_{rnd}.json"
    db = work / f"c4ai_{mode}_{rnd}.lancedb"
    args = {"mode": mode, "urls": urls, "concurrency": CONCURRENCY, "model": model, "db": str(db), "out": str(out),
            "chromium": chromium}
    peer_env = {**env, "CRAWL4_AI_BASE_DIRECTORY": str(work / "c4ai_home"), "CRAWL4AI_NO_CLOUD_NOTICE": "1"}
    log = work / f"c4ai_{mode}_{rnd}.log"
    cmd = [str(python), str(script), json.dumps(args)]
    cpu, wall, rc = run_measured(cmd, peer_env, log, timeout_s)
    data = json.loads(out.read_text()) if rc == 0 and out.is_file() else {"texts": {}, "chunks": 0}
    shutil.rmtree(db, ignore_errors=True)
    return {"cpu_s": cpu, "wall_s": wall, "rc": rc, "texts": data["texts"], "chunks": data["chunks"],
            "log": str(log)}


# -- rounds and summary ------------------------------------------------------------------------------------------


def f1_of(pages: list[Any], server_url: Any, texts: dict[str, str]) -> float:
    metrics, _ = evaluate({p.id: p.gold for p in pages}, {p.id: texts.get(server_url(p), "") for p in pages},
                          bootstrap=0)
    return round(metrics.f1, 4)


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for setup in SETUPS:
        rs = [r for r in runs if r["setup"] == setup and r["rc"] == 0]
        if not rs:
            continue
        out[f"{setup}_cpu_s"] = round(statistics.median(r["cpu_s"] for r in rs), 1)
        out[f"{setup}_wall_s"] = round(statistics.median(r["wall_s"] for r in rs), 1)
        out[f"{setup}_f1"] = round(statistics.median(r["f1"] for r in rs), 4)
        out[f"{setup}_chunks"] = rs[-1]["chunks"]
    for brt_setup, prefix in (("brt_auto", "brt"), ("brt_auto_int8", "brt_int8")):
        brt = out.get(f"{brt_setup}_cpu_s")
        for peer in ("c4ai_browser", "c4ai_http"):
            if brt and out.get(f"{peer}_cpu_s"):
                out[f"{prefix}_over_{peer}_cpu"] = round(brt / out[f"{peer}_cpu_s"], 3)
    reached = {f"brt_over_{peer}_cpu": out.get(f"brt_over_{peer}_cpu", 9.0) <= TARGETS[f"brt_over_{peer}_cpu_max"]
               for peer in ("c4ai_browser", "c4ai_http")}
    out["reached"] = reached | {"brt_auto_f1": out.get("brt_auto_f1", 0) >= TARGETS["brt_auto_f1_min"]}
    return out


def report(runs: list[dict[str, Any]], args: argparse.Namespace, pages: int, done: int, versions: dict) -> None:
    """``bench/results/peer_crawl4ai.json``: the medians of the rounds finished so far, and every run."""
    write_result("peer_crawl4ai", {
        "bench": "peer_crawl4ai",
        "pages": pages,
        "subset": args.limit is not None,
        "concurrency": CONCURRENCY,
        "rounds": args.rounds,
        "rounds_done": done,
        **summarize(runs),
        "targets": TARGETS,
        "runs": [{k: v for k, v in r.items() if k != "log"} for r in runs],
        "peer_versions": versions,
        "machine": machine_info(),
    })


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eval-dir", default=None, help="folder holding article-extraction-benchmark/")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--limit", type=int, default=None, help="only the first N pages (a quick check; say so)")
    ap.add_argument("--setups", default=",".join(DEFAULT_SETUPS), help=f"any of {', '.join(SETUPS)}")
    ap.add_argument("--venv", default=str(DEFAULT_VENV), help="the peer's virtual environment (outside the repo)")
    ap.add_argument("--torch-wheel", default=None, help="a local torch CPU wheel for the peer's venv")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--timeout-s", type=float, default=1800)
    ap.add_argument("--setup-only", action="store_true", help="create the peer's venv and stop")
    ap.add_argument("--keep-tmp", action="store_true")
    args = ap.parse_args(argv)
    setups = [s for s in args.setups.split(",") if s in SETUPS]

    python = ensure_peer_venv(Path(args.venv).expanduser(), Path(args.torch_wheel) if args.torch_wheel else None)
    if args.setup_only:
        print(json.dumps(peer_versions(python)))
        return 0
    from bench.harvest_static import PageServer
    from memory_store.model_files import default_model_path

    eval_dir = resolve_eval_dir(args.eval_dir)
    pages = load_aeb(eval_dir)[: args.limit] if args.limit else load_aeb(eval_dir)
    work = Path(tempfile.mkdtemp(prefix="brt-peer-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRT_")}
    env.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": str(REPO_ROOT)})
    model = str(default_model_path())
    server = PageServer(pages)
    urls = [server.url(p) for p in pages]
    runs: list[dict[str, Any]] = []
    versions = peer_versions(python)
    try:
        for rnd in range(args.rounds):
            order = setups[rnd % len(setups):] + setups[: rnd % len(setups)]
            for setup in order:
                print(f"[peer] round {rnd + 1}: {setup} (load {os.getloadavg()[0]:.2f}) ...", file=sys.stderr)
                load = [round(x, 2) for x in os.getloadavg()]
                if setup.startswith("brt_auto"):
                    brt_env = {**env, "BRT_EMBED_BACKEND": "onnx-int8"} if setup == "brt_auto_int8" else env
                    run = brt_run(urls, work, rnd, brt_env, args.timeout_s, tag=setup)
                else:
                    mode = "browser" if setup == "c4ai_browser" else "http"
                    run = peer_run(python, mode, urls, work, rnd, env, args.chromium, model, args.timeout_s)
                run["f1"] = f1_of(pages, server.url, run.pop("texts"))
                runs.append({"setup": setup, "round": rnd + 1, "loadavg_at_start": load, **run})
                print(f"[peer]   {run['cpu_s']} CPU-s, {run['wall_s']} s, F1 {run['f1']}, rc {run['rc']}",
                      file=sys.stderr)
            # after every round: a run stopped later (time, a machine given back) keeps the rounds it finished
            report(runs, args, len(pages), rnd + 1, versions)
    finally:
        server.stop()
        if not args.keep_tmp:
            shutil.rmtree(work, ignore_errors=True)
    for key, value in summarize(runs).items():
        print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
