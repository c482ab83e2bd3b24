"""brt's MCP tools for audits: ``verify``, ``restore``, ``report``, ``list_charters``, ``charter_init`` and
``check_report``, thin wrappers over ``orchestrator.audit``, registered by ``orchestrator.mcp.server``. Like every tool
there, they only parse arguments and render; their results go through ``untrusted.agent_document`` (through
``result``), so text from pages, snapshots and reports (failure messages name harvested URLs, a snapshot names
its charter, a report's claims are an agent's draft) reaches the agent quoted, and a report is written to a file
under ``$BRT_HOME/reports`` (through ``safe_paths``), never returned as text. Files are written under
``$BRT_HOME`` only, with no symlink followed (``files.write_file``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp_types import CallToolResult
from pydantic import Field

from ..formats import ReportFormat, suffix
from ..untrusted import trusted
from .schemas import CatalogOut, CharterInitOut, CheckOut, ReportOut, RestoreOut, VerifyOut

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

__all__ = ["register_audit_tools", "register_check_tool"]


def register_audit_tools(
    server: MCPServer,
    *,
    call: Callable[[Callable[[], Any]], Awaitable[Any]],
    result: Callable[[dict[str, Any]], CallToolResult],
    tool_error: Callable[[str], Exception],
) -> None:
    """Add the audit tools to brt's MCP server (``server.build_server``), which lends its ways to run a
    blocking call (``call``), to build a result (``result``) and to refuse bad input (``tool_error``)."""
    from mcp_types import ToolAnnotations

    read_only = ToolAnnotations(readOnlyHint=True, idempotentHint=True, openWorldHint=False)
    # a new store or charter file, refused over an existing one
    creates = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False)

    def snapshot_file(path: str) -> Path:
        return _file_of(path, (".jsonl",), "snapshot_path must be a snapshot file (.jsonl)", tool_error)

    def markdown_file(path: str) -> Path:
        return _file_of(path, (".md", ".markdown", ".json", ".html", ".htm"),
                        "check_path must be a report file (.md, .json or .html)", tool_error)

    @server.tool(
        title="Verify a snapshot",
        description="Check an audit snapshot (.jsonl) and the HAR beside it: manifest sha256 and counts, every "
        "chunk id the hash of its text, every quote a verbatim span of a chunk of the cited page, every cited "
        "URL on the charter's allowlist, every stored page's response in the HAR with its recorded fingerprint, "
        "and every page and every cited source against the provenance the HAR records for it (a page added "
        "with add_page is named as such). Returns ok, a one-line verdict and the failures.",
        annotations=read_only,
    )
    async def verify(
        snapshot_path: Annotated[str, Field(description="Path of the snapshot (.jsonl).", min_length=1)],
        check_har: Annotated[bool, Field(description="Also check the HAR beside the snapshot.")] = True,
    ) -> Annotated[CallToolResult, VerifyOut]:
        from ..audit.verify import verify as run_verify

        path = snapshot_file(snapshot_path)
        report = await call(lambda: run_verify(path, check_har=check_har))
        doc = report.to_json()
        doc["verdict"] = trusted(doc["verdict"])  # counts and the file's name; the failures name pages: quoted
        return result(doc)

    @server.tool(
        title="Restore a snapshot",
        description="Rebuild a charter's store from an audit snapshot (.jsonl) that passes verification against "
        "the HAR beside it, so that "
        "search and synthesize run again; its charter is written to $BRT_HOME/charters/<id>.yaml. Refused when "
        "a store of that id exists or the snapshot fails verification (the CLI's `brt restore --force` can "
        "override that; this tool cannot). Returns the charter id and path, counts and the store path.",
        annotations=creates,
    )
    async def restore(
        snapshot_path: Annotated[str, Field(description="Path of the snapshot (.jsonl).", min_length=1)],
        charter_id: Annotated[
            str | None, Field(description="Restore under this charter id (default: the snapshot's).")
        ] = None,
    ) -> Annotated[CallToolResult, RestoreOut]:
        from ..audit.restore import restore as run_restore

        path = snapshot_file(snapshot_path)
        done = await call(lambda: run_restore(path, new_id=charter_id))
        return result(done.to_json())

    @server.tool(
        title="Write a report",
        description="The last synthesis of a charter (its charter file) or the synthesis recorded in a snapshot "
        "(.jsonl) as HTML, CSV or Markdown, written to $BRT_HOME/reports/<name>.<format> (never elsewhere, "
        "never over a file brt did not write, and never through a link: one there is replaced). With check_path "
        "(a Markdown report): the HTML view of the check of that report against the source instead, written to "
        "$BRT_HOME/reports/<name>-check.html. "
        "Returns the file's path and counts, not its text: the report quotes harvested pages.",
        annotations=ToolAnnotations(
            readOnlyHint=False, destructiveHint=True, idempotentHint=True, openWorldHint=False
        ),  # replaces its own earlier report of the same name
    )
    async def report(
        source_path: Annotated[
            str, Field(description="A charter file (.yaml/.yml/.json) or a snapshot (.jsonl).", min_length=1)
        ],
        format: Annotated[  # noqa: A002 - the tool's argument name
            ReportFormat, Field(description="html (one offline page), csv or md.")
        ] = "html",
        check_path: Annotated[
            str | None, Field(description="A Markdown report (.md) to check against the source (HTML only).")
        ] = None,
    ) -> Annotated[CallToolResult, ReportOut]:
        if not source_path.endswith((".yaml", ".yml", ".json", ".jsonl")):
            raise tool_error("source_path must be a charter file (.yaml, .yml, .json) or a snapshot (.jsonl)")
        if check_path is not None:
            markdown_file(check_path)
            if format != "html":
                raise tool_error("the check of a report is an HTML view: give format html (or leave it out)")
        source = Path(source_path).expanduser()
        return result(await call(lambda: _write_report(source, format, check_path)))

    @server.tool(
        title="List charters and snapshots",
        description="The charters with a store under $BRT_HOME (pages, chunks, size, last harvest, last "
        "synthesis) and the snapshots under $BRT_HOME/snapshots (charter id, pages, chunks, last harvest, size).",
        annotations=read_only,
    )
    async def list_charters() -> Annotated[CallToolResult, CatalogOut]:
        from ..audit.catalog import ls

        catalog = await call(ls)
        return result(catalog.to_json())

    @server.tool(
        title="Write a starter charter",
        description="A commented starter charter from a question and a few URLs (valid by construction: the "
        "question becomes the goal and the first section, the URLs the seeds, their hosts the allowed domains). "
        "Written to $BRT_HOME/charters/<id>.yaml (never elsewhere) unless write is false; returns its path and text.",
        annotations=creates,
    )
    async def charter_init(
        question: Annotated[str, Field(description="The research question.", min_length=1)],
        urls: Annotated[list[str], Field(description="Absolute http(s) URLs to start from.", min_length=1)],
        charter_id: Annotated[
            str | None, Field(description="Charter id ([a-z0-9][a-z0-9_-]{0,63}); default: from the question.")
        ] = None,
        title: Annotated[str | None, Field(description="Title; default: from the question.")] = None,
        sections: Annotated[list[str] | None, Field(description="More questions, one section each.")] = None,
        write: Annotated[bool, Field(description="Write the file (false: only return the text).")] = True,
        overwrite: Annotated[bool, Field(description="Replace an existing charter of that id.")] = False,
    ) -> Annotated[CallToolResult, CharterInitOut]:
        from ..charter_starter import charter_init as run_init
        from ..charter_starter import starter_text
        from ..config import brt_home

        def run() -> dict[str, Any]:
            cid, text = starter_text(question, urls, charter_id=charter_id, title=title, sections=sections)
            path = None
            if write:
                path = run_init(question, urls, charter_id=charter_id, title=title, sections=sections,
                                out=brt_home() / "charters" / f"{cid}.yaml", force=overwrite,
                                within=[brt_home()]).path
            return {"charter_id": cid, "path": str(path) if path else None, "text": trusted(text)}  # the agent's

        return result(await call(run))

    register_check_tool(server, call=call, result=result, tool_error=tool_error)


def _file_of(path: str, suffixes: tuple[str, ...], message: str, tool_error: Callable[[str], Exception]) -> Path:
    if not path.endswith(suffixes):
        raise tool_error(message)
    return Path(path).expanduser()


def register_check_tool(
    server: MCPServer,
    *,
    call: Callable[[Callable[[], Any]], Awaitable[Any]],
    result: Callable[[dict[str, Any]], CallToolResult],
    tool_error: Callable[[str], Exception],
) -> None:
    """Add ``check_report`` (``brt check`` for an agent's draft) to brt's MCP server."""
    from mcp_types import ToolAnnotations

    read_only = ToolAnnotations(readOnlyHint=True, idempotentHint=True, openWorldHint=False)

    @server.tool(
        title="Check a report",
        description="Check a report (an agent's draft: Markdown, or brt's JSON or HTML) against the charter's "
        "evidence, offline: every attributed quote verbatim in a stored chunk of the cited URL, every cited or "
        "listed URL harvested under the charter (allowlist and store) with its last-updated date, every claim "
        "cited or marked unsupported, cited claims without a quote scored against the cited page (supported, "
        "weakly supported, not found there). Give charter_path (its store) or snapshot_path (after clean); the "
        "store or snapshot is verified first and refused when it fails. Returns the verdict, the rates and "
        "totals, and the failing claims (line, verdict, problems, closest passage), within 8,000 characters; "
        "claims='all' lists every claim, a page at a time (offset). Text from the report and the pages comes "
        "back as quoted untrusted content.",
        annotations=read_only,
    )
    async def check_report(
        report_path: Annotated[str, Field(description="The report to check (.md, or brt's .json / .html).",
                                          min_length=1)],
        charter_path: Annotated[
            str | None, Field(description="The charter file: check against its store and allowed_domains.")
        ] = None,
        snapshot_path: Annotated[
            str | None, Field(description="An audit snapshot (.jsonl) to check against instead (after clean).")
        ] = None,
        claims: Annotated[
            Literal["failing", "all"], Field(description="failing (default): the claims that fail; all: every "
                                                         "claim, a page at a time.")
        ] = "failing",
        offset: Annotated[int, Field(description="The first claim to list (paging).", ge=0, le=100_000)] = 0,
    ) -> Annotated[CallToolResult, CheckOut]:
        from .. import service

        report_file = _file_of(report_path, (".md", ".markdown", ".json", ".html", ".htm"),
                               "report_path must be a report file (.md, .json or .html)", tool_error)
        if charter_path is None and snapshot_path is None:
            raise tool_error("give charter_path (check against its store) or snapshot_path (a .jsonl snapshot)")
        snapshot = None
        if snapshot_path is not None:
            snapshot = _file_of(snapshot_path, (".jsonl",), "snapshot_path must be a snapshot file (.jsonl)",
                                tool_error)
        done = await call(lambda: service.check(report_file, charter=charter_path, snapshot=snapshot,
                                                follow_links=False))
        return result(check_result(done, claims, offset))


#: The most characters a ``check_report`` result holds (an agent's client takes one tool result of about this).
CHECK_RESULT_CHARS = 8_000


def check_result(done: Any, which: str = "failing", offset: int = 0, limit: int = CHECK_RESULT_CHARS
                 ) -> dict[str, Any]:
    """What ``check_report`` returns: the summary, then claims (the failing ones, or all from ``offset``)
    added while the result, as the agent reads it (``untrusted.agent_document``, indented JSON), stays within
    ``limit`` characters; ``more`` says how many were left out and ``next_offset`` where to go on."""
    import json

    from ..audit.check import claim_brief, summary_json
    from ..untrusted import agent_document, quote_untrusted, safe_url

    doc = summary_json(done, quote_untrusted)
    pool = [c for c in done.claims if not c.ok] if which == "failing" else list(done.claims)
    pool = pool[offset:]
    doc.update(claims_listed=trusted(which), claims=[], more=0, next_offset=None)

    def size(d: dict[str, Any]) -> int:
        return len(json.dumps(agent_document(d), indent=2, ensure_ascii=False))

    for i, claim in enumerate(pool):
        brief = claim_brief(claim, quote_untrusted, safe_url, done.report.name)
        doc["claims"].append(brief)
        doc["more"], doc["next_offset"] = len(pool) - i - 1, (offset + i + 1 if i + 1 < len(pool) else None)
        if size(doc) > limit:
            doc["claims"].pop()
            doc["more"], doc["next_offset"] = len(pool) - i, offset + i
            break
    if doc["more"] == 0:
        doc["next_offset"] = None
    return doc


def _report_path(home: Path, name: str) -> Path:
    """``$BRT_HOME/reports/<name>`` for the ``report`` tool: a regular file there that brt did not write (or that
    changed since) is refused (``safe_paths.check_not_foreign``); a symlink there is replaced, never followed,
    and no folder on the way may be one (``files.write_file`` with ``within=[$BRT_HOME]``)."""
    from ..safe_paths import check_not_foreign

    out = home / "reports" / name
    if not out.is_symlink():
        check_not_foreign([out])
    return out


def _write_report(source: Path, fmt: str, check_path: str | None) -> dict[str, Any]:
    """Write the report (or the check's HTML view) of ``source`` under ``$BRT_HOME/reports``, never over a file
    brt did not write and never through a link; returns what the ``report`` tool says of it."""
    from ..audit.bundle import load_bundle
    from ..audit.report import check_view, write_report
    from ..config import brt_home
    from ..safe_paths import record_written

    home = brt_home()
    if check_path is not None:
        out = _report_path(home, f"{_source_name(source)}-check.html")
        done = check_view(source, check_path, out=out, within=[home], follow_links=False)
        record_written([done.path])
        assert done.check is not None
        return {"charter_id": done.check.charter_id, "origin": done.check.origin, "format": "html",
                "path": str(done.path), "bytes": done.path.stat().st_size if done.path else 0,
                "check": {"ok": done.check.ok, "verdict": trusted(done.check.verdict()),
                          **done.check.rates()}}
    bundle = load_bundle(source)
    name = source.stem if bundle.origin == "snapshot" else bundle.charter_id
    done = write_report(bundle, fmt=fmt, out=_report_path(home, f"{name}{suffix(fmt)}"), within=[home])
    record_written([done.path])
    sections = bundle.sections
    return {
        "charter_id": bundle.charter_id,
        "origin": bundle.origin,
        "format": fmt,
        "path": str(done.path),
        "bytes": done.path.stat().st_size if done.path else 0,
        "sections": len(sections),
        "blocks": sum(len(s.blocks) for s in sections),
        "gaps": sum(len(s.gaps) for s in sections),
    }


def _source_name(source: Path) -> str:
    """A snapshot's file stem, or the id of a charter file."""
    if source.suffix.lower() == ".jsonl":
        return source.stem
    from ..charter import load_charter

    return load_charter(source).id
