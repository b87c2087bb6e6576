"""Bounded waits for model calls.

A synchronous chat model call cannot be interrupted from outside, but its caller
does not have to wait for it: :func:`call_with_deadline` runs the call in a daemon
worker thread (with the caller's context variables, so callbacks and tracing keep
their parent run) and stops waiting when the deadline passes. The abandoned call
finishes or fails on its own in the background, bounded by the client's own
timeout, and its result is discarded. :func:`acall_with_deadline` cancels an
awaited call instead. Both raise :class:`DeadlineExceededError` with the same message.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeoutError
from typing import TypeVar

__all__ = ["DeadlineExceededError", "acall_with_deadline", "call_with_deadline"]

T = TypeVar("T")


class DeadlineExceededError(TimeoutError):
    """A call did not finish within its deadline; the caller stopped waiting for it."""


def call_with_deadline(fn: Callable[[], T], timeout: float | None, *, name: str) -> T:
    """Return ``fn()``, or raise once ``timeout`` seconds have passed without a result.

    Args:
        fn: The blocking call.
        timeout: Seconds to wait; ``None`` calls ``fn`` in the current thread.
        name: Name of the worker thread, for diagnostics.

    Returns:
        What ``fn`` returned.

    Raises:
        DeadlineExceededError: If ``fn`` did not finish in time.
        Exception: Whatever ``fn`` raised, if it finished in time.
    """
    if timeout is None:
        return fn()
    outcome: Future[T] = Future()
    context = contextvars.copy_context()

    def work() -> None:
        try:
            outcome.set_result(context.run(fn))
        except BaseException as exc:  # handed to the waiting caller
            outcome.set_exception(exc)

    threading.Thread(target=work, name=name, daemon=True).start()
    try:
        return outcome.result(timeout=timeout)
    except FutureTimeoutError as exc:
        if outcome.done():  # fn itself raised a TimeoutError
            raise
        msg = f"no result within {timeout:g} s"
        raise DeadlineExceededError(msg) from exc


async def acall_with_deadline(call: Awaitable[T], timeout: float | None) -> T:
    """Await ``call``, cancelling it once ``timeout`` seconds have passed without a result.

    Args:
        call: The awaitable model call.
        timeout: Seconds to wait; ``None`` waits as long as ``call`` takes.

    Returns:
        What ``call`` returned.

    Raises:
        DeadlineExceededError: If ``call`` did not finish in time (it is cancelled).
        Exception: Whatever ``call`` raised, if it finished in time, including the
            model client's own ``TimeoutError``.
    """
    if timeout is None:
        return await call
    try:
        return await asyncio.wait_for(call, timeout)
    except asyncio.TimeoutError as exc:
        if not isinstance(exc.__cause__, asyncio.CancelledError):
            raise  # the model's own client timed out
        msg = f"no result within {timeout:g} s"
        raise DeadlineExceededError(msg) from exc
