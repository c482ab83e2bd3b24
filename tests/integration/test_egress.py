"""Egress is a property of the browser process brt launches: every connection goes through brt's egress proxy,
whatever in the page makes it (workers, keepalive requests in ``pagehide``, preconnects, WebRTC, redirected
subresources). A sentinel on 127.0.0.2 (an internal host) counts TCP accepts and UDP datagrams, not only HTTP
requests. A replay opens no connection at all and checks every hop of a recorded redirect chain; a browser brt
attaches to cannot be held to this, and brt says so."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestrator.charter import parse_charter
from orchestrator.config import open_memory
from orchestrator.harvest import harvest
from orchestrator.harvest.journal import last_summary
from tests.sites.egress import EGRESS_RULES, VECTORS, start_sentinel, start_vector_site, wait_quiet

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parents[2]
NOTHING = {"accepts": 0, "datagrams": 0, "requests": []}


@pytest.fixture
def vectors(monkeypatch):
    """(the vector site on 127.0.0.1 as allowed.test, the sentinel on 127.0.0.2)."""
    monkeypatch.setenv("BRT_HOST_RESOLVER_RULES", EGRESS_RULES)
    try:
        sentinel = start_sentinel()
    except OSError as exc:  # pragma: no cover - a machine without the whole 127/8 on loopback
        pytest.skip(f"cannot listen on 127.0.0.2: {exc}")
    site = start_vector_site(sentinel)
    try:
        yield site, sentinel
    finally:
        site.stop()
        sentinel.stop()


def _charter(seeds: list[str], charter_id: str, allowed: tuple[str, ...] = ("allowed.test",)) -> Any:
    return parse_charter(
        {
            "id": charter_id,
            "title": "Egress vectors",
            "allowed_domains": list(allowed),
            "seeds": seeds,
            # the vectors are the browser's: every page rendered (a static read runs none of their scripts)
            "harvest": {"max_depth": 0, "timeout_s": 15, "concurrency": 2, "obey_robots": False,
                        "render": "always"},
            "memory": {"use_concept_index": False},
        }
    )


def test_no_vector_reaches_the_internal_host_and_a_replay_opens_no_connection(vectors, brt_home, embedder):
    site, sentinel = vectors
    charter = _charter(site.seeds(), "egress_launch")
    report = harvest(charter)
    assert wait_quiet(sentinel) == NOTHING  # no TCP accept, no UDP datagram (STUN/TURN), for every vector
    outcomes = {e["url"].rsplit("/", 1)[-1]: e["outcome"] for e in report.events}
    assert outcomes == {f"{name}.html": "stored" for name in VECTORS}, report.events
    assert any(path.startswith("/js/worker.js") for _m, _h, path in site.log)  # allowed traffic flows
    assert report.egress is not None and report.egress.enforced and report.egress.by == "proxy"
    assert any(t.startswith("127.0.0.2:") for t in report.egress.refused_targets), report.egress
    assert any(t.startswith("db.allowed.test:") and "internal address" in t for t in report.egress.refused_targets)
    summary = last_summary(open_memory(charter))  # the audit trail says how the browser was held
    assert summary is not None and summary["egress"]["enforced"] is True and summary["egress"]["refused"] > 0

    accepted = site.accepts
    replayed = harvest(_charter(site.seeds(), "egress_replay"), replay=report.har_path)
    assert wait_quiet(sentinel) == NOTHING
    assert site.accepts == accepted  # a replay opens no connection at all, not even to the allowed site
    assert replayed.egress is not None and replayed.egress.by == "replay" and replayed.counts()["stored"] >= 20


def test_the_proxy_holds_without_page_routing_or_local_network_access(vectors):
    """The proxy alone, with a Chromium that has no Local Network Access checks and no page routing at all:
    still no connection to the internal host."""
    from playwright.async_api import async_playwright

    from orchestrator.harvest.launch import LAUNCH_ARGS, egress_args, find_browser
    from orchestrator.harvest.net.guard import NetGuard
    from orchestrator.harvest.net.proxy import EgressProxy, GuardPolicy

    site, sentinel = vectors
    no_lna = "--disable-features=" + ",".join(
        ("LocalNetworkAccessChecks", "LocalNetworkAccessChecksWebRTC", "BlockInsecurePrivateNetworkRequests")
    )

    async def browse() -> list[str]:
        guard = NetGuard(["allowed.test"], resolver_rules=EGRESS_RULES)
        async with EgressProxy(GuardPolicy(lambda u: "allowed.test" in u, guard)) as proxy, async_playwright() as p:
            browser = await p.chromium.launch(
                executable_path=find_browser(), args=[*LAUNCH_ARGS, *egress_args(proxy.url), no_lna]
            )
            context = await browser.new_context()
            tabs = []
            for url in site.seeds():
                tab = await context.new_page()
                tabs.append(tab)
                try:
                    await tab.goto(url, wait_until="load", timeout=10_000)
                except Exception:  # noqa: BLE001 - pages that navigate themselves away
                    pass
            await asyncio.sleep(3)  # workers, beacons, ICE gathering
            for tab in tabs:
                await tab.close(run_before_unload=True)  # pagehide: the keepalive requests
            await asyncio.sleep(1)
            await browser.close()
            return [r.target for r in proxy.refused]

    refused = asyncio.run(browse())
    assert wait_quiet(sentinel) == NOTHING
    assert any(t.startswith("127.0.0.2:") for t in refused)
    assert any(path.startswith("/go/") for _m, _h, path in site.log)  # the redirects to it were followed


def test_the_browser_devtools_mcp_launches_goes_through_the_proxy_too(vectors, brt_home, embedder):
    from orchestrator.harvest.readers.devtools_mcp.client import DevtoolsMcpNotFound, find_devtools_mcp

    try:
        command = find_devtools_mcp()
    except DevtoolsMcpNotFound as exc:
        pytest.skip(f"chrome-devtools-mcp is not installed: {exc}")
    if "--no-install" in command:
        pytest.skip("chrome-devtools-mcp is not in node_modules (bash scripts/dev.sh setup installs it)")
    site, sentinel = vectors
    names = ("webrtc", "keepalive_pagehide", "worker_fetch", "fetch_redirect", "iframe", "prefetch")
    seeds = [site.url(f"v/{name}.html", host="127.0.0.1") for name in names]  # no resolver rules needed
    report = harvest(_charter(seeds, "egress_devtools", allowed=("127.0.0.1",)), via="devtools-mcp")
    assert wait_quiet(sentinel) == NOTHING
    assert {e["outcome"] for e in report.events} == {"stored"}, report.events
    assert report.egress is not None and report.egress.enforced and report.egress.refused > 0


def _brt(*args: str, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", *args], env=env, capture_output=True, text=True, timeout=timeout
    )


def test_an_attached_browser_is_warned_about_and_recorded_as_not_enforced(vectors, debug_chromium, brt_home, tmp_path):
    site, _sentinel = vectors
    endpoint, _proc = debug_chromium
    charter = tmp_path / "attach.yaml"
    seeds = [site.url(f"v/{name}.html", host="127.0.0.1") for name in ("fetch_redirect", "webrtc")]
    charter.write_text(
        yaml.safe_dump(
            {
                "id": "egress_attach",
                "title": "Attached",
                "allowed_domains": ["127.0.0.1"],
                "seeds": seeds,
                "harvest": {"max_depth": 0, "timeout_s": 15, "obey_robots": False, "render": "always"},
                "memory": {"use_concept_index": False},
            }
        )
    )
    env = dict(os.environ, BRT_HOME=str(brt_home), PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1")
    done = _brt("harvest", str(charter), "--browser-url", endpoint, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "warning: --browser-url attaches to a browser brt did not launch" in done.stderr
    assert "NOT ENFORCED" in done.stdout  # the summary table says so too
    quiet = _brt("-q", "harvest", str(charter), "--browser-url", endpoint, env=env)
    assert "warning: --browser-url" in quiet.stderr  # even with --quiet

    snapshot = tmp_path / "snap.jsonl"
    cleaned = _brt("clean", str(charter), "--snapshot", str(snapshot), env=env)
    assert cleaned.returncode == 0, cleaned.stderr[-2000:]
    records = [json.loads(line) for line in snapshot.read_text().splitlines()]
    summaries = [r for r in records if r.get("type") == "harvest_summary"]
    events = [r for r in records if r.get("type") == "harvest_event"]
    assert summaries and all(s["egress"]["enforced"] is False for s in summaries), summaries
    assert all("did not launch" in s["egress"]["note"] for s in summaries)
    assert events and all(str(e.get("egress", "")).startswith("not enforced") for e in events)


# -- replay: every hop of a recorded redirect chain ----------------------------------------------------------

_B = "http://allowed.test/"
_TEXT = "The harbour page tells of the quay, the lamps and the tides in plain words for the extractor. " * 4


def _entry(url: str, status: int, headers: dict[str, str], body: str = "") -> dict[str, Any]:
    return {
        "startedDateTime": "2025-01-01T00:00:00.000Z",
        "time": 1,
        "request": {"method": "GET", "url": url, "httpVersion": "HTTP/1.1", "cookies": [], "headers": [],
                    "queryString": [], "headersSize": -1, "bodySize": 0},
        "response": {"status": status, "statusText": "", "httpVersion": "HTTP/1.1", "cookies": [],
                     "headers": [{"name": k, "value": v} for k, v in headers.items()],
                     "content": {"size": len(body), "mimeType": headers.get("Content-Type", "text/html"), "text": body},
                     "redirectURL": headers.get("Location", ""), "headersSize": -1, "bodySize": len(body)},
        "cache": {},
        "timings": {"send": 0, "wait": 0, "receive": 0},
    }


def _doc(title: str, text: str = _TEXT) -> str:
    return f"<html><head><title>{title}</title></head><body><p>{text}</p></body></html>"


def _chain_har(path: Path) -> Path:
    html = {"Content-Type": "text/html"}
    page = f"<html><head><title>Quay</title><script src='/s1.js'></script></head><body><p>{_TEXT}</p>"
    secret = _doc("Secret", "INTERNAL-SECRET " + _TEXT)
    entries = [
        # a page whose iframes go through recorded redirect chains (one ends at an internal address)
        _entry(_B + "index.html", 200, html, page + "<iframe src='/a.html'></iframe><iframe src='/x1.html'></iframe>"),
        _entry(_B + "a.html", 302, {"Location": _B + "b.html"}),
        _entry(_B + "b.html", 302, {"Location": _B + "c.html"}),
        _entry(_B + "c.html", 200, html, _doc("Lamps")),
        _entry(_B + "x1.html", 302, {"Location": _B + "x2.html"}),
        _entry(_B + "x2.html", 302, {"Location": "http://127.0.0.2:9/secret"}),
        # a script whose chain passes through an allowed name that resolves to the internal host
        _entry(_B + "s1.js", 302, {"Location": _B + "s2.js"}),
        _entry(_B + "s2.js", 302, {"Location": "http://db.allowed.test/s3.js"}),
        _entry("http://db.allowed.test/s3.js", 200, {"Content-Type": "text/javascript"}, "document.title='INTERNAL'"),
        # navigations whose chains end at the internal host (by IP, and by an allowed name)
        _entry(_B + "p1.html", 302, {"Location": _B + "p2.html"}),
        _entry(_B + "p2.html", 302, {"Location": "http://127.0.0.2:9/secret"}),
        _entry(_B + "n1.html", 302, {"Location": _B + "n2.html"}),
        _entry(_B + "n2.html", 302, {"Location": "http://db.allowed.test/secret"}),
        _entry("http://127.0.0.2:9/secret", 200, html, secret),
        _entry("http://db.allowed.test/secret", 200, html, secret),
        _entry(_B + "after.html", 200, html, _doc("After")),
    ]
    path.write_text(json.dumps({"log": {"version": "1.2", "creator": {"name": "t", "version": "1"}, "pages": [],
                                        "entries": entries}}))
    return path


@pytest.mark.parametrize("render", ["always", "auto"])
def test_a_replay_checks_every_hop_of_a_recorded_redirect_chain(brt_home, embedder, tmp_path, monkeypatch, render):
    monkeypatch.setenv("BRT_HOST_RESOLVER_RULES", EGRESS_RULES)
    har = _chain_har(tmp_path / "chain.har")
    seeds = [_B + p for p in ("index.html", "p1.html", "n1.html", "a.html", "after.html")]
    charter = parse_charter(
        {
            "id": "replay_chain",
            "title": "Chains",
            "allowed_domains": ["allowed.test"],
            "seeds": seeds,
            "harvest": {"max_depth": 0, "timeout_s": 10, "concurrency": 1, "obey_robots": False, "render": render},
            "memory": {"use_concept_index": False},
        }
    )
    t0 = time.monotonic()
    report = harvest(charter, replay=har)
    events = {e["url"]: e for e in report.events}
    assert events[_B + "p1.html"]["outcome"] == "blocked" and "127.0.0.2" in events[_B + "p1.html"]["reason"]
    assert events[_B + "n1.html"]["outcome"] == "blocked" and "internal address" in events[_B + "n1.html"]["reason"]
    assert events[_B + "a.html"]["outcome"] == "stored" and events[_B + "a.html"]["final_url"] == _B + "c.html"
    index = events[_B + "index.html"]
    assert index["outcome"] == "stored" and events[_B + "after.html"]["outcome"] == "stored"
    if render == "always":  # the browser's subresource and iframe chains (a static read requests neither)
        assert "http://db.allowed.test/s3.js" in index["blocked_requests"], index
        assert events[_B + "after.html"]["rendered"]  # the iframe chains did not take the driver down
    texts = " ".join(f"{p.title} {p.text}" for p in open_memory(charter).pages())
    assert "INTERNAL" not in texts and time.monotonic() - t0 < 120
