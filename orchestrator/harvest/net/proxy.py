"""The egress proxy: every connection of a browser brt launches goes through it, so egress is a property of the
browser process, not of the requests page routing happens to see (workers, keepalive fetches sent in
``pagehide``, preconnects, redirect hops of subresources, TURN over TCP).

An HTTP/1.1 forward proxy on 127.0.0.1 (a random port), run in brt's own event loop: ``CONNECT host:port`` for
TLS and WebSockets, absolute-form requests (``GET http://host/...``) for plain HTTP. Before any connection is
opened, the target passes the charter's allowlist and the SSRF guard (``guard.py``) on its name **and** on
every address the name resolves to; the connection then goes to an address the guard checked (the DNS answer
is pinned: a rebinding resolver cannot swap in an internal address afterwards). A refused target gets no TCP
connection at all: the browser gets ``403`` (and a refused ``CONNECT`` no tunnel).

    proxy = EgressProxy(GuardPolicy(charter.allows, guard))     # or EgressProxy(RefuseAll("replay"))
    async with proxy:
        args = launch.egress_args(proxy.url)                     # --proxy-server, bypass list, WebRTC policy
    proxy.refused     -> [Refusal(target="10.0.0.5:80", reason="internal address (private 10.0.0.5) ...")]
    proxy.connections -> upstream connections opened

A replay uses ``RefuseAll``: the browser opens no network connection at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ... import url_safety

if TYPE_CHECKING:
    from .guard import NetGuard

__all__ = ["EgressPolicy", "EgressProxy", "GuardPolicy", "RefuseAll", "Refusal"]

logger = logging.getLogger(__name__)

#: How long an upstream connection may take to open, and an idle connection may stay open.
CONNECT_TIMEOUT_S = 15.0
IDLE_TIMEOUT_S = 120.0
_READ = 65_536
_MAX_HEAD = 65_536  # bytes of a request or response head
# Headers that describe one hop, not the message (RFC 9110 7.6.1), and the proxy's own.
_HOP_BY_HOP = {
    b"connection",
    b"keep-alive",
    b"proxy-connection",
    b"proxy-authorization",
    b"proxy-authenticate",
    b"te",
    b"trailer",
    b"upgrade",
}
Reader = asyncio.StreamReader
Writer = asyncio.StreamWriter
_AUTHORITY = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[^\s/\\@:?#\[\]]+):(\d{1,5})$")


@dataclass(frozen=True)
class Refusal:
    """A connection the proxy did not open: its target (``host:port``) and why."""

    target: str
    reason: str
    at: float = field(default_factory=time.time, compare=False)


class EgressPolicy(Protocol):
    """Decides where the browser may connect."""

    async def admit(self, scheme: str, host: str, port: int) -> list[str] | str:
        """The addresses to connect to (every one checked), or why the target is refused."""
        ...


class GuardPolicy:
    """The charter's allowlist (``allowed(url)``) and the SSRF guard, on the host and on every address it
    resolves to (``guard.resolve``: one cached answer per host, the same the document fetcher connects to)."""

    def __init__(self, allowed: Callable[[str], bool], guard: NetGuard) -> None:
        self.allowed = allowed
        self.guard = guard

    async def admit(self, scheme: str, host: str, port: int) -> list[str] | str:
        url = f"{scheme}://{host}:{port}/"
        if not self.allowed(url):
            return "not on allowed_domains"
        refused = await self.guard.check(url)
        if refused is not None:
            return refused
        try:
            return await self.guard.resolve(host.strip("[]"))
        except OSError as exc:
            return str(exc)


class RefuseAll:
    """Every connection refused (a replay touches no network)."""

    def __init__(self, reason: str = "no network in a replay") -> None:
        self.reason = reason

    async def admit(self, scheme: str, host: str, port: int) -> list[str] | str:
        return self.reason


class EgressProxy:
    """The forward proxy the launched browser is pointed at (``--proxy-server``). Start it with ``async with``
    (or :meth:`start` / :meth:`aclose`), in the event loop that runs the harvest."""

    def __init__(self, policy: EgressPolicy, *, connect_timeout_s: float = CONNECT_TIMEOUT_S) -> None:
        self.policy = policy
        self.connect_timeout_s = connect_timeout_s
        self.refused: list[Refusal] = []
        self.connections = 0  # upstream connections opened
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the egress proxy is not started")
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``, for ``--proxy-server``."""
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> EgressProxy:
        self._server = await asyncio.start_server(self._on_client, "127.0.0.1", 0, limit=_MAX_HEAD)
        logger.debug("egress proxy listening on %s", self.url)
        return self

    async def aclose(self) -> None:
        """Stop listening and drop every connection still open."""
        if self._server is None:
            return
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._server.wait_closed(), timeout=5)
        self._server = None

    async def __aenter__(self) -> EgressProxy:
        return await self.start()

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()

    # -- one client connection -------------------------------------------------------------------------------

    async def _on_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await self._serve(reader, writer)
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError) as exc:
            logger.debug("egress proxy: client connection ended: %s", exc)
        except Exception:  # noqa: BLE001 - one connection never stops the proxy
            logger.exception("egress proxy: unexpected error")
        finally:
            _close(writer)
            if task is not None:
                self._tasks.discard(task)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        import h11

        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=_MAX_HEAD)
        while True:
            try:
                event = await _next_event(conn, reader)
            except h11.RemoteProtocolError:
                await _refuse(conn, writer, 400, "malformed request")
                return
            if not isinstance(event, h11.Request):
                return  # the browser closed the connection
            if event.method == b"CONNECT":
                await self._tunnel(conn, event, reader, writer)
                return
            if not await self._forward(conn, event, reader, writer):
                return
            if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                return
            conn.start_next_cycle()

    async def _admit(self, scheme: str, host: str, port: int) -> list[str] | str:
        target = f"{host}:{port}"
        try:
            answer = await self.policy.admit(scheme, host, port)
        except Exception as exc:  # noqa: BLE001 - a policy that fails refuses
            answer = f"cannot check {target}: {type(exc).__name__}"
        if isinstance(answer, str) or not answer:
            reason = answer if isinstance(answer, str) else "no address"
            self.refused.append(Refusal(target, reason))
            logger.info("egress proxy refused %s (%s)", target, reason)
            return reason
        return answer

    async def _open(self, addresses: list[str], port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A connection to the first of ``addresses`` (all checked) that answers."""
        error: Exception | None = None
        for address in addresses:
            try:
                streams = await asyncio.wait_for(
                    asyncio.open_connection(address, port, limit=_MAX_HEAD), timeout=self.connect_timeout_s
                )
            except (OSError, asyncio.TimeoutError) as exc:
                error = exc
                continue
            self.connections += 1
            return streams
        raise OSError(f"cannot connect: {error or 'no address'}")

    async def _tunnel(self, conn: Any, request: Any, reader: Reader, writer: Writer) -> None:
        """``CONNECT host:port``: check, connect to a checked address, then relay bytes both ways."""
        import h11

        authority = request.target.decode("latin-1")
        match = _AUTHORITY.match(authority)
        parsed = url_safety.web_url(f"https://{authority}/") if match else None  # the one rule
        if parsed is None:
            await _refuse(conn, writer, 400, "malformed CONNECT target")
            return
        port = int(match.group(2))  # type: ignore[union-attr]
        admitted = await self._admit("https", parsed.host, port)
        if isinstance(admitted, str):
            await _refuse(conn, writer, 403, admitted)
            return
        try:
            up_reader, up_writer = await self._open(admitted, port)
        except OSError as exc:
            await _refuse(conn, writer, 502, str(exc))
            return
        try:
            writer.write(conn.send(h11.Response(status_code=200, reason=b"Connection established", headers=[])))
            await writer.drain()
            early, _closed = conn.trailing_data
            if early:
                up_writer.write(early)
            await _relay(reader, writer, up_reader, up_writer)
        finally:
            _close(up_writer)

    async def _forward(self, conn: Any, request: Any, reader: Reader, writer: Writer) -> bool:
        """An absolute-form request (``GET http://host/path``): check, send it to a checked address, relay the
        response. Returns whether the browser's connection may carry another request."""
        import h11

        parsed = url_safety.web_url(request.target.decode("latin-1"))  # the one rule (https only tunnels)
        if parsed is None or parsed.scheme != "http":
            await _refuse(conn, writer, 400, "not an absolute http:// request")
            return False
        port = parsed.effective_port or 80
        admitted = await self._admit("http", parsed.host, port)
        if isinstance(admitted, str):
            await _refuse(conn, writer, 403, admitted)
            return False
        try:
            up_reader, up_writer = await self._open(admitted, port)
        except OSError as exc:
            await _refuse(conn, writer, 502, str(exc))
            return False
        try:
            upstream = h11.Connection(h11.CLIENT, max_incomplete_event_size=_MAX_HEAD)
            headers = [(k, v) for k, v in request.headers if k.lower() not in _HOP_BY_HOP]
            if not any(k.lower() == b"host" for k, _ in headers):
                headers.insert(0, (b"host", parsed.netloc.encode("ascii")))
            headers.append((b"connection", b"close"))
            target = (parsed.path or "/") + parsed.query
            up_writer.write(upstream.send(h11.Request(method=request.method, target=target, headers=headers)))
            await _copy_body(conn, reader, upstream, up_writer)
            return await _copy_response(upstream, up_reader, conn, writer, request.method)
        except h11.ProtocolError as exc:
            logger.debug("egress proxy: %s: %s", parsed.netloc, exc)
            return False
        finally:
            _close(up_writer)


async def _next_event(conn: Any, reader: asyncio.StreamReader) -> Any:
    """The next h11 event of ``conn``, reading from ``reader`` as needed (idle timeout)."""
    import h11

    while True:
        event = conn.next_event()
        if event is not h11.NEED_DATA:
            return event
        data = await asyncio.wait_for(reader.read(_READ), timeout=IDLE_TIMEOUT_S)
        conn.receive_data(data)  # b"" means the peer closed


async def _copy_body(client: Any, reader: asyncio.StreamReader, upstream: Any, up_writer: asyncio.StreamWriter) -> None:
    """The request body, as it arrives, to the upstream server."""
    import h11

    while True:
        event = await _next_event(client, reader)
        if isinstance(event, h11.Data):
            up_writer.write(upstream.send(h11.Data(data=event.data)))
            await up_writer.drain()
        elif isinstance(event, h11.EndOfMessage):
            up_writer.write(upstream.send(h11.EndOfMessage()))
            await up_writer.drain()
            return
        else:
            raise h11.LocalProtocolError("the browser closed the connection mid-request")


async def _copy_response(
    upstream: Any, up_reader: asyncio.StreamReader, client: Any, writer: asyncio.StreamWriter, method: bytes
) -> bool:
    """The upstream response, as it arrives, to the browser (hop-by-hop headers dropped). Returns whether the
    browser's connection may carry another request."""
    import h11

    while True:
        event = await _next_event(upstream, up_reader)
        if isinstance(event, h11.InformationalResponse):
            if event.status_code != 101:
                writer.write(client.send(h11.InformationalResponse(status_code=event.status_code,
                                                                    headers=_end_to_end(event.headers))))
            continue
        if isinstance(event, h11.Response):
            writer.write(client.send(h11.Response(status_code=event.status_code, reason=event.reason,
                                                  headers=_end_to_end(event.headers))))
            await writer.drain()
            continue
        if isinstance(event, h11.Data):
            writer.write(client.send(h11.Data(data=event.data)))
            await writer.drain()
            continue
        if isinstance(event, h11.EndOfMessage):
            writer.write(client.send(h11.EndOfMessage()))
            await writer.drain()
            return True
        return False  # the server closed mid-response: drop the browser's connection so it sees the error


def _end_to_end(headers: Any) -> list[tuple[bytes, bytes]]:
    return [(k, v) for k, v in headers if k.lower() not in _HOP_BY_HOP]


async def _relay(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    up_reader: asyncio.StreamReader,
    up_writer: asyncio.StreamWriter,
) -> None:
    """Bytes both ways until either side closes (or stays idle past ``IDLE_TIMEOUT_S``)."""

    async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        while True:
            data = await asyncio.wait_for(src.read(_READ), timeout=IDLE_TIMEOUT_S)
            if not data:
                return
            dst.write(data)
            await dst.drain()

    tasks = [asyncio.ensure_future(pipe(reader, up_writer)), asyncio.ensure_future(pipe(up_reader, writer))]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _refuse(conn: Any, writer: asyncio.StreamWriter, status: int, reason: str) -> None:
    """Answer the browser with ``status`` (403: refused) and close: no upstream connection was opened."""
    import h11

    body = f"brt egress proxy: {reason}\n".encode("utf-8", "replace")
    try:
        writer.write(
            conn.send(
                h11.Response(
                    status_code=status,
                    headers=[
                        (b"content-type", b"text/plain; charset=utf-8"),
                        (b"content-length", str(len(body)).encode()),
                        (b"connection", b"close"),
                        (b"cache-control", b"no-store"),
                    ],
                )
            )
        )
        writer.write(conn.send(h11.Data(data=body)))
        writer.write(conn.send(h11.EndOfMessage()))
        await writer.drain()
    except (h11.LocalProtocolError, OSError) as exc:  # a response already under way, or the browser left
        logger.debug("egress proxy: cannot answer %d: %s", status, exc)


def _close(writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(Exception):
        writer.close()

