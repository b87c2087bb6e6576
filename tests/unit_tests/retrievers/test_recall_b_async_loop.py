"""An async recall leaves the event loop free: every store and index read runs in a thread."""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_chroma import Chroma

from cogito_lc import MemoryStore
from cogito_lc.stores import ChromaAdapter
from cogito_lc.stores.lexical_sync import LexicalSync
from cogito_lc.stores.sqlite_fts import SqliteLexicalIndex
from tests.unit_tests.conftest import MEMORIES, HashEmbeddings

QUERIES = ["how long do auth tokens last", "which port does billing use"]


@pytest.fixture
def memory(tmp_path: Path, embeddings: HashEmbeddings) -> Iterator[MemoryStore]:
    store = Chroma("loop", embeddings, persist_directory=str(tmp_path))
    memory = MemoryStore(store)
    memory.store_many(list(MEMORIES.values()))
    yield memory
    store.delete_collection()


def _on_the_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _spy(method: Callable[..., Any], name: str, seen: list[str]) -> Callable[..., Any]:
    @functools.wraps(method)
    def spy(*args: Any, **kwargs: Any) -> Any:
        if _on_the_loop():
            seen.append(name)
        return method(*args, **kwargs)

    return spy


@pytest.fixture
def on_the_loop(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The store and index methods called from the event loop's own thread."""
    seen: list[str] = []
    for cls in (ChromaAdapter, LexicalSync, SqliteLexicalIndex):
        for name, method in inspect.getmembers(cls, inspect.isfunction):
            if not name.startswith("__") and not inspect.iscoroutinefunction(method):
                monkeypatch.setattr(cls, name, _spy(method, f"{cls.__name__}.{name}", seen))
    return seen


async def test_an_async_recall_reads_the_store_and_the_index_off_the_event_loop(
    memory: MemoryStore, on_the_loop: list[str]
) -> None:
    retriever = memory.as_retriever(k=3)
    expected = [[doc.id for doc in retriever.invoke(query)] for query in QUERIES]
    on_the_loop.clear()

    found = [[doc.id for doc in await retriever.ainvoke(query)] for query in QUERIES]

    assert found == expected
    assert on_the_loop == []
