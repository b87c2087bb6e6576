"""``PostgresAdapter.scope_counts`` over a real Postgres (pgserver): one ``GROUP BY``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore

from cogito_lc import MemoryStore
from cogito_lc.stores import InMemoryAdapter, adapter_for
from cogito_lc.stores.base import ScopeCounts
from cogito_lc.stores.postgres import PostgresAdapter
from tests.integration_tests.conftest_pg import close_postgres_memory

NOTES = {
    ("bob", "planner"): ["bob plans the release"],
    ("alice", "planner"): ["alice plans the sprint", "alice plans the offsite"],
    ("alice", "coder"): ["alice codes the parser"],
    ("Zed", None): ["Zed sorts before every lower-case name"],
    ("éva", None): ["éva sorts after every ASCII name"],
}


@pytest.fixture
def memory(pg_url: str, pg_collection: str) -> Iterator[MemoryStore]:
    store = MemoryStore.from_database_url(
        pg_url, embeddings=DeterministicFakeEmbedding(size=16), collection=pg_collection
    )
    try:
        for (user, agent), texts in NOTES.items():
            scope = {"user_id": user} if agent is None else {"user_id": user, "agent_id": agent}
            for text in texts:
                store.scoped(scope).store(text)
        store.store("a memory in no user scope")  # the empty scope: no user_id
        yield store
    finally:
        close_postgres_memory(store)


def test_counts_per_scope_in_sql_as_the_generic_path_does(memory: MemoryStore) -> None:
    adapter = adapter_for(memory.vectorstore)
    assert isinstance(adapter, PostgresAdapter)
    found = adapter.scope_counts(["user_id"])
    assert found == ScopeCounts(
        counts={("Zed",): 1, ("alice",): 3, ("bob",): 1, ("éva",): 1}, scopes=4, documents=6
    )
    assert list(found.counts) == [("Zed",), ("alice",), ("bob",), ("éva",)]
    pairs = adapter.scope_counts(["user_id", "agent_id"])
    assert pairs.counts == {("alice", "coder"): 1, ("alice", "planner"): 2, ("bob", "planner"): 1}
    assert adapter.scope_counts(["user_id"], {"agent_id": "planner"}).counts == {
        ("alice",): 2,
        ("bob",): 1,
    }
    first = adapter.scope_counts(["user_id"], limit=2)
    assert (first.counts, first.scopes, first.documents) == (
        {("Zed",): 1, ("alice",): 3},
        4,
        6,
    )
    assert adapter.scope_counts(["user_id"], limit=0) == ScopeCounts({}, 4, 6)
    assert adapter.scope_counts(["user_id"], {"user_id": "nobody"}) == ScopeCounts({}, 0, 0)
    with pytest.raises(ValueError, match="scope counts"):
        adapter.scope_counts(["kind"])
    # The generic path over the same rows agrees.
    rows = adapter.page(None, 100, 0)
    generic = _in_memory(rows).scope_counts(["user_id", "agent_id"])
    assert generic == pairs


def _in_memory(rows: list[Document]) -> InMemoryAdapter:
    held = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    held.add_documents(rows, ids=[doc.id or "" for doc in rows])
    adapter = adapter_for(held)
    assert isinstance(adapter, InMemoryAdapter)
    return adapter
