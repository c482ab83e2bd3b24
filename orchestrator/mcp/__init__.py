"""The MCP server (``brt mcp``): its tools (``server.py``, the audit tools in ``audit_tools.py``), guard,
output schemas, evidence resources and background harvest jobs. A shell, like ``cli.py``: it parses
arguments and renders; the work is in the library and ``service.py``."""
