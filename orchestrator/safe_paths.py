"""Where brt may write when someone else chooses the path (an agent over MCP, a charter file).

- **Confinement**: a path an agent gives (MCP ``synthesize out=``, ``clean snapshot=``) must lie, after every
  symlink is resolved, inside the charter's output folder (the folder of its ``outputs.doc``) or ``$BRT_HOME``.
- **Charter outputs**: ``outputs.doc`` may not be absolute nor leave the charter file's folder (``..``, or a
  symlink pointing out) unless the user says so (``brt synthesize --allow-doc-anywhere``); over MCP never.
- **Never overwrite what brt did not write**: brt records every file it writes (path, sha256, size) in
  ``$BRT_HOME/written-files.json``. An agent's write may replace an existing file only when that record
  matches the file as it is now: a file brt never wrote, or one changed since (a report edited by hand), is
  refused. A file written under another ``$BRT_HOME`` is not known here and is refused too.

    paths = agent_output_paths(charter, out, kind="synthesize")   # [report.md, report.json] or PathRefused
    ... write them with files.write_file(path, data, within=output_roots(charter)) ...
    record_written(paths)

- **No link followed**: every file brt writes goes through ``files.write_file`` (a directory handle, a new
  temporary name with ``O_NOFOLLOW``, a rename over the target: a symlink planted at the target is replaced, not
  followed); with ``within=output_roots(charter)`` (or ``$BRT_HOME`` for the audit tools) no folder below the root
  may be a symlink either, so a link planted after the check above (a race) is refused.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from .config import brt_home
from .errors import BrtError, CharterError
from .formats import suffix

if TYPE_CHECKING:
    from .charter import Charter

__all__ = [
    "PathRefused",
    "agent_output_paths",
    "charter_doc_path",
    "check_not_foreign",
    "confine",
    "is_brt_written",
    "manifest_path",
    "output_roots",
    "record_written",
]

log = logging.getLogger(__name__)

MANIFEST_NAME = "written-files.json"


class PathRefused(BrtError):
    """A path brt will not write to (outside the allowed folders, or a file brt did not write)."""


def manifest_path() -> Path:
    return brt_home() / MANIFEST_NAME


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path.expanduser()))


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def charter_doc_path(charter: Charter, *, allow_anywhere: bool = False) -> Path:
    """The charter's ``outputs.doc``, refused (CharterError on ``outputs.doc``, exit 2, advice "doc_anywhere")
    when it is absolute or leaves the charter file's folder (``..`` or a symlink), unless ``allow_anywhere``."""
    doc = charter.doc_path
    if allow_anywhere:
        return doc
    raw = Path(charter.outputs.doc).expanduser()
    base = _real(charter.base_dir)
    if raw.is_absolute() or not _inside(_real(doc), base):
        raise CharterError(
            str(charter.source or "<charter>"),
            [
                (
                    "outputs.doc",
                    f"{charter.outputs.doc!r} writes outside the charter's folder ({base}): use a relative path "
                    "inside it",
                )
            ],
            advice="doc_anywhere",
        )
    return doc


def output_roots(charter: Charter) -> list[Path]:
    """The folders an agent may write into: the charter's output folder and $BRT_HOME."""
    return [_real(charter.doc_path.parent), _real(brt_home())]


def confine(path: str | Path, roots: list[Path], *, what: str) -> Path:
    """``path`` (absolute, symlinks resolved) when it lies inside one of ``roots``; else PathRefused."""
    p = Path(path).expanduser()
    real = _real(p)
    if not any(_inside(real, root) for root in roots):
        raise PathRefused(
            f"refused {what} {str(path)!r}: brt writes only inside "
            + " or ".join(str(r) for r in roots)
            + " when an agent chooses the path"
        )
    if real.exists() and not real.is_file():
        raise PathRefused(f"refused {what} {str(path)!r}: not a regular file")
    return real


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@contextlib.contextmanager
def _locked_manifest() -> Iterator[dict[str, dict]]:
    path = manifest_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            files = data.get("files", {}) if isinstance(data, dict) else {}
        except (OSError, ValueError):
            files = {}
        yield files
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"files": files}, indent=1), encoding="utf-8")
        tmp.replace(path)
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _read_manifest() -> dict[str, dict]:
    try:
        data = json.loads(manifest_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data.get("files", {}) if isinstance(data, dict) else {}


def is_brt_written(path: Path) -> bool:
    """True when brt recorded writing ``path`` and the file is still exactly what it wrote."""
    real = _real(path)
    entry = _read_manifest().get(str(real))
    if not entry or not real.is_file():
        return False
    try:
        return real.stat().st_size == entry.get("size") and _sha256(real) == entry.get("sha256")
    except OSError:
        return False


def check_not_foreign(paths: Iterable[Path]) -> None:
    """PathRefused when one of ``paths`` exists and brt did not write it (or it changed since)."""
    for p in paths:
        real = _real(p)
        if real.exists() and not is_brt_written(real):
            raise PathRefused(
                f"refused to overwrite {real}: brt did not write that file (or it changed since); "
                "choose another path or remove it yourself"
            )


def record_written(paths: Iterable[Path | None]) -> None:
    """Record the files brt just wrote (their sha256), so brt may replace them later. Never fails the write."""
    try:
        with _locked_manifest() as files:
            for p in paths:
                if p is None:
                    continue
                real = _real(Path(p))
                if real.is_file():
                    files[str(real)] = {"sha256": _sha256(real), "size": real.stat().st_size, "at": time.time()}
            for name in [n for n in files if not Path(n).exists()]:
                del files[name]  # forget files that are gone
    except OSError as exc:
        log.warning("cannot record written files in %s: %s", manifest_path(), exc)


def agent_output_paths(charter: Charter, requested: str | None, *, kind: str) -> list[Path]:
    """The files an agent's ``synthesize`` (kind "synthesize": Markdown + JSON beside it) or ``clean`` (kind
    "clean": snapshot + HAR beside it) will write, checked: confined, and no foreign file overwritten.
    ``requested`` None means the default (the charter's outputs.doc, or a new snapshot under $BRT_HOME)."""
    roots = output_roots(charter)
    if kind == "synthesize":
        if requested is None:
            main = charter_doc_path(charter)
        else:
            p = Path(requested).expanduser()
            main = p if p.is_absolute() else charter.doc_path.parent / p
        if main.suffix.lower() == suffix("json"):
            raise PathRefused(f"refused out {requested!r}: the Markdown path must not end in .json")
        main = confine(main, roots, what="out")
        paths = [main, main.with_suffix(suffix("json"))]  # synthesize writes both (formats.SYNTHESIS_FORMATS)
    elif kind == "clean":
        from .config import default_snapshot_path

        if requested is None:
            main = default_snapshot_path(charter.id)
        else:
            p = Path(requested).expanduser()
            main = p if p.is_absolute() else charter.doc_path.parent / p
        if main.suffix.lower() == ".har":
            raise PathRefused(f"refused snapshot {requested!r}: the snapshot path must not end in .har")
        main = confine(main, roots, what="snapshot")
        paths = [main, main.with_suffix(".har")]
    else:  # pragma: no cover - programming error
        raise ValueError(kind)
    for p in paths:
        confine(p, roots, what="path")
    check_not_foreign(paths)
    return paths
