"""Work a recall runs beside the query's embedding, in a thread when one is free.

The corpus lexical search does not need the query's vectors, so it can run
while the model embeds the query (both release the GIL). At most
:data:`WORKERS` run at once across the process; past that the work runs in the
caller's thread, so a busy service never queues recalls behind each other.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

__all__ = ["WORKERS", "start"]

WORKERS = 4
"""How many recalls' side work may run in threads at once."""

_T = TypeVar("_T")
_lock = threading.Lock()
_slots = threading.BoundedSemaphore(WORKERS)
_pool: ThreadPoolExecutor | None = None


def _executor() -> ThreadPoolExecutor:
    global _pool  # noqa: PLW0603 - one pool per process, made on first use
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="cogito-recall")
        return _pool


def _forget_pool() -> None:
    """A forked child starts with no pool and every slot free (the parent's threads are gone)."""
    global _pool, _slots, _lock  # noqa: PLW0603
    _pool = None
    _slots = threading.BoundedSemaphore(WORKERS)
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_pool)


def start(work: Callable[[], _T]) -> Future[_T]:
    """Start ``work`` in a thread if one is free, else run it now; its future either way.

    Example:
        ```python
        from cogito_lc.retrievers._beside import start

        assert start(lambda: 2 + 2).result() == 4
        ```
    """
    if not _slots.acquire(blocking=False):
        return _done(work)
    slots = _slots

    def run() -> _T:
        try:
            return work()
        finally:
            slots.release()

    return _executor().submit(run)


def _done(work: Callable[[], _T]) -> Future[_T]:
    future: Future[_T] = Future()
    try:
        future.set_result(work())
    except BaseException as error:  # handed to the caller through the future
        future.set_exception(error)
    return future
