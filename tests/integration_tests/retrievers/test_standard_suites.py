"""The langchain-tests standard suites, unmodified, over every storage backend.

The retriever suite runs on RecallB and CogitoRetriever over Chroma, the
in-memory store, Postgres and Qdrant (one class per pair, made below, not
copies); the vector-store suite runs on the Qdrant store cogito-lc makes
(ids kept as given, metadata as stored).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore
from langchain_tests.integration_tests import (
    RetrieversIntegrationTests,
    VectorStoreIntegrationTests,
)

from cogito_lc import CogitoRetriever, RecallB
from cogito_lc.stores.qdrant import open_qdrant_store
from tests.integration_tests.backends import BACKENDS, Backend

_MEMORIES = [
    "Auth tokens expire after 3600 seconds; refresh tokens rotate on every use.",
    "We chose PostgreSQL 16 for billing because invoices need multi-row transactions.",
    "The user prefers pytest fixtures over unittest setUp methods.",
    "The search latency budget is p95 under 250 ms.",
    "The billing service listens on port 8083 in local development.",
    "The March deploy broke because a migration added a NOT NULL column without a default.",
]
_BACKENDS: dict[str, Backend] = {}
_STORES: dict[str, VectorStore] = {}


@pytest.fixture(scope="module", autouse=True)
def _close_backends() -> Iterator[None]:
    yield
    for backend in _BACKENDS.values():
        backend.close()
    _BACKENDS.clear()
    _STORES.clear()


def _store(name: str, request: pytest.FixtureRequest) -> VectorStore:
    """The backend's store holding the memories, made once for the module."""
    if name not in _STORES:
        backend = Backend(
            name,
            request.getfixturevalue("minilm"),
            Path(tempfile.mkdtemp(prefix=f"standard-{name}-")),
            pg_url=lambda: request.getfixturevalue("pg_url"),
        )
        store = backend.vectorstore()
        store.add_texts(_MEMORIES, ids=[f"m{i}" for i in range(len(_MEMORIES))])
        _BACKENDS[name] = backend
        _STORES[name] = store
    return _STORES[name]


class _OverBackend(RetrieversIntegrationTests):
    backend_name = "chroma"
    store: VectorStore | None = None

    @pytest.fixture(autouse=True)
    def _backend_store(self, request: pytest.FixtureRequest) -> None:
        type(self).store = _store(self.backend_name, request)

    @property
    def retriever_query_example(self) -> str:
        return "how long do auth tokens last?"


class _RecallB(_OverBackend):
    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return RecallB

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"vectorstore": self.store, "k": 4}


class _CogitoRetriever(_OverBackend):
    """Two stages with no model: the PointerFilter keeps stage 1's order (``fallback_no_llm``)."""

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return CogitoRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"recall_b": RecallB(vectorstore=self.store), "k": 4}


for _name in BACKENDS:
    for _suite in (_RecallB, _CogitoRetriever):
        _title = f"Test{_suite.__name__[1:]}Standard_{_name}"
        globals()[_title] = type(_title, (_suite,), {"backend_name": _name})


class TestQdrantVectorStoreStandard(VectorStoreIntegrationTests):
    """The Qdrant store of :func:`open_qdrant_store` (in-memory local mode) as any vector store."""

    @pytest.fixture
    def vectorstore(self) -> Iterator[VectorStore]:
        store = open_qdrant_store(self.get_embeddings())
        yield store
        store.client.close()  # type: ignore[attr-defined]


def test_every_backend_has_both_suites() -> None:
    made = {name for name in globals() if name.startswith("Test") and "Standard_" in name}
    assert len(made) == 2 * len(BACKENDS)
