"""The two locks of a store (private to memory_store), over ``filelock``'s ``flock`` locks:

- the **write lock** (``.write.lock``) around every write: other writers, in this process or another, wait for
  it, at most ``$BRT_LOCK_TIMEOUT`` seconds (default 600); re-entrant in the thread that holds it;
- the **harvest lock** (``.harvest.lock``) around a whole harvest: never waits (a second harvest stops at once,
  naming the pid that runs the first); re-entrant for the ``Memory`` that holds it, from any thread.

Who holds a lock is written beside it (``<lock>.holder``: pid and start time) for those messages; ``flock`` locks
die with their process, so a killed harvest never leaves a store locked.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .clock import now
from .errors import StoreLocked
from .settings import DEFAULT_LOCK_TIMEOUT_S, settings

log = logging.getLogger(__name__)

WRITE_LOCK = ".write.lock"
HARVEST_LOCK = ".harvest.lock"
DEFAULT_TIMEOUT_S = DEFAULT_LOCK_TIMEOUT_S
#: After this long waiting for the write lock, say who holds it (INFO).
_WAIT_NOTICE_S = 1.0


def lock_timeout() -> float:
    """``$BRT_LOCK_TIMEOUT`` in seconds (default 600)."""
    return settings().lock_timeout_s


def _holder_file(lock: Path) -> Path:
    return lock.with_name(lock.name + ".holder")


def read_holder(lock: Path) -> dict[str, Any]:
    """``{"pid": ..., "started_at": ...}`` of the lock's current holder ({} when unknown)."""
    try:
        return json.loads(_holder_file(lock).read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return {}


def _write_holder(lock: Path) -> None:
    tmp = _holder_file(lock).with_suffix(".tmp")
    tmp.write_text(json.dumps({"pid": os.getpid(), "started_at": now("microseconds")}), encoding="utf-8")
    os.replace(tmp, _holder_file(lock))


class StoreLocks:
    """The write and harvest locks of the store at ``path``."""

    def __init__(self, path: Path, charter_id: str) -> None:
        self.path = path
        self.charter_id = charter_id
        self._write_lock: Any = None
        self._harvest_lock: Any = None

    @property
    def _write(self) -> Any:
        if self._write_lock is None:
            from filelock import FileLock  # imported on first write: `import memory_store` stays light

            self._write_lock = FileLock(self.path / WRITE_LOCK, thread_local=True)
        return self._write_lock

    @property
    def _harvest(self) -> Any:
        if self._harvest_lock is None:
            from filelock import FileLock

            self._harvest_lock = FileLock(self.path / HARVEST_LOCK, thread_local=False)
        return self._harvest_lock

    @contextlib.contextmanager
    def write(self) -> Iterator[None]:
        """Exclusive lock around one write; waits for other writers (``lock_timeout()`` seconds)."""
        from filelock import Timeout

        lock = self._write
        if lock.is_locked and lock.lock_counter:  # re-entered by this thread
            with lock:
                yield
            return
        self.path.mkdir(parents=True, exist_ok=True)
        timeout = lock_timeout()
        try:
            lock.acquire(timeout=min(timeout, _WAIT_NOTICE_S))
        except Timeout:
            if timeout > _WAIT_NOTICE_S:
                log.info("waiting for lock held by pid %s on %s", self._holder_pid(WRITE_LOCK), self.path)
                try:
                    lock.acquire(timeout=timeout - _WAIT_NOTICE_S)
                except Timeout:
                    raise self._locked(timeout) from None
            else:
                raise self._locked(timeout) from None
        try:
            _write_holder(self.path / WRITE_LOCK)
            yield
        finally:
            lock.release()

    def _locked(self, timeout: float) -> StoreLocked:
        return StoreLocked(
            f"store of charter {self.charter_id} is locked by pid {self._holder_pid(WRITE_LOCK)}; "
            f"gave up after {timeout:g} s"
        )

    def _holder_pid(self, name: str) -> Any:
        return read_holder(self.path / name).get("pid", "?")

    @contextlib.contextmanager
    def harvest(self) -> Iterator[None]:
        """Lock for a whole harvest; never waits: raises StoreLocked when another harvest holds it."""
        from filelock import Timeout

        lock = self._harvest
        if lock.is_locked:  # re-entered by the same Memory: the outer block releases it
            with lock:
                yield
            return
        self.path.mkdir(parents=True, exist_ok=True)
        try:
            lock.acquire(blocking=False)
        except Timeout:
            holder = read_holder(self.path / HARVEST_LOCK)
            raise StoreLocked(
                f"charter {self.charter_id} is being harvested by pid {holder.get('pid', '?')} "
                f"(started {holder.get('started_at', '?')}); wait for it to finish"
            ) from None
        try:
            _write_holder(self.path / HARVEST_LOCK)
            yield
        finally:
            lock.release()
