"""``StoreAdapter.scope_counts``: memories per scope, on every adapter and the generic path."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_chroma import Chroma
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from cogito_lc.stores import ChromaAdapter, InMemoryAdapter, StoreAdapter, adapter_for, base
from cogito_lc.stores.base import ScopeCounts
from tests.unit_tests.conftest import HashEmbeddings

ROWS: list[dict[str, Any]] = [
    {"user_id": "bob", "agent_id": "planner"},
    {"user_id": "alice", "agent_id": "planner"},
    {"user_id": "alice", "agent_id": "coder"},
    {"user_id": "alice", "agent_id": "planner", "run_id": "r1"},
    {"user_id": "Zed"},  # an upper-case letter sorts before every lower-case one
    {"user_id": "éva"},  # a code point past ASCII sorts last
    {"kind": "fact"},  # in no user scope
]


def _fill(store: VectorStore) -> VectorStore:
    store.add_documents(
        [Document(page_content=f"memory {n}", metadata=meta) for n, meta in enumerate(ROWS)],
        ids=[f"m{n}" for n in range(len(ROWS))],
    )
    return store


class _Paged(StoreAdapter):
    """The generic path: an adapter that only pages (``scope_counts`` not overridden)."""

    def __init__(self, inner: StoreAdapter) -> None:
        super().__init__(inner.store)
        self.inner = inner
        self.pages = 0

    def page(self, where: Any, limit: int, offset: int) -> list[Document]:
        self.pages += 1
        return self.inner.page(where, limit, offset)


@pytest.fixture(params=["in_memory", "chroma", "paged", "qdrant"])
def adapter(request: pytest.FixtureRequest, embeddings: HashEmbeddings) -> StoreAdapter:
    if request.param == "qdrant":
        pytest.importorskip("qdrant_client")
        from cogito_lc.stores import QdrantAdapter, open_qdrant_store

        qdrant = adapter_for(_fill(open_qdrant_store(embeddings)))
        assert isinstance(qdrant, QdrantAdapter)
        return qdrant
    if request.param == "chroma":
        chroma: Chroma = request.getfixturevalue("chroma")
        found = adapter_for(_fill(chroma))
        assert isinstance(found, ChromaAdapter)
        return found
    in_memory = adapter_for(_fill(InMemoryVectorStore(embedding=embeddings)))
    assert isinstance(in_memory, InMemoryAdapter)
    if request.param == "paged":
        return _Paged(in_memory)
    return in_memory


def test_counts_memories_per_user_in_code_point_order(adapter: StoreAdapter) -> None:
    found = adapter.scope_counts(["user_id"])
    assert found == ScopeCounts(
        counts={("Zed",): 1, ("alice",): 3, ("bob",): 1, ("éva",): 1}, scopes=4, documents=6
    )
    assert list(found.counts) == [("Zed",), ("alice",), ("bob",), ("éva",)]


def test_groups_by_several_keys_and_leaves_out_memories_missing_one(
    adapter: StoreAdapter,
) -> None:
    found = adapter.scope_counts(["user_id", "agent_id"])
    assert found.counts == {("alice", "coder"): 1, ("alice", "planner"): 2, ("bob", "planner"): 1}
    assert (found.scopes, found.documents) == (3, 4)


def test_a_where_filter_narrows_what_is_counted(adapter: StoreAdapter) -> None:
    found = adapter.scope_counts(["user_id"], {"agent_id": "planner"})
    assert found.counts == {("alice",): 2, ("bob",): 1}
    assert adapter.scope_counts(["user_id"], {"user_id": "nobody"}) == ScopeCounts({}, 0, 0)


def test_a_limit_keeps_the_first_scopes_and_counts_them_all(adapter: StoreAdapter) -> None:
    found = adapter.scope_counts(["user_id"], limit=2)
    assert found.counts == {("Zed",): 1, ("alice",): 3}
    assert (found.scopes, found.documents) == (4, 6)
    none = adapter.scope_counts(["user_id"], limit=0)
    assert (none.counts, none.scopes, none.documents) == ({}, 4, 6)


@pytest.mark.parametrize(
    ("keys", "limit"),
    [([], None), (["user_id", "user_id"], None), (["kind"], None), (["user_id"], -1)],
)
def test_only_scope_keys_and_a_non_negative_limit_are_accepted(
    adapter: StoreAdapter, keys: list[str], limit: int | None
) -> None:
    with pytest.raises(ValueError, match=r"scope counts|limit"):
        adapter.scope_counts(keys, limit=limit)


def test_the_generic_path_reads_every_page(
    embeddings: HashEmbeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(base, "_PAGE", 2)
    paged = _Paged(adapter_for(_fill(InMemoryVectorStore(embedding=embeddings))))
    found = paged.scope_counts(["user_id"])
    assert (found.scopes, found.documents) == (4, 6)
    assert paged.pages == 4  # 7 rows, 2 a page
