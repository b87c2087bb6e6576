"""How RecallB chooses and reports its sub-query path, with embeddings that are not local models."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.vectorstores import InMemoryVectorStore

from cogito_lc import METADATA_KEY, RecallB
from cogito_lc.retrievers._subquery_vectors import plan_subqueries
from cogito_lc.retrievers.recall_b import RECALL_B_EVENT
from tests.unit_tests.conftest import MEMORIES, HashEmbeddings

QUERY = "how long do auth tokens last after login?"


def make_retriever(**kwargs: Any) -> tuple[RecallB, HashEmbeddings]:
    embeddings = HashEmbeddings()
    store = InMemoryVectorStore(embedding=embeddings)
    store.add_texts(list(MEMORIES.values()), ids=list(MEMORIES))
    return RecallB(vectorstore=store, k=3, **kwargs), embeddings


class RecallEvents(BaseCallbackHandler):
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        if name == RECALL_B_EVENT:
            self.events.append(data)


def test_other_embeddings_batch_all_sub_queries_in_one_call() -> None:
    retriever, embeddings = make_retriever()
    embeddings.document_calls.clear()
    docs = retriever.invoke(QUERY)
    assert embeddings.document_calls[0] == list(retriever.decompose(QUERY).queries)
    assert embeddings.query_calls == []
    assert {d.metadata[METADATA_KEY]["subquery_vectors"] for d in docs} == {"batch"}


def test_per_query_calls_embed_query_for_each_sub_query() -> None:
    retriever, embeddings = make_retriever(subquery_vectors="per_query")
    docs = retriever.invoke(QUERY)
    assert embeddings.query_calls == list(retriever.decompose(QUERY).queries)
    assert docs[0].metadata[METADATA_KEY]["subquery_vectors"] == "per_query"


def test_span_cannot_be_forced_on_other_embeddings() -> None:
    with pytest.raises(ValueError, match="HashEmbeddings is not a local sentence-transformers"):
        plan_subqueries(HashEmbeddings(), "span")


def test_the_slower_path_is_logged_once_per_embeddings_with_reason_and_fix(
    caplog: pytest.LogCaptureFixture,
) -> None:
    first, _ = make_retriever()
    second, _ = make_retriever()
    with caplog.at_level(logging.INFO, logger="cogito_lc.retrievers.recall_b"):
        for _ in range(3):
            first.invoke(QUERY)
        second.invoke(QUERY)
    lines = [r.getMessage() for r in caplog.records if "sub-query vectors" in r.getMessage()]
    assert len(lines) == 2
    assert "batch path" in lines[0]
    assert "HashEmbeddings is not a local sentence-transformers model" in lines[0]
    assert "Fix: none needed for remote embeddings" in lines[0]


def test_retrievers_built_per_request_share_one_plan_and_one_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    first, _ = make_retriever()
    with caplog.at_level(logging.INFO, logger="cogito_lc.retrievers.recall_b"):
        plans = [RecallB(vectorstore=first.vectorstore, k=2).subquery_plan() for _ in range(5)]
    assert all(plan is plans[0] for plan in plans)
    lines = [r.getMessage() for r in caplog.records if "sub-query vectors" in r.getMessage()]
    assert len(lines) == 1


def test_an_explicit_mode_is_not_logged(caplog: pytest.LogCaptureFixture) -> None:
    retriever, _ = make_retriever(subquery_vectors="batch")
    with caplog.at_level(logging.INFO, logger="cogito_lc.retrievers.recall_b"):
        retriever.invoke(QUERY)
    assert not [r for r in caplog.records if "sub-query vectors" in r.getMessage()]


async def test_the_path_is_in_the_run_trace_sync_and_async() -> None:
    retriever, _ = make_retriever()
    events = RecallEvents()
    docs = retriever.invoke(QUERY, config={"callbacks": [events]})
    await retriever.ainvoke(QUERY, config={"callbacks": [events]})
    assert len(events.events) == 2
    assert events.events[0] == events.events[1]
    assert events.events[0]["subquery_vectors"] == "batch"
    assert events.events[0]["method"] == docs[0].metadata[METADATA_KEY]["method"]
    assert events.events[0]["returned"] == len(docs)
    assert "not a local sentence-transformers model" in events.events[0]["subquery_reason"]


def test_a_new_embeddings_object_is_planned_again() -> None:
    retriever, _ = make_retriever(subquery_vectors="auto")
    first = retriever.subquery_plan()
    assert retriever.subquery_plan() is first
    retriever.embeddings = HashEmbeddings()
    assert retriever.subquery_plan() is not first
