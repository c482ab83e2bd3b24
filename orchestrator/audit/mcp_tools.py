"""brt's MCP tools for audits: ``verify``, ``restore``, ``report``, ``list_charters`` and
``charter_init``, thin wrappers over this package, registered by ``orchestrator.mcp_server``. Like every tool
there, they only parse arguments and render; their results go through ``untrusted.agent_document`` (through
``result``), so text from pages and snapshots (failure messages name harvested URLs, a snapshot names its
charter) reaches the agent quoted, and a report is written to a file, never returned as text. Files are written
under ``$BRT_HOME`` only, with no symlink followed (``files.write_file``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp_types import CallToolResult
from pydantic import Field

from ..untrusted import trusted

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

__all__ = ["register_audit_tools"]


def register_audit_tools(
    server: MCPServer,
    *,
    call: Callable[[Callable[[], Any]], Awaitable[Any]],
    result: Callable[[dict[str, Any]], CallToolResult],
    tool_error: Callable[[str], Exception],
) -> None:
    """Add the audit tools to brt's MCP server (``mcp_server.build_server``), which lends its ways to run a
    blocking call (``call``), to build a result (``result``) and to refuse bad input (``tool_error``)."""
    from mcp_types import ToolAnnotations

    read_only = ToolAnnotations(readOnlyHint=True, idempotentHint=True, openWorldHint=False)
    # a new store or charter file, refused over an existing one
    creates = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False)

    def snapshot_file(path: str) -> Path:
        if not path.endswith(".jsonl"):
            raise tool_error("snapshot_path must be a snapshot file (.jsonl)")
        return Path(path).expanduser()

    @server.tool(
        title="Verify a snapshot",
        description="Check an audit snapshot (.jsonl) and the HAR beside it: manifest sha256 and counts, every "
        "chunk id the hash of its text, every quote a verbatim span of a chunk of the cited page, every cited "
        "URL on the charter's allowlist, every stored page's response in the HAR with its recorded fingerprint. "
        "Returns ok, a one-line verdict and the failures.",
        annotations=read_only,
    )
    async def verify(
        snapshot_path: Annotated[str, Field(description="Path of the snapshot (.jsonl).", min_length=1)],
        check_har: Annotated[bool, Field(description="Also check the HAR beside the snapshot.")] = True,
    ) -> CallToolResult:
        from .verify import verify as run_verify

        path = snapshot_file(snapshot_path)
        report = await call(lambda: run_verify(path, check_har=check_har))
        doc = report.to_json()
        doc["verdict"] = trusted(doc["verdict"])  # counts and the file's name; the failures name pages: quoted
        return result(doc)

    @server.tool(
        title="Restore a snapshot",
        description="Rebuild a charter's store from an audit snapshot (.jsonl) that passes verification, so that "
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
    ) -> CallToolResult:
        from .restore import restore as run_restore

        path = snapshot_file(snapshot_path)
        done = await call(lambda: run_restore(path, new_id=charter_id))
        return result(done.to_json())

    @server.tool(
        title="Write a report",
        description="The last synthesis of a charter (its charter file) or the synthesis recorded in a snapshot "
        "(.jsonl) as HTML, CSV or Markdown, written to $BRT_HOME/reports/<name>.<format> (never elsewhere). "
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
            Literal["html", "csv", "md"], Field(description="html (one offline page), csv or md.")
        ] = "html",
    ) -> CallToolResult:
        from ..config import brt_home
        from .bundle import load_bundle
        from .report import write_report

        if not source_path.endswith((".yaml", ".yml", ".json", ".jsonl")):
            raise tool_error("source_path must be a charter file (.yaml, .yml, .json) or a snapshot (.jsonl)")
        source = Path(source_path).expanduser()

        def run() -> dict[str, Any]:
            bundle = load_bundle(source)
            name = source.stem if bundle.origin == "snapshot" else bundle.charter_id
            done = write_report(bundle, fmt=format, out=brt_home() / "reports" / f"{name}.{format}",
                                within=[brt_home()])
            sections = bundle.sections
            return {
                "charter_id": bundle.charter_id,
                "origin": bundle.origin,
                "format": format,
                "path": str(done.path),
                "bytes": done.path.stat().st_size if done.path else 0,
                "sections": len(sections),
                "blocks": sum(len(s.get("blocks") or []) for s in sections),
                "gaps": sum(len(s.get("gaps") or []) for s in sections),
            }

        return result(await call(run))

    @server.tool(
        title="List charters and snapshots",
        description="The charters with a store under $BRT_HOME (pages, chunks, size, last harvest, last "
        "synthesis) and the snapshots under $BRT_HOME/snapshots (charter id, pages, chunks, last harvest, size).",
        annotations=read_only,
    )
    async def list_charters() -> CallToolResult:
        from .catalog import ls

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
    ) -> CallToolResult:
        from ..config import brt_home
        from .starter import charter_init as run_init
        from .starter import starter_text

        def run() -> dict[str, Any]:
            cid, text = starter_text(question, urls, charter_id=charter_id, title=title, sections=sections)
            path = None
            if write:
                path = run_init(question, urls, charter_id=charter_id, title=title, sections=sections,
                                out=brt_home() / "charters" / f"{cid}.yaml", force=overwrite,
                                within=[brt_home()]).path
            return {"charter_id": cid, "path": str(path) if path else None, "text": trusted(text)}  # the agent's

        return result(await call(run))
