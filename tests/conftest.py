"""Shared fixtures. The real embedding model is loaded once per test session (memory_store caches it per
process); every test gets its own BRT_HOME in a temp folder."""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

pytest_plugins = ["tests.fixtures_site", "tests.fixtures_badserver", "tests.fixtures_attack"]


@pytest.fixture(scope="session")
def embedder():
    """The real bundled embedding model, loaded once for the whole session."""
    from memory_store.embeddings import get_embedder

    return get_embedder()


@pytest.fixture
def brt_home(tmp_path, monkeypatch):
    home = tmp_path / "brt_home"
    home.mkdir()
    monkeypatch.setenv("BRT_HOME", str(home))
    return home


@pytest.fixture
def debug_chromium(tmp_path):
    """A headless Chromium with --remote-debugging-port=0, started by the test (for --browser-url); yields
    (endpoint URL, process)."""
    from orchestrator.browser import LAUNCH_ARGS, find_browser
    from orchestrator.errors import BrowserNotFound

    try:
        executable = find_browser()
    except BrowserNotFound as exc:
        pytest.skip(str(exc))
    user_data = tmp_path / "chrome-profile"
    proc = subprocess.Popen(
        [
            executable,
            "--headless",
            "--remote-debugging-port=0",
            "--remote-debugging-address=127.0.0.1",
            f"--user-data-dir={user_data}",
            *LAUNCH_ARGS,
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    port_file = user_data / "DevToolsActivePort"
    deadline = time.monotonic() + 30
    port = None
    while time.monotonic() < deadline and proc.poll() is None:
        if port_file.is_file():
            lines = port_file.read_text().split()
            if lines:
                port = lines[0]
                break
        time.sleep(0.1)
    if port is None:
        proc.kill()
        pytest.fail(f"{executable} did not open a DevTools port (exit code {proc.poll()})")
    try:
        yield f"http://127.0.0.1:{port}", proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(user_data, ignore_errors=True)
