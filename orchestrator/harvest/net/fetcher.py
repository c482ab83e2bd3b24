"""Documents fetched by brt itself, not by the browser's network stack, so that every limit holds while the
bytes arrive:

- every redirect hop is checked (allowlist, scheme, internal address) before anything is sent to it;
- the connection goes to the address the SSRF guard checked (the DNS answer is pinned: a rebinding resolver
  cannot swap in an internal address between the check and the connection);
- the decoded size is counted as the body streams in and the read stops past the byte cap, so a gzip bomb is
  inflated only up to the cap (``Accept-Encoding`` offers gzip and deflate only, decoded here in bounded steps);
- the read stops at the page's deadline: a server that never answers or trickles is abandoned, and a document
  that never ends is cut there and handed to the browser as it stands (its DOM is what a reader would see).

    fetcher = DocumentFetcher(guard, allowed, max_bytes=20_000_000)
    result = await fetcher.fetch("https://example.com/", deadline=time.monotonic() + 30)
    result.kind   -> "ok" | "partial" | "blocked" | "too large" | "timeout" | "error"

``readers/playwright/routes.route_navigation`` uses it for every navigation of a live harvest; the PDF path and
the refresh check (``revalidate.py``) use it directly.
"""

from __future__ import annotations

import asyncio
import logging
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from memory_store.errors import BrtException

from ... import url_safety

__all__ = ["BodyTooLarge", "DocumentFetcher", "FetchResult", "StreamDecoder"]

logger = logging.getLogger(__name__)

FetchKind = Literal["ok", "partial", "blocked", "too large", "timeout", "error"]

MAX_REDIRECTS = 10
_INFLATE_STEP = 1_048_576  # decoded bytes produced per decompress call (bounds memory per step)
# Request headers the browser sets that must not be forwarded as they are (we speak HTTP/1.1 ourselves).
_DROP_REQUEST = {"host", "content-length", "accept-encoding", "connection", "keep-alive", "transfer-encoding",
                 "upgrade", "te", "proxy-connection"}
# Response headers that describe the encoded transfer, not the decoded body handed to the browser.
_DROP_RESPONSE = {"content-encoding", "content-length", "transfer-encoding", "connection", "keep-alive"}


_ORIGIN_BOUND = {"cookie", "authorization", "proxy-authorization"}


def _origin(url: str) -> tuple[str, str, int | None] | None:
    parsed = url_safety.parse(url)
    return parsed.origin if parsed is not None else None


class BodyTooLarge(BrtException):
    """The decoded body passed the byte cap."""


@dataclass
class FetchResult:
    """What one fetch (with its redirect hops) came to."""

    kind: FetchKind
    url: str  # the last URL requested (the final one after redirects)
    status: int | None = None
    status_text: str = ""
    headers: list[tuple[str, str]] = field(default_factory=list)  # decoded-body headers, in order
    body: bytes = b""
    reason: str | None = None  # why it is not "ok"
    hops: list[str] = field(default_factory=list)  # every URL requested, in order
    elapsed_s: float = 0.0
    # set by netguard.route_navigation when the browser's navigation was cancelled after a checked redirect
    # chain: the final URL the harvest then navigates to (answered from this result)
    redirected_to: str | None = None

    def header(self, name: str) -> str | None:
        name = name.lower()
        return next((v for k, v in self.headers if k.lower() == name), None)

    @property
    def content_type(self) -> str | None:
        value = self.header("content-type")
        return value.split(";", 1)[0].strip().lower() or None if value else None


class StreamDecoder:
    """Incremental Content-Encoding decoder (identity, gzip, x-gzip, deflate) that raises BodyTooLarge as soon
    as the decoded size passes ``max_bytes``, inflating at most ``_INFLATE_STEP`` bytes per step."""

    def __init__(self, encoding: str | None, max_bytes: int):
        self.encoding = (encoding or "identity").strip().lower()
        if self.encoding not in ("identity", "gzip", "x-gzip", "deflate", ""):
            raise ValueError(f"unsupported content encoding {encoding!r}")
        self.max_bytes = max_bytes
        self.size = 0
        self.parts: list[bytes] = []
        self._z: Any = None
        if self.encoding in ("gzip", "x-gzip", "deflate"):
            self._z = zlib.decompressobj(47)  # 32 + 15: gzip or zlib header, detected
        self._raw_deflate_tried = False

    def feed(self, data: bytes) -> None:
        if self._z is None:
            self._add(data)
            return
        while data:
            try:
                out = self._z.decompress(data, _INFLATE_STEP)
            except zlib.error:
                if self.encoding == "deflate" and not self._raw_deflate_tried and self.size == 0:
                    self._raw_deflate_tried = True  # "deflate" sent without the zlib header
                    self._z = zlib.decompressobj(-15)
                    continue
                raise
            self._add(out)
            if self._z.eof and self._z.unused_data:  # concatenated gzip members
                data = self._z.unused_data
                self._z = zlib.decompressobj(47)
                continue
            data = self._z.unconsumed_tail

    def _add(self, out: bytes) -> None:
        if not out:
            return
        self.size += len(out)
        if self.size > self.max_bytes:
            raise BodyTooLarge(self.size)
        self.parts.append(out)

    def body(self) -> bytes:
        return b"".join(self.parts)


class DocumentFetcher:
    """Fetch one document with the checks above. ``allowed(url)`` is the charter's allowlist; ``guard`` the
    SSRF guard (``guard.NetGuard``) whose DNS answers are also the addresses connected to."""

    def __init__(
        self,
        guard: Any,
        allowed: Callable[[str], bool],
        *,
        max_bytes: int = 20_000_000,
        render_margin_s: float = 1.5,
        user_agent: str | None = None,
    ):
        self.guard = guard
        self.allowed = allowed
        self.max_bytes = int(max_bytes)
        self.render_margin_s = render_margin_s
        self.user_agent = user_agent
        self._client: Any = None
        self._stash: dict[str, tuple[float, FetchResult]] = {}

    def stash(self, url: str, result: FetchResult, ttl_s: float = 30.0) -> None:
        """Keep ``result`` for the browser's next request of ``url`` (the final URL of a checked redirect
        chain), so that document is not fetched twice."""
        now = time.monotonic()
        self._stash = {u: v for u, v in self._stash.items() if v[0] > now}
        self._stash[url] = (now + ttl_s, result)

    def take(self, url: str) -> FetchResult | None:
        """The stashed result for ``url`` (once), or None."""
        entry = self._stash.pop(url, None) or self._stash.pop(url_safety.normalize(url) or url, None)
        if entry is None or entry[0] < time.monotonic():
            return None
        return entry[1]

    def _http(self) -> Any:
        if self._client is None:
            import httpx

            # The bare transport: no redirect handling (httpx's client parses every Location, even ones we
            # refuse), no proxy from the environment (the guard judged the real destination), no timeouts
            # of its own (deadlines are enforced around each step).
            self._client = httpx.AsyncHTTPTransport(http2=False, retries=0)
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def read_deadline(self, deadline: float, timeout_s: float) -> float:
        """When to stop reading a document that is still arriving, leaving the browser time to render it."""
        return deadline - min(self.render_margin_s, 0.3 * timeout_s)

    async def fetch(
        self,
        url: str,
        *,
        deadline: float,
        method: str = "GET",
        headers: dict[str, str] | None = None,
        body: bytes | None = None,
        partial_ok_after: float | None = None,
        max_bytes: int | None = None,
    ) -> FetchResult:
        """Fetch ``url`` following at most ``MAX_REDIRECTS`` checked redirects. The body is read until
        ``deadline``; when ``partial_ok_after`` is given and passed while a 2xx body is still arriving, the
        bytes so far are returned as kind "partial" instead of a timeout."""
        started = time.monotonic()
        result = FetchResult(kind="error", url=url)
        # security (issue 11): every hop is the WHATWG serialisation of what is checked and requested
        current, verb, payload = url_safety.normalize(url) or url, method.upper(), body
        cap = self.max_bytes if max_bytes is None else int(max_bytes)
        try:
            for _hop in range(MAX_REDIRECTS + 1):
                refused = await self._check(current)
                if refused is not None:
                    result.kind, result.url, result.reason = "blocked", current, refused
                    return result
                result.hops.append(current)
                result.url = current
                outcome = await self._one(
                    current, verb, headers, payload, deadline, partial_ok_after, cap, result, started
                )
                if outcome is None:  # a redirect to follow
                    location = result.header("location") or ""
                    target = url_safety.join(current, location)  # as the browser would resolve it
                    if target is None:
                        result.kind, result.reason = "blocked", "unparsable redirect target"
                        return result
                    if result.status == 303 or (result.status in (301, 302) and verb == "POST"):
                        verb, payload = "GET", None
                    if _origin(target) != _origin(current) and headers:
                        # the browser's cookies and credentials were meant for the first origin only
                        headers = {k: v for k, v in headers.items() if k.lower() not in _ORIGIN_BOUND}
                    current = target
                    continue
                return result
            result.kind, result.reason = "error", f"more than {MAX_REDIRECTS} redirects"
            return result
        finally:
            result.elapsed_s = time.monotonic() - started

    async def _check(self, url: str) -> str | None:
        refused = url_safety.web_refusal(url)  # the one scheme rule: http(s), a host, no userinfo
        if refused is not None:
            return refused
        if not self.allowed(url):
            return "not on allowed_domains"
        if self.guard is not None:
            return await self.guard.check(url)
        return None

    async def _one(
        self,
        url: str,
        method: str,
        headers: dict[str, str] | None,
        body: bytes | None,
        deadline: float,
        partial_ok_after: float | None,
        cap: int,
        result: FetchResult,
        started: float,
    ) -> bool | None:
        """One request; fills ``result``. Returns None when the response is a redirect to follow."""
        import httpx

        try:
            request = await self._build(url, method, headers, body)
        except ValueError as exc:
            result.kind, result.reason = "blocked", str(exc)
            return True
        client = self._http()
        response = None
        if partial_ok_after is not None:
            deadline = min(deadline, partial_ok_after)  # nothing after it: the browser needs the rest to render
        try:
            response = await _within(client.handle_async_request(request), deadline)
            result.status = response.status_code
            phrase = response.extensions.get("reason_phrase", b"")
            result.status_text = phrase.decode("latin-1", "replace") if isinstance(phrase, bytes) else ""
            result.headers = [
                (k.decode("latin-1"), v.decode("latin-1"))
                for k, v in response.headers.raw
                if k.decode("latin-1").lower() not in _DROP_RESPONSE
            ]
            if 300 <= response.status_code < 400 and response.headers.get("location"):
                return None
            length = response.headers.get("content-length")
            encoding = response.headers.get("content-encoding")
            if length and length.isdigit() and int(length) > cap and not encoding:
                result.kind, result.reason = "too large", f"too large ({length} bytes, cap {cap})"
                return True
            try:
                decoder = StreamDecoder(encoding, cap)
            except ValueError as exc:
                result.kind, result.reason = "error", str(exc)
                return True
            stream = response.stream.__aiter__()
            while True:
                try:
                    chunk = await _within(stream.__anext__(), deadline)
                except StopAsyncIteration:
                    break
                except asyncio.TimeoutError:
                    if partial_ok_after is not None and 200 <= response.status_code < 300:
                        result.body = decoder.body()
                        result.kind = "partial"
                        result.reason = (
                            f"the response was still arriving after {time.monotonic() - started:.1f}s "
                            f"({decoder.size} bytes read); taken as it stood"
                        )
                        return True
                    raise
                decoder.feed(chunk)
            result.body = decoder.body()
            result.kind = "ok"
            return True
        except BodyTooLarge as exc:
            result.kind, result.reason = "too large", f"too large (more than {cap} bytes decoded, cap {cap})"
            logger.info("%s: stopped reading at %s decoded bytes (cap %d)", url, exc.args[0], cap)
            return True
        except asyncio.TimeoutError:
            result.kind = "timeout"
            got = "no response" if result.status is None else f"HTTP {result.status}, body incomplete"
            result.reason = f"timed out ({got})"
            return True
        except zlib.error as exc:
            result.kind, result.reason = "error", f"cannot decode the {encoding} body: {exc}"
            return True
        except httpx.HTTPError as exc:
            result.kind, result.reason = "error", _network_reason(exc)
            return True
        finally:
            if response is not None:
                await _close_quietly(response)

    async def _build(self, url: str, method: str, headers: dict[str, str] | None, body: bytes | None) -> Any:
        """The request, sent to the address the guard checked (Host header and TLS SNI keep the name). Built
        from the WHATWG parse of ``url`` (the one that was checked), never from another parser's reading."""
        parts = url_safety.parse(url)
        if parts is None:
            raise ValueError(f"unparsable URL {url!r}")
        host = parts.hostname
        send_headers: dict[str, str] = {}
        for k, v in (headers or {}).items():
            if not k.startswith(":") and k.lower() not in _DROP_REQUEST:
                send_headers[k] = v
        if self.user_agent and not any(k.lower() == "user-agent" for k in send_headers):
            send_headers["User-Agent"] = self.user_agent
        send_headers["Accept-Encoding"] = "gzip, deflate"
        extensions: dict[str, Any] = {}
        address = await self._pinned(host)
        connect_to = parts.host
        if address is not None:
            send_headers["Host"] = parts.netloc
            connect_to = f"[{address}]" if ":" in address else address
            if parts.scheme == "https":
                extensions["sni_hostname"] = host
        port = f":{parts.port}" if parts.port is not None else ""
        target = f"{parts.scheme}://{connect_to}{port}{parts.path or '/'}{parts.query}"
        import httpx

        request = httpx.Request(method, target, headers=send_headers, content=body, extensions=extensions)
        if request.url.host.lower().strip("[]") != connect_to.lower().strip("[]"):
            # httpx must connect to the host that was checked; anything else is a parser differential
            raise ValueError(f"refusing {url!r}: the HTTP client reads another host ({request.url.host})")
        return request

    async def _pinned(self, host: str) -> str | None:
        if self.guard is None or not host:
            return None
        try:
            addresses = await self.guard.resolve(host)
        except OSError:
            return None  # let the client resolve it and fail with its own error
        if not addresses or addresses == [host.strip("[]")]:
            return None  # an IP literal already
        return addresses[0]


async def _within(awaitable: Any, deadline: float) -> Any:
    return await asyncio.wait_for(awaitable, timeout=max(0.0, deadline - time.monotonic()))


async def _close_quietly(response: Any) -> None:
    try:
        await asyncio.wait_for(response.aclose(), timeout=2)
    except Exception:  # noqa: BLE001 - a half-read stream of a server we gave up on
        pass


def _network_reason(exc: Exception) -> str:
    """Chromium-style net error names for httpx errors, so retries treat them as network errors."""
    import httpx

    text = str(exc) or type(exc).__name__
    if isinstance(exc, httpx.ConnectError):
        if "refused" in text.lower():
            return f"net::ERR_CONNECTION_REFUSED ({text})"
        if "name" in text.lower() or "resolve" in text.lower() or "getaddrinfo" in text.lower():
            return f"net::ERR_NAME_NOT_RESOLVED ({text})"
        return f"net::ERR_CONNECTION_FAILED ({text})"
    if isinstance(exc, httpx.RemoteProtocolError):
        code = "EMPTY_RESPONSE" if "without sending" in text else "CONNECTION_CLOSED"
        return f"net::ERR_{code} ({text})"
    if isinstance(exc, httpx.ReadError | httpx.WriteError):
        return f"net::ERR_CONNECTION_RESET ({text})"
    if isinstance(exc, httpx.TimeoutException):
        return "timed out (no response)"
    return f"net::ERR_FAILED ({type(exc).__name__}: {text})"
