"""Re-harvest without re-rendering what has not changed.

When a page is stored, its *fingerprint* is recorded with its harvest event: the sha256 of the document as
served (with its final URL, status, Content-Type and Last-Modified) and, with JavaScript on, the sha256 of
every script, XHR and fetch response of the main frame that had arrived when the page was read. A refresh
(``harvest(..., refresh=True)``) first fetches those same resources again, without a browser (live: the
document fetcher, with every check; replay: the HAR's own responses). When every hash is equal, the page
cannot have rendered differently from the same inputs, so it is not rendered again (event "skipped",
"unchanged since the last harvest") and its recorded links are followed; otherwise it is rendered and stored
as usual. A page read from its served HTML (``static.py``) has its document as its only input; the charter's
``harvest.render`` is part of every fingerprint (a page is read again when it changes).

What this cannot see: text a script derives from the clock, randomness or the browser's state (none is kept
between harvests: every harvest starts a fresh context), and subresources that arrived after the page was
read (they did not shape the stored text). A page whose inputs cannot be fingerprinted (a non-GET request, a
response that never finished, too many of them) has no fingerprint and is always rendered.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import url_safety
from ..errors import NavigationRefused, RequestFailed, error_kind
from .har import ReplayIndex, fingerprint_headers, sha256_hex

if TYPE_CHECKING:
    from ..charter import Charter
    from ..egress import EgressPolicy
    from .net.fetcher import DocumentFetcher
    from .net.guard import NetGuard

__all__ = [
    "FINGERPRINT_VERSION",
    "DependencyWatch",
    "Revalidator",
    "fingerprint",
    "load_fingerprints",
]

logger = logging.getLogger(__name__)

#: Bumped whenever extraction or chunking changes what a page's text would be: old fingerprints then never
#: match and every page is rendered again.
FINGERPRINT_VERSION = 1
_DEP_TYPES = ("script", "xhr", "fetch")
_MAX_DEPS = 200
_BODY_WAIT_S = 2.0
REFUSED = "refused"


class DependencyWatch:
    """Collects the main frame's script/XHR/fetch responses of one page visit (attach before navigating), and
    the requests brt itself refused (off the allowlist, an internal address, missing from the replay HAR):
    those are refused again next time, so they are inputs too ("refused")."""

    def __init__(self, page: Any, *, replay: bool = False, allowed: Callable[[str], bool] | None = None):
        self.page = page
        self.replay = replay
        self.allowed = allowed
        self.responses: list[Any] = []
        self.refused: set[str] = set()
        self.unusable: str | None = None  # why the visit cannot be fingerprinted
        # Live, bodies are asked for as soon as each response arrives: once a script tries to navigate the
        # tab away (even a navigation brt cancels), Chromium no longer hands out earlier responses' bodies.
        # (The document's own body is the one brt fetched itself.)
        self._bodies: dict[int, asyncio.Task[bytes]] = {}

    def __enter__(self) -> DependencyWatch:
        self.page.on("response", self._on_response)
        self.page.on("requestfailed", self._on_failed)
        return self

    def __exit__(self, *exc: object) -> None:
        self.page.remove_listener("response", self._on_response)
        self.page.remove_listener("requestfailed", self._on_failed)
        for task in self._bodies.values():
            task.cancel()

    def _want_body(self, response: Any) -> None:
        task = asyncio.get_running_loop().create_task(response.body())
        task.add_done_callback(lambda t: t.cancelled() or t.exception())  # retrieved: no "never retrieved"
        self._bodies[id(response)] = task

    async def body(self, response: Any) -> bytes:
        """The body of a response seen by this watch (asked for when it arrived)."""
        task = self._bodies.get(id(response))
        return await (task if task is not None else response.body())

    def _is_dep(self, request: Any) -> bool:
        try:
            return request.resource_type in _DEP_TYPES and request.frame == self.page.main_frame
        except Exception:  # noqa: BLE001 - a frame that is gone
            return False

    def _on_response(self, response: Any) -> None:
        request = response.request
        redirect = 300 <= response.status < 400
        if not self._is_dep(request):
            return
        if request.method != "GET":
            self.unusable = f"{request.method} {request.resource_type} request"
        if not redirect:  # a redirect's target is recorded under the chain's first URL
            self.responses.append(response)
            if not self.replay:  # with --replay the HAR holds every body already (ReplayIndex)
                self._want_body(response)

    def _on_failed(self, request: Any) -> None:
        if not self._is_dep(request):
            return
        failure = request.failure or ""
        off_allowlist = self.allowed is not None and not self.allowed(request.url)
        if (
            off_allowlist  # refused by brt whenever the page asks for it (whatever the failure reported)
            or error_kind(failure) is NavigationRefused  # brt's own refusal: the same next time
            or (self.replay and error_kind(failure) is RequestFailed)  # missing from the replay HAR
            or failure in ("mixed-content", "csp")  # the browser's, decided by the page's own URL and headers
        ):
            self.refused.add(request.url.split("#", 1)[0])
        elif self.unusable is None:
            # a network failure may well succeed next time: nothing to compare with
            self.unusable = f"{request.resource_type} request failed ({failure}): {request.url}"


async def fingerprint(
    response: Any,
    watch: DependencyWatch | None,
    *,
    final_url: str,
    selector: str | None,
    javascript: bool,
    known: Callable[[str], str | None] | None = None,
) -> dict[str, Any] | None:
    """The fingerprint of a page just read, or None when it cannot be taken. ``known(url)`` gives the sha256
    of a body brt already holds (the document it fetched itself, or the replay HAR's response) so the
    browser is asked only for the others."""
    from playwright.async_api import Error as PlaywrightError

    if response is None:
        return None
    known = known or (lambda _url: None)

    async def sha_of(r: Any) -> str:
        held = known(r.url.split("#", 1)[0])
        if held is not None:
            return held
        try:
            return sha256_hex(await (watch.body(r) if watch is not None else r.body()))
        except PlaywrightError as exc:
            raise PlaywrightError(f"{r.url}: {exc}") from exc

    deps: dict[str, Any] = {}
    if javascript and watch is not None:
        if watch.unusable is not None or len(watch.responses) > _MAX_DEPS:
            logger.debug("no fingerprint for %s: %s", final_url, watch.unusable or "too many scripts and requests")
            return None
        deps = {r.url.split("#", 1)[0]: r for r in watch.responses}
    try:
        headers = await response.all_headers()
        shas = await asyncio.wait_for(
            asyncio.gather(sha_of(response), *(sha_of(r) for r in deps.values())), timeout=_BODY_WAIT_S
        )
    except (PlaywrightError, asyncio.TimeoutError) as exc:
        logger.debug("no fingerprint for %s: a body is unavailable (%s)", final_url, exc)
        return None
    fp: dict[str, Any] = {
        "v": FINGERPRINT_VERSION,
        "url": response.url,
        "final_url": final_url,
        "status": response.status,
        "doc": shas[0],
        "meta": fingerprint_headers(headers),
        "selector": selector,
        "javascript": javascript,
        "deps": {url: [r.status, sha] for (url, r), sha in zip(deps.items(), shas[1:], strict=True)},
    }
    for r, sha in zip(deps.values(), shas[1:], strict=True):
        fp["deps"].setdefault(_first_url(r), [r.status, sha])  # fetched again, the chain must end the same
    if watch is not None and javascript:
        for url in watch.refused:
            fp["deps"].setdefault(url, [None, REFUSED])
    return fp


def _first_url(response: Any) -> str:
    request = response.request
    while request.redirected_from is not None:
        request = request.redirected_from
    return request.url.split("#", 1)[0]


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


@dataclass
class Revalidator:
    """Decides whether a stored page's inputs are unchanged, fetching them again without a browser: live with
    the document ``fetcher`` (allowlist, SSRF ``guard`` and byte cap as for navigations), in a replay from the
    ``replay_index``."""

    charter: Charter
    javascript: bool
    egress: EgressPolicy  # the run's: brt's own refusals of the page's requests still hold
    fetcher: DocumentFetcher | None = None
    guard: NetGuard | None = None
    replay_index: ReplayIndex | None = None

    async def what_changed(self, url: str, fp: dict[str, Any], deadline: float) -> str | None:
        """None when the page's document and every recorded script/XHR response are byte-identical now (and
        brt's own refusals still hold); else what differs."""
        if fp.get("v") != FINGERPRINT_VERSION:
            return "fingerprint from another brt version"
        if fp.get("javascript") != bool(self.javascript):
            return "javascript setting"
        if fp.get("render", "always") != self.charter.harvest.render:  # none: a rendered page's
            return "render setting"
        if fp.get("selector") != self.charter.selector_for(url_safety.hostname(fp.get("final_url") or url)):
            return "selector"
        source = self.replay_index if self.replay_index is not None else _LiveSource(self.fetcher)
        doc = await source.get(url, deadline)
        if doc is None:
            return "document unavailable"
        if doc[0] != fp.get("status") or doc[3] != fp.get("url"):
            return f"document now HTTP {doc[0]} at {doc[3]}"
        if doc[1] != fp.get("doc") or doc[2] != fp.get("meta"):
            return "document"
        deps: dict[str, list[Any]] = fp.get("deps") or {}
        refused = [dep for dep, expected in deps.items() if list(expected)[1:] == [REFUSED]]
        for dep in refused:
            if not await self._still_refused(dep):
                return f"{dep} is no longer refused"
        fetched = [dep for dep in deps if dep not in refused]
        results = await asyncio.gather(*(source.get(dep, deadline) for dep in fetched))
        for dep, got in zip(fetched, results, strict=True):
            if got is None or [got[0], got[1]] != list(deps[dep]):
                return dep
        return None

    async def _still_refused(self, url: str) -> bool:
        """Would brt refuse this request again (allowlist, internal address, missing from the replay HAR)?"""
        if not self.egress.permits(url):
            return True
        if self.replay_index is not None:
            return url.split("#", 1)[0] not in self.replay_index.entries
        return self.guard is not None and await self.guard.check(url) is not None


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
        return result.status, sha256_hex(result.body), fingerprint_headers(dict(result.headers)), result.url
