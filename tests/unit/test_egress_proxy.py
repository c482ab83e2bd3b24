"""The egress proxy (orchestrator/harvest/net/proxy.py) against loopback servers: a refused target gets no TCP
connection (counted at a sentinel on 127.0.0.2, standing for an internal host), an allowed one is reached at the
address the guard checked, plain HTTP keeps its framing and keep-alive, CONNECT tunnels, a replay refuses all."""

from __future__ import annotations

import asyncio
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from orchestrator.harvest.launch import egress_args
from orchestrator.harvest.net.guard import NetGuard
from orchestrator.harvest.net.proxy import EgressProxy, GuardPolicy, RefuseAll
from tests.sites.egress import start_sentinel

RULES = "MAP allowed.test 127.0.0.1, MAP db.allowed.test 127.0.0.2"


class _Origin(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def do_GET(self) -> None:  # noqa: N802
        self._send(f"GET {self.path} host={self.headers.get('Host')}".encode())

    def do_POST(self) -> None:  # noqa: N802
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(self.rfile.readline().strip(), 16)
                if size == 0:
                    self.rfile.readline()
                    break
                body += self.rfile.read(size)
                self.rfile.readline()
        else:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._send(b"POST " + body)

    def _send(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def origin():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Origin)
    server.daemon_threads = True
    accepts = {"n": 0}
    get_request = server.get_request

    def counted() -> Any:
        accepts["n"] += 1
        return get_request()

    server.get_request = counted  # type: ignore[method-assign]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], accepts
    server.shutdown()
    server.server_close()


@pytest.fixture
def sentinel():
    s = start_sentinel()
    yield s
    s.stop()


def _policy(guard: NetGuard | None = None) -> GuardPolicy:
    guard = guard or NetGuard(["allowed.test"], resolver_rules=RULES)
    return GuardPolicy(lambda url: "allowed.test" in url, guard)


async def _exchange(port: int, *messages: bytes) -> list[bytes]:
    """Send each message on one connection to the proxy and read one response (head and Content-Length body)
    after each."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    answers = []
    try:
        for message in messages:
            writer.write(message)
            await writer.drain()
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            fields = [line.split(b":", 1) for line in head.split(b"\r\n")[1:] if b":" in line]
            length = next((int(v) for k, v in fields if k.strip().lower() == b"content-length"), 0)
            answers.append(head + (await asyncio.wait_for(reader.readexactly(length), 10) if length else b""))
    finally:
        writer.close()
    return answers


def test_refused_targets_get_no_connection(sentinel):
    """Off the allowlist, an internal IP, and an allowed name that resolves to an internal address: 403, and the
    sentinel never sees a TCP connection."""

    async def run() -> list[bytes]:
        async with EgressProxy(_policy()) as proxy:
            answers = []
            for request in (
                f"GET http://127.0.0.2:{sentinel.port}/x HTTP/1.1\r\nHost: 127.0.0.2:{sentinel.port}\r\n\r\n",
                f"CONNECT 127.0.0.2:{sentinel.port} HTTP/1.1\r\nHost: 127.0.0.2:{sentinel.port}\r\n\r\n",
                f"GET http://db.allowed.test:{sentinel.port}/ HTTP/1.1\r\nHost: db.allowed.test\r\n\r\n",
                f"CONNECT db.allowed.test:{sentinel.port} HTTP/1.1\r\nHost: db.allowed.test\r\n\r\n",
                f"GET http://user:pw@allowed.test:{sentinel.port}/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
                "GET /origin-form HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
            ):
                answers += await _exchange(proxy.port, request.encode())
            targets = {r.target for r in proxy.refused}
            assert targets == {f"127.0.0.2:{sentinel.port}", f"db.allowed.test:{sentinel.port}"}
            assert any("internal address (loopback 127.0.0.2)" in r.reason for r in proxy.refused)
            assert proxy.connections == 0
            return answers

    answers = asyncio.run(run())
    assert [a.split(b" ", 2)[1] for a in answers] == [b"403", b"403", b"403", b"403", b"400", b"400"]
    assert sentinel.seen()["accepts"] == 0


def test_allowed_requests_keep_their_framing_and_connection(origin):
    port, accepts = origin

    async def run() -> list[bytes]:
        async with EgressProxy(_policy()) as proxy:
            url = f"http://allowed.test:{port}"
            return await _exchange(
                proxy.port,
                f"GET {url}/a?q=1 HTTP/1.1\r\nHost: allowed.test:{port}\r\nProxy-Connection: keep-alive\r\n\r\n"
                .encode(),
                f"POST {url}/p HTTP/1.1\r\nHost: allowed.test:{port}\r\nTransfer-Encoding: chunked\r\n\r\n"
                "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n".encode(),
                f"POST {url}/p HTTP/1.1\r\nHost: allowed.test:{port}\r\nContent-Length: 4\r\n\r\nbody".encode(),
            )

    answers = asyncio.run(run())
    assert answers[0].startswith(b"HTTP/1.1 200")
    assert answers[0].endswith(f"GET /a?q=1 host=allowed.test:{port}".encode())
    assert answers[1].endswith(b"POST hello world") and answers[2].endswith(b"POST body")
    assert accepts["n"] == 3  # one upstream connection per request, all on one browser connection


def test_connect_tunnels_to_the_checked_address(origin):
    port, _accepts = origin

    async def run() -> bytes:
        async with EgressProxy(_policy()) as proxy:
            reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
            writer.write(f"CONNECT allowed.test:{port} HTTP/1.1\r\nHost: allowed.test:{port}\r\n\r\n".encode())
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            assert head.startswith(b"HTTP/1.1 200")
            writer.write(b"GET /tunnelled HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n")
            data = await asyncio.wait_for(reader.read(), 10)
            writer.close()
            return data

    assert asyncio.run(run()).endswith(b"GET /tunnelled host=allowed.test")


class _RebindingGuard(NetGuard):
    """A resolver that answers a public-looking check first, then the internal address (DNS rebinding)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.answers = iter([["127.0.0.1"], ["127.0.0.2"], ["127.0.0.2"]])

    async def _lookup(self, host: str) -> list[str] | str:
        return next(self.answers)


def test_the_checked_address_is_pinned(origin, sentinel):
    """The proxy connects to the address the guard checked (its one cached answer), whatever the resolver says
    afterwards: a rebinding name never reaches the internal host."""
    port, accepts = origin
    guard = _RebindingGuard(["rebind.test"])
    policy = GuardPolicy(lambda url: "rebind.test" in url, guard)

    async def run() -> list[bytes]:
        async with EgressProxy(policy) as proxy:
            requests = [f"GET http://rebind.test:{port}/{n} HTTP/1.1\r\nHost: x\r\n\r\n".encode() for n in range(3)]
            return [(await _exchange(proxy.port, request))[0] for request in requests]

    answers = asyncio.run(run())
    assert all(a.endswith(f"GET /{n} host=x".encode()) for n, a in enumerate(answers))
    assert accepts["n"] == 3 and sentinel.seen()["accepts"] == 0


def test_a_replay_refuses_everything(origin):
    port, accepts = origin

    async def run() -> list[bytes]:
        async with EgressProxy(RefuseAll()) as proxy:
            get = f"GET http://allowed.test:{port}/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n".encode()
            connect = f"CONNECT allowed.test:{port} HTTP/1.1\r\nHost: allowed.test\r\n\r\n".encode()
            return await _exchange(proxy.port, get) + await _exchange(proxy.port, connect)

    assert [a.split(b" ", 2)[1] for a in asyncio.run(run())] == [b"403", b"403"]
    assert accepts["n"] == 0


def test_the_browser_flags_proxy_loopback_and_keep_webrtc_off_udp():
    args = egress_args("http://127.0.0.1:8123")
    assert "--proxy-server=http://127.0.0.1:8123" in args
    assert "--proxy-bypass-list=<-loopback>" in args  # else Chromium connects to loopback hosts directly
    assert "--force-webrtc-ip-handling-policy=disable_non_proxied_udp" in args
