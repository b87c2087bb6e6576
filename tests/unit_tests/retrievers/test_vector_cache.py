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


def test_groups_are_held_while_any_of_their_vectors_is_cached() -> None:
    cache = VectorCache(max_size=2)
    cache.put("d1:old", vec(1), group="d1")
    cache.put("d1:new", vec(2), group="d1")
    assert cache.holds("d1")
    assert not cache.holds("d2")
    cache.put("d2:x", vec(3), group="d2")  # evicts d1:old, d1:new is still there
    assert cache.holds("d1")
    assert cache.holds("d2")
    cache.put("d3:x", vec(4), group="d3")  # evicts d1:new
    assert not cache.holds("d1")
    cache.put("d3:x", vec(5), group="d3")  # replacing a key does not count it twice
    cache.clear()
    assert not cache.holds("d3")


def test_a_document_copy_lives_only_as_long_as_a_vector_of_its_group() -> None:
    cache = VectorCache(max_size=1)
    cache.remember("d1", "not kept: no vector of d1 yet")
    assert cache.document("d1") is None
    cache.put("d1:x", vec(1), group="d1")
    cache.remember("d1", "copy of d1")
    assert cache.document("d1") == "copy of d1"
    cache.forget_document("d1")
    assert cache.document("d1") is None
    assert cache.holds("d1")  # the vector stays
    cache.remember("d1", "copy of d1")
    cache.put("d2:x", vec(2), group="d2")  # evicts d1's only vector, and its copy
    assert cache.document("d1") is None
    cache.remember("d2", "copy of d2")
    cache.clear()
    assert cache.document("d2") is None


def test_retrievers_over_one_store_share_their_candidate_vectors() -> None:
    import gc

    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore

    from cogito_lc import RecallB
    from cogito_lc.retrievers._vector_cache import _SHARED, shared_cache

    embeddings = DeterministicFakeEmbedding(size=8)
    store = InMemoryVectorStore(embeddings)
    first, second = RecallB(vectorstore=store), RecallB(vectorstore=store)
    assert first._cache is second._cache
    other = DeterministicFakeEmbedding(size=8)
    assert RecallB(vectorstore=store, embeddings=other)._cache is not first._cache
    passing = InMemoryVectorStore(embeddings)
    shared_cache(passing, embeddings, 5)
    held = len(_SHARED)
    del passing
    gc.collect()
    assert len(_SHARED) == held - 1  # a store that is gone takes its cache with it
