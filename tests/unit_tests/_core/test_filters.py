from __future__ import annotations

import re

import pytest
from langchain_chroma import Chroma
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from cogito_lc import RecallB
from cogito_lc._core.filters import equality_predicate, store_filter, where_predicate
from cogito_lc.stores import check_filterable
from tests.unit_tests.conftest import HashEmbeddings


@pytest.mark.parametrize(
    ("where", "metadata", "expected"),
    [
        ({"user_id": "a"}, {"user_id": "a"}, True),
        ({"user_id": "a"}, {"user_id": "b"}, False),
        ({"user_id": {"$eq": "a"}}, {"user_id": "a"}, True),
        ({"$and": [{"user_id": "a"}, {"run_id": "r"}]}, {"user_id": "a", "run_id": "r"}, True),
        ({"$and": [{"user_id": "a"}, {"run_id": "r"}]}, {"user_id": "a"}, False),
    ],
)
def test_equality_filters_evaluate_like_chroma(where: dict, metadata: dict, expected: bool) -> None:
    predicate = equality_predicate(where)
    assert predicate is not None
    assert predicate(metadata) is expected


@pytest.mark.parametrize(
    "where",
    [None, {}, {"n": {"$gt": 1}}, {"$or": [{"a": 1}, {"b": 2}]}, {"a": 1, "b": 2}, {"a": [1]}],
)
def test_other_filters_are_left_to_the_store(where: object) -> None:
    assert equality_predicate(where) is None


def test_unfiltered_fast_path_never_returns_a_later_write_outside_the_scope(
    chroma: Chroma,
) -> None:
    chroma.add_texts(
        [f"alice note {i} about billing" for i in range(5)],
        ids=[f"a{i}" for i in range(5)],
        metadatas=[{"user_id": "alice"}] * 5,
    )
    retriever = RecallB(vectorstore=chroma, search_kwargs={"filter": {"user_id": "alice"}})
    retriever.invoke("billing")  # the scope covers the whole collection: searches run unfiltered
    chroma.add_texts(["bob secret billing vault code"], ids=["bob"], metadatas=[{"user_id": "bob"}])
    docs = retriever.invoke("bob secret billing vault code")
    assert docs
    assert all(doc.metadata["user_id"] == "alice" for doc in docs)


@pytest.mark.parametrize(
    ("where", "metadata", "expected"),
    [
        ({"n": {"$gt": 2}}, {"n": 3}, True),
        ({"n": {"$lte": 2}}, {"n": 3}, False),
        ({"n": {"$gt": 2}}, {"n": "x"}, False),
        ({"tag": {"$in": ["a", "b"]}}, {"tag": "b"}, True),
        ({"tag": {"$nin": ["a", "b"]}}, {}, True),
        ({"tag": {"$ne": "a"}}, {"tag": "a"}, False),
        ({"$or": [{"n": {"$gt": 2}}, {"tag": "x"}]}, {"n": 1, "tag": "x"}, True),
        ({"$and": [{"user_id": "a"}, {"n": {"$gte": 1}}]}, {"user_id": "a", "n": 0}, False),
        ({"a": 1, "b": 2}, {"a": 1, "b": 2}, True),
        ({"user_id": "a"}, {}, False),
    ],
)
def test_where_filters_evaluate_like_chroma(where: dict, metadata: dict, expected: bool) -> None:
    assert where_predicate(where)(metadata) is expected


@pytest.mark.parametrize(
    ("where", "named"),
    [({"n": {"$regex": "x"}}, "$regex"), ({"$not": {"a": 1}}, "$not"), ({"$or": []}, "$or")],
)
def test_untranslatable_filters_name_the_operator(where: dict, named: str) -> None:
    with pytest.raises(ValueError, match=re.escape(named)):
        where_predicate(where)


def test_store_filter_translates_a_where_dict_for_the_in_memory_store(
    embeddings: HashEmbeddings, chroma: Chroma
) -> None:
    store = InMemoryVectorStore(embedding=embeddings)
    native = store_filter(store, {"user_id": "alice"})
    assert callable(native)
    assert native(Document(page_content="x", metadata={"user_id": "alice"}))
    assert not native(Document(page_content="x", metadata={"user_id": "bob"}))
    assert store_filter(chroma, {"user_id": "alice"}) == {"user_id": "alice"}


def test_a_store_without_a_known_filter_form_is_named_in_the_error(
    embeddings: HashEmbeddings,
) -> None:
    class OtherStore(VectorStore):
        add_texts = from_texts = similarity_search = None  # type: ignore[assignment]

    with pytest.raises(ValueError, match=r"OtherStore.*InMemoryVectorStore"):
        check_filterable(OtherStore(), "MemoryStore(scope=...)")
