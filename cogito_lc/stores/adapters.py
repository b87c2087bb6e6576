"""The adapter of any LangChain vector store: the richest one it supports."""

from __future__ import annotations

from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from cogito_lc.stores.base import StoreAdapter, is_chroma, registered_adapter
from cogito_lc.stores.chroma import ChromaAdapter
from cogito_lc.stores.in_memory import InMemoryAdapter

__all__ = ["adapter_for"]


def adapter_for(store: VectorStore) -> StoreAdapter:
    """The richest adapter ``store`` supports.

    Example:
        ```python
        from langchain_core.embeddings import DeterministicFakeEmbedding
        from langchain_core.vectorstores import InMemoryVectorStore

        from cogito_lc.stores import InMemoryAdapter, adapter_for

        store = InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
        store.add_texts(["a note for alice"], metadatas=[{"user_id": "alice"}], ids=["n1"])
        adapter = adapter_for(store)
        assert isinstance(adapter, InMemoryAdapter)
        assert adapter.count({"user_id": "alice"}) == 1
        ```
    """
    if is_chroma(store):
        return ChromaAdapter(store)
    if isinstance(store, InMemoryVectorStore):
        return InMemoryAdapter(store)
    return registered_adapter(store) or StoreAdapter(store)
