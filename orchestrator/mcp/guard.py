"""What stands between an MCP client and brt's tools (``server.py``): bounded arguments, errors that never
speak for a page, the attach opt-in, and a server that ends with its client.

- :class:`GuardedServer` is the MCPServer every tool is registered on. Before a tool runs, every string of its
  arguments is bounded (:data:`MAX_ARG_CHARS`; a page's ``html``/``text`` :data:`MAX_PAGE_CHARS`) and every
  list (:data:`MAX_ARG_ITEMS`), so a 64 MB query is refused at once instead of being embedded. Every error
  goes out through :func:`tool_error_text`: brt's own refusals (:class:`OwnToolError`, and the library errors
  :func:`own_words` vouches for) as they are, escaped; arguments that fail a tool's schema in plain words
  (:func:`argument_errors`: the argument's name and what it must be, never the value); anything else (a library
  error can name URLs, titles, a server's reply or a snapshot's records) inside the untrusted-content delimiters
  (``untrusted.agent_error``), with brt's advice (:data:`ADVICE`, in the MCP tools' terms) after them.
- :func:`attach_allowed`: MCP ``harvest``'s ``browser_url`` (attach to a browser brt did not launch) is off
  unless the user turned it on for this server (``brt mcp --allow-attach`` or ``BRT_MCP_ALLOW_ATTACH=1``).
- :func:`run_blocking`: blocking library work runs in daemon threads, so once stdin is closed (the client is
  gone) a call still at work does not keep the process alive.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from memory_store.errors import BrtException

from ..untrusted import agent_error

__all__ = [
    "ADVICE",
    "ATTACH_ENV",
    "MAX_ARG_CHARS",
    "MAX_ARG_ITEMS",
    "MAX_PAGE_CHARS",
    "GuardedServer",
    "OwnToolError",
    "PageToolError",
    "argument_errors",
    "attach_allowed",
    "check_arguments",
    "check_attach",
    "library_error",
    "own_words",
    "run_blocking",
    "tool_error_text",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: The longest string argument a tool takes (a path, a query, a question, a URL, an id).
MAX_ARG_CHARS = 4096
#: The longest page an agent may hand to ``add_page`` (``html`` or ``text``); the charter's
#: ``harvest.max_page_bytes`` caps it further.
MAX_PAGE_CHARS = 32_000_000
#: The most items a list argument holds (``charter_init``'s urls and sections).
MAX_ARG_ITEMS = 100
_PAGE_ARGS = frozenset({("add_page", "html"), ("add_page", "text")})
#: The environment variable that lets MCP ``harvest`` attach to a running browser (``browser_url``).
ATTACH_ENV = "BRT_MCP_ALLOW_ATTACH"

#: How the MCP server words each way out a library error names (``errors.ADVICE``): its tools and arguments,
#: never the CLI's flags.
ADVICE = {
    "doc_anywhere": "or give the synthesize tool an out path inside the charter's folder or $BRT_HOME",
    "restore_id": "restore under another charter_id, or remove that store first (the clean tool)",
    "restore_force": "this tool restores only a snapshot that passes verification (the verify tool lists what "
    "fails)",
    "restore_charter": "restore under another charter_id (its charter is written to "
    "$BRT_HOME/charters/<charter_id>.yaml)",
    "init_exists": "pass overwrite true to replace it, or give another charter_id",
    "synthesize_first": "call the synthesize tool for that charter first",
    "harvest_first": "call the harvest tool (or add_page) for that charter first",
}
#: Advice whose error's whole message is brt's own: the agent's input and brt's state, no page text.
_OWN_ADVICE = frozenset(
    {"doc_anywhere", "restore_id", "restore_charter", "init_exists", "synthesize_first", "harvest_first"}
)


class OwnToolError(BrtException, ToolError):
    """A refusal in brt's own words (no text from a page, a server or a snapshot in it)."""


class PageToolError(BrtException, ToolError):
    """A failure whose message may carry text brt does not vouch for; ``kind`` names the error's type; ``advice``
    (brt's own words) is shown after the quoted message."""

    def __init__(self, message: str, kind: str, advice: str | None = None):
        super().__init__(message)
        self.kind = kind
        self.advice = advice


def own_words(exc: BaseException) -> bool:
    """Whether a library error's message is brt's own words only (built from the agent's arguments and brt's state:
    an invalid charter, no store, a refused path, a busy store, an unknown job, a store or file that exists), so
    the agent reads it as is, outside the untrusted-content delimiters."""
    from memory_store.errors import StoreNotFound

    from ..errors import CharterError, HarvestBusy, JobNotFound
    from ..safe_paths import PathRefused

    if isinstance(exc, (CharterError, StoreNotFound, PathRefused, HarvestBusy, JobNotFound)):
        return True
    return getattr(exc, "advice", None) in _OWN_ADVICE


def library_error(exc: BaseException) -> ToolError:
    """A brt or memory_store error as the tool error an agent reads: :class:`OwnToolError` when
    :func:`own_words`, else :class:`PageToolError`; either way with its advice in the MCP tools' terms."""
    advice = ADVICE.get(getattr(exc, "advice", None) or "")
    if own_words(exc):
        text = str(exc)
        if advice:
            text = f"{text}\n  {advice}" if "\n" in text else f"{text}; {advice}"
        return OwnToolError(text)
    return PageToolError(str(exc), type(exc).__name__, advice)


def argument_errors(exc: BaseException) -> str | None:
    """Plain words for arguments that fail a tool's input schema (a pydantic ValidationError in ``exc``'s causes):
    each argument's name and what it must be, never the value given; None when ``exc`` is not that."""
    from pydantic import ValidationError

    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, ValidationError):
        cause = cause.__cause__
    if cause is None:
        return None
    parts = []
    for err in cause.errors(include_url=False, include_input=False):
        name = ".".join(str(p) for p in err.get("loc") or ()) or "arguments"
        if err.get("type") == "missing":
            parts.append(f"argument {name!r} is required")
        elif err.get("type") in ("extra_forbidden", "unexpected_keyword_argument"):
            parts.append(f"there is no argument {name!r}")
        else:
            msg = str(err.get("msg") or "is not valid")
            msg = msg[len("Value error, "):] if msg.startswith("Value error, ") else msg
            parts.append(f"argument {name!r}: {msg[:1].lower()}{msg[1:]}")
    return "; ".join(dict.fromkeys(parts)) or "the arguments do not fit the tool's schema"


def attach_allowed(flag: bool | None = None) -> bool:
    """Whether this server may attach to a browser it did not launch: the ``--allow-attach`` flag, else
    ``BRT_MCP_ALLOW_ATTACH`` (1, true, yes or on)."""
    if flag is not None:
        return flag
    from ..settings import run_settings

    return run_settings().mcp_allow_attach


def check_attach(browser_url: str | None, *, allowed: bool) -> None:
    """OwnToolError when a call asks to attach to a running browser and this server may not."""
    if browser_url is not None and not allowed:
        raise OwnToolError(
            "attaching to a running browser (browser_url) is off for this server: brt cannot hold a browser it "
            "did not launch to the charter's allowlist. The user can turn it on with `brt mcp --allow-attach` (or "
            f"{ATTACH_ENV}=1); leave browser_url out to let brt launch its own browser"
        )


def check_arguments(tool: str, arguments: Mapping[str, Any]) -> None:
    """OwnToolError when a string argument of ``tool`` (or a string inside a list argument) is longer than its
    limit, or a list holds more than MAX_ARG_ITEMS items."""
    for key, value in arguments.items():
        limit = MAX_PAGE_CHARS if (tool, key) in _PAGE_ARGS else MAX_ARG_CHARS
        values = value if isinstance(value, list) else [value]
        if isinstance(value, list) and len(value) > MAX_ARG_ITEMS:
            raise OwnToolError(f"argument {key!r} holds {len(value)} items; brt takes at most {MAX_ARG_ITEMS}")
        for item in values:
            if isinstance(item, str) and len(item) > limit:
                raise OwnToolError(f"argument {key!r} is {len(item)} characters long; brt takes at most {limit}")
            if isinstance(item, (dict, list)) and len(str(item)) > MAX_ARG_CHARS:
                raise OwnToolError(f"argument {key!r} is larger than brt takes ({MAX_ARG_CHARS} characters)")


def tool_error_text(tool: str, exc: BaseException) -> str:
    """What the agent reads for a failed call of ``tool``: brt's own refusals as they are (escaped); any other
    message inside the delimiters; a crash only as its type (the details are in the server's log)."""
    cause: BaseException | None = exc
    while cause is not None:  # the SDK wraps the tool's own ToolError in one of its own
        if isinstance(cause, OwnToolError):
            return f"{tool} failed: " + agent_error(str(cause), own=True)
        if isinstance(cause, PageToolError):
            advice = f"\n{agent_error(cause.advice, own=True)}" if cause.advice else ""
            return f"{tool} failed ({cause.kind}): " + agent_error(str(cause)) + advice
        cause = cause.__cause__
    if type(exc).__name__ == "UnexpectedToolError" or not isinstance(exc, ToolError):
        return f"{tool} failed: an unexpected error (the server's log has the details)"
    plain = argument_errors(exc)
    if plain is not None:  # arguments that fail the tool's schema
        return f"{tool} failed: " + agent_error(plain, own=True)
    return f"{tool} failed: " + agent_error(str(exc))


class GuardedServer(MCPServer):
    """brt's MCPServer: arguments bounded before any tool runs; every error through :func:`tool_error_text`."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        from mcp.shared.exceptions import MCPError

        try:
            check_arguments(name, arguments or {})
            return await super().call_tool(name, arguments, context)
        except MCPError:
            raise
        except Exception as exc:
            if not isinstance(exc, ToolError):
                logger.exception("tool %r failed", name)
            raise OwnToolError(tool_error_text(name, exc)) from exc


async def run_blocking(fn: Callable[[], T]) -> T:
    """``fn()`` in a daemon thread of its own, awaited. When the call is cancelled (the client went away) the
    thread is left to finish on its own and does not keep the process alive: once stdin closes, the server
    exits even while a call is still at work."""
    import asyncio

    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(value: Any, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def work() -> None:
        try:
            value, error = fn(), None
        except BaseException as exc:  # handed to the caller
            value, error = None, exc
        try:
            loop.call_soon_threadsafe(settle, value, error)
        except RuntimeError:  # the loop is closed: no one is waiting
            pass

    threading.Thread(target=work, name="brt-mcp-call", daemon=True).start()
    return await future
