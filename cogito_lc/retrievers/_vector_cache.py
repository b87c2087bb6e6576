"""A bounded, thread-safe LRU cache of embedding vectors."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

__all__ = ["VectorCache"]

Vector = npt.NDArray[np.float32]

_DECAY = 0.99


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
        self._hits = 0.0
        self._lookups = 0.0

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: str) -> Vector | None:
        """Return the vector for ``key`` and mark it recently used, or ``None``."""
        with self._lock:
            vector = self._items.get(key)
            self._lookups = self._lookups * _DECAY + 1.0
            self._hits *= _DECAY
            if vector is not None:
                self._items.move_to_end(key)
                self._hits += 1.0
            return vector

    @property
    def hit_rate(self) -> float:
        """The share of recent lookups that found their vector (0.0 before any lookup).

        Recent: each lookup weighs 1% more than the one before it.
        """
        return self._hits / self._lookups if self._lookups else 0.0

    def put(self, key: str, vector: Vector) -> None:
        """Store ``vector`` under ``key``, evicting the least recently used beyond the bound."""
        if self.max_size == 0:
            return
        with self._lock:
            self._items[key] = vector
            self._items.move_to_end(key)
            while len(self._items) > self.max_size:
                self._items.popitem(last=False)

    def put_many(self, items: Iterable[tuple[str, Vector]]) -> None:
        """Store several vectors."""
        for key, vector in items:
            self.put(key, vector)

    def clear(self) -> None:
        """Drop every cached vector."""
        with self._lock:
            self._items.clear()
