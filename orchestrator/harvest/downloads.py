"""Downloads write 0 bytes to disk.

Playwright's context (``accept_downloads=False``) tells Chromium to deny downloads, but Chromium writes a
download's bytes to a temporary file (``$TMPDIR/.org.chromium.Chromium.XXXXXX``) *while* it decides where the
download goes, and only deletes it once the download is denied: the whole body of a fast download reaches the
disk. So the body of a navigation response that would become a download never reaches the browser: brt fetches
every live navigation itself (``readers/playwright/routes.route_navigation``) and answers the browser through
:func:`fulfill_navigation`, which keeps the status and headers (the browser still starts, and denies, the
download, so the harvest records it as one) and withholds the body."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.async_api import Route

__all__ = ["download_reason", "fulfill_navigation"]

logger = logging.getLogger(__name__)

#: Types Chromium shows in a tab instead of downloading them. Anything else (PDF included: the harvest fetches
#: PDFs itself, outside the browser) is withheld; the harvest reads only HTML from the tab.
_DISPLAYED_TYPES = frozenset(
    {
        "text/html",
        "application/xhtml+xml",
        "text/plain",
        "text/xml",
        "application/xml",
        "text/css",
        "text/javascript",
        "application/javascript",
        "application/json",
        "image/svg+xml",
        "image/png",
        "image/jpeg",
        "image/gif",
        "image/webp",
        "image/avif",
        "image/bmp",
        "image/x-icon",
        "image/vnd.microsoft.icon",
    }
)

#: Headers that describe the withheld body (the browser would wait for bytes that never come).
_BODY_HEADERS = frozenset({"content-length", "content-encoding", "transfer-encoding", "content-range"})


def download_reason(headers: dict[str, str], head: bytes | None = None) -> str | None:
    """Why Chromium would turn a navigation answered with ``headers`` (lower-case names) into a download, or
    None when it would show it. ``head`` (the body's first bytes) decides when there is no Content-Type: the
    browser sniffs it, and binary bytes become a download."""
    disposition = headers.get("content-disposition", "").strip().lower()
    if disposition.startswith("attachment"):
        return "Content-Disposition: attachment"
    ctype = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if not ctype:
        if head is not None and b"\x00" in head[:1024]:
            return "binary body without Content-Type"
        return None
    if ctype in _DISPLAYED_TYPES:
        return None
    return f"Content-Type: {ctype}"


async def fulfill_navigation(route: Route, status: int, headers: dict[str, str], body: bytes) -> None:
    """Answer the browser's navigation ``route`` with a response brt fetched (``headers`` with lower-case
    names); when it would be a download, with its status and headers only (0 bytes of body reach the
    browser)."""
    reason = download_reason(headers, body[:1024] if not headers.get("content-type") else None)
    if reason is None:
        await route.fulfill(status=status, headers=headers, body=body)
        return
    logger.info("navigation to %s is a download (%s): its body is withheld from the browser", route.request.url, reason)
    kept = {k: v for k, v in headers.items() if k not in _BODY_HEADERS}
    await route.fulfill(status=status, headers=kept, body=b"")
