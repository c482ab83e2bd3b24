"""brt as people install it: the wheel built from this checkout, installed into a fresh virtualenv outside it, runs
`brt demo` from an empty folder and writes there, and `brt doctor` finds everything the wheel ships.

The new virtualenv gets brt from the wheel (``pip install --no-deps``) and its dependencies from the environment
running the tests, through a ``.pth`` line naming that environment's site-packages: installing torch, LanceDB,
ONNX Runtime, Playwright, ... again would take minutes and the network on every run, and would test pip, not
brt. What this leaves out: that a fresh resolver finds the declared dependencies (the test checks instead that
every requirement the wheel declares is met). The embedding model's ONNX export is reused from this environment's
cache (``BRT_MODEL_CACHE``), as a second run of an installed brt would. Only ``.pth`` *paths* are added, so this
environment's editable install of brt (an import hook in its own ``.pth``) stays out: ``orchestrator`` is imported
from the wheel, which the test checks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("orchestrator", "memory_store", "concept_index")


def _build_wheel(tmp_path: Path) -> Path:
    """The wheel of a copy of the checkout's sources (the checkout gets no build/ or egg-info)."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for package in PACKAGES:
        shutil.copytree(ROOT / package, src / package, ignore=ignore)
    dist = tmp_path / "dist"
    import importlib.util

    # with setuptools here, build offline with it; else pip fetches the build backend pyproject.toml names
    offline = ["--no-build-isolation", "--no-index"] if importlib.util.find_spec("setuptools") else []
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", *offline, "-q", "-w", str(dist), str(src)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    wheels = list(dist.glob("brt-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def _venv_with(wheel: Path, venv: Path) -> Path:
    """A new virtualenv with brt installed from ``wheel``; its dependencies are this environment's."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    here = os.path.realpath(sysconfig.get_paths()["purelib"])
    Path(purelib, "_brt_test_dependencies.pth").write_text(here + "\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
                           "--no-index", "-q", str(wheel)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return venv


_REQUIREMENTS_MET = """
import importlib.metadata as md, json
try:
    from packaging.requirements import Requirement
except ImportError:  # pip's own copy
    from pip._vendor.packaging.requirements import Requirement
missing = []
for line in md.requires("brt") or []:
    req = Requirement(line)
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue  # an extra's requirement
    try:
        if not req.specifier.contains(md.version(req.name), prereleases=True):
            missing.append(f"{line} (installed {md.version(req.name)})")
    except md.PackageNotFoundError:
        missing.append(line)
print(json.dumps(missing))
"""


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.model
def test_the_wheel_installs_and_runs_the_demo_from_any_folder(tmp_path):
    from memory_store.model_export import cache_root

    wheel = _build_wheel(tmp_path)
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    for shipped in ("orchestrator/demo_site/index.html", "orchestrator/evidence/models/scorer.json",
                    "orchestrator/evidence/models/reader.onnx", "orchestrator/evidence/models/manifest.json"):
        assert shipped in names, shipped
    assert not any(n.startswith(("tests/", "bench/", "charters/")) for n in names)
    venv = _venv_with(wheel, tmp_path / "venv")
    work = tmp_path / "somewhere" / "else"
    work.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "BRT_MODEL_CACHE")}
    env.update({"BRT_HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                "BRT_MODEL_CACHE": str(cache_root())})
    python = str(venv / "bin" / "python")
    where = subprocess.run([python, "-c", "import orchestrator; print(orchestrator.__file__)"], cwd=work, env=env,
                           capture_output=True, text=True, check=True).stdout.strip()
    assert Path(where).is_relative_to(venv), where  # brt from the wheel, not from the checkout
    missing = json.loads(subprocess.run([python, "-c", _REQUIREMENTS_MET], cwd=work, env=env, capture_output=True,
                                        text=True, check=True).stdout)
    assert missing == [], missing

    checkout_report = ROOT / "out" / "demo_cwv.md"
    before = checkout_report.stat().st_mtime_ns if checkout_report.exists() else None
    demo = subprocess.run([str(venv / "bin" / "brt"), "demo"], cwd=work, env=env, capture_output=True, text=True,
                          timeout=1200)
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    assert "[LCP Evidence #1]" in demo.stdout and "[CLS Evidence #1]" in demo.stdout
    report = json.loads((work / "out" / "demo_cwv.json").read_text(encoding="utf-8"))
    assert report["charter_id"] == "demo_cwv" and (work / "out" / "demo_cwv.md").is_file()
    assert "report written to out/demo_cwv.md" in demo.stdout
    assert len(list((tmp_path / "home" / "snapshots").glob("demo_cwv-*.jsonl"))) == 1
    after = checkout_report.stat().st_mtime_ns if checkout_report.exists() else None
    assert after == before  # nothing written into the checkout

    doctor = subprocess.run([str(venv / "bin" / "brt"), "doctor", "--json"], cwd=work, env=env,
                            capture_output=True, text=True, timeout=300)
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert doctor.returncode == 0, doctor.stdout
    assert checks["evidence models"]["status"] == "ok" and str(venv) in where
