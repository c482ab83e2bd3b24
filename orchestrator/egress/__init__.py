"""Egress: where brt may connect. One :class:`EgressPolicy` per harvest (or per ``brt browser-mcp``, ``brt check``,
``brt verify``), built from the charter's ``allowed_domains`` and the settings, is handed to the browser readers,
the document fetcher, the egress proxy, the link filter and the audit; the allowlist's semantics live here and
nowhere else (``tests/unit/test_architecture.py`` keeps it so)."""

from .policy import EgressPolicy, exact_allowed, host_allowed, parse_allowlist, url_allowed, url_patterns

__all__ = ["EgressPolicy", "exact_allowed", "host_allowed", "parse_allowlist", "url_allowed", "url_patterns"]
