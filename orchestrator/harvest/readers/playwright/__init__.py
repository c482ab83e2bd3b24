"""The Playwright reader: ``browser`` (launch, context, relaunch), ``routes`` (allowlist, SSRF guard, fetched
navigations, WebSockets, replay), ``reader`` (reading a page in a tab)."""

from .browser import BlockedRequest, BrowserSession, open_browser
from .reader import PlaywrightReader

__all__ = ["BlockedRequest", "BrowserSession", "PlaywrightReader", "open_browser"]
