"""Progress reporting for long work. The library calls a :class:`ProgressSink`; the CLI picks the
implementation (rich bars on a terminal, plain log lines otherwise)."""

from __future__ import annotations

import sys
import threading
import time
from typing import IO, Any, Protocol, runtime_checkable

__all__ = ["NullProgress", "PlainProgress", "ProgressSink", "RichProgress", "make_progress"]


@runtime_checkable
class ProgressSink(Protocol):
    """Receives progress of named tasks ("fetch", "embed", ...). Implementations must be thread-safe."""

    def start(self, task: str, total: int | None = None) -> None: ...

    def advance(self, task: str, n: int = 1, total: int | None = None) -> None: ...

    def message(self, text: str) -> None: ...

    def close(self) -> None: ...


class NullProgress:
    """Reports nothing."""

    def start(self, task: str, total: int | None = None) -> None:
        pass

    def advance(self, task: str, n: int = 1, total: int | None = None) -> None:
        pass

    def message(self, text: str) -> None:
        pass

    def close(self) -> None:
        pass


class PlainProgress:
    """Line-oriented progress for logs and pipes: one line per message, and a task's count at most every
    ``interval`` seconds (and when it completes)."""

    def __init__(self, stream: IO[str] | None = None, *, interval: float = 2.0):
        self._stream = stream if stream is not None else sys.stderr
        self._interval = interval
        self._lock = threading.Lock()
        self._done: dict[str, int] = {}
        self._total: dict[str, int | None] = {}
        self._last: dict[str, float] = {}

    def start(self, task: str, total: int | None = None) -> None:
        with self._lock:
            self._done[task] = 0
            self._total[task] = total
            self._last[task] = time.monotonic()

    def advance(self, task: str, n: int = 1, total: int | None = None) -> None:
        with self._lock:
            self._done[task] = self._done.get(task, 0) + n
            if total is not None:
                self._total[task] = total
            done, tot = self._done[task], self._total.get(task)
            now = time.monotonic()
            finished = tot is not None and done >= tot
            if finished or now - self._last.get(task, 0.0) >= self._interval:
                self._last[task] = now
                self._write(f"{task}: {done}/{tot}" if tot is not None else f"{task}: {done}")

    def message(self, text: str) -> None:
        with self._lock:
            self._write(text)

    def close(self) -> None:
        with self._lock:
            for task, done in self._done.items():
                tot = self._total.get(task)
                self._write(f"{task}: {done}/{tot} done" if tot is not None else f"{task}: {done} done")
            self._done.clear()

    def _write(self, line: str) -> None:
        self._stream.write(line + "\n")
        self._stream.flush()


class RichProgress:
    """rich progress bars on a terminal (stderr by default)."""

    def __init__(self, console: Any = None):
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        from .terminal import raw

        # the raw stream: rich writes its own redraw sequences (brt's task names and counts only)
        self._console = console or Console(file=raw(sys.stderr))
        self._progress = Progress(
            TextColumn("[bold]{task.description:<6}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self._console,
            transient=False,
        )
        self._tasks: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._progress.start()

    def start(self, task: str, total: int | None = None) -> None:
        with self._lock:
            if task in self._tasks:
                self._progress.reset(self._tasks[task], total=total)
            else:
                self._tasks[task] = self._progress.add_task(task, total=total)

    def advance(self, task: str, n: int = 1, total: int | None = None) -> None:
        with self._lock:
            if task not in self._tasks:
                self._tasks[task] = self._progress.add_task(task, total=total)
            kwargs: dict[str, Any] = {"advance": n}
            if total is not None:
                kwargs["total"] = total
            self._progress.update(self._tasks[task], **kwargs)

    def message(self, text: str) -> None:
        from .untrusted import strip_controls

        self._progress.console.print(strip_controls(text), markup=False, highlight=False)

    def close(self) -> None:
        self._progress.stop()


def make_progress(stream: IO[str] | None = None) -> ProgressSink:
    """RichProgress when ``stream`` (default stderr) is a terminal, PlainProgress otherwise."""
    stream = stream if stream is not None else sys.stderr
    if hasattr(stream, "isatty") and stream.isatty():
        try:
            return RichProgress()
        except ImportError:  # pragma: no cover - rich is a dependency
            pass
    return PlainProgress(stream)
