from __future__ import annotations

import numpy as np
import pytest

from cogito_lc.retrievers._vector_cache import VectorCache


def vec(value: float) -> np.ndarray:
    return np.full(3, value, dtype=np.float32)


def test_cache_never_exceeds_its_bound_and_evicts_least_recent() -> None:
    cache = VectorCache(max_size=2)
    cache.put("a", vec(1))
    cache.put("b", vec(2))
    assert cache.get("a") is not None  # a is now most recent
    cache.put("c", vec(3))
    assert len(cache) == 2
    assert cache.get("b") is None
    assert cache.get("a") is not None
    assert cache.get("c") is not None


def test_zero_size_disables_the_cache() -> None:
    cache = VectorCache(max_size=0)
    cache.put("a", vec(1))
    assert cache.get("a") is None
    assert len(cache) == 0


def test_negative_size_is_rejected() -> None:
    with pytest.raises(ValueError, match="max_size"):
        VectorCache(max_size=-1)


def test_clear_empties_the_cache() -> None:
    cache = VectorCache()
    cache.put_many([("a", vec(1)), ("b", vec(2))])
    cache.clear()
    assert len(cache) == 0


def test_hit_rate_follows_recent_lookups() -> None:
    cache = VectorCache()
    assert cache.hit_rate == 0.0
    cache.put("a", vec(1))
    for _ in range(50):
        cache.get("missing")
    assert cache.hit_rate == 0.0
    for _ in range(200):
        cache.get("a")
    assert cache.hit_rate > 0.8
