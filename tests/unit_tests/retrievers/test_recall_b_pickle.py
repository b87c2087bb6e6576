"""RecallB and CogitoRetriever can be deep-copied and pickled, as LangChain's retrievers can.

A deep copy has its own settings and shares the vector store it searches, with
the candidate cache and lexical sync kept for it; a pickled one rebuilds those
on load.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from typing import Any

import pytest
from langchain_chroma import Chroma
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import FakeListChatModel
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from cogito_lc import CogitoRetriever, MemoryStore, RecallB
from tests.unit_tests.conftest import MEMORIES, HashEmbeddings

QUERY = "how long do auth tokens last"


def _in_memory(embeddings: HashEmbeddings) -> InMemoryVectorStore:
    store = InMemoryVectorStore(embedding=embeddings)
    store.add_texts(list(MEMORIES.values()), ids=list(MEMORIES))
    return store


def _recall_b(store: VectorStore) -> BaseRetriever:
    return RecallB(vectorstore=store, k=3, search_kwargs={})


def _cogito(store: VectorStore) -> BaseRetriever:
    llm = FakeListChatModel(responses=['{"ids": [2, 1]}'])
    return CogitoRetriever.from_llm(RecallB(vectorstore=store), llm, k=2)


def _ids(retriever: BaseRetriever) -> list[str | None]:
    return [doc.id for doc in retriever.invoke(QUERY)]


def _recall_b_of(retriever: BaseRetriever) -> RecallB:
    return retriever if isinstance(retriever, RecallB) else retriever.recall_b  # type: ignore[attr-defined]


@pytest.mark.parametrize("build", [_recall_b, _cogito], ids=["RecallB", "CogitoRetriever"])
@pytest.mark.parametrize("backend", ["in_memory", "chroma"])
def test_a_deep_copy_searches_the_same_store_with_its_own_settings(
    backend: str,
    build: Callable[[VectorStore], BaseRetriever],
    embeddings: HashEmbeddings,
    request: pytest.FixtureRequest,
) -> None:
    store = request.getfixturevalue("filled_chroma") if backend == "chroma" else None
    original = build(store if isinstance(store, Chroma) else _in_memory(embeddings))

    copied = copy.deepcopy(original)

    assert _ids(copied) == _ids(original)
    recall, copied_recall = _recall_b_of(original), _recall_b_of(copied)
    assert copied_recall is not recall
    assert copied_recall.vectorstore is recall.vectorstore
    assert copied_recall.lexical_sync is recall.lexical_sync
    copied_recall.search_kwargs["filter"] = {"topic": "auth"}
    assert recall.search_kwargs == {}
    assert _ids(original.model_copy(deep=True)) == _ids(original)
    narrowed = original.model_copy(update={"k": 1}, deep=True)
    assert _ids(narrowed) == _ids(original)[:1]
    assert _recall_b_of(narrowed).vectorstore is recall.vectorstore


@pytest.mark.parametrize("build", [_recall_b, _cogito], ids=["RecallB", "CogitoRetriever"])
def test_a_pickled_retriever_loads_with_its_store_and_recalls_the_same(
    build: Callable[[VectorStore], BaseRetriever],
) -> None:
    store = InMemoryVectorStore(embedding=DeterministicFakeEmbedding(size=16))
    store.add_texts(list(MEMORIES.values()), ids=list(MEMORIES))
    original = build(store)
    expected = _ids(original)

    loaded: Any = pickle.loads(pickle.dumps(original))  # noqa: S301 - our own bytes

    assert _ids(loaded) == expected
    assert _recall_b_of(loaded).vectorstore.store.keys() == store.store.keys()
    assert _recall_b_of(loaded).lexical_sync is not None


@pytest.mark.parametrize(
    "options",
    [{}, {"search_kwargs": {"filter": {"topic": "auth"}}}, {"kind": "recall"}],
    ids=["default", "scope-and-filter", "two-stage"],
)
def test_a_retriever_made_by_a_memory_store_pickles(options: dict[str, Any]) -> None:
    store = InMemoryVectorStore(embedding=DeterministicFakeEmbedding(size=16))
    memory = MemoryStore(store, scope={"user_id": "alice"})
    for text in MEMORIES.values():
        memory.store(text, metadata={"topic": "auth"})
    memory.store("Deploys freeze on Fridays.", metadata={"topic": "ops"})
    memory.store("Tokens expire after 3600 seconds.", scope={"user_id": "bob"})
    if options.get("kind") == "recall":
        options = {**options, "llm": FakeListChatModel(responses=['{"ids": [2, 1]}'])}
    original = memory.as_retriever(**options)
    expected = _ids(original)

    loaded: Any = pickle.loads(pickle.dumps(original))  # noqa: S301 - our own bytes

    assert expected
    assert _ids(loaded) == expected
    assert {doc.metadata["user_id"] for doc in loaded.invoke(QUERY)} == {"alice"}
    assert _ids(copy.deepcopy(original)) == expected
