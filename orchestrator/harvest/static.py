"""Static-first reading (``harvest.render``): a page is read from the HTML the server sent, fetched by brt's own
document fetcher (every redirect hop checked, the address pinned, the byte cap and the deadline held:
``net/fetcher.py``) or served by the replay HAR, and rendered in the browser only when it needs it.

- ``render: always``: every page is rendered (this module does nothing);
- ``render: never``: every HTML page is read from its served HTML;
- ``render: auto`` (the default): the served HTML is extracted first, and ``render_need.decide`` says, from
  measured signals, whether the browser would show more; only then is the page rendered.

A page read this way goes through the same tail as a rendered one (``reader.ReadingHost.extract_and_queue``: size
cap, duplicate check, max_pages, the writer), its links come from the same HTML as its text, its fingerprint is its
document's (``--refresh``), and its HAR entry is the document as served (a replay serves it again, ``brt verify``
finds its body). Anything the static path does not read itself is left to the browser, which reads it as it
always did, from the document already fetched (no second request): a fetch that failed, was refused or cut
short, a redirect without a target, a type other than HTML, a body over the cap. An error status settles the
event here ("HTTP 404"), as the browser path would.

The charter's setting and what was done are recorded in each event: ``render``, ``rendered``, and with ``auto``
the ``render_reasons`` and ``render_signals`` of the decision.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memory_store.clock import now

from .. import url_safety
from .extract import ExtractedPage, decode_html, extract_page, select_region
from .har import fingerprint_headers, har_document_entry, har_redirect_entry, sha256_hex
from .models import HTML_TYPES
from .net.fetcher import FetchResult
from .net.politeness import retry_after
from .net.urls import MAX_ANCHORS, canonical_url, links_in
from .reader import PageRead
from .render_need import RenderSignals, decide, measure
from .revalidate import FINGERPRINT_VERSION
from .workers import WorkLimit, in_worker

if TYPE_CHECKING:
    from .har import ReplayIndex
    from .models import HarvestEvent
    from .net.fetcher import DocumentFetcher
    from .net.guard import NetGuard
    from .reader import CrawlHost

__all__ = ["ACCEPT", "StaticSource", "read_static", "replay_fetch"]

logger = logging.getLogger(__name__)

#: The Accept header of a browser's navigation (what the document fetcher asks for when no browser asks).
ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


@dataclass
class StaticSource:
    """Where the static path gets a page's document, and where it records what it read: live, brt's document
    ``fetcher`` (with the browser's ``user_agent``); in a replay, the HAR's ``replay_index``, each hop of a
    recorded redirect chain judged by the allowlist and ``guard`` (the replay's offline guard: IP literals and
    resolver rules). ``har_entries`` receives the documents read without the browser (the reader's HAR gets
    them when it is written)."""

    fetcher: DocumentFetcher | None = None
    replay_index: ReplayIndex | None = None
    har_entries: list[dict[str, Any]] | None = None
    user_agent: str | None = None
    guard: NetGuard | None = None


async def read_static(
    host: CrawlHost, event: HarvestEvent, source: StaticSource, deadline: float, t0: float
) -> tuple[list[str], bool] | None:
    """One attempt at ``event.url`` without the browser, as ``host.settings.render`` says. Returns the settled
    attempt (links, whether the page went to the writer), or None when the browser is to render the page (live,
    the fetched document is then kept for the browser's navigation: it is not requested twice)."""
    mode = host.settings.render
    event.render = mode
    event.rendered = True
    if mode == "always" or (source.fetcher is None and source.replay_index is None):
        return None
    result = await _fetch(host, event.url, source, deadline)
    if result is None:
        return None  # the replay HAR has no HTML document for it: the browser replays it as it always did
    if result.kind == "ok" and result.status is not None and result.status >= 400:
        event.rendered = False
        event.final_url, event.status = result.url, result.status
        event.retry_after = retry_after(dict(result.headers))
        event.timings.fetch_s = time.monotonic() - t0
        host.finish(event, "failed", f"HTTP {result.status}")
        return [], False
    if not _is_html_document(result, host.max_page_bytes):
        _keep_for_browser(source, event.url, result)
        return None
    selector = host.charter.selector_for(url_safety.hostname(result.url))
    t1 = time.monotonic()
    # in a worker process: bounded in time and memory, and killed at a hard stop (max_duration_s)
    try:
        served = await in_worker(_read_served, result, selector, mode == "auto", limit_s=host.work_limit_s)
    except WorkLimit as exc:
        event.timings.extract_s += time.monotonic() - t1
        event.rendered = False
        event.final_url, event.status = result.url, result.status
        host.finish(event, "failed", f"extraction stopped: {exc}")
        return [], False
    event.timings.extract_s += time.monotonic() - t1
    if mode == "auto" and _needs_browser(event, served, selector, host.settings.javascript):
        _keep_for_browser(source, event.url, result)
        return None
    event.rendered = False
    return await _queue(host, event, source, result, served, selector, t0)


@dataclass
class _Served:
    """The served HTML of a page as the static path reads it."""

    html: str
    region_html: str | None  # the charter's selector region, when it matched
    extracted: ExtractedPage | None
    signals: RenderSignals | None  # measured for render: auto
    links: list[str]


def _read_served(result: FetchResult, selector: str | None, auto: bool) -> _Served:
    """Decode, extract (its selector's region when it matched, as ``ReadingHost.extract_read`` does), measure
    the render signals (``auto``) and read the links of a served document."""
    html = decode_html(result.body, dict(result.headers)) or ""
    region_html = select_region(html, selector) if selector else None
    headers = {k.lower(): v for k, v in result.headers}
    extracted = extract_page(
        html, result.url, headers=headers, region_html=region_html, selector=selector if region_html else None
    )
    signals = measure(html, extracted.text if extracted is not None else None) if auto else None
    return _Served(html, region_html, extracted, signals, links_in(html, result.url, limit=MAX_ANCHORS))


def _needs_browser(event: HarvestEvent, served: _Served, selector: str | None, javascript: bool) -> bool:
    """``render: auto``: the decision on the served HTML (its reasons and signals recorded in the event). With
    ``javascript: false`` a browser runs no script: only a meta refresh takes it elsewhere."""
    assert served.signals is not None
    reasons = list(decide(served.signals).reasons)
    if selector and served.region_html is None and served.signals.scripts:
        reasons.append("selector matched nothing in the served HTML")  # its scripts may build the region
    if not javascript:
        reasons = [r for r in reasons if r == "meta refresh"]
    event.render_reasons = reasons
    event.render_signals = served.signals.as_record()
    if reasons:
        logger.debug("%s needs the browser: %s", event.url, ", ".join(reasons))
    return bool(reasons)


async def _queue(
    host: CrawlHost,
    event: HarvestEvent,
    source: StaticSource,
    result: FetchResult,
    served: _Served,
    selector: str | None,
    t0: float,
) -> tuple[list[str], bool]:
    """The page read from its served HTML: recorded (HAR, fingerprint), then the host's tail."""
    final_url = result.url
    headers = {k.lower(): v for k, v in result.headers}
    event.final_url, event.status = final_url, result.status
    host.seen.add(canonical_url(final_url))
    _record_har(source, event.url, result)
    event.fingerprint = {
        "v": FINGERPRINT_VERSION,
        "url": final_url,
        "final_url": final_url,
        "status": result.status,
        "doc": sha256_hex(result.body),
        "meta": fingerprint_headers(headers),
        "selector": selector,
        "javascript": bool(host.settings.javascript),
        "deps": {},
    }
    read = PageRead(
        html=served.html,
        final_url=final_url,
        links=served.links,
        headers=headers,
        status=result.status,
        content_type=result.content_type,
        fetched_at=now(),
        selector=selector,
        region_html=served.region_html,
        extracted=served.extracted,
    )
    event.timings.fetch_s = time.monotonic() - t0 - event.timings.extract_s
    return await host.extract_and_queue(event, read)


def _is_html_document(result: FetchResult, cap: int) -> bool:
    """A whole 2xx HTML document under the byte cap: what the static path reads itself."""
    from .downloads import download_reason

    if result.kind != "ok" or result.status is None or not 200 <= result.status < 300 or len(result.body) > cap:
        return False
    headers = {k.lower(): v for k, v in result.headers}
    if download_reason(headers, result.body[:1024] if not result.content_type else None) is not None:
        return False
    return result.content_type is None or result.content_type in HTML_TYPES


def _keep_for_browser(source: StaticSource, url: str, result: FetchResult) -> None:
    """Live: hand the fetched document to the browser's navigation of ``url`` (answered from it, not fetched
    again). A replay's browser is served from the HAR."""
    if source.fetcher is not None:
        source.fetcher.stash(url_safety.normalize(url) or url, result)


def _record_har(source: StaticSource, url: str, result: FetchResult) -> None:
    """The document as served (and the redirect that led to it) into the reader's HAR."""
    if source.har_entries is None:
        return
    first = url_safety.normalize(url) or url
    if len(result.hops) > 1 and result.url != first:
        source.har_entries.append(har_redirect_entry("GET", first, result, result.url))
    source.har_entries.append(har_document_entry("GET", result))


async def _fetch(host: CrawlHost, url: str, source: StaticSource, deadline: float) -> FetchResult | None:
    """The document of ``url``: from the replay HAR, or fetched by brt's document fetcher."""
    if source.replay_index is not None:
        result = replay_fetch(source.replay_index, url, host.egress.permits)
        if result is not None and source.guard is not None:
            for hop in result.hops:
                if await source.guard.check(hop) is not None:
                    return None  # refused by the browser path's routes, which say why
        return result
    assert source.fetcher is not None
    headers = {"Accept": ACCEPT, "Accept-Language": "en-US,en;q=0.9"}
    if source.user_agent:
        headers["User-Agent"] = source.user_agent
    timeout_s = float(host.settings.timeout_s)
    return await source.fetcher.fetch(
        url,
        deadline=deadline,
        headers=headers,
        partial_ok_after=source.fetcher.read_deadline(deadline, timeout_s),
    )


def replay_fetch(index: ReplayIndex, url: str, allowed: Any) -> FetchResult | None:
    """The HTML document the replay HAR serves for ``url``, its recorded redirects followed with every hop
    checked against the allowlist (``allowed(url)``), as a ``FetchResult``. None when a hop is refused or the HAR
    holds no HTML document at the end of the chain: the browser path replays it as it always did (its routes
    refuse the hop and say why)."""
    current = url_safety.normalize(url) or url
    result = FetchResult(kind="ok", url=current)
    for _ in range(11):
        key = current.split("#", 1)[0]
        if key not in index.entries and url.split("#", 1)[0] in index.entries and not result.hops:
            key = current = url.split("#", 1)[0]  # the HAR holds the URL as written
        parts = url_safety.parse(current)
        if parts is None or parts.scheme not in ("http", "https") or not allowed(current):
            return None  # refused by the browser path's routes, which say why
        result.hops.append(current)
        result.url = current
        entry = index.entries.get(key)
        if entry is None:
            return None
        status, _sha, _meta, target = entry
        if target is None:
            document = index.documents.get(key)
            if document is None:
                return None
            result.status, result.headers, result.body = status, list(document[0]), document[1]
            return result
        current = url_safety.join(current, target) or target
    return None
