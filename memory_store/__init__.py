"""memory_store: chunking, local embeddings and the per-charter LanceDB evidence store.

Importing this package is cheap: torch, FlagEmbedding, transformers and lancedb load on first use.
"""

from .embeddings import DEFAULT_MODEL, Embedder, get_embedder
from .errors import (
    EmbeddingModelError,
    MemoryStoreError,
    ModelMismatch,
    StoreCorrupt,
    StoreLocked,
    StoreNotFound,
)
from .memory import Memory
from .records import Hit, PageInput, PageRecord, StoreStats

__all__ = [
    "DEFAULT_MODEL",
    "EmbeddingModelError",
    "Embedder",
    "Hit",
    "Memory",
    "MemoryStoreError",
    "ModelMismatch",
    "PageInput",
    "PageRecord",
    "StoreCorrupt",
    "StoreLocked",
    "StoreNotFound",
    "StoreStats",
    "get_embedder",
]
