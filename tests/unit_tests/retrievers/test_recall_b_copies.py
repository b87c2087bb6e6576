"""A warm recall takes the candidates it already read from the cache and reads only what it returns.

Whatever changed in the store behind the cache, what RecallB returns is what the
store holds now.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_chroma import Chroma
from langchain_core.documents import Document

from cogito_lc import METADATA_KEY, RecallB
from cogito_lc.stores import ChromaAdapter

QUERY = "how long do auth tokens last"


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[set[str]]:
    """The ids of every non-empty document read of a Chroma adapter, in order."""
    seen: list[set[str]] = []
    get_found = ChromaAdapter._get_found

    def spy(self: ChromaAdapter, ids: list[str], filters: Any, stored: Any) -> Any:
        if ids:
            seen.append(set(ids))
        return get_found(self, ids, filters, stored)

    monkeypatch.setattr(ChromaAdapter, "_get_found", spy)
    return seen


def _user_metadata(doc: Document) -> dict[str, Any]:
    return {key: value for key, value in doc.metadata.items() if key != METADATA_KEY}


def test_a_warm_recall_reads_only_the_documents_it_returns(
    filled_chroma: Chroma, reads: list[set[str]]
) -> None:
    retriever = RecallB(vectorstore=filled_chroma, k=2)
    first = retriever.invoke(QUERY)
    reads.clear()
    again = retriever.invoke(QUERY)
    assert again == first
    assert reads == [{doc.id for doc in again}]


def test_text_changed_behind_the_cache_is_returned_as_stored(filled_chroma: Chroma) -> None:
    retriever = RecallB(vectorstore=filled_chroma, k=2)
    assert retriever.invoke(QUERY)[0].id == "m-auth"
    new_text = "Auth tokens expire after 900 seconds since the March change."
    filled_chroma.update_document("m-auth", Document(page_content=new_text, metadata={"v": 2}))
    docs = retriever.invoke(QUERY)
    assert docs, "a changed memory is left out, not the whole recall"
    stored = {doc.id: doc for doc in filled_chroma.get_by_ids([str(d.id) for d in docs])}
    for doc in docs:
        assert doc.page_content == stored[doc.id].page_content
        assert _user_metadata(doc) == stored[doc.id].metadata


def test_metadata_changed_behind_the_cache_is_returned_as_stored(filled_chroma: Chroma) -> None:
    retriever = RecallB(vectorstore=filled_chroma, k=2)
    retriever.invoke(QUERY)
    filled_chroma._collection.update(ids=["m-auth"], metadatas=[{"topic": "security"}])
    docs = retriever.invoke(QUERY)
    assert [doc.id for doc in docs] == ["m-auth", *[doc.id for doc in docs[1:]]]
    assert _user_metadata(docs[0]) == {"topic": "security", "user_id": "alice"}


def test_a_memory_deleted_behind_the_cache_is_not_returned(filled_chroma: Chroma) -> None:
    retriever = RecallB(vectorstore=filled_chroma, k=3)
    assert "m-auth" in {doc.id for doc in retriever.invoke(QUERY)}
    filled_chroma.delete(ids=["m-auth"])
    docs = retriever.invoke(QUERY)
    assert docs
    assert "m-auth" not in {doc.id for doc in docs}


def test_a_memory_leaving_the_filter_is_not_returned(filled_chroma: Chroma) -> None:
    retriever = RecallB(
        vectorstore=filled_chroma, k=3, search_kwargs={"filter": {"user_id": "alice"}}
    )
    assert "m-auth" in {doc.id for doc in retriever.invoke(QUERY)}
    filled_chroma._collection.update(ids=["m-auth"], metadatas=[{"user_id": "bob"}])
    assert "m-auth" not in {doc.id for doc in retriever.invoke(QUERY)}


async def test_async_recall_returns_what_the_store_holds(filled_chroma: Chroma) -> None:
    retriever = RecallB(vectorstore=filled_chroma, k=2)
    await retriever.ainvoke(QUERY)
    new_text = "Auth tokens expire after 900 seconds since the March change."
    filled_chroma.update_document("m-auth", Document(page_content=new_text, metadata={"v": 2}))
    docs = await retriever.ainvoke(QUERY)
    assert docs
    stored = {doc.id: doc for doc in filled_chroma.get_by_ids([str(d.id) for d in docs])}
    assert all(doc.page_content == stored[doc.id].page_content for doc in docs)
    assert docs == retriever.invoke(QUERY)
