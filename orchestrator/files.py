"""Reading and writing files whose names someone else chose (a charter path an agent gives, an output folder in
a cloned repository, a snapshot from elsewhere): the one place brt opens such files.

- **Reading** (:func:`open_regular`, :func:`read_regular`): regular files only, opened without blocking
  (``O_NONBLOCK``: a FIFO with no writer, ``/dev/zero``, ``/dev/urandom``, a terminal or ``/proc/self/fd/N``
  is refused at once, never read), and read up to a size cap.
- **Writing** (:func:`write_file`, :func:`copy_file`): into the parent folder opened as a directory handle,
  to a new temporary name (``O_CREAT | O_EXCL | O_NOFOLLOW``), then renamed over the target. A symlink planted
  at the target is replaced, never followed; a reader never sees a half-written file. With ``within`` (the
  folders an agent's path was confined to, ``safe_paths``), every folder below the matching root is opened
  with ``O_NOFOLLOW`` too, so a link planted in the path after it was checked (a TOCTOU race) is refused.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from .errors import BrtError

__all__ = ["FileRefused", "copy_file", "move_file", "open_regular", "read_regular", "write_file"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class FileRefused(BrtError):
    """A file brt will not read or write (not a regular file, too large, a symlink where none may be)."""


def open_regular(path: str | Path, *, what: str = "file", follow_links: bool = True) -> BinaryIO:
    """``path`` opened for reading in binary mode when it is a regular file (symlinks to one are fine unless
    ``follow_links`` is False: then a symlink at ``path`` is refused, never followed); a FIFO, a device, a
    socket or a folder is refused (FileRefused) without blocking. FileNotFoundError when missing."""
    p = Path(path).expanduser()
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | (0 if follow_links else _NOFOLLOW)
    try:
        fd = os.open(p, flags)
    except IsADirectoryError:
        raise FileRefused(f"{what} {p} is a folder, not a file") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_links:
            raise FileRefused(f"{what} {p} is a symbolic link: brt does not follow it here") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise FileRefused(f"{what} {p} is not a regular file ({_kind(mode)}): brt reads regular files only")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO or pipe"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "not a file"


def read_regular(path: str | Path, *, limit: int, what: str = "file", follow_links: bool = True) -> bytes:
    """The bytes of the regular file ``path`` (see :func:`open_regular`); FileRefused when it holds more than
    ``limit`` bytes (checked while reading: ``/proc`` files report size 0)."""
    with open_regular(path, what=what, follow_links=follow_links) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise FileRefused(f"{what} {Path(path).expanduser()} is larger than {limit} bytes: too large to be one")
    return data


def _root_of(path: Path, roots: Iterable[Path]) -> Path:
    for root in roots:
        root = Path(os.path.realpath(root))
        try:
            path.relative_to(root)
        except ValueError:
            continue
        return root
    raise FileRefused(f"{path} lies outside the folders brt may write to here")


@contextlib.contextmanager
def _parent_dir(path: Path, within: Iterable[Path] | None) -> Iterator[int]:
    """A handle on ``path``'s folder (created when missing). With ``within``: reached from the root that holds
    it, one folder at a time, following no symlink."""
    if within is None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path.parent, _DIR_FLAGS)
    else:
        root = _root_of(path, within)
        root.mkdir(parents=True, exist_ok=True)
        fd = os.open(root, _DIR_FLAGS)
        for name in path.parent.relative_to(root).parts:
            try:
                nxt = _open_subdir(fd, name)
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)
            fd = nxt
    try:
        yield fd
    finally:
        os.close(fd)


def _open_subdir(dir_fd: int, name: str) -> int:
    """The folder ``name`` inside ``dir_fd`` (made when missing), never through a symlink."""
    for attempt in range(2):
        try:
            return os.open(name, _DIR_FLAGS | _NOFOLLOW, dir_fd=dir_fd)
        except FileNotFoundError:
            if attempt:
                raise
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o777, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise FileRefused(f"refused to write through {name!r}: it is a symlink or not a folder") from None
            raise
    raise AssertionError("unreachable")  # pragma: no cover


def _write_into(path: Path, chunks: Iterable[bytes], within: Iterable[Path] | None) -> Path:
    path = Path(os.path.abspath(path.expanduser()))
    if not path.name or path.name in (".", ".."):
        raise FileRefused(f"refused to write {path}: not a file name")
    with _parent_dir(path, within) as dir_fd:
        tmp = f".{path.name}.{secrets.token_hex(6)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o666,
                     dir_fd=dir_fd)
        try:
            with os.fdopen(fd, "wb") as fh:
                for chunk in chunks:
                    fh.write(chunk)
            try:
                os.rename(tmp, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)  # replaces a link, never follows it
            except IsADirectoryError:
                raise FileRefused(f"refused to write {path}: a folder has that name") from None
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise
    return path


def write_file(path: str | Path, data: bytes | str, *, within: Iterable[Path] | None = None) -> Path:
    """Write ``data`` (str: UTF-8) to ``path`` through a temporary file renamed over it; a symlink at ``path`` is
    replaced, never followed. ``within``: the folders the path was confined to; then no folder below the
    matching one may be a symlink (FileRefused). Returns the absolute path written."""
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    return _write_into(Path(path), [raw], list(within) if within is not None else None)


def move_file(src: str | Path, dest: str | Path, *, within: Iterable[Path] | None = None) -> Path:
    """Move the file ``src`` (written where no one else writes) to ``dest`` as :func:`write_file` writes: renamed
    into ``dest``'s folder handle (copied when it lies on another file system), a link at ``dest`` replaced."""
    dest = Path(os.path.abspath(Path(dest).expanduser()))
    roots = list(within) if within is not None else None
    with _parent_dir(dest, roots) as dir_fd:
        try:
            os.rename(os.path.abspath(src), dest.name, dst_dir_fd=dir_fd)
            return dest
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
    copy_file(src, dest, within=roots)
    os.unlink(src)
    return dest


def copy_file(src: str | Path, dest: str | Path, *, within: Iterable[Path] | None = None) -> Path:
    """Copy the regular file ``src`` to ``dest`` as :func:`write_file` writes (streamed)."""

    def chunks() -> Iterator[bytes]:
        with open_regular(src) as fh:
            yield from iter(lambda: fh.read(1 << 20), b"")

    return _write_into(Path(dest), chunks(), list(within) if within is not None else None)
