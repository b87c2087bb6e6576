"""The one place that knows the vector stores cogito-lc reaches beneath LangChain's API.

Chroma's batched queries, counts and pages go through its collection; every
access to ``langchain_chroma.Chroma`` internals is here.
"""

from __future__ import annotations

from typing import Any

from langchain_core.vectorstores import VectorStore

__all__ = ["chroma_collection", "is_chroma"]


def is_chroma(store: VectorStore) -> bool:
    """Whether ``store`` is a ``langchain_chroma.Chroma`` (searched in one batched call)."""
    try:
        from langchain_chroma import Chroma
    except ImportError:  # pragma: no cover - langchain-chroma is a dependency
        return False
    return isinstance(store, Chroma)


def chroma_collection(store: VectorStore) -> Any:
    """The chromadb collection behind a ``Chroma`` store."""
    return store._collection  # type: ignore[attr-defined]
