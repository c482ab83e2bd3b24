"""The evidence reader: a small cross-encoder (trained by ``bench/train_reader.py`` from the bundled MiniLM) that
reads a question and a candidate quote together and gives a logit for "this quote answers it". It runs on ONNX
Runtime with the ``tokenizers`` library (no torch), and only over each section's best candidates by the other
features (``READ_TOP``), so its cost is bounded per section. The sha256 of its ONNX file and of its tokenizer are
recorded in ``models/manifest.json``; each file is read once, its bytes checked, and the reader built from those
very bytes (a file swapped after the check is never loaded)."""

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

    def __init__(self, onnx_file: Path, tokenizer_file: Path, *, model_bytes: bytes | None = None,
                 tokenizer_json: str | None = None) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        from memory_store.onnx_backend import embedding_threads

        try:
            if tokenizer_json is not None:  # the bytes whose hash was checked
                self._tok = Tokenizer.from_str(tokenizer_json)
            else:
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
            model = model_bytes if model_bytes is not None else str(onnx_file)
            self._session = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
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
    from ..settings import run_settings

    folder = run_settings().evidence_reader
    if folder is not None:
        return folder / "reader.onnx", folder / "reader-tokenizer" / "tokenizer.json"
    return READER_FILE, TOKENIZER_FILE


def load_reader() -> Reader:
    """The reader in use, loaded once per process; its sha256 checked against the recorded one when shipped."""
    onnx_file, tok = reader_files()
    return _load(str(onnx_file), str(tok))


@functools.lru_cache(maxsize=2)
def _load(onnx_file: str, tokenizer_file: str) -> Reader:
    path, tok = Path(onnx_file), Path(tokenizer_file)
    model = _checked_bytes(path, "evidence reader")
    tokenizer = _checked_bytes(tok, "evidence reader tokenizer")
    log.debug("evidence reader %s", path)
    try:
        text = tokenizer.decode("utf-8")
    except UnicodeDecodeError:
        raise EvidenceModelError(f"evidence reader tokenizer {tok}: not UTF-8 JSON") from None
    return Reader(path, tok, model_bytes=model, tokenizer_json=text)


def _checked_bytes(path: Path, what: str) -> bytes:
    """The bytes of ``path``, read once; EvidenceModelError when missing or when a sha256 is recorded for it
    (``scorer.recorded_sha256``) and these bytes do not hash to it."""
    from .scorer import recorded_sha256

    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise EvidenceModelError(f"{what} {path}: missing") from None
    except OSError as exc:
        raise EvidenceModelError(f"{what} {path}: cannot read ({exc.strerror or exc})") from None
    recorded = recorded_sha256(path)
    if recorded is not None:
        digest = hashlib.sha256(data).hexdigest()
        if digest != recorded:
            raise EvidenceModelError(f"{what} {path}: sha256 {digest[:12]}… does not match the recorded "
                                     f"{recorded[:12]}…")
    return data
