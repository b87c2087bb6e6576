"""A recall's last check of its documents tells a forget during it from an outside write."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from langchain_chroma import Chroma
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore

from cogito_lc import RecallB
from cogito_lc.retrievers import _search
from cogito_lc.stores import adapter_for
from tests.unit_tests.conftest import MEMORIES, HashEmbeddings

SEARCH_LOG = "cogito_lc.retrievers._search"


def _recalled(embeddings: HashEmbeddings) -> tuple[Any, list[Document], _search.SearchResult]:
    """A store, two of its documents as a lexical run gave them, and the search result."""
    store = InMemoryVectorStore(embeddings)
    store.add_texts(list(MEMORIES.values()), ids=list(MEMORIES))
    adapter = adapter_for(store)
    documents = adapter.get(["m-port", "m-auth"])
    result = _search.SearchResult()
    result.add_run(documents, vector_run=False)  # not read by a vector search now
    store.delete(ids=["m-port"])
    return adapter, documents, result


@pytest.mark.parametrize(
    ("written_meanwhile", "level", "says"),
    [
        (lambda ids: list(ids) == ["m-port"], logging.INFO, "changed or forgotten during"),
        (lambda ids: False, logging.WARNING, "outside MemoryStore"),
        (None, logging.WARNING, "outside MemoryStore"),
    ],
)
def test_a_gone_document_is_left_out_and_blamed_on_outside_writes_only_when_none_ran(
    embeddings: HashEmbeddings,
    caplog: pytest.LogCaptureFixture,
    written_meanwhile: Callable[[Sequence[str]], bool] | None,
    level: int,
    says: str,
) -> None:
    adapter, documents, result = _recalled(embeddings)
    with caplog.at_level(logging.INFO, logger=SEARCH_LOG):
        kept = _search.settle(adapter, documents, result, written_meanwhile)
    assert [doc.id for doc in kept] == ["m-auth"]
    [record] = [r for r in caplog.records if r.name == SEARCH_LOG]
    assert (record.levelno, says in record.getMessage()) == (level, True)


def _settle_spy(
    monkeypatch: pytest.MonkeyPatch,
) -> list[Callable[[Sequence[str]], bool] | None]:
    """Make a recall check its documents twice, and keep what its last check is given."""
    given: list[Callable[[Sequence[str]], bool] | None] = []
    settle = _search.settle

    def spy(store: Any, docs: Any, found: Any, meanwhile: Any = None) -> list[Document]:
        given.append(meanwhile)
        return settle(store, docs, found, meanwhile)

    monkeypatch.setattr(_search, "confirm", lambda *args: False)
    monkeypatch.setattr(_search, "settle", spy)
    return given


@pytest.mark.parametrize("run", ["sync", "async"])
def test_a_recall_asks_its_lexical_index_what_was_written_during_it(
    filled_chroma: Chroma, monkeypatch: pytest.MonkeyPatch, run: str
) -> None:
    recall = RecallB(vectorstore=filled_chroma, k=3)
    given = _settle_spy(monkeypatch)
    if run == "sync":
        recall.invoke("billing port 8083")
    else:
        asyncio.run(recall.ainvoke("billing port 8083"))
    [meanwhile] = given
    sync = recall.lexical_sync
    assert meanwhile is not None
    assert sync is not None
    assert not meanwhile(["m-port"])
    sync.mark_pending(["m-port"])  # a forget of it under way: its store delete has begun
    assert meanwhile(["m-port"])
    assert not meanwhile(["m-auth"])
    sync.delete(["m-port"])  # and done
    assert meanwhile(["m-auth"])
