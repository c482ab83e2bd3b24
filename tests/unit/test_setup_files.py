"""Cheap checks of the set-up files: example charters, the demo site, the demo server, and the scripts."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import urllib.request
from contextlib import ExitStack
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

from orchestrator.charter import load_charter, parse_charter
from orchestrator.demo import (
    BUILTIN_CHARTER,
    DEMO_CHARTER,
    DEMO_PORT,
    DEMO_SITE,
    load_demo_charter,
    serve_demo_site,
    serve_site,
)
from orchestrator.errors import BrtError

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = [ROOT / "scripts" / "dev.sh", ROOT / ".ci" / "run"]
ARTICLES = ["thresholds.html", "lcp.html", "inp.html", "cls.html", "measuring.html"]


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.meta: dict[str, str] = {}
        self.tags: list[str] = []
        self.title = ""
        self._in_title = False
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
        if tag == "meta":
            key = a.get("property") or a.get("name")
            if key:
                self.meta[key] = a.get("content", "")
        self._in_title = tag == "title"

    def handle_endtag(self, tag):
        if tag == "title":
            self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self.title += data
        self.text.append(data)


def _parse(name: str) -> _Page:
    page = _Page()
    page.feed((DEMO_SITE / name).read_text(encoding="utf-8"))
    return page


# -- charters ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["demo.yaml", "cwv_audit.yaml"])
def test_example_charters_validate_as_synthesize_takes_them(name):
    """The shipped charters pass what harvest and synthesize check (their report stays in charters/out/)."""
    from orchestrator import service
    from orchestrator.safe_paths import charter_doc_path

    charter = service.validate(ROOT / "charters" / name)
    assert charter.outputs.sections
    assert charter_doc_path(charter).parent == (ROOT / "charters" / "out").resolve()


def test_demo_charter_points_at_demo_site():
    charter = load_charter(DEMO_CHARTER)
    assert charter.id == "demo_cwv"
    assert charter.allowed_domains == ["127.0.0.1"]
    assert charter.seeds == ["http://127.0.0.1:8765/index.html"]
    assert charter.harvest.max_depth == 1
    assert any("HTTP/3" in (s.question or "") for s in charter.outputs.sections)  # the Gap the demo shows


def test_builtin_charter_matches_repo_copy():
    repo = yaml.safe_load(DEMO_CHARTER.read_text(encoding="utf-8"))
    builtin = dict(BUILTIN_CHARTER, outputs=dict(BUILTIN_CHARTER["outputs"]))
    assert builtin["outputs"].pop("doc") == "demo_cwv.md"
    repo["outputs"].pop("doc")
    assert repo == builtin
    parse_charter(BUILTIN_CHARTER)
    assert load_demo_charter().id == "demo_cwv"


def test_the_demo_writes_where_it_runs_or_where_out_says(tmp_path, monkeypatch):
    """From a checkout or a wheel alike: ./out under the current folder, or the --out folder (relative to it)."""
    monkeypatch.chdir(tmp_path)
    assert load_demo_charter().doc_path == tmp_path / "out" / "demo_cwv.md"
    assert load_demo_charter("reports/cwv").doc_path == tmp_path / "reports" / "cwv" / "demo_cwv.md"
    elsewhere = tmp_path / "abs"
    charter = load_demo_charter(elsewhere)
    assert charter.doc_path == elsewhere / "demo_cwv.md" and charter.source == elsewhere / "demo_cwv.yaml"
    from orchestrator.safe_paths import charter_doc_path

    assert charter_doc_path(charter) == elsewhere / "demo_cwv.md"  # what synthesize takes


# -- demo site ---------------------------------------------------------------------------------------------


def test_index_links_every_article():
    index = _parse("index.html")
    for name in ARTICLES + ["cls-print.html"]:
        assert name in index.links, name


def test_pages_are_articles_with_metadata():
    pages = sorted(p.name for p in DEMO_SITE.glob("*.html"))
    assert 5 <= len(pages) <= 7
    dated = {"modified": 0, "published_only": 0, "none": 0}
    for name in pages:
        page = _parse(name)
        assert page.title.strip(), name
        assert page.meta.get("description"), name
        for tag in ("nav", "footer", "main", "article"):
            assert tag in page.tags, (name, tag)
        for link in page.links:  # every local link resolves
            assert (DEMO_SITE / link.split("#")[0]).is_file(), (name, link)
        if name == "index.html":
            continue
        if "article:modified_time" in page.meta:
            dated["modified"] += 1
        elif "article:published_time" in page.meta:
            dated["published_only"] += 1
        else:
            dated["none"] += 1
    assert dated["modified"] >= 1 and dated["published_only"] >= 1 and dated["none"] >= 1, dated


def test_shared_paragraph_and_duplicate_page():
    with_note = [
        p.name for p in DEMO_SITE.glob("*.html") if "About this guide:" in p.read_text(encoding="utf-8")
    ]
    assert sorted(with_note) == ["inp.html", "lcp.html"]

    def article(name: str) -> str:
        html = (DEMO_SITE / name).read_text(encoding="utf-8")
        return html[html.index("<article>") : html.index("</article>")]

    assert article("cls.html") == article("cls-print.html")


def test_js_page_inserts_text_with_a_script():
    html = (DEMO_SITE / "measuring.html").read_text(encoding="utf-8")
    sentence = "cannot measure Interaction to Next Paint"
    assert "createElement" in html and html.count(sentence) == 1
    # the paragraph exists only once the inline script has run: its text is inside the <script> element
    assert html.index("<script>") < html.index(sentence) < html.index("</script>")


def test_site_never_mentions_http3():
    for page in DEMO_SITE.glob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"HTTP/3|\bQUIC\b|\bHTTP\b", text, re.IGNORECASE), page.name


# -- demo server -------------------------------------------------------------------------------------------


def test_serve_site_serves_pages_and_reports_busy_port():
    with serve_site(DEMO_SITE, port=0) as base:
        with urllib.request.urlopen(base + "index.html", timeout=5) as resp:
            assert resp.status == 200
            assert b"Core Web Vitals" in resp.read()
        port = int(base.rstrip("/").rsplit(":", 1)[1])
        with pytest.raises(BrtError, match="busy"):
            with serve_site(DEMO_SITE, port=port):
                pass
    # closed again: the port can be bound
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))


def test_demo_moves_to_a_free_port_when_its_own_is_taken():
    charter = load_demo_charter()
    said: list[str] = []
    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # connections of an earlier demo may linger
        try:
            taken.bind(("127.0.0.1", DEMO_PORT))
        except OSError:
            pytest.skip(f"port {DEMO_PORT} is in use on this machine already")
        taken.listen()
        with ExitStack() as stack:
            moved, base = serve_demo_site(stack, charter, echo=said.append)
            port = int(base.rstrip("/").rsplit(":", 1)[1])
            assert port != DEMO_PORT and moved.seeds == [f"http://127.0.0.1:{port}/index.html"]
            assert moved.id == charter.id and moved.allowed_domains == charter.allowed_domains
            with urllib.request.urlopen(moved.seeds[0], timeout=5) as resp:
                assert b"Core Web Vitals" in resp.read()
    assert "busy" in said[0] and base in said[0]
    with ExitStack() as stack:  # free again: the charter's own port
        same, base = serve_demo_site(stack, charter, echo=said.append)
        assert same is charter and base == f"http://127.0.0.1:{DEMO_PORT}/"


def test_serve_site_missing_folder(tmp_path):
    with pytest.raises(BrtError, match="not found"):
        with serve_site(tmp_path / "nope", port=0):
            pass


# -- scripts -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_scripts_exist_executable_and_parse(script):
    assert script.is_file()
    assert os.access(script, os.X_OK), f"{script} is not executable (chmod +x)"
    bash = shutil.which("bash")
    assert bash
    subprocess.run([bash, "-n", str(script)], check=True)


def test_gitignore_covers_local_files():
    lines = (ROOT / ".gitignore").read_text(encoding="utf-8").split()
    wanted = (
        ".venv/",
        "__pycache__/",
        "out/",
        "*.egg-info/",
        ".pytest_cache/",
        ".ruff_cache/",
        "node_modules/",
    )
    for entry in wanted:
        assert entry in lines, entry


# -- the demo, end to end ----------------------------------------------------------------------------------


