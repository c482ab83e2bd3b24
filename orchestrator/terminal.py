"""Everything the ``brt`` command prints goes through here: page text, JSON-LD leads, PDF titles and crafted
snapshots must not drive the terminal (ESC/CSI/OSC sequences: a screen clear, an OSC 52 clipboard write, an
OSC 8 link; bidi overrides that reorder a line).

:func:`install` (called once by the CLI, before any command runs) replaces ``sys.stdout`` and ``sys.stderr``
with :class:`SafeTextStream`: every write loses its C0 and C1 controls but newline and tab
(``untrusted.strip_controls``), on a terminal or not. That covers ``click.echo``, ``print``, logging and
tracebacks alike. The only writer that keeps the raw stream is the rich progress display (its own redraw
sequences), which shows brt's task names and counts only: see :func:`raw`.
"""

from __future__ import annotations

import io
import sys
from typing import IO

from .untrusted import strip_controls

__all__ = ["SafeTextStream", "install", "raw"]


class SafeTextStream(io.TextIOBase):
    """A text stream that writes to ``raw`` without control characters (``untrusted.strip_controls``)."""

    def __init__(self, raw: IO[str]):
        super().__init__()
        self.raw = raw

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.raw, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self.raw, "errors", None)

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:  # type: ignore[override]
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self.raw.write(strip_controls(text))
        return len(text)

    def flush(self) -> None:
        self.raw.flush()

    def isatty(self) -> bool:
        return self.raw.isatty()

    def fileno(self) -> int:
        return self.raw.fileno()

    def __getattr__(self, name: str) -> object:
        # anything else a caller may ask of a text stream (reconfigure, line_buffering, ...), but never the
        # binary buffer underneath: bytes written there would bypass the filter
        if name == "buffer":
            raise AttributeError(name)
        return getattr(self.raw, name)


def install(*, stdout: bool = True, stderr: bool = True) -> None:
    """Put :class:`SafeTextStream` in place of ``sys.stdout`` / ``sys.stderr`` (once: an installed one is
    kept). ``brt mcp`` keeps stdout as it is: it is the protocol's channel, not a terminal."""
    if stdout and sys.stdout is not None and not isinstance(sys.stdout, SafeTextStream):
        sys.stdout = SafeTextStream(sys.stdout)
    if stderr and sys.stderr is not None and not isinstance(sys.stderr, SafeTextStream):
        sys.stderr = SafeTextStream(sys.stderr)


def raw(stream: IO[str]) -> IO[str]:
    """The stream under a :class:`SafeTextStream` (the stream itself otherwise)."""
    return stream.raw if isinstance(stream, SafeTextStream) else stream
