"""A scope holding few memories of a large store is ranked exactly over its own vectors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_chroma import Chroma

from cogito_lc import MemoryStore
from cogito_lc.stores import ChromaAdapter
from tests.unit_tests.conftest import MEMORIES, HashEmbeddings

QUERY = "how long do auth tokens last"


@pytest.fixture
def memory(tmp_path: Path, embeddings: HashEmbeddings) -> Iterator[MemoryStore]:
    """A persistent store: MEMORIES for alice, twenty notes for bob."""
    store = Chroma("scopes", embeddings, persist_directory=str(tmp_path))
    memory = MemoryStore(store)
    memory.store_many(list(MEMORIES.values()), scope={"user_id": "alice"})
    memory.store_many([f"bob's note {i} about lunch" for i in range(20)], scope={"user_id": "bob"})
    yield memory
    store.delete_collection()


@pytest.fixture
def within(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many ids each exact search ranked."""
    calls: list[int] = []
    search_within = ChromaAdapter.search_within

    def spy(self: ChromaAdapter, ids: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(len(ids))
        return search_within(self, ids, *args, **kwargs)

    monkeypatch.setattr(ChromaAdapter, "search_within", spy)
    return calls


def _ids(memory: MemoryStore, user: str, **kwargs: Any) -> list[str | None]:
    retriever = memory.scoped({"user_id": user}).as_retriever(k=4, **kwargs)
    return [doc.id for doc in retriever.invoke(QUERY)]


def test_a_small_scope_is_ranked_exactly_and_alike(memory: MemoryStore, within: list[int]) -> None:
    exact = _ids(memory, "alice", exact_scope_limit=10)
    assert within == [len(MEMORIES)]
    searched = _ids(memory, "alice", exact_scope_limit=0)
    assert within == [len(MEMORIES)]  # the limit 0 searched the index
    assert exact[0] == searched[0]  # past the first, HashEmbeddings ties (orthogonal vectors)
    assert len(exact) == len(searched)
    found = [memory.get(str(doc_id)) for doc_id in exact]
    assert exact
    assert {doc.metadata["user_id"] for doc in found if doc is not None} == {"alice"}


def test_an_empty_scope_returns_nothing(memory: MemoryStore, within: list[int]) -> None:
    assert _ids(memory, "carol", exact_scope_limit=10) == []
    assert within == [0]


def test_a_scope_above_the_limit_searches_the_index(memory: MemoryStore, within: list[int]) -> None:
    assert _ids(memory, "bob", exact_scope_limit=10)
    assert within == []


def test_a_memory_written_to_the_scope_is_found_next_recall(
    memory: MemoryStore, within: list[int]
) -> None:
    retriever = memory.scoped({"user_id": "alice"}).as_retriever(k=2, exact_scope_limit=10)
    retriever.invoke(QUERY)
    new = memory.scoped({"user_id": "alice"}).store("Auth tokens last one hour, said the admin.")
    assert new.id in {doc.id for doc in retriever.invoke(QUERY + " per the admin")}
    assert within == [len(MEMORIES), len(MEMORIES) + 1]


def test_a_memory_deleted_behind_the_index_is_not_returned(memory: MemoryStore) -> None:
    retriever = memory.scoped({"user_id": "alice"}).as_retriever(k=3, exact_scope_limit=10)
    first = retriever.invoke(QUERY)[0]
    memory.vectorstore.delete(ids=[str(first.id)])
    assert first.id not in {doc.id for doc in retriever.invoke(QUERY)}


@pytest.mark.parametrize("space", ["l2", "cosine", "ip"])
def test_exact_distances_are_the_index_distances(embeddings: HashEmbeddings, space: str) -> None:
    import numpy as np

    from cogito_lc.stores.chroma import _distances

    store = Chroma(f"space-{space}", embeddings, collection_metadata={"hnsw:space": space})
    store.add_texts(list(MEMORIES.values()), ids=list(MEMORIES))
    query = np.asarray([embeddings.embed_query(QUERY)], dtype=np.float32)
    found = store._collection.query(
        query_embeddings=query, n_results=len(MEMORIES), include=["distances", "embeddings"]
    )
    exact = _distances(query, np.asarray(found["embeddings"][0], dtype=np.float32), space)
    assert adapter_space(store) == space
    np.testing.assert_allclose(exact[0], found["distances"][0], rtol=1e-4, atol=1e-4)
    store.delete_collection()


def adapter_space(store: Chroma) -> str:
    return ChromaAdapter(store)._space()
