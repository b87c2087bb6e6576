"""The adapter of LangChain's ``InMemoryVectorStore``: its documents read in memory."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore

from cogito_lc._core.filters import store_filter
from cogito_lc.stores.base import (
    ScoredDocument,
    StoreAdapter,
    finite_score,
    matches_where,
)

__all__ = ["InMemoryAdapter"]


class InMemoryAdapter(StoreAdapter):
    """An ``InMemoryVectorStore``: listing, counting and paging over its documents in memory."""

    checks_by_id = True

    def read_documents(
        self, ids: Sequence[str], search_kwargs: Mapping[str, Any]
    ) -> dict[str, Document]:
        """The held documents with these ids that the search's ``filter`` keeps, by id.

        A recall checks the lexical run's documents with it: one deleted or
        changed in the store directly, not through MemoryStore, is left out.
        """
        keep = search_kwargs.get("filter")
        return {
            doc.id or "": doc
            for doc in self.store.get_by_ids(list(ids))
            if keep is None or (keep(doc) if callable(keep) else matches_where(keep, doc.metadata))
        }

    def _matching(self, where: Mapping[str, Any] | None) -> list[Document]:
        held: InMemoryVectorStore = self.store  # type: ignore[assignment]
        return [
            Document(page_content=row["text"], metadata=dict(row["metadata"]), id=row["id"])
            for row in list(held.store.values())
            if matches_where(where, row["metadata"])
        ]

    def page(self, where: Mapping[str, Any] | None, limit: int, offset: int) -> list[Document]:
        return self._matching(where)[offset : offset + limit]

    def count(self, where: Mapping[str, Any] | None = None) -> int:
        if where is None:
            held: InMemoryVectorStore = self.store  # type: ignore[assignment]
            return len(held.store)
        return len(self._matching(where))

    def ids_in(self, where: Mapping[str, Any] | None) -> list[str]:
        return [doc.id or "" for doc in self._matching(where)]

    def _metadatas(self, where: Mapping[str, Any] | None) -> Iterable[Mapping[str, Any]]:
        """The metadata of the matching rows as held (no document is copied)."""
        held: InMemoryVectorStore = self.store  # type: ignore[assignment]
        rows = list(held.store.values())
        return [row["metadata"] for row in rows if matches_where(where, row["metadata"])]

    def set_metadata(
        self, updates: Mapping[str, Mapping[str, Any]], where: Mapping[str, Any] | None = None
    ) -> list[Document]:
        held: InMemoryVectorStore = self.store  # type: ignore[assignment]
        documents = self._merged(updates, where)
        for doc in documents:
            row = held.store[doc.id or ""]
            row["metadata"] = dict(doc.metadata)
        return documents

    def recent(self, limit: int) -> list[Document]:
        return self._matching(None)[-limit:] if limit > 0 else []

    def query_vector(self, text: str) -> list[float] | None:
        held: InMemoryVectorStore = self.store  # type: ignore[assignment]
        return held.embedding.embed_query(text)

    def scored_search(
        self,
        text: str,
        k: int,
        where: Mapping[str, Any] | None = None,
        vector: Sequence[float] | None = None,
    ) -> list[ScoredDocument]:
        """The ``k`` documents matching ``where`` nearest to ``text``, scored by cosine similarity.

        (The store's own similarity; it gives no relevance scores.)
        """
        held: InMemoryVectorStore = self.store  # type: ignore[assignment]
        embedded = list(vector) if vector is not None else held.embedding.embed_query(text)
        pairs = held.similarity_search_with_score_by_vector(
            embedded, k=k, filter=store_filter(self.store, where)
        )
        return [(doc, finite_score(score)) for doc, score in pairs]
