"""Exceptions raised by memory_store, and the root of every brt error.

BrtException                 the root: every exception class brt defines derives from it (orchestrator's ``BrtError``,
│                            ``ConceptIndexError`` and brt's internal signals too); it lives here, in the
│                            lowest layer, so that every package can derive from it
└── MemoryStoreError
    ├── StoreNotFound        the charter's store does not exist (never harvested, or cleaned)
    ├── StoreLocked          another process holds the store's write lock (or harvests it)
    ├── ModelMismatch        the store was built with another embedding model
    ├── EmbeddingModelError  the embedding model cannot be found or loaded
    ├── StoreCorrupt         the store's files cannot be read
    ├── StoreWriteError      a write to the store failed (the rows written before stay consistent)
    ├── WriteStopped         a write stopped at its caller's signal before it changed anything
    ├── RemoteStoreError     the object store refused or failed an operation (``_remote.py``)
    └── SettingsError        a BRT_* environment variable holds a value brt cannot use (names it)

LanceDB's and the filesystem's own errors are translated where the store calls them (``store.py``) and chained
(``raise ... from``).
"""


class BrtException(Exception):
    """The root of every exception brt defines (``except BrtException`` catches anything brt raises on purpose).
    The branches keep their own roots: ``MemoryStoreError``, ``ConceptIndexError``, ``orchestrator.errors.BrtError``
    (which the shells map to exit codes and tool errors)."""


class MemoryStoreError(BrtException):
    """Base class of every memory_store error."""


class StoreNotFound(MemoryStoreError):
    pass


class StoreLocked(MemoryStoreError):
    pass


class ModelMismatch(MemoryStoreError):
    pass


class EmbeddingModelError(MemoryStoreError):
    pass


class StoreCorrupt(MemoryStoreError):
    pass


class StoreWriteError(MemoryStoreError):
    """A write (upsert, delete, index build, compaction) failed."""


class WriteStopped(MemoryStoreError):
    """``add_many`` was told to stop (its ``stop`` event) while it chunked or embedded: nothing was written."""


class SettingsError(MemoryStoreError, ValueError):
    """A ``BRT_*`` environment variable holds a value brt cannot use; the message names it."""
