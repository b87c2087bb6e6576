"""What MemoryStore needs from a vector store beyond ``add_texts`` and search.

Chroma gives every operation with metadata filters pushed down to the store;
InMemoryVectorStore gives them by reading its documents in memory. Other
LangChain vector stores give the id-based ones (``get_by_ids``, ``delete``);
listing, counting and deleting a whole scope need one of the two, and say so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NoReturn

from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from cogito_lc._core.filters import SUPPORTED_FILTER_STORES
from cogito_lc._core.stores import chroma_collection, is_chroma
from cogito_lc.memory.scope import Scope

__all__ = ["StoreBackend", "backend_for", "persist_directory"]


class StoreBackend:
    """Id-based access to any LangChain vector store, confined to a scope in code."""

    def __init__(self, store: VectorStore) -> None:
        self.store = store

    def get(self, ids: list[str], scope: Scope) -> list[Document]:
        """The documents with these ids that lie inside ``scope``."""
        return [doc for doc in self.store.get_by_ids(ids) if scope.contains(doc.metadata)]

    def page(self, scope: Scope, limit: int, offset: int) -> list[Document]:
        """A page of the documents inside ``scope``."""
        self._unsupported("list")

    def count(self, scope: Scope) -> int:
        """How many documents lie inside ``scope``."""
        self._unsupported("count")

    def ids_in(self, scope: Scope) -> list[str]:
        """Every id inside ``scope``."""
        self._unsupported("delete_scope")

    def delete(self, ids: list[str]) -> None:
        """Delete documents by id."""
        if ids:
            self.store.delete(ids=ids)

    def _unsupported(self, operation: str) -> NoReturn:
        msg = (
            f"MemoryStore.{operation} needs a vector store that filters by metadata; "
            f"{type(self.store).__name__} does not. Supported: {SUPPORTED_FILTER_STORES}."
        )
        raise NotImplementedError(msg)


class ChromaBackend(StoreBackend):
    """Every operation pushed down to the Chroma collection as a ``where`` filter."""

    @property
    def collection(self) -> Any:
        return chroma_collection(self.store)

    def get(self, ids: list[str], scope: Scope) -> list[Document]:
        if not ids:
            return []
        raw = self.collection.get(ids=ids, where=scope.where(), include=["documents", "metadatas"])
        return _documents(raw)

    def page(self, scope: Scope, limit: int, offset: int) -> list[Document]:
        raw = self.collection.get(
            where=scope.where(), limit=limit, offset=offset, include=["documents", "metadatas"]
        )
        return _documents(raw)

    def count(self, scope: Scope) -> int:
        if not scope:
            return int(self.collection.count())
        return len(self.ids_in(scope))

    def ids_in(self, scope: Scope) -> list[str]:
        return list(self.collection.get(where=scope.where(), include=[])["ids"])

    def delete(self, ids: list[str]) -> None:
        if ids:
            self.collection.delete(ids=ids)

    def unsearchable(
        self, *, recent: int | None = None, k: int = 3, page_size: int = 1000
    ) -> dict[str, Any]:
        """Stored vectors a search for themselves does not return among the ``k`` nearest.

        A vector is its own nearest neighbour (distance 0), so every stored row
        must come back when its own vector is searched, unless ``k`` exact
        duplicates crowd it out. Rows that do not are missing from the vector
        index or cut off from its graph.

        Args:
            recent: Check only the latest ``recent`` rows (rows come back in
                insertion order); ``None`` checks every row.
            k: How many nearest neighbours a row must be among.
            page_size: Rows read and searched per call.

        Returns:
            The unsearchable rows' vectors, by id.
        """
        found: dict[str, Any] = {}
        total = int(self.collection.count())
        start = 0 if recent is None else max(0, total - recent)
        for offset in range(start, total, page_size):
            page = self.collection.get(include=["embeddings"], limit=page_size, offset=offset)
            rows = {
                doc_id: vector
                for doc_id, vector in zip(page["ids"], page["embeddings"], strict=True)
                if vector is not None
            }
            found.update(self._not_found(rows, min(k, total)))
        return found

    def _not_found(self, rows: dict[str, Any], k: int) -> dict[str, Any]:
        if not rows:
            return {}
        hits = self.collection.query(
            query_embeddings=list(rows.values()), n_results=k, include=["distances"]
        )
        missed: dict[str, Any] = {}
        for (doc_id, vector), ids, distances in zip(
            rows.items(), hits["ids"], hits["distances"], strict=True
        ):
            crowded_out = len(ids) == k and distances[-1] <= _SAME_VECTOR
            if doc_id not in ids and not crowded_out:
                missed[doc_id] = vector
        return missed

    def reindex(self, vectors: dict[str, Any], *, k: int = 3) -> list[str]:
        """Write these rows' vectors to the index again (text and metadata untouched).

        Returns:
            The ids a search for their own vector still does not find.
        """
        if not vectors:
            return []
        self.collection.update(ids=list(vectors), embeddings=list(vectors.values()))
        return list(self._not_found(vectors, min(k, int(self.collection.count()))))


class InMemoryBackend(StoreBackend):
    """Every operation over the documents an ``InMemoryVectorStore`` holds, in insertion order."""

    def _inside(self, scope: Scope) -> list[Document]:
        held: InMemoryVectorStore = self.store  # type: ignore[assignment]
        return [
            Document(page_content=row["text"], metadata=dict(row["metadata"]), id=row["id"])
            for row in list(held.store.values())
            if scope.contains(row["metadata"])
        ]

    def page(self, scope: Scope, limit: int, offset: int) -> list[Document]:
        return self._inside(scope)[offset : offset + limit]

    def count(self, scope: Scope) -> int:
        return len(self._inside(scope))

    def ids_in(self, scope: Scope) -> list[str]:
        return [doc.id or "" for doc in self._inside(scope)]


_SAME_VECTOR = 1e-5
"""A search distance this small means an exact duplicate of the query vector."""


def _documents(raw: Any) -> list[Document]:
    return [
        Document(page_content=text, metadata=dict(meta or {}), id=doc_id)
        for doc_id, text, meta in zip(raw["ids"], raw["documents"], raw["metadatas"], strict=True)
        if text is not None
    ]


def persist_directory(store: VectorStore) -> Path | None:
    """The directory a persistent Chroma store writes to, else None."""
    if not is_chroma(store):
        return None
    settings = store._client.get_settings()  # type: ignore[attr-defined]
    if not settings.is_persistent or not settings.persist_directory:
        return None
    return Path(settings.persist_directory)


def backend_for(store: VectorStore) -> StoreBackend:
    """The richest backend ``store`` supports."""
    if is_chroma(store):
        return ChromaBackend(store)
    if isinstance(store, InMemoryVectorStore):
        return InMemoryBackend(store)
    return StoreBackend(store)
