"""``brt restore SNAPSHOT [--id NEW_ID]``: rebuild a charter's store from its snapshot so that ``search`` and
``synthesize`` run again.

What comes back: the pages and chunk rows exactly as snapshotted (ids, URLs, dates, ``also_seen_at``, order), with
their vectors, or re-embedded with the snapshot's model and precision (fp32 or int8; ``BRT_EMBED_BACKEND`` decides
when set) when it was written with ``--no-vectors``; the pages of a snapshot that holds no chunk (what a harvest
with ``memory.enabled: false`` keeps) are chunked and embedded; the journal (harvest events and summaries, fingerprints
included, so ``--refresh`` works), the concept index (the graph and its pointer rows as stored; rebuilt from the
restored chunks when the snapshot holds no vectors), the charter versions and the last synthesis (``brt report
CHARTER`` reads it), and the HAR beside the snapshot (so a later ``/clean`` writes it again). A ``restore`` record
joins the journal.

The charter as harvested is written to a file (``--charter PATH``, default ``$BRT_HOME/charters/<id>.yaml``)
with its ``id`` set to the restored id, so ``brt synthesize`` (and MCP ``synthesize``) can run on it at once: an
``outputs.doc`` that would leave the new file's folder (``../out/x.md`` from the charter's own folder, an absolute
path) is moved to ``out/<its file name>`` beside it, since synthesize refuses one that leaves it. The snapshot is
verified first, with its HAR (beside it, or ``har``): every page must match the provenance the HAR records for it,
so a snapshot edited and resealed is refused; a snapshot that fails is refused unless ``force``. Restores of one id
are serialised (a lock beside the stores): a second one waits, then finds the store and refuses.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .errors import RestoreError
from .snapshot import Snapshot, read_snapshot

__all__ = ["RestoreResult", "restore"]

log = logging.getLogger(__name__)

_PAGE_FIELDS = ("title", "text", "selector", "last_updated", "last_updated_source", "fetched_at", "status",
                "content_type", "chunk_ids", "stored_at")
_CHUNK_FIELDS = ("id", "url", "selector", "text", "tokens", "split_algo", "last_updated", "created_at", "title",
                 "also_seen_at")


@dataclass
class RestoreResult:
    charter_id: str
    snapshot: Path
    store_path: Path
    charter_path: Path | None
    pages: int
    chunks: int
    reembedded: int
    events: int
    concept_index: str  # restored | rebuilt | none
    synthesis: bool
    har_path: Path | None
    check_ok: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "charter_id": self.charter_id,
            "snapshot": str(self.snapshot),
            "store_path": str(self.store_path),
            "charter_path": str(self.charter_path) if self.charter_path else None,
            "pages": self.pages,
            "chunks": self.chunks,
            "reembedded": self.reembedded,
            "events": self.events,
            "concept_index": self.concept_index,
            "synthesis": self.synthesis,
            "har_path": str(self.har_path) if self.har_path else None,
            "check_ok": self.check_ok,
        }


def restore(
    snapshot: str | Path,
    *,
    new_id: str | None = None,
    charter_out: str | Path | None = None,
    force: bool = False,
    har: str | Path | None = None,
) -> RestoreResult:
    """Rebuild the store of the snapshot's charter (or of ``new_id``) from ``snapshot``; see the module
    docstring. ``har``: the HAR to verify it against and restore (default: beside the snapshot, never through a
    symlink). Raises RestoreError when the store exists already, the id is invalid, or the snapshot fails
    verification (unless ``force``)."""
    from memory_store.memory import validate_charter_id

    from ..config import memory_basepath
    from .verify import verify

    snap_path = Path(snapshot).expanduser()
    checked = verify(snap_path, har=har)
    if not checked.ok and not force:
        listed = "\n".join(f"  {f}" for f in checked.failures[:20])
        raise RestoreError(f"{snap_path} fails verification, not restored:\n{listed}", advice="restore_force")
    snap = read_snapshot(snap_path, keep_vectors=True)
    if snap.problems:  # not even --force restores records that do not fit the schema (records.py)
        listed = "\n".join(f"  {p}" for p in snap.problems[:20])
        raise RestoreError(f"{snap_path} holds records brt cannot read, not restored:\n{listed}")
    old_id = snap.charter_id
    charter_id = new_id or old_id
    try:
        validate_charter_id(charter_id)
    except ValueError as exc:
        raise RestoreError(str(exc)) from None
    base = memory_basepath()
    har_path = Path(har).expanduser() if har is not None else snap.har_path
    with _restore_lock(base, charter_id):
        return _restore_into(snap, base, charter_id, charter_out, force, har_path, named_har=har is not None)


def _restore_into(snap: Snapshot, base: Path, charter_id: str, charter_out: str | Path | None, force: bool,
                  har: Path, *, named_har: bool) -> RestoreResult:
    """The restore itself, with the id's restore lock held."""
    from memory_store import Memory

    from ..config import brt_home
    from ..files import write_file

    snap_path = snap.path
    if Memory.exists(charter_id, basepath=base) or os.path.lexists(base / charter_id):  # a planted link too
        raise RestoreError(f"a store for charter {charter_id!r} exists at {base / charter_id}", advice="restore_id")
    charters = _renamed_charters(snap, charter_id)
    harvested = next((c for c in reversed(charters) if "harvest" in c["roles"]), charters[-1] if charters else None)
    charter_path = None
    if harvested is not None:
        ext = "json" if harvested["format"] == "json" else "yaml"
        target = Path(charter_out).expanduser() if charter_out else brt_home() / "charters" / f"{charter_id}.{ext}"
        charter_text = _doc_inside(harvested["text"], harvested["format"], target)
        if os.path.lexists(target) and not force and not _holds(target, charter_text):
            raise RestoreError(f"{target} exists with other content", advice="restore_charter")
        charter_path = target
    har_file = har if har.is_file() and (named_har or not har.is_symlink()) else None
    mem = Memory(charter_id, basepath=base, model=snap.manifest.get("embedding_model"))
    try:
        with mem.harvest_lock():  # no harvest of this id starts on a half-restored store
            result = _load(snap, mem, charter_id, charters, harvested, har_file, named_har)
    except BaseException:
        try:
            mem.reset()  # nothing half-restored is left behind
        except Exception:  # noqa: BLE001
            log.exception("cannot remove the half-restored store %s", mem.path)
        raise
    if charter_path is not None and harvested is not None:  # a symlink there is replaced, never followed
        charter_path = write_file(charter_path, charter_text, within=None if charter_out else [brt_home()])
    result.charter_path = charter_path
    log.info("restored %s from %s into %s", charter_id, snap_path, mem.path)
    return result


def _load(snap: Snapshot, mem: Any, charter_id: str, charters: list[dict[str, Any]],
          harvested: dict[str, Any] | None, har_file: Path | None, named_har: bool) -> RestoreResult:
    import numpy as np

    from memory_store import ModelMismatch, get_embedder

    from ..files import copy_file
    from ..trail.store import CHARTER_FILE, write_synthesis

    dim = int(snap.manifest.get("embedding_dim") or 0)
    rows = [
        {k: snap.chunks[cid].get(k) for k in _CHUNK_FIELDS} | {"charter_id": charter_id} for cid in snap.chunk_order
    ]
    have = [snap.chunks[cid].get("embedding") for cid in snap.chunk_order]
    reembedded = 0
    # the vectors' precision (and int8 recipe) as the snapshot records it; re-embedded ones are the embedder's
    precision, recipe = snap.manifest.get("embedding_precision"), snap.manifest.get("int8_recipe")
    if rows and all(isinstance(v, list) and len(v) == dim for v in have):
        vectors = np.asarray(have, dtype=np.float32)
    elif rows:
        if precision:
            try:  # at the snapshot's precision, unless BRT_EMBED_BACKEND asks for the other one
                mem.use_embedder(get_embedder(mem.model_name, precision=precision))
            except ModelMismatch:
                log.warning("re-embedding %s as BRT_EMBED_BACKEND asks, not at %s", charter_id, precision)
        vectors = mem.embedder.embed_documents([r["text"] for r in rows])
        dim = int(vectors.shape[1])
        reembedded = len(rows)
        precision, recipe = mem.embedder.precision, getattr(mem.embedder, "recipe", None)
    else:
        vectors = np.zeros((0, dim or 1), dtype=np.float32)
    pages = [
        {"url": p.get("final_url") or p.get("url"), "requested_url": p.get("url")} | {k: p.get(k) for k in _PAGE_FIELDS}
        for p in snap.pages
    ]
    if not rows and any(p.get("text") for p in pages):
        # pages kept without a store (a harvest with memory.enabled: false): chunked and embedded now
        mem.add_many([{k: v for k, v in p.items() if k not in ("chunk_ids", "stored_at")} for p in pages])
        reembedded = mem.count_chunks()
    else:
        mem.load_rows(
            pages, rows, vectors, dim=dim or mem.dim, split_algo=snap.manifest.get("split_algo"),
            precision=precision, recipe=recipe,
        )
    restore_event = {
        "type": "restore",
        "restored_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "snapshot": str(snap.path),
        "snapshot_sha256": snap.manifest.get("sha256"),
        "snapshot_charter_id": snap.charter_id,
        "reembedded": reembedded,
    }
    mem.record_events([*snap.events, *_added_events(snap), restore_event])
    with mem.write_lock():
        with open(mem.path / CHARTER_FILE, "w", encoding="utf-8") as fh:
            for c in charters:
                for role in c["roles"]:
                    line = {"role": role, "recorded_at": c.get("recorded_at"), "charter_id": charter_id,
                            "sha256": c["sha256"], "format": c["format"], "source": c.get("source"), "text": c["text"]}
                    fh.write(json.dumps(line, ensure_ascii=False) + "\n")
    synthesis = False
    if snap.synthesis is not None:
        doc = {k: v for k, v in snap.synthesis.items() if k != "type"}
        doc["charter_id"] = charter_id
        old_sha = doc.get("charter_sha256")
        doc["charter_sha256"] = next((c["sha256"] for c in charters if c.get("original_sha256") == old_sha), old_sha)
        write_synthesis(mem, doc)
        synthesis = True
    concept_index = _restore_concepts(snap, mem, charter_id, harvested)
    har = None
    if har_file is not None:  # the HAR verified above: the one named, or the one beside (never a symlink)
        stamp = re.sub(r"[^0-9TZ]", "", str(snap.manifest.get("created_at") or "")) or "00000000T000000Z"
        har = copy_file(har_file, mem.path / "har" / f"{stamp}.har", within=[mem.path], follow_symlinks=named_har)
    check = mem.check()
    if not check.ok:
        log.warning("the restored store of %s has problems: %s", charter_id, check.problems[:5])
    return RestoreResult(
        charter_id=charter_id,
        snapshot=snap.path,
        store_path=mem.path,
        charter_path=None,
        pages=len(pages),
        chunks=len(rows),
        reembedded=reembedded,
        events=len(snap.events),
        concept_index=concept_index,
        synthesis=synthesis,
        har_path=har,
        check_ok=check.ok,
    )


def _added_events(snap: Snapshot) -> list[dict[str, Any]]:
    """A ``page_added`` journal record for each page the snapshot says an agent added (its ``origin``, which
    ``verify`` checked against the HAR), so the restored store's reports mark it whatever its events say."""
    from ..harvest.journal import ADDED, PAGE_ADDED

    return [{"type": PAGE_ADDED, "url": str(p.get("final_url") or p.get("url")), "requested_url": p.get("url"),
             "at": p.get("fetched_at"), "restored": True} for p in snap.pages if p.get("origin") == ADDED]


@contextlib.contextmanager
def _restore_lock(base: Path, charter_id: str) -> Iterator[None]:
    """An exclusive lock on restoring ``charter_id`` (``<base>/.restore-<id>.lock``, opened without following a
    symlink): concurrent restores of one id run one after the other, so exactly one store results."""
    import errno
    import fcntl

    base.mkdir(parents=True, exist_ok=True)
    path = base / f".restore-{charter_id}.lock"
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0),
                     0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise RestoreError(f"refused: {path} is a symlink") from None
        raise RestoreError(f"cannot lock {path}: {exc.strerror or exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another restore of this id: wait for it (it then holds the store)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _restore_concepts(snap: Snapshot, mem: Any, charter_id: str, harvested: dict[str, Any] | None) -> str:
    """The concept graph and pointer rows as stored; rebuilt from the chunks when the snapshot has no vectors
    for them; "none" when the snapshot had no index."""
    from memory_store.pointers import PointerRow, write_pointers

    from ..trail.store import graph_path

    graph = (snap.concept_graph or {}).get("graph")
    if graph is not None and (snap.concept_graph or {}).get("vectors", True):
        graph = dict(graph, charter_id=charter_id)
        path = graph_path(mem)
        with mem.write_lock():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(graph, ensure_ascii=False), encoding="utf-8")
            rows = [PointerRow(**{k: v for k, v in r.items() if k != "type"}) for r in snap.concept_pointers]
            write_pointers(mem.path, rows)
        return "restored"
    if graph is None and not snap.concepts:
        return "none"
    sections: list[Any] = []
    if harvested is not None:
        from ..trail.store import parse_charter_text

        sections = list(parse_charter_text(harvested["text"], harvested["format"]).outputs.sections)
    from concept_index import update_from_store

    update_from_store(mem, sections, rebuild=True)
    return "rebuilt"


_DOC_LINE = re.compile(r"^([ \t]+doc[ \t]*:[ \t]*)([^#\n]*?)([ \t]*(?:#.*)?)$", re.MULTILINE)


def _doc_inside(text: str, fmt: str, target: Path) -> str:
    """``text`` (a recorded charter) with its ``outputs.doc`` moved to ``out/<file name>`` when, read from
    ``target``'s folder, it would be absolute or leave that folder; otherwise ``text`` unchanged."""
    import yaml

    from ..errors import BrtError
    from ..safe_paths import charter_doc_path
    from ..trail.store import parse_charter_text

    try:
        charter = parse_charter_text(text, fmt)
    except BrtError:
        return text
    from ..charter import parse_charter

    placed = parse_charter(charter.model_dump(), source=Path(os.path.abspath(target)))
    try:
        charter_doc_path(placed)
        return text
    except BrtError:
        pass
    doc = f"out/{Path(charter.outputs.doc).name or charter.id + '.md'}"
    if fmt == "json":
        data = json.loads(text)
        data["outputs"]["doc"] = doc
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    moved, n = _DOC_LINE.subn(lambda m: f"{m.group(1)}{doc}{m.group(3)}", text)
    if n == 1:  # the file as recorded, comments kept, when the one line changed is outputs.doc
        try:
            changed = parse_charter_text(moved, fmt)
        except BrtError:
            changed = None
        if changed is not None and changed.model_dump() == charter.model_copy(
            update={"outputs": charter.outputs.model_copy(update={"doc": doc})}
        ).model_dump():
            return moved
    data = yaml.safe_load(text)
    data["outputs"]["doc"] = doc
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def _holds(path: Path, text: str) -> bool:
    """Whether ``path`` is a regular file (not a symlink) that holds ``text``."""
    from ..files import FileRefused, read_regular

    if path.is_symlink():
        return False
    try:
        return read_regular(path, limit=len(text.encode("utf-8")) + 1).decode("utf-8", "replace") == text
    except (OSError, FileRefused):
        return False


_ID_LINE = re.compile(r"^(id[ \t]*:[ \t]*)([^#\n]*?)([ \t]*(?:#.*)?)$", re.MULTILINE)


def _renamed_charters(snap: Snapshot, charter_id: str) -> list[dict[str, Any]]:
    """The snapshot's charter records, their text carrying ``charter_id`` (sha256 recomputed)."""
    import yaml

    from ..errors import BrtError, first_line
    from ..trail.store import parse_charter_text, sha256_text

    out = []
    for rec in snap.charters:
        text = str(rec.get("text") or "")
        fmt = str(rec.get("format") or "yaml")
        if charter_id != snap.charter_id:
            try:
                text = _rename(text, fmt, charter_id)
                parse_charter_text(text, fmt)  # still valid
            except (ValueError, TypeError, AttributeError, BrtError, yaml.YAMLError) as exc:
                raise RestoreError(f"the recorded charter {str(rec.get('sha256'))[:12]} cannot be restored as "
                                   f"{charter_id!r}: {first_line(exc)}") from None
        out.append({
            "sha256": sha256_text(text),
            "original_sha256": rec.get("sha256"),
            "format": fmt,
            "source": rec.get("source"),
            "roles": list(rec.get("roles") or ["harvest"]),
            "recorded_at": rec.get("recorded_at"),
            "text": text,
        })
    return out


def _rename(text: str, fmt: str, charter_id: str) -> str:
    if fmt == "json":
        data = json.loads(text)
        data["id"] = charter_id
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    renamed, n = _ID_LINE.subn(lambda m: f"{m.group(1)}{charter_id}{m.group(3)}", text, count=1)
    if n:
        return renamed
    import yaml

    data = yaml.safe_load(text)
    data["id"] = charter_id
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
