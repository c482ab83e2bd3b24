"""Re-harvest without re-rendering what has not changed.

When a page is stored, its *fingerprint* is recorded with its harvest event: the sha256 of the document as
served (with its final URL, status, Content-Type and Last-Modified) and, with JavaScript on, the sha256 of
every script, XHR and fetch response of the main frame that had arrived when the page was read. A refresh
(``harvest(..., refresh=True)``) first fetches those same resources again, without a browser (live: the
document fetcher, with every check; replay: the HAR's own responses). When every hash is equal, the page
cannot have rendered differently from the same inputs, so it is not rendered again (event "skipped",
"unchanged since the last harvest") and its recorded links are followed; otherwise it is rendered and stored
as usual.

What this cannot see: text a script derives from the clock, randomness or the browser's state (none is kept
between harvests: every harvest starts a fresh context), and subresources that arrived after the page was
read (they did not shape the stored text). A page whose inputs cannot be fingerprinted (a non-GET request, a
response that never finished, too many of them) has no fingerprint and is always rendered.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
import time
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

__all__ = ["FINGERPRINT_VERSION", "DependencyWatch", "ReplayIndex", "fingerprint", "load_fingerprints", "unchanged"]

logger = logging.getLogger(__name__)

#: Bumped whenever extraction or chunking changes what a page's text would be: old fingerprints then never
#: match and every page is rendered again.
FINGERPRINT_VERSION = 1
_DEP_TYPES = ("script", "xhr", "fetch")
_MAX_DEPS = 200
_BODY_WAIT_S = 2.0
REFUSED = "refused"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class DependencyWatch:
    """Collects the main frame's script/XHR/fetch responses of one page visit (attach before navigating), and
    the requests brt itself refused (off the allowlist, an internal address, missing from the replay HAR):
    those are refused again next time, so they are inputs too ("refused")."""

    def __init__(self, page: Any, *, replay: bool = False):
        self.page = page
        self.replay = replay
        self.responses: list[Any] = []
        self.refused: set[str] = set()
        self.unusable: str | None = None  # why the visit cannot be fingerprinted

    def __enter__(self) -> DependencyWatch:
        self.page.on("response", self._on_response)
        self.page.on("requestfailed", self._on_failed)
        return self

    def __exit__(self, *exc: object) -> None:
        self.page.remove_listener("response", self._on_response)
        self.page.remove_listener("requestfailed", self._on_failed)

    def _is_dep(self, request: Any) -> bool:
        try:
            return request.resource_type in _DEP_TYPES and request.frame == self.page.main_frame
        except Exception:  # noqa: BLE001 - a frame that is gone
            return False

    def _on_response(self, response: Any) -> None:
        request = response.request
        if not self._is_dep(request):
            return
        if request.method != "GET":
            self.unusable = f"{request.method} {request.resource_type} request"
        if not 300 <= response.status < 400:  # a redirect's target is recorded under the chain's first URL
            self.responses.append(response)

    def _on_failed(self, request: Any) -> None:
        if not self._is_dep(request):
            return
        failure = request.failure or ""
        if "ERR_BLOCKED_BY_CLIENT" in failure or (self.replay and "ERR_FAILED" in failure):
            self.refused.add(request.url.split("#", 1)[0])  # brt's own refusal: the same next time
        elif self.unusable is None:
            # a network failure may well succeed next time: nothing to compare with
            self.unusable = f"{request.resource_type} request failed ({failure}): {request.url}"


async def fingerprint(
    response: Any, watch: DependencyWatch | None, *, final_url: str, selector: str | None, javascript: bool
) -> dict[str, Any] | None:
    """The fingerprint of a page just read, or None when it cannot be taken."""
    from playwright.async_api import Error as PlaywrightError

    if response is None:
        return None
    try:
        headers = await response.all_headers()
        doc = await asyncio.wait_for(response.body(), timeout=_BODY_WAIT_S)
    except (PlaywrightError, asyncio.TimeoutError) as exc:
        logger.debug("no fingerprint for %s: %s", final_url, exc)
        return None
    fp: dict[str, Any] = {
        "v": FINGERPRINT_VERSION,
        "url": response.url,
        "final_url": final_url,
        "status": response.status,
        "doc": _sha(doc),
        "meta": _meta(headers),
        "selector": selector,
        "javascript": javascript,
        "deps": {},
    }
    if not javascript or watch is None:
        return fp
    if watch.unusable is not None or len(watch.responses) > _MAX_DEPS:
        logger.debug("no fingerprint for %s: %s", final_url, watch.unusable or "too many scripts and requests")
        return None
    deps = {r.url.split("#", 1)[0]: r for r in watch.responses}

    async def body(r: Any) -> bytes:
        return await r.body()

    def first_url(r: Any) -> str:
        request = r.request
        while request.redirected_from is not None:
            request = request.redirected_from
        return request.url.split("#", 1)[0]

    try:
        bodies = await asyncio.wait_for(
            asyncio.gather(*(body(r) for r in deps.values())), timeout=_BODY_WAIT_S
        )
    except (PlaywrightError, asyncio.TimeoutError) as exc:
        logger.debug("no fingerprint for %s: a script or request body is unavailable (%s)", final_url, exc)
        return None
    fp["deps"] = {url: [r.status, _sha(b)] for (url, r), b in zip(deps.items(), bodies, strict=True)}
    for r, b in zip(deps.values(), bodies, strict=True):
        fp["deps"].setdefault(first_url(r), [r.status, _sha(b)])  # fetched again, the chain must end the same
    for url in watch.refused:
        fp["deps"].setdefault(url, [None, REFUSED])
    return fp


def _meta(headers: dict[str, str]) -> dict[str, str]:
    """The response headers that reach the stored record (content type, Last-Modified for last_updated)."""
    out = {}
    for key in ("content-type", "last-modified"):
        for name, value in headers.items():
            if name.lower() == key:
                out[key] = value
    return out


def load_fingerprints(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """URL (requested and final) -> the newest fingerprint among stored or unchanged pages' events."""
    out: dict[str, dict[str, Any]] = {}
    for e in events:
        fp = e.get("fingerprint")
        if e.get("type", "harvest_event") != "harvest_event" or not isinstance(fp, dict):
            continue
        if e.get("outcome") == "stored" or e.get("unchanged"):
            for key in (e.get("url"), e.get("final_url")):
                if key:
                    out[key] = fp
    return out


async def unchanged(h: Any, url: str, fp: dict[str, Any], deadline: float) -> bool:
    """True when the page's document and every recorded script/XHR response are byte-identical now."""
    if fp.get("v") != FINGERPRINT_VERSION or fp.get("javascript") != bool(h.settings.javascript):
        return False
    from urllib.parse import urlsplit

    if fp.get("selector") != h.charter.selector_for(urlsplit(fp.get("final_url") or url).hostname):
        return False
    source = h.replay_index if h.replay is not None else _LiveSource(h.session.fetcher)
    doc = await source.get(url, deadline)
    if doc is None or doc[0] != fp.get("status") or doc[1] != fp.get("doc") or doc[2] != fp.get("meta"):
        return False
    if doc[3] != fp.get("url"):  # the redirects now end elsewhere
        return False
    deps: dict[str, list[Any]] = fp.get("deps") or {}
    refused = [url for url, expected in deps.items() if list(expected)[1:] == [REFUSED]]
    for url in refused:
        if not await _still_refused(h, url):
            return False
    fetched = [url for url in deps if url not in refused]
    results = await asyncio.gather(*(source.get(dep, deadline) for dep in fetched))
    return all(
        got is not None and [got[0], got[1]] == list(deps[url]) for url, got in zip(fetched, results, strict=True)
    )


async def _still_refused(h: Any, url: str) -> bool:
    """Would brt refuse this request again (allowlist, internal address, missing from the replay HAR)?"""
    if not h.charter.allows(url):
        return True
    if h.replay is not None:
        return url.split("#", 1)[0] not in h.replay_index.entries
    guard = getattr(h.session, "guard", None)
    return guard is not None and await guard.check(url) is not None


class _LiveSource:
    """Resources fetched again with the document fetcher (allowlist, SSRF and byte cap as for navigations)."""

    def __init__(self, fetcher: Any):
        self.fetcher = fetcher

    async def get(self, url: str, deadline: float) -> tuple[int | None, str, dict[str, str], str] | None:
        if self.fetcher is None:
            return None
        result = await self.fetcher.fetch(url, deadline=deadline)
        if result.kind != "ok":
            return None
        return result.status, _sha(result.body), _meta(dict(result.headers)), result.url


class ReplayIndex:
    """The replay HAR's responses by URL (the first entry of a URL, as Playwright's HAR router serves it),
    hashed, with recorded redirects followed."""

    def __init__(self, har: Path):
        self.entries: dict[str, tuple[int, str, dict[str, str], str | None]] = {}
        data = json.loads(Path(har).read_text(encoding="utf-8"))
        for entry in data.get("log", {}).get("entries", []):
            try:
                request, response = entry["request"], entry["response"]
                url = str(request["url"]).split("#", 1)[0]
                if url in self.entries or request.get("method", "GET") != "GET":
                    continue
                status = int(response.get("status") or 0)
                headers = {str(h["name"]).lower(): str(h["value"]) for h in response.get("headers", [])}
                content = response.get("content") or {}
                text = content.get("text") or ""
                body = base64.b64decode(text) if content.get("encoding") == "base64" else text.encode("utf-8")
                location = response.get("redirectURL") or headers.get("location")
                target = urljoin(url, location) if 300 <= status < 400 and location else None
                self.entries[url] = (status, _sha(body), _meta(headers), target)
            except (KeyError, TypeError, ValueError) as exc:
                logger.debug("replay index: skipping an entry: %s", exc)

    async def get(self, url: str, deadline: float) -> tuple[int | None, str, dict[str, str], str] | None:
        current = url.split("#", 1)[0]
        for _ in range(11):
            if time.monotonic() > deadline:
                return None
            entry = self.entries.get(current)
            if entry is None:
                return None
            status, sha, meta, target = entry
            if target is None:
                return status, sha, meta, current
            current = target.split("#", 1)[0]
        return None
