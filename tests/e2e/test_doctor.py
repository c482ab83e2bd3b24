"""`brt doctor` as a user runs it: a new process, the real environment, nothing faked but what the test takes away
(the browser on PATH, a writable BRT_HOME)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _doctor(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "BRT_BROWSER"}
    environ.update({"BRT_HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    environ.update(env)
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", "doctor", *args], capture_output=True,
                          text=True, env=environ, cwd=ROOT, timeout=180)


def _no_browser_env(tmp_path: Path) -> dict[str, str]:
    """PATH without any Chromium or Chrome, and no Playwright-managed one (an empty browsers folder)."""
    bare = tmp_path / "bin"
    bare.mkdir()
    empty = tmp_path / "playwright-browsers"
    empty.mkdir()
    return {"PATH": str(bare), "PLAYWRIGHT_BROWSERS_PATH": str(empty)}


def test_without_a_browser_doctor_fails_and_names_the_fix(tmp_path):
    env = _no_browser_env(tmp_path)
    shown = _doctor(tmp_path, **env)
    assert shown.returncode == 1, shown.stdout + shown.stderr
    line = next(ln for ln in shown.stdout.splitlines() if "browser" in ln and "MISSING" in ln)
    assert "No Chromium or Chrome browser was found" in line
    assert "fix: " in shown.stdout and "apt-get install chromium" in shown.stdout and "BRT_BROWSER" in shown.stdout
    assert "brt cannot run here: browser missing" in shown.stdout
    doc = json.loads(_doctor(tmp_path, "--json", **env).stdout)
    assert doc["ok"] is False
    browser = next(c for c in doc["checks"] if c["name"] == "browser")
    assert browser["status"] == "missing" and browser["required"] and "BRT_BROWSER" in browser["fix"]
    assert not any(c["name"] == "browser launch" for c in doc["checks"])  # nothing to launch
    # everything else was still checked
    assert {"embedding model", "evidence models", "check models", "BRT_HOME", "MCP server", "Ray"} <= {
        c["name"] for c in doc["checks"]}


def test_a_brt_browser_that_is_not_a_browser_is_named(tmp_path):
    fake = tmp_path / "chrome"
    fake.write_text("not a program")
    doc = json.loads(_doctor(tmp_path, "--json", "--no-launch", BRT_BROWSER=str(fake)).stdout)
    browser = next(c for c in doc["checks"] if c["name"] == "browser")
    assert browser["status"] == "missing" and "BRT_BROWSER" in browser["detail"]


def test_a_brt_home_that_cannot_be_written_fails(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    done = _doctor(tmp_path, "--json", "--no-launch", BRT_HOME=str(blocker / "home"))
    doc = json.loads(done.stdout)
    home = next(c for c in doc["checks"] if c["name"] == "BRT_HOME")
    assert done.returncode == 1 and home["status"] == "missing" and "BRT_HOME" in home["fix"]


@pytest.mark.browser
def test_with_a_browser_and_the_models_doctor_passes(tmp_path):
    done = _doctor(tmp_path, "--json")
    doc = json.loads(done.stdout)
    assert done.returncode == 0 and doc["ok"] is True, done.stdout
    checks = {c["name"]: c for c in doc["checks"]}
    assert checks["browser launch"]["status"] == "ok" and "starts headless" in checks["browser launch"]["detail"]
    assert checks["evidence models"]["status"] == "ok" and checks["BRT_HOME"]["status"] == "ok"
    assert checks["check models"]["status"] == "ok"
