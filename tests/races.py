"""Helpers for race tests: calls started together, and reads slowed to widen a race."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from cogito_lc import MemoryStore


def in_threads(*calls: Callable[[], Any]) -> list[Any]:
    """Run ``calls`` at once (after a barrier); each one's result or the exception it raised."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = calls[i]()
        except Exception as error:
            results[i] = error

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def slow_reads(memory: MemoryStore, seconds: float = 0.02) -> MemoryStore:
    """``memory`` with each read by id taking ``seconds`` more: a check and its write far apart."""
    read = memory._store.get

    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(seconds)
        return read(*args, **kwargs)

    memory._store.get = slow  # type: ignore[method-assign]
    return memory
