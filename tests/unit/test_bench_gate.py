"""The benchmark gate fails on a result below a pinned floor, and every bench script's result has one home.

No eval data is read here: the gate is fed results files, as CI's gate run would produce them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GATE = ROOT / "bench" / "gate.py"
BASELINE = json.loads((ROOT / "bench" / "baseline.json").read_text(encoding="utf-8"))


def _measured() -> dict:
    """Results at the values the floors were pinned at."""
    return {
        bench: {metric: pinned["measured"] for metric, pinned in metrics.items()}
        for bench, metrics in BASELINE["floors"].items()
    }


def _gate(tmp_path: Path, results: dict) -> subprocess.CompletedProcess:
    file = tmp_path / "results.json"
    file.write_text(json.dumps({"results": results}), encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(GATE), "--results", str(file)], capture_output=True, text=True, timeout=60, cwd=ROOT
    )


def test_floors_are_pinned_under_their_measurements():
    assert set(BASELINE["floors"]) == {"segmentation", "extraction", "retrieval"}
    for bench, metrics in BASELINE["floors"].items():
        assert metrics, bench
        for metric, pinned in metrics.items():
            assert pinned["floor"] <= pinned["measured"], f"{bench}.{metric}"


def test_the_pinned_results_pass(tmp_path):
    done = _gate(tmp_path, _measured())
    assert done.returncode == 0, done.stderr
    checked = sum(len(m) for m in BASELINE["floors"].values())
    assert f"ok: {checked} metric(s)" in done.stderr


@pytest.mark.parametrize(("bench", "metric"), [(b, m) for b, ms in BASELINE["floors"].items() for m in ms])
def test_a_result_below_its_floor_fails(tmp_path, bench, metric):
    results = _measured()
    results[bench][metric] = round(BASELINE["floors"][bench][metric]["floor"] - 0.001, 4)
    done = _gate(tmp_path, results)
    assert done.returncode == 1
    assert f"FAIL {bench}.{metric} = " in done.stderr and "below its floor" in done.stderr


def test_a_pinned_metric_missing_from_a_benchmark_that_ran_fails(tmp_path):
    results = _measured()
    del results["retrieval"]["hybrid_ndcg10"]
    done = _gate(tmp_path, results)
    assert done.returncode == 1 and "retrieval.hybrid_ndcg10: missing" in done.stderr


def test_a_benchmark_skipped_for_missing_data_is_not_checked(tmp_path):
    results = _measured()
    del results["retrieval"]
    done = _gate(tmp_path, results)
    assert done.returncode == 0, done.stderr


def test_an_unreadable_results_file_is_a_usage_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    done = subprocess.run([sys.executable, str(GATE), "--results", str(bad)], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    assert done.returncode == 2 and "cannot read" in done.stderr


def test_write_result_keeps_the_latest_result_per_benchmark(tmp_path):
    sys.path.insert(0, str(ROOT))
    from bench._common import write_result

    write_result("sample", {"figure": 1.0}, results_dir=tmp_path)
    path = write_result("sample", {"figure": 2.0}, results_dir=tmp_path)
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert path == tmp_path / "sample.json" and doc["figure"] == 2.0 and doc["name"] == "sample"
    assert doc["taken_at"].endswith("Z") and "command" in doc
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sample.json"]


def test_every_bench_script_writes_its_result():
    """Each benchmark script names its result file."""
    scripts = sorted(p for p in (ROOT / "bench").glob("*.py") if not p.name.startswith("_"))
    scripts.append(ROOT / "bench" / "concept_eval" / "run.py")
    named = re.compile(
        r"write_result\(\s*f?\"[a-z0-9_{}.]+\"|emit_report\([^)]*name=\"[a-z_]+\"|emit\([^)]*f?\"[a-z_{}.]+\"\)"
    )
    missing = [p.name for p in scripts if not named.search(p.read_text(encoding="utf-8"))]
    assert len(scripts) >= 12 and not missing, missing
