"""The chrome-devtools-mcp reader (``--via devtools-mcp``): ``client`` (the MCP client of chrome-devtools-mcp) and
``reader`` (reading a page through it)."""

from .client import DevtoolsMcpBrowser, allowed_url_patterns, find_devtools_mcp
from .reader import DevtoolsReader

__all__ = ["DevtoolsMcpBrowser", "DevtoolsReader", "allowed_url_patterns", "find_devtools_mcp"]
