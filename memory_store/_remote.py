"""A store on object storage (private to memory_store): ``s3://bucket/prefix`` or any URI LanceDB supports.

Layout under ``<uri>/<charter_id>/``:

- ``lance/``: the LanceDB tables, read and written by LanceDB itself with the same ``storage_options``;
- ``files/<name>``: the store's small side files (``meta.json``, the journal ``events.jsonl``, concept pointers
  and graph, HARs, ...), mirrored from a local working folder: pulled when a ``Memory`` opens and when it takes
  the write lock, pushed when it releases the write or harvest lock;
- ``locks/<name>.lease``: lease objects that keep writers on different machines apart (``LeaseLock``).

**Lease guarantee.** A lease is taken with a conditional put (``If-None-Match: *``; an expired or released
lease is taken over with ``If-Match`` on its ETag), so of two processes racing for it exactly one wins on any
store that honours conditional puts (AWS S3 since 2024, SeaweedFS, MinIO, GCS, Azure, local files). The holder
renews it every ``ttl/3`` seconds; a killed holder's lease expires after ``ttl`` (``$BRT_LEASE_TTL``, default
60 s) and the next writer takes it over. A holder that cannot renew in time (paused past the TTL, cut off from
the store) is told so (``lost``) and its next lease operation raises ``StoreLocked``; writes it has already
started are not fenced, so clocks must agree to well within the TTL. The ``storage_options`` (credentials) are
held in memory only: they are never written to the store, a snapshot, the journal or a log line.

``obstore`` (the Python binding of the same Rust ``object_store`` crate LanceDB uses) is imported lazily.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .errors import MemoryStoreError, StoreLocked
from .settings import settings

log = logging.getLogger(__name__)

FILES = "files"
LOCKS = "locks"
#: Local files that are never mirrored (local locks and their holder notes, temporary files).
_LOCAL_ONLY_SUFFIXES = (".lock", ".holder", ".tmp")
#: storage_options keys that configure the HTTP client rather than the store (obstore keeps them apart).
_CLIENT_KEYS = {"allow_http", "allow_invalid_certificates", "connect_timeout", "timeout", "proxy_url"}


class RemoteStoreError(MemoryStoreError):
    """The object store refused or failed an operation."""


def is_remote_uri(uri: str | None) -> bool:
    """True for a URI with a scheme other than ``file`` (``s3://``, ``gs://``, ``az://``, ...)."""
    if not uri:
        return False
    scheme = urlsplit(uri).scheme
    return len(scheme) > 1 and scheme != "file"


def lease_ttl() -> float:
    """``$BRT_LEASE_TTL`` in seconds (default 60)."""
    return settings().lease_ttl_s


def redact(uri: str) -> str:
    """``uri`` without any user:password part (what may be shown in messages and logs)."""
    parts = urlsplit(uri)
    if "@" not in parts.netloc:
        return uri
    return parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]).geturl()


class ObjectDir:
    """The objects under ``<uri>/<charter_id>/`` (get, put, conditional put, list, delete)."""

    def __init__(self, uri: str, charter_id: str, storage_options: Mapping[str, Any] | None = None) -> None:
        self.base_uri = uri.rstrip("/")
        self.charter_id = charter_id
        self.uri = f"{self.base_uri}/{charter_id}"
        self._options = {str(k): v for k, v in (storage_options or {}).items()}
        self._store: Any = None

    def __repr__(self) -> str:  # never shows the storage options
        return f"ObjectDir({redact(self.uri)!r})"

    @property
    def lance_uri(self) -> str:
        return f"{self.uri}/lance"

    @property
    def storage_options(self) -> dict[str, str]:
        """The options as LanceDB takes them (string values)."""
        return {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in self._options.items()}

    @property
    def store(self) -> Any:
        if self._store is None:
            try:
                from obstore.store import from_url
            except ImportError as exc:  # pragma: no cover - declared dependency
                raise RemoteStoreError("a store on object storage needs the package obstore") from exc
            config = {k: v for k, v in self._options.items() if k not in _CLIENT_KEYS}
            client = {
                k: _truthy(v) if k.startswith("allow") else v for k, v in self._options.items() if k in _CLIENT_KEYS
            }
            try:
                self._store = from_url(self.uri + "/", config=config or None, client_options=client or None)
            except Exception as exc:
                raise RemoteStoreError(f"cannot open object store {redact(self.uri)}: {_msg(exc)}") from exc
        return self._store

    # --- plain operations ----------------------------------------------------------------------------
    def get(self, key: str) -> tuple[bytes, str] | None:
        """(content, etag) of ``key``, or None when it does not exist."""
        import obstore

        try:
            result = obstore.get(self.store, key)
            return bytes(result.bytes()), str(result.meta.get("e_tag") or "")
        except FileNotFoundError:
            return None
        except Exception as exc:
            raise RemoteStoreError(f"cannot read {redact(self.uri)}/{key}: {_msg(exc)}") from exc

    def put(self, key: str, data: bytes) -> str:
        import obstore

        try:
            return str(obstore.put(self.store, key, data).get("e_tag") or "")
        except Exception as exc:
            raise RemoteStoreError(f"cannot write {redact(self.uri)}/{key}: {_msg(exc)}") from exc

    def put_if(self, key: str, data: bytes, etag: str | None) -> str | None:
        """Put ``data`` only if ``key`` does not exist (etag None) or still has ``etag``; the new etag, or None
        when the condition failed."""
        import obstore
        from obstore.exceptions import AlreadyExistsError, PreconditionError

        mode: Any = "create" if etag is None else {"e_tag": etag}
        try:
            return str(obstore.put(self.store, key, data, mode=mode).get("e_tag") or "")
        except (AlreadyExistsError, PreconditionError, FileNotFoundError):
            return None
        except Exception as exc:
            raise RemoteStoreError(f"cannot write {redact(self.uri)}/{key}: {_msg(exc)}") from exc

    def list(self, prefix: str = "") -> list[dict[str, Any]]:
        """Every object under ``prefix`` (relative paths in ``path``, with ``size`` and ``e_tag``)."""
        import obstore

        try:
            out: list[dict[str, Any]] = []
            for batch in obstore.list(self.store, prefix or None):
                out.extend(batch)
            return out
        except FileNotFoundError:
            return []
        except Exception as exc:
            raise RemoteStoreError(f"cannot list {redact(self.uri)}/{prefix}: {_msg(exc)}") from exc

    def delete(self, keys: list[str]) -> None:
        import obstore

        for i in range(0, len(keys), 500):
            try:
                obstore.delete(self.store, keys[i : i + 500])
            except FileNotFoundError:
                pass
            except Exception as exc:
                raise RemoteStoreError(f"cannot delete objects under {redact(self.uri)}: {_msg(exc)}") from exc

    def delete_all(self) -> int:
        """Delete every object of the store (tables, side files, leases); returns how many."""
        keys = [o["path"] for o in self.list()]
        self.delete(keys)
        return len(keys)

    def exists(self) -> bool:
        """True when the store has been created (its ``meta.json`` exists)."""
        import obstore

        try:
            obstore.head(self.store, f"{FILES}/meta.json")
            return True
        except FileNotFoundError:
            return False
        except Exception as exc:
            raise RemoteStoreError(f"cannot read {redact(self.uri)}: {_msg(exc)}") from exc

    def size(self) -> int:
        return sum(int(o.get("size") or 0) for o in self.list())


def _truthy(value: Any) -> bool:
    return value is True or str(value).lower() in ("1", "true", "yes")


def _msg(exc: BaseException) -> str:
    """An exception's first line (object-store errors carry whole HTTP bodies)."""
    return (str(exc).splitlines() or [type(exc).__name__])[0][:300]


def local_cache(basepath: Path, uri: str, charter_id: str) -> Path:
    """The local working folder of a remote store: ``<basepath>/.remote/<sha256(uri)[:16]>/<charter_id>``."""
    digest = hashlib.sha256(redact(uri).rstrip("/").encode()).hexdigest()[:16]
    return basepath / ".remote" / digest / charter_id


PARTS = ".~parts"


@dataclass
class _Seen:
    """What this process last pulled or pushed of one side file."""

    objects: dict[str, str]  # object key -> etag (the base object and its appended parts)
    size: int
    mtime_ns: int
    digest: str  # sha256 of the content
    base_size: int  # bytes in the base object (the rest is in parts)


def _logical(key: str) -> str:
    """The side file an object belongs to: ``events.jsonl`` for ``events.jsonl`` and its parts."""
    return key.split(f"{PARTS}/", 1)[0].removesuffix(PARTS) if PARTS in key else key


class FileMirror:
    """Keeps the store's side files in the local working folder and under ``files/`` in step.

    A file that only grew since the last push (the journal) is pushed as one more part object
    (``files/<name>.~parts/<offset>``), not re-uploaded whole; the parts are folded into the base object once
    they outweigh it, so a harvest's uploads stay proportional to what it writes."""

    def __init__(self, objects: ObjectDir, local: Path) -> None:
        self.objects = objects
        self.local = local
        self._seen: dict[str, _Seen] = {}
        self.enabled = True
        self._mutex = threading.Lock()

    def forget(self) -> None:
        """Start afresh (after the store was deleted): nothing seen, mirroring on."""
        with self._mutex:
            self._seen.clear()
            self.enabled = True

    def _local_files(self) -> dict[str, Path]:
        out: dict[str, Path] = {}
        if not self.local.is_dir():
            return out
        for path in self.local.rglob("*"):
            if path.is_file() and not path.name.endswith(_LOCAL_ONLY_SUFFIXES):
                out[path.relative_to(self.local).as_posix()] = path
        return out

    def pull(self) -> int:
        """Download every side file whose remote version this process has not seen; remove local copies of
        files deleted remotely. Returns the files downloaded."""
        if not self.enabled:
            return 0
        with self._mutex:
            remote: dict[str, dict[str, str]] = {}
            for obj in self.objects.list(FILES):
                key = obj["path"][len(FILES) + 1 :]
                remote.setdefault(_logical(key), {})[key] = str(obj.get("e_tag") or "")
            n = 0
            for name, objs in remote.items():
                seen = self._seen.get(name)
                target = self.local / name
                if seen and seen.objects == objs and target.exists():
                    continue
                if name not in objs:  # parts without their base: a rewrite in progress; keep what we have
                    continue
                base = self.objects.get(f"{FILES}/{name}")
                if base is None:
                    continue
                data, got = base[0], {name: base[1]}
                parts = sorted((k for k in objs if k != name), key=lambda k: int(k.rsplit("/", 1)[1]))
                for key in parts:
                    if int(key.rsplit("/", 1)[1]) != len(data):
                        break  # a part of an older generation: stop at the last contiguous one
                    part = self.objects.get(f"{FILES}/{key}")
                    if part is None:
                        break
                    data += part[0]
                    got[key] = part[1]
                target.parent.mkdir(parents=True, exist_ok=True)
                tmp = target.with_name(target.name + f".{uuid.uuid4().hex[:8]}.tmp")
                tmp.write_bytes(data)
                os.replace(tmp, target)
                st = target.stat()
                digest = hashlib.sha256(data).hexdigest()
                self._seen[name] = _Seen(got, st.st_size, st.st_mtime_ns, digest, len(base[0]))
                n += 1
            for name in list(self._seen):
                if name not in remote:
                    with contextlib.suppress(FileNotFoundError):
                        (self.local / name).unlink()
                    del self._seen[name]
            return n

    def push(self) -> int:
        """Upload side files changed locally since the last pull or push (only the new bytes of a file that
        grew); delete remote copies of files deleted locally. Returns the files uploaded."""
        if not self.enabled:
            return 0
        with self._mutex:
            files = self._local_files()
            n = 0
            for name, path in files.items():
                try:
                    st = path.stat()
                except FileNotFoundError:
                    continue
                seen = self._seen.get(name)
                if seen and (seen.size, seen.mtime_ns) == (st.st_size, st.st_mtime_ns):
                    continue
                data = path.read_bytes()
                self._push_one(name, data, seen)
                st = path.stat()
                self._seen[name].mtime_ns = st.st_mtime_ns
                n += 1
            gone = [name for name in self._seen if name not in files]
            if gone:
                self.objects.delete([f"{FILES}/{key}" for name in gone for key in self._seen[name].objects])
                for name in gone:
                    del self._seen[name]
            return n

    def _push_one(self, name: str, data: bytes, seen: _Seen | None) -> None:
        digest = hashlib.sha256(data).hexdigest()
        grew = (
            seen is not None
            and len(data) > seen.size
            and hashlib.sha256(data[: seen.size]).hexdigest() == seen.digest
        )
        if seen is not None and grew and (seen.size - seen.base_size) + (len(data) - seen.size) <= seen.base_size:
            key = f"{name}{PARTS}/{seen.size:016d}"
            etag = self.objects.put(f"{FILES}/{key}", data[seen.size :])
            objects = dict(seen.objects, **{key: etag})
            self._seen[name] = _Seen(objects, len(data), 0, digest, seen.base_size)
            return
        # A rewrite (or parts outweighing the base): drop the parts first, so that a reader never joins the
        # new base with old parts, then put the whole file.
        if seen is not None:
            old_parts = [f"{FILES}/{k}" for k in seen.objects if k != name]
            if old_parts:
                self.objects.delete(old_parts)
        etag = self.objects.put(f"{FILES}/{name}", data)
        self._seen[name] = _Seen({name: etag}, len(data), 0, digest, len(data))


class LeaseLock:
    """An exclusive lease on ``locks/<name>.lease`` (see the module docstring for the guarantee)."""

    def __init__(self, objects: ObjectDir, name: str, ttl: float | None = None) -> None:
        self.objects = objects
        self.key = f"{LOCKS}/{name}.lease"
        self.ttl = ttl if ttl is not None else lease_ttl()
        self.token = ""
        self._etag: str | None = None
        self._count = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._mutex = threading.RLock()
        self.lost = False

    @property
    def held(self) -> bool:
        return self._count > 0

    def _body(self, expires_in: float) -> bytes:
        return json.dumps(
            {
                "token": self.token if expires_in > 0 else "",
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "expires_at": time.time() + expires_in,
                "ttl": self.ttl,
            }
        ).encode()

    def holder(self) -> dict[str, Any]:
        """The current lease record ({} when there is none)."""
        got = self.objects.get(self.key)
        if got is None:
            return {}
        try:
            return dict(json.loads(got[0] or b"{}"))
        except ValueError:
            return {}

    def try_acquire(self) -> bool:
        """One attempt: True when this process now holds the lease (re-entrant)."""
        with self._mutex:
            if self._count:
                self._count += 1
                return True
            self.token = uuid.uuid4().hex
            got = self.objects.get(self.key)
            if got is None:
                etag = self.objects.put_if(self.key, self._body(self.ttl), None)
            else:
                try:
                    current = json.loads(got[0] or b"{}")
                except ValueError:
                    current = {}
                if float(current.get("expires_at") or 0) > time.time():
                    return False
                if current.get("token"):
                    log.warning(
                        "lease %s of pid %s on %s expired: taking it over",
                        self.key,
                        current.get("pid"),
                        current.get("host"),
                    )
                etag = self.objects.put_if(self.key, self._body(self.ttl), got[1])
            if etag is None:
                return False
            self._etag, self._count, self.lost = etag, 1, False
            self._stop.clear()
            self._thread = threading.Thread(target=self._renew_loop, name=f"lease-{self.key}", daemon=True)
            self._thread.start()
            return True

    def acquire(self, timeout: float, what: str) -> None:
        """Take the lease, waiting up to ``timeout`` seconds (0 = one attempt); StoreLocked if it stays held."""
        deadline = time.monotonic() + timeout
        delay = 0.05
        while not self.try_acquire():
            if time.monotonic() >= deadline:
                h = self.holder()
                left = max(0.0, float(h.get("expires_at") or 0) - time.time())
                raise StoreLocked(
                    f"{what} is held by pid {h.get('pid', '?')} on {h.get('host', '?')} "
                    f"(lease on {redact(self.objects.uri)} expires in {left:.0f} s unless renewed)"
                )
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 1.0)

    def _renew_loop(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            with self._mutex:
                if not self._count or self._etag is None:
                    return
                try:
                    etag = self.objects.put_if(self.key, self._body(self.ttl), self._etag)
                except RemoteStoreError as exc:
                    log.warning("cannot renew lease %s: %s", self.key, exc)
                    continue
                if etag is None:
                    self.lost = True
                    log.error("lease %s was lost (taken over or removed): stop writing", self.key)
                    return
                self._etag = etag

    def check(self) -> None:
        if self.lost:
            raise StoreLocked(f"the lease {self.key} on {redact(self.objects.uri)} was lost to another writer")

    def release(self) -> None:
        with self._mutex:
            if not self._count:
                return
            self._count -= 1
            if self._count:
                return
            self._stop.set()
            etag, self._etag = self._etag, None
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        if etag is not None and not self.lost:
            with contextlib.suppress(RemoteStoreError):  # expired at once: the next writer takes it over
                self.objects.put_if(self.key, self._body(-1.0), etag)

    def abandon(self) -> None:
        """Stop renewing without writing (the store and its lease objects were deleted)."""
        with self._mutex:
            self._stop.set()
            self._etag = None


class RemoteLocks:
    """The store's write and harvest locks on object storage: the local ``StoreLocks`` (threads and processes
    on this machine) and then a lease (processes on other machines); the side files are pulled after the
    write lock is taken and pushed before it, or the harvest lock, is released."""

    def __init__(self, local: Any, objects: ObjectDir, mirror: FileMirror, charter_id: str) -> None:
        self.local = local
        self.objects = objects
        self.mirror = mirror
        self.charter_id = charter_id
        self.write_lease = LeaseLock(objects, "write")
        self.harvest_lease = LeaseLock(objects, "harvest")
        self._depth = threading.local()

    @contextlib.contextmanager
    def write(self) -> Iterator[None]:
        from ._locks import lock_timeout

        with self.local.write():
            depth = getattr(self._depth, "n", 0)
            if depth:
                self._depth.n = depth + 1
                try:
                    yield
                finally:
                    self._depth.n = depth
                return
            self.write_lease.acquire(lock_timeout(), f"the write lock of charter {self.charter_id}")
            self._depth.n = 1
            try:
                self.mirror.pull()
                yield
            finally:
                try:
                    self.write_lease.check()
                    self.mirror.push()
                finally:
                    self._depth.n = 0
                    self.write_lease.release()

    @contextlib.contextmanager
    def harvest(self) -> Iterator[None]:
        with self.local.harvest():
            if not self.harvest_lease.held:
                self.harvest_lease.acquire(0, f"charter {self.charter_id} is being harvested: its harvest lock")
            else:
                self.harvest_lease.try_acquire()
            try:
                yield
            finally:
                try:
                    self.mirror.push()
                finally:
                    self.harvest_lease.release()
