"""The offline demo: serve the bundled static site on localhost and run harvest -> synthesize -> clean on the
demo charter (``charters/demo.yaml``). ``brt demo`` and ``bash scripts/dev.sh demo`` call :func:`run_demo`."""

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

from .charter import Charter, load_charter, parse_charter
from .errors import BrtError, PortInUse

__all__ = [
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
#: The demo charter of the repository (the package dir's parent holds ``charters/``).
DEMO_CHARTER = _PACKAGE_DIR.parent / "charters" / "demo.yaml"
DEMO_HOST = "127.0.0.1"
DEMO_PORT = 8765

# A copy of charters/demo.yaml for installs without the repository (tests keep the two equal, apart from
# outputs.doc, which then goes to ./out/ under the current directory).
_FALLBACK_CHARTER: dict[str, Any] = {
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
        "doc": "out/demo_cwv.md",
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


def load_demo_charter() -> Charter:
    """``charters/demo.yaml`` from the repository; without a repository checkout, the built-in copy (its
    Markdown then goes to ``./out/demo_cwv.md``)."""
    if DEMO_CHARTER.is_file():
        return load_charter(DEMO_CHARTER)
    return parse_charter(_FALLBACK_CHARTER, source=Path.cwd() / "brt-demo-charter.yaml")


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


def run_demo(*, keep: bool = False, echo: Callable[[str], Any] = print) -> int:
    """Serve the demo site, harvest it, synthesize the demo charter's report, print it, then clean (snapshot
    and destroy the store unless ``keep``). Returns the process exit code (0 on success)."""
    from .clean import clean
    from .harvest import harvest
    from .synthesize import synthesize

    charter = load_demo_charter()
    where = f"{charter.source}" if charter.source else "built-in demo charter"
    echo(f"brt demo: charter {charter.id} ({where})")
    with ExitStack() as stack:
        charter, base_url = serve_demo_site(stack, charter, echo=echo)
        echo(f"brt demo: serving {DEMO_SITE} at {base_url}")
        echo("brt demo: harvesting ...")
        report = harvest(charter)
    summary = _summary(report)
    if summary:
        echo(f"brt demo: harvest: {summary}")
    echo("brt demo: synthesizing ...")
    result = synthesize(charter)
    echo("")
    echo(result.markdown.rstrip("\n"))
    echo("")
    echo(f"brt demo: report written to {_shown(result.doc_path)} (JSON: {_shown(result.json_path)})")
    cleaned = clean(charter, keep=keep)
    echo(f"brt demo: snapshot written to {_shown(cleaned.snapshot_path)}")
    if cleaned.har_path:
        echo(f"brt demo: HAR of the harvest: {_shown(cleaned.har_path)}")
    if keep:
        echo(f"brt demo: store kept (--keep); remove it with: brt clean {charter.source or 'CHARTER'}")
    return 0


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
