"""Shared helpers of the benchmark scripts: the article-extraction-benchmark metric, eval-data loading,
a HAR 1.2 writer for Playwright replay, and a description of the machine.

The eval pages are third-party content: they are read from ``--eval-dir`` (default ``../shared/eval`` next to
the repository) and never copied into the project; generated files go to a temporary directory.

Metric (article-extraction-benchmark, PROVENANCE.md "Metric"): tokens are ``\\w+`` (Unicode); 4-gram shingles
with multiplicities; per document TP/FP/FN are the multiset intersection / predicted-minus-gold /
gold-minus-predicted, normalised to sum 1; precision and recall are means over documents (skipping documents
whose TP+FP resp. TP+FN is 0; FP=FN=0 scores 1); F1 is computed from the two means; accuracy is the share of
documents whose token lists are equal; ± is the bootstrap standard deviation (1,000 resamples).
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import platform
import random
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from statistics import mean, pstdev

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_EVAL_DIR = REPO_ROOT.parent / "shared" / "eval"
AEB = "article-extraction-benchmark"

# The published numbers our re-implementation must reproduce (PROVENANCE.md).
REFERENCE_F1 = {
    "trafilatura": 0.958,
    "readability": 0.922,
    "readability_js": 0.947,
    "newspaper": 0.949,
    "goose3": 0.896,
    "justext": 0.804,
    "html-text": 0.665,
    "AutoExtract": 0.970,
}

# --------------------------------------------------------------------------------------------------------
# metric

_TOKEN_RE = re.compile(r"\w+", re.UNICODE)


def tokenize(text: str | None) -> list[str]:
    return _TOKEN_RE.findall(text or "")


def shingles(text: str | None, n: int = 4) -> Counter:
    """Multiset of n-gram shingles; a text shorter than n tokens gives one shorter shingle (none if empty)."""
    tokens = tokenize(text)
    out: Counter = Counter()
    for i in range(max(1, len(tokens) - n + 1)):
        sh = tuple(tokens[i : i + n])
        if sh:
            out[sh] += 1
    return out


@dataclass
class DocScore:
    tp: float
    fp: float
    fn: float
    exact: bool

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp > 0 else None

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn > 0 else None

    @property
    def f1(self) -> float:
        p, r = self.precision or 0.0, self.recall or 0.0
        return 2 * p * r / (p + r) if p + r > 0 else 0.0


def score_document(gold: str | None, pred: str | None, n: int = 4) -> DocScore:
    g, p = shingles(gold, n), shingles(pred, n)
    tp = sum((g & p).values())
    fp = sum((p - g).values())
    fn = sum((g - p).values())
    exact = tokenize(gold) == tokenize(pred)
    if fp == 0 and fn == 0:
        return DocScore(1.0, 0.0, 0.0, exact)
    total = tp + fp + fn
    return DocScore(tp / total, fp / total, fn / total, exact)


def _aggregate(scores: list[DocScore]) -> tuple[float, float, float, float]:
    ps = [s.precision for s in scores if s.precision is not None]
    rs = [s.recall for s in scores if s.recall is not None]
    p = mean(ps) if ps else 0.0
    r = mean(rs) if rs else 0.0
    f1 = 2 * p * r / (p + r) if p + r > 0 else 0.0
    acc = mean(1.0 if s.exact else 0.0 for s in scores) if scores else 0.0
    return f1, p, r, acc


@dataclass
class Metrics:
    f1: float
    precision: float
    recall: float
    accuracy: float
    f1_std: float
    n: int

    def as_dict(self) -> dict:
        return {k: round(v, 4) if isinstance(v, float) else v for k, v in self.__dict__.items()}

    def row(self) -> str:
        return (
            f"F1 {self.f1:.3f} ± {self.f1_std:.3f} | P {self.precision:.3f} | R {self.recall:.3f} | "
            f"acc {self.accuracy:.3f} | n {self.n}"
        )


def evaluate(
    gold: Mapping[str, str], pred: Mapping[str, str | None], *, bootstrap: int = 1000, seed: int = 0
) -> tuple[Metrics, dict[str, DocScore]]:
    """Score ``pred`` against ``gold`` (both keyed by document id). A document missing from ``pred`` counts as
    an empty prediction."""
    per_doc = {key: score_document(gold[key], pred.get(key) or "") for key in gold}
    scores = list(per_doc.values())
    f1, p, r, acc = _aggregate(scores)
    std = 0.0
    if bootstrap:
        rng = random.Random(seed)
        f1s = [_aggregate([rng.choice(scores) for _ in scores])[0] for _ in range(bootstrap)]
        std = pstdev(f1s)
    return Metrics(f1, p, r, acc, std, len(scores)), per_doc


# --------------------------------------------------------------------------------------------------------
# eval data


def resolve_eval_dir(path: str | os.PathLike | None) -> Path:
    d = Path(path) if path else DEFAULT_EVAL_DIR
    d = d.expanduser().resolve()
    if not (d / AEB / "ground-truth.json.gz").is_file():
        raise SystemExit(f"error: {d} does not contain {AEB}/ground-truth.json.gz (pass --eval-dir)")
    return d


@dataclass
class Page:
    id: str
    url: str
    gold: str
    html: bytes  # the raw HTML bytes (UTF-8)


def load_aeb(eval_dir: Path) -> list[Page]:
    """The 181 pages of article-extraction-benchmark with their original URL and gold text (sorted by id)."""
    base = eval_dir / AEB
    with gzip.open(base / "ground-truth.json.gz", "rt", encoding="utf-8") as fh:
        gt = json.load(fh)
    pages = []
    for key in sorted(gt):
        html = gzip.decompress((base / "html" / f"{key}.html.gz").read_bytes())
        pages.append(Page(key, gt[key]["url"], gt[key].get("articleBody") or "", html))
    return pages


def load_reference(eval_dir: Path, system: str) -> dict[str, str]:
    with gzip.open(eval_dir / AEB / "reference-outputs" / f"{system}.json.gz", "rt", encoding="utf-8") as fh:
        data = json.load(fh)
    if isinstance(data, dict) and "output" in data and "version" in data:
        data = data["output"]
    return {k: (v.get("articleBody") if isinstance(v, dict) else v) or "" for k, v in data.items()}


def check_metric(eval_dir: Path, systems: Iterable[str] = ("trafilatura",), *, verbose: bool = True) -> None:
    """Score the upstream reference outputs and assert the published F1 (3 decimals) is reproduced."""
    gold = {p.id: p.gold for p in load_aeb_gold(eval_dir)}
    for system in systems:
        m, _ = evaluate(gold, load_reference(eval_dir, system), bootstrap=0)
        ok = round(m.f1, 3) == REFERENCE_F1[system]
        if verbose:
            print(
                f"metric check {system}: F1 {m.f1:.4f} P {m.precision:.4f} R {m.recall:.4f} "
                f"acc {m.accuracy:.3f}"
                f" (published {REFERENCE_F1[system]}) {'OK' if ok else 'MISMATCH'}",
                file=sys.stderr,
            )
        assert ok, f"metric does not reproduce the published F1 of {system}: {m.f1:.4f} != {REFERENCE_F1[system]}"


@dataclass
class _Gold:
    id: str
    gold: str


def load_aeb_gold(eval_dir: Path) -> list[_Gold]:
    with gzip.open(eval_dir / AEB / "ground-truth.json.gz", "rt", encoding="utf-8") as fh:
        gt = json.load(fh)
    return [_Gold(k, v.get("articleBody") or "") for k, v in sorted(gt.items())]


# --------------------------------------------------------------------------------------------------------
# HAR


def write_har(
    entries: Iterable[tuple[str, bytes]],
    path: str | os.PathLike,
    content_type: str = "text/html; charset=utf-8",
) -> Path:
    """Write a HAR 1.2 file that Playwright's ``route_from_har`` replays: one GET 200 entry per (url, body),
    the body base64-encoded. Returns the path."""
    now = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    har_entries = []
    for url, body in entries:
        har_entries.append(
            {
                "startedDateTime": now,
                "time": 1,
                "request": {
                    "method": "GET",
                    "url": url,
                    "httpVersion": "HTTP/1.1",
                    "cookies": [],
                    "headers": [],
                    "queryString": [],
                    "headersSize": -1,
                    "bodySize": 0,
                },
                "response": {
                    "status": 200,
                    "statusText": "OK",
                    "httpVersion": "HTTP/1.1",
                    "cookies": [],
                    "headers": [
                        {"name": "Content-Type", "value": content_type},
                        {"name": "Content-Length", "value": str(len(body))},
                    ],
                    "content": {
                        "size": len(body),
                        "mimeType": content_type,
                        "text": base64.b64encode(body).decode("ascii"),
                        "encoding": "base64",
                    },
                    "redirectURL": "",
                    "headersSize": -1,
                    "bodySize": len(body),
                },
                "cache": {},
                "timings": {
                    "blocked": -1,
                    "dns": -1,
                    "connect": -1,
                    "send": 0,
                    "wait": 1,
                    "receive": 0,
                    "ssl": -1,
                },
            }
        )
    har = {
        "log": {
            "version": "1.2",
            "creator": {"name": "brt-bench", "version": "0.1"},
            "pages": [],
            "entries": har_entries,
        }
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(har), encoding="utf-8")
    return path


def check_har_replay(har: Path, url: str, expect: str | None = None) -> str:
    """Load ``url`` from ``har`` in Chromium via Playwright's route_from_har and return the page title
    (asserting ``expect`` occurs in the rendered HTML). Proves the HAR writer's output replays."""
    from playwright.sync_api import sync_playwright

    from orchestrator.harvest.launch import LAUNCH_ARGS, find_browser

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=find_browser(), headless=True, args=LAUNCH_ARGS)
        try:
            ctx = browser.new_context(java_script_enabled=False)
            ctx.route_from_har(str(har), not_found="abort")
            page = ctx.new_page()
            resp = page.goto(url, wait_until="domcontentloaded", timeout=30_000)
            assert resp is not None and resp.status == 200, f"replay of {url} gave {resp and resp.status}"
            html = page.content()
            if expect is not None:
                assert expect in html, f"replayed page of {url} lacks {expect!r}"
            return page.title()
        finally:
            browser.close()


# --------------------------------------------------------------------------------------------------------
# machine


def machine_info() -> dict:
    info: dict = {
        "nproc": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg_at_end": [round(x, 2) for x in os.getloadavg()],
    }
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                info["ram_gb"] = round(int(line.split()[1]) / 1024 / 1024, 1)
                break
    except OSError:
        pass
    try:
        import torch

        info["torch"] = torch.__version__
        info["torch_threads"] = torch.get_num_threads()
    except Exception:
        pass
    try:
        import trafilatura

        info["trafilatura"] = trafilatura.__version__
    except Exception:
        pass
    try:
        from importlib.metadata import version

        info["playwright"] = version("playwright")
    except Exception:
        pass
    try:
        from orchestrator.harvest.launch import find_browser

        exe = find_browser()
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
        info["browser"] = f"{exe}: {out}"
    except Exception as exc:
        info["browser"] = f"unknown ({exc})"
    return info


def store_machine_info() -> dict:
    """``machine_info()`` for benchmarks of the store alone: no browser, Playwright or trafilatura versions."""
    return {k: v for k, v in machine_info().items() if k not in {"browser", "playwright", "trafilatura"}}


RESULTS_DIR = REPO_ROOT / "bench" / "results"


def write_result(name: str, payload: Mapping, *, results_dir: Path | None = None) -> Path:
    """Write a benchmark's latest result to ``bench/results/<name>.json`` (replacing the previous one): the
    payload, after when it was taken, the command line and the commit (``+changes`` when the tracked files differ
    from it); the payload's own keys win."""
    folder = Path(results_dir) if results_dir is not None else RESULTS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    doc = {
        "name": name,
        "taken_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": " ".join(["python", *sys.argv]),
        "commit": _commit(),
        **dict(payload),
    }
    path = folder / f"{name}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    print(f"[bench] result written to {path}", file=sys.stderr)
    return path


def _commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0 or not out.stdout.strip():
        return None
    dirty = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True, text=True, timeout=10,
    ).stdout.strip()
    return out.stdout.strip() + ("+changes" if dirty else "")


def emit_report(report: dict, json_out: str | None, *, name: str | None = None) -> None:
    """Print a benchmark's JSON report, write it to ``json_out`` when given, and as the latest result of
    benchmark ``name`` (``bench/results/<name>.json``) when named."""
    print(json.dumps(report, indent=2))
    if json_out:
        Path(json_out).write_text(json.dumps(report, indent=2) + "\n")
    if name:
        write_result(name, report)


def setup_env(tmp: Path) -> None:
    """Offline model loading and a throw-away BRT_HOME."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ["BRT_HOME"] = str(tmp / "brt_home")
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))


def hosts_of(urls: Iterable[str]) -> list[str]:
    from urllib.parse import urlsplit

    return sorted({(urlsplit(u).hostname or "").lower().rstrip(".") for u in urls} - {""})


def canon_url(url: str) -> str:
    """A URL key tolerant of the small rewrites a browser makes (fragment dropped, empty path -> '/')."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    path = parts.path or "/"
    return urlunsplit((parts.scheme.lower(), (parts.netloc or "").lower(), path, parts.query, ""))


def _self_check(argv: list[str] | None = None) -> int:
    """``python bench/_common.py [--eval-dir PATH]``: the metric reproduces all published reference F1s, and a
    HAR written by :func:`write_har` replays in Chromium through Playwright's ``route_from_har``."""
    import argparse
    import shutil
    import tempfile

    ap = argparse.ArgumentParser(description=_self_check.__doc__)
    ap.add_argument("--eval-dir", default=None)
    args = ap.parse_args(argv)
    eval_dir = resolve_eval_dir(args.eval_dir)
    check_metric(eval_dir, list(REFERENCE_F1))
    tmp = Path(tempfile.mkdtemp(prefix="brt-bench-har-"))
    try:
        setup_env(tmp)
        pages = load_aeb(eval_dir)
        # Two pages with a query string and a fragment, plus a plain one.
        picks = [p for p in pages if "?" in p.url][:1] + [p for p in pages if "#" in p.url][:1] + pages[:1]
        har = write_har(((p.url.split("#", 1)[0], p.html) for p in pages), tmp / "check.har")
        for p in picks:
            title = check_har_replay(har, p.url)
            print(f"HAR replay OK: {p.url} -> {title[:60]!r}", file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO_ROOT))
    raise SystemExit(_self_check())
