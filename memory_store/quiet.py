"""Keep third-party libraries' progress bars and warnings off stderr (transformers' ``Loading weights``, tqdm,
Hugging Face advisories, ONNX Runtime, Python warnings). The CLI and the MCP server call
``silence_third_party()`` unless ``-v`` is given; brt's own progress and log lines are not affected.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings

# Read by these libraries when they are imported, so set before any of them loads.
_ENV = {
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",  # huggingface_hub, and transformers' bars ("Loading weights")
    "TQDM_DISABLE": "1",  # any other tqdm bar (FlagEmbedding, lancedb)
    "TRANSFORMERS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
    "ORT_LOGGING_LEVEL": "3",
}
NOISY_LOGGERS = (
    "transformers",
    "huggingface_hub",
    "FlagEmbedding",
    "sentence_transformers",
    "onnxruntime",
    "torch",
    "lancedb",
    "urllib3",
    "httpx",
    "filelock",
)


def silence_third_party() -> None:
    """Turn off third-party progress bars and warnings for this process (and its children)."""
    for key, value in _ENV.items():
        os.environ.setdefault(key, value)
    warnings.filterwarnings("ignore")
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    try:  # already imported: switch it off at run time too
        if "transformers" in sys.modules:
            from transformers.utils import logging as hf_logging

            hf_logging.set_verbosity_error()
            hf_logging.disable_progress_bar()
    except Exception:  # noqa: BLE001 - only a verbosity setting
        pass
