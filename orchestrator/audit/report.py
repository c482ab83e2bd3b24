"""``brt report CHARTER|SNAPSHOT --format html|csv|md [--out PATH]``: the last synthesis as a document people
read (HTML, self-contained), a table spreadsheets open (CSV) or Markdown."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .bundle import AuditBundle, load_bundle
from .errors import ReportError

__all__ = ["FORMATS", "ReportResult", "render", "report", "write_report"]

FORMATS = ("html", "csv", "md")


@dataclass
class ReportResult:
    format: str
    text: str
    path: Path | None
    bundle: AuditBundle


def render(bundle: AuditBundle, fmt: str) -> str:
    """``bundle`` in format ``fmt`` (html, csv or md)."""
    if fmt == "html":
        from .report_html import render_html

        return render_html(bundle)
    if fmt == "csv":
        from .report_csv import render_csv

        return render_csv(bundle)
    if fmt == "md":
        from .report_md import render_md

        return render_md(bundle)
    raise ReportError(f"unknown report format {fmt!r}: expected one of {', '.join(FORMATS)}")


def report(source: str | Path, *, fmt: str = "html", out: str | Path | None = None) -> ReportResult:
    """Render the report of a charter (its store's last synthesis) or of a snapshot; write it to ``out`` when
    given (CSV with CRLF line ends, as RFC 4180 says)."""
    return write_report(load_bundle(source), fmt=fmt, out=out)


def write_report(bundle: AuditBundle, *, fmt: str = "html", out: str | Path | None = None,
                 within: list[Path] | None = None) -> ReportResult:
    """``report`` of a bundle already loaded (``bundle.load_bundle``), written with ``files.write_file`` (a
    symlink at ``out`` is replaced, never followed; ``within``: no symlinked folder below these roots)."""
    from ..files import write_file

    text = render(bundle, fmt)
    path = None
    if out is not None:
        path = write_file(Path(out).expanduser(), text, within=within)
    return ReportResult(fmt, text, path, bundle)
