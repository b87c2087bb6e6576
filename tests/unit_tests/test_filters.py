from __future__ import annotations

import pytest
from langchain_chroma import Chroma

from cogito_lc import RecallB
from cogito_lc._filters import equality_predicate


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
