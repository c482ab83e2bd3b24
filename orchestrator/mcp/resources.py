"""The charters' evidence as MCP resources, for clients that prefer reading resources to calling tools.

One resource per section of each charter's last synthesis, for every store under ``$BRT_HOME/memory``:

    brt://charters/{charter_id}/sections/{n}      (n = 1, 2, ... in the charter's order; application/json)

Its content is the section as the ``synthesize`` tool returns it (``service.section_json``: blocks with their
citation, quotes as quoted untrusted page text, gaps), with the charter id, the synthesis time and the
conflicts and agreements of that section, built by ``untrusted.agent_document`` like every tool's result (keys
and values walked: text from a page quoted). The list is read from the stores each time a client asks, so a new
synthesis or a ``clean`` shows at once; stores on object storage (``memory.uri``) are not listed. A resource URI
is bounded like a tool's string argument (``guard.MAX_ARG_CHARS``).
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp_types import Resource

from .guard import MAX_ARG_CHARS, GuardedServer, run_blocking

__all__ = ["SECTION_URI", "BrtServer", "evidence_resources", "register_resources", "section_document"]

log = logging.getLogger(__name__)

SECTION_URI = "brt://charters/{charter_id}/sections/{n}"
_CHARTER_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


class BrtServer(GuardedServer):
    """brt's MCP server (``guard.GuardedServer``: every tool's arguments bounded, every error through the
    guard): the registered resources and, read from the stores at each listing, one resource per section of
    every charter's last synthesis. A resource URI longer than a tool's string argument may be is refused."""

    async def list_resources(self) -> list[Resource]:
        listed = await super().list_resources()
        return [*listed, *await run_blocking(evidence_resources)]

    async def read_resource(self, uri: Any, context: Any = None) -> Any:
        if len(str(uri)) > MAX_ARG_CHARS:
            raise ResourceNotFoundError(f"a resource URI is at most {MAX_ARG_CHARS} characters long")
        return await super().read_resource(uri, context)


def _synthesis_of(charter_id: str) -> dict[str, Any] | None:
    """The last synthesis of the charter's store under ``$BRT_HOME/memory``, or None."""
    from memory_store import Memory

    from ..config import memory_basepath
    from ..trail.store import stored_synthesis

    base = memory_basepath()
    if not _CHARTER_ID.match(charter_id) or not (base / charter_id / "meta.json").is_file():
        return None
    try:
        return stored_synthesis(Memory(charter_id, basepath=base, create=False))
    except Exception as exc:  # noqa: BLE001 - one unreadable store must not hide the others
        log.warning("store %s: cannot read its synthesis: %s", base / charter_id, exc)
        return None


def _syntheses() -> list[tuple[str, dict[str, Any]]]:
    """(charter id, last synthesis) of every store under ``$BRT_HOME/memory`` that has one."""
    from ..config import memory_basepath

    base = memory_basepath()
    if not base.is_dir():
        return []
    found = ((p.name, _synthesis_of(p.name)) for p in sorted(base.iterdir()))
    return [(cid, syn) for cid, syn in found if syn is not None]


def evidence_resources() -> list[Resource]:
    """One resource per section of every stored synthesis."""
    from ..untrusted import escape_untrusted

    out = []
    for charter_id, synthesis in _syntheses():
        for n, section in enumerate(synthesis.get("sections") or [], start=1):
            title = escape_untrusted(str(section.get("title") or f"section {n}"))
            blocks, gaps = len(section.get("blocks") or []), len(section.get("gaps") or [])
            out.append(Resource(
                uri=SECTION_URI.format(charter_id=charter_id, n=n),
                name=f"{charter_id}/sections/{n}",
                title=f"{charter_id}: {title}",
                description=f"Evidence of section {n} ({title}) of charter {charter_id}, synthesized "
                f"{synthesis.get('generated_at')}: {blocks} block(s), {gaps} gap(s).",
                mime_type="application/json",
            ))
    return out


def section_document(charter_id: str, n: int) -> dict[str, Any]:
    """The resource of section ``n`` (1-based) of the charter's last synthesis, as ``untrusted.agent_document``
    builds it (ResourceNotFoundError when the store, its synthesis or the section does not exist)."""
    from .. import service
    from ..untrusted import agent_document, quote_untrusted, safe_url

    synthesis = _synthesis_of(charter_id) or {}
    sections = synthesis.get("sections") or []
    if not synthesis:
        raise ResourceNotFoundError(f"charter {charter_id!r} has no store with a synthesis under $BRT_HOME")
    if not 1 <= n <= len(sections):
        raise ResourceNotFoundError(f"charter {charter_id!r} has sections 1 to {len(sections)}, not {n}")
    section = sections[n - 1]
    title = section.get("title")
    judged = {key: [x for x in synthesis.get(key) or [] if x.get("section") == title]
              for key in ("conflicts", "agreements")}
    service.judgements_json(judged, quote_untrusted, safe_url)
    return agent_document({
        "charter_id": charter_id,
        "generated_at": synthesis.get("generated_at"),
        "n": n,
        **service.section_json(section, quote_untrusted, safe_url),
        **judged,
    })


def register_resources(server: MCPServer) -> None:
    """Register the section template on ``server`` (a :class:`BrtServer` lists the sections themselves)."""

    @server.resource(
        SECTION_URI,
        name="charter-section-evidence",
        title="Evidence of one section of a charter",
        description="A section of a charter's last synthesis: its evidence blocks (quotes as quoted untrusted "
        "page content, URL, last-updated date, score) or gap, and the conflicts and agreements between its "
        "sources. n counts the charter's sections from 1.",
        mime_type="application/json",
    )
    async def charter_section(charter_id: str, n: str) -> str:
        if not _CHARTER_ID.match(charter_id) or not n.isdigit() or len(n) > 6:
            raise ResourceNotFoundError("no such resource: expected brt://charters/<charter id>/sections/<n>")
        doc = await run_blocking(lambda: section_document(charter_id, int(n)))
        return json.dumps(doc, indent=2, ensure_ascii=False)
