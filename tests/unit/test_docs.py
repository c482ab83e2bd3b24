"""The docs cannot drift: the CLI reference is the CLI's own help, the site builds strictly, and the user docs
carry no development history."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
sys.path.insert(0, str(ROOT / "scripts"))

import cli_reference  # noqa: E402


def test_cli_reference_is_current():
    assert (DOCS / "cli.md").read_text(encoding="utf-8") == cli_reference.render(), (
        "docs/cli.md is out of date: run python scripts/cli_reference.py"
    )


def test_every_command_is_documented_with_its_help():
    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    paths = [path for path, _ in cli_reference.commands()]
    assert {"harvest", "synthesize", "clean", "mcp"} <= {p[0] for p in paths if p}
    assert ("charter", "init") in paths
    for path in paths:
        heading = "## " + " ".join(("brt", *path))
        assert heading + "\n" in page, heading
        assert cli_reference.help_text(path).rstrip("\n") in page, heading


def test_the_help_is_what_brt_prints():
    """The page's text is the real command's: ``brt --help`` and ``brt charter init --help`` in a new process."""
    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    env = dict(os.environ, COLUMNS=str(cli_reference.WIDTH), PYTHONPATH=str(ROOT))
    for args in (["--help"], ["charter", "init", "--help"]):
        out = subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True,
                             env=env, cwd=ROOT, timeout=60)
        assert out.returncode == 0, out.stderr
        assert out.stdout.rstrip("\n") in page, args


def test_every_setting_is_documented():
    from orchestrator.settings import ALL_VARIABLES

    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    for v in ALL_VARIABLES:
        assert f"| `{v.name}` |" in page, v.name


def test_the_site_builds_strictly(tmp_path):
    """``mkdocs build --strict`` (broken links, missing pages and bad anchors are errors). Where CI runs, mkdocs
    must be installed (the docs extra): skipping there would hide a broken site."""
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        if os.environ.get("CI"):
            pytest.fail("mkdocs and mkdocs-material are not installed: pip install -e '.[docs]'")
        pytest.skip("mkdocs is not installed (pip install -e '.[docs]')")
    out = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        capture_output=True, text=True, cwd=ROOT, timeout=300, env=dict(os.environ, NO_MKDOCS_2_WARNING="1"),
    )
    assert out.returncode == 0, out.stderr[-4000:]
    assert (tmp_path / "site" / "cli" / "index.html").is_file()
    # wide code blocks wrap instead of being cut off: the stylesheet is built and every page links it
    css = (tmp_path / "site" / "stylesheets" / "extra.css").read_text(encoding="utf-8")
    assert re.search(r"pre\s*>\s*code\s*\{[^}]*white-space:\s*pre-wrap", css)
    assert 'href="../stylesheets/extra.css"' in (tmp_path / "site" / "quickstart" / "index.html").read_text()


def _nav_pages() -> list[str]:
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    return re.findall(r":\s*([\w-]+\.md)\s*$", text, re.MULTILINE)


def test_every_topic_has_a_page():
    pages = _nav_pages()
    for name in ("quickstart.md", "charters.md", "cli.md", "python-api.md", "mcp.md", "harvest.md", "retrieval.md",
                 "concept-index.md", "audits.md", "storage.md", "security.md", "architecture.md", "benchmarks.md",
                 "changelog.md"):
        assert name in pages and (DOCS / name).is_file(), name
    assert "mermaid" in (DOCS / "architecture.md").read_text(encoding="utf-8")


_HISTORY = re.compile(r"\bissue #?\d+\b|\bstop \d+\b|\bround (?:two|three)\b|\bsince issue\b", re.IGNORECASE)


def test_user_docs_carry_no_development_history():
    files = [ROOT / "README.md", ROOT / "BENCHMARKS.md", *DOCS.glob("*.md")]
    bad = []
    for file in files:
        if file.name == "changelog.md":
            continue
        for n, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
            if _HISTORY.search(line):
                bad.append(f"{file.relative_to(ROOT)}:{n}: {line.strip()[:100]}")
    assert not bad, "\n".join(bad)


def test_readme_is_a_front_door():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= 220, len(lines)
    first_commands = [ln for ln in lines if ln.startswith("bash scripts/dev.sh")][:2]
    assert [c.split()[2] for c in first_commands] == ["demo", "test"]
    for link in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (ROOT / link).is_file(), link
