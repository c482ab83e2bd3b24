"""The bundled model on ONNX Runtime with the ``tokenizers`` library: no torch, transformers or FlagEmbedding.

Same tokenizer file, truncation (the model's ``max_seq_length``, 256), pooling and normalisation as the
FlagEmbedding path, so fp32 vectors equal FlagEmbedding's (cosine >= 0.9999; ``tests/test_onnx_backend.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import EmbeddingModelError, WriteStopped
from .settings import settings

if TYPE_CHECKING:
    import threading

    import numpy as np

log = logging.getLogger(__name__)


def embedding_threads() -> int:
    """CPU threads for embedding: ``$BRT_TORCH_THREADS`` (any backend), else every core."""
    return settings().cpu_threads


class OnnxEncoder:
    """Tokenizer + ONNX Runtime session of one exported model; ``encode`` gives pooled, unnormalised vectors."""

    def __init__(self, onnx_file: Path, tokenizer_file: Path, *, max_tokens: int, pooling: str,
                 model_bytes: bytes | None = None, tokenizer_json: str | None = None) -> None:
        """``model_bytes`` / ``tokenizer_json``: the files' contents already read (and hash-checked,
        ``model_export.verified_bytes``), loaded instead of reading the paths again."""
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - dependency missing
            raise EmbeddingModelError(f"the ONNX backend needs onnxruntime and tokenizers ({exc})") from exc
        if pooling not in ("mean", "cls"):
            raise EmbeddingModelError(f"unsupported pooling {pooling!r} for the ONNX backend")
        self.pooling = pooling
        self.max_tokens = max_tokens
        try:
            # two instances: counting must see the whole text, embedding truncates like FlagEmbedding
            def load() -> Any:
                if tokenizer_json is not None:
                    return Tokenizer.from_str(tokenizer_json)
                return Tokenizer.from_file(str(tokenizer_file))

            self._count_tok = load()
            self._count_tok.no_truncation()
            self._count_tok.no_padding()
            self._embed_tok = load()
            self._embed_tok.enable_truncation(max_length=max_tokens)
            self._embed_tok.no_padding()
        except Exception as exc:
            raise EmbeddingModelError(f"cannot load tokenizer {tokenizer_file}: {exc}") from exc
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = embedding_threads()
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3  # errors only: ORT's warnings are not the user's business
        # A harvest shares the cores with Chromium and extraction: idle intra-op threads sleep instead of
        # spin-waiting (ORT's default spins after every run, burning CPU the browser needs).
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        opts.add_session_config_entry("session.inter_op.allow_spinning", "0")
        self.session_options = opts
        try:
            model = model_bytes if model_bytes is not None else str(onnx_file)
            self._session = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
        except Exception as exc:
            raise EmbeddingModelError(f"cannot load ONNX model {onnx_file}: {exc}") from exc
        self._inputs = {i.name for i in self._session.get_inputs()}
        out = self._session.get_outputs()[0].shape
        self.dim = int(out[-1]) if isinstance(out[-1], int) else 0

    # --- tokens -----------------------------------------------------------------------------------------
    @property
    def special_tokens(self) -> int:
        return int(self._count_tok.num_special_tokens_to_add(False))

    def count_tokens(self, text: str) -> int:
        return len(self._count_tok.encode(text, add_special_tokens=False).ids)

    def count_tokens_batch(self, texts: list[str]) -> list[int]:
        return [len(e.ids) for e in self._count_tok.encode_batch(list(texts), add_special_tokens=False)]

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        return [(int(a), int(b)) for a, b in self._count_tok.encode(text, add_special_tokens=False).offsets]

    # --- vectors ----------------------------------------------------------------------------------------
    def encode(
        self, texts: list[str], batch_size: int, *, stop: threading.Event | None = None
    ) -> tuple[np.ndarray, int]:
        """Pooled vectors of ``texts`` (rows in input order, not normalised) and the number of batches run.
        Texts are sorted by length and batched, each batch padded to its longest text (as FlagEmbedding).
        ``stop``: looked at before each batch; once set, WriteStopped is raised (the batches are unchanged)."""
        import numpy as np

        encs = self._embed_tok.encode_batch(list(texts), add_special_tokens=True)
        out: np.ndarray | None = None
        batches = 0
        for idx, feeds in padded_batches(encs, batch_size):
            if stop is not None and stop.is_set():
                raise WriteStopped("stopped while embedding")
            mask = feeds["attention_mask"]
            hidden = self._session.run(None, {k: v for k, v in feeds.items() if k in self._inputs})[0]
            if self.pooling == "cls":
                pooled = hidden[:, 0]
            else:
                m = mask[..., None].astype(np.float32)
                pooled = (hidden * m).sum(axis=1) / m.sum(axis=1)
            if out is None:
                out = np.empty((len(texts), pooled.shape[1]), dtype=np.float32)
            out[idx] = pooled
            batches += 1
        assert out is not None
        return out, batches


def padded_batches(encs: Sequence[Any], batch_size: int) -> Iterator[tuple[np.ndarray, dict[str, np.ndarray]]]:
    """Tokenizer encodings sorted by length (longest first) and cut into batches, each padded to its longest:
    (the batch's indices into ``encs``, its ``input_ids`` / ``attention_mask`` / ``token_type_ids``)."""
    import numpy as np

    order = np.argsort([-len(e.ids) for e in encs], kind="stable")
    for start in range(0, len(encs), batch_size):
        idx = order[start : start + batch_size]
        width = max(len(encs[i].ids) for i in idx)
        ids = np.zeros((len(idx), width), dtype=np.int64)
        mask = np.zeros((len(idx), width), dtype=np.int64)
        types = np.zeros((len(idx), width), dtype=np.int64)
        for row, i in enumerate(idx):
            e = encs[i]
            n = len(e.ids)
            ids[row, :n] = e.ids
            mask[row, :n] = 1
            types[row, :n] = e.type_ids
        yield idx, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
