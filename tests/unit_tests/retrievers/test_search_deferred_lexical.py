"""A lexical run given as a function is asked for once the vector searches are done."""

from __future__ import annotations

import asyncio
from concurrent.futures import Future
from typing import Any

import numpy as np
import pytest
from langchain_chroma import Chroma
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore

from cogito_lc.retrievers import _search
from cogito_lc.retrievers._vector_cache import VectorCache
from cogito_lc.retrievers.recall_b import _abandoned_on_error
from cogito_lc.stores import StoreAdapter, adapter_for
from tests.unit_tests.conftest import MEMORIES, HashEmbeddings

QUERY = "how long do auth tokens last"
FAILURE = "search failed"


def _memory_store(embeddings: HashEmbeddings) -> InMemoryVectorStore:
    store = InMemoryVectorStore(embeddings)
    store.add_texts(list(MEMORIES.values()), ids=list(MEMORIES))
    return store


def _arguments(embeddings: HashEmbeddings) -> dict[str, Any]:
    """What every search here is given but its store and lexical run."""
    return {
        "queries": [QUERY],
        "vectors": np.asarray([embeddings.embed_query(QUERY)], dtype=np.float32),
        "fetch_ks": [2],
        "search_kwargs": {},
        "cache": VectorCache(max_size=0),
    }


def _deferred(adapter: StoreAdapter, order: list[str]) -> list[Document]:
    order.append("lexical asked")
    return adapter.get(["m-port"])


def test_the_deferred_run_is_asked_for_after_the_vector_searches(
    embeddings: HashEmbeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    adapter = adapter_for(_memory_store(embeddings))
    order: list[str] = []
    searched = type(adapter).search_by_vectors

    def spy(self: StoreAdapter, *args: object) -> object:
        order.append("vectors searched")
        return searched(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(type(adapter), "search_by_vectors", spy)
    found = _search.search(
        adapter,
        **_arguments(embeddings),
        lexical=lambda: _deferred(adapter, order),
    )
    assert order == ["vectors searched", "lexical asked"]
    assert found.lexical_run == ["m-port"]
    assert found.pool["m-port"].page_content == MEMORIES["m-port"]


def test_async_awaits_the_deferred_run_after_the_vector_searches(
    embeddings: HashEmbeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    adapter = adapter_for(_memory_store(embeddings))
    order: list[str] = []
    searched = type(adapter).asearch_by_vectors

    async def spy(self: StoreAdapter, *args: object) -> object:
        order.append("vectors searched")
        return await searched(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(type(adapter), "asearch_by_vectors", spy)

    async def deferred() -> list[Document]:
        return _deferred(adapter, order)

    found = asyncio.run(
        _search.asearch(
            adapter,
            **_arguments(embeddings),
            lexical=deferred,
        )
    )
    assert order == ["vectors searched", "lexical asked"]
    assert found.lexical_run == ["m-port"]


def test_a_store_reading_by_id_refuses_a_deferred_run(
    filled_chroma: Chroma, embeddings: HashEmbeddings
) -> None:
    adapter = adapter_for(filled_chroma)
    assert adapter.reads_by_id
    with pytest.raises(ValueError, match="pass them as a list"):
        _search.search(
            adapter,
            **_arguments(embeddings),
            lexical=list,
        )


def test_a_failed_recall_cancels_the_lexical_run_still_waiting() -> None:
    waiting: Future[object] = Future()
    with pytest.raises(RuntimeError, match="search failed"), _abandoned_on_error(waiting):  # type: ignore[arg-type]
        raise RuntimeError(FAILURE)
    assert waiting.cancelled()
    untouched: Future[object] = Future()
    with _abandoned_on_error(untouched):  # type: ignore[arg-type]
        pass
    assert not untouched.cancelled()


def test_a_failed_async_recall_cancels_the_lexical_run_still_waiting() -> None:
    async def fail() -> bool:
        waiting = asyncio.get_running_loop().create_future()
        with pytest.raises(RuntimeError), _abandoned_on_error(waiting):
            raise RuntimeError(FAILURE)
        return waiting.cancelled()

    assert asyncio.run(fail())
