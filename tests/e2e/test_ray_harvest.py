"""A harvest fanned out on Ray (``--ray``, ``harvest.engine: ray``): a local Ray instance with two browser workers
and one embedding worker harvests a site spread over four hosts (``tests/sites/hosts.py``) into a store on a real
S3-compatible server (SeaweedFS) and gets what a plain local harvest gets (pages, chunks, events, evidence); a
worker process killed mid-run loses no page. Ray, its worker processes and their browsers are gone afterwards."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("ray")

from memory_store import Memory  # noqa: E402
from orchestrator.harvest import harvest  # noqa: E402
from orchestrator.harvest.ray_engine import WORKER_LOST  # noqa: E402
from orchestrator.harvest.summary import summarize  # noqa: E402
from tests.sites.hosts import resolver_rules, start_hosts_site  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.slow]

HOSTS = 4


def _ray_processes(*, everything: bool = False) -> set[int]:
    """Ray's raylets, GCS servers and workers; with ``everything`` also its Python daemons (monitor, log
    monitor, dashboard, client server, agents) that `ray start` leaves behind a head node."""
    import psutil

    found = set()
    for p in psutil.process_iter(["pid", "name", "cmdline"]):
        try:
            cmd = " ".join(p.info["cmdline"] or [])
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if "raylet" in (p.info["name"] or "") or "gcs_server" in cmd or cmd.startswith("ray::"):
            found.add(p.info["pid"])
        elif everything and ("site-packages/ray/" in cmd or " -m ray." in cmd) and p.info["pid"] != os.getpid():
            found.add(p.info["pid"])
    return found


def _is_core(pid: int) -> bool:
    """A Ray process that must die with its instance (GCS, raylet, brt's workers), not one of its agents."""
    import psutil

    try:
        proc = psutil.Process(pid)
        cmd = " ".join(proc.cmdline())
        return (
            "raylet" in proc.name() or "gcs_server" in cmd or cmd.startswith(("ray::BrowserWorker", "ray::EmbedWorker"))
        )
    except psutil.Error:
        return False


def _browser_workers() -> list:
    import psutil

    out = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if cmd.startswith("ray::BrowserWorker"):
            out.append(p)
    return out


def _wait_gone(pids: set[int], timeout: float = 30.0) -> set[int]:
    import psutil

    deadline = time.monotonic() + timeout
    left = set(pids)
    while left and time.monotonic() < deadline:
        left = {p for p in left if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE}
        time.sleep(0.2)
    return left


@pytest.fixture
def hosts_site(monkeypatch):
    started = []

    def start(**options):
        site = start_hosts_site(hosts=HOSTS, **options)
        started.append(site)
        monkeypatch.setenv("BRT_HOST_RESOLVER_RULES", resolver_rules(HOSTS))
        return site

    yield start
    for site in started:
        site.stop()


def _charter(make_charter, site, charter_id, **options):
    return make_charter(
        [site.seed],
        charter_id=charter_id,
        allowed=site.allowed,
        sections=[{"title": "Pier 7", "question": "What light does the lamp of pier 7 show?"}],
        max_pages=200,
        max_depth=2,
        timeout_s=20,
        **options,
    )


def _events(report):
    return Counter((e["outcome"], e["reason"]) for e in report.events)


def _chunks(mem: Memory) -> set[tuple[str, str, frozenset[str]]]:
    out = set()
    for c in mem.chunks(include_vectors=False):
        urls = frozenset([c["url"], *(c.get("also_seen_at") or [])])
        out.add((c["id"], c["text"], urls))
    return out


def _pages(mem: Memory) -> dict[str, tuple]:
    return {p.url: (p.title, p.text, tuple(p.chunk_ids), p.status) for p in mem.pages()}


def test_ray_harvest_into_s3_equals_a_local_harvest(hosts_site, make_charter, brt_home, embedder, s3_store, tmp_path):
    from orchestrator.clean import clean
    from orchestrator.config import open_memory
    from orchestrator.synthesize import synthesize

    uri, opts, _bucket, _prefix = s3_store
    site = hosts_site(pages=60)
    ray_before = _ray_processes()

    local = _charter(make_charter, site, "ray_eq_local", concurrency=2)
    on_ray = _charter(make_charter, site, "ray_eq_ray", concurrency=2, memory={"uri": uri, "storage_options": opts})
    local_report = harvest(local)
    ray_report = harvest(on_ray, ray="local")

    # Ray is shut down with the harvest that started it: no raylet, GCS or worker process is left
    assert not _wait_gone(_ray_processes() - ray_before), "Ray processes left after the harvest"

    assert ray_report.counts() == local_report.counts()
    assert ray_report.counts()["stored"] == 60 + 1 + HOSTS
    assert _events(ray_report) == _events(local_report)
    assert summarize(ray_report.events, 0) == summarize(local_report.events, 0)
    assert ray_report.chunks_total == local_report.chunks_total

    local_mem = open_memory(local, create=False)
    ray_mem = open_memory(on_ray, create=False)
    assert ray_mem.remote and not local_mem.remote
    assert _pages(ray_mem) == _pages(local_mem)
    assert _chunks(ray_mem) == _chunks(local_mem)
    # the journal on object storage holds the same events (and the run's summary)
    journaled = [e for e in Memory("ray_eq_ray", uri=uri, storage_options=opts).events()]
    kinds = Counter(e.get("type", "harvest_event") for e in journaled)
    assert kinds["harvest_event"] == len(ray_report.events) and kinds["harvest_summary"] == 1

    local_evidence = synthesize(local, out=tmp_path / "local.md").sections[0].blocks
    ray_evidence = synthesize(on_ray, out=tmp_path / "ray.md").sections[0].blocks
    assert [(b.url, b.quote) for b in ray_evidence] == [(b.url, b.quote) for b in local_evidence]
    assert ray_evidence and ray_evidence[0].url == site.article_url(7)
    assert "Saint" in ray_evidence[0].quote

    # one HAR per worker context, merged at clean into one that holds every page stored
    assert len(ray_report.har_paths) == 2 and not ray_report.har_incomplete
    assert all(p.is_file() and p.parent == Path(ray_mem.path) / "har" for p in ray_report.har_paths)
    result = clean(on_ray, snapshot=tmp_path / "ray.jsonl")
    merged = json.loads(Path(result.har_path).read_text(encoding="utf-8"))
    recorded = {e["request"]["url"] for e in merged["log"]["entries"]}
    stored = {e["final_url"] or e["url"] for e in ray_report.events if e["outcome"] == "stored"}
    assert stored <= recorded
    assert not Memory.exists("ray_eq_ray", uri=uri, storage_options=opts)


def test_a_ray_worker_killed_mid_run_loses_no_page(hosts_site, make_charter, brt_home, embedder):
    from tests.sites.slow import chromium_processes

    site = hosts_site(pages=40, delay_s=0.4)
    browsers_before = {p.pid for p in chromium_processes()}
    ray_before = _ray_processes()
    charter = _charter(make_charter, site, "ray_kill", concurrency=4)
    killed: list[int] = []

    def kill_one_worker() -> None:
        deadline = time.monotonic() + 240
        while site.article_hits() < 6 and time.monotonic() < deadline:
            time.sleep(0.1)
        workers = _browser_workers()
        if workers:
            os.kill(workers[0].pid, signal.SIGKILL)
            killed.append(workers[0].pid)

    killer = threading.Thread(target=kill_one_worker, daemon=True)
    killer.start()
    report = harvest(charter, ray="local")
    killer.join(timeout=10)
    assert killed, "no Ray browser worker was found to kill"

    stored = {e["final_url"] or e["url"] for e in report.events if e["outcome"] == "stored"}
    expected = {site.article_url(i) for i in range(40)} | {site.seed} | {site.url(k, "hub.html") for k in range(HOSTS)}
    assert stored == expected, report.summary()
    assert report.counts()["failed"] == 1  # the 404 only
    lost = [e for e in report.events if any(a.get("reason") == WORKER_LOST for a in e["attempts"])]
    assert lost, "no page was in flight on the killed worker"
    assert all(e["outcome"] in ("stored", "skipped", "blocked") or e["reason"] == "HTTP 404" for e in lost)
    # the dead worker's HAR is a placeholder that says so; the survivor's is complete
    assert len(report.har_incomplete) == 1 and len(report.har_paths) == 2
    note = json.loads(report.har_incomplete[0].read_text(encoding="utf-8"))["log"]["comment"]
    assert note.startswith("incomplete:") and WORKER_LOST in note
    mem = Memory("ray_kill")
    assert {p.url for p in mem.pages()} == expected

    assert not _wait_gone(_ray_processes() - ray_before), "Ray processes left after the harvest"
    assert not _wait_gone({p.pid for p in chromium_processes()} - browsers_before), "browsers left behind"


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def ray_cluster():
    """A Ray cluster started apart from the harvest, as on a cluster's head node (`ray start --head`), with a
    Ray Client server and token authentication; ``env`` holds what a user of it sets (the mode and the token).
    Stopped (its processes killed) afterwards."""
    import secrets
    import shutil
    import subprocess
    import sys

    ray_cli = Path(sys.executable).parent / "ray"
    ray_cli = str(ray_cli) if ray_cli.is_file() else shutil.which("ray")
    if not ray_cli:
        pytest.skip("the ray command is not installed")
    before = _ray_processes(everything=True)
    port, client_port = _free_port(), _free_port()
    env = {
        **os.environ,
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": secrets.token_hex(32),
    }
    started = subprocess.run(
        [
            ray_cli,
            "start",
            "--head",
            f"--port={port}",
            f"--ray-client-server-port={client_port}",
            "--num-cpus=3",
            "--include-dashboard=false",
            "--disable-usage-stats",
            f"--object-store-memory={128 * 1024 * 1024}",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert started.returncode == 0, started.stderr[-2000:]
    try:
        yield {"gcs": f"127.0.0.1:{port}", "client": f"ray://127.0.0.1:{client_port}", "cli": ray_cli, "env": env}
    finally:
        import psutil

        for pid in _ray_processes(everything=True) - before:
            try:
                psutil.Process(pid).kill()
            except psutil.NoSuchProcess:
                pass
        assert not _wait_gone(_ray_processes(everything=True) - before), "processes of the cluster left"


def test_brt_harvest_joins_a_running_ray_cluster_by_address(hosts_site, make_charter, brt_home, ray_cluster, tmp_path):
    # "past one machine": `brt harvest CHARTER --ray ray://HOST:PORT` is a driver of a cluster that runs on its
    # own (here on loopback, with token authentication), reached through Ray Client; the browser and embedding
    # workers run in the cluster's processes, the store is written by this driver; at the end the driver
    # disconnects and the cluster runs on
    import subprocess
    import sys

    from orchestrator.synthesize import synthesize

    site = hosts_site(pages=12)
    charter = _charter(make_charter, site, "ray_cluster", concurrency=2, path="cluster.yaml")
    env = {**ray_cluster["env"], **{k: os.environ[k] for k in ("BRT_HOME", "BRT_HOST_RESOLVER_RULES")}}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "orchestrator.cli",
            "harvest",
            str(tmp_path / "cluster.yaml"),
            "--ray",
            ray_cluster["client"],
            "--json",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    expected = {site.article_url(i) for i in range(12)} | {site.seed} | {site.url(k, "hub.html") for k in range(HOSTS)}
    stored = {e["final_url"] or e["url"] for e in report["events"] if e["outcome"] == "stored"}
    assert stored == expected
    assert {p.url for p in Memory("ray_cluster").pages()} == expected
    status = subprocess.run(
        [ray_cluster["cli"], "status", f"--address={ray_cluster['gcs']}"],
        env=ray_cluster["env"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert status.returncode == 0, status.stderr[-2000:]  # the cluster runs on
    blocks = synthesize(charter, out=tmp_path / "cluster.md").sections[0].blocks
    assert blocks and blocks[0].url == site.article_url(7) and "Saint" in blocks[0].quote

    # `--ray auto` on a node of the cluster (RAY_ADDRESS names it, as `ray start` tells its users): a plain driver
    _charter(make_charter, site, "ray_cluster_auto", concurrency=2, path="auto.yaml")
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "harvest", str(tmp_path / "auto.yaml"), "--ray", "auto", "--json"],
        env={**env, "RAY_ADDRESS": ray_cluster["gcs"]},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert {p.url for p in Memory("ray_cluster_auto").pages()} == expected


def test_a_ray_harvest_killed_9_resumes(hosts_site, make_charter, brt_home, tmp_path):
    # kill -9 of the driver (`brt harvest --ray`) mid-run: the local Ray instance it started goes with it, nothing
    # stored is lost, and a second `brt harvest --ray` resumes (what is stored is not read again, no duplicate
    # chunk) and completes; `brt status --check` finds the store sound
    import subprocess
    import sys

    from tests.sites.slow import chromium_processes

    site = hosts_site(pages=40, delay_s=0.3)
    ray_before = _ray_processes(everything=True)
    browsers_before = {p.pid for p in chromium_processes()}
    charter = _charter(make_charter, site, "ray_resume", concurrency=2, path="resume.yaml")
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    cli = [sys.executable, "-m", "orchestrator.cli"]
    proc = subprocess.Popen(
        [*cli, "harvest", str(charter.source), "--ray"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "killed.err").open("w"),
        start_new_session=True,
    )
    journal = brt_home / "memory" / "ray_resume" / "events.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if journal.exists() and journal.read_text().count('"outcome": "stored"') >= 8:
            break
        time.sleep(0.1)
    assert proc.poll() is None, "the harvest ended before it could be killed: " + (tmp_path / "killed.err").read_text()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    # the instance dies with its driver: GCS, raylet and the browser and embedding workers (Ray's dashboard and
    # runtime-env agents notice a minute or more later: killed here so that they do not outlive the test)
    left = _ray_processes(everything=True) - ray_before
    assert not _wait_gone({p for p in left if _is_core(p)}, timeout=60), "Ray outlived its driver"
    for pid in _wait_gone(left, timeout=0):
        with contextlib.suppress(Exception):
            os.kill(pid, signal.SIGKILL)
    assert not _wait_gone({p.pid for p in chromium_processes()} - browsers_before), (
        "the workers' browsers outlived them"
    )

    stored_at_kill = {p.url for p in Memory("ray_resume").pages()}
    assert len(stored_at_kill) >= 8
    with site.lock:
        reads_at_kill = Counter(site.log)

    done = subprocess.run(
        [*cli, "harvest", str(charter.source), "--ray"], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    expected = {site.article_url(i) for i in range(40)} | {site.seed} | {site.url(k, "hub.html") for k in range(HOSTS)}
    mem = Memory("ray_resume")
    assert {p.url for p in mem.pages()} == expected
    with site.lock:
        reads_after = Counter(site.log)
    # stored pages are not read again; the one exception is a redirect's target: /moved.html (301 -> p/0.html),
    # when first read after the kill, brings its target with it
    redirected = reads_after[(site.allowed[0], "/moved.html")] - reads_at_kill[(site.allowed[0], "/moved.html")]
    for url in stored_at_kill:
        host_name, path = url.split("://", 1)[1].split(":", 1)[0], "/" + url.split("/", 3)[3]
        again = reads_after[(host_name, path)] - reads_at_kill[(host_name, path)]
        assert again == (redirected if url == site.article_url(0) else 0), url
    ids = [c["id"] for c in mem.chunks(include_vectors=False)]
    assert len(ids) == len(set(ids))
    check = subprocess.run(
        [*cli, "status", str(charter.source), "--check"], env=env, capture_output=True, text=True, timeout=300
    )
    assert check.returncode == 0 and "check:    ok" in check.stdout, check.stdout + check.stderr
    assert not _wait_gone(_ray_processes(everything=True) - ray_before), "Ray processes left after the harvest"
