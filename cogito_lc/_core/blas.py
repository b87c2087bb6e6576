"""numpy's BLAS on one thread for the matrix products of a search.

After a product big enough to use its threads, OpenBLAS keeps them spinning for
a while (busy-waiting for the next call). A local embedding model's forward pass
right after it (the next query) then shares the cores with them: on two cores a
14 ms forward pass took 60-120 ms in one search out of three or four. So the
products of a search run on one BLAS thread, and OpenBLAS's threads stay asleep;
:func:`row_product` splits a large one by rows over a pool of this module, whose
threads wait on a queue when idle.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["one_blas_thread", "row_product"]

logger = logging.getLogger(__name__)


class _OneThread:
    """Limits BLAS to one thread, one block at a time.

    ``threadpoolctl`` lets only one thread at a time set OpenBLAS's process-wide
    limit, and restores the limit it found: two blocks overlapping in two
    threads could leave BLAS on one thread for good. So the blocks take turns
    (a product of a search takes milliseconds).
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()  # a block may nest in another
        self._controller: Any = None
        self._looked_up = False

    @contextlib.contextmanager
    def limited(self) -> Iterator[None]:
        controller = self._blas_controller()
        if controller is None:
            yield
            return
        with self._lock, controller.limit(limits=1, user_api="blas"):
            yield

    def before_fork(self) -> None:
        """Wait for the blocks under way: a child never starts inside one (BLAS limited)."""
        self._lock.acquire()

    def after_fork_in_parent(self) -> None:
        self._lock.release()

    def after_fork_in_child(self) -> None:
        self._lock = threading.RLock()

    def _blas_controller(self) -> Any:
        """The ``threadpoolctl`` view of the loaded BLAS, made once (None: none known)."""
        with self._lock:
            if not self._looked_up:
                self._looked_up = True
                self._controller = _find_blas()
            return self._controller


def _find_blas() -> Any:
    try:
        import threadpoolctl
    except ImportError:
        logger.debug("threadpoolctl is not installed: BLAS threads left as they are")
        return None
    controller = threadpoolctl.ThreadpoolController()
    return controller if controller.select(user_api="blas").lib_controllers else None


_ONE_THREAD = _OneThread()


def one_blas_thread() -> contextlib.AbstractContextManager[None]:
    """A block whose numpy BLAS calls run on one thread (blocks in other threads wait).

    Without ``threadpoolctl`` (or with a BLAS it does not know) nothing changes.

    Example:
        ```python
        import numpy as np

        from cogito_lc._core.blas import one_blas_thread

        with one_blas_thread():
            scores = np.ones((4, 384), dtype=np.float32) @ np.ones((384, 1000), np.float32)
        assert scores.shape == (4, 1000)
        ```
    """
    return _ONE_THREAD.limited()


ROWS_PER_PART = 4_096
"""Rows of the matrix below which :func:`row_product` does not split it further."""

_pool_lock = threading.Lock()
_pool: tuple[int, ThreadPoolExecutor] | None = None
"""The pool and the process it was made in (a forked child makes its own)."""


def row_product(queries: npt.NDArray[Any], matrix: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``queries @ matrix.T``, one BLAS thread per core, the matrix split by rows.

    The parts run in threads of a pool of this module (numpy releases the GIL in
    BLAS), which wait on a queue when idle instead of spinning.

    Example:
        ```python
        import numpy as np

        from cogito_lc._core.blas import row_product

        matrix = np.arange(20_000 * 4, dtype=np.float32).reshape(20_000, 4)
        queries = np.ones((2, 4), dtype=np.float32)
        assert np.array_equal(row_product(queries, matrix), queries @ matrix.T)
        ```
    """
    parts = min(_usable_cpus(), len(matrix) // ROWS_PER_PART)
    with one_blas_thread():
        if parts <= 1:
            whole: npt.NDArray[Any] = queries @ matrix.T
            return whole
        bounds = np.linspace(0, len(matrix), parts + 1, dtype=int)
        pieces = list(
            _executor().map(lambda i: queries @ matrix[bounds[i] : bounds[i + 1]].T, range(parts))
        )
    return np.concatenate(pieces, axis=1)


def _executor() -> ThreadPoolExecutor:
    global _pool  # noqa: PLW0603 - one pool for the process, made on first use
    with _pool_lock:
        if _pool is None or _pool[0] != os.getpid():  # a fork's child has no pool threads
            pool = ThreadPoolExecutor(max_workers=_usable_cpus(), thread_name_prefix="cogito-blas")
            _pool = (os.getpid(), pool)
        return _pool[1]


def _usable_cpus() -> int:
    """The CPUs this process may run on (a container's share, not the host's count)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def _after_fork_in_child() -> None:
    """Fresh locks in a forked child: a parent's thread may have held them at the fork."""
    global _pool_lock  # noqa: PLW0603 - the parent's lock may be held by a thread not copied
    _pool_lock = threading.Lock()
    _ONE_THREAD.after_fork_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=_ONE_THREAD.before_fork,
        after_in_parent=_ONE_THREAD.after_fork_in_parent,
        after_in_child=_after_fork_in_child,
    )
