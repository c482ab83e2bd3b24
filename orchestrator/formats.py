"""The output formats brt writes, named once: the CLI's ``--format`` choices, the MCP ``report`` tool's argument
(its ``Literal`` and so its schema), the report module's writers and the synthesis's two files all read them here.

- a synthesis writes Markdown and the JSON beside it (``SYNTHESIS_FORMATS``);
- ``brt report`` writes HTML (one offline page), CSV or Markdown (``REPORT_FORMATS``, the default first).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

__all__ = ["FORMATS", "REPORT_FORMATS", "SYNTHESIS_FORMATS", "OutputFormat", "ReportFormat", "suffix"]


@dataclass(frozen=True)
class OutputFormat:
    name: str  # what a user types (``--format md``)
    suffix: str  # the file name's ending
    media_type: str
    title: str  # how help text names it


#: Every format brt writes, by name.
FORMATS: dict[str, OutputFormat] = {
    f.name: f
    for f in (
        OutputFormat("md", ".md", "text/markdown", "Markdown"),
        OutputFormat("json", ".json", "application/json", "JSON"),
        OutputFormat("html", ".html", "text/html", "HTML"),
        OutputFormat("csv", ".csv", "text/csv", "CSV"),
    )
}

#: The formats of ``brt report`` (the MCP tool's argument is typed with it), the default first.
ReportFormat = Literal["html", "csv", "md"]
REPORT_FORMATS: tuple[str, ...] = get_args(ReportFormat)
#: What a synthesis writes: its Markdown document, and the JSON beside it.
SYNTHESIS_FORMATS: tuple[str, ...] = ("md", "json")


def suffix(name: str) -> str:
    """The file ending of format ``name`` (``.json`` for json)."""
    return FORMATS[name].suffix
