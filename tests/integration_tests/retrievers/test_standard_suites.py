"""The langchain-tests standard retriever suite, unmodified, on RecallB and CogitoRetriever."""

from __future__ import annotations

import uuid
from typing import Any

from langchain_chroma import Chroma
from langchain_tests.integration_tests import RetrieversIntegrationTests

from cogito_lc import CogitoRetriever, RecallB, local_embeddings

_MEMORIES = [
    "Auth tokens expire after 3600 seconds; refresh tokens rotate on every use.",
    "We chose PostgreSQL 16 for billing because invoices need multi-row transactions.",
    "The user prefers pytest fixtures over unittest setUp methods.",
    "The search latency budget is p95 under 250 ms.",
    "The billing service listens on port 8083 in local development.",
    "The March deploy broke because a migration added a NOT NULL column without a default.",
]
_STORE: Chroma | None = None


def _store() -> Chroma:
    global _STORE  # noqa: PLW0603 - one store shared by the suite's many constructions
    if _STORE is None:
        _STORE = Chroma(
            collection_name=f"standard-{uuid.uuid4().hex[:12]}",
            embedding_function=local_embeddings(),
        )
        _STORE.add_texts(_MEMORIES, ids=[f"m{i}" for i in range(len(_MEMORIES))])
    return _STORE


class TestRecallBStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[RecallB]:
        return RecallB

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"vectorstore": _store(), "k": 4}

    @property
    def retriever_query_example(self) -> str:
        return "how long do auth tokens last?"


class TestCogitoRetrieverStandard(RetrieversIntegrationTests):
    """Two stages with no model: the PointerFilter keeps stage 1's order (``fallback_no_llm``)."""

    @property
    def retriever_constructor(self) -> type[CogitoRetriever]:
        return CogitoRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"recall_b": RecallB(vectorstore=_store()), "k": 4}

    @property
    def retriever_query_example(self) -> str:
        return "how long do auth tokens last?"
