from __future__ import annotations

from typing import Any

import pytest
from langchain_chroma import Chroma
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
from pydantic import ValidationError

from cogito_lc import METADATA_KEY, RecallB
from cogito_lc.stores.bm25s_index import Bm25Index
from tests.unit_tests.conftest import MEMORIES, HashEmbeddings


class SpyStore(InMemoryVectorStore):
    """In-memory store that records every search call and its keyword arguments."""

    def __init__(self, embedding: HashEmbeddings) -> None:
        super().__init__(embedding=embedding)
        self.calls: list[dict[str, Any]] = []

    def similarity_search_by_vector(
        self, embedding: list[float], k: int = 4, **kwargs: Any
    ) -> list[Document]:
        self.calls.append({"k": k, **kwargs})
        return super().similarity_search_by_vector(embedding, k=k, **kwargs)


class TextOnlyStore(SpyStore):
    """A store that cannot search by vector."""

    def similarity_search_by_vector(
        self, embedding: list[float], k: int = 4, **kwargs: Any
    ) -> list[Document]:
        raise NotImplementedError


def fill(store: InMemoryVectorStore) -> None:
    store.add_texts(
        list(MEMORIES.values()),
        ids=list(MEMORIES),
        metadatas=[{"topic": key.split("-")[1]} for key in MEMORIES],
    )


def test_returns_stored_documents_verbatim(filled_chroma: Chroma) -> None:
    docs = RecallB(vectorstore=filled_chroma, k=3).invoke("how long do auth tokens last")
    assert docs[0].id == "m-auth"
    stored = {d.id: d for d in filled_chroma.get_by_ids(list(MEMORIES))}
    for doc in docs:
        assert doc.id is not None
        assert doc.page_content == stored[doc.id].page_content
        user_metadata = {k: v for k, v in doc.metadata.items() if k != METADATA_KEY}
        assert user_metadata == stored[doc.id].metadata


def test_scores_and_method_under_the_metadata_key(filled_chroma: Chroma) -> None:
    docs = RecallB(vectorstore=filled_chroma, k=3).invoke("billing database choice")
    details = [d.metadata[METADATA_KEY] for d in docs]
    assert [d["rank"] for d in details] == [1, 2, 3]
    assert all(d["method"].startswith("decompose_") for d in details)
    scores = [d["score"] for d in details]
    assert scores == sorted(scores, reverse=True)


def test_k_at_invoke_overrides_the_field(filled_chroma: Chroma) -> None:
    retriever = RecallB(vectorstore=filled_chroma, k=5)
    assert len(retriever.invoke("billing")) == 5
    assert len(retriever.invoke("billing", k=2)) == 2


def test_one_batched_embedding_call_and_no_text_twice(
    filled_chroma: Chroma, embeddings: HashEmbeddings
) -> None:
    retriever = RecallB(vectorstore=filled_chroma)
    retriever.invoke("why did the march deploy break the migration")
    assert len(embeddings.document_calls) == 1
    assert embeddings.query_calls == []
    texts = embeddings.embedded_texts
    assert len(texts) == len(set(texts))
    assert texts == list(
        retriever.decompose("why did the march deploy break the migration").queries
    )


def test_vocab_expansion_sets_method_tag(filled_chroma: Chroma) -> None:
    retriever = RecallB(vectorstore=filled_chroma, vocab_map={"how fast": ["latency", "p95"]})
    docs = retriever.invoke("how fast is search")
    assert docs[0].metadata[METADATA_KEY]["method"].endswith("_v")
    assert docs[0].id == "m-lat"


async def test_async_equals_sync(filled_chroma: Chroma) -> None:
    retriever = RecallB(vectorstore=filled_chroma, k=4)
    sync_docs = retriever.invoke("which port does billing use")
    async_docs = await retriever.ainvoke("which port does billing use")
    assert [(d.id, d.page_content, d.metadata) for d in sync_docs] == [
        (d.id, d.page_content, d.metadata) for d in async_docs
    ]


async def test_async_generic_store_equals_sync(embeddings: HashEmbeddings) -> None:
    store = SpyStore(embeddings)
    fill(store)
    retriever = RecallB(vectorstore=store, k=4)
    sync_ids = [d.id for d in retriever.invoke("pytest fixtures style")]
    async_ids = [d.id for d in await retriever.ainvoke("pytest fixtures style")]
    assert sync_ids == async_ids


def test_empty_store_returns_nothing(chroma: Chroma) -> None:
    assert RecallB(vectorstore=chroma).invoke("anything at all") == []


@pytest.mark.parametrize("query", ["", "   "])
def test_blank_query_is_a_value_error(filled_chroma: Chroma, query: str) -> None:
    with pytest.raises(ValueError, match="query is empty"):
        RecallB(vectorstore=filled_chroma).invoke(query)


def test_non_string_query_is_a_type_error(filled_chroma: Chroma) -> None:
    with pytest.raises(TypeError, match="query must be a str"):
        RecallB(vectorstore=filled_chroma).invoke(123)  # type: ignore[arg-type]


def test_unknown_invoke_kwarg_names_the_argument(filled_chroma: Chroma) -> None:
    with pytest.raises(TypeError, match=r"'top_k'.*Accepted: as_of, include_superseded, k"):
        RecallB(vectorstore=filled_chroma).invoke("billing", top_k=3)


@pytest.mark.parametrize("k", [0, -2])
def test_k_below_one_is_rejected_at_invoke(filled_chroma: Chroma, k: int) -> None:
    with pytest.raises(ValueError, match="k must be >= 1"):
        RecallB(vectorstore=filled_chroma).invoke("billing", k=k)


def test_k_below_one_is_rejected_at_construction(filled_chroma: Chroma) -> None:
    with pytest.raises(ValidationError, match="k"):
        RecallB(vectorstore=filled_chroma, k=0)


def test_unknown_constructor_argument_suggests_the_field(filled_chroma: Chroma) -> None:
    with pytest.raises(TypeError, match=r"'cosine_wieght' \(did you mean 'cosine_weight'\?\)"):
        RecallB(vectorstore=filled_chroma, cosine_wieght=0.5)


def test_store_without_embeddings_is_rejected() -> None:
    store = Chroma(collection_name="no-embeddings")
    try:
        with pytest.raises(ValueError, match="has no embeddings"):
            RecallB(vectorstore=store)
    finally:
        store.delete_collection()


def test_ten_thousand_character_query(filled_chroma: Chroma, embeddings: HashEmbeddings) -> None:
    query = ("billing postgres invoices transactions " * 300)[:10_000]
    docs = RecallB(vectorstore=filled_chroma, k=2).invoke(query)
    assert docs[0].id == "m-db"
    assert len(embeddings.document_calls[0]) <= 8


def test_chroma_filter_reaches_every_sub_search(filled_chroma: Chroma) -> None:
    filled_chroma.add_texts(
        ["Auth tokens for bob expire after 60 seconds."],
        ids=["bob-auth"],
        metadatas=[{"topic": "auth", "user_id": "bob"}],
    )
    retriever = RecallB(vectorstore=filled_chroma, search_kwargs={"filter": {"user_id": "bob"}})
    docs = retriever.invoke("auth tokens expire seconds")
    assert [d.id for d in docs] == ["bob-auth"]


def test_generic_filter_reaches_every_sub_search(embeddings: HashEmbeddings) -> None:
    store = SpyStore(embeddings)
    fill(store)

    def only_auth(doc: Document) -> bool:
        return doc.metadata["topic"] == "auth"

    retriever = RecallB(vectorstore=store, search_kwargs={"filter": only_auth})
    docs = retriever.invoke("auth tokens expire billing port")
    n_subqueries = len(retriever.decompose("auth tokens expire billing port").queries)
    assert len(store.calls) == n_subqueries
    assert all(call["filter"] is only_auth for call in store.calls)
    assert [d.id for d in docs] == ["m-auth"]


def test_generic_store_candidate_vectors_are_cached(embeddings: HashEmbeddings) -> None:
    store = SpyStore(embeddings)
    fill(store)
    embeddings.reset()
    retriever = RecallB(vectorstore=store)
    retriever.invoke("billing port")
    first = list(embeddings.embedded_texts)
    embeddings.reset()
    retriever.invoke("billing port")
    second = embeddings.embedded_texts
    pooled = set(MEMORIES.values()) & set(first)
    assert pooled, "the first recall embeds the candidates it has no vector for"
    assert not set(MEMORIES.values()) & set(second), "the second recall must hit the cache"


def test_generic_cache_is_bounded(embeddings: HashEmbeddings) -> None:
    store = SpyStore(embeddings)
    fill(store)
    retriever = RecallB(vectorstore=store, cache_size=2)
    retriever.invoke("billing port auth tokens latency")
    assert len(retriever._cache) == 2


def test_store_without_vector_search_degrades_to_text_search(
    embeddings: HashEmbeddings,
) -> None:
    store = TextOnlyStore(embeddings)
    fill(store)
    docs = RecallB(vectorstore=store, k=2).invoke("pytest fixtures")
    assert docs[0].id == "m-test"
    assert docs[0].metadata[METADATA_KEY]["method"].endswith("_t")


def test_same_text_with_different_ids_stays_two(chroma: Chroma) -> None:
    chroma.add_texts(["Deploys freeze on Fridays."] * 2, ids=["a", "b"])
    docs = RecallB(vectorstore=chroma).invoke("deploy freeze friday")
    assert sorted(d.id for d in docs) == ["a", "b"]


def test_corpus_bm25_finds_a_rare_token(chroma: Chroma) -> None:
    chroma.add_texts(
        [f"Routine note number {i} about weekly planning." for i in range(40)]
        + ["Error code E4711 means the ledger lock timed out."],
        ids=[f"n{i}" for i in range(40)] + ["rare"],
    )
    lexical_only = RecallB(
        vectorstore=chroma,
        k=3,
        original_weight=0,
        fragment_weight=0,
        bm25_weight=0,
        cosine_weight=0,
    )
    assert lexical_only.invoke("E4711 weekly planning")[0].id == "rare"
    without_lexical = lexical_only.model_copy(update={"corpus_bm25_weight": 0.0})
    assert without_lexical.invoke("E4711 weekly planning")[0].id != "rare"


def test_lexical_index_for_other_stores(embeddings: HashEmbeddings) -> None:
    store = SpyStore(embeddings)
    fill(store)
    index = Bm25Index([Document(page_content=t, id=i) for i, t in MEMORIES.items()])
    retriever = RecallB(vectorstore=store, lexical_index=index, k=1, fetch_k=1, original_fetch_k=1)
    assert retriever.invoke("8083")[0].id == "m-port"


def test_score_floor_returns_nothing_for_an_unrelated_query(filled_chroma: Chroma) -> None:
    retriever = RecallB(vectorstore=filled_chroma, score_floor=0.99)
    assert retriever.invoke("zebra giraffe savanna") == []
    assert RecallB(vectorstore=filled_chroma).invoke("zebra giraffe savanna")


def test_dict_filter_is_translated_for_the_in_memory_store(embeddings: HashEmbeddings) -> None:
    store = InMemoryVectorStore(embedding=embeddings)
    fill(store)
    retriever = RecallB(vectorstore=store, search_kwargs={"filter": {"topic": "auth"}})
    assert [d.id for d in retriever.invoke("auth tokens expire billing port")] == ["m-auth"]
    either = {"$or": [{"topic": "auth"}, {"topic": "port"}]}
    retriever = RecallB(vectorstore=store, search_kwargs={"filter": either})
    assert {d.id for d in retriever.invoke("auth tokens expire billing port")} == {
        "m-auth",
        "m-port",
    }


def test_untranslatable_dict_filter_fails_when_built(embeddings: HashEmbeddings) -> None:
    store = InMemoryVectorStore(embedding=embeddings)
    with pytest.raises(ValueError, match=r"\$regex"):
        RecallB(vectorstore=store, search_kwargs={"filter": {"topic": {"$regex": "a.*"}}})


def test_chroma_search_reads_only_the_vectors_the_cache_lacks(
    filled_chroma: Chroma, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cogito_lc.stores import ChromaAdapter

    read: list[set[str]] = []
    get_found = ChromaAdapter._get_found

    def spy(self: ChromaAdapter, ids: list[str], filters: Any, stored: Any) -> Any:
        found = get_found(self, ids, filters, stored)
        if stored is not None:
            read.append(set(ids))
        return found

    def no_second_read(self: ChromaAdapter, texts: Any) -> Any:
        raise AssertionError(texts)

    monkeypatch.setattr(ChromaAdapter, "_get_found", spy)
    monkeypatch.setattr(ChromaAdapter, "stored_vectors", no_second_read)
    retriever = RecallB(vectorstore=filled_chroma)
    first = retriever.invoke("billing port")
    assert read, "a cold cache reads the vectors with the documents"
    read.clear()
    assert retriever.invoke("billing port") == first
    assert read == []  # every candidate's vector is cached: documents only


@pytest.mark.parametrize(
    ("key", "hint"),
    [("k", "pass k="), ("fetch_k", "pass fetch_k="), ("score_threshold", "score_floor")],
)
def test_a_vector_store_retriever_option_in_search_kwargs_is_refused_when_built(
    filled_chroma: Chroma, key: str, hint: str
) -> None:
    with pytest.raises(TypeError, match=rf"search_kwargs\['{key}'\].*{hint}"):
        RecallB(vectorstore=filled_chroma, search_kwargs={key: 3})


@pytest.mark.parametrize("backend", ["in_memory", "qdrant"])
def test_a_document_deleted_in_the_store_directly_is_never_recalled(
    embeddings: HashEmbeddings, backend: str
) -> None:
    if backend == "qdrant":
        pytest.importorskip("langchain_qdrant")
        from cogito_lc.stores import open_qdrant_store

        store: VectorStore = open_qdrant_store(embeddings)
    else:
        store = InMemoryVectorStore(embeddings)
    texts = {
        "port": "The billing service listens on port 8083.",
        "deploy": "Deploys freeze on Fridays.",
        "tokens": "Auth tokens expire after 3600 seconds.",
    }
    store.add_texts(list(texts.values()), ids=list(texts))
    retriever = RecallB(vectorstore=store, k=3)
    assert "port" in {doc.id for doc in retriever.invoke("port 8083")}
    store.delete(["port"])
    store.add_texts(["Lunch is at noon."], ids=["lunch"])  # the count stays as it was
    assert "port" not in {doc.id for doc in retriever.invoke("port 8083")}
