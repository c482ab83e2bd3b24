"""The offline demo: serve the bundled static site on localhost and run harvest -> synthesize -> clean on the
built-in demo charter (:data:`BUILTIN_CHARTER`, kept equal to ``charters/demo.yaml`` by a test). ``brt demo`` and
``bash scripts/dev.sh demo`` call :func:`run_demo`. The report goes to ``./out/`` under the folder the demo runs
from (or the folder ``--out`` names), the same from a wheel and from a checkout."""

from __future__ import annotations

import errno
import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .charter import Charter, parse_charter
from .errors import BrtError, PortInUse

__all__ = [
    "BUILTIN_CHARTER",
    "DEMO_CHARTER",
    "DEMO_HOST",
    "DEMO_PORT",
    "DEMO_SITE",
    "load_demo_charter",
    "run_demo",
    "serve_site",
]

_PACKAGE_DIR = Path(__file__).resolve().parent

#: The static site the demo charter points at (shipped as package data).
DEMO_SITE = _PACKAGE_DIR / "demo_site"
#: The demo charter of a repository checkout (only tests read it: the demo runs the built-in copy).
DEMO_CHARTER = _PACKAGE_DIR.parent / "charters" / "demo.yaml"
DEMO_HOST = "127.0.0.1"
DEMO_PORT = 8765
#: The folder the demo writes its report to, under the current folder, when ``--out`` is not given.
DEMO_OUT = "out"
#: The name of the demo charter's file in the output folder (written with ``--keep``, for the commands after).
DEMO_CHARTER_FILE = "demo_cwv.yaml"

#: The demo charter as ``brt demo`` runs it, from a wheel or a checkout alike: ``charters/demo.yaml`` (tests keep
#: the two equal) with ``outputs.doc`` in the output folder.
BUILTIN_CHARTER: dict[str, Any] = {
    "id": "demo_cwv",
    "title": "Core Web Vitals (offline demo site)",
    "goal": "What must a page do to pass Core Web Vitals, and how is each metric improved?",
    "allowed_domains": ["127.0.0.1"],
    "seeds": ["http://127.0.0.1:8765/index.html"],
    "acceptance": [
        'The "good" threshold of LCP and INP is cited with its source page',
        "At least one concrete CLS mitigation is quoted verbatim",
        "A question the site does not answer is reported as a Gap, not padded with weak evidence",
    ],
    "outputs": {
        "doc": "demo_cwv.md",
        "sections": [
            {
                "title": "LCP threshold",
                "label": "LCP",
                "question": "What Largest Contentful Paint time counts as good?",
                "concept": "Performance > Core Web Vitals > LCP",
            },
            {
                "title": "INP threshold",
                "label": "INP",
                "question": "What Interaction to Next Paint value counts as good?",
                "concept": "Performance > Core Web Vitals > INP",
            },
            {
                "title": "CLS mitigation",
                "label": "CLS",
                "question": "How do I minimise cumulative layout shift?",
                "concept": "Performance > Core Web Vitals > CLS",
            },
            {
                "title": "Lab versus field",
                "label": "Lab",
                "question": "Why can't a Lighthouse lab test measure INP, and what should I watch instead?",
                "concept": "Performance > Measurement",
            },
            {
                "title": "HTTP/3 adoption",
                "label": "HTTP3",
                "question": "What share of websites serve their traffic over HTTP/3?",
            },
        ],
    },
    "notes": (
        "The demo site is written for this project (orchestrator/demo_site/). It never mentions HTTP/3, so "
        "the last section should come out as a Gap. One paragraph appears on two pages and cls-print.html "
        "repeats cls.html, which exercises de-duplication; measuring.html inserts one paragraph with "
        "JavaScript."
    ),
    "harvest": {
        "max_pages": 20,
        "max_depth": 1,
        "concurrency": 2,
        "timeout_s": 20,
        "obey_robots": True,
        "javascript": True,
    },
    "memory": {"enabled": True, "use_concept_index": True, "persist": False},
    "retrieval": {"k": 3, "min_score": None},
}


def demo_out_dir(out: str | Path | None = None) -> Path:
    """The folder the demo writes to: ``out`` (relative to the current folder), else ``./out``."""
    return (Path.cwd() / Path(out if out is not None else DEMO_OUT).expanduser()).resolve()


def load_demo_charter(out: str | Path | None = None) -> Charter:
    """The built-in demo charter, placed in the output folder (:func:`demo_out_dir`): its Markdown goes to
    ``<folder>/demo_cwv.md``, the JSON beside it, and ``<folder>/demo_cwv.yaml`` is its file."""
    return parse_charter(BUILTIN_CHARTER, source=demo_out_dir(out) / DEMO_CHARTER_FILE)


class _QuietHandler(SimpleHTTPRequestHandler):
    """Static files, no request log on stderr."""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - signature of the base class
        pass

    def send_header(self, keyword: str, value: str) -> None:
        # A file's mtime is when it was checked out, not when its content changed: without Last-Modified the
        # undated demo page really has no date (its evidence says "last updated: unknown").
        if keyword.lower() == "last-modified":
            return
        super().send_header(keyword, value)


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A browser that closes a connection early (BrokenPipe, ConnectionReset) is not worth a traceback.
        pass


@contextmanager
def serve_site(directory: str | Path, host: str = DEMO_HOST, port: int = DEMO_PORT) -> Iterator[str]:
    """Serve ``directory`` over HTTP on ``host:port`` from a daemon thread for the duration of the block.

    Yields the base URL (``http://127.0.0.1:8765/``; with ``port=0`` the port the OS picked). Raises BrtError
    when the directory is missing, PortInUse when the port is already in use."""
    root = Path(directory)
    if not root.is_dir():
        raise BrtError(f"demo site folder not found: {root}")
    handler = functools.partial(_QuietHandler, directory=str(root))
    try:
        server = _QuietServer((host, port), handler)
    except OSError as exc:
        if exc.errno in (errno.EADDRINUSE, errno.EACCES):
            raise PortInUse(f"cannot serve on http://{host}:{port}/: the port is busy ({exc.strerror})") from None
        raise BrtError(f"cannot serve the demo site on http://{host}:{port}/: {exc}") from None
    actual_host, actual_port = server.server_address[:2]
    thread = threading.Thread(target=server.serve_forever, name="brt-demo-site", daemon=True)
    thread.start()
    try:
        yield f"http://{actual_host}:{actual_port}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def serve_demo_site(
    stack: ExitStack, charter: Charter, *, echo: Callable[[str], Any] = print
) -> tuple[Charter, str]:
    """Serve the demo site on the demo charter's port until ``stack`` closes. When that port is taken, serve
    on a free one and return the charter with its seeds moved there (allowed_domains name no port)."""
    try:
        return charter, stack.enter_context(serve_site(DEMO_SITE))
    except PortInUse as exc:
        base_url = stack.enter_context(serve_site(DEMO_SITE, port=0))
        echo(f"brt demo: {exc}; serving on {base_url} instead")
        port = urlsplit(base_url).port
        seeds = [urlunsplit(u._replace(netloc=f"{u.hostname}:{port}")) for u in map(urlsplit, charter.seeds)]
        return charter.model_copy(update={"seeds": seeds}), base_url


def run_demo(*, keep: bool = False, out: str | Path | None = None, echo: Callable[[str], Any] = print) -> int:
    """Serve the demo site, harvest it, synthesize the demo charter's report into ``out`` (default ``./out``),
    print it, then clean (snapshot and destroy the store unless ``keep``; with ``keep`` the charter is written
    beside the report, so that ``brt search`` and ``brt clean`` can name it). Returns the process exit code (0 on
    success); raises NothingStored when the harvest stored no page."""
    from .clean import clean
    from .errors import NothingStored
    from .harvest import harvest
    from .synthesize import synthesize

    charter = load_demo_charter(out)
    echo(f"brt demo: charter {charter.id} (built in); writing to {_shown(charter.doc_path.parent)}")
    with ExitStack() as stack:
        charter, base_url = serve_demo_site(stack, charter, echo=echo)
        echo(f"brt demo: serving {DEMO_SITE} at {base_url}")
        echo("brt demo: harvesting ...")
        report = harvest(charter)
    summary = _summary(report)
    if summary:
        echo(f"brt demo: harvest: {summary}")
    if report.nothing_stored:
        raise NothingStored(f"the demo harvest stored no page ({report.summary()})")
    echo("brt demo: synthesizing ...")
    result = synthesize(charter)
    echo("")
    echo(result.markdown.rstrip("\n"))
    echo("")
    echo(f"brt demo: report written to {_shown(result.doc_path)} (JSON: {_shown(result.json_path)})")
    if keep:
        written = _write_charter(charter)
    cleaned = clean(charter, keep=keep)
    echo(f"brt demo: snapshot written to {_shown(cleaned.snapshot_path)}")
    if cleaned.har_path:
        echo(f"brt demo: HAR of the harvest: {_shown(cleaned.har_path)}")
    if keep:
        echo(f"brt demo: store kept (--keep); try: brt search {_shown(written)} \"layout shift\"; "
             f"remove it with: brt clean {_shown(written)}")
    return 0


def _write_charter(charter: Charter) -> Path:
    """The charter as the demo ran it (seeds on the port it served), at its source path."""
    import yaml

    from .files import write_file

    assert charter.source is not None
    data = charter.model_dump(mode="json", exclude_defaults=True)
    data.setdefault("id", charter.id)
    text = "# The charter `brt demo --keep` ran (its store is kept): brt search, brt concepts, brt clean.\n"
    text += yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    return write_file(charter.source, text)


def _shown(path: Path | None) -> str:
    """``path`` without ``..`` segments, relative to the current directory when it lies below it."""
    if path is None:
        return "-"
    resolved = Path(path).resolve()
    try:
        return str(resolved.relative_to(Path.cwd()))
    except ValueError:
        return str(resolved)


def _summary(report: Any) -> str:
    """One line about a HarvestReport: events per outcome, chunks and time."""
    if report is None:
        return ""
    parts = []
    counts = getattr(report, "counts", None)
    if callable(counts):
        parts.append(", ".join(f"{n} {outcome}" for outcome, n in counts().items()))
    for attr, label in (("chunks_total", "chunks"), ("chunks_embedded", "embedded")):
        value = getattr(report, attr, None)
        if isinstance(value, int):
            parts.append(f"{value} {label}")
    elapsed = getattr(report, "elapsed_s", None)
    if isinstance(elapsed, int | float):
        parts.append(f"{elapsed:.1f} s")
    return "; ".join(p for p in parts if p)
