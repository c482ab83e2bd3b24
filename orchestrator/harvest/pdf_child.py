"""The text of a PDF, read with pypdf in a child process that brt can kill (``pdf.extract_pdf_bounded``): a small
PDF can take minutes of CPU or gigabytes to extract (repeated path operators, huge decompressed streams). Run as
``python -I pdf_child.py MEMORY_BYTES CPU_SECONDS`` with the PDF's bytes on stdin; prints one JSON object:
``{"texts": [...], "title": ..., "modified": ..., "created": ...}`` or ``{"error": ...}``.

This file imports nothing of brt (it runs isolated, without the package): ``read_pdf`` is also what brt calls
in-process."""

from __future__ import annotations

import io
import json
import logging
import sys
from typing import Any

__all__ = ["read_pdf"]

logger = logging.getLogger(__name__)


def read_pdf(data: bytes) -> dict[str, Any]:
    """Each page's text (an unreadable page gives ""), and the raw Title, ModDate and CreationDate. Raises
    ValueError for bytes that are not a readable PDF."""
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        texts = []
        for page in reader.pages:
            try:
                texts.append((page.extract_text() or "").strip())
            except MemoryError:
                raise
            except Exception as exc:  # noqa: BLE001 - one bad page does not lose the others
                logger.info("cannot read a page of a PDF: %s", exc)
                texts.append("")
        meta = reader.metadata or {}
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise ValueError(f"unreadable PDF: {exc}") from exc
    out: dict[str, Any] = {"texts": texts, "title": None, "modified": None, "created": None}
    try:
        for key, name in (("title", "/Title"), ("modified", "/ModDate"), ("created", "/CreationDate")):
            value = meta.get(name)
            out[key] = str(value) if value is not None else None
    except Exception:  # noqa: BLE001 - odd metadata types
        pass
    return out


def _limit(memory_bytes: int, cpu_s: int) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))


def main(argv: list[str]) -> int:
    import pypdf  # noqa: F401 - loaded before the limits, so they bound the extraction, not the imports

    _limit(int(argv[1]), int(argv[2]))
    data = sys.stdin.buffer.read()
    try:
        result: dict[str, Any] = read_pdf(data)
    except ValueError as exc:
        result = {"error": str(exc)}
    except MemoryError:
        result = {"error": "out of memory", "limit": "memory"}
    except Exception as exc:  # noqa: BLE001 - any other failure of pypdf: an unreadable PDF
        result = {"error": f"unreadable PDF: {type(exc).__name__}: {exc}"[:500]}
    sys.stdout.write(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
