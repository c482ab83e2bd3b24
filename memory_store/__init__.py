"""memory_store: chunking, local embeddings and the per-charter LanceDB evidence store.

Importing this package is cheap: torch, FlagEmbedding, transformers and lancedb load on first use.
"""

from ._remote import is_remote_uri
from ._remote import redact as redact_uri
from ._writes import chunk_locally
from .embeddings import DEFAULT_MODEL, Embedder, get_embedder
from .errors import (
    BrtException,
    EmbeddingModelError,
    MemoryStoreError,
    ModelMismatch,
    SettingsError,
    StoreCorrupt,
    StoreLocked,
    StoreNotFound,
    StoreWriteError,
)
from .memory import Memory
from .records import CheckResult, Hit, PageInput, PageRecord, StoreStats
from .settings import Settings, brt_home

__all__ = [
    "DEFAULT_MODEL",
    "BrtException",
    "CheckResult",
    "EmbeddingModelError",
    "Embedder",
    "Hit",
    "Memory",
    "MemoryStoreError",
    "ModelMismatch",
    "PageInput",
    "PageRecord",
    "Settings",
    "SettingsError",
    "StoreCorrupt",
    "StoreLocked",
    "StoreNotFound",
    "StoreStats",
    "StoreWriteError",
    "brt_home",
    "chunk_locally",
    "get_embedder",
    "is_remote_uri",
    "redact_uri",
]
