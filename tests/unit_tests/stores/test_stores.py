"""The store adapter over a real embedded Chroma, an InMemoryVectorStore and any other store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_chroma import Chroma
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from cogito_lc._core.filters import store_filter
from cogito_lc.stores import (
    ChromaAdapter,
    InMemoryAdapter,
    StoreAdapter,
    StoredVectors,
    adapter_for,
    cosine_scores,
)
from tests.unit_tests.conftest import HashEmbeddings

ROWS = {
    "a1": ("billing vault key in the red drawer", {"user_id": "alice"}),
    "b1": ("billing vault key under the blue mat", {"user_id": "bob"}),
    "a2": ("deploys freeze on fridays", {"user_id": "alice"}),
}
ALICE = {"user_id": "alice"}


class _OtherStore(VectorStore):
    """A store with only LangChain's API (no metadata filters, no vectors given back)."""

    def __init__(self, embeddings: HashEmbeddings) -> None:
        self._inner = InMemoryVectorStore(embedding=embeddings)

    def add_texts(self, texts: Any, metadatas: Any = None, **kwargs: Any) -> list[str]:
        return self._inner.add_texts(texts, metadatas, **kwargs)

    def get_by_ids(self, ids: Any, /) -> list[Document]:
        return self._inner.get_by_ids(ids)

    def delete(self, ids: Any = None, **kwargs: Any) -> None:
        self._inner.delete(ids)

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        return self._inner.similarity_search(query, k, **kwargs)

    @classmethod
    def from_texts(cls, texts: Any, embedding: Any, metadatas: Any = None, **kwargs: Any) -> Any:
        raise NotImplementedError


def _fill(store: VectorStore) -> VectorStore:
    store.add_texts(
        [text for text, _ in ROWS.values()],
        metadatas=[meta for _, meta in ROWS.values()],
        ids=list(ROWS),
    )
    return store


@pytest.fixture(params=["in_memory", "chroma"])
def filtering(request: pytest.FixtureRequest, embeddings: HashEmbeddings) -> StoreAdapter:
    if request.param == "chroma":
        return adapter_for(_fill(request.getfixturevalue("chroma")))
    return adapter_for(_fill(InMemoryVectorStore(embedding=embeddings)))


def test_adapter_for_picks_the_richest_adapter(chroma: Chroma, embeddings: HashEmbeddings) -> None:
    assert type(adapter_for(chroma)) is ChromaAdapter
    assert type(adapter_for(InMemoryVectorStore(embedding=embeddings))) is InMemoryAdapter
    assert type(adapter_for(_OtherStore(embeddings))) is StoreAdapter


def test_reads_counts_pages_and_deletes_by_filter(filtering: StoreAdapter) -> None:
    assert [d.id for d in filtering.get(["a1", "b1"], ALICE)] == ["a1"]
    assert [d.id for d in filtering.get(["a1", "b1"])] == ["a1", "b1"]
    assert filtering.get([], ALICE) == []
    assert [d.id for d in filtering.page(ALICE, 1, 1)] == ["a2"]
    assert filtering.page(ALICE, 5, 0)[0].metadata == ALICE
    assert (filtering.count(), filtering.count(ALICE)) == (3, 2)
    assert filtering.ids_in(ALICE) == ["a1", "a2"]
    filtering.delete(["a1"])
    assert filtering.ids_in(None) == ["b1", "a2"]


def test_search_by_vectors_gives_one_run_per_query(filtering: StoreAdapter) -> None:
    queries = ["billing vault key", "deploys freeze"]
    vectors = np.asarray([HashEmbeddings.vector(q) for q in queries], dtype=np.float32)
    native = store_filter(filtering.store, ALICE)  # search_kwargs go to the store as given
    runs = filtering.search_by_vectors(queries, vectors, [2, 1], {"filter": native})
    assert [[d.id for d in docs] for docs, _ in runs] == [["a1", "a2"], ["a2"]]
    assert not any(by_text for _, by_text in runs)


async def test_async_search_by_vectors_matches_the_sync_one(filtering: StoreAdapter) -> None:
    queries = ["billing vault key"]
    vectors = np.asarray([HashEmbeddings.vector(q) for q in queries], dtype=np.float32)
    expected = filtering.search_by_vectors(queries, vectors, [3], {})
    assert await filtering.asearch_by_vectors(queries, vectors, [3], {}) == expected


def test_scored_search_gives_cosine_similarities_inside_the_filter(
    filtering: StoreAdapter,
) -> None:
    found = filtering.scored_search("billing vault key", 5, ALICE)
    assert [doc.id for doc, _ in found] == ["a1", "a2"]
    query = np.asarray(HashEmbeddings.vector("billing vault key"), dtype=np.float32)
    for doc, score in found:
        stored = np.asarray(HashEmbeddings.vector(doc.page_content), dtype=np.float32)
        assert score == pytest.approx(float(cosine_scores(query, stored[None, :])[0]), abs=1e-6)


class _RecordedQueries:
    def __init__(self, collection: Any) -> None:
        self.collection = collection
        self.wheres: list[Any] = []

    def query(self, **kwargs: Any) -> Any:
        self.wheres.append(kwargs.get("where"))
        return self.collection.query(**kwargs)


class _RecordingChroma(ChromaAdapter):
    def __init__(self, store: Chroma) -> None:
        super().__init__(store)
        self.recorded = _RecordedQueries(store._collection)

    @property
    def collection(self) -> Any:
        return self.recorded


def test_scored_search_asks_the_index_first_and_filters_only_when_needed(chroma: Chroma) -> None:
    adapter = _RecordingChroma(_fill(chroma))  # type: ignore[arg-type]
    nearest = adapter.scored_search("billing vault key red drawer", 1, ALICE)
    assert adapter.recorded.wheres == [None]  # the nearest of all is alice's: one query
    adapter.recorded.wheres.clear()
    both = adapter.scored_search("billing vault key red drawer", 2, ALICE)
    assert adapter.recorded.wheres == [None, ALICE]  # bob's is second nearest: filtered again
    assert [doc.id for doc, _ in both] == ["a1", "a2"]
    assert both[0] == nearest[0]


def test_stored_vectors_come_from_chroma_only_while_the_text_is_current(chroma: Chroma) -> None:
    adapter = adapter_for(_fill(chroma))
    vectors = adapter.stored_vectors({"a1": ROWS["a1"][0]})
    assert vectors is not None
    assert np.allclose(vectors[0], HashEmbeddings.vector(ROWS["a1"][0]))
    assert adapter.stored_vectors({"a1": "text it no longer holds"}) is None
    assert adapter.stored_vectors({"a1": ROWS["a1"][0], "gone": "x"}) is None


def test_other_stores_give_no_vectors_and_no_listing(embeddings: HashEmbeddings) -> None:
    adapter = adapter_for(_fill(_OtherStore(embeddings)))
    assert [d.id for d in adapter.get(["a1", "b1"], ALICE)] == ["a1"]
    assert adapter.stored_vectors({"a1": ROWS["a1"][0]}) is None
    assert adapter.unsearchable() == {}
    assert adapter.reindex({"a1": [0.0]}) == []
    for read in (adapter.count, lambda: adapter.page(None, 1, 0)):
        with pytest.raises(NotImplementedError, match="_OtherStore does not"):
            read()
    with pytest.raises(NotImplementedError, match=r"^MemoryStore.count needs"):
        adapter.check_filters_by_metadata("MemoryStore.count")
    runs = adapter.search_by_vectors(
        ["billing"], np.zeros((1, 4), dtype=np.float32), [1], {}
    )  # no vector search: searched by text
    assert runs[0][1] is True


def test_persist_directory_is_known_for_persistent_chroma_only(
    chroma: Chroma, embeddings: HashEmbeddings, tmp_path: Path
) -> None:
    assert adapter_for(chroma).persist_directory() is None
    persistent = Chroma("kept", embeddings, persist_directory=str(tmp_path))
    assert adapter_for(persistent).persist_directory() == tmp_path
    assert adapter_for(InMemoryVectorStore(embedding=embeddings)).persist_directory() is None


def test_a_zero_query_vector_scores_zero() -> None:
    matrix = np.asarray([[1.0, 0.0], [0.0, 2.0]], dtype=np.float32)
    assert cosine_scores(np.zeros(2, dtype=np.float32), matrix).tolist() == [0.0, 0.0]
    assert cosine_scores(np.asarray([1.0, 0.0], dtype=np.float32), matrix).tolist() == [1.0, 0.0]


def test_near_duplicate_vectors_are_not_called_unsearchable(tmp_path: Path) -> None:
    store = Chroma(
        collection_name="near_duplicates",
        embedding_function=HashEmbeddings(),
        persist_directory=str(tmp_path),
        collection_metadata={"hnsw:space": "cosine"},
    )
    rng = np.random.default_rng(3)
    base = rng.normal(size=64)
    vectors = [(base + rng.normal(scale=1e-3, size=64)).tolist() for _ in range(400)]
    ids = [f"n{i}" for i in range(len(vectors))]
    store._collection.add(ids=ids, embeddings=vectors, documents=[f"note {i}" for i in ids])
    adapter = adapter_for(store)
    assert isinstance(adapter, ChromaAdapter)
    assert adapter.unsearchable() == {}


def test_chroma_search_reads_each_found_document_once_with_its_vector(chroma: Chroma) -> None:
    adapter = adapter_for(_fill(chroma))
    queries = ["billing vault key", "deploys freeze"]
    vectors = np.stack([HashEmbeddings.vector(q) for q in queries]).astype(np.float32)
    stored = StoredVectors()
    runs = adapter.search_by_vectors(queries, vectors, [3, 1], {}, stored)
    assert [len(docs) for docs, _ in runs] == [3, 1]
    found = {doc.id: doc for docs, _ in runs for doc in docs}
    assert set(stored.found) == set(found)
    for doc_id, doc in found.items():
        assert (doc.page_content, doc.metadata) == ROWS[doc_id]
        assert np.allclose(stored.found[doc_id], HashEmbeddings.vector(ROWS[doc_id][0]))
    assert adapter.search_by_vectors(queries, vectors, [3, 1], {}) == runs  # no vectors asked
    known = StoredVectors(known=lambda doc_id: doc_id != "a2")
    assert adapter.search_by_vectors(queries, vectors, [3, 1], {}, known) == runs
    assert set(known.found) == {"a2"}  # only the vector not known is read


def test_chroma_search_keeps_the_filter_on_the_documents_it_reads(chroma: Chroma) -> None:
    adapter = adapter_for(_fill(chroma))
    vector = np.asarray([HashEmbeddings.vector("billing vault key")], dtype=np.float32)
    native = store_filter(chroma, ALICE)
    search = ["billing vault key"], vector, [3], {"filter": native}
    runs = adapter.search_by_vectors(*search, StoredVectors())
    assert {doc.id for doc in runs[0][0]} == {"a1", "a2"}


def test_chroma_search_reads_the_lexical_ids_in_its_own_read(chroma: Chroma) -> None:
    adapter = adapter_for(_fill(chroma))
    vector = np.asarray([HashEmbeddings.vector("deploys freeze")], dtype=np.float32)
    native = store_filter(chroma, ALICE)
    stored = StoredVectors(also=["a1", "b1", "gone"])
    runs = adapter.search_by_vectors(["deploys freeze"], vector, [1], {"filter": native}, stored)
    assert [doc.id for doc in runs[0][0]] == ["a2"]  # the runs hold only what was searched
    assert stored.also_found is not None
    assert set(stored.also_found) == {"a1"}  # bob's row is outside the filter; "gone" is gone
    assert stored.also_found["a1"].page_content == ROWS["a1"][0]
    assert set(stored.found) == {"a1", "a2"}  # vectors read in the same call
    assert StoredVectors().also_found is None
