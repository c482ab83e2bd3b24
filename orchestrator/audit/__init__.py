"""Audits you can check, replay and read: verify, restore, report, ls, charter init, and the acceptance and
conflict judgements of a synthesis (issue 14). The CLI commands and MCP tools of the same names are thin
wrappers over these functions."""
