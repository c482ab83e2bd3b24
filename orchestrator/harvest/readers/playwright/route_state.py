"""What the routes of a harvest's browser contexts know and record (``RouteState``; ``BrowserSession`` extends
it), and what they ask of a request (its page, whether it is the main frame's, whether it leaves a loaded page).
Shared by the live routes (``routes.py``) and the replay's (``replay.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ....egress import EgressPolicy

if TYPE_CHECKING:
    from playwright.async_api import Request

    from ...net.fetcher import DocumentFetcher, FetchResult
    from ...net.guard import NetGuard

__all__ = ["BlockedRequest", "RouteState", "is_main_frame", "is_script_navigation", "leaves_loaded_page", "page_of"]


@dataclass
class BlockedRequest:
    """A request the allowlist (or a missing HAR entry) stopped."""

    url: str
    resource_type: str
    reason: str
    navigation: bool = False
    page: Any = field(default=None, repr=False, compare=False)  # the Playwright Page that made it, if known
    source: str | None = field(default=None, repr=False, compare=False)  # the navigation a refused hop stopped


@dataclass
class RouteState:
    """What the routes of one harvest's browser contexts know and record (kept across browser relaunches)."""

    replay: Path | None = None
    blocked: list[BlockedRequest] = field(default_factory=list)
    # With --replay: request URL -> its redirect targets in the HAR (checked before the HAR router follows them).
    replay_redirects: dict[str, list[str]] = field(default_factory=dict)
    # With --replay: every URL the HAR holds (fragment dropped), and the URLs brt itself is navigating to now.
    replay_urls: set[str] | None = None
    # With --replay: the URLs the HAR answers with an error status (4xx/5xx).
    replay_errors: set[str] = field(default_factory=set)
    expected_navigations: set[str] = field(default_factory=set)
    # SSRF guard (net/guard.py): internal addresses refused on every request; None with --replay.
    guard: NetGuard | None = None
    # Live mode: navigations are fetched by brt (net/fetcher.py) under the page's deadline and the byte cap.
    # The reader sets a page's deadline before it navigates and reads the page's last result after.
    fetcher: DocumentFetcher | None = None
    nav_deadlines: dict[Any, tuple[float, float]] = field(default_factory=dict)  # page -> (deadline, timeout_s)
    nav_results: dict[Any, FetchResult] = field(default_factory=dict)  # page -> result of its last navigation
    default_timeout_s: float = 30.0
    # Refused redirects (the browser never saw them), added to the context's HAR when it closes.
    har_extra: list[dict[str, Any]] = field(default_factory=list)
    # Text mode: subresource types aborted before they are requested (charter harvest.block_resources), and
    # what was aborted, as (page, resource type), in order (the reader counts each page's share).
    block_resources: frozenset[str] = frozenset()
    aborted: list[tuple[Any, str]] = field(default_factory=list)


def is_main_frame(request: Any) -> bool:
    try:
        return request.frame.parent_frame is None
    except Exception:  # noqa: BLE001 - a frame that is gone
        return False


def is_script_navigation(state: RouteState, request: Any, egress: EgressPolicy) -> bool:
    """A navigation of a main frame that shows an allowed page, which brt did not start (a script's, a meta
    refresh)."""
    from .... import url_safety

    url = request.url.split("#", 1)[0]
    expected = {u.split("#", 1)[0] for u in state.expected_navigations}
    expected |= {url_safety.normalize(u) or u for u in expected}
    return url not in expected and leaves_loaded_page(request, egress)


def leaves_loaded_page(request: Any, egress: EgressPolicy) -> bool:
    try:
        frame = request.frame
        return frame.parent_frame is None and egress.permits(frame.url)
    except Exception:  # noqa: BLE001 - a request of a frame that is gone
        return False


def page_of(request: Request) -> Any:
    try:
        return request.frame.page
    except Exception:  # service-worker requests have no frame
        return None
