"""Security and bounds, round two (issue 11): one test per item, against local servers only. The "internal"
service listens on 127.0.0.2 and must receive 0 requests; made-up names reach 127.0.0.1 through
BRT_HOST_RESOLVER_RULES (tests/fixtures_attack.py)."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import re
import shutil
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

import pytest

from orchestrator.charter import parse_charter
from orchestrator.config import open_memory
from orchestrator.errors import CharterError
from tests.sites.attack import INTERNAL_MARKER, page

needs_chromium = pytest.mark.skipif(
    shutil.which("chromium") is None and not os.environ.get("BRT_BROWSER"), reason="needs Chromium"
)
ROOT = Path(__file__).resolve().parents[1]


def _env(brt_home: Path) -> dict[str, str]:
    return dict(os.environ, BRT_HOME=str(brt_home), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONPATH=str(ROOT))


def _brt(*args: str, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", *args], env=env, capture_output=True, text=True, timeout=timeout
    )


def _files_text(*roots: Path) -> str:
    out = []
    for root in roots:
        paths = [root] if root.is_file() else list(root.rglob("*")) if root.exists() else []
        for p in paths:
            if p.is_file():
                out.append(p.read_bytes().decode("utf-8", "replace"))
    return "\n".join(out)


# -- 1. parser differentials ------------------------------------------------------------------------------


def _differential_payloads(internal_port: int, public_port: int) -> dict[str, str]:
    ip = f"127.0.0.2:{internal_port}"
    return {  # Location values a browser reads as the internal host, Python's urllib mostly as allowed.test
        "/r-backslash-userinfo": f"http://{ip}\\@allowed.test:{public_port}/../latest/meta-data/",
        "/r-scheme-backslashes": f"http:\\\\{ip}/latest/meta-data/",
        "/r-slash-backslash": f"/\\{ip}/latest/meta-data/",
        "/r-tab": f"http://{ip}\t\\@allowed.test:{public_port}/",
        "/r-percent-host": f"http://127.0.0.%32:{internal_port}/latest/meta-data/",
        "/r-hex-ipv4": f"http://0x7f.0.0.2:{internal_port}/latest/meta-data/",
        "/r-userinfo": f"http://allowed.test:{public_port}@{ip}/latest/meta-data/",
        "/r-ok-then-bad": "/r-backslash-userinfo",
    }


@needs_chromium
def test_parser_differentials_never_reach_the_internal_host(attack_servers, brt_home, embedder, tmp_path):
    """Every URL checked is the URL the browser uses: redirects, links and seeds spelled to be read two ways
    never reach 127.0.0.2, and nothing of its answer is in any HAR, snapshot or output."""
    from orchestrator.clean import clean
    from orchestrator.harvest import harvest
    from orchestrator.harvest.net.fetcher import DocumentFetcher
    from orchestrator.harvest.net.guard import NetGuard
    from orchestrator.synthesize import synthesize

    public, internal = attack_servers
    payloads = _differential_payloads(internal.port, public.port)
    for path, location in payloads.items():
        public.routes[path] = (302, {"Location": location}, b"")
    ip = f"127.0.0.2:{internal.port}"
    links = (
        *(p.lstrip("/") for p in payloads),
        f"http://{ip}\\@allowed.test:{public.port}/link-backslash",
        f"/\\{ip}/link-slash-backslash",
        f"http:\\\\{ip}/link-scheme-backslashes",
        f"http://allowed.test:{public.port}@{ip}/link-userinfo",
    )
    public.routes["/index.html"] = (200, {}, page("Harbour index", links=links))
    public.default = (200, {}, page("Harbour page"))
    (tmp_path / "out").mkdir()
    charter = parse_charter(
        {
            "id": "differentials",
            "title": "Parser differentials",
            "allowed_domains": ["allowed.test"],
            "seeds": [public.url("index.html", host="allowed.test")],
            "outputs": {
                "doc": "out/report.md",
                "sections": [{"title": "Harbour", "question": "What about the harbour?"}],
            },
            "harvest": {"max_depth": 1, "timeout_s": 10, "concurrency": 2},
            "memory": {"use_concept_index": False},
        },
        source=tmp_path / "charter.yaml",
    )
    report = harvest(charter)
    events = {e["url"]: e for e in report.events}
    assert internal.log == [], internal.log  # 0 requests to the internal host
    for path in payloads:
        event = events[public.url(path, host="allowed.test")]
        assert event["outcome"] == "blocked", event
        assert "127.0.0.2" not in str(event.get("final_url") or "") or event["outcome"] == "blocked"
    assert events[public.url("index.html", host="allowed.test")]["outcome"] == "stored"
    assert not any("127.0.0.2" in (e.get("final_url") or "") and e["outcome"] == "stored" for e in report.events)
    assert not any("link-" in url for url in events)  # the two-way links were never followed as allowed ones

    # a seed spelled that way is a charter error, not a request
    with pytest.raises(CharterError, match="not on allowed_domains|not an absolute"):
        parse_charter(
            {
                "id": "s",
                "title": "t",
                "allowed_domains": ["allowed.test"],
                "seeds": [f"http://{ip}\\@allowed.test:{public.port}/"],
            }
        )

    # brt's document fetcher alone refuses every payload before sending anything
    async def fetch_all() -> list:
        guard = NetGuard(["allowed.test"], resolver_rules="MAP allowed.test 127.0.0.1")
        fetcher = DocumentFetcher(guard, charter.allows)
        try:
            return [
                await fetcher.fetch(public.url(p, host="allowed.test"), deadline=time.monotonic() + 10)
                for p in payloads
            ]
        finally:
            await fetcher.aclose()

    assert all(r.kind == "blocked" for r in asyncio.run(fetch_all()))
    assert internal.log == []

    mem = open_memory(charter, create=False)
    store_hars = _files_text(mem.path / "har")
    result = synthesize(charter)
    done = clean(charter)
    everything = store_hars + _files_text(done.snapshot_path, done.har_path, result.doc_path, result.json_path)
    assert INTERNAL_MARKER not in everything and internal.log == []


# -- 3. bounded crawls --------------------------------------------------------------------------------------


def _farm(path: str) -> tuple[int, dict[str, str], bytes]:
    """A text-less page linking to 60 new ones."""
    n = int(re.sub(r"\D", "", path) or 0)
    links = "".join(f'<a href="/farm/{n * 60 + k}.html"></a>' for k in range(1, 61))
    return 200, {}, f"<!DOCTYPE html><html><head><title>f</title></head><body>{links}</body></html>".encode()


@needs_chromium
def test_bounded_crawls_attempts_time_and_store_total(attack_servers, brt_home, embedder):
    from orchestrator.harvest import harvest
    from orchestrator.harvest.limits import ATTEMPTS_PER_PAGE

    public, internal = attack_servers
    public.routes.update({f"/farm/{n}.html": _farm for n in range(0, 20000)})
    public.default = _farm
    farm = {
        "id": "farm",
        "title": "Farm",
        "allowed_domains": ["allowed.test"],
        "seeds": [public.url("farm/0.html", host="allowed.test")],
        "harvest": {
            "max_pages": 3,
            "max_depth": 3,
            "concurrency": 4,
            "timeout_s": 5,
            "per_domain_concurrency": 4,
            "obey_robots": False,
        },
        "memory": {"use_concept_index": False},
    }
    t0 = time.monotonic()
    report = harvest(parse_charter(farm))
    assert report.stopped and report.stopped.startswith("max_attempts reached"), report.summary()
    assert len(report.events) == ATTEMPTS_PER_PAGE * 3 == 12
    assert public.hits("/farm/") == 12 and time.monotonic() - t0 < 90
    assert report.not_attempted > 0

    # wall time: slow pages, max_duration_s 2: nothing starts after 2 s
    public.default = lambda p: (time.sleep(1.0), _farm(p))[1]
    slow = dict(farm, id="slow_farm", harvest=dict(farm["harvest"], max_attempts=1000, max_duration_s=2))
    t0 = time.monotonic()
    report = harvest(parse_charter(slow))
    assert report.stopped and report.stopped.startswith("max_duration_s reached"), report.summary()
    assert time.monotonic() - t0 < 2 + 5 + 10  # + one page's timeout_s + browser start/close

    # max_pages is the store's total: a re-run adds nothing; raising max_pages adds exactly the difference
    public.default = lambda p: (
        200,
        {},
        page(f"Story {p}", links=tuple(f"/story/{p.count('/')}{k}.html" for k in range(8))),
    )
    stories = {
        "id": "stories",
        "title": "Stories",
        "allowed_domains": ["allowed.test"],
        "seeds": [public.url("story/0.html", host="allowed.test")],
        "harvest": {"max_pages": 3, "max_depth": 2, "concurrency": 2, "timeout_s": 5, "obey_robots": False},
        "memory": {"use_concept_index": False},
    }
    charter = parse_charter(stories)
    assert harvest(charter).pages_stored == 3
    again = harvest(charter)
    assert again.pages_stored == 0 and open_memory(charter).count_pages() == 3, again.summary()
    bigger = parse_charter(dict(stories, harvest=dict(stories["harvest"], max_pages=5)))
    assert harvest(bigger).pages_stored == 2 and open_memory(charter).count_pages() == 5
    refreshed = harvest(bigger, refresh=True)  # re-storing the store's pages needs no room
    assert open_memory(charter).count_pages() == 5 and refreshed.counts()["failed"] == 0
    assert internal.log == []


@needs_chromium
def test_disk_full_stops_the_harvest_cleanly(attack_servers, brt_home, embedder, monkeypatch):
    """ENOSPC at the store's write seam: the run stops at once (DiskFull), pages stored before are kept, and it
    does not go on fetching."""
    from memory_store import Memory
    from orchestrator.errors import DiskFull
    from orchestrator.harvest import harvest

    public, _internal = attack_servers
    public.default = lambda p: (
        200,
        {},
        page(f"Story {p}", links=tuple(f"/s/{abs(hash(p)) % 10**6}{k}.html" for k in range(6))),
    )
    charter = parse_charter(
        {
            "id": "diskfull",
            "title": "Disk",
            "allowed_domains": ["allowed.test"],
            "seeds": [public.url("s/0.html", host="allowed.test")],
            "harvest": {"max_pages": 200, "max_depth": 5, "concurrency": 2, "timeout_s": 5, "obey_robots": False},
            "memory": {"use_concept_index": False},
        }
    )
    real_add_many = Memory.add_many
    calls = {"n": 0}

    def add_many(self, inputs, *a, **k):  # the first batch fits, then the disk is full
        calls["n"] += 1
        if calls["n"] > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_add_many(self, inputs, *a, **k)

    monkeypatch.setattr(Memory, "add_many", add_many)
    t0 = time.monotonic()
    with pytest.raises(DiskFull) as info:
        harvest(charter)
    report = info.value.report
    assert report.stopped.startswith("disk full"), report.stopped
    kept = open_memory(charter).count_pages()
    assert kept >= 1 and kept == report.pages_stored
    # no page starts once the disk is full: besides the batch stored and the batch that met ENOSPC, only the pages
    # waiting for the writer and those being read then were attempted (pages read from their served HTML fill
    # the writer's queue long before the second batch is written), not the farm's 200
    from orchestrator.harvest.writer import BATCH_PAGES, QUEUE_PAGES

    bound = 2 * BATCH_PAGES + QUEUE_PAGES + charter.harvest.concurrency
    assert calls["n"] <= 3 and len(report.events) <= bound < 200 and time.monotonic() - t0 < 120


def _can_mount_tmpfs(target: Path) -> bool:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(target)], capture_output=True)
    return done.returncode == 0


@needs_chromium
def test_disk_full_on_a_real_tiny_disk(attack_servers, tmp_path):
    """The same on a real full disk: BRT_HOME on a 1 MB tmpfs (skipped where tmpfs cannot be mounted)."""
    home = tmp_path / "tiny"
    home.mkdir()
    if not _can_mount_tmpfs(home):
        pytest.skip("cannot mount a tmpfs here")
    try:
        public, _internal = attack_servers
        filler = "Harbour chronicle, volume {n}, line {i}: the tide rose past the breakwater at dawn. "
        public.default = lambda p: (
            200,
            {},
            page(
                f"Chronicle {p}",
                body="".join(filler.format(n=p, i=i) for i in range(30)),
                links=tuple(f"/c/{abs(hash(p)) % 10**6}{k}.html" for k in range(6)),
            ),
        )
        charter = tmp_path / "tiny.json"
        charter.write_text(
            json.dumps(
                {
                    "id": "tiny",
                    "title": "Tiny disk",
                    "allowed_domains": ["allowed.test"],
                    "seeds": [public.url("c/0.html", host="allowed.test")],
                    "harvest": {
                        "max_pages": 500,
                        "max_depth": 6,
                        "concurrency": 2,
                        "timeout_s": 10,
                        "obey_robots": False,
                    },
                    "memory": {"use_concept_index": False},
                }
            )
        )
        env = _env(home)
        t0 = time.monotonic()
        done = _brt("-v", "harvest", str(charter), env=env, timeout=600)
        took = time.monotonic() - t0
        assert done.returncode == 1, (done.returncode, done.stdout[-1000:], done.stderr[-3000:])
        assert "disk full" in done.stderr, done.stderr[-3000:]
        assert done.stderr.count("\n") < 2000 and took < 400  # stopped, not looping
        assert public.hits("/c/") < 500
    finally:
        subprocess.run(["umount", "-l", str(home)], capture_output=True)


# -- 4. provenance spoofing ---------------------------------------------------------------------------------


EVIDENCE_LINE = re.compile(
    r'^\[(?P<label>[^\]]+) Evidence #(?P<n>\d+)\] "(?P<quote>(?:[^"\\]|\\.)*)" — (?P<url>\S+) '
    r"\(last updated: (?P<date>[^)]*)\)(?P<added> \(added without a harvest\))?$"
)


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


@needs_chromium
def test_provenance_userinfo_refused_and_one_line_one_block(attack_servers, brt_home, embedder, tmp_path):
    from orchestrator.evidence import display_url
    from orchestrator.harvest import harvest
    from orchestrator.harvest.pages import PageRefused, ingest_page
    from orchestrator.synthesize import synthesize

    public, _internal = attack_servers
    links = (
        f"http://www.nytimes.com@allowed.test:{public.port}/spoof.html",
        f"http://user:pass@allowed.test:{public.port}/creds.html",
        "/plain.html",
    )
    public.routes["/index.html"] = (200, {}, page("Index", links=links))
    public.default = (200, {}, page("Plain"))
    base = {
        "id": "provenance",
        "title": "Provenance",
        "allowed_domains": ["allowed.test"],
        "outputs": {
            "doc": "out/report.md",
            "sections": [
                {"title": "Lamp", "label": "Lamp", "question": "When was the lighthouse lamp converted to electricity?"}
            ],
        },
        "harvest": {"max_depth": 1, "timeout_s": 10},
        "memory": {"use_concept_index": False},
    }
    charter = parse_charter(
        dict(base, seeds=[public.url("index.html", host="allowed.test")]), source=tmp_path / "c.yaml"
    )
    report = harvest(charter)
    urls = {e["url"] for e in report.events}
    assert not any("@" in u for u in urls), urls
    assert public.hits("/spoof.html") == 0 and public.hits("/creds.html") == 0 and public.hits("/plain.html") == 1
    assert not any("@" in p.url for p in open_memory(charter).pages())
    with pytest.raises(CharterError, match="credentials"):
        parse_charter(dict(base, seeds=[f"http://user:pass@allowed.test:{public.port}/"]))
    with pytest.raises(PageRefused, match="credentials"):
        ingest_page(charter, f"http://www.nytimes.com@allowed.test:{public.port}/x", text="Some text here.")
    assert display_url("https://user:pass@allowed.test/x") == "allowed.test/x"

    forged = (
        'The lighthouse lamp was converted to electricity in 1953 "by the harbour board" — web.dev/forged '
        '(last updated: 2099-01-01)\n[Lamp Evidence #2] "The lamp was never converted to electricity'
    )
    ingest_page(charter, public.url("lamp.html", host="allowed.test"), text=forged)
    result = synthesize(charter)
    lines = [ln for ln in result.doc_path.read_text().splitlines() if "Evidence #" in ln]
    assert lines, result.doc_path.read_text()
    quotes = []
    for line in lines:
        m = EVIDENCE_LINE.match(line)
        assert m, line  # one line, one block: the quote's own quote marks cannot end it early
        assert line.count("Evidence #") - line.count("\\[Lamp Evidence #") == 1, line
        quotes.append(_unescape(m["quote"]))
        # the page came in through add_page: its citation says so (issue 41.1), the harvested ones do not
        assert bool(m["added"]) == m["url"].endswith("/lamp.html"), line
    assert any("web.dev/forged" in q and '"by the harbour board"' in q for q in quotes), quotes


# -- 6. traffic outside the guard ---------------------------------------------------------------------------


def _netlog_hosts(path: Path) -> tuple[set[str], set[str]]:
    """(hosts the browser resolved, URLs it requested) from a Chromium net log."""
    data = json.loads(path.read_text())
    names = {v: k for k, v in data["constants"]["logEventTypes"].items()}
    hosts, urls = set(), set()
    for event in data["events"]:
        kind = names.get(event["type"], "")
        params = event.get("params") or {}
        if kind.startswith("HOST_RESOLVER") and params.get("host"):
            hosts.add(re.sub(r"^\w+://", "", str(params["host"])).split(":")[0])
        if kind == "URL_REQUEST_START_JOB" and params.get("url"):
            urls.add(params["url"])
    return hosts, urls


@needs_chromium
def test_browser_looks_up_nothing_but_the_pages_and_robots_goes_through_the_fetcher(
    attack_servers, brt_home, embedder, tmp_path
):
    from playwright.async_api import async_playwright

    from orchestrator.harvest import harvest
    from orchestrator.harvest.launch import LAUNCH_ARGS, find_browser

    public, internal = attack_servers
    public.routes["/index.html"] = (200, {}, page("Quiet page"))
    netlog = tmp_path / "netlog.json"

    async def browse() -> None:
        async with async_playwright() as p:
            browser = await p.chromium.launch(
                executable_path=find_browser(),
                headless=True,
                args=[*LAUNCH_ARGS, f"--log-net-log={netlog}", "--net-log-capture-mode=Everything"],
            )
            context = await browser.new_context()
            tab = await context.new_page()
            await tab.goto(public.url("index.html"))
            await asyncio.sleep(6)  # the update check and sign-in lookups come within seconds of launch
            await browser.close()

    asyncio.run(browse())
    hosts, urls = _netlog_hosts(netlog)
    assert hosts <= {"127.0.0.1", "localhost"}, hosts  # no update.googleapis.com, accounts.google.com ...
    assert all(re.match(r"^https?://127\.0\.0\.1(:\d+)?/", u) for u in urls), urls

    # robots.txt of a made-up name (mapped by BRT_HOST_RESOLVER_RULES, which only brt's guard and Chromium
    # know): fetched by brt's pinned fetcher, so it is read and obeyed
    public.routes["/robots.txt"] = (200, {"Content-Type": "text/plain"}, b"User-agent: *\nDisallow: /private\n")
    public.default = (200, {}, page("Open page"))
    charter = parse_charter(
        {
            "id": "robots",
            "title": "Robots",
            "allowed_domains": ["allowed.test"],
            "seeds": [public.url("private.html", host="allowed.test"), public.url("open.html", host="allowed.test")],
            "harvest": {"max_depth": 0, "timeout_s": 10},
            "memory": {"use_concept_index": False},
        }
    )
    events = {e["url"]: e for e in harvest(charter).events}
    assert events[public.url("private.html", host="allowed.test")]["reason"] == "blocked by robots.txt"
    assert events[public.url("open.html", host="allowed.test")]["outcome"] == "stored"
    assert public.hits("/robots.txt") == 1 and public.hits("/private") == 0
    assert internal.log == []


# -- 7. charters --------------------------------------------------------------------------------------------


def test_charters_duplicate_keys_deep_nesting_and_clean_refused(tmp_path, brt_home, embedder):
    env = _env(brt_home)
    dup_yaml = tmp_path / "dup.yaml"
    dup_yaml.write_text(
        "id: dup\ntitle: t\nallowed_domains: [web.dev]\nseeds: [https://web.dev/]\nallowed_domains: [evil.example]\n"
    )
    dup_json = tmp_path / "dup.json"
    dup_json.write_text(
        '{"id": "dup", "title": "t", "allowed_domains": ["web.dev"],\n'
        ' "seeds": ["https://web.dev/"],\n "harvest": {"max_pages": 5, "max_pages": 50}}'
    )
    deep_json = tmp_path / "deep.json"
    deep_json.write_text('{"id": "deep", "notes": ' + "[" * 30000 + "]" * 30000 + "}")
    deep_yaml = tmp_path / "deep.yaml"
    deep_yaml.write_text("id: deep\nnotes: " + "[" * 30000 + "]" * 30000 + "\n")
    for path, needles in (
        (dup_yaml, ("duplicate key 'allowed_domains'", "line 5", "line 3")),
        (dup_json, ("harvest.max_pages", "duplicate key 'max_pages'", "line 3")),
        (deep_json, ("nested more than",)),
        (deep_yaml, ("nested more than",)),
    ):
        done = _brt("charter", "validate", str(path), env=env, timeout=120)
        assert done.returncode == 2, (path.name, done.returncode, done.stderr[-500:])
        assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr
        for needle in needles:
            assert needle in done.stderr, (path.name, done.stderr)

    # clean refused while a harvest holds the store: no snapshot file, store kept
    charter_file = tmp_path / "c.yaml"
    charter_file.write_text("id: busy\ntitle: t\nallowed_domains: [web.dev]\nseeds: [https://web.dev/]\n")
    from orchestrator.charter import load_charter

    charter = load_charter(charter_file)
    mem = open_memory(charter)
    mem.add("https://web.dev/a", "The harbour lamp was converted to electricity in 1953.")
    snapshot = tmp_path / "snap.jsonl"
    with mem.harvest_lock():
        done = _brt("clean", str(charter_file), "--snapshot", str(snapshot), env=env, timeout=120)
    assert done.returncode == 1 and "harvest" in done.stderr, done.stderr
    assert not snapshot.exists() and not snapshot.with_suffix(".har").exists()
    assert list(tmp_path.glob("snap*")) == [] and open_memory(charter).count_pages() == 1


# -- 8. sizes -----------------------------------------------------------------------------------------------


def test_chunks_respect_their_window_whatever_the_text(embedder, brt_home, tmp_path):
    from memory_store.chunking import MAX_WORD_CHARS, chunk_with, window_for
    from orchestrator.harvest.pages import PageRefused, ingest_page

    window, _overlap = window_for(embedder)
    text = "A short first sentence. " + "q7x" * 733_334 + " And a last one."  # 2.2 MB without a space
    chunks = chunk_with(embedder, text)
    assert len(chunks) > 100
    for c in chunks:
        assert text[c.start : c.end] == c.text
        # what the model reads of the chunk, measured piecewise (a WordPiece tokenizer reads a run over
        # 100 characters as a single [UNK], so the run is measured in 100-character pieces)
        pieces = [c.text[i : i + MAX_WORD_CHARS] for i in range(0, len(c.text), MAX_WORD_CHARS)]
        assert sum(embedder.count_tokens(p) for p in pieces) <= window + len(pieces), len(c.text)
    assert max(len(c.text) for c in chunks) < 20 * window

    # add_page applies the charter's max_page_bytes (the MCP tool calls ingest_page)
    charter = parse_charter(
        {
            "id": "sizes",
            "title": "t",
            "allowed_domains": ["allowed.test"],
            "seeds": ["http://allowed.test/"],
            "harvest": {"max_page_bytes": 100_000},
        }
    )
    with pytest.raises(PageRefused, match="too large"):
        ingest_page(charter, "http://allowed.test/big", text="harbour " * 20_000)
    with pytest.raises(PageRefused, match="too large"):
        ingest_page(charter, "http://allowed.test/big", html="<p>" + "harbour " * 20_000 + "</p>")
    from memory_store import Memory

    assert not Memory.exists("sizes", basepath=brt_home / "memory")


# -- 2. and 5. over MCP: see test_security_mcp.py ------------------------------------------------------------


def _normalised(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
