"""How a replay (``--replay FILE.har``) routes what the HAR holds: Playwright's HAR router serves the recorded
responses, and follows a recorded redirect chain to its end by itself, so brt checks every hop of the chain
(allowlist and the offline guard) before the router is asked. A navigation whose request the HAR answers with a
redirect is not left to the router either (its redirect of a frame's navigation can take the Playwright driver
down): the navigation is cancelled and brt's own ``goto`` goes to the chain's end, as a live harvest does after
its fetcher followed a chain (``routes.goto_checked``); a frame's or a script's redirected navigation is
cancelled, as live. Nothing in a replay reaches the network: the browser's egress proxy refuses everything."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ....egress import EgressPolicy
from .route_state import (
    BlockedRequest,
    RouteState,
    is_main_frame,
    is_script_navigation,
    leaves_loaded_page,
    page_of,
)

if TYPE_CHECKING:
    from playwright.async_api import Route

__all__ = ["chain_end", "replay_chain_refusal", "replay_route"]

logger = logging.getLogger(__name__)


async def replay_route(state: RouteState, egress: EgressPolicy, route: Route, navigation: bool) -> bool:
    """Answer ``route`` when the replay must not leave it to the HAR router; True when answered."""
    request = route.request
    url = request.url
    key = url.split("#", 1)[0]
    if (
        navigation
        and state.replay_urls is not None
        and (key not in state.replay_urls or key in state.replay_errors)
        and is_script_navigation(state, request, egress)
    ):
        # A script of a loaded page navigates to a URL the HAR does not hold, or holds as an error document:
        # cancel the navigation (204) and keep the page that loaded, as a live harvest would have it.
        if key in state.replay_errors:
            logger.info("script navigation to %s answers an error in the replay HAR (page kept as loaded)", key)
        else:
            logger.info("not in replay HAR: script navigation to %s (page kept as loaded)", url)
            state.blocked.append(BlockedRequest(url, request.resource_type, "not in replay HAR", navigation=True,
                                                page=page_of(request)))
        await route.fulfill(status=204, body="")
        return True
    hop = await replay_chain_refusal(state, url, egress)
    if hop is not None:
        target, reason = hop
        logger.info("blocked recorded redirect from %s to %s (%s)", url, target, reason)
        state.blocked.append(BlockedRequest(target, request.resource_type, reason, navigation=navigation,
                                            page=page_of(request)))
        await route.abort("blockedbyclient")
        return True
    end = chain_end(state, url) if navigation else None
    if end is None:
        return False
    page = page_of(request)
    if is_main_frame(request) and page is not None and url in state.expected_navigations:
        from ...net.fetcher import FetchResult

        # brt's own navigation: goto_checked goes to the chain's end (answered from the HAR)
        state.nav_results[page] = FetchResult(kind="ok", url=end, hops=[url, end], redirected_to=end)
        await route.abort("aborted")
    elif leaves_loaded_page(request, egress):
        await route.fulfill(status=204, body="")  # a script's navigation: the loaded page stays
    else:
        logger.info("replay: not following the recorded redirect of a frame from %s to %s", url, end)
        await route.abort("aborted")
    return True


def _targets(state: RouteState, url: str) -> list[str]:
    return state.replay_redirects.get(url.split("#", 1)[0], [])


def chain_end(state: RouteState, url: str) -> str | None:
    """Where the HAR's redirect chain from ``url`` ends (the first recorded target at each hop), or None when
    the HAR answers ``url`` without a redirect."""
    from ...net.fetcher import MAX_REDIRECTS

    current, seen = url, {url}
    for _ in range(MAX_REDIRECTS + 1):
        targets = _targets(state, current)
        if not targets or targets[0] in seen:
            break
        current = targets[0]
        seen.add(current)
    return None if current == url else current


async def replay_chain_refusal(state: RouteState, url: str, egress: EgressPolicy) -> tuple[str, str] | None:
    """The first hop of the HAR's redirect chains from ``url`` (every branch: a URL may have several recorded
    redirects) that the allowlist or the offline guard refuses, as (hop URL, reason); None when every hop
    passes. A chain longer than the fetcher's redirect limit is refused at the hop past the limit."""
    from ...net.fetcher import MAX_REDIRECTS

    frontier, seen = [url], {url}
    for _ in range(MAX_REDIRECTS + 1):
        hops = [t for u in frontier for t in _targets(state, u)]
        if not hops:
            return None
        frontier = []
        for target in hops:
            if not egress.permits(target):
                return target, "not on allowed_domains"
            refused = await state.guard.check(target) if state.guard is not None else None
            if refused is not None:
                return target, refused
            if target not in seen:  # a loop is the HAR router's to refuse ("redirect cycle")
                seen.add(target)
                frontier.append(target)
    return (frontier[0], f"more than {MAX_REDIRECTS} redirects in the replay HAR") if frontier else None
