"""Optional cross-encoder rerank with FlagEmbedding's ``FlagReranker`` (local models only, loaded once per process).

No reranker ships with brt: the default name ``BAAI/bge-reranker-base`` works only when that model is in the local
Hugging Face cache (or give a local folder). Without a real reranker model the rerank stage brings no quality.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from .embeddings import find_local_model
from .errors import EmbeddingModelError

log = logging.getLogger(__name__)

DEFAULT_RERANKER = "BAAI/bge-reranker-base"
RERANK_MAX_LENGTH = 512
RERANK_BATCH_SIZE = 16

_cache: dict[str, Reranker] = {}
_lock = threading.Lock()


def _resolve(name: str) -> Path:
    return find_local_model(name, what="reranker model", hint=", or search without --rerank")


class Reranker:
    """A loaded cross-encoder: ``score(query, passages)`` -> relevance in (0, 1) (sigmoid of the logit)."""

    def __init__(self, name: str, path: Path) -> None:
        self.name = name
        self.path = path
        self._lock = threading.Lock()
        try:
            from FlagEmbedding import FlagReranker

            self._flag: Any = FlagReranker(
                str(path),
                use_fp16=False,
                devices="cpu",
                batch_size=RERANK_BATCH_SIZE,
                max_length=RERANK_MAX_LENGTH,
            )
        except Exception as exc:
            raise EmbeddingModelError(f"cannot load reranker {name!r} from {path}: {exc}") from exc
        log.info("loaded reranker %s from %s", name, path)

    def score(self, query: str, passages: list[str]) -> list[float]:
        if not passages:
            return []
        pairs = [(query, p) for p in passages]
        with self._lock:
            out = self._flag.compute_score(pairs, normalize=True)
        if isinstance(out, (int, float)):
            out = [out]
        return [float(x) for x in out]


def get_reranker(model: str | None = None) -> Reranker:
    """The process-wide reranker for ``model`` (None = ``DEFAULT_RERANKER``), loaded on first use."""
    name = model or DEFAULT_RERANKER
    with _lock:
        cached = _cache.get(name)
        if cached is None:
            cached = Reranker(name, _resolve(name))
            _cache[name] = cached
        return cached
