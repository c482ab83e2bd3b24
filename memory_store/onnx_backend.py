"""The bundled model on ONNX Runtime with the ``tokenizers`` library: no torch, transformers or FlagEmbedding.

Same tokenizer file, truncation (the model's ``max_seq_length``, 256), pooling and normalisation as the
FlagEmbedding path, so fp32 vectors equal FlagEmbedding's (cosine >= 0.9999; ``tests/test_onnx_backend.py``).

How it spends the CPU (``docs/storage.md``, "Embeddings"): batches of at most ``BATCH_TOKENS`` padded tokens
(one chunk of 256 tokens alone, a dozen short sentences together), so a batch's working set stays in the CPU's
caches (32 chunks of 256 tokens hold 100 MB of attention scores), and one ONNX thread per batch, the batches
shared among ``embedding_threads()`` callers instead of every operator split across threads (whose hand-offs
cost CPU on every one of a run's hundreds of operators). Each text's vector is the one it gets alone: the fp32
graph computes every row by itself, so the batching changes no bit of it. The int8 graph scales its activations per
batch, so a short text's int8 vector depends a little on the texts batched with it; a chunk (more than half the
budget) runs alone, so its vector is the one it gets alone.
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

#: Padded tokens per model call at most (a text longer than this runs alone).
BATCH_TOKENS = 256


def embedding_threads() -> int:
    """CPU threads for embedding: ``$BRT_TORCH_THREADS`` (any backend), else every core."""
    return settings().cpu_threads


class OnnxEncoder:
    """Tokenizer + ONNX Runtime session of one exported model; ``encode`` gives pooled, unnormalised vectors."""

    def __init__(self, onnx_file: Path, tokenizer_file: Path, *, max_tokens: int, pooling: str,
                 model_bytes: bytes | None = None, tokenizer_json: str | None = None,
                 batch_tokens: int | None = BATCH_TOKENS, graph_level: str = "all") -> None:
        """``model_bytes`` / ``tokenizer_json``: the files' contents already read (and hash-checked,
        ``model_export.verified_bytes``), loaded instead of reading the paths again. ``batch_tokens``: padded
        tokens a batch at most (None: ``batch_size`` texts whatever their length; the int8 graph scales its
        activations per batch: a text of more than half the budget runs alone, so its vector is the one it gets
        alone). ``graph_level``: ONNX Runtime's graph optimisations, ``all`` (its default) or ``basic``
        (``model_export.INT8_GRAPH_LEVEL``: the int8 graph's layer norms stay unfused)."""
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - dependency missing
            raise EmbeddingModelError(f"the ONNX backend needs onnxruntime and tokenizers ({exc})") from exc
        if pooling not in ("mean", "cls"):
            raise EmbeddingModelError(f"unsupported pooling {pooling!r} for the ONNX backend")
        self.pooling = pooling
        self.max_tokens = max_tokens
        self.batch_tokens = batch_tokens
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
        self.threads = max(1, embedding_threads())  # callers running batches side by side (``encode``)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1  # one thread per run: the parallelism is across batches
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3  # errors only: ORT's warnings are not the user's business
        level = ort.GraphOptimizationLevel
        levels = {"all": level.ORT_ENABLE_ALL, "basic": level.ORT_ENABLE_BASIC}
        if graph_level not in levels:
            raise EmbeddingModelError(f"unknown ONNX Runtime graph level {graph_level!r}")
        opts.graph_optimization_level = levels[graph_level]
        # (were more threads set) idle intra-op threads sleep instead of spin-waiting: a harvest shares the
        # cores with Chromium and extraction, and ORT's default spins after every run.
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
        Texts are sorted by length and batched (at most ``batch_size`` texts and ``batch_tokens`` padded tokens a
        batch, each padded to its longest), the batches run by up to ``self.threads`` threads at once.
        ``stop``: looked at before each batch; once set, WriteStopped is raised."""

        encs = self._embed_tok.encode_batch(list(texts), add_special_tokens=True)
        batches = iter(padded_batches(encs, batch_size, max_tokens=self.batch_tokens))
        state = _Run(len(texts))

        def work() -> None:
            while not state.failed:
                with state.lock:  # the generator is not thread-safe
                    nxt = next(batches, None)
                if nxt is None:
                    return
                if stop is not None and stop.is_set():
                    raise WriteStopped("stopped while embedding")
                idx, feeds = nxt
                state.put(idx, self._pooled(feeds))

        n_threads = min(self.threads, len(texts))
        if n_threads <= 1:
            work()
        else:
            _in_threads(work, n_threads, state)
        assert state.out is not None
        return state.out, state.batches

    def _pooled(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        import numpy as np

        hidden = self._session.run(None, {k: v for k, v in feeds.items() if k in self._inputs})[0]
        if self.pooling == "cls":
            return hidden[:, 0]
        m = feeds["attention_mask"][..., None].astype(np.float32)
        return (hidden * m).sum(axis=1) / m.sum(axis=1)


class _Run:
    """The shared state of one ``encode`` across its threads: the output rows, the batch count, the first
    error (which stops the others at their next batch)."""

    def __init__(self, rows: int) -> None:
        import threading

        self.out: np.ndarray | None = None
        self.rows = rows
        self.batches = 0
        self.lock = threading.Lock()
        self.error: BaseException | None = None
        self.failed = False

    def put(self, idx: np.ndarray, pooled: np.ndarray) -> None:
        import numpy as np

        with self.lock:
            if self.out is None:
                self.out = np.empty((self.rows, pooled.shape[1]), dtype=np.float32)
            self.out[idx] = pooled
            self.batches += 1

    def fail(self, exc: BaseException) -> None:
        with self.lock:
            if self.error is None:
                self.error = exc
            self.failed = True


def _in_threads(work: Any, n: int, state: _Run) -> None:
    """``work`` in ``n`` threads (this one among them); the first error of any is raised here once all ended."""
    import threading

    def guarded() -> None:
        try:
            work()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread below
            state.fail(exc)

    helpers = [threading.Thread(target=guarded, name=f"brt-embed-{i}", daemon=True) for i in range(n - 1)]
    for t in helpers:
        t.start()
    guarded()
    for t in helpers:
        t.join()
    if state.error is not None:
        raise state.error


def padded_batches(
    encs: Sequence[Any], batch_size: int, *, max_tokens: int | None = None
) -> Iterator[tuple[np.ndarray, dict[str, np.ndarray]]]:
    """Tokenizer encodings sorted by length (longest first) and cut into batches of at most ``batch_size``
    (and, with ``max_tokens``, at most that many padded tokens; a longer text alone), each padded to its
    longest: (the batch's indices into ``encs``, its ``input_ids`` / ``attention_mask`` / ``token_type_ids``)."""
    import numpy as np

    order = np.argsort([-len(e.ids) for e in encs], kind="stable")
    start = 0
    while start < len(encs):
        width = len(encs[order[start]].ids)  # the batch's longest: sorted, it comes first
        rows = batch_size if max_tokens is None else max(1, min(batch_size, max_tokens // max(1, width)))
        idx = order[start : start + rows]
        start += rows
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
