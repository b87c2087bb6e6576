"""Every storage backend behind one interface, for the suites that run over all of them.

Chroma (embedded, persistent), LangChain's InMemoryVectorStore, Postgres with
pgvector (a private pgserver) and Qdrant (embedded local mode, persistent):
each opens a MemoryStore over a fresh collection, reopens it as a restarted
process would, and gives its connections back.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from langchain_chroma import Chroma
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from cogito_lc import MemoryStore
from tests.integration_tests.conftest_pg import close_postgres_memory

BACKENDS = ("chroma", "in_memory", "postgres", "qdrant")
PERSISTENT = frozenset({"chroma", "postgres", "qdrant"})


@dataclass
class Backend:
    """Opens MemoryStores (and bare vector stores) of one backend over one collection."""

    name: str
    embeddings: Embeddings
    directory: Path
    pg_url: Callable[[], str]
    collection: str = field(default_factory=lambda: f"b_{uuid.uuid4().hex[:12]}")
    opened: list[MemoryStore] = field(default_factory=list)
    _in_memory: InMemoryVectorStore | None = None

    @property
    def persistent(self) -> bool:
        return self.name in PERSISTENT

    def vectorstore(self) -> VectorStore:
        """A vector store of this backend over the collection (the same data each time)."""
        return self.open().vectorstore

    def open(self, **kwargs: Any) -> MemoryStore:
        """A MemoryStore over the collection (a new store object: as after a restart)."""
        memory = self._open(**kwargs)
        self.opened.append(memory)
        return memory

    def reopen(self, memory: MemoryStore, **kwargs: Any) -> MemoryStore:
        """Close ``memory`` and open the collection again, as a restarted process would."""
        self._close(memory)
        return self.open(**kwargs)

    def close(self) -> None:
        for memory in self.opened:
            self._close(memory)
        self.opened.clear()

    def _open(self, **kwargs: Any) -> MemoryStore:
        if self.name == "postgres":
            return MemoryStore.from_database_url(
                self.pg_url(), embeddings=self.embeddings, collection=self.collection, **kwargs
            )
        if self.name == "qdrant":
            return MemoryStore.from_qdrant(
                embeddings=self.embeddings,
                path=self.directory / "qdrant",
                collection=self.collection,
                **kwargs,
            )
        if self.name == "chroma":
            store: VectorStore = Chroma(
                collection_name=self.collection,
                embedding_function=self.embeddings,
                persist_directory=str(self.directory / "chroma"),
            )
            return MemoryStore(store, **kwargs)
        if self._in_memory is None:
            self._in_memory = InMemoryVectorStore(self.embeddings)
        return MemoryStore(self._in_memory, **kwargs)

    def _close(self, memory: MemoryStore) -> None:
        if self.name == "postgres":
            close_postgres_memory(memory)
        elif self.name == "qdrant":
            memory.vectorstore.client.close()  # type: ignore[attr-defined]
        if memory in self.opened:
            self.opened.remove(memory)


@pytest.fixture(params=BACKENDS)
def backend(
    request: pytest.FixtureRequest, minilm: Embeddings, tmp_path: Path
) -> Iterator[Backend]:
    """One backend per parameter; Postgres starts its private server on first use."""
    found = Backend(
        request.param,
        minilm,
        tmp_path,
        pg_url=lambda: request.getfixturevalue("pg_url"),
    )
    yield found
    found.close()
