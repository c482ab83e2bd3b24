"""The page readers a harvest can use (``orchestrator.harvest.reader.PageReader``): ``playwright`` (the default)
and ``devtools_mcp`` (``--via devtools-mcp``)."""
