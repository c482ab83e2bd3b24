"""A worker process of ``workers.in_worker``: ``python -m orchestrator.harvest.work_child MEMORY_BYTES``. It reads
one pickled call at a time (``(fn, args, kwargs)``) from standard input and writes its pickled reply (``("ok",
result)``, ``("error", exception)`` or ``("limit", why)``) to standard output, under an address-space limit of
``MEMORY_BYTES`` (set after its imports, so it bounds the work, not the interpreter); it ends when brt closes the
pipe, or is killed by brt at a limit or a hard stop. Nothing else of this process writes to standard output."""

from __future__ import annotations

import contextlib
import pickle
import resource
import sys
import time
from typing import Any

__all__ = ["serve"]


def serve(memory_bytes: int) -> None:
    from . import extract, static  # noqa: F401 - the functions it runs, imported before the limit
    from .readers.playwright import bounds  # noqa: F401

    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing a library prints may corrupt the replies
    while True:
        try:
            fn, args, kwargs = pickle.load(inp)
        except (EOFError, OSError, pickle.UnpicklingError):
            return
        out.write(_reply(fn, args, kwargs, memory_bytes))
        out.flush()


def _reply(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], memory_bytes: int) -> bytes:
    started = time.monotonic()
    try:
        reply: tuple[str, Any] = ("ok", fn(*args, **kwargs))
    except MemoryError:
        reply = ("limit", f"it needed more than {memory_bytes >> 20} MiB")
    except Exception as exc:  # noqa: BLE001 - handed back to the caller
        reply = ("error", exc)
    try:
        return pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
    except MemoryError:
        return pickle.dumps(("limit", f"its result needed more than {memory_bytes >> 20} MiB"))
    except Exception as exc:  # noqa: BLE001 - an exception or a result that cannot be pickled
        return pickle.dumps(("error", RuntimeError(f"{type(exc).__name__} after {time.monotonic() - started:.1f} s")))


if __name__ == "__main__":
    serve(int(sys.argv[1]))
