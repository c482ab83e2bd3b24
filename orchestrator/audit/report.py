"""``brt report CHARTER|SNAPSHOT --format html|csv|md [--out PATH]``: the last synthesis as a document people
read (HTML, self-contained), a table spreadsheets open (CSV) or Markdown; with ``--check REPORT.md``, the
HTML view of ``brt check`` of that report against the charter's store or the snapshot."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..formats import REPORT_FORMATS
from .bundle import AuditBundle, load_bundle
from .errors import ReportError

if TYPE_CHECKING:
    from .check import CheckReport

__all__ = ["ReportResult", "check_view", "render", "report", "write_report"]


@dataclass
class ReportResult:
    format: str
    text: str
    path: Path | None
    bundle: AuditBundle | None
    check: CheckReport | None = None


def render(bundle: AuditBundle, fmt: str) -> str:
    """``bundle`` in format ``fmt`` (one of ``formats.REPORT_FORMATS``: html, csv or md)."""
    if fmt not in REPORT_FORMATS:
        raise ReportError(f"unknown report format {fmt!r}: expected one of {', '.join(REPORT_FORMATS)}")
    if fmt == "html":
        from .report_html import render_html

        return render_html(bundle)
    if fmt == "csv":
        from .report_csv import render_csv

        return render_csv(bundle)
    if fmt == "md":
        from .report_md import render_md

        return render_md(bundle)
    raise AssertionError(f"no writer for report format {fmt!r}")  # a format added to the registry only


def report(source: str | Path, *, fmt: str = "html", out: str | Path | None = None) -> ReportResult:
    """Render the report of a charter (its store's last synthesis) or of a snapshot; write it to ``out`` when
    given (CSV with CRLF line ends, as RFC 4180 says)."""
    return write_report(load_bundle(source), fmt=fmt, out=out)


def write_report(bundle: AuditBundle, *, fmt: str = "html", out: str | Path | None = None,
                 within: list[Path] | None = None) -> ReportResult:
    """``report`` of a bundle already loaded (``bundle.load_bundle``), written with ``files.write_file`` (a
    symlink at ``out`` is replaced, never followed; ``within``: no symlinked folder below these roots)."""
    text = render(bundle, fmt)
    return ReportResult(fmt, text, _write(text, out, within), bundle)


def check_view(source: str | Path, report_md: str | Path, *, out: str | Path | None = None,
               within: list[Path] | None = None, follow_links: bool = True) -> ReportResult:
    """The HTML view of ``brt check`` of the Markdown report ``report_md`` against ``source``: a charter file
    (its store) or a snapshot (``.jsonl``); written to ``out`` when given, as :func:`write_report` writes."""
    from ..charter import load_charter
    from .check import check_report
    from .report_html import render_check_html

    src = Path(source).expanduser()
    if src.suffix.lower() == ".jsonl":
        result = check_report(report_md, snapshot=src, follow_links=follow_links)
    else:
        result = check_report(report_md, charter=load_charter(src), follow_links=follow_links)
    text = render_check_html(result)
    return ReportResult("html", text, _write(text, out, within), None, result)


def _write(text: str, out: str | Path | None, within: list[Path] | None) -> Path | None:
    from ..files import write_file

    if out is None:
        return None
    return write_file(Path(out).expanduser(), text, within=within)
