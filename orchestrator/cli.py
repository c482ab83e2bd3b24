"""The `brt` command: thin wrappers over the library functions of the same names.

Exit codes: 0 success; 1 the work could not be done (no store, browser missing, store busy, ...);
2 bad input (an invalid charter, bad arguments); 3 a harvest left the charter with no stored page; 130
interrupted. Each command's help lists its own (``_exits``), and so does the CLI reference."""

from __future__ import annotations

import functools
import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from . import __version__
from .formats import REPORT_FORMATS

log = logging.getLogger(__name__)

EXIT_FAILURE = 1
EXIT_BAD_INPUT = 2
EXIT_NOTHING_STORED = 3
EXIT_INTERRUPTED = 130

#: How the CLI words each way out an error names (``errors.ADVICE``): its own flags and commands.
ADVICE = {
    "doc_anywhere": "or pass --allow-doc-anywhere (to brt synthesize and brt charter validate) if you mean it",
    "restore_id": "restore under another id (--id NEW_ID), or remove that store first (brt clean CHARTER)",
    "restore_force": "pass --force to restore it anyway",
    "restore_charter": "choose another path with --charter",
    "init_exists": "choose another path with --out, or pass --force to replace it",
    "synthesize_first": "run brt synthesize on the charter first",
    "harvest_first": "run brt harvest on the charter first",
}


def _exits(codes: dict[int, str]) -> str:
    """A command's exit codes as the last paragraph of its help (click keeps ``\b`` paragraphs as written)."""
    width = max(len(str(c)) for c in codes)
    return "\b\nExit codes:\n" + "\n".join(f"  {str(c).rjust(width)}  {what}" for c, what in codes.items())


_NO_STORE = "the charter has no store, or it cannot be read"
_BAD_INPUT = "bad input: an invalid charter or option"


def _err(message: str) -> None:
    click.echo(message, err=True)


#: Printed whenever --browser-url is given (a warning, shown even with --quiet).
ATTACH_WARNING = (
    "warning: --browser-url attaches to a browser brt did not launch, so brt cannot hold its connections to the "
    "charter's allowed_domains: workers, keepalive requests, preconnects, WebRTC and redirected subresources "
    "of the pages it reads may reach other hosts, internal ones included. The harvest's audit trail records "
    "egress as not enforced. Leave out --browser-url to let brt launch a browser whose every connection goes "
    "through its egress proxy."
)


def _handle_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Map library errors to a clear message and an exit code, at one place."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from memory_store.errors import MemoryStoreError, StoreNotFound

        from .errors import BrtError, CharterError, NothingStored

        as_json = bool(kwargs.get("as_json"))
        try:
            return fn(*args, **kwargs)
        except CharterError as exc:
            _fail(exc, EXIT_BAD_INPUT, as_json)
        except StoreNotFound as exc:
            _fail(exc, EXIT_FAILURE, as_json)
        except NothingStored as exc:
            _fail(exc, EXIT_NOTHING_STORED, as_json)
        except (BrtError, MemoryStoreError) as exc:
            _fail(exc, EXIT_FAILURE, as_json)
        except KeyboardInterrupt:
            _err("brt: interrupted")
            sys.exit(EXIT_INTERRUPTED)

    return wrapper


def error_text(exc: BaseException) -> str:
    """An error's message with its way out (``advice``) in the CLI's words."""
    advice = ADVICE.get(getattr(exc, "advice", None) or "")
    text = str(exc)
    if not advice:
        return text
    return f"{text}\n  {advice}" if "\n" in text else f"{text}; {advice}"


def _fail(exc: Exception, code: int, as_json: bool) -> None:
    """Report a library error (with its way out) and exit with ``code``; with ``--json``, also one JSON document on
    stdout (``{"ok": false, "error": ..., "error_type": ..., "exit_code": ...}``), so a script reading stdout gets
    one."""
    text = error_text(exc)
    _err(f"brt: {text}")
    if as_json:
        _print_json({"ok": False, "error": text, "error_type": type(exc).__name__, "exit_code": code})
    sys.exit(code)


def _print_json(doc: Any) -> None:
    click.echo(json.dumps(doc, indent=2, ensure_ascii=False))


# --- output verbosity (-v / -q) -------------------------------------------------------------------------------
_quiet = False


def _configure_output(verbose: int, quiet: bool) -> None:
    """Log level and third-party noise. Default: brt's warnings and progress; third-party progress bars and
    warnings (transformers, tqdm, Hugging Face, ONNX Runtime) silenced. ``-v``: brt's info log and third-party
    output as the libraries print it. ``-q``: errors only, no progress, no notes (results still on stdout)."""
    global _quiet
    _quiet = quiet and not verbose
    level = logging.ERROR if _quiet else max(logging.WARNING - 10 * verbose, logging.DEBUG)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    if not verbose:
        from memory_store.quiet import silence_third_party

        silence_third_party()


def _note(message: str) -> None:
    """An informational line on stderr (not with --quiet)."""
    if not _quiet:
        _err(message)


def _progress():
    from .progress import NullProgress, PlainProgress, RichProgress

    if _quiet:
        return NullProgress()
    return RichProgress() if sys.stderr.isatty() else PlainProgress()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="brt")
@click.option(
    "-v", "--verbose", count=True, help="More log output on stderr (-vv for debug), third-party output included."
)
@click.option("-q", "--quiet", is_flag=True, help="Only errors on stderr: no progress, no notes (for scripts).")
def cli(verbose: int, quiet: bool) -> None:
    """brt: browser research with a per-charter evidence cache.

    A charter names what to research and where to look. harvest reads the allowed pages with a real browser
    into the charter's own store; synthesize answers each output section with cited evidence blocks (or a
    Gap); clean writes an audit snapshot and destroys the store."""
    from .terminal import install  # security: nothing printed drives the terminal (controls stripped)

    # mcp, browser-mcp: stdout is the protocol's channel
    install(stdout=click.get_current_context().invoked_subcommand not in ("mcp", "browser-mcp"))
    _configure_output(verbose, quiet)


@cli.command(epilog=_exits({
    0: "pages stored (or the store already held them)",
    1: "the harvest could not run: no browser, store busy, disk full, ...",
    2: _BAD_INPUT,
    3: "no page stored (every URL failed, was blocked or skipped): no store kept",
}))
@click.argument("charter", type=click.Path(dir_okay=False))
@click.option(
    "--replay", type=click.Path(exists=True, dir_okay=False), help="Serve every request from this HAR."
)
@click.option("--browser-url", help="Attach to a running Chrome over CDP (e.g. http://127.0.0.1:9222).")
@click.option(
    "--via", type=click.Choice(["playwright", "devtools-mcp"]), default="playwright", show_default=True
)
@click.option(
    "--refresh",
    is_flag=True,
    help="Check stored pages again: a page whose document and scripts are byte-identical is kept as stored "
    "(not rendered again); any other is fetched, rendered and replaced.",
)
@click.option(
    "--ray",
    "ray_address",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[ADDRESS]",
    help="Fan the harvest out on Ray (pip install 'brt[ray]'): ADDRESS auto or ray://host:port; without it "
    "BRT_RAY_ADDRESS, else a local Ray instance started for the run. Default: the charter's harvest.engine (a "
    "charter never names the address).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the harvest report as one JSON document.")
@_handle_errors
def harvest(
    charter: str,
    replay: str | None,
    browser_url: str | None,
    via: str,
    refresh: bool,
    ray_address: str | None,
    as_json: bool,
) -> None:
    """Read the charter's seeds and linked pages into its store."""
    from . import service
    from .harvest import harvest as run_harvest
    from .harvest.summary import format_summary, summarize

    c = service.load(charter)
    if browser_url:
        _err(ATTACH_WARNING)
    _doc_note(c)
    progress = _progress()
    try:
        report = run_harvest(
            c,
            replay=Path(replay) if replay else None,
            browser_url=browser_url,
            via=via,
            progress=progress,
            refresh=refresh,
            ray=ray_address,
        )
    finally:
        progress.close()
    if as_json:
        _print_json(service.harvest_json(report))
        _exit_if_nothing_stored(report)
        return
    counts = report.counts()
    summary = ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items())) or "nothing attempted"
    if report.kept is not None:  # memory.enabled: false
        click.echo(
            f"harvested {c.id}: {summary}; memory disabled: nothing embedded, no store written; "
            f"{report.kept.pages} pages' text kept in {report.kept.snapshot}"
            + (f" (HAR {report.kept.har})" if report.kept.har else "") + f" in {report.elapsed_s:.1f}s"
        )
    else:
        click.echo(
            f"harvested {c.id}: {summary}; {report.pages_stored} pages stored, {report.chunks_total} chunks "
            f"({report.chunks_embedded} newly embedded) in {report.elapsed_s:.1f}s"
        )
    for e in report.events:
        if e.get("outcome") != "stored":
            click.echo(f"  {e.get('outcome')}: {e.get('url')} ({e.get('reason')})")
    click.echo(format_summary(report.summary_table or summarize(report.events, report.elapsed_s)))
    _exit_if_nothing_stored(report)


def _exit_if_nothing_stored(report: Any) -> None:
    if report.nothing_stored:
        _err(f"brt: {report.charter_id}: no page was stored, so no store is kept (the reasons are above)")
        sys.exit(EXIT_NOTHING_STORED)


def _doc_note(charter: Any) -> None:
    """A note when synthesize would refuse the charter's outputs.doc (harvest runs: it writes no document)."""
    from .errors import CharterError
    from .safe_paths import charter_doc_path

    try:
        charter_doc_path(charter)
    except CharterError as exc:
        _note(f"note: brt synthesize will refuse this charter: {exc.problems[0][0]}: {exc.problems[0][1]}")


@cli.command(epilog=_exits({0: "the hits (or \"no hits\") printed", 1: _NO_STORE, 2: _BAD_INPUT}))
@click.argument("charter", type=click.Path(dir_okay=False))
@click.argument("query")
@click.option("-k", "k", type=click.IntRange(1, 1000), default=5, show_default=True, help="Hits at most.")
@click.option("--subtree", help="Only chunks under this concept path (concept index).")
@click.option(
    "--min-similarity",
    type=click.FloatRange(-1.0, 1.0),
    default=None,
    help="Drop hits whose cosine similarity to QUERY is below this (a search cut-off; the evidence bar is the "
    "charter's retrieval.min_score, a probability).",
)
@click.option(
    "--mode",
    type=click.Choice(["hybrid", "vector", "bm25"]),
    default=None,
    help="Candidates from BM25 ∪ vector (hybrid, fused by RRF), or one side only. Default: the charter's "
    "retrieval.mode (hybrid).",
)
@click.option(
    "--rerank/--no-rerank",
    default=None,
    help="Order the hits by evidence: each chunk by its best quote's probability of answering QUERY (brt's "
    "scorer and reader, offline), or with --reranker-model by that cross-encoder. Default: the charter's.",
)
@click.option("--reranker-model", default=None,
              help="An external FlagEmbedding cross-encoder (name or folder, local only) for --rerank.")
@click.option(
    "--mmr-lambda",
    type=click.FloatRange(0.0, 1.0),
    default=None,
    help="MMR diversity trade-off (1 = relevance only). Default: the charter's retrieval.mmr_lambda (0.7).",
)
@click.option("--no-mmr", is_flag=True, help="Keep the fused (or reranked) order: no MMR.")
@click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")
@_handle_errors
def search(
    charter: str,
    query: str,
    k: int,
    subtree: str | None,
    min_similarity: float | None,
    mode: str | None,
    rerank: bool | None,
    reranker_model: str | None,
    mmr_lambda: float | None,
    no_mmr: bool,
    as_json: bool,
) -> None:
    """Search the charter's store (hybrid BM25 + vector with MMR by default; see docs/retrieval.md).

    Retrieval chooses the hits; they are listed best first by the score printed: the cosine similarity of QUERY
    and the chunk, or with --rerank the rerank score (the probability that the chunk's best quote answers)."""
    from . import service
    from .evidence import display_url

    c = service.load(charter)
    hits = service.search(
        c,
        query,
        k=k,
        subtree=subtree,
        min_similarity=min_similarity,
        mode=mode,
        rerank=rerank,
        reranker_model=reranker_model,
        mmr_lambda=mmr_lambda,
        no_mmr=no_mmr,
    )
    if as_json:
        _print_json(service.search_json(c, query, hits, subtree=subtree))
        return
    if not hits:
        click.echo("no hits")
    for i, h in enumerate(hits, 1):
        click.echo(
            f"{i}. {service.hit_score(h):.3f}  {display_url(h.url)} (last updated: {h.last_updated or 'unknown'})  "
            f"{h.id[:19]}"
        )
        click.echo(f"   {h.snippet}")


@cli.command(epilog=_exits({
    0: "the Markdown and the JSON written",
    1: _NO_STORE,
    2: _BAD_INPUT + ", or an outputs.doc outside the charter's folder",
}))
@click.argument("charter", type=click.Path(dir_okay=False))
@click.option(
    "--out", type=click.Path(dir_okay=False), help="Markdown path (default: the charter's outputs.doc)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the synthesis as one JSON document.")
@click.option(
    "--allow-doc-anywhere",
    is_flag=True,
    help="Let the charter's outputs.doc be absolute or lie outside the charter's folder (refused otherwise).",
)
@_handle_errors
def synthesize(charter: str, out: str | None, as_json: bool, allow_doc_anywhere: bool = False) -> None:
    """Answer each output section with evidence blocks or a Gap."""
    from . import service
    from .safe_paths import record_written
    from .synthesize import synthesize as run_synthesize

    c = service.validate(charter, allow_doc_anywhere=allow_doc_anywhere or out is not None)
    service.require_store(c)
    result = run_synthesize(c, out=out)
    record_written([result.doc_path, result.json_path])
    if as_json:
        _print_json(service.synthesis_json(result))
        return
    click.echo(result.markdown, nl=False)
    _note(f"wrote {result.doc_path} and {result.json_path}")


@cli.command(epilog=_exits({0: "the snapshot written (and the store destroyed)", 1: _NO_STORE, 2: _BAD_INPUT}))
@click.argument("charter", type=click.Path(dir_okay=False))
@click.option(
    "--snapshot", type=click.Path(dir_okay=False), help="Snapshot path (default under $BRT_HOME/snapshots)."
)
@click.option("--keep", is_flag=True, help="Keep the store after the snapshot.")
@click.option("--no-vectors", is_flag=True, help="Leave embeddings out of the snapshot.")
@_handle_errors
def clean(charter: str, snapshot: str | None, keep: bool, no_vectors: bool) -> None:
    """Write the audit snapshot (JSONL + HAR), then destroy the store."""
    from . import service
    from .clean import clean as run_clean

    c = service.load(charter)
    service.require_store(c)
    result = run_clean(c, snapshot=snapshot, keep=keep or None, vectors=not no_vectors)
    from .safe_paths import record_written

    record_written([result.snapshot_path, result.har_path])
    click.echo(str(result.snapshot_path))
    if result.har_path:
        _note(f"HAR of the harvest: {result.har_path}")
    _note("store destroyed" if result.destroyed else "store kept")


@cli.command(epilog=_exits({
    0: "the status printed (also when there is no store)",
    1: "--check found a problem, or the store cannot be read",
    2: _BAD_INPUT,
}))
@click.argument("charter", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")
@click.option(
    "--check", is_flag=True, help="Verify the store (chunks, pages, hashes, indexes); exit 1 on a problem."
)
@_handle_errors
def status(charter: str, as_json: bool, check: bool = False) -> None:
    """Pages, chunks, model, disk size and last harvest of the charter's store."""
    from . import service
    from .harvest.summary import format_summary

    c = service.load(charter)
    doc = service.status(c, check=check)
    report, summary, checked = doc.report, doc.summary, doc.check
    if as_json:
        _print_json(doc.to_json())
        if checked is not None and not checked.ok:
            sys.exit(EXIT_FAILURE)
        return
    if not report.exists:
        click.echo(f"{c.id}: no store at {report.path} (never harvested, or cleaned)")
        return
    click.echo(f"charter:  {c.id}")
    click.echo(f"store:    {report.path}")
    click.echo(f"pages:    {report.pages}")
    click.echo(f"chunks:   {report.chunks}")
    click.echo(f"model:    {report.model} (dim {report.dim}, {report.precision or 'no vectors yet'})")
    click.echo(f"disk:     {report.disk_bytes / 1e6:.2f} MB")
    if report.last_harvest:
        lh = report.last_harvest
        outcomes = ", ".join(f"{n} {o}" for o, n in sorted(lh["outcomes"].items()))
        click.echo(f"last harvest: {lh['started_at']} ({lh['urls_attempted']} URLs: {outcomes})")
    if summary is not None:
        click.echo(format_summary(summary))
    if checked is not None:
        if checked.ok:
            counts = ", ".join(f"{v} {k}" for k, v in checked.counts.items())
            click.echo(f"check:    ok ({counts})")
        else:
            click.echo(f"check:    {len(checked.problems)} problem(s)")
            for problem in checked.problems:
                click.echo(f"  {problem}")
            sys.exit(EXIT_FAILURE)


@cli.command(epilog=_exits({0: "the index printed", 1: _NO_STORE, 2: _BAD_INPUT}))
@click.argument("charter", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["tree", "json", "mermaid", "dot"]), default="tree")
@click.option("--rebuild", is_flag=True, help="Rebuild the index from the store before showing it.")
@_handle_errors
def concepts(charter: str, fmt: str, rebuild: bool) -> None:
    """Show the charter's concept index (built from the store first when missing or out of date)."""
    from concept_index import render, update_from_store

    from . import service

    c = service.load(charter)
    mem = service.open_store(c)
    ci, _ = update_from_store(mem, c.outputs.sections, rebuild=rebuild)
    click.echo(render(ci, fmt), nl=False)


@cli.command("eval", epilog=_exits({0: "the table printed", 1: "a charter has no store", 2: _BAD_INPUT}))
@click.argument("charters", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--answers", type=click.Path(exists=True, dir_okay=False),
              help="JSON answer key {charter_id: {section title: regex}} for answer_hit.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), help="Folder for the synthesized docs.")
@click.option("--repeats", type=click.IntRange(1, 20), default=3, show_default=True, help="Timed runs per mode.")
@click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")
@_handle_errors
def eval_cmd(charters: tuple[str, ...], answers: str | None, out_dir: str | None, repeats: int,
             as_json: bool) -> None:
    """Keep-or-cut: synthesize each (harvested) charter with and without the concept index."""
    from . import service
    from .evaluate import evaluate, format_table, load_answers

    loaded = [service.load(c) for c in charters]
    for c in loaded:
        service.require_store(c)
    report = evaluate(loaded, answers=load_answers(answers), out_dir=out_dir, repeats=repeats)
    if as_json:
        _print_json(report.to_json())
        return
    click.echo(format_table(report), nl=False)


@cli.group("charter")
def charter_group() -> None:
    """Validate charters and print their JSON Schema."""


@charter_group.command("validate", epilog=_exits({
    0: "valid: harvest and synthesize take it",
    2: "invalid, with what harvest or synthesize would refuse (file, field, why)",
}))
@click.argument("file", type=click.Path(dir_okay=False))
@click.option(
    "--allow-doc-anywhere",
    is_flag=True,
    help="Accept an outputs.doc that is absolute or lies outside the charter's folder, as brt synthesize "
    "--allow-doc-anywhere does.",
)
@_handle_errors
def charter_validate(file: str, allow_doc_anywhere: bool = False) -> None:
    """Validate a charter file: exactly what harvest and synthesize refuse, with the same message (exit 2 naming
    the field)."""
    from . import service

    c = service.validate(file, allow_doc_anywhere=allow_doc_anywhere)
    click.echo(
        f"{file}: valid charter {c.id!r} ({len(c.seeds)} seeds, {len(c.allowed_domains)} allowed domains, "
        f"{len(c.outputs.sections)} sections)"
    )


@charter_group.command("schema", epilog=_exits({0: "the schema printed"}))
def charter_schema() -> None:
    """Print the charter JSON Schema."""
    from .charter import charter_json_schema

    _print_json(charter_json_schema())


@cli.command(epilog=_exits({0: "the client disconnected", 1: "the MCP Python SDK is missing (pip install 'brt[mcp]')"}))
@click.option(
    "--allow-attach",
    is_flag=True,
    help="Let the harvest tool attach to a running browser (browser_url), which brt cannot hold to the "
    "charter's allowlist. Off by default (or set BRT_MCP_ALLOW_ATTACH=1).",
)
@_handle_errors
def mcp(allow_attach: bool) -> None:
    """Run the MCP server over stdio (tools, prompts; see README, "Agents")."""
    try:
        from .mcp.server import run as run_server
    except ImportError as exc:
        _err(f"brt: the MCP server needs the MCP Python SDK ({exc}); install it with: pip install 'brt[mcp]'")
        sys.exit(EXIT_FAILURE)
    run_server(allow_attach=True if allow_attach else None)  # None: BRT_MCP_ALLOW_ATTACH decides


@cli.command("browser-mcp", epilog=_exits({
    0: "the client disconnected",
    1: "chrome-devtools-mcp (Node.js) or the browser is missing; else chrome-devtools-mcp's own exit status",
    2: _BAD_INPUT,
}))
@click.option("--charter", "charter_file", type=click.Path(dir_okay=False),
              help="Hold the browser to this charter's allowed_domains (default: any public http(s) host).")
@_handle_errors
def browser_mcp(charter_file: str | None) -> None:
    """Run Chrome DevTools MCP (chrome-devtools-mcp) over stdio with its browser behind brt's egress proxy.

    Every connection of that browser goes through the proxy: internal addresses (loopback, private,
    link-local, ...) are refused, and with --charter so is every host off its allowlist. What the Claude Code
    plugin registers for an agent's own browsing."""
    import asyncio

    from .browser_mcp import serve_browser_mcp

    allowed = list(_load_charter_for_browser(charter_file).allowed_domains) if charter_file else None
    sys.exit(asyncio.run(serve_browser_mcp(allowed)))


def _load_charter_for_browser(path: str) -> Any:
    from . import service

    return service.load(path)


@cli.command(epilog=_exits({
    0: "the report printed and written, the snapshot written",
    1: "the demo could not run: no browser, the model missing, ...",
    3: "the harvest stored no page",
}))
@click.option(
    "--keep", is_flag=True,
    help="Keep the demo store after the run, and write its charter beside the report (for brt search).",
)
@click.option(
    "--out", "out_dir", type=click.Path(file_okay=False),
    help="The folder for the report (demo_cwv.md and .json). Default: ./out under the current folder.",
)
@_handle_errors
def demo(keep: bool, out_dir: str | None) -> None:
    """Run the bundled offline demo: serve the demo site, harvest, synthesize, print, clean."""
    from .demo import run_demo

    sys.exit(run_demo(keep=keep, out=out_dir, echo=click.echo))


# -- audits: verify, restore, report, ls, charter init; thin wrappers over orchestrator.audit ------


@cli.command(epilog=_exits({0: "the snapshot passes", 1: "it fails a check, or cannot be read", 2: _BAD_INPUT}))
@click.argument("snapshot", type=click.Path(dir_okay=False))
@click.option("--har", type=click.Path(dir_okay=False), help="The HAR to check (default: beside the snapshot).")
@click.option("--no-har", is_flag=True, help="Skip the HAR checks.")
@click.option("--charter", "charter_file", type=click.Path(dir_okay=False),
              help="Take the allowlist from this charter (for snapshots that record none).")
@click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")
@_handle_errors
def verify(snapshot: str, har: str | None, no_har: bool, charter_file: str | None, as_json: bool) -> None:
    """Check a snapshot: manifest, chunk ids, quotes, allowlist, HAR fingerprints. Exit 1 on any failure."""
    from .audit.verify import verify as run_verify

    report = run_verify(snapshot, har=har, check_har=not no_har, charter_file=charter_file)
    if as_json:
        _print_json(report.to_json())
    else:
        click.echo(report.verdict())
        for failure in report.failures:
            click.echo(f"  {failure}")
        for warning in report.warnings:
            _err(f"warning: {warning}")
    if not report.ok:
        sys.exit(EXIT_FAILURE)


@cli.command(epilog=_exits({
    0: "the store rebuilt (and its charter written)",
    1: "a store of that id exists, the snapshot fails verification or cannot be read",
    2: _BAD_INPUT,
}))
@click.argument("snapshot", type=click.Path(dir_okay=False))
@click.option("--id", "new_id", help="Restore under this charter id (default: the snapshot's).")
@click.option("--charter", "charter_out", type=click.Path(dir_okay=False),
              help="Write the recorded charter here (default: $BRT_HOME/charters/<id>.yaml).")
@click.option("--har", type=click.Path(dir_okay=False),
              help="The HAR to verify the snapshot against and restore (default: the one beside it).")
@click.option("--force", is_flag=True, help="Restore even when the snapshot fails verification.")
@click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")
@_handle_errors
def restore(snapshot: str, new_id: str | None, charter_out: str | None, har: str | None, force: bool,
            as_json: bool) -> None:
    """Rebuild a charter's store from a snapshot verified against its HAR, so search and synthesize run again."""
    from .audit.restore import restore as run_restore

    result = run_restore(snapshot, new_id=new_id, charter_out=charter_out, force=force, har=har)
    if as_json:
        _print_json(result.to_json())
        return
    vectors = f"{result.reembedded} re-embedded" if result.reembedded else "vectors from the snapshot"
    click.echo(f"restored {result.charter_id}: {result.pages} pages, {result.chunks} chunks ({vectors}), "
               f"{result.events} journal records, concept index {result.concept_index}; store {result.store_path}")
    if result.charter_path:
        click.echo(f"charter: {result.charter_path}  (brt synthesize {result.charter_path})")


@cli.command(epilog=_exits({
    0: "the report written",
    1: "no synthesis recorded yet, or the source cannot be read",
    2: _BAD_INPUT,
}))
@click.argument("source", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(REPORT_FORMATS), default=REPORT_FORMATS[0], show_default=True)
@click.option("--out", type=click.Path(dir_okay=False), help="Write here (default: stdout).")
@click.option("--check", "check_md", type=click.Path(exists=True, dir_okay=False),
              help="Instead: the HTML view of `brt check` of this report against SOURCE (exit 1 when the check "
                   "fails).")
@_handle_errors
def report(source: str, fmt: str, out: str | None, check_md: str | None = None) -> None:
    """The last synthesis of a charter (CHARTER) or a snapshot (SNAPSHOT.jsonl) as HTML, CSV or Markdown."""
    from .audit.report import check_view
    from .audit.report import report as run_report

    if check_md is not None and fmt != "html":
        raise click.UsageError("--check gives an HTML view: leave --format out (or give html)")
    result = check_view(source, check_md, out=out) if check_md else run_report(source, fmt=fmt, out=out)
    if result.path is None:
        click.echo(result.text, nl=False)
    else:
        _err(f"wrote {result.path}")
    if result.check is not None and not result.check.ok:
        _err(f"brt: {result.check.verdict()}")
        sys.exit(EXIT_FAILURE)


@cli.command(epilog=_exits({
    0: "the report passes",
    1: "it fails (or its evidence cannot be read)",
    2: _BAD_INPUT,
}))
@click.argument("report_file", metavar="REPORT", type=click.Path(exists=True, dir_okay=False))
@click.option("--charter", "charter_file", type=click.Path(dir_okay=False),
              help="Check against this charter's store (and its allowed_domains).")
@click.option("--snapshot", type=click.Path(dir_okay=False),
              help="Check against this audit snapshot (.jsonl), e.g. after /clean; it is verified first.")
@click.option("--no-har", is_flag=True,
              help="Verify the snapshot without the HAR beside it (its seal and records only, not provenance).")
@click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")
@_handle_errors
def check(report_file: str, charter_file: str | None, snapshot: str | None, as_json: bool,
          no_har: bool = False) -> None:
    """Check a report (Markdown, or brt's JSON or HTML) against the charter's evidence: quotes verbatim,
    citations harvested with the right date, every listed URL stored, claims cited and supported. The snapshot
    (or the store) is verified first and refused when it fails. Exit 1 when the check fails."""
    from . import service

    if charter_file is None and snapshot is None:
        raise click.UsageError("give --charter CHARTER (its store) or --snapshot SNAPSHOT.jsonl")
    result = service.check(report_file, charter=charter_file, snapshot=snapshot, har=not no_har)
    if as_json:
        _print_json(service.check_json(result))
    else:
        for line in result.lines():
            click.echo(line)
    if not result.ok:
        sys.exit(EXIT_FAILURE)


@cli.command("ls", epilog=_exits({0: "the list printed", 1: "BRT_HOME cannot be read"}))
@click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")
@_handle_errors
def ls_cmd(as_json: bool) -> None:
    """The charters with a store under $BRT_HOME, and the snapshots."""
    from .audit.catalog import ls

    catalog = ls()
    if as_json:
        _print_json(catalog.to_json())
        return
    click.echo(f"stores in {catalog.home}/memory:" if catalog.stores else f"no stores in {catalog.home}/memory")
    for s in catalog.stores:
        if s.problem:
            click.echo(f"  {s.charter_id}  unreadable: {s.problem}")
            continue
        click.echo(f"  {s.charter_id}  {s.pages} pages, {s.chunks} chunks, {s.disk_bytes / 1e6:.1f} MB, "
                   f"last harvest {s.last_harvest or '-'}, synthesis {s.last_synthesis or '-'}"
                   + (f"  ({s.charter_source})" if s.charter_source else ""))
    click.echo(f"snapshots in {catalog.home}/snapshots:" if catalog.snapshots else "no snapshots")
    for n in catalog.snapshots:
        if n.problem:
            click.echo(f"  {n.id}  {n.problem}")
            continue
        click.echo(f"  {n.id}  {n.pages} pages, {n.chunks} chunks, last harvest {n.last_harvest or '-'}, "
                   f"{n.size / 1e6:.1f} MB{'' if n.har else ', no HAR'}")


@charter_group.command("init", epilog=_exits({0: "the charter written", 1: "the file exists", 2: _BAD_INPUT}))
@click.argument("question")
@click.argument("urls", nargs=-1, required=True)
@click.option("--id", "charter_id", help="The charter id (default: from the question).")
@click.option("--title", help="The title (default: from the question).")
@click.option("--section", "sections", multiple=True, help="Another question to answer (repeatable).")
@click.option("--out", type=click.Path(dir_okay=False), help="Where to write it (default: ./<id>.yaml).")
@click.option("--force", is_flag=True, help="Replace an existing file.")
@_handle_errors
def charter_init(question: str, urls: tuple[str, ...], charter_id: str | None, title: str | None,
                 sections: tuple[str, ...], out: str | None, force: bool) -> None:
    """Write a commented starter charter from a question and a few URLs."""
    from .charter_starter import charter_init as run_init

    result = run_init(question, list(urls), charter_id=charter_id, title=title, sections=list(sections), out=out,
                      force=force)
    click.echo(str(result.path))
    _err(f"charter {result.charter_id!r} written; next: brt harvest {result.path}")


@cli.command(epilog=_exits({0: "everything a run needs is here (optional extras may be missing)",
                            1: "something a run needs is missing (the fix is printed under it)"}))
@click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout (ok, and every check).")
@click.option("--no-launch", is_flag=True, help="Find the browser but do not start it.")
@_handle_errors
def doctor(as_json: bool, no_launch: bool) -> None:
    """Check what a run needs on this machine: Chromium found and starting with brt's flags, the model files and
    their sha256, BRT_HOME writable, the optional extras (MCP, Ray, object storage, chrome-devtools-mcp). Each
    check that fails says how to fix it."""
    from .doctor import doctor as run_doctor

    report = run_doctor(launch=not no_launch)
    if as_json:
        _print_json(report.to_json())
    else:
        _render_doctor(report)
    if not report.ok:
        sys.exit(EXIT_FAILURE)


def _render_doctor(report: Any) -> None:
    """Each check on a line; under one that is not ok, its fix; then the verdict."""
    click.echo(f"brt {report.version} on Python {report.python}")
    width = max(len(c.name) for c in report.checks)
    for c in report.checks:
        mark = {"ok": "ok", "warning": "warn", "missing": "MISSING" if c.required else "missing"}[c.status]
        click.echo(f"  {mark:<8}{c.name:<{width}}  {c.detail}")
        if c.status != "ok" and c.fix:
            for i, line in enumerate(c.fix.splitlines()):
                click.echo(f"  {'':<8}{'':<{width}}  {'fix: ' if i == 0 else '     '}{line}")
    failed = [c.name for c in report.checks if c.failed]
    optional = [c.name for c in report.checks if not c.required and c.status != "ok"]
    if failed:
        click.echo(f"brt cannot run here: {', '.join(failed)} missing (the fixes are above)")
    else:
        extra = f" ({len(optional)} optional extra{'s' if len(optional) != 1 else ''} missing)" if optional else ""
        click.echo(f"brt has what it needs{extra}")


def main() -> None:
    cli(prog_name="brt")


if __name__ == "__main__":
    main()
