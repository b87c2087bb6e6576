"""Helpers for race tests: calls started together, and reads slowed to widen a race."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from langchain_core.embeddings import Embeddings

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


HELD = "held-by-the-model"
"""The name of a thread whose embedding calls :class:`HeldEmbeddings` holds."""


class HeldEmbeddings(Embeddings):
    """``inner``, except that calls from a thread named :data:`HELD` wait for ``release``.

    A model that stalls for one caller: what others can do meanwhile shows
    which locks that caller holds while the model embeds.
    """

    def __init__(self, inner: Embeddings) -> None:
        self.inner = inner
        self.entered = threading.Event()
        self.release = threading.Event()

    def _hold(self) -> None:
        if threading.current_thread().name == HELD:
            self.entered.set()
            self.release.wait(timeout=60)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self._hold()
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        self._hold()
        return self.inner.embed_query(text)


def while_held(
    embeddings: HeldEmbeddings, held: Callable[[], Any], other: Callable[[], Any]
) -> Any:
    """Run ``held`` with its model stalled, then ``other``; ``other``'s result if it finished.

    ``other`` gets 10 s while ``held`` waits on the model; past that it is
    taken to wait on a lock ``held`` holds, and AssertionError is raised
    (after the model is released, so both end).
    """
    holder = threading.Thread(target=held, name=HELD)
    holder.start()
    try:
        assert embeddings.entered.wait(timeout=30), "the held call never reached the model"
        [result] = _within(other, seconds=10.0)
    finally:
        embeddings.release.set()
        holder.join(timeout=60)
    return result


def _within(call: Callable[[], Any], seconds: float) -> list[Any]:
    done: list[Any] = []
    runner = threading.Thread(target=lambda: done.extend(in_threads(call)))
    runner.start()
    runner.join(timeout=seconds)
    assert not runner.is_alive(), f"{call} waited past {seconds} s: on a lock the held call holds"
    return done
