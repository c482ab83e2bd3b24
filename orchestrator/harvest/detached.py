"""Work a harvest may walk away from: ``await detached(fn, *args)`` runs ``fn`` in a daemon thread, like
``asyncio.to_thread``, but a harvest that stops at ``max_duration_s`` (or is cancelled) does not wait for it to
finish, and neither does ``asyncio.run`` nor the interpreter's exit (``to_thread``'s executor threads are joined
by both). Its result is then dropped. For CPU-bound work on page content (extraction of a huge page), never for
work that writes the store."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["detached"]

T = TypeVar("T")


async def detached(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()

    def settle(outcome: Callable[[], None]) -> None:
        if not future.done():
            outcome()

    def run() -> None:
        try:
            result = context.run(fn, *args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting coroutine
            error = exc
            _call_soon(loop, lambda: settle(lambda: future.set_exception(error)))
        else:
            _call_soon(loop, lambda: settle(lambda: future.set_result(result)))

    threading.Thread(target=run, name=f"brt-{getattr(fn, '__name__', 'work')}", daemon=True).start()
    return await future


def _call_soon(loop: asyncio.AbstractEventLoop, callback: Callable[[], None]) -> None:
    try:
        loop.call_soon_threadsafe(callback)
    except RuntimeError:  # the loop is closed: nobody waits for this result any more
        pass
