"""The evidence reader: a small cross-encoder (trained by ``bench/train_reader.py`` from the bundled MiniLM) that
reads a question and a candidate quote together and gives a logit for "this quote answers it". It runs on ONNX
Runtime with the ``tokenizers`` library (no torch), and only over each section's best candidates by the other
features (``READ_TOP``), so its cost is bounded per section. Its file's sha256 is recorded in
``models/manifest.json`` and checked on load."""

from __future__ import annotations

import functools
import hashlib
import logging
import threading
from collections.abc import Sequence
from pathlib import Path

from memory_store.onnx_backend import padded_batches

from ..errors import EvidenceModelError

log = logging.getLogger(__name__)

MODELS = Path(__file__).resolve().parent / "models"
READER_FILE = MODELS / "reader.onnx"
TOKENIZER_FILE = MODELS / "reader-tokenizer" / "tokenizer.json"
MAX_TOKENS = 160
BATCH = 32


class Reader:
    """``logits(question, quotes)``: one float per quote, higher = more likely to answer."""

    def __init__(self, onnx_file: Path, tokenizer_file: Path) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        from memory_store.onnx_backend import embedding_threads

        try:
            self._tok = Tokenizer.from_file(str(tokenizer_file))
        except Exception as exc:
            raise EvidenceModelError(f"evidence reader tokenizer {tokenizer_file}: {exc}") from None
        self._tok.enable_truncation(max_length=MAX_TOKENS, strategy="only_second")
        self._tok.no_padding()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = embedding_threads()
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self._session = ort.InferenceSession(str(onnx_file), opts, providers=["CPUExecutionProvider"])
        except Exception as exc:
            raise EvidenceModelError(f"evidence reader {onnx_file}: {exc}") from None
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._lock = threading.Lock()

    def logits(self, question: str, quotes: Sequence[str]) -> list[float]:
        import numpy as np

        if not quotes:
            return []
        encs = self._tok.encode_batch([(question, q) for q in quotes])
        out = np.zeros(len(quotes), dtype=np.float32)
        for idx, feeds in padded_batches(encs, BATCH):
            with self._lock:
                res = self._session.run(None, {k: v for k, v in feeds.items() if k in self._inputs})[0]
            out[idx] = np.asarray(res, dtype=np.float32).reshape(-1)
        return out.tolist()


def reader_files() -> tuple[Path, Path]:
    """The reader's ONNX file and tokenizer: ``BRT_EVIDENCE_READER`` (a folder holding ``reader.onnx`` and
    ``reader-tokenizer/``) when set, else the shipped ones."""
    from memory_store.settings import settings

    folder = settings().evidence_reader
    if folder is not None:
        return folder / "reader.onnx", folder / "reader-tokenizer" / "tokenizer.json"
    return READER_FILE, TOKENIZER_FILE


def load_reader() -> Reader:
    """The reader in use, loaded once per process; its sha256 checked against the recorded one when shipped."""
    onnx_file, tok = reader_files()
    return _load(str(onnx_file), str(tok))


@functools.lru_cache(maxsize=2)
def _load(onnx_file: str, tokenizer_file: str) -> Reader:
    from .scorer import recorded_sha256

    path = Path(onnx_file)
    if not path.is_file():
        raise EvidenceModelError(f"evidence reader {path}: missing")
    recorded = recorded_sha256(path)
    if recorded is not None:
        digest = _sha256(path)
        if digest != recorded:
            raise EvidenceModelError(
                f"evidence reader {path}: sha256 {digest[:12]}… does not match the recorded {recorded[:12]}…"
            )
    log.debug("evidence reader %s", path)
    return Reader(path, Path(tokenizer_file))


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
