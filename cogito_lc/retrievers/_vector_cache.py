"""A bounded, thread-safe LRU cache of embedding vectors."""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

from cogito_lc.retrievers._per_object import PerObject

__all__ = ["VectorCache", "shared_cache"]

Vector = npt.NDArray[np.float32]


class VectorCache:
    """Least-recently-used map from a text key to its embedding.

    The cache never holds more than ``max_size`` vectors, so memory stays flat
    however many queries run. ``max_size=0`` disables it.

    Example:
        ```python
        import numpy as np

        from cogito_lc.retrievers._vector_cache import VectorCache

        cache = VectorCache(max_size=2)
        cache.put("a", np.ones(3, dtype=np.float32))
        assert cache.get("a") is not None
        assert cache.get("b") is None
        ```
    """

    def __init__(self, max_size: int = 10_000) -> None:
        if max_size < 0:
            msg = f"max_size must be >= 0, got {max_size}; use 0 to disable the cache."
            raise ValueError(msg)
        self.max_size = max_size
        self._items: OrderedDict[str, Vector] = OrderedDict()
        self._lock = threading.Lock()
        self._group_of: dict[str, str] = {}
        self._group_sizes: Counter[str] = Counter()
        self._documents: dict[str, Any] = {}

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: str) -> Vector | None:
        """Return the vector for ``key`` and mark it recently used, or ``None``."""
        with self._lock:
            vector = self._items.get(key)
            if vector is not None:
                self._items.move_to_end(key)
            return vector

    def holds(self, group: str) -> bool:
        """Whether any vector put with this ``group`` is still cached (e.g. a document id)."""
        with self._lock:
            return self._group_sizes[group] > 0

    def put(self, key: str, vector: Vector, *, group: str | None = None) -> None:
        """Store ``vector`` under ``key``, evicting the least recently used beyond the bound.

        Args:
            key: The cache key.
            vector: The vector.
            group: What :meth:`holds` answers for, when the key is finer (an id and a
                hash of the text).
        """
        if self.max_size == 0:
            return
        with self._lock:
            self._forget(key)
            self._items[key] = vector
            if group is not None:
                self._group_of[key] = group
                self._group_sizes[group] += 1
            while len(self._items) > self.max_size:
                evicted, _ = self._items.popitem(last=False)
                self._forget(evicted)

    def _forget(self, key: str) -> None:
        self._items.pop(key, None)
        group = self._group_of.pop(key, None)
        if group is not None:
            self._group_sizes[group] -= 1
            if self._group_sizes[group] <= 0:
                del self._group_sizes[group]
                self._documents.pop(group, None)

    def remember(self, group: str, document: Any) -> None:
        """Keep ``document`` as the copy for ``group`` while any of its vectors is cached."""
        with self._lock:
            if self._group_sizes[group] > 0:
                self._documents[group] = document

    def document(self, group: str) -> Any | None:
        """The copy kept for ``group`` (see :meth:`remember`), or None."""
        with self._lock:
            return self._documents.get(group)

    def forget_document(self, group: str) -> None:
        """Drop the copy kept for ``group`` (its vectors stay)."""
        with self._lock:
            self._documents.pop(group, None)

    def forget_groups(self, groups: Iterable[str]) -> None:
        """Drop every vector and copy kept for these groups (deleted documents)."""
        gone = set(groups)
        with self._lock:
            for key in [key for key, group in self._group_of.items() if group in gone]:
                self._forget(key)
            for group in gone:
                self._documents.pop(group, None)

    def put_many(self, items: Iterable[tuple[str, Vector]]) -> None:
        """Store several vectors."""
        for key, vector in items:
            self.put(key, vector)

    def clear(self) -> None:
        """Drop every cached vector."""
        with self._lock:
            self._items.clear()
            self._group_of.clear()
            self._group_sizes.clear()
            self._documents.clear()


_SHARED: PerObject[VectorCache] = PerObject()


def shared_cache(store: Any, embeddings: Any, max_size: int) -> VectorCache:
    """One cache per vector store, embeddings object and size in a process.

    Retrievers built per request over the same store (the service, a
    ``MemoryStore``'s ``as_retriever``) share their candidate vectors. Objects
    without weak references get a cache of their own.

    Example:
        ```python
        from langchain_core.embeddings import DeterministicFakeEmbedding
        from langchain_core.vectorstores import InMemoryVectorStore

        from cogito_lc.retrievers._vector_cache import shared_cache

        embeddings = DeterministicFakeEmbedding(size=8)
        store = InMemoryVectorStore(embeddings)
        assert shared_cache(store, embeddings, 100) is shared_cache(store, embeddings, 100)
        assert shared_cache(store, embeddings, 100) is not shared_cache(store, embeddings, 10)
        ```
    """
    cache, _ = _SHARED.get((store, embeddings), max_size, lambda: VectorCache(max_size))
    return cache
